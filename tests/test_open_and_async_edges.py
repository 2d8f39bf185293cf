"""Adversarial tests of two changes: SQLite files at the current schema opened with ``sqlite3`` itself
(``store/sqlite_file.py``), and ``AsyncSessionStore`` on psycopg's async connections (``aio._OnLoop``,
``store/pg_async.py``). Each test is a bug an adversarial probe found in their first versions; each
docstring says what went wrong then, and the test holds what must hold instead."""

from __future__ import annotations

import asyncio
import os
import threading
import warnings
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from sessionstore.aio import AsyncSessionStore
from sessionstore.api import SessionStore
from sessionstore.errors import StoreError

HANG = 10.0
"""Seconds after which a call that has not finished counts as deadlocked."""


async def _unwedge(store: AsyncSessionStore) -> None:
    """Free a store whose calls deadlocked (so that the test's loop can close): cancel every other task,
    then close it, both within a time limit."""
    me = asyncio.current_task()
    others = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    for task in others:
        task.cancel()
    with suppress(BaseException):
        await asyncio.wait_for(asyncio.gather(*others, return_exceptions=True), 5)
    with suppress(BaseException):
        await asyncio.wait_for(store.aclose(), 5)


# -- Change 1: SQLite files opened with sqlite3 --------------------------------------------------
def test_a_relative_sqlite_url_keeps_naming_the_file_it_opened_after_the_cwd_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLAlchemy's path resolves ``sqlite:///relative.db`` once (pysqlite's ``os.path.abspath`` when the
    engine is made); ``SqliteFile`` keeps the relative path and every new connection (another thread's, a
    forked child's, one replacing a broken one) opens it against the cwd of that moment: after a chdir a
    second thread reads (and creates) an empty ``s.db`` elsewhere and fails with "no such table"."""
    first, elsewhere = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(first)
    with SessionStore("sqlite:///s.db") as made:
        sid = made.create_session(cwd="/w")
    store = SessionStore("sqlite:///s.db")  # an existing file at the current schema: opened with sqlite3
    try:
        assert [s.id for s in store.list_sessions()] == [sid]  # this thread's connection is the spare one
        monkeypatch.chdir(elsewhere)
        seen: dict[str, Any] = {}

        def other_thread() -> None:
            try:
                seen["ids"] = [s.id for s in store.list_sessions()]
            except Exception as exc:  # (the test reports it)
                seen["ids"] = repr(exc)

        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join(30)
        assert seen["ids"] == [sid]
        assert os.listdir(elsewhere) == []  # nothing created in the new cwd
    finally:
        store.close()


def test_reading_the_database_property_after_a_chdir_creates_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``SessionStore.database`` on a file opened without SQLAlchemy makes the engine on first use, from
    the URL as given: after a chdir ``make_engine`` -> ``create_private_file`` creates an empty ``s.db``
    in the new cwd (the engine also names that other file)."""
    first, elsewhere = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(first)
    SessionStore("sqlite:///s.db").close()
    store = SessionStore("sqlite:///s.db")
    try:
        store.list_sessions()
        monkeypatch.chdir(elsewhere)
        assert store.database
        assert os.listdir(elsewhere) == []
    finally:
        store.close()


# -- Change 2: AsyncSessionStore --------------------------------------------------------------------
async def test_a_transform_context_hook_that_calls_the_store_does_not_deadlock(db_url: str) -> None:
    """An async hook (documented to run on the caller's loop and be awaited there) that awaits another
    call of the same store: with one worker (SQLite's default; ``workers=1`` on PostgreSQL) the nested
    call waits for the slot (PostgreSQL: ``_OnLoop._slots``) or the thread (SQLite: ``_Threads``) that
    the outer call holds while it waits for the hook: a deadlock, for ever, and ``aclose`` then hangs too.
    It should either work or raise a ``StoreError`` saying why (as the SQLite backend does for a write
    inside a write of the same thread)."""
    store = AsyncSessionStore(db_url, workers=1)
    sid = await store.create_session(cwd="/w")
    await store.append_message(sid, {"role": "user", "content": "hi", "timestamp": 1})

    async def hook(messages: list[Any], *_: Any) -> list[Any]:
        await store.leaf(sid)
        return messages

    try:
        try:
            await asyncio.wait_for(store.context(sid, transform_context=hook), HANG)
        except StoreError:
            pass  # a clear refusal is fine
        except TimeoutError:
            pytest.fail(f"context() with a hook that calls the store deadlocked (no answer in {HANG:.0f} s)")
    finally:
        await _unwedge(store)


async def test_concurrent_hooks_that_call_the_store_do_not_deadlock_with_the_default_workers(pg_url: str) -> None:
    """As above with the default ``workers`` (4 on PostgreSQL): ``workers`` concurrent ``context`` calls
    whose hooks each make one more call hold every slot while their nested calls wait for one."""
    store = AsyncSessionStore(pg_url)  # (SQLite's default of 1 worker is the test above)
    sid = await store.create_session(cwd="/w")
    await store.append_message(sid, {"role": "user", "content": "hi", "timestamp": 1})

    async def hook(messages: list[Any], *_: Any) -> list[Any]:
        await store.leaf(sid)
        return messages

    try:
        try:
            await asyncio.wait_for(
                asyncio.gather(*[store.context(sid, transform_context=hook) for _ in range(store.workers)]), HANG)
        except StoreError:
            pass
        except TimeoutError:
            pytest.fail(f"{store.workers} concurrent context() calls with re-entrant hooks deadlocked")
    finally:
        await _unwedge(store)


async def test_aclose_waits_for_a_call_made_before_it_while_the_store_was_opening(db_url: str) -> None:
    """The module's promise: ":meth:`aclose` waits for the calls made before it". On threads (SQLite)
    the first call, still opening the store when ``aclose`` starts, runs and returns; on the loop
    (PostgreSQL) ``_OnLoop.run`` finds ``_closed`` set once ``open()`` returns and raises
    ``StoreError('this AsyncSessionStore is closed')`` for a call that was made (and had started) first."""
    store = AsyncSessionStore(db_url)
    call = asyncio.ensure_future(store.create_session(cwd="/w"))
    await asyncio.sleep(0)  # the call has started: it is waiting for the store to open
    await asyncio.wait_for(store.aclose(), 30)
    sid = await asyncio.wait_for(call, 30)
    assert isinstance(sid, str)


async def test_a_connection_the_server_terminated_is_replaced_without_an_error_or_a_warning(pg_url: str) -> None:
    """``pg_terminate_backend`` on the store's pooled connection, then a call: the pool's ping at checkout
    finds the connection closed and connects anew, so the call succeeds (issue 24: an idle pooled
    connection the server closed is not an error), with no SAWarning (this suite runs with ``-W error``).
    (The sync store has the same pool; the async one inherits it.)"""
    import psycopg

    db_url = pg_url
    store = AsyncSessionStore(db_url, workers=1)
    try:
        sid = await store.create_session(cwd="/w")

        def terminate() -> None:
            with psycopg.connect(db_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                              " WHERE datname = current_database() AND pid <> pg_backend_pid()")

        await asyncio.to_thread(terminate)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert isinstance(await store.append_custom(sid, "t", 1), str)
        assert isinstance(await store.append_custom(sid, "t", 2), str)
    finally:
        await asyncio.wait_for(store.aclose(), 30)

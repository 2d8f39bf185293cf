"""What only the async API has (``sessionstore.aio``), on both backends: the same methods as
``SessionStore``, calls from many tasks at once, cancellation, callbacks on the caller's loop, closing."""

from __future__ import annotations

import asyncio
import inspect
import io
import re
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sessionstore.aio import AsyncSessionStore
from sessionstore.api import SessionStore
from sessionstore.errors import (
    EntryNotFoundError,
    InvalidInputError,
    LeafConflictError,
    SessionNotFoundError,
    StoreError,
)
from sessionstore.store.entry_store import EntryStore
from tests.builders import assistant, user
from tests.paths import PI_FILES, ROOT


@pytest.fixture
async def aio(db_url: str) -> AsyncIterator[AsyncSessionStore]:
    async with AsyncSessionStore(db_url) as opened:
        yield opened


def public_methods(cls: type) -> dict[str, Any]:
    return {name: member for name, member in vars(cls).items()
            if not name.startswith("_") and inspect.isfunction(member)}


NOT_AWAITED = frozenset({"for_tenant"})
ITERATED = frozenset({"events"})
"""Methods that yield as they go: iterated with ``async for`` on the async store."""
"""Methods that do no I/O on either store (a view of another tenant on the same database): plain on both."""


@pytest.mark.parametrize("name", sorted(set(public_methods(SessionStore)) - NOT_AWAITED))
def test_every_session_store_method_has_an_awaitable_twin_with_its_signature(name: str) -> None:
    twin = public_methods(AsyncSessionStore).get(name)
    awaitable = inspect.isasyncgenfunction(twin) if name in ITERATED else inspect.iscoroutinefunction(twin)
    assert twin is not None and awaitable, f"AsyncSessionStore.{name} is missing"
    sync_params = list(inspect.signature(getattr(SessionStore, name)).parameters.values())
    async_params = list(inspect.signature(twin).parameters.values())
    assert async_params == sync_params
    assert twin.__doc__


@pytest.mark.parametrize("name", sorted(NOT_AWAITED))
def test_the_methods_without_io_are_plain_on_both_with_one_signature(name: str) -> None:
    twin = public_methods(AsyncSessionStore)[name]
    assert not inspect.iscoroutinefunction(twin) and twin.__doc__
    sync_params = list(inspect.signature(getattr(SessionStore, name)).parameters.values())
    assert list(inspect.signature(twin).parameters.values()) == sync_params


def test_the_constructor_takes_the_session_stores_arguments_and_the_worker_count() -> None:
    sync_params = list(inspect.signature(SessionStore.__init__).parameters)
    async_params = list(inspect.signature(AsyncSessionStore.__init__).parameters)
    assert async_params == [*sync_params, "workers"]


async def test_the_methods_give_what_the_sync_store_gives(aio: AsyncSessionStore, db_url: str) -> None:
    sid = await aio.create_session(cwd="/w")
    first = await aio.append_message(sid, user("hi"))
    await aio.append_message(sid, assistant("hello"), expected_leaf=first)
    await aio.append_label(sid, first, "start")
    buf = io.BytesIO()
    assert await aio.export_jsonl(sid, buf) == 3
    imported = await aio.import_jsonl(io.BytesIO(buf.getvalue().replace(sid.encode(), b"copy")))
    with SessionStore(db_url) as sync:
        for method, args in [("path", (sid,)), ("tree", (sid,)), ("labels", (sid,)), ("header", (sid,)),
                             ("entries", (imported.session_id,)), ("stats", (sid,)), ("leaf", (sid,))]:
            assert await getattr(aio, method)(*args) == getattr(sync, method)(*args), method
        assert (await aio.context(sid)).to_json() == sync.context(sid).to_json()
        assert [s.id for s in await aio.list_sessions()] == [s.id for s in sync.list_sessions()]
        assert [r.to_json() for r in await aio.search("hello")] == [r.to_json() for r in sync.search("hello")]
        assert aio.database == sync.database
        for write in ("write_context_json", "write_tree_json"):
            streamed, expected = io.BytesIO(), io.BytesIO()
            await getattr(aio, write)(sid, streamed)
            getattr(sync, write)(sid, expected)
            assert streamed.getvalue() == expected.getvalue() != b"", write
        streamed, expected = io.BytesIO(), io.BytesIO()
        assert await aio.write_entry_lines(sid, streamed, after=0) == sync.write_entry_lines(sid, expected, after=0)
        assert streamed.getvalue() == expected.getvalue() == b"".join(buf.getvalue().splitlines(keepends=True)[2:])


async def test_errors_keep_their_types_and_the_store_goes_on(aio: AsyncSessionStore) -> None:
    with pytest.raises(SessionNotFoundError):
        await aio.leaf("nope")
    sid = await aio.create_session(cwd="/w")
    with pytest.raises(InvalidInputError, match="toolCallId"):
        await aio.append_message(sid, {"role": "toolResult", "toolName": "x", "content": [], "isError": False,
                                       "timestamp": 1})
    with pytest.raises(EntryNotFoundError):
        await aio.branch(sid, "deadbeef")
    with pytest.raises(LeafConflictError):
        await aio.append_message(sid, user("a"), expected_leaf="deadbeef")
    assert await aio.append_message(sid, user("a"))
    assert len(await aio.entries(sid)) == 1


async def test_a_conditional_delete_deletes_only_at_the_expected_leaf(aio: AsyncSessionStore) -> None:
    sid = await aio.create_session(cwd="/w")
    with pytest.raises(LeafConflictError) as refused:
        await aio.delete_session(sid, expected_leaf="deadbeef")
    assert refused.value.actual is None
    first = await aio.append_message(sid, user("a"))
    with pytest.raises(LeafConflictError):
        await aio.delete_session(sid, expected_leaf=None)
    assert (await aio.session(sid)).entry_count == 1
    await aio.delete_session(sid, expected_leaf=first)
    with pytest.raises(SessionNotFoundError):
        await aio.session(sid)


async def test_a_conditional_delete_racing_an_append_never_loses_the_append(aio: AsyncSessionStore) -> None:
    for _ in range(10):
        sid = await aio.create_session(cwd="/w")
        leaf = await aio.append_message(sid, user("a"))
        appended, deleted = await asyncio.gather(aio.append_message(sid, user("b"), expected_leaf=leaf),
                                                 aio.delete_session(sid, expected_leaf=leaf),
                                                 return_exceptions=True)
        # exactly one wins: the append (the delete then conflicts) or the delete (the append finds no session)
        if deleted is None:
            assert isinstance(appended, SessionNotFoundError)
        else:
            assert isinstance(deleted, LeafConflictError) and isinstance(appended, str)
            assert (await aio.session(sid)).entry_count == 2


async def test_appends_from_many_tasks_all_land_on_one_chain(aio: AsyncSessionStore) -> None:
    sid = await aio.create_session(cwd="/w")
    ids = await asyncio.gather(*(aio.append_message(sid, user(f"m {n}")) for n in range(40)))
    assert len(set(ids)) == 40
    path = await aio.path(sid)
    assert sorted(e["id"] for e in path) == sorted(ids)
    assert [e["parentId"] for e in path] == [None, *(e["id"] for e in path[:-1])]
    assert (await aio.session(sid)).entry_count == 40


async def test_concurrent_appends_at_one_expected_leaf_one_wins_the_others_conflict(aio: AsyncSessionStore) -> None:
    sid = await aio.create_session(cwd="/w")
    leaf = await aio.append_message(sid, user("start"))
    outcomes = await asyncio.gather(*(aio.append_message(sid, user(f"m {n}"), expected_leaf=leaf)
                                      for n in range(8)), return_exceptions=True)
    won = [o for o in outcomes if isinstance(o, str)]
    assert len(won) == 1
    assert all(isinstance(o, LeafConflictError) for o in outcomes if o not in won)
    assert await aio.leaf(sid) == won[0]
    assert len(await aio.entries(sid)) == 2


class Gate:
    """Holds a call of the store where it runs until :meth:`open`: a worker thread waits on a thread's
    event, a call on the loop (PostgreSQL) on the loop's own, so that the loop runs meanwhile."""

    def __init__(self, aio: AsyncSessionStore) -> None:
        self._on_loop = aio.on_event_loop
        self._entered, self._opened = threading.Event(), threading.Event()
        self._entered_here, self._opened_here = asyncio.Event(), asyncio.Event()

    def hold(self) -> None:
        """Called inside the store's call."""
        if self._on_loop:
            from sessionstore.store.pg_async import await_on_loop

            self._entered_here.set()
            await_on_loop(asyncio.wait_for(self._opened_here.wait(), 10))
        else:
            self._entered.set()
            self._opened.wait(10)

    async def entered(self) -> None:
        if self._on_loop:
            await asyncio.wait_for(self._entered_here.wait(), 10)
        else:
            assert await asyncio.to_thread(self._entered.wait, 10)

    def open(self) -> None:
        self._opened.set()
        self._opened_here.set()


async def test_a_call_cancelled_before_it_started_never_runs(db_url: str) -> None:
    async with AsyncSessionStore(db_url, workers=1) as aio:
        sid = await aio.create_session(cwd="/w")
        gate = Gate(aio)
        blocker = asyncio.ensure_future(aio._run(lambda _store: gate.hold()))
        await gate.entered()
        pending = asyncio.ensure_future(aio.append_message(sid, user("never")))
        await asyncio.sleep(0.05)
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        gate.open()
        await blocker
        assert await aio.entries(sid) == []
        assert await aio.append_message(sid, user("after"))
        assert len(await aio.entries(sid)) == 1


async def test_a_call_cancelled_while_it_runs_lands_whole(aio: AsyncSessionStore,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    sid = await aio.create_session(cwd="/w")
    first = await aio.append_message(sid, user("first"))
    gate = Gate(aio)
    real = EntryStore.append_entry

    def held(self: EntryStore, *args: Any, **kwargs: Any) -> str:
        gate.hold()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(EntryStore, "append_entry", held)
    task = asyncio.ensure_future(aio.append_message(sid, user("second"), expected_leaf=first))
    await gate.entered()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.open()
    monkeypatch.undo()
    path = await aio.path(sid)  # (after the cancelled call: one worker on SQLite; on PostgreSQL wait for it)
    for _ in range(100):
        if len(path) == 2:
            break
        await asyncio.sleep(0.05)
        path = await aio.path(sid)
    assert [e["message"]["content"][0]["text"] for e in path] == ["first", "second"]
    assert (await aio.session(sid)).entry_count == 2


async def test_postgresql_calls_run_on_the_callers_loop_on_psycopgs_async_connections(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from sessionstore.store import postgres

    aio = AsyncSessionStore(pg_url)
    assert aio.on_event_loop
    seen: list[tuple[type, int]] = []
    real = postgres.blocking_driver

    def spy(dbapi_connection: Any) -> Any:
        seen.append((type(dbapi_connection.driver_connection), threading.get_ident()))
        return real(dbapi_connection)

    monkeypatch.setattr(postgres, "blocking_driver", spy)
    sid = await aio.create_session(cwd="/w")
    await aio.append_message(sid, user("hi"))
    buf = io.BytesIO()
    assert await aio.export_jsonl(sid, buf) == 1  # COPY out
    await aio.import_jsonl(io.BytesIO(buf.getvalue().replace(sid.encode(), b"copy")))  # COPY in
    await aio.aclose()
    assert seen and set(seen) == {(psycopg.AsyncConnection, threading.get_ident())}


async def test_postgresql_other_tasks_run_while_a_call_waits_for_the_server(pg_url: str) -> None:
    aio = AsyncSessionStore(pg_url)
    sid = await aio.create_session(cwd="/w")
    ticks = 0

    async def ticking() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    def sleep_on_the_server(store: SessionStore) -> None:
        with store._entries.backend.read() as tx:
            tx.cursor.execute("SELECT pg_sleep(0.3)")

    ticker = asyncio.ensure_future(ticking())
    try:
        await aio._run(sleep_on_the_server)  # the loop runs the ticker while the server sleeps
        await aio.append_message(sid, user("after"))
    finally:
        ticker.cancel()
        await aio.aclose()
    assert ticks > 100


async def test_an_async_transform_context_is_awaited_on_the_callers_loop(aio: AsyncSessionStore) -> None:
    sid = await aio.create_session(cwd="/w")
    await aio.append_message(sid, user("one"))
    await aio.append_message(sid, user("two"))
    seen: list[Any] = []

    async def last_only(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        await asyncio.sleep(0)
        seen.append((asyncio.get_running_loop(), threading.get_ident()))
        return messages[-1:]

    ctx = await aio.context(sid, transform_context=last_only)
    assert [m["content"][0]["text"] for m in ctx.llm] == ["two"]
    assert ctx.diagnostics == []
    assert seen == [(asyncio.get_running_loop(), threading.get_ident())]


async def test_a_failing_async_transform_context_is_a_diagnostic_as_a_failing_sync_one_is(
    aio: AsyncSessionStore,
) -> None:
    sid = await aio.create_session(cwd="/w")
    await aio.append_message(sid, user("one"))

    async def broken(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        raise ValueError("no")

    ctx = await aio.context(sid, transform_context=broken)
    assert [d.code for d in ctx.diagnostics] == ["TRANSFORM_CONTEXT_FAILED"]
    assert [m["content"][0]["text"] for m in ctx.llm] == ["one"]


async def test_an_import_reports_progress_on_the_callers_thread(aio: AsyncSessionStore) -> None:
    source = PI_FILES["before-compaction"]
    threads: list[int] = []
    done: list[int] = []
    result = await aio.import_jsonl(source, progress=lambda n: (threads.append(threading.get_ident()), done.append(n)))
    assert done and done[-1] == source.stat().st_size
    assert set(threads) == {threading.get_ident()}
    assert (await aio.session(result.session_id)).entry_count > 0


async def test_close_waits_for_calls_in_flight_and_later_calls_are_refused(db_url: str) -> None:
    aio = AsyncSessionStore(db_url)
    sid = await aio.create_session(cwd="/w")
    appends = [asyncio.ensure_future(aio.append_message(sid, user(f"m {n}"))) for n in range(10)]
    await asyncio.sleep(0)
    await aio.aclose()
    assert all(a.done() for a in appends) or len(await asyncio.gather(*appends)) == 10
    with pytest.raises(StoreError, match="closed"):
        await aio.leaf(sid)
    await aio.aclose()  # again: nothing
    with SessionStore(db_url) as sync:
        assert sync.session(sid).entry_count == 10


async def test_an_error_of_opening_is_raised_by_async_with(tmp_path: Path) -> None:
    (tmp_path / "not-a-db").write_text("hello, I am not a database" * 100)
    with pytest.raises(StoreError):
        async with AsyncSessionStore(f"sqlite:///{tmp_path / 'not-a-db'}"):
            pass
    with pytest.raises(InvalidInputError):
        AsyncSessionStore(f"sqlite:///{tmp_path / 'x.db'}", workers=0)


async def test_a_cancelled_watch_sync_stops_at_its_next_pause(aio: AsyncSessionStore, tmp_path: Path) -> None:
    cycled = asyncio.Event()
    watching = asyncio.ensure_future(aio.watch_sync(tmp_path, interval=60, on_cycle=lambda _result: cycled.set()))
    await asyncio.wait_for(cycled.wait(), 30)
    watching.cancel()
    with pytest.raises(asyncio.CancelledError):
        await watching
    started = time.monotonic()
    assert await aio.list_sessions() == []  # the worker is free again
    assert time.monotonic() - started < 10


def test_the_readme_async_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (block,) = re.findall(r"```python async\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    namespace: dict[str, Any] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    ctx = namespace["ctx"]
    assert [m["role"] for m in ctx.messages] == ["user"]
    assert len(ctx.llm) == 1


async def test_close_stops_a_watch_sync_under_way(db_url: str, tmp_path: Path) -> None:
    aio = AsyncSessionStore(db_url)
    cycled = asyncio.Event()
    watching = asyncio.ensure_future(aio.watch_sync(tmp_path, interval=60, on_cycle=lambda _result: cycled.set()))
    await asyncio.wait_for(cycled.wait(), 30)
    await asyncio.wait_for(aio.aclose(), 10)
    with pytest.raises(StoreError, match="closed while watch_sync ran"):
        await watching


def test_postgresql_a_store_used_on_a_second_loop_says_so(pg_url: str) -> None:
    aio = AsyncSessionStore(pg_url)
    with asyncio.Runner() as first:
        sid = first.run(aio.create_session(cwd="/w"))
        with asyncio.Runner() as second, pytest.raises(StoreError, match="another event loop"):
            second.run(aio.leaf(sid))
        assert first.run(aio.leaf(sid)) is None
        first.run(aio.aclose())


def test_without_greenlet_the_async_postgresql_store_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from sessionstore.errors import BackendUnavailableError
    from sessionstore.store import engine

    real = importlib.util.find_spec
    monkeypatch.setattr(engine.importlib.util, "find_spec",
                        lambda name, *a: None if name == "greenlet" else real(name, *a))
    with pytest.raises(BackendUnavailableError, match=r"greenlet: pip install 'sessionstore\[postgres\]'"):
        engine.make_engine("postgresql://nobody@127.0.0.1:1/none", on_event_loop=True)
    with pytest.raises(InvalidInputError, match="PostgreSQL's"):
        engine.make_engine("sqlite:///:memory:", on_event_loop=True)


async def test_the_async_events_follow_a_session_as_the_sync_ones_do(aio: AsyncSessionStore, db_url: str) -> None:
    sid = await aio.create_session(cwd="/follow")
    first = await aio.append_custom(sid, "tick", {"n": 0})
    got = []

    async def follow() -> None:
        async for event in aio.events(sid):
            got.append((event.kind, event.seq, event.entry and event.entry["id"]))
            if event.kind == "deleted":
                return

    task = asyncio.create_task(follow())
    await asyncio.sleep(0.5)
    with SessionStore(db_url) as other:  # (another writer: the change reaches the follower)
        second = other.append_custom(sid, "tick", {"n": 1})
        await asyncio.sleep(1.0)
        other.delete_session(sid)
    await asyncio.wait_for(task, 10)
    assert got == [("entry", 0, first), ("entry", 1, second), ("deleted", None, None)]

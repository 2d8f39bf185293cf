"""Opening new databases at once (issue 22, section 3): stores opened together from threads, tasks and
processes, on one new file and on several, each create the schema once and all open.

Before the fix Alembic ran with no lock, and its ``context`` and ``op`` are process-wide: two threads
creating two *different* SQLite files ran each other's migrations on each other's connections (30 of
30 tries had a failed open: ``no such table: main.sessionstore_sessions``, ``index ... already
exists``, Alembic's ``CommandError``), and the interpreter died of a segmentation fault within 30
tries of two threads or two ``AsyncSessionStore``\\ s. Each test here is bounded (a few rounds, a few
seconds) and starts its openers behind a barrier so that they overlap.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sessionstore.aio import AsyncSessionStore
from sessionstore.api import SessionStore
from sessionstore.store import migrate
from sessionstore.store.engine import make_engine
from sessionstore.store.revision import SCHEMA_REVISION
from tests.conftest import drop_pg_database, fresh_pg_database
from tests.paths import ROOT
from tests.requirements import POSTGRES, require

ROUNDS = 4
OPENERS = 6
"""Openers per round: half on one new file, half on a new file each."""


def _revision(url: str) -> str | None:
    engine = make_engine(url)
    try:
        return migrate.database_revision(engine)
    finally:
        engine.dispose()


def _in_threads(jobs: list[Callable[[], None]]) -> list[str]:
    """Run ``jobs`` on a thread each, released at once; the errors they raised, as text."""
    barrier = threading.Barrier(len(jobs))
    errors: list[str] = []

    def run(job: Callable[[], None]) -> None:
        barrier.wait()
        try:
            job()
        except Exception as exc:  # collected: the test names every failed open
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads), "an opener hung"
    return errors


def _open_and_write(url: str) -> Callable[[], None]:
    def job() -> None:
        with SessionStore(url) as store:
            sid = store.create_session(cwd="/repo")
            assert store.session(sid).entry_count == 0

    return job


def _sqlite_urls(folder: Path, count: int) -> list[str]:
    """``count`` URLs: the first half on one file, the rest on a file each."""
    shared = f"sqlite:///{folder / 'shared.db'}"
    return [shared if n < count // 2 else f"sqlite:///{folder / f'own-{n}.db'}" for n in range(count)]


def test_threads_opening_new_sqlite_files_at_once_all_open_with_the_schema(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        urls = _sqlite_urls(tmp_path / str(round_), OPENERS)
        assert _in_threads([_open_and_write(url) for url in urls]) == []
        assert {_revision(url) for url in urls} == {SCHEMA_REVISION}


async def test_async_stores_opening_new_sqlite_files_at_once_all_open(tmp_path: Path) -> None:
    async def one(url: str) -> None:
        async with AsyncSessionStore(url) as store:
            sid = await store.create_session(cwd="/repo")
            assert (await store.session(sid)).entry_count == 0

    for round_ in range(ROUNDS):
        urls = _sqlite_urls(tmp_path / str(round_), OPENERS)
        results = await asyncio.gather(*(one(url) for url in urls), return_exceptions=True)
        assert [r for r in results if r is not None] == []


@pytest.fixture
def empty_pg_databases() -> Iterator[Callable[[], str]]:
    """A maker of new PostgreSQL databases without any schema (not cloned from the migrated template)."""
    require(POSTGRES)
    names: list[str] = []

    def make() -> str:
        name, url = fresh_pg_database(prefix="sessionstore_e")
        names.append(name)
        return url

    yield make
    for name in names:
        drop_pg_database(name)


def _open_upgrading(url: str) -> Callable[[], None]:
    def job() -> None:
        SessionStore(url, upgrade=True).close()

    return job


def test_threads_upgrading_new_postgresql_databases_at_once_all_open(
        empty_pg_databases: Callable[[], str]) -> None:
    shared = empty_pg_databases()
    urls = [shared, shared, shared, empty_pg_databases(), empty_pg_databases()]
    assert _in_threads([_open_upgrading(url) for url in urls]) == []
    assert {_revision(url) for url in urls} == {SCHEMA_REVISION}


async def test_async_stores_upgrading_new_postgresql_databases_on_one_loop_all_open(
        empty_pg_databases: Callable[[], str]) -> None:
    """On the loop a store's calls are greenlets: the one holding Alembic's lock waits on the loop,
    so the others must wait for the lock without blocking the loop."""
    shared = empty_pg_databases()
    urls = [shared, shared, empty_pg_databases(), empty_pg_databases()]

    async def one(url: str) -> None:
        async with AsyncSessionStore(url, upgrade=True) as store:
            await store.create_session(cwd="/repo")

    results = await asyncio.wait_for(asyncio.gather(*(one(url) for url in urls), return_exceptions=True), 60)
    assert [r for r in results if r is not None] == []
    assert {_revision(url) for url in urls} == {SCHEMA_REVISION}


OPENER = """
import os, sys, time
from sessionstore.api import SessionStore
url, start = sys.argv[1], sys.argv[2]
while not os.path.exists(start):
    time.sleep(0.001)
with SessionStore(url, upgrade=True) as store:
    store.create_session(cwd="/repo")
"""


def _processes_open_at_once(url: str, tmp_path: Path, count: int = 4) -> None:
    start = tmp_path / f"start-{uuid.uuid4().hex}"
    procs = [subprocess.Popen([sys.executable, "-c", OPENER, url, str(start)], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(count)]
    time.sleep(1.5)  # the interpreters start and import before the barrier
    start.touch()
    outcomes = [(proc.wait(120), proc.communicate()[1]) for proc in procs]
    assert [err for code, err in outcomes if code != 0] == []
    assert _revision(url) == SCHEMA_REVISION


@pytest.mark.slow
def test_processes_opening_one_new_sqlite_file_at_once_all_open(tmp_path: Path) -> None:
    _processes_open_at_once(f"sqlite:///{tmp_path / 'shared.db'}", tmp_path)


@pytest.mark.slow
def test_processes_upgrading_one_new_postgresql_database_at_once_all_open(
        tmp_path: Path, empty_pg_databases: Callable[[], str]) -> None:
    _processes_open_at_once(empty_pg_databases(), tmp_path)

"""The async twin of :class:`~sessionstore.api.SessionStore`: the same methods, awaitable.

    async with AsyncSessionStore("postgresql://...") as store:
        sid = await store.create_session(cwd="/repo")
        await store.append_message(sid, user_message("hi"))
        ctx = await store.context(sid, transform_context=my_async_hook)

Every call runs the sync :class:`SessionStore` method of the same name, so the rules (validation, the
leaf check, compaction planning, pi's write shapes) have one home, ``SessionStore`` and the
``EntryStore`` below it. Results, and exceptions with their types (``LeafConflictError``,
``SessionNotFoundError``, ...), are those of the sync method. Where the call runs:

- **PostgreSQL**: on the caller's event loop, on psycopg's async connections (``AsyncConnection``,
  pooled by SQLAlchemy's async engine). The sync method runs as a greenlet (SQLAlchemy's asyncio
  layer, ``greenlet_spawn``) that gives the loop back at every round trip to the server
  (:mod:`sessionstore.store.pg_async`), so no thread is used and other tasks run while a call waits.
  Up to ``workers`` calls (4 by default, within the pool's 5 connections) are in flight at once, each
  on its own connection; the rest wait their turn in the order they were made. The store belongs to
  the loop that first uses it. The work between round trips (validation, projection, and the reading
  or writing of an import's or export's file) runs on the loop's thread.
- **SQLite**: on a worker thread of the store's own (``workers``: 1 by default), calls from many tasks
  one at a time in the order they were made (SQLite takes one writer at a time anyway), so the event
  loop never waits on the file.

Either way every append lands once, appends to one session are serialised by the database as between
processes, and an ``expected_leaf`` that another call moved raises ``LeafConflictError``; no order is
promised between calls that were not awaited one after the other.

Cancellation. A cancelled call that has not started never runs; one that has started runs to its end
(every write is one transaction: it lands whole or not at all) and its result is dropped.
:meth:`aclose` waits for the calls made before it. ``watch_sync`` stops at its next pause when its task
is cancelled or the store closed.

Callbacks (``transform_context``, ``progress``, ``on_cycle``) run on the caller's event loop: an
``async def`` hook is awaited there, and the call waits for it, so a hook may use the loop's objects
(clients, locks) and what it raises is what a sync hook raising would give. A callback may call the
same store: that call runs at once, inside the call that waits for the callback (queued behind it, it
would wait for ever); on SQLite it then runs on the loop's thread.

The store is opened by the first call, or by ``async with`` (or :meth:`open`), which raises an error of
opening; never on the loop's thread on SQLite.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import inspect
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from sessionstore.api import ContextResult, Leaf, SessionStore
from sessionstore.catalog.defaults import DEFAULT_INTERVAL, HITS_PER_SESSION
from sessionstore.context.compaction import DEFAULT_KEEP_RECENT_TOKENS, CompactionPlan
from sessionstore.context.entry_cache import DEFAULT_ENTRY_CACHE_BYTES, EntryCache
from sessionstore.context.project import TransformContext
from sessionstore.errors import StoreError
from sessionstore.models.wire import AgentMessageDict
from sessionstore.store.engine import Durability
from sessionstore.store.records import UNSET, AppendResult, ImportResult, ListOrder, SessionEvent, SessionInfo, TreeNode
from sessionstore.store.tenant import DEFAULT_TENANT, check_tenant
from sessionstore.validate import Diagnostic

if TYPE_CHECKING:
    from sessionstore.catalog.defaults import SortOrder
    from sessionstore.catalog.search import SearchResult
    from sessionstore.catalog.stats import AllStatsReport, SessionStatsReport
    from sessionstore.catalog.sync import Progress as SyncProgress
    from sessionstore.catalog.sync import SyncResult
    from sessionstore.models.content import WireModel
    from sessionstore.models.kinds import SessionEntryDict, SessionHeaderDict

P = ParamSpec("P")
T = TypeVar("T")

POSTGRES_WORKERS = 4
"""Calls of a PostgreSQL store in flight at once by default, each on a pooled connection (SQLAlchemy's
pool keeps 5)."""
_HOOK_POLL = 1.0
"""Seconds between checks, while a worker thread waits for a callback on the caller's loop, that the
loop is still running (a loop closed before it ran the callback would leave the worker waiting for ever)."""
_CLOSED = "this AsyncSessionStore is closed"
_CALL_UNDER_WAY: contextvars.ContextVar[object | None] = contextvars.ContextVar("sessionstore_aio_call",
                                                                                 default=None)
"""The runner whose call is under way in this context: a callback of that call (a ``transform_context``
or ``progress`` hook) that calls the same store runs its call at once, inside the call that waits for
it, as the sync store's nested calls run (queued behind it, it would wait for ever)."""


class _Stopped(Exception):
    """The awaiting task of a ``watch_sync`` was cancelled: its next pause ends it."""


def _backend_name(url: str | None) -> str | None:
    """``"sqlite"``, ``"postgresql"``, ...; ``None`` for a URL that does not parse (opening says why)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    from sessionstore.store.location import default_url

    try:
        return make_url(url or default_url()).get_backend_name()
    except ArgumentError:
        return None


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Done callback of a call whose caller may be gone (cancelled): its exception counts as seen."""
    if not future.cancelled():
        future.exception()


def _watch(store: SessionStore, directory: str | Path | None, *, interval: float, cycles: int | None, prune: bool,
           adopt: bool, include_deleted: bool, on_cycle: Callable[[SyncResult], None] | None,
           sleep: Callable[[float], None]) -> SyncResult:
    """``SessionStore.watch_sync`` with a pause that a cancelled caller can end (``catalog.sync.watch``
    takes the pause; the sync method does not pass one)."""
    from sessionstore.catalog.sync import watch

    return watch(store._entries, directory, interval=interval, cycles=cycles, prune=prune, adopt=adopt,
                 include_deleted=include_deleted, on_cycle=on_cycle, sleep=sleep)


class _Stop(Protocol):
    """The stop of one ``watch_sync``: :meth:`set` ends it at its next :meth:`pause`."""

    def set(self) -> None: ...

    def pause(self, seconds: float) -> None:
        """Wait ``seconds``; raise :class:`_Stopped` when stopped first."""


class _Runner(Protocol):
    """Where an :class:`AsyncSessionStore` runs the sync store's methods."""

    async def open(self) -> SessionStore: ...

    def opened(self) -> SessionStore:
        """The open store (on threads: waiting for the opening; on the loop: only once opened)."""

    async def run(self, job: Callable[[SessionStore], T]) -> T: ...

    def here(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        """``callback`` as the sync store calls it: run on the caller's loop, awaited when it is async."""

    def stop(self) -> _Stop: ...

    async def close(self) -> None:
        """Wait for the calls made, then close the store."""


class _ThreadStop:
    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def pause(self, seconds: float) -> None:
        if self._event.wait(seconds):
            raise _Stopped


class _Threads:
    """Calls on the store's worker threads (SQLite)."""

    def __init__(self, opener: Callable[[], SessionStore], workers: int) -> None:
        self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(workers, thread_name_prefix="sessionstore-aio")
        self._opened: concurrent.futures.Future[SessionStore] = self._pool.submit(opener)

    async def open(self) -> SessionStore:
        return await asyncio.shield(asyncio.wrap_future(self._opened))

    def opened(self) -> SessionStore:
        return self._opened.result()

    async def run(self, job: Callable[[SessionStore], T]) -> T:
        """``job(store)`` on a worker; cancelling the caller drops a call not yet started."""
        pool = self._pool
        if pool is None:
            raise StoreError(_CLOSED)
        if _CALL_UNDER_WAY.get() is self:  # from a callback of a call of this store, which waits for it
            return job(self._opened.result())

        def on_worker() -> T:
            token = _CALL_UNDER_WAY.set(self)  # (a callback's task on the loop inherits it)
            try:
                return job(self._opened.result())
            finally:
                _CALL_UNDER_WAY.reset(token)

        try:
            submitted = pool.submit(on_worker)
        except RuntimeError:  # shut down by an aclose() that began meanwhile
            raise StoreError(_CLOSED) from None
        try:
            return await asyncio.wrap_future(submitted)
        except asyncio.CancelledError:
            submitted.cancel()  # now, not a loop iteration later as wrap_future would: a call not started stays so
            raise

    def here(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        loop = asyncio.get_running_loop()

        async def call(args: tuple[Any, ...]) -> Any:
            result = callback(*args)
            if inspect.isawaitable(result):
                result = await result
            return result

        def run_there(*args: Any) -> Any:
            future = asyncio.run_coroutine_threadsafe(call(args), loop)
            while True:
                try:
                    return future.result(timeout=_HOOK_POLL)
                except concurrent.futures.TimeoutError:
                    if loop.is_closed() or not loop.is_running():
                        future.cancel()
                        raise RuntimeError(
                            "the event loop that made the call stopped before its callback ran") from None

        return run_there

    def stop(self) -> _Stop:
        return _ThreadStop()

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(self._shut_down, pool)

    def _shut_down(self, pool: ThreadPoolExecutor) -> None:
        pool.shutdown(wait=True)
        if self._opened.exception() is None:
            self._opened.result().close()


class _LoopStop:
    def __init__(self) -> None:
        self._event = asyncio.Event()

    def set(self) -> None:
        self._event.set()

    def pause(self, seconds: float) -> None:
        from sessionstore.store.pg_async import await_on_loop

        try:
            await_on_loop(asyncio.wait_for(self._event.wait(), seconds))
        except TimeoutError:
            return
        raise _Stopped


class _OnLoop:
    """Calls as greenlets on the caller's loop, on psycopg's async connections (PostgreSQL)."""

    def __init__(self, opener: Callable[[], SessionStore], workers: int) -> None:
        self._opener = opener
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Future[SessionStore] | None = None
        self._slots = asyncio.Semaphore(workers)
        self._calls: set[asyncio.Future[Any]] = set()
        self._closed = False

    async def open(self) -> SessionStore:
        if self._closed:
            raise StoreError(_CLOSED)
        return await self._open()

    def _check_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif loop is not self._loop:  # psycopg's async connections work on the loop that made them only
            raise StoreError("this AsyncSessionStore is in use on another event loop: open one per loop")

    async def _open(self) -> SessionStore:
        self._check_loop()
        if self._opening is None:
            from sqlalchemy.util import greenlet_spawn

            self._opening = asyncio.ensure_future(greenlet_spawn(self._opener))
            self._opening.add_done_callback(_retrieve)
        return await asyncio.shield(self._opening)

    def opened(self) -> SessionStore:
        if self._opening is None or not self._opening.done():
            raise StoreError("this AsyncSessionStore is not open yet: await its open() (or use async with) first")
        return self._opening.result()

    async def run(self, job: Callable[[SessionStore], T]) -> T:
        """``job(store)`` as a greenlet on this loop; cancelling the caller drops a call not yet started."""
        from sqlalchemy.util import greenlet_spawn

        if self._closed:
            raise StoreError(_CLOSED)
        if _CALL_UNDER_WAY.get() is self:  # from a callback of a call of this store, which waits for it
            return await greenlet_spawn(job, await self.open())
        started = False

        async def call() -> T:
            nonlocal started
            store = await self._open()
            async with self._slots:
                started = True
                _CALL_UNDER_WAY.set(self)  # (this task's own context: its callbacks see it)
                return await greenlet_spawn(job, store)

        self._check_loop()
        task = asyncio.ensure_future(call())  # registered now: an aclose() that follows waits for it
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)
        task.add_done_callback(_retrieve)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not started:
                task.cancel()
            raise

    def here(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        from sessionstore.store.pg_async import await_on_loop

        def run_here(*args: Any) -> Any:
            result = callback(*args)
            if inspect.isawaitable(result):
                result = await_on_loop(result)
            return result

        return run_here

    def stop(self) -> _Stop:
        return _LoopStop()

    async def close(self) -> None:
        from sqlalchemy.util import greenlet_spawn

        already, self._closed = self._closed, True
        while self._calls:
            await asyncio.gather(*self._calls, return_exceptions=True)
        if already or self._opening is None:
            return
        try:
            store = await asyncio.shield(self._opening)
        except Exception:  # an error of opening: nothing open to close (the call that opened raised it)
            return
        await greenlet_spawn(store.close)


class AsyncSessionStore:
    """:class:`~sessionstore.api.SessionStore` for asyncio: each method awaits the sync method of the
    same name, on psycopg's async connections on the caller's loop (PostgreSQL) or on the store's worker
    thread (SQLite); see the module's documentation for concurrency, cancellation and callbacks.
    ``workers``: calls in flight at once (default: 4 on PostgreSQL, 1 on SQLite, whose calls run on that
    many threads). ``tenant``: whose sessions it sees (``SessionStore``'s); :meth:`for_tenant` gives
    another tenant's store on the same database and workers."""

    def __init__(self, url: str | None = None, *, durability: Durability = "full", upgrade: bool | None = None,
                 create: bool = True, tenant: str = DEFAULT_TENANT,
                 entry_cache_bytes: int = DEFAULT_ENTRY_CACHE_BYTES, workers: int | None = None) -> None:
        from sessionstore.store.location import default_url

        self.tenant = check_tenant(tenant)
        """The tenant whose sessions this store sees."""
        self._owner: AsyncSessionStore | None = None
        """The store that opened the database, for a view of another tenant (:meth:`for_tenant`)."""
        on_loop = _backend_name(url) == "postgresql"
        count = (POSTGRES_WORKERS if on_loop else 1) if workers is None else workers
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            from sessionstore.errors import InvalidInputError

            raise InvalidInputError(f"workers must be a positive int, got {workers!r}")
        self.url = url or default_url()
        """The URL given (or the default one)."""
        self.workers = count
        self.on_event_loop = on_loop
        """Whether calls run on the caller's loop (PostgreSQL's async connections), not on worker threads."""
        self._runner: _Runner
        if on_loop:
            def open_on_loop() -> SessionStore:
                from sessionstore.store.entry_store import EntryStore

                return SessionStore._over(EntryStore(url, durability=durability, upgrade=upgrade, create=create,
                                                     on_event_loop=True, tenant=tenant),
                                          EntryCache(entry_cache_bytes))

            self._runner = _OnLoop(open_on_loop, count)
        else:
            self._runner = _Threads(lambda: SessionStore(url, durability=durability, upgrade=upgrade, create=create,
                                                         tenant=tenant, entry_cache_bytes=entry_cache_bytes), count)
        self._closed = False
        self._watches: set[_Stop] = set()
        """The stops of the ``watch_sync`` calls under way (:meth:`close` sets them)."""

    async def _run(self, method: Callable[Concatenate[SessionStore, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``method(store, *args, **kwargs)`` where the store's calls run."""
        if self._closed:
            raise StoreError(_CLOSED)
        tenant = self.tenant
        return await self._runner.run(
            lambda store: method(store if store.tenant == tenant else store.for_tenant(tenant), *args, **kwargs))

    def for_tenant(self, tenant: str) -> AsyncSessionStore:
        """The store of ``tenant`` on this store's database and workers (cheap: no new engine, no schema
        check). Closing it stops only its own ``watch_sync`` calls; the database stays open for this
        store, whose :meth:`close` closes it."""
        view = AsyncSessionStore.__new__(AsyncSessionStore)
        view.tenant = check_tenant(tenant)
        view._owner = self._owner or self
        view.url, view.workers, view.on_event_loop = self.url, self.workers, self.on_event_loop
        view._runner = self._runner
        view._closed = False
        view._watches = set()
        return view

    async def open(self) -> AsyncSessionStore:
        """Wait until the database is open (the errors of ``SessionStore(url)``, e.g. ``SchemaError``)."""
        if self._closed:
            raise StoreError(_CLOSED)
        await self._runner.open()
        return self

    @property
    def database(self) -> str:
        """The database's URL, password hidden (on threads it waits for the opening; on the loop the store
        must be open)."""
        return self._runner.opened().database

    async def close(self) -> None:
        """Wait for the calls already made (a ``watch_sync`` under way stops at its next pause), then close
        the database (again: nothing)."""
        self._closed = True
        for stop in list(self._watches):
            stop.set()
        if self._owner is None:
            await self._runner.close()

    async def aclose(self) -> None:
        """:meth:`close` (the name ``contextlib.aclosing`` calls)."""
        await self.close()

    async def __aenter__(self) -> AsyncSessionStore:
        try:
            return await self.open()
        except BaseException:
            await self.close()
            raise

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- sessions ------------------------------------------------------------------------------
    async def create_session(self, *, cwd: str, session_id: str | None = None, parent_session: str | None = None,
                             timestamp: str | None = None, exist_ok: bool = False) -> str:
        """Create an empty session (``SessionStore.create_session``; ``exist_ok``: leave one of that id)."""
        return await self._run(SessionStore.create_session, cwd=cwd, session_id=session_id,
                               parent_session=parent_session, timestamp=timestamp, exist_ok=exist_ok)

    async def delete_session(self, session_id: str, *, expected_leaf: Leaf = UNSET) -> None:
        """Remove the session and all its entries, in one transaction (``SessionStore.delete_session``;
        ``expected_leaf``: only while the leaf is that entry)."""
        await self._run(SessionStore.delete_session, session_id, expected_leaf=expected_leaf)

    async def session(self, session_id: str) -> SessionInfo:
        """The session's listing facts (``SessionStore.session``)."""
        return await self._run(SessionStore.session, session_id)

    async def list_sessions(self, *, cwd: str | None = None, since_ms: int | None = None, limit: int | None = None,
                            sort: ListOrder = "activity") -> list[SessionInfo]:
        """The session list (``SessionStore.list_sessions``): newest first by ``sort``."""
        return await self._run(SessionStore.list_sessions, cwd=cwd, since_ms=since_ms, limit=limit, sort=sort)

    async def most_recent_session(self, *, cwd: str | None = None) -> str | None:
        """The session pi's ``continueRecent`` resumes (``SessionStore.most_recent_session``)."""
        return await self._run(SessionStore.most_recent_session, cwd=cwd)

    async def search(self, query: str, *, cwd: str | None = None, limit: int | None = None,
                     sort: SortOrder = "relevance", everything: bool = False,
                     hits: int = HITS_PER_SESSION, archived: bool = False) -> list[SearchResult]:
        """The sessions pi 1.6's session picker shows for ``query`` (``SessionStore.search``)."""
        return await self._run(SessionStore.search, query, cwd=cwd, limit=limit, sort=sort, everything=everything,
                               hits=hits, archived=archived)

    async def header(self, session_id: str) -> SessionHeaderDict:
        """pi's ``getHeader``: the session's header line."""
        return await self._run(SessionStore.header, session_id)

    # -- import / export -----------------------------------------------------------------------
    async def import_jsonl(self, source: str | Path | IO[bytes], *, lenient: bool = False, replace: bool = False,
                           progress: Callable[[int], None] | None = None) -> ImportResult:
        """Import one pi session file (v1-v3) as a new session, atomically (``SessionStore.import_jsonl``;
        ``progress`` runs on the caller's loop)."""
        return await self._run(SessionStore.import_jsonl, source, lenient=lenient, replace=replace,
                               progress=self._here(progress))

    async def import_entries(self, header: Mapping[str, Any], entries: Iterable[Mapping[str, Any]], *,
                             replace: bool = False) -> ImportResult:
        """Create a session from a header and its entries in append order, in one transaction. ``entries``
        is read on the worker: give a list, not an iterator that needs the loop."""
        return await self._run(SessionStore.import_entries, header, entries, replace=replace)

    async def export_jsonl(self, session_id: str, fp: IO[bytes]) -> int:
        """Write the session as a v3 file to ``fp`` (written on the worker); returns the entries written."""
        return await self._run(SessionStore.export_jsonl, session_id, fp)

    # -- reading the tree (pi's getters) -------------------------------------------------------
    async def leaf(self, session_id: str) -> str | None:
        """pi's ``getLeafId``."""
        return await self._run(SessionStore.leaf, session_id)

    async def entry(self, session_id: str, entry_id: str) -> SessionEntryDict:
        """pi's ``getEntry`` (``EntryNotFoundError`` when the session has no such entry)."""
        return await self._run(SessionStore.entry, session_id, entry_id)

    async def session_ids_with_prefix(self, prefix: str, *, limit: int = 10) -> list[str]:
        """The ids of sessions starting with ``prefix`` (``SessionStore.session_ids_with_prefix``)."""
        return await self._run(SessionStore.session_ids_with_prefix, prefix, limit=limit)

    async def entry_ids_with_prefix(self, session_id: str, prefix: str, *, limit: int = 10) -> list[tuple[str, str]]:
        """Up to ``limit`` ``(id, type)`` of the session's entries whose id starts with ``prefix``."""
        return await self._run(SessionStore.entry_ids_with_prefix, session_id, prefix, limit=limit)

    async def entries(self, session_id: str) -> list[SessionEntryDict]:
        """pi's ``getEntries``: every entry in append order."""
        return await self._run(SessionStore.entries, session_id)

    async def children(self, session_id: str, entry_id: str | None) -> list[SessionEntryDict]:
        """pi's ``getChildren`` (``None``: the roots), in append order."""
        return await self._run(SessionStore.children, session_id, entry_id)

    async def path(self, session_id: str, leaf_id: Leaf = UNSET) -> list[SessionEntryDict]:
        """pi's ``getBranch``: the entries from the root to ``leaf_id`` (default: the leaf)."""
        return await self._run(SessionStore.path, session_id, leaf_id)

    async def tree(self, session_id: str) -> list[TreeNode]:
        """pi's ``getTree``: roots and children in append order, labels resolved, active path marked."""
        return await self._run(SessionStore.tree, session_id)

    async def labels(self, session_id: str) -> dict[str, Any]:
        """Resolved labels (pi's ``getLabel`` for every target): target entry id -> label."""
        return await self._run(SessionStore.labels, session_id)

    # -- context -------------------------------------------------------------------------------
    async def context(self, session_id: str, *, leaf_id: Leaf = UNSET, provider_safe: bool = False,
                      transform_context: TransformContext | None = None) -> ContextResult:
        """Resume: the context at ``leaf_id`` (default: the session's leaf), validated and projected.
        ``transform_context`` (sync or ``async def``) runs on the caller's loop."""
        return await self._run(SessionStore.context, session_id, leaf_id=leaf_id, provider_safe=provider_safe,
                               transform_context=self._here(transform_context))

    async def write_context_json(self, session_id: str, fp: IO[bytes], *, leaf_id: Leaf = UNSET,
                                 provider_safe: bool = False) -> None:
        """``context --json``'s bytes written to ``fp`` while the path is read, in bounded memory (on the
        worker: ``fp`` is written from its thread)."""
        await self._run(SessionStore.write_context_json, session_id, fp, leaf_id=leaf_id, provider_safe=provider_safe)

    async def write_tree_json(self, session_id: str, fp: IO[bytes]) -> None:
        """``tree --json``'s bytes written to ``fp``, one node at a time (on the worker)."""
        await self._run(SessionStore.write_tree_json, session_id, fp)

    async def events(self, session_id: str, *, after: int | None = None, idle: float = 1.0,
                     stop: Callable[[], bool] | None = None) -> AsyncIterator[SessionEvent]:
        """As ``SessionStore.events``, iterated with ``async for``: the reads run where the store's calls
        run, the waits for a change on this loop (a change hub of its own, closed at the end)."""
        from sessionstore.api import session_feed, watch_changes
        from sessionstore.errors import SessionNotFoundError
        from sessionstore.store.changes import ChangeHub, Cursor, SessionFeed, session_event

        feed: SessionFeed = await self._run(session_feed, session_id)
        key = await self._run(lambda _store: feed.key())
        if key is None:
            raise SessionNotFoundError(session_id)
        hub: ChangeHub = await self._run(watch_changes)
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()

        def wake(_change: object) -> None:
            loop.call_soon_threadsafe(woken.set)

        watch = hub.watch(wake, tenant=self.tenant, key=key)
        cursor = Cursor(after=-1 if after is None else after, key=key)
        try:
            while not cursor.done:
                woken.clear()
                events, caught_up = await self._run(lambda _store: feed.advance(cursor))
                for event in events:
                    yield session_event(event)
                if cursor.done or not caught_up:
                    continue
                while not woken.is_set():
                    if stop is not None and stop():
                        return
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(woken.wait(), idle)
        finally:
            watch.close()
            await asyncio.to_thread(hub.close)

    async def write_entry_lines(self, session_id: str, fp: IO[bytes], *, after: int = -1,
                                limit: int | None = None) -> tuple[int, int | None]:
        """The stored lines of the entries after seq ``after`` written to ``fp`` (on the worker)."""
        return await self._run(SessionStore.write_entry_lines, session_id, fp, after=after, limit=limit)

    async def validate(self, session_id: str, *, leaf_id: Leaf = UNSET) -> list[Diagnostic]:
        """Diagnostics of the context at the leaf (shape, linkage, compaction)."""
        return await self._run(SessionStore.validate, session_id, leaf_id=leaf_id)

    # -- appends -------------------------------------------------------------------------------
    async def append_entry(self, session_id: str, entry: Mapping[str, Any], *, expected_leaf: Leaf = UNSET,
                           entry_id: str | None = None) -> str:
        """Append one pi v3 entry object of any kind (see ``SessionStore.append_entry``)."""
        return await self._run(SessionStore.append_entry, session_id, entry, expected_leaf=expected_leaf,
                               entry_id=entry_id)

    async def append_message(self, session_id: str, message: WireModel | AgentMessageDict | Mapping[str, Any], *,
                             expected_leaf: Leaf = UNSET, entry_id: str | None = None) -> str:
        """Append a message (a model, or wire data checked against its role's shape)."""
        return await self._run(SessionStore.append_message, session_id, message, expected_leaf=expected_leaf,
                               entry_id=entry_id)

    async def append_tool_result(self, session_id: str, *, tool_call_id: str, tool_name: str,
                                 content: str | list[Any], is_error: bool = False, details: Any = None,
                                 expected_leaf: Leaf = UNSET) -> str:
        """Append the result of a tool call (a ``toolResult`` message) under the provider's own tool-call id."""
        return await self._run(SessionStore.append_tool_result, session_id, tool_call_id=tool_call_id,
                               tool_name=tool_name, content=content, is_error=is_error, details=details,
                               expected_leaf=expected_leaf)

    async def append_model_change(self, session_id: str, *, provider: str, model_id: str,
                                  expected_leaf: Leaf = UNSET) -> str:
        """Append a ``model_change`` entry."""
        return await self._run(SessionStore.append_model_change, session_id, provider=provider, model_id=model_id,
                               expected_leaf=expected_leaf)

    async def append_thinking_level_change(self, session_id: str, thinking_level: str, *,
                                           expected_leaf: Leaf = UNSET) -> str:
        """Append a ``thinking_level_change`` entry."""
        return await self._run(SessionStore.append_thinking_level_change, session_id, thinking_level,
                               expected_leaf=expected_leaf)

    async def append_custom(self, session_id: str, custom_type: str, data: Any = None, *,
                            expected_leaf: Leaf = UNSET) -> str:
        """Extension state; never part of the context."""
        return await self._run(SessionStore.append_custom, session_id, custom_type, data, expected_leaf=expected_leaf)

    async def append_entries(self, session_id: str, entries: Iterable[Mapping[str, Any]], *,
                             expected_leaf: Leaf = UNSET) -> list[str]:
        """pi v3 entry objects as one chain, all or none (``SessionStore.append_entries``)."""
        return await self._run(SessionStore.append_entries, session_id, list(entries), expected_leaf=expected_leaf)

    async def append_entries_detailed(self, session_id: str, entries: Iterable[Mapping[str, Any]], *,
                                      expected_leaf: Leaf = UNSET) -> AppendResult:
        """``SessionStore.append_entries_detailed``: ids and parents, the leaf, and whether it wrote."""
        return await self._run(SessionStore.append_entries_detailed, session_id, list(entries),
                               expected_leaf=expected_leaf)

    async def append_custom_message(self, session_id: str, custom_type: str, content: str | list[Any], *,
                                    display: bool = True, details: Any = None, expected_leaf: Leaf = UNSET) -> str:
        """A message injected by an extension; part of the context as a ``custom`` message."""
        return await self._run(SessionStore.append_custom_message, session_id, custom_type, content, display=display,
                               details=details, expected_leaf=expected_leaf)

    async def append_label(self, session_id: str, target_id: str, label: str | None = None, *,
                           expected_leaf: Leaf = UNSET) -> str:
        """Label ``target_id`` (which must exist); no ``label`` clears it."""
        return await self._run(SessionStore.append_label, session_id, target_id, label, expected_leaf=expected_leaf)

    async def append_session_info(self, session_id: str, name: str, *, expected_leaf: Leaf = UNSET) -> str:
        """Name the session (the latest name wins; an empty name clears it)."""
        return await self._run(SessionStore.append_session_info, session_id, name, expected_leaf=expected_leaf)

    async def append_usage(self, session_id: str, *, kind: str, provider: str, model: str, usage: Mapping[str, Any],
                           note: str | None = None, expected_leaf: Leaf = UNSET) -> str:
        """Model usage outside the conversation (pi 1.6's ``usage`` entry)."""
        return await self._run(SessionStore.append_usage, session_id, kind=kind, provider=provider, model=model,
                               usage=usage, note=note, expected_leaf=expected_leaf)

    async def append_context_edit(self, session_id: str, target_id: str, replacement: Mapping[str, Any] | None, *,
                                  expected_leaf: Leaf = UNSET) -> str:
        """Edit an earlier entry's part of the context on this branch (pi 1.6's ``appendContextEdit``)."""
        return await self._run(SessionStore.append_context_edit, session_id, target_id, replacement,
                               expected_leaf=expected_leaf)

    # -- leaf and branches ---------------------------------------------------------------------
    async def branch(self, session_id: str, entry_id: str, *, expected_leaf: Leaf = UNSET) -> None:
        """Move the leaf to an earlier entry; the next append starts a new branch there."""
        await self._run(SessionStore.branch, session_id, entry_id, expected_leaf=expected_leaf)

    async def reset_leaf(self, session_id: str, *, expected_leaf: Leaf = UNSET) -> None:
        """Move the leaf before the first entry; the next append is a new root."""
        await self._run(SessionStore.reset_leaf, session_id, expected_leaf=expected_leaf)

    async def branch_with_summary(self, session_id: str, entry_id: str | None, summary: str, *, details: Any = None,
                                  from_hook: bool | None = None, usage: Mapping[str, Any] | None = None,
                                  expected_leaf: Leaf = UNSET) -> str:
        """Append a ``branch_summary`` child of ``entry_id`` (``None``: a new root) and move the leaf to it."""
        return await self._run(SessionStore.branch_with_summary, session_id, entry_id, summary, details=details,
                               from_hook=from_hook, usage=usage, expected_leaf=expected_leaf)

    async def fork(self, session_id: str, *, leaf_id: Leaf = UNSET, new_session_id: str | None = None) -> str:
        """A new session holding the path root..leaf, as pi 1.6's ``createBranchedSession`` makes it."""
        return await self._run(SessionStore.fork, session_id, leaf_id=leaf_id, new_session_id=new_session_id)

    # -- compaction ----------------------------------------------------------------------------
    async def plan_compaction(self, session_id: str, *, keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
                              leaf_id: Leaf = UNSET) -> CompactionPlan | None:
        """What compacting at the leaf would keep and summarise (``None``: nothing to compact)."""
        return await self._run(SessionStore.plan_compaction, session_id, keep_recent_tokens=keep_recent_tokens,
                               leaf_id=leaf_id)

    async def compact(self, session_id: str, *, summary: str, first_kept_entry_id: str | None = None,
                      tokens_before: int | None = None, details: Any = None, from_hook: bool | None = None,
                      usage: Mapping[str, Any] | None = None, keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
                      expected_leaf: Leaf = UNSET) -> str:
        """Append a ``compaction`` entry at the leaf (the cut planned as pi plans it unless given)."""
        return await self._run(SessionStore.compact, session_id, summary=summary,
                               first_kept_entry_id=first_kept_entry_id, tokens_before=tokens_before, details=details,
                               from_hook=from_hook, usage=usage, keep_recent_tokens=keep_recent_tokens,
                               expected_leaf=expected_leaf)

    # -- stats ---------------------------------------------------------------------------------
    async def search_index_on(self) -> bool:
        """Whether the database keeps a search index (``SessionStore.search_index_on``)."""
        return await self._run(SessionStore.search_index_on)

    async def set_search_index(self, on: bool) -> int:
        """Turn the database's search index off or on (``SessionStore.set_search_index``)."""
        return await self._run(SessionStore.set_search_index, on)

    async def restore_if_archived(self, session_id: str) -> bool:
        """Restore the session when it is archived (``SessionStore.restore_if_archived``)."""
        return await self._run(SessionStore.restore_if_archived, session_id)

    async def archived_ids(self) -> set[str]:
        """The ids of this tenant's archived sessions (``SessionStore.archived_ids``)."""
        return await self._run(SessionStore.archived_ids)

    async def stats(self, session_id: str) -> SessionStatsReport:
        """What pi 1.6's ``/session`` shows of the session (``getSessionStats``)."""
        return await self._run(SessionStore.stats, session_id)

    async def stats_all(self, *, cwd: str | None = None, since_ms: int | float | None = None,
                        by: str | None = None) -> AllStatsReport:
        """The stats summed over the sessions listed, and with ``by`` (``"model"``, ``"day"``) per group."""
        return await self._run(SessionStore.stats_all, cwd=cwd, since_ms=since_ms, by=by)

    # -- sync of a pi session directory --------------------------------------------------------
    async def sync(self, directory: str | Path | None = None, *, prune: bool = False, adopt: bool = False,
                   include_deleted: bool = False, progress: SyncProgress | None = None) -> SyncResult:
        """Mirror a pi session directory into the store once (``SessionStore.sync``; ``progress`` runs on
        the caller's loop)."""
        return await self._run(SessionStore.sync, directory, prune=prune, adopt=adopt,
                               include_deleted=include_deleted, progress=self._here(progress))

    async def watch_sync(self, directory: str | Path | None = None, *, interval: float = DEFAULT_INTERVAL,
                         cycles: int | None = None, prune: bool = False, adopt: bool = False,
                         include_deleted: bool = False,
                         on_cycle: Callable[[SyncResult], None] | None = None) -> SyncResult:
        """:meth:`sync` every ``interval`` seconds, ``cycles`` times or until the awaiting task is cancelled
        (the sync under way finishes first). It holds a worker meanwhile: on SQLite, give it a store of its own."""
        stop = self._runner.stop()
        self._watches.add(stop)

        try:
            return await self._run(_watch, directory, interval=interval, cycles=cycles, prune=prune, adopt=adopt,
                                   include_deleted=include_deleted, on_cycle=self._here(on_cycle), sleep=stop.pause)
        except asyncio.CancelledError:
            stop.set()
            raise
        except _Stopped:
            raise StoreError("this AsyncSessionStore was closed while watch_sync ran") from None
        finally:
            self._watches.discard(stop)

    # -- callbacks -----------------------------------------------------------------------------
    def _here(self, callback: Callable[..., Any] | None) -> Callable[..., Any] | None:
        """``callback`` made to run on the caller's loop when the sync store calls it."""
        return None if callback is None else self._runner.here(callback)


__all__ = ["AsyncSessionStore"]

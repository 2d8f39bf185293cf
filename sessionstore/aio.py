"""The async twin of :class:`~sessionstore.api.SessionStore`: the same methods, awaitable.

    async with AsyncSessionStore("postgresql://...") as store:
        sid = await store.create_session(cwd="/repo")
        await store.append_message(sid, user_message("hi"))
        ctx = await store.context(sid, transform_context=my_async_hook)

Every call runs the sync :class:`SessionStore` method of the same name on a worker thread of the
store's own, so the rules (validation, the leaf check, compaction planning, pi's write shapes) have
one home, ``SessionStore`` and the ``EntryStore`` below it, and the event loop never waits on the
database. Results, and exceptions with their types (``LeafConflictError``, ``SessionNotFoundError``,
...), are those of the sync method.

Concurrency. A SQLite store has one worker: calls from many tasks run one at a time, in the order they
were made (SQLite takes one writer at a time anyway). A PostgreSQL store has ``workers`` threads (4 by
default, within SQLAlchemy's pool of 5): calls overlap on independent connections and appends to one
session are serialised by the database, as between processes. Either way every append lands once,
and an ``expected_leaf`` that another call moved raises ``LeafConflictError``; no order is promised
between calls that were not awaited one after the other.

Cancellation. A cancelled call that has not started never runs; one that has started runs to its end
on the worker (every write is one transaction: it lands whole or not at all) and its result is
dropped. :meth:`aclose` waits for the calls made before it. ``watch_sync`` stops at its next pause
when its task is cancelled or the store closed.

Callbacks (``transform_context``, ``progress``, ``on_cycle``) run on the caller's event loop, not on
the worker: an ``async def`` hook is awaited there, and the call waits for it, so a hook may use the
loop's objects (clients, locks) and what it raises is what a sync hook raising would give.

The store is opened on its worker (no connection on the loop's thread): ``async with`` (or
:meth:`open`) raises an error of opening; without it the first call does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from sessionstore.api import ContextResult, Leaf, SessionStore
from sessionstore.catalog.defaults import DEFAULT_INTERVAL, HITS_PER_SESSION
from sessionstore.context.compaction import DEFAULT_KEEP_RECENT_TOKENS, CompactionPlan
from sessionstore.context.project import TransformContext
from sessionstore.errors import StoreError
from sessionstore.models.wire import AgentMessageDict, SessionEntryDict, SessionHeaderDict
from sessionstore.store.engine import Durability
from sessionstore.store.records import UNSET, ImportResult, ListOrder, SessionInfo, TreeNode
from sessionstore.validate import Diagnostic

if TYPE_CHECKING:
    from sessionstore.catalog.defaults import SortOrder
    from sessionstore.catalog.search import SearchResult
    from sessionstore.catalog.stats import AllStatsReport, SessionStatsReport
    from sessionstore.catalog.sync import Progress as SyncProgress
    from sessionstore.catalog.sync import SyncResult
    from sessionstore.models.content import WireModel

P = ParamSpec("P")
T = TypeVar("T")

POSTGRES_WORKERS = 4
"""Worker threads of a PostgreSQL store by default: calls in flight at once, each on a pooled
connection (SQLAlchemy's pool keeps 5)."""
_HOOK_POLL = 1.0
"""Seconds between checks, while the worker waits for a callback on the caller's loop, that the loop is
still running (a loop closed before it ran the callback would leave the worker waiting for ever)."""


class _Stopped(Exception):
    """The awaiting task of a ``watch_sync`` was cancelled: its next pause ends it."""


def _default_workers(url: str | None) -> int:
    """1 on SQLite, :data:`POSTGRES_WORKERS` on a server (a URL that does not parse: 1, and opening says why)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    from sessionstore.store.location import default_url

    try:
        backend = make_url(url or default_url()).get_backend_name()
    except ArgumentError:
        return 1
    return 1 if backend == "sqlite" else POSTGRES_WORKERS


def _on_loop(callback: Callable[..., Any], loop: asyncio.AbstractEventLoop) -> Callable[..., Any]:
    """A sync callable for the worker that runs ``callback`` on ``loop`` (awaiting what it returns if it
    is awaitable) and gives back its result or raises its exception."""

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
                    raise RuntimeError("the event loop that made the call stopped before its callback ran") from None

    return run_there


def _watch(store: SessionStore, directory: str | Path | None, *, interval: float, cycles: int | None, prune: bool,
           adopt: bool, on_cycle: Callable[[SyncResult], None] | None, sleep: Callable[[float], None]) -> SyncResult:
    """``SessionStore.watch_sync`` with a pause that a cancelled caller can end (``catalog.sync.watch``
    takes the pause; the sync method does not pass one)."""
    from sessionstore.catalog.sync import watch

    return watch(store._entries, directory, interval=interval, cycles=cycles, prune=prune, adopt=adopt,
                 on_cycle=on_cycle, sleep=sleep)


class AsyncSessionStore:
    """:class:`~sessionstore.api.SessionStore` for asyncio: each method awaits the sync method of the
    same name run on the store's worker thread(s) (see the module's documentation for concurrency,
    cancellation and callbacks). ``workers``: threads running calls (default: 1 on SQLite, 4 on
    PostgreSQL)."""

    def __init__(self, url: str | None = None, *, durability: Durability = "full", upgrade: bool | None = None,
                 workers: int | None = None) -> None:
        count = _default_workers(url) if workers is None else workers
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            from sessionstore.errors import InvalidInputError

            raise InvalidInputError(f"workers must be a positive int, got {workers!r}")
        self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(count, thread_name_prefix="sessionstore-aio")
        self._opened: concurrent.futures.Future[SessionStore] = self._pool.submit(
            SessionStore, url, durability=durability, upgrade=upgrade)
        self.workers = count
        self._watches: set[threading.Event] = set()
        """The stops of the ``watch_sync`` calls under way (:meth:`close` sets them)."""

    # -- running on the worker -----------------------------------------------------------------
    def _sync_store(self) -> SessionStore:
        return self._opened.result()

    async def _run(self, method: Callable[Concatenate[SessionStore, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``method(store, *args, **kwargs)`` on a worker; cancelling the caller drops a call not yet started."""
        pool = self._pool
        if pool is None:
            raise StoreError("this AsyncSessionStore is closed")

        def job() -> T:
            return method(self._sync_store(), *args, **kwargs)

        try:
            submitted = pool.submit(job)
        except RuntimeError:  # shut down by an aclose() that began meanwhile
            raise StoreError("this AsyncSessionStore is closed") from None
        try:
            return await asyncio.wrap_future(submitted)
        except asyncio.CancelledError:
            submitted.cancel()  # now, not a loop iteration later as wrap_future would: a call not started stays so
            raise

    async def open(self) -> AsyncSessionStore:
        """Wait until the database is open (the errors of ``SessionStore(url)``, e.g. ``SchemaError``)."""
        await asyncio.shield(asyncio.wrap_future(self._opened))
        return self

    @property
    def url(self) -> str:
        """The URL given (or the default one); waits for the opening if it is still under way."""
        return self._sync_store().url

    @property
    def database(self) -> str:
        """The database's URL, password hidden; waits for the opening if it is still under way."""
        return self._sync_store().database

    async def close(self) -> None:
        """Wait for the calls already made (a ``watch_sync`` under way stops at its next pause), then close
        the database (again: nothing)."""
        pool, self._pool = self._pool, None
        for stop in list(self._watches):
            stop.set()
        if pool is not None:
            await asyncio.to_thread(self._shut_down, pool)

    async def aclose(self) -> None:
        """:meth:`close` (the name ``contextlib.aclosing`` calls)."""
        await self.close()

    def _shut_down(self, pool: ThreadPoolExecutor) -> None:
        pool.shutdown(wait=True)
        if self._opened.exception() is None:
            self._opened.result().close()

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
                             timestamp: str | None = None) -> str:
        """Create an empty session (header version 3); returns its id (a new UUID unless given)."""
        return await self._run(SessionStore.create_session, cwd=cwd, session_id=session_id,
                               parent_session=parent_session, timestamp=timestamp)

    async def delete_session(self, session_id: str) -> None:
        """Remove the session and all its entries, in one transaction."""
        await self._run(SessionStore.delete_session, session_id)

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
                     hits: int = HITS_PER_SESSION) -> list[SearchResult]:
        """The sessions pi 1.6's session picker shows for ``query`` (``SessionStore.search``)."""
        return await self._run(SessionStore.search, query, cwd=cwd, limit=limit, sort=sort, everything=everything,
                               hits=hits)

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

    async def validate(self, session_id: str, *, leaf_id: Leaf = UNSET) -> list[Diagnostic]:
        """Diagnostics of the context at the leaf (shape, linkage, compaction)."""
        return await self._run(SessionStore.validate, session_id, leaf_id=leaf_id)

    # -- appends -------------------------------------------------------------------------------
    async def append_message(self, session_id: str, message: WireModel | AgentMessageDict | Mapping[str, Any], *,
                             expected_leaf: Leaf = UNSET, entry_id: str | None = None) -> str:
        """Append a message (a model, or wire data checked against its role's shape)."""
        return await self._run(SessionStore.append_message, session_id, message, expected_leaf=expected_leaf,
                               entry_id=entry_id)

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
    async def stats(self, session_id: str) -> SessionStatsReport:
        """What pi 1.6's ``/session`` shows of the session (``getSessionStats``)."""
        return await self._run(SessionStore.stats, session_id)

    async def stats_all(self, *, cwd: str | None = None, since_ms: int | float | None = None,
                        by: str | None = None) -> AllStatsReport:
        """The stats summed over the sessions listed, and with ``by`` (``"model"``, ``"day"``) per group."""
        return await self._run(SessionStore.stats_all, cwd=cwd, since_ms=since_ms, by=by)

    # -- sync of a pi session directory --------------------------------------------------------
    async def sync(self, directory: str | Path | None = None, *, prune: bool = False, adopt: bool = False,
                   progress: SyncProgress | None = None) -> SyncResult:
        """Mirror a pi session directory into the store once (``SessionStore.sync``; ``progress`` runs on
        the caller's loop)."""
        return await self._run(SessionStore.sync, directory, prune=prune, adopt=adopt, progress=self._here(progress))

    async def watch_sync(self, directory: str | Path | None = None, *, interval: float = DEFAULT_INTERVAL,
                         cycles: int | None = None, prune: bool = False, adopt: bool = False,
                         on_cycle: Callable[[SyncResult], None] | None = None) -> SyncResult:
        """:meth:`sync` every ``interval`` seconds, ``cycles`` times or until the awaiting task is cancelled
        (the sync under way finishes first). It holds a worker meanwhile: on SQLite, give it a store of its own."""
        stop = threading.Event()
        self._watches.add(stop)

        def pause(seconds: float) -> None:
            if stop.wait(seconds):
                raise _Stopped

        try:
            return await self._run(_watch, directory, interval=interval, cycles=cycles, prune=prune, adopt=adopt,
                                   on_cycle=self._here(on_cycle), sleep=pause)
        except asyncio.CancelledError:
            stop.set()
            raise
        except _Stopped:
            raise StoreError("this AsyncSessionStore was closed while watch_sync ran") from None
        finally:
            self._watches.discard(stop)

    # -- callbacks -----------------------------------------------------------------------------
    @staticmethod
    def _here(callback: Callable[..., Any] | None) -> Callable[..., Any] | None:
        """``callback`` made to run on the running loop when the worker calls it."""
        if callback is None:
            return None
        return _on_loop(callback, asyncio.get_running_loop())


__all__ = ["AsyncSessionStore"]

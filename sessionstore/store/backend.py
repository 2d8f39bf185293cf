"""The backend contract: the primitives the entry store needs from a database, and the rows they take
and give.

A backend (``sqlite.SqliteBackend``, ``postgres.PostgresBackend``) opens transactions on its driver's
connections; inside one, a :class:`Tx` runs the store's statements, each written once per database
in that database's module, in its driver's parameter style. Rows come back as the named tuples
below, whose fields are the statements' select lists (:func:`select_list` writes them from the
fields, so that a row and its statement cannot disagree). Driver errors become
:class:`~sessionstore.errors.StoreError` in the backend's transaction, its one point of translation;
a taken entry id is :class:`~sessionstore.errors.EntryIdTakenError`.

Sessions are addressed by ``key``, the integer the database gave the session row (entries hold it,
not the session id); text columns are in their stored form (:mod:`sessionstore.store.dbtext`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import IO, Any, Literal, NamedTuple, Protocol

import orjson

from sessionstore.models.entry_catalog import search_texts
from sessionstore.store.dbtext import DbText, stored
from sessionstore.store.facts import NodeFacts, UsageRow


class EntryRow(NamedTuple):
    """A ``sessionstore_entries`` row, in its columns' order."""

    session_key: int
    seq: int
    entry_id: DbText
    parent_seq: int | None
    run_start: int
    depth: int
    ctx_depth: int
    compaction_seq: int | None
    model_seq: int | None
    thinking_seq: int | None
    type: DbText
    payload: str


def entry_row(
    session_key: int, entry: dict[str, Any], facts: NodeFacts, parent_seq: int | None, payload: str
) -> EntryRow:
    """The row of ``entry`` with its ``facts``; ``payload`` is its stored JSON text. ``parent_seq`` is
    the parent the tree uses (``None`` for a root, also when the entry's ``parentId`` names no entry:
    the payload keeps what the file said)."""
    kind = entry.get("type")
    return stored(EntryRow(
        session_key,
        facts.seq,
        entry["id"],
        parent_seq,
        facts.run_start,
        facts.depth,
        facts.ctx_depth,
        facts.compaction_seq,
        facts.model_seq,
        facts.thinking_seq,
        kind if isinstance(kind, str) else orjson.dumps(kind).decode(),
        payload,
    ))


def search_row(session_key: int, seq: int, entry: dict[str, Any]) -> SearchRow | None:
    """The search row of ``entry`` (its folded texts in the index's form), ``None`` when it has no search text."""
    texts = search_texts(entry)
    if texts is None:
        return None
    return stored(SearchRow(session_key, seq, texts.role, texts.text, texts.extra))


class HeadRow(NamedTuple):
    """A session row as a write sees it: its key, the listing columns and its leaf with the leaf's facts."""

    key: int
    deleting: bool
    entry_count: int
    message_count: int
    name: DbText | None
    first_message: DbText | None
    modified_ms: int | None
    user_messages: int
    assistant_messages: int
    tool_results: int
    tool_calls: int
    leaf_id: DbText | None
    leaf_seq: int | None
    leaf_run_start: int | None
    leaf_depth: int | None
    leaf_ctx_depth: int | None
    leaf_compaction_seq: int | None
    leaf_model_seq: int | None
    leaf_thinking_seq: int | None
    active_ms: int

    @property
    def leaf_facts(self) -> NodeFacts | None:
        if self.leaf_seq is None:
            return None
        return NodeFacts(self.leaf_seq, self.leaf_run_start or 0, self.leaf_depth or 0, self.leaf_ctx_depth or 0,
                         self.leaf_compaction_seq, self.leaf_model_seq, self.leaf_thinking_seq)


class SessionRow(NamedTuple):
    """A session as listings show it (no entry payload read)."""

    key: int
    id: DbText
    cwd: DbText
    created: DbText
    name: DbText | None
    parent_session: DbText | None
    leaf_id: DbText | None
    entry_count: int
    message_count: int
    first_message: DbText | None
    modified_ms: int | None
    user_messages: int
    assistant_messages: int
    tool_results: int
    tool_calls: int
    header: str
    active_ms: int
    """The session's activity time (``facts.later_activity``)."""
    source_path: DbText | None = None
    """The file the session is synced from (``sessionstore_sources``), ``None`` when it is not synced."""


class ExportHead(NamedTuple):
    """What an export writes first: the stored header line, the leaf and the last entry's id."""

    key: int
    deleting: bool
    header: str
    leaf_id: DbText | None
    last_entry_id: DbText | None


class TreeRow(NamedTuple):
    seq: int
    parent_seq: int | None
    payload: str


class PathRow(NamedTuple):
    """A row of the path query (its select list)."""

    seq: int
    payload: str


class PathSlice(NamedTuple):
    """The entries of a path, root first: the first one's seq and every stored payload (``bytes`` where
    the driver gives the stored UTF-8 without decoding it; the JSON codec reads both)."""

    first_seq: int | None
    payloads: list[str] | list[bytes]


class NewSession(NamedTuple):
    """The ``sessionstore_sessions`` row of a new session (no leaf, no entries yet)."""

    id: DbText
    version: int
    cwd: DbText
    created: DbText
    parent_session: DbText | None
    header: str
    active_ms: int = 0
    """Its activity time (``facts.later_activity``): the header's time, or now for a session made live."""


class HeadUpdate(NamedTuple):
    """A session row's leaf and listing columns after a write."""

    key: int
    leaf_id: DbText | None
    leaf: NodeFacts | None
    entry_count: int
    message_count: int
    name: DbText | None
    first_message: DbText | None
    modified_ms: int | None
    user_messages: int = 0
    assistant_messages: int = 0
    tool_results: int = 0
    tool_calls: int = 0
    active_ms: int = 0
    """The activity time after the write (``facts.later_activity``)."""


class SearchRow(NamedTuple):
    """A ``sessionstore_search`` row: an entry's folded search texts (``models.entry_catalog``)."""

    session_key: int
    seq: int
    role: DbText
    text: str
    extra: str


class EntryBrief(NamedTuple):
    """An entry named by an id prefix: its id and type, stored forms (``Tx.entry_ids_with_prefix``)."""

    entry_id: DbText
    type: DbText


class HitRow(NamedTuple):
    """An entry whose folded search texts hold a needle (a search's hit)."""

    session_key: int
    seq: int
    entry_id: DbText
    role: DbText
class SourceRow(NamedTuple):
    """A ``sessionstore_sources`` row, in its columns' order: where a synced session was read from and
    how far (see ``catalog.sync``)."""

    session_key: int
    path: DbText
    size: int
    mtime_ns: int
    consumed_bytes: int
    consumed_lines: int
    head_bytes: int
    tail_bytes: int
    check_hash: str
    file_version: int
    dangling: str
    synced_at: str


def select_list(row: type[tuple[Any, ...]], **expressions: str) -> str:
    """The select list of ``row``'s fields in order (``NamedTuple`` types); ``expressions`` give the SQL
    of a field that is not a plain column (``payload="payload::text"``), which is then aliased."""
    fields: Sequence[str] = row._fields  # type: ignore[attr-defined]
    return ", ".join(f"{expressions[f]} AS {f}" if f in expressions else f for f in fields)


class EntrySink(Protocol):
    """Rows of a bulk write (an import); every row added is in the transaction once the sink is closed."""

    def add(self, row: EntryRow, search: SearchRow | None = None) -> None:
        """Add an entry's row, and its search row when it has one."""
        ...


class Tx(Protocol):
    """Statements inside one transaction, for one tenant (:class:`Backend`). Methods that write exist
    on every transaction; a read transaction (``Backend.read``) refuses them in the database (SQLite:
    a read-only ``BEGIN`` would fail to upgrade; PostgreSQL: ``READ ONLY``)."""

    @property
    def dialect(self) -> Literal["sqlite", "postgresql"]:
        """The database (for what differs by database beyond a statement: SQLite's ``secure_delete``)."""
        ...

    def run(self, sql: str, params: Mapping[str, Any] | None = None) -> Any:
        """Run one statement kept beside the modules that use it (retention, archive, erasure), written
        once in sqlite3's named style (``:name``; the backend gives it its driver's style); returns the
        cursor (``fetchone``, ``fetchall``, ``rowcount``). Per-session statements still name the session
        key (``tests/test_distribution.py`` checks them)."""
        ...

    # -- sessions ------------------------------------------------------------------------------
    def head(self, session_id: str, *, lock: bool) -> HeadRow | None:
        """The session row with its leaf's facts (``lock``: for a write; later writers wait)."""
        ...

    def session(self, session_id: str) -> SessionRow | None:
        """The session's listing row, ``None`` when absent or marked deleting."""
        ...

    def sessions(self) -> list[SessionRow]:
        """Every session not marked deleting, any order (listings filter and sort them)."""
        ...

    def insert_session(self, values: NewSession) -> int:
        """Insert a session row; returns its key."""
        ...

    def entry_ids_with_prefix(self, key: int, prefix: str, limit: int) -> list[EntryBrief]:
        """Up to ``limit`` entries of the session whose id starts with ``prefix`` (stored form), by id: a
        range of the ``(session_key, entry_id)`` index, the prefix taken literally (``%``, ``_`` too)."""
        ...

    def session_ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` ids (stored form) of the tenant's sessions that start with ``prefix`` (stored
        form, taken literally), by id: a range of the ``(tenant, id)`` index."""
        ...

    def update_head(self, update: HeadUpdate, *, texts_changed: bool) -> None:
        """Write the leaf and the listing columns (``name`` and ``first_message`` only when ``texts_changed``)."""
        ...

    def set_leaf(self, key: int, leaf_id: str | None, leaf: NodeFacts | None, *, active_ms: int | None = None) -> None:
        """Move the leaf (its facts with it); ``active_ms``: the activity time after the move (``None``:
        unchanged)."""
        ...

    def delete_session(self, key: int) -> None:
        """Remove the session row and its entries (the append-only triggers let entries go only with it);
        its catalog rows go with the row."""
        ...

    # -- entries -------------------------------------------------------------------------------
    def insert_entry(self, row: EntryRow) -> None:
        """Insert one entry; a taken ``(session_key, entry_id)`` raises ``EntryIdTakenError``."""
        ...

    def add_search(self, row: SearchRow) -> None:
        """Insert an entry's search row (its index follows in the same transaction); a row already there
        is left as it is."""
        ...

    def add_usage(self, rows: Sequence[UsageRow]) -> None:
        """Add usage sums to the session's rows of the same key and day (a missing row is created)."""
        ...

    def search_mark(self, key: int) -> int | None:
        """How far session ``key``'s search rows go (``next_seq``: 0 when none), ``None`` when the search
        index is off (setting ``search_index``)."""
        ...

    def search_lag(self) -> list[tuple[int, int, int]]:
        """``(key, next_seq, entry_count)`` of the tenant's sessions whose search rows stop before their end."""
        ...

    def lock_for_search(self, key: int) -> tuple[int, int] | None:
        """``(entry_count, next_seq)`` of session ``key`` in a write that indexes it, ``None`` when it is
        gone or going; the session cannot be deleted until the write ends."""
        ...

    def add_search_rows(self, rows: Sequence[SearchRow]) -> None:
        """Insert search rows; a row already there (another writer indexed it) is left as it is."""
        ...

    def put_search_mark(self, key: int, next_seq: int) -> None:
        """Record that session ``key``'s entries below ``next_seq`` have their search rows (never lowered)."""
        ...

    def setting(self, name: str) -> str | None:
        """A setting of the database (``sessionstore_settings``), ``None`` when unset."""
        ...

    def put_setting(self, name: str, value: str) -> None: ...

    def clear_search(self) -> None:
        """Delete every search row and mark, of every tenant."""
        ...

    def delete_search_rows(self, key: int) -> None:
        """Delete session ``key``'s search rows, what derives from them and its search mark: the session is
        not indexed (an archive's; its restore indexes it again)."""
        ...

    def sessions_with_text(self, needle: str, *, everything: bool) -> set[int]:
        """Keys of the sessions with an entry whose folded ``text`` (with ``everything``: or ``extra``)
        contains ``needle``, read through the search index where the database has one."""
        ...

    def folded_texts(self, key: int, *, everything: bool) -> list[str]:
        """The session's non-empty folded texts in append order (with ``everything``: each entry's
        ``text``, then its ``extra``)."""
        ...

    def text_hits(self, keys: Sequence[int], needles: Sequence[str], *, everything: bool,
                  per_session: int) -> list[HitRow]:
        """The first ``per_session`` entries (append order) of each session in ``keys`` whose folded
        texts contain one of ``needles``, by session key then seq."""
        ...

    def bulk_sink(self) -> AbstractContextManager[EntrySink]:
        """A sink for many rows (an import), for a transaction opened with ``write(bulk=True)``."""
        ...

    def facts(self, key: int, entry_id: str) -> NodeFacts | None: ...

    def payload(self, key: int, entry_id: str) -> str | None: ...

    def payload_at(self, key: int, seq: int) -> str | None: ...

    def path(self, key: int, leaf_seq: int, *, from_depth: int) -> PathSlice:
        """The entries on the path ending at ``leaf_seq`` whose depth is at least ``from_depth``, in
        path order (root first), read in one recursive query over its runs of consecutive entries."""
        ...

    def on_path(self, key: int, leaf_seq: int, target: NodeFacts) -> bool:
        """Whether the entry ``target`` is on the path ending at ``leaf_seq`` (``leaf_seq`` included)."""
        ...

    def children(self, key: int, parent_seq: int | None) -> list[str]:
        """Payloads of the children of ``parent_seq`` (``None``: the roots), in append order."""
        ...

    def tree(self, key: int) -> list[TreeRow]:
        """Every entry with its parent, in append order."""
        ...

    def payloads_of_type(self, key: int, entry_type: str) -> list[str]:
        """Payloads of the entries of one ``type``, in append order."""
        ...

    def payloads(self, key: int) -> Iterator[str]:
        """Every payload in append order, streamed."""
        ...

    def count_entries(self, key: int) -> int: ...

    def export_head(self, session_id: str) -> ExportHead | None:
        """An export's header, leaf and last entry id in one statement, in the export's snapshot."""
        ...

    def write_payload_lines(self, key: int, fp: IO[bytes]) -> int:
        """Write every stored payload and a newline, in append order, as stored (no decoding);
        returns the count."""
        ...

    def path_runs(self, key: int, leaf_seq: int, *, from_depth: int) -> list[tuple[int, int]]:
        """The runs ``(first_seq, last_seq)`` of the path ending at ``leaf_seq`` whose depth is at least
        ``from_depth`` (the path query's recursion, no payload read), root first."""
        ...

    def payloads_between(self, key: int, first_seq: int, last_seq: int, *, from_depth: int = 0,
                         entry_type: str | None = None) -> list[tuple[int, str | bytes]]:
        """``(seq, stored payload)`` of the entries with ``first_seq <= seq <= last_seq`` and depth at least
        ``from_depth`` (of ``entry_type`` only, when given), in seq order: a streamed read pages with it."""
        ...

    def tree_links(self, key: int) -> Iterator[tuple[int, int | None]]:
        """``(seq, parent_seq)`` of every entry, in append order, streamed (no payload)."""
        ...

    # -- catalog: stats --------------------------------------------------------------------------
    def session_usage(self, key: int) -> list[UsageRow]:
        """The session's ``sessionstore_usage`` rows (its usage sums per breakdown key and day), read by
        the primary key; no payload is read."""
        ...

    def usage_sums(self, keys: Sequence[int]) -> list[UsageSum]:
        """The usage of the sessions ``keys`` summed per breakdown key and day, in one grouped query over
        ``sessionstore_usage`` (the keys travel as one parameter, however many they are)."""
        ...

    def counter_sums(self, keys: Sequence[int]) -> CounterSums:
        """pi's message counters of the session rows ``keys``, summed in one aggregate query (0 for none)."""
    # -- sync sources (catalog.sync) -----------------------------------------------------------
    def sources(self) -> list[tuple[str, SourceRow]]:
        """Every source row with its session's id (sessions marked deleting left out)."""
        ...

    def source(self, key: int) -> SourceRow | None:
        """The session's source row, ``None`` when it is not synced."""
        ...

    def put_source(self, row: SourceRow) -> None:
        """Insert or replace the session's source row (a path another session holds is refused)."""
        ...

    def deleted_sources(self) -> dict[str, str]:
        """Path -> session id of every file whose synced session was deleted on purpose."""
        ...

    def put_deleted_source(self, path: str, session_id: str, deleted_at: str) -> None:
        """Record that the session synced from ``path`` was deleted on purpose (a sync leaves the file)."""
        ...

    def forget_deleted_source(self, path: str, session_id: str) -> None:
        """Forget the deletion of ``path``'s session and any recorded for ``session_id`` (imported again)."""
        ...

    def insert_entries(self, rows: Sequence[EntryRow], search: Sequence[SearchRow]) -> None:
        """Insert entries and their search rows in batches (no ``COPY`` left open: other statements of
        the transaction may run between two calls, as the lookups of an incremental sync do)."""
        ...


class Backend(Protocol):
    """A database the entry store runs on: transactions on the driver's connections, each for one
    tenant (its statements find, list and insert that tenant's sessions and sources only)."""

    name: str
    """The database's name, for messages (``sqlite``, ``postgresql``)."""

    def read(self, *, tenant: str) -> AbstractContextManager[Tx]:
        """A read transaction: its statements see one snapshot of the database."""
        ...

    def write(self, *, tenant: str, bulk: bool = False) -> AbstractContextManager[Tx]:
        """A write transaction, committed when the block ends, rolled back when it raises. ``bulk``:
        an import (many rows through ``Tx.bulk_sink``)."""
        ...

    def checkpoint(self) -> None:
        """Write what committed transactions logged into the database itself now, so that a write that
        logged many pages (the search index's catch-up) pays for copying them, not the appends after it
        (SQLite: a passive checkpoint of the WAL, skipped where a reader or writer is in the way;
        PostgreSQL: nothing, its server checkpoints on its own schedule). Never raises."""
        ...

    def close(self) -> None: ...


class TenantBackend:
    """One tenant's transactions on a shared :class:`Backend`: what the entry store and the catalog
    open (``read()``, ``write()``), so that no statement runs without the tenant. Closing it closes
    the shared backend only when it owns it (the store that opened the database)."""

    def __init__(self, shared: Backend, tenant: str, *, owner: bool) -> None:
        self.shared = shared
        self.tenant = tenant
        self.name = shared.name
        self._owner = owner

    def read(self) -> AbstractContextManager[Tx]:
        return self.shared.read(tenant=self.tenant)

    def write(self, *, bulk: bool = False) -> AbstractContextManager[Tx]:
        return self.shared.write(tenant=self.tenant, bulk=bulk)

    def checkpoint(self) -> None:
        self.shared.checkpoint()

    def close(self) -> None:
        if self._owner:
            self.shared.close()


class UsageSum(NamedTuple):
    """``sessionstore_usage`` rows of several sessions summed under one key on one day (``Tx.usage_sums``)."""

    model_key: str
    day: str
    entries: int
    input: float
    output: float
    cache_read: float
    cache_write: float
    cost: float


class CounterSums(NamedTuple):
    """pi's message counters of several session rows, summed (``Tx.counter_sums``)."""

    message_count: int
    user_messages: int
    assistant_messages: int
    tool_calls: int
    tool_results: int

"""The part of a :class:`~sessionstore.store.backend.Tx` that is the same on every database: running
one database's :class:`Statements` on a DB-API cursor and giving named rows back. Each backend
module writes its own statements and adds what only its database does (bulk sink, payload stream)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Literal

import orjson

from sessionstore.store.backend import (
    CounterSums,
    EntryBrief,
    EntryRow,
    ExportHead,
    HeadRow,
    HeadUpdate,
    PathSlice,
    SearchRow,
    SessionRow,
    SourceRow,
    TreeRow,
    UsageSum,
    select_list,
)
from sessionstore.store.facts import NodeFacts, UsageRow

FETCH_ROWS = 4096
"""Rows per ``fetchmany`` of a streamed read."""


@dataclass(frozen=True, slots=True)
class Statements:
    """One database's SQL for the contract's primitives. Parameters are named (``key``, ``sid``,
    ``eid``, ``seq``, ``tenant``, ...), in the driver's style; every statement that finds sessions by
    id, lists them or reads sync sources names the transaction's ``tenant``; each select list is the
    fields of the row type it fills (see ``backend.select_list``)."""

    head: str
    """:class:`HeadRow` of session ``sid``."""
    head_for_update: str
    session: str
    """:class:`SessionRow` of session ``sid`` unless it is marked deleting."""
    sessions: str
    insert_session: str
    update_head: str
    update_head_counts: str
    """``update_head`` without ``name`` and ``first_message`` (a long first prompt is not rewritten by
    every append)."""
    set_leaf: str
    mark_deleting: str
    delete_catalog: tuple[str, ...]
    """Deletes of the session's catalog rows (the foreign keys cascade them too, but an import's
    transaction on SQLite runs without foreign keys)."""
    delete_entries: str
    delete_session: str
    insert_entry: str
    """Positional parameters in :class:`EntryRow`'s order."""
    insert_search: str
    """Positional parameters in :class:`SearchRow`'s order."""
    add_usage: str
    """An upsert of a :class:`UsageRow` (positional, in its order) that adds to the row of its key and day."""
    facts: str
    payload: str
    payload_at: str
    path: str
    """:class:`PathRow` of the path ending at ``leaf`` from depth ``stop``, any order."""
    on_path: str
    children: str
    roots: str
    tree: str
    payloads_of_type: str
    payloads: str
    count_entries: str
    export_head: str
    folded_texts: str
    """``text, extra`` of session ``key``'s search rows in seq order."""
    session_usage: str
    """:class:`UsageRow` of session ``key``."""
    usage_sums: str
    """:class:`UsageSum` per key and day of the sessions in ``keys``, a JSON array of session keys."""
    counter_sums: str
    """:class:`CounterSums` of the session rows in ``keys`` (as for ``usage_sums``)."""
    sources: str
    """Session id and :class:`SourceRow` of every synced session not marked deleting."""
    source: str
    """:class:`SourceRow` of session ``key``."""
    put_source: str
    """An upsert of a :class:`SourceRow` (positional: the tenant, then the row in its order) on its session key."""
    deleted_sources: str
    """``path, session_id`` of every file whose synced session was deleted on purpose."""
    put_deleted_source: str
    """An upsert of ``(tenant, path, session_id, deleted_at)`` (positional) on the tenant and path."""
    forget_deleted_source: str
    """Delete the tenant's rows of ``(tenant, path, session_id)`` (positional): that path's, and any
    naming that session."""
    entry_ids_with_prefix: str
    session_ids_with_prefix: str
    """:class:`EntryBrief` of session ``key``'s entries whose id starts with the literal ``prefix``, by id,
    at most ``limit`` (parameters: ``prefix``, ``length``, ``upper``, a bound above every id with the
    prefix, and ``pattern``, a LIKE pattern of it; each database uses those it needs)."""
    path_runs: str
    """``first_seq, last_seq`` of each run of the path ending at ``leaf`` from depth ``stop``, root first."""
    payloads_between: str
    """``seq, payload`` of session ``key``'s entries with ``first`` <= seq <= ``last`` and depth >= ``stop``,
    in seq order."""
    typed_payloads_between: str
    """``payloads_between`` of the entries of ``type`` only."""
    tree_links: str
    """``seq, parent_seq`` of every entry of session ``key``, in seq order."""
    search_mark: str
    """The ``search_index`` setting and session ``key``'s ``next_seq`` (either ``NULL`` when absent)."""
    search_lag: str
    """``key, next_seq, entry_count`` of the tenant's sessions (not marked deleting) whose search rows stop
    before their last entry (``next_seq`` 0 for a session without a mark)."""
    lock_for_search: str
    """``entry_count, next_seq`` of session ``key`` unless it is marked deleting, in a write that indexes it
    (PostgreSQL: ``FOR KEY SHARE``, so that the session cannot go before its search rows are written)."""
    put_search_mark: str
    """Raise session ``key``'s ``next_seq`` to ``seq`` (an upsert; a mark never goes down)."""
    setting: str
    """The value of setting ``name``."""
    put_setting: str
    """An upsert of setting ``name`` to ``value``."""
    clear_search_marks: str
    """Delete every search mark, of every tenant (the index turned off)."""
    clear_search_rows: tuple[str, ...]
    """Delete every search row, of every tenant, and what derives from them."""
    delete_search: tuple[str, ...]
    """Delete session ``key``'s search rows, what derives from them (its terms that no other session
    holds, on SQLite) and its mark (it is not indexed any more)."""
    notify: str | None = None
    """The announcement of a change of session ``key`` (``kind``: ``changes.ChangeKind``) inside the
    writing transaction, for a database whose watchers are told (``None``: they look; see ``changes``)."""


def _leaf_params(leaf_id: str | None, leaf: NodeFacts | None) -> dict[str, Any]:
    if leaf is None or leaf_id is None:
        return {"leaf_id": None, "leaf_seq": None, "leaf_run_start": None, "leaf_depth": None,
                "leaf_ctx_depth": None, "leaf_compaction_seq": None, "leaf_model_seq": None,
                "leaf_thinking_seq": None}
    return {"leaf_id": leaf_id, "leaf_seq": leaf.seq, "leaf_run_start": leaf.run_start, "leaf_depth": leaf.depth,
            "leaf_ctx_depth": leaf.ctx_depth, "leaf_compaction_seq": leaf.compaction_seq,
            "leaf_model_seq": leaf.model_seq, "leaf_thinking_seq": leaf.thinking_seq}


def head_update_params(update: HeadUpdate) -> dict[str, Any]:
    """The parameters of ``Statements.update_head`` (and ``update_head_counts``, which ignores two)."""
    params = update._asdict()
    leaf = _leaf_params(params.pop("leaf_id"), params.pop("leaf"))
    return {**params, **leaf}


_by_seq = itemgetter(0)


def path_slice(rows: list[Any]) -> PathSlice:
    """The :class:`PathSlice` of the path query's rows (:class:`PathRow` tuples, any order)."""
    # Each run comes in seq order, the runs from the leaf up: sorted by seq (a path's order), the
    # runs only trade places.
    rows.sort(key=_by_seq)
    return PathSlice(rows[0][0] if rows else None, [row[1] for row in rows])


class StatementTx:
    """Runs ``statements`` on ``cursor`` for ``tenant`` (the sessions a statement finds by id or lists
    are that tenant's; sessions found by key are the caller's already); each database's subclass adds
    the primitives that differ by database (``insert_session``, ``bulk_sink``, ``write_payload_lines``)
    and so completes ``Tx``."""

    dialect: Literal["sqlite", "postgresql"]

    def __init__(self, cursor: Any, statements: Statements, tenant: str) -> None:
        self.cursor = cursor
        self.sql = statements
        self.tenant = tenant

    def run(self, sql: str, params: Mapping[str, Any] | None = None) -> Any:
        self.cursor.execute(self.in_driver_style(sql), params or {})
        return self.cursor

    @staticmethod
    def in_driver_style(sql: str) -> str:
        """``sql``, written in sqlite3's named style, in this driver's."""
        return sql

    def _one(self, sql: str, params: dict[str, Any]) -> Any:
        self.cursor.execute(sql, params)
        return self.cursor.fetchone()

    def _all(self, sql: str, params: dict[str, Any]) -> list[Any]:
        self.cursor.execute(sql, params)
        return list(self.cursor.fetchall())

    # -- sessions ------------------------------------------------------------------------------
    def head(self, session_id: str, *, lock: bool) -> HeadRow | None:
        sql = self.sql.head_for_update if lock else self.sql.head
        row = self._one(sql, {"sid": session_id, "tenant": self.tenant})
        return None if row is None else HeadRow._make(row)

    def session(self, session_id: str) -> SessionRow | None:
        row = self._one(self.sql.session, {"sid": session_id, "tenant": self.tenant})
        return None if row is None else SessionRow._make(row)

    def sessions(self) -> list[SessionRow]:
        return [SessionRow._make(r) for r in self._all(self.sql.sessions, {"tenant": self.tenant})]

    def update_head(self, update: HeadUpdate, *, texts_changed: bool) -> None:
        params = head_update_params(update)
        self.cursor.execute(self.sql.update_head if texts_changed else self.sql.update_head_counts, params)
        self._changed(update.key, "entries")

    def set_leaf(self, key: int, leaf_id: str | None, leaf: NodeFacts | None, *, active_ms: int | None = None) -> None:
        self.cursor.execute(self.sql.set_leaf, {"key": key, **_leaf_params(leaf_id, leaf), "active_ms": active_ms})
        self._changed(key, "leaf")

    def _changed(self, key: int, kind: str) -> None:
        """The one hook of change notification: every write of a session ends in ``update_head``,
        ``set_leaf`` or ``delete_session``, each of which announces it here."""
        if self.sql.notify is not None:
            self.cursor.execute(self.sql.notify, {"key": key, "kind": kind})

    def entry_ids_with_prefix(self, key: int, prefix: str, limit: int) -> list[EntryBrief]:
        params = {"key": key, "prefix": prefix, "length": len(prefix), "upper": prefix_upper_bound(prefix),
                  "pattern": like_prefix(prefix), "limit": limit}
        return [EntryBrief._make(r) for r in self._all(self.sql.entry_ids_with_prefix, params)]

    def session_ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        params = {"tenant": self.tenant, "prefix": prefix, "length": len(prefix),
                  "upper": prefix_upper_bound(prefix), "pattern": like_prefix(prefix), "limit": limit}
        return [r[0] for r in self._all(self.sql.session_ids_with_prefix, params)]

    def delete_session(self, key: int) -> None:
        # The append-only trigger lets entries go only while their session is marked as deleting.
        self._changed(key, "deleted")  # (while the row is there to name the session)
        for sql in (self.sql.mark_deleting, *self.sql.delete_catalog, self.sql.delete_entries, self.sql.delete_session):
            self.cursor.execute(sql, {"key": key})

    # -- entries -------------------------------------------------------------------------------
    def insert_entry(self, row: EntryRow) -> None:
        self.cursor.execute(self.sql.insert_entry, row)

    def add_search(self, row: SearchRow) -> None:
        self.cursor.execute(self.sql.insert_search, row)

    # -- catalog: the search index's progress (catalog.search.catch_up) ----------------------------
    def search_mark(self, key: int) -> int | None:
        index, mark = self._one(self.sql.search_mark, {"key": key})
        return None if index == "off" else int(mark or 0)

    def search_lag(self) -> list[tuple[int, int, int]]:
        rows = self._all(self.sql.search_lag, {"tenant": self.tenant})
        return [(int(key), int(mark), int(count)) for key, mark, count in rows]

    def lock_for_search(self, key: int) -> tuple[int, int] | None:
        row = self._one(self.sql.lock_for_search, {"key": key})
        return None if row is None else (int(row[0]), int(row[1]))

    def add_search_rows(self, rows: Sequence[SearchRow]) -> None:
        if rows:
            self.cursor.executemany(self.sql.insert_search, rows)

    def put_search_mark(self, key: int, next_seq: int) -> None:
        self.cursor.execute(self.sql.put_search_mark, {"key": key, "seq": next_seq})

    def setting(self, name: str) -> str | None:
        row = self._one(self.sql.setting, {"name": name})
        return None if row is None else str(row[0])

    def put_setting(self, name: str, value: str) -> None:
        self.cursor.execute(self.sql.put_setting, {"name": name, "value": value})

    def clear_search(self) -> None:
        self.cursor.execute(self.sql.clear_search_marks, {})
        for sql in self.sql.clear_search_rows:
            self.cursor.execute(sql, {})

    def delete_search_rows(self, key: int) -> None:
        for sql in self.sql.delete_search:
            self.cursor.execute(sql, {"key": key})

    def add_usage(self, rows: Sequence[UsageRow]) -> None:
        if len(rows) == 1:
            self.cursor.execute(self.sql.add_usage, rows[0])
        elif rows:
            self.cursor.executemany(self.sql.add_usage, rows)

    def facts(self, key: int, entry_id: str) -> NodeFacts | None:
        row = self._one(self.sql.facts, {"key": key, "eid": entry_id})
        return None if row is None else NodeFacts._make(row)

    def payload(self, key: int, entry_id: str) -> str | None:
        row = self._one(self.sql.payload, {"key": key, "eid": entry_id})
        return None if row is None else str(row[0])

    def payload_at(self, key: int, seq: int) -> str | None:
        row = self._one(self.sql.payload_at, {"key": key, "seq": seq})
        return None if row is None else str(row[0])

    def path(self, key: int, leaf_seq: int, *, from_depth: int) -> PathSlice:
        return path_slice(self._all(self.sql.path, {"key": key, "leaf": leaf_seq, "stop": from_depth}))

    def on_path(self, key: int, leaf_seq: int, target: NodeFacts) -> bool:
        row = self._one(self.sql.on_path, {"key": key, "leaf": leaf_seq, "stop": target.depth, "target": target.seq})
        return bool(row is not None and row[0])

    def children(self, key: int, parent_seq: int | None) -> list[str]:
        if parent_seq is None:
            return [r[0] for r in self._all(self.sql.roots, {"key": key})]
        return [r[0] for r in self._all(self.sql.children, {"key": key, "seq": parent_seq})]

    def tree(self, key: int) -> list[TreeRow]:
        return [TreeRow._make(r) for r in self._all(self.sql.tree, {"key": key})]

    def payloads_of_type(self, key: int, entry_type: str) -> list[str]:
        return [r[0] for r in self._all(self.sql.payloads_of_type, {"key": key, "type": entry_type})]

    def payloads(self, key: int) -> Iterator[str]:
        self.cursor.execute(self.sql.payloads, {"key": key})
        while rows := self.cursor.fetchmany(FETCH_ROWS):
            for (text,) in rows:
                yield text

    def folded_texts(self, key: int, *, everything: bool) -> list[str]:
        rows = self._all(self.sql.folded_texts, {"key": key})
        if everything:
            return [t for text, extra in rows for t in (text, extra) if t]
        return [text for text, _extra in rows if text]

    def count_entries(self, key: int) -> int:
        row = self._one(self.sql.count_entries, {"key": key})
        return int(row[0])

    def export_head(self, session_id: str) -> ExportHead | None:
        row = self._one(self.sql.export_head, {"sid": session_id, "tenant": self.tenant})
        return None if row is None else ExportHead._make(row[: len(ExportHead._fields)])

    # -- catalog: stats --------------------------------------------------------------------------
    def session_usage(self, key: int) -> list[UsageRow]:
        return [UsageRow._make(r) for r in self._all(self.sql.session_usage, {"key": key})]

    def usage_sums(self, keys: Sequence[int]) -> list[UsageSum]:
        chosen = orjson.dumps([int(k) for k in keys]).decode()
        return [UsageSum._make(r) for r in self._all(self.sql.usage_sums, {"keys": chosen})]

    def counter_sums(self, keys: Sequence[int]) -> CounterSums:
        chosen = orjson.dumps([int(k) for k in keys]).decode()
        return CounterSums._make(int(n) for n in self._one(self.sql.counter_sums, {"keys": chosen}))
    # -- sync sources ----------------------------------------------------------------------------
    def sources(self) -> list[tuple[str, SourceRow]]:
        return [(r[0], SourceRow._make(r[1:])) for r in self._all(self.sql.sources, {"tenant": self.tenant})]

    def source(self, key: int) -> SourceRow | None:
        row = self._one(self.sql.source, {"key": key})
        return None if row is None else SourceRow._make(row)

    def put_source(self, row: SourceRow) -> None:
        self.cursor.execute(self.sql.put_source, (self.tenant, *row))

    def deleted_sources(self) -> dict[str, str]:
        rows = self._all(self.sql.deleted_sources, {"tenant": self.tenant})
        return {str(path): str(sid) for path, sid in rows}

    def put_deleted_source(self, path: str, session_id: str, deleted_at: str) -> None:
        self.cursor.execute(self.sql.put_deleted_source, (self.tenant, path, session_id, deleted_at))

    def forget_deleted_source(self, path: str, session_id: str) -> None:
        self.cursor.execute(self.sql.forget_deleted_source, (self.tenant, path, session_id))

    # -- streamed reads (bounded ranges: the caller pages) ------------------------------------------
    def path_runs(self, key: int, leaf_seq: int, *, from_depth: int) -> list[tuple[int, int]]:
        rows = self._all(self.sql.path_runs, {"key": key, "leaf": leaf_seq, "stop": from_depth})
        return [(int(first), int(last)) for first, last in rows]

    def payloads_between(self, key: int, first_seq: int, last_seq: int, *, from_depth: int = 0,
                         entry_type: str | None = None) -> list[tuple[int, str | bytes]]:
        params: dict[str, Any] = {"key": key, "first": first_seq, "last": last_seq, "stop": from_depth}
        if entry_type is None:
            return [(int(seq), payload) for seq, payload in self._all(self.sql.payloads_between, params)]
        params["type"] = entry_type
        return [(int(seq), payload) for seq, payload in self._all(self.sql.typed_payloads_between, params)]

    def tree_links(self, key: int) -> Iterator[tuple[int, int | None]]:
        self.cursor.execute(self.sql.tree_links, {"key": key})
        while rows := self.cursor.fetchmany(FETCH_ROWS):
            yield from rows

    def insert_entries(self, rows: Sequence[EntryRow], search: Sequence[SearchRow]) -> None:
        if rows:
            self.cursor.executemany(self.sql.insert_entry, rows)
        if search:
            self.cursor.executemany(self.sql.insert_search, search)


def like_prefix(prefix: str) -> str:
    """A LIKE pattern (escape character ``\\``) of the strings that start with ``prefix`` taken literally."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


_SURROGATES = range(0xD800, 0xE000)


def prefix_upper_bound(prefix: str) -> str:
    """A string above every string that starts with ``prefix``, in code point order (SQLite's ``BINARY``
    collation of UTF-8): the prefix with its last character incremented (U+10FFFF carried; no surrogate)."""
    chars = list(prefix)
    while chars:
        code = ord(chars.pop()) + 1
        if code in _SURROGATES:
            code = _SURROGATES.stop
        if code <= 0x10FFFF:
            return "".join(chars) + chr(code)
    return prefix + "\U0010ffff" * 64  # (every character U+10FFFF: no bound; the statement checks the prefix too)


def path_sql(table: str, param: str) -> str:
    """The path query, for a driver whose named parameter ``x`` is written ``param.format("x")``.

    The path ending at ``leaf`` is a few runs of consecutive entries (``run_start`` .. ``seq``, each
    the child of the one before, so one depth more): the recursion goes from run to run (from a run's
    first entry to its parent's run), and each run is one range of the primary key. A run that
    reaches above depth ``stop`` is cut at the entry of that depth (``seq - (depth - stop)``), where
    the walk ends: a compacted session's tail is read, not its whole run. A leaf above depth ``stop``
    has no entry there: the walk is empty (``on_path`` of a deeper entry is false)."""
    k, leaf, stop = param.format("key"), param.format("leaf"), param.format("stop")

    def first(row: str) -> str:
        cut = f"{row}.seq - ({row}.depth - {stop})"
        return f"CASE WHEN {cut} > {row}.run_start THEN {cut} ELSE {row}.run_start END"

    return f"""
    WITH RECURSIVE runs(first_seq, last_seq) AS (
        SELECT {first("leaf")}, leaf.seq FROM {table} leaf
        WHERE leaf.session_key = {k} AND leaf.seq = {leaf} AND leaf.depth >= {stop}
        UNION ALL
        SELECT {first("up")}, up.seq
        FROM runs
        JOIN {table} run_first ON run_first.session_key = {k} AND run_first.seq = runs.first_seq
        JOIN {table} up ON up.session_key = {k} AND up.seq = run_first.parent_seq
        WHERE run_first.depth > {stop}
    )"""


USAGE_SUMS = ("entries", "input", "output", "cache_read", "cache_write", "cost")
"""The columns of ``sessionstore_usage`` that an upsert adds to."""


def add_usage_sql(table: str, placeholder: str) -> str:
    """The upsert of a :class:`UsageRow` (positional ``placeholder``s): a new key and day is inserted,
    an existing one gets the sums added."""
    sums = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in USAGE_SUMS)
    values = ", ".join([placeholder] * len(UsageRow._fields))
    return (f"INSERT INTO {table} ({', '.join(UsageRow._fields)}) VALUES ({values})"
            f" ON CONFLICT (session_key, model_key, day) DO UPDATE SET {sums}")


def text_hits_sql(search: str, entries: str, *, keys: int, needles: int, everything: bool, placeholder: str,
                  contains: str) -> str:
    """The query of ``Tx.text_hits`` for ``keys`` session keys and ``needles`` needles, its parameters
    positional (``placeholder``): the keys, the needles (twice with ``everything``), then the limit.
    ``contains`` is the database's test that ``{0}`` holds ``{1}`` (e.g. ``instr({0}, {1}) > 0``)."""
    tests = [contains.format("s.text", placeholder) for _ in range(needles)]
    if everything:
        tests += [contains.format("s.extra", placeholder) for _ in range(needles)]
    return f"""SELECT session_key, seq, entry_id, role FROM (
        SELECT s.session_key, s.seq, e.entry_id, s.role,
               ROW_NUMBER() OVER (PARTITION BY s.session_key ORDER BY s.seq) AS n
        FROM {search} s JOIN {entries} e ON e.session_key = s.session_key AND e.seq = s.seq
        WHERE s.session_key IN ({", ".join([placeholder] * keys)}) AND ({" OR ".join(tests)})
    ) hits WHERE n <= {placeholder} ORDER BY session_key, seq"""


def text_hits_params(keys: Sequence[int], needles: Sequence[str], *, everything: bool, per_session: int) -> list[Any]:
    """The positional parameters of :func:`text_hits_sql`."""
    return [*keys, *needles, *(needles if everything else ()), per_session]


def usage_sums_sql(table: str, chosen: str) -> str:
    """``Statements.usage_sums``: ``chosen`` is the database's query of the session keys in the JSON
    array parameter ``keys``."""
    sums = {c: f"CAST(SUM({c}) AS BIGINT)" if c == "entries" else f"SUM({c})" for c in USAGE_SUMS}
    return (f"SELECT {select_list(UsageSum, **sums)} FROM {table}"
            f" WHERE session_key IN ({chosen}) GROUP BY model_key, day")


def counter_sums_sql(table: str, chosen: str) -> str:
    """``Statements.counter_sums`` (``chosen`` as for :func:`usage_sums_sql`)."""
    sums = {c: f"CAST(COALESCE(SUM({c}), 0) AS BIGINT)" for c in CounterSums._fields}
    return f"SELECT {select_list(CounterSums, **sums)} FROM {table} WHERE key IN ({chosen})"
def deleted_source_sql(table: str, placeholder: str, tenant: str) -> dict[str, Any]:
    """The statements of :class:`Statements` on the deleted sources' ``table`` (positional ``placeholder``s,
    the tenant first; ``tenant``: the named parameter of the tenant in the database's style)."""
    p = placeholder
    return {
        "deleted_sources": f"SELECT path, session_id FROM {table} WHERE tenant = {tenant}",
        "put_deleted_source": (f"INSERT INTO {table} (tenant, path, session_id, deleted_at)"
                               f" VALUES ({p}, {p}, {p}, {p}) ON CONFLICT (tenant, path)"
                               " DO UPDATE SET session_id = excluded.session_id, deleted_at = excluded.deleted_at"),
        "forget_deleted_source": f"DELETE FROM {table} WHERE tenant = {p} AND (path = {p} OR session_id = {p})",
    }


def put_source_sql(table: str, placeholder: str) -> str:
    """The upsert of a :class:`SourceRow` (positional ``placeholder``s, its tenant first) on its session key."""
    columns = ("tenant", *SourceRow._fields)
    updates = ", ".join(f"{c} = excluded.{c}" for c in SourceRow._fields[1:])
    return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join([placeholder] * len(columns))})"
            f" ON CONFLICT (session_key) DO UPDATE SET {updates}")


def search_progress_sql(sessions: str, search: str, marks: str, settings: str, param: str, *,
                        key_share: str, derived: Sequence[str] = ()) -> dict[str, Any]:
    """The statements of :class:`Statements` on the search index's progress, for a driver whose named
    parameter ``x`` is written ``param.format("x")``; ``key_share``: the database's row lock that keeps a
    session from being deleted while its search rows are written (``""``: its writers are serialised);
    ``derived``: the tables derived from the search rows, emptied with them (first)."""
    key, seq, name, value = (param.format(p) for p in ("key", "seq", "name", "value"))
    mark = f"COALESCE((SELECT next_seq FROM {marks} m WHERE m.session_key = s.key), 0)"
    return {
        "search_mark": (f"SELECT (SELECT value FROM {settings} WHERE name = 'search_index'),"
                        f" (SELECT next_seq FROM {marks} WHERE session_key = {key})"),
        "search_lag": (f"SELECT s.key, {mark}, s.entry_count FROM {sessions} s"
                       f" WHERE s.tenant = {param.format('tenant')} AND NOT s.deleting AND s.entry_count > {mark}"),
        "lock_for_search": (f"SELECT s.entry_count, COALESCE((SELECT next_seq FROM {marks} m"
                            f" WHERE m.session_key = {key}), 0) FROM {sessions} s"
                            f" WHERE s.key = {key} AND NOT s.deleting")
                           + (f" {key_share}" if key_share else ""),
        "put_search_mark": (f"INSERT INTO {marks} (session_key, next_seq) VALUES ({key}, {seq})"
                            f" ON CONFLICT (session_key) DO UPDATE SET next_seq = excluded.next_seq"
                            f" WHERE excluded.next_seq > {marks}.next_seq"),
        "setting": f"SELECT value FROM {settings} WHERE name = {name}",
        "put_setting": (f"INSERT INTO {settings} (name, value) VALUES ({name}, {value})"
                        " ON CONFLICT (name) DO UPDATE SET value = excluded.value"),
        "clear_search_marks": f"DELETE FROM {marks}",
        "clear_search_rows": (*(f"DELETE FROM {table}" for table in derived), f"DELETE FROM {search}"),
    }

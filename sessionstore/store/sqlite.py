"""The SQLite backend: the store's statements in ``sqlite3``'s named style, transactions with
``BEGIN IMMEDIATE`` for writes, ``executemany`` batches for imports, and exports that write the
stored UTF-8 text without decoding it.

Write transactions start with ``BEGIN IMMEDIATE`` so that concurrent writers queue on the busy
timeout instead of failing with "database is locked" when a read lock cannot be upgraded.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import IO, Any, Protocol

from sessionstore.errors import EntryIdTakenError, SessionStoreError, StoreError
from sessionstore.store.backend import (
    EntryBrief,
    EntryRow,
    ExportHead,
    HeadRow,
    HitRow,
    NewSession,
    PathRow,
    PathSlice,
    SearchRow,
    SessionRow,
    SourceRow,
    TreeRow,
    select_list,
)
from sessionstore.store.facts import NodeFacts, UsageRow
from sessionstore.store.sqltx import (
    FETCH_ROWS,
    Statements,
    StatementTx,
    add_usage_sql,
    counter_sums_sql,
    deleted_source_sql,
    path_slice,
    path_sql,
    put_source_sql,
    search_progress_sql,
    text_hits_params,
    text_hits_sql,
    usage_sums_sql,
)

SESSIONS = "sessionstore_sessions"
ENTRIES = "sessionstore_entries"
SEARCH = "sessionstore_search"
USAGE = "sessionstore_usage"
SEARCH_MARKS = "sessionstore_search_marks"
TERMS = "sessionstore_search_terms"
"""The search index (revision 0018): each distinct term (a space-separated word of a search row's folded
``text``) once, its trigrams in :data:`TERMS_FTS`, and the sessions holding it in :data:`POSTINGS`."""
TERMS_FTS = "sessionstore_search_terms_fts"
POSTINGS = "sessionstore_search_postings"
SETTINGS = "sessionstore_settings"
ROWID_SESSION = 2**32
"""A search row's rowid is ``session_key * ROWID_SESSION + seq`` (seqs stay below 2**31: ``facts.TreeIndex``)."""
SOURCES = "sessionstore_sources"
DELETED_SOURCES = "sessionstore_deleted_sources"

INSERT_BATCH = 2_000
"""Rows per ``executemany`` of an import."""
BULK_CACHE_KIB = 32 * 1024
"""Page cache of a bulk write (an import): the unique index on entry ids is random-keyed, and a
larger cache keeps more of it within an import's memory budget."""
DEFAULT_CACHE_KIB = 2000
"""SQLite's default page cache (``cache_size = -2000``), restored after a bulk write."""
ENTRY_ID_TAKEN = f"UNIQUE constraint failed: {ENTRIES}.session_key, {ENTRIES}.entry_id"
"""SQLite's message for a taken entry id (the unique index's, and the append-only trigger's, which
fires first on an insert)."""

_LEAF_SET = (
    "leaf_id = :leaf_id, leaf_seq = :leaf_seq, leaf_run_start = :leaf_run_start, leaf_depth = :leaf_depth,"
    " leaf_ctx_depth = :leaf_ctx_depth, leaf_compaction_seq = :leaf_compaction_seq,"
    " leaf_model_seq = :leaf_model_seq, leaf_thinking_seq = :leaf_thinking_seq"
)
_COUNTS_SET = (
    f"{_LEAF_SET}, entry_count = :entry_count, message_count = :message_count, modified_ms = :modified_ms,"
    " user_messages = :user_messages, assistant_messages = :assistant_messages, tool_results = :tool_results,"
    " tool_calls = :tool_calls, active_ms = :active_ms"
)
_HEAD = f"SELECT {select_list(HeadRow)} FROM {SESSIONS} WHERE tenant = :tenant AND id = :sid"
_WITH_SOURCE = f"{SESSIONS} s LEFT JOIN {SOURCES} src ON src.session_key = s.key"
_SESSION_COLUMNS = select_list(SessionRow, source_path="src.path")
_DELETE_SEARCH = (
    # A session's terms that no other session holds go with it (its postings name them), then its postings
    # and its rows.
    f"DELETE FROM {TERMS} WHERE id IN (SELECT term_id FROM {POSTINGS} WHERE session_key = :key)"
    f" AND NOT EXISTS (SELECT 1 FROM {POSTINGS} p WHERE p.term_id = {TERMS}.id AND p.session_key <> :key)",
    f"DELETE FROM {POSTINGS} WHERE session_key = :key",
    f"DELETE FROM {SEARCH} WHERE session_key = :key",
    f"DELETE FROM {SEARCH_MARKS} WHERE session_key = :key",
)
_LAST_ENTRY_ID = f"(SELECT entry_id FROM {ENTRIES} e WHERE e.session_key = s.key ORDER BY seq DESC LIMIT 1)"

_CHOSEN_KEYS = "SELECT value FROM json_each(:keys)"
"""The session keys of the JSON array parameter ``keys`` (stats of many sessions)."""

STATEMENTS = Statements(
    head=_HEAD,
    head_for_update=_HEAD,  # BEGIN IMMEDIATE already serialises the writers
    session=(
        f"SELECT {_SESSION_COLUMNS} FROM {_WITH_SOURCE} WHERE s.tenant = :tenant AND s.id = :sid AND NOT deleting"
    ),
    sessions=f"SELECT {_SESSION_COLUMNS} FROM {_WITH_SOURCE} WHERE s.tenant = :tenant AND NOT deleting",
    insert_session=(
        f"INSERT INTO {SESSIONS} (tenant, id, version, cwd, created, parent_session, header, entry_count,"
        " message_count, deleting, active_ms) VALUES (:tenant, :id, :version, :cwd, :created, :parent_session,"
        " :header, 0, 0, FALSE, :active_ms)"
    ),
    update_head=(
        f"UPDATE {SESSIONS} SET {_COUNTS_SET}, name = :name, first_message = :first_message WHERE key = :key"
    ),
    update_head_counts=f"UPDATE {SESSIONS} SET {_COUNTS_SET} WHERE key = :key",
    set_leaf=(
        f"UPDATE {SESSIONS} SET {_LEAF_SET}, active_ms = COALESCE(:active_ms, active_ms)"
        " WHERE key = :key"
    ),
    mark_deleting=f"UPDATE {SESSIONS} SET deleting = TRUE WHERE key = :key",
    delete_search=_DELETE_SEARCH,
    delete_catalog=(*_DELETE_SEARCH, *(f"DELETE FROM {table} WHERE session_key = :key"
                                       for table in (USAGE, SOURCES))),
    delete_entries=f"DELETE FROM {ENTRIES} WHERE session_key = :key",
    delete_session=f"DELETE FROM {SESSIONS} WHERE key = :key",
    insert_entry=(
        f"INSERT INTO {ENTRIES} ({', '.join(EntryRow._fields)}) VALUES ({', '.join('?' * len(EntryRow._fields))})"
    ),
    # The rowid is the session key and seq in one integer (its high and low 32 bits): a session's rows
    # are one range of the table.
    insert_search=(
        f"INSERT OR IGNORE INTO {SEARCH} (rowid, {', '.join(SearchRow._fields)})"
        f" VALUES (?1 * {ROWID_SESSION} + ?2, ?1, ?2, ?3, ?4, ?5)"
    ),
    add_usage=add_usage_sql(USAGE, "?"),
    facts=f"SELECT {select_list(NodeFacts)} FROM {ENTRIES} WHERE session_key = :key AND entry_id = :eid",
    payload=f"SELECT payload FROM {ENTRIES} WHERE session_key = :key AND entry_id = :eid",
    payload_at=f"SELECT payload FROM {ENTRIES} WHERE session_key = :key AND seq = :seq",
    path=path_sql(ENTRIES, ":{}") + f"""
    SELECT {select_list(PathRow, seq="e.seq", payload="e.payload")}
    FROM runs JOIN {ENTRIES} e ON e.session_key = :key AND e.seq BETWEEN runs.first_seq AND runs.last_seq
    WHERE e.depth >= :stop""",
    on_path=path_sql(ENTRIES, ":{}") + " SELECT count(*) FROM runs WHERE :target BETWEEN first_seq AND last_seq",
    children=f"SELECT payload FROM {ENTRIES} WHERE session_key = :key AND parent_seq = :seq ORDER BY seq",
    roots=f"SELECT payload FROM {ENTRIES} WHERE session_key = :key AND parent_seq IS NULL ORDER BY seq",
    tree=f"SELECT {select_list(TreeRow)} FROM {ENTRIES} WHERE session_key = :key ORDER BY seq",
    payloads_of_type=f"SELECT payload FROM {ENTRIES} WHERE session_key = :key AND type = :type ORDER BY seq",
    payloads=f"SELECT payload FROM {ENTRIES} WHERE session_key = :key ORDER BY seq",
    count_entries=f"SELECT count(*) FROM {ENTRIES} WHERE session_key = :key",
    export_head=(
        f"SELECT {select_list(ExportHead, last_entry_id=_LAST_ENTRY_ID)} FROM {SESSIONS} s"
        " WHERE s.tenant = :tenant AND s.id = :sid"
    ),
    folded_texts=f"SELECT text, extra FROM {SEARCH} WHERE session_key = :key ORDER BY seq",
    session_usage=f"SELECT {select_list(UsageRow)} FROM {USAGE} WHERE session_key = :key",
    usage_sums=usage_sums_sql(USAGE, _CHOSEN_KEYS),
    counter_sums=counter_sums_sql(SESSIONS, _CHOSEN_KEYS),
    sources=(
        f"SELECT s.id, {select_list(SourceRow, session_key='src.session_key')} FROM {SOURCES} src"
        f" JOIN {SESSIONS} s ON s.key = src.session_key WHERE s.tenant = :tenant AND NOT s.deleting"
    ),
    source=f"SELECT {select_list(SourceRow)} FROM {SOURCES} WHERE session_key = :key",
    put_source=put_source_sql(SOURCES, "?"),
    **search_progress_sql(SESSIONS, SEARCH, SEARCH_MARKS, SETTINGS, ":{}", key_share="", derived=(POSTINGS, TERMS)),
    **deleted_source_sql(DELETED_SOURCES, "?", ":tenant"),
    # A range of the (session_key, entry_id) index (BINARY: code point order), the prefix checked too.
    entry_ids_with_prefix=(
        f"SELECT {select_list(EntryBrief)} FROM {ENTRIES} WHERE session_key = :key AND entry_id >= :prefix"
        " AND entry_id < :upper AND substr(entry_id, 1, :length) = :prefix ORDER BY entry_id LIMIT :limit"
    ),
    # (the same over the (tenant, id) unique index)
    session_ids_with_prefix=(
        f"SELECT id FROM {SESSIONS} WHERE tenant = :tenant AND id >= :prefix AND id < :upper"
        " AND substr(id, 1, :length) = :prefix AND NOT deleting ORDER BY id LIMIT :limit"
    ),
    path_runs=path_sql(ENTRIES, ":{}") + " SELECT first_seq, last_seq FROM runs ORDER BY first_seq",
    payloads_between=(
        f"SELECT seq, payload FROM {ENTRIES} WHERE session_key = :key AND seq BETWEEN :first AND :last"
        " AND depth >= :stop ORDER BY seq"
    ),
    typed_payloads_between=(
        f"SELECT seq, payload FROM {ENTRIES} WHERE session_key = :key AND seq BETWEEN :first AND :last"
        " AND depth >= :stop AND type = :type ORDER BY seq"
    ),
    tree_links=f"SELECT seq, parent_seq FROM {ENTRIES} WHERE session_key = :key ORDER BY seq",
)

TRIGRAM = 3
"""Characters of a trigram token: the FTS5 trigram index of the terms answers substring queries of at
least this many (a shorter needle scans the terms)."""
_TERMS_WITH = (f"SELECT f.rowid FROM {TERMS_FTS} f JOIN {TERMS} t ON t.id = f.rowid WHERE {TERMS_FTS} MATCH :query"
               " ORDER BY length(t.term)")
_TERMS_WITH_SCAN = f"SELECT id FROM {TERMS} WHERE instr(term, :needle) > 0 ORDER BY length(term)"
POSTINGS_BATCHES = (1, 8, 64, 512)
"""Terms whose sessions one statement reads, the shortest terms first (the needle itself when it is a
term, often the most common), between two checks for "every session found"; the last size repeats."""
_SESSIONS_WITH_ROW = (
    f"SELECT value FROM json_each(:keys) WHERE EXISTS (SELECT 1 FROM {SEARCH} WHERE rowid BETWEEN"
    f" value * {ROWID_SESSION} AND value * {ROWID_SESSION} + {ROWID_SESSION - 1} AND instr(text, :needle) > 0)"
)
_SESSIONS_WITH_EXTRA_SCAN = f"SELECT DISTINCT session_key FROM {SEARCH} WHERE instr(extra, :needle) > 0"
_SESSION_COUNT = f"SELECT count(*) FROM {SESSIONS}"
_INSERT_TERM = f"INSERT OR IGNORE INTO {TERMS} (term) VALUES (?)"
_INSERT_POSTING = f"INSERT OR IGNORE INTO {POSTINGS} (term_id, session_key) SELECT id, ? FROM {TERMS} WHERE term = ?"


def terms_of(rows: Iterable[SearchRow]) -> dict[int, set[str]]:
    """Session key -> the terms of its search rows ``rows``: the space-separated words of their folded
    ``text`` (whose whitespace runs are single spaces, so a needle without a space is in a text exactly
    when it is in one of its terms)."""
    found: dict[int, set[str]] = {}
    for row in rows:
        found.setdefault(row.session_key, set()).update(row.text.split(" "))
    return found


def add_terms(cursor: Any, terms: Mapping[int, set[str]]) -> None:
    """Index terms of sessions: each new term once (its trigrams by trigger), a posting per (term, session)."""
    for key, found in terms.items():
        words = sorted(found - {""})
        cursor.executemany(_INSERT_TERM, [(word,) for word in words])
        cursor.executemany(_INSERT_POSTING, [(key, word) for word in words])


def fts_phrase(needle: str) -> str:
    """The FTS5 query for ``needle`` as a substring: one quoted phrase (its trigrams in a row)."""
    return '"' + needle.replace('"', '""') + '"'


class SqliteTx(StatementTx):
    dialect = "sqlite"

    def sessions_with_text(self, needle: str, *, everything: bool) -> set[int]:
        if " " not in needle:
            found = self._sessions_with_term(needle)
        else:  # the sessions holding every word (the longest first: the fewest), then their rows read
            found = set()
            for word in sorted({w for w in needle.split(" ") if w}, key=len, reverse=True):
                holding = self._sessions_with_term(word)
                found = holding if not found else found & holding
                if not found:
                    break
            if found:
                rows = self._all(_SESSIONS_WITH_ROW, {"keys": json.dumps(sorted(found)), "needle": needle})
                found = {row[0] for row in rows}
        if everything:  # ``extra`` has no index: scanned
            found |= {row[0] for row in self._all(_SESSIONS_WITH_EXTRA_SCAN, {"needle": needle})}
        return found

    def _sessions_with_term(self, needle: str) -> set[int]:
        """The sessions with a term holding ``needle`` (no space in it): the terms found by their trigrams
        (or, for a needle shorter than a trigram, scanned), shortest first, then their postings, a batch
        at a time until every session is found."""
        if len(needle) >= TRIGRAM:
            terms = [row[0] for row in self._all(_TERMS_WITH, {"query": fts_phrase(needle)})]
        else:
            terms = [row[0] for row in self._all(_TERMS_WITH_SCAN, {"needle": needle})]
        found: set[int] = set()
        every = None
        first, sizes = 0, iter(POSTINGS_BATCHES)
        while first < len(terms):
            size = next(sizes, POSTINGS_BATCHES[-1])
            batch = terms[first:first + size]
            first += size
            self.cursor.execute(f"SELECT DISTINCT session_key FROM {POSTINGS} WHERE term_id IN"
                                f" ({', '.join('?' * len(batch))})", batch)
            found.update(key for (key,) in self.cursor.fetchall())
            if first < len(terms):
                every = self._one(_SESSION_COUNT, {})[0] if every is None else every
                if len(found) >= every:
                    break
        return found

    def add_search(self, row: SearchRow) -> None:
        super().add_search(row)
        add_terms(self.cursor, terms_of((row,)))

    def add_search_rows(self, rows: Sequence[SearchRow]) -> None:
        super().add_search_rows(rows)
        add_terms(self.cursor, terms_of(rows))

    def insert_entries(self, rows: Sequence[EntryRow], search: Sequence[SearchRow]) -> None:
        super().insert_entries(rows, search)
        add_terms(self.cursor, terms_of(search))

    def text_hits(self, keys: Sequence[int], needles: Sequence[str], *, everything: bool,
                  per_session: int) -> list[HitRow]:
        if not keys or not needles:
            return []
        sql = text_hits_sql(SEARCH, ENTRIES, keys=len(keys), needles=len(needles), everything=everything,
                            placeholder="?", contains="instr({0}, {1}) > 0")
        self.cursor.execute(sql, text_hits_params(keys, needles, everything=everything, per_session=per_session))
        return [HitRow._make(row) for row in self.cursor.fetchall()]

    def insert_session(self, values: NewSession) -> int:
        self.cursor.execute(self.sql.insert_session, {**values._asdict(), "tenant": self.tenant})
        return int(self.cursor.lastrowid)

    @contextmanager
    def bulk_sink(self) -> Iterator[_BatchSink]:
        sink = _BatchSink(self.cursor)
        yield sink
        sink.flush()

    def path(self, key: int, leaf_seq: int, *, from_depth: int) -> PathSlice:
        """The stored UTF-8 of each payload as ``bytes`` (decoded once, by the JSON codec)."""
        connection = self.cursor.connection
        connection.text_factory = bytes
        try:
            rows = self._all(self.sql.path, {"key": key, "leaf": leaf_seq, "stop": from_depth})
        finally:
            connection.text_factory = str
        return path_slice(rows)

    def payloads_between(self, key: int, first_seq: int, last_seq: int, *, from_depth: int = 0,
                         entry_type: str | None = None) -> list[tuple[int, str | bytes]]:
        """The stored UTF-8 of each payload as ``bytes`` (decoded once, by the JSON codec)."""
        connection = self.cursor.connection
        connection.text_factory = bytes
        try:
            return super().payloads_between(key, first_seq, last_seq, from_depth=from_depth, entry_type=entry_type)
        finally:
            connection.text_factory = str

    def write_payload_lines(self, key: int, fp: IO[bytes]) -> int:
        connection = self.cursor.connection
        connection.text_factory = bytes  # the stored UTF-8 text, written without decoding
        try:
            self.cursor.execute(self.sql.payloads, {"key": key})
            count = 0
            while rows := self.cursor.fetchmany(FETCH_ROWS):
                fp.write(b"\n".join(text for (text,) in rows) + b"\n")
                count += len(rows)
        finally:
            connection.text_factory = str
        return count


class _BatchSink:
    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor
        self._batch: list[EntryRow] = []
        self._search: list[SearchRow] = []

    def add(self, row: EntryRow, search: SearchRow | None = None) -> None:
        self._batch.append(row)
        if search is not None:
            self._search.append(search)
        if len(self._batch) >= INSERT_BATCH:
            self.flush()

    def flush(self) -> None:
        if self._batch:
            self._cursor.executemany(STATEMENTS.insert_entry, self._batch)
            self._batch = []
        if self._search:
            self._cursor.executemany(STATEMENTS.insert_search, self._search)
            add_terms(self._cursor, terms_of(self._search))
            self._search = []


def translate(exc: sqlite3.Error, *, write: bool) -> SessionStoreError:
    """The one place where ``sqlite3`` errors become the store's."""
    if isinstance(exc, sqlite3.IntegrityError) and ENTRY_ID_TAKEN in str(exc):
        return EntryIdTakenError("the session already has an entry with that id")
    return StoreError(f"database {'refused the write' if write else 'error'}: {exc}")


class ConnectionSource(Protocol):
    """Where the backend's connections come from: SQLAlchemy's engine (its connect event configures
    them), or :class:`~sessionstore.store.sqlite_file.SqliteFile` (an existing file at the current
    schema, opened without SQLAlchemy)."""

    def raw_connection(self) -> Any: ...

    def dispose(self, close: bool = True) -> None: ...


class SqliteBackend:
    """Transactions on ``sqlite3`` connections of ``engine`` (a :class:`ConnectionSource`).

    Each thread keeps one connection of its own, taken from the pool once and detached from it (an
    append then costs no pool checkout and return); a transaction opened while the thread's own is
    in use (a nested one) takes a pooled connection. A connection found broken is closed and replaced;
    a forked child opens its own. ``close`` closes them all."""

    name = "sqlite"

    def __init__(self, engine: ConnectionSource) -> None:
        self.engine = engine
        self._local = threading.local()
        self._kept: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()  # connection -> its pid
        self._lock = threading.Lock()
        self._pid = os.getpid()

    @contextmanager
    def read(self, *, tenant: str) -> Iterator[SqliteTx]:
        with self._transaction("BEGIN", tenant, write=False) as tx:
            yield tx

    @contextmanager
    def write(self, *, tenant: str, bulk: bool = False) -> Iterator[SqliteTx]:
        with self._transaction("BEGIN IMMEDIATE", tenant, write=True, bulk=bulk) as tx:
            yield tx

    def _own_connection(self, *, write: bool) -> tuple[Any, bool]:
        """This thread's connection (``True``), or a pooled one (``False``) while it is in use. A write
        while this thread's own write is open is refused: it would wait for itself (the busy timeout)."""
        local = self._local
        raw = getattr(local, "raw", None)
        if raw is not None and local.pid == os.getpid():
            if local.busy:
                if write and local.writing:
                    raise StoreError("a write was started inside another write of the same thread (e.g. from the"
                                     " entries an import is reading): it would wait for itself")
                return self.engine.raw_connection(), False
            return raw, True
        if getattr(local, "pid", os.getpid()) != os.getpid() or self._pid != os.getpid():
            # A forked child: the pool's connections are the parent's; they stay with it, unused here.
            self.engine.dispose(close=False)
            self._pid = os.getpid()
        raw = self.engine.raw_connection()
        raw.detach()  # no longer the pool's: it stays with this thread
        local.raw, local.pid, local.busy, local.writing = raw, os.getpid(), False, False
        with self._lock:
            self._kept[raw] = os.getpid()
        return raw, True

    def _drop_own(self) -> None:
        raw = getattr(self._local, "raw", None)
        self._local.raw = None
        if raw is not None:
            with suppress(Exception):
                raw.close()

    @contextmanager
    def _transaction(self, begin: str, tenant: str, *, write: bool, bulk: bool = False) -> Iterator[SqliteTx]:
        """``bulk``: an import: this transaction checks no foreign key (the caller checks every parent,
        in this session, before its child) and gets a larger page cache; both are restored after."""
        try:
            raw, own = self._own_connection(write=write)
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"cannot open the database: {exc}") from exc
        broken = False
        if own:
            self._local.busy = True
            self._local.writing = write
        try:
            cursor = raw.cursor()
            try:
                if bulk:
                    cursor.execute("PRAGMA foreign_keys = OFF")  # only outside a transaction
                    cursor.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
                cursor.execute(begin)
                try:
                    yield SqliteTx(cursor, STATEMENTS, tenant)
                    raw.commit()
                except BaseException:
                    try:
                        raw.rollback()
                    except Exception:  # the connection broke: it is not used again
                        broken = True
                    raise
                finally:
                    if bulk and not broken:
                        cursor.execute("PRAGMA foreign_keys = ON")
                        cursor.execute(f"PRAGMA cache_size = -{DEFAULT_CACHE_KIB}")
            finally:
                cursor.close()
        except sqlite3.Error as exc:
            broken = broken or not _usable(raw)
            raise translate(exc, write=write) from exc
        finally:
            if own:
                self._local.busy = self._local.writing = False
                if broken:
                    self._drop_own()
            elif broken:
                raw.invalidate()
            else:
                raw.close()

    def checkpoint(self) -> None:
        """A passive checkpoint on this thread's connection: the WAL's pages that no reader still needs
        are copied into the database file now (and the next write starts the WAL from its beginning),
        not by the automatic checkpoint in whichever append next brings the WAL to 1,000 pages. Skipped
        inside one of this thread's transactions; an error (a busy or read-only file) leaves the copy to
        the automatic checkpoint."""
        if getattr(self._local, "busy", False):
            return
        with suppress(Exception):
            raw, _own = self._own_connection(write=False)
            cursor = raw.cursor()
            try:
                cursor.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            finally:
                cursor.close()

    def close(self) -> None:
        with self._lock:
            kept, self._kept = list(self._kept.items()), weakref.WeakKeyDictionary()
        for raw, pid in kept:
            if pid == os.getpid():  # (a forked child leaves the parent's connections alone)
                with suppress(Exception):
                    raw.close()
        self._local = threading.local()
        self.engine.dispose()


def _usable(raw: Any) -> bool:
    """Whether a connection still answers (after an error: a closed or corrupt one is replaced)."""
    try:
        raw.cursor().execute("SELECT 1").close()
    except Exception:
        return False
    return not raw.dbapi_connection.in_transaction

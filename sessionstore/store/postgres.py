"""The PostgreSQL backend (psycopg 3): the store's statements in psycopg's ``%(name)s`` style, reads
in one ``REPEATABLE READ READ ONLY`` snapshot, pipelined writes, ``COPY`` for imports and exports,
and the planner steering an export needs.

Writes (not imports) are pipelined: statements whose results are not read go out without waiting
for them, so an append takes two round trips, BEGIN with its locking read of the session row, then
the insert, the session update and COMMIT with the one Sync that ends pipeline mode (a failed
statement surfaces there). BEGIN and COMMIT are sent as statements on a connection switched to
autocommit for the transaction (psycopg's own BEGIN and ``commit()`` each end with a Sync and wait:
four round trips). Parameters stay bound on the server (a client-bound batch would put entry
contents into the statement text PostgreSQL logs for a failed statement).

A transaction that changes a connection's autocommit, isolation or read-only setting puts it back
before the connection returns to the pool; the pool's checkin listener (``reset_connection``,
registered by :class:`PostgresBackend`) does it again whatever ended the transaction, an interrupt
included: a connection left in autocommit would make the next multi-statement write non-atomic.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import IO, Any

import psycopg
from sqlalchemy import Engine, event

from sessionstore.errors import EntryIdTakenError, SessionExistsError, SessionStoreError, StoreError
from sessionstore.store.backend import (
    EntryBrief,
    EntryRow,
    ExportHead,
    HeadRow,
    HitRow,
    NewSession,
    PathRow,
    SearchRow,
    SessionRow,
    SourceRow,
    TreeRow,
    select_list,
)
from sessionstore.store.changes import PG_NOTIFY
from sessionstore.store.facts import NodeFacts, UsageRow
from sessionstore.store.pg_async import blocking_driver
from sessionstore.store.sqltx import (
    Statements,
    StatementTx,
    add_usage_sql,
    counter_sums_sql,
    deleted_source_sql,
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
SETTINGS = "sessionstore_settings"
SOURCES = "sessionstore_sources"
DELETED_SOURCES = "sessionstore_deleted_sources"
ENTRY_ID_UNIQUE = "uq_sessionstore_entries_session_key_entry_id"
SESSION_ID_UNIQUE = "uq_sessionstore_sessions_tenant_id"
_SESSION_ID_DETAIL = re.compile(r"Key \(tenant, id\)=\([^,]*, (.*)\) already exists", re.DOTALL)
"""The id in the unique index's message (a tenant name holds no comma: ``store.tenant``)."""

ANALYZE_AFTER = 2_000
"""Rows of an import's first ``COPY``, after which the entries table is analyzed: without statistics
PostgreSQL checks each parent key by scanning the session's rows, which makes a large import quadratic."""
COPY_ROWS = 20_000
"""Rows per ``COPY`` after the first: a row the server refuses is reported when its ``COPY`` ends, so
within this many rows, not after the rest of a large file (each ``COPY`` costs a round trip)."""

_LEAF_SET = (
    "leaf_id = %(leaf_id)s, leaf_seq = %(leaf_seq)s, leaf_run_start = %(leaf_run_start)s,"
    " leaf_depth = %(leaf_depth)s, leaf_ctx_depth = %(leaf_ctx_depth)s,"
    " leaf_compaction_seq = %(leaf_compaction_seq)s, leaf_model_seq = %(leaf_model_seq)s,"
    " leaf_thinking_seq = %(leaf_thinking_seq)s"
)
_COUNTS_SET = (
    f"{_LEAF_SET}, entry_count = %(entry_count)s, message_count = %(message_count)s,"
    " modified_ms = %(modified_ms)s, user_messages = %(user_messages)s,"
    " assistant_messages = %(assistant_messages)s, tool_results = %(tool_results)s, tool_calls = %(tool_calls)s,"
    " active_ms = %(active_ms)s"
)
_HEAD = f"SELECT {select_list(HeadRow)} FROM {SESSIONS} WHERE tenant = %(tenant)s AND id = %(sid)s"
_WITH_SOURCE = f"{SESSIONS} s LEFT JOIN {SOURCES} src ON src.session_key = s.key"
_SESSION_COLUMNS = select_list(SessionRow, header="header::text", source_path="src.path")
_PAYLOAD = "payload::text"
_DELETE_SEARCH = tuple(f"DELETE FROM {table} WHERE session_key = %(key)s" for table in (SEARCH, SEARCH_MARKS))
_LAST_ENTRY_ID = f"(SELECT entry_id FROM {ENTRIES} e WHERE e.session_key = s.key ORDER BY seq DESC LIMIT 1)"

_CHOSEN_KEYS = "SELECT CAST(value AS BIGINT) FROM json_array_elements_text(CAST(%(keys)s AS json))"
"""The session keys of the JSON array parameter ``keys`` (stats of many sessions)."""

STATEMENTS = Statements(
    head=_HEAD,
    head_for_update=_HEAD + " FOR UPDATE",  # a writer that waited reads the row the previous one left
    session=(
        f"SELECT {_SESSION_COLUMNS} FROM {_WITH_SOURCE} WHERE s.tenant = %(tenant)s AND s.id = %(sid)s AND NOT deleting"
    ),
    sessions=f"SELECT {_SESSION_COLUMNS} FROM {_WITH_SOURCE} WHERE s.tenant = %(tenant)s AND NOT deleting",
    insert_session=(
        f"INSERT INTO {SESSIONS} (tenant, id, version, cwd, created, parent_session, header, entry_count,"
        " message_count, deleting, active_ms) VALUES (%(tenant)s, %(id)s, %(version)s, %(cwd)s, %(created)s,"
        " %(parent_session)s, CAST(%(header)s AS json), 0, 0, FALSE, %(active_ms)s) RETURNING key"
    ),
    update_head=(
        f"UPDATE {SESSIONS} SET {_COUNTS_SET}, name = %(name)s, first_message = %(first_message)s"
        " WHERE key = %(key)s"
    ),
    update_head_counts=f"UPDATE {SESSIONS} SET {_COUNTS_SET} WHERE key = %(key)s",
    set_leaf=(
        f"UPDATE {SESSIONS} SET {_LEAF_SET}, active_ms = COALESCE(%(active_ms)s, active_ms)"
        " WHERE key = %(key)s"
    ),
    mark_deleting=f"UPDATE {SESSIONS} SET deleting = TRUE WHERE key = %(key)s",
    delete_search=_DELETE_SEARCH,
    delete_catalog=(*_DELETE_SEARCH,
                    *(f"DELETE FROM {table} WHERE session_key = %(key)s" for table in (USAGE, SOURCES))),
    delete_entries=f"DELETE FROM {ENTRIES} WHERE session_key = %(key)s",
    delete_session=f"DELETE FROM {SESSIONS} WHERE key = %(key)s",
    insert_entry=(
        f"INSERT INTO {ENTRIES} ({', '.join(EntryRow._fields)}) VALUES"
        f" ({', '.join('CAST(%s AS json)' if f == 'payload' else '%s' for f in EntryRow._fields)})"
    ),
    insert_search=(
        f"INSERT INTO {SEARCH} ({', '.join(SearchRow._fields)}) VALUES ({', '.join(['%s'] * len(SearchRow._fields))})"
        " ON CONFLICT (session_key, seq) DO NOTHING"
    ),
    add_usage=add_usage_sql(USAGE, "%s"),
    facts=f"SELECT {select_list(NodeFacts)} FROM {ENTRIES} WHERE session_key = %(key)s AND entry_id = %(eid)s",
    payload=f"SELECT {_PAYLOAD} FROM {ENTRIES} WHERE session_key = %(key)s AND entry_id = %(eid)s",
    payload_at=f"SELECT {_PAYLOAD} FROM {ENTRIES} WHERE session_key = %(key)s AND seq = %(seq)s",
    path=path_sql(ENTRIES, "%({})s") + f"""
    SELECT {select_list(PathRow, seq="e.seq", payload="e.payload::text")}
    FROM runs JOIN {ENTRIES} e ON e.session_key = %(key)s AND e.seq BETWEEN runs.first_seq AND runs.last_seq
    WHERE e.depth >= %(stop)s""",
    on_path=path_sql(ENTRIES, "%({})s") + " SELECT count(*) FROM runs WHERE %(target)s BETWEEN first_seq AND last_seq",
    children=f"SELECT {_PAYLOAD} FROM {ENTRIES} WHERE session_key = %(key)s AND parent_seq = %(seq)s ORDER BY seq",
    roots=f"SELECT {_PAYLOAD} FROM {ENTRIES} WHERE session_key = %(key)s AND parent_seq IS NULL ORDER BY seq",
    tree=f"SELECT {select_list(TreeRow, payload=_PAYLOAD)} FROM {ENTRIES} WHERE session_key = %(key)s ORDER BY seq",
    payloads_of_type=(
        f"SELECT {_PAYLOAD} FROM {ENTRIES} WHERE session_key = %(key)s AND type = %(type)s ORDER BY seq"
    ),
    payloads=f"SELECT {_PAYLOAD} FROM {ENTRIES} WHERE session_key = %(key)s ORDER BY seq",
    count_entries=f"SELECT count(*) FROM {ENTRIES} WHERE session_key = %(key)s",
    # The export's COPY is steered to the primary key (session_key, seq), which gives the rows in
    # order, for this transaction: without fresh statistics (right after imports) the planner scanned
    # the whole table and sorted.
    export_head=(
        f"SELECT {select_list(ExportHead, header='header::text', last_entry_id=_LAST_ENTRY_ID)},"
        " set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true)"
        f" FROM {SESSIONS} s WHERE s.tenant = %(tenant)s AND s.id = %(sid)s"
    ),
    folded_texts=f"SELECT text, extra FROM {SEARCH} WHERE session_key = %(key)s ORDER BY seq",
    session_usage=f"SELECT {select_list(UsageRow)} FROM {USAGE} WHERE session_key = %(key)s",
    usage_sums=usage_sums_sql(USAGE, _CHOSEN_KEYS),
    counter_sums=counter_sums_sql(SESSIONS, _CHOSEN_KEYS),
    sources=(
        f"SELECT s.id, {select_list(SourceRow, session_key='src.session_key')} FROM {SOURCES} src"
        f" JOIN {SESSIONS} s ON s.key = src.session_key WHERE s.tenant = %(tenant)s AND NOT s.deleting"
    ),
    source=f"SELECT {select_list(SourceRow)} FROM {SOURCES} WHERE session_key = %(key)s",
    put_source=put_source_sql(SOURCES, "%s"),
    **search_progress_sql(SESSIONS, SEARCH, SEARCH_MARKS, SETTINGS, "%({})s", key_share="FOR KEY SHARE OF s"),
    **deleted_source_sql(DELETED_SOURCES, "%s", "%(tenant)s"),
    # LIKE, right under any collation (a range would need the C collation's order); the session's part
    # of the (session_key, entry_id) index is read. Code point order, as SQLite's: an exact id comes first.
    entry_ids_with_prefix=(
        f"SELECT {select_list(EntryBrief)} FROM {ENTRIES} WHERE session_key = %(key)s"
        ' AND entry_id LIKE %(pattern)s ORDER BY entry_id COLLATE "C" LIMIT %(limit)s'
    ),
    session_ids_with_prefix=(
        f"SELECT id FROM {SESSIONS} WHERE tenant = %(tenant)s AND id LIKE %(pattern)s AND NOT deleting"
        ' ORDER BY id COLLATE "C" LIMIT %(limit)s'
    ),
    path_runs=path_sql(ENTRIES, "%({})s") + " SELECT first_seq, last_seq FROM runs ORDER BY first_seq",
    payloads_between=(
        f"SELECT seq, {_PAYLOAD} FROM {ENTRIES} WHERE session_key = %(key)s AND seq BETWEEN %(first)s AND %(last)s"
        " AND depth >= %(stop)s ORDER BY seq"
    ),
    typed_payloads_between=(
        f"SELECT seq, {_PAYLOAD} FROM {ENTRIES} WHERE session_key = %(key)s AND seq BETWEEN %(first)s AND %(last)s"
        " AND depth >= %(stop)s AND type = %(type)s ORDER BY seq"
    ),
    tree_links=f"SELECT seq, parent_seq FROM {ENTRIES} WHERE session_key = %(key)s ORDER BY seq",
    notify=PG_NOTIFY,
)

_SESSIONS_WITH_TEXT = f"SELECT DISTINCT session_key FROM {SEARCH} WHERE text LIKE %(pattern)s"
_SESSIONS_WITH_TEXT_ALL = _SESSIONS_WITH_TEXT + " OR extra LIKE %(pattern)s"  # (``extra`` has no index: scanned)


def like_pattern(needle: str) -> str:
    """A LIKE pattern matching ``needle`` anywhere (``\\``, ``%`` and ``_`` escaped): pg_trgm's GIN
    index of ``text`` answers it for needles of three characters or more."""
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_COPY_IN = f"COPY {ENTRIES} ({', '.join(EntryRow._fields)}) FROM STDIN"
_COPY_SEARCH_IN = f"COPY {SEARCH} ({', '.join(SearchRow._fields)}) FROM STDIN"
_COPY_OUT = f"COPY (SELECT payload FROM {ENTRIES} WHERE session_key = %s ORDER BY seq) TO STDOUT (FORMAT binary)"
_PGCOPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"


_NAMED_PARAM = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")
"""A ``:name`` parameter of sqlite3's style (not a ``::type`` cast)."""


class PostgresTx(StatementTx):
    dialect = "postgresql"

    @staticmethod
    def in_driver_style(sql: str) -> str:
        return _NAMED_PARAM.sub(r"%(\1)s", sql)

    def sessions_with_text(self, needle: str, *, everything: bool) -> set[int]:
        rows = self._all(_SESSIONS_WITH_TEXT_ALL if everything else _SESSIONS_WITH_TEXT,
                         {"pattern": like_pattern(needle)})
        return {row[0] for row in rows}

    def text_hits(self, keys: Sequence[int], needles: Sequence[str], *, everything: bool,
                  per_session: int) -> list[HitRow]:
        if not keys or not needles:
            return []
        sql = text_hits_sql(SEARCH, ENTRIES, keys=len(keys), needles=len(needles), everything=everything,
                            placeholder="%s", contains="strpos({0}, {1}) > 0")
        self.cursor.execute(sql, text_hits_params(keys, needles, everything=everything, per_session=per_session))
        return [HitRow._make(row) for row in self.cursor.fetchall()]

    def insert_session(self, values: NewSession) -> int:
        self.cursor.execute(self.sql.insert_session, {**values._asdict(), "tenant": self.tenant})
        return int(self.cursor.fetchone()[0])

    @contextmanager
    def bulk_sink(self) -> Iterator[_CopySink]:
        with _CopySink(self.cursor) as sink:
            yield sink

    def write_payload_lines(self, key: int, fp: IO[bytes]) -> int:
        """``COPY ... (FORMAT binary)``: no per-row result objects, and the binary format needs no
        unescaping (a ``json`` value is sent as its text). Format: signature, flags, header extension,
        then per row a field count (1), the length and the bytes; a field count of -1 ends the data."""
        buf = bytearray()
        pos = 0
        count = 0
        started = False
        with self.cursor.copy(_COPY_OUT, (key,)) as copy:
            for chunk in copy:
                buf += chunk
                if len(buf) - pos < 1 << 20:
                    continue
                if not started:
                    pos, started = _pgcopy_header(buf), True
                out, rows, pos = _pgcopy_rows(buf, pos)
                fp.write(out)
                count += rows
                del buf[:pos]
                pos = 0
        if not started:
            pos = _pgcopy_header(buf)
        out, rows, pos = _pgcopy_rows(buf, pos)
        if buf[pos : pos + 2] != b"\xff\xff":
            raise StoreError("PostgreSQL COPY ended without its trailer")
        fp.write(out)
        return count + rows


class _CopySink:
    """Rows written into an open ``COPY`` as they are made, so that the server stores one part of a
    file while the reader parses and validates the next (on two cores the import's Python work and the
    server's work overlap). Leaving by an exception fails the ``COPY`` (the transaction can then be
    rolled back)."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor
        self._block: Any = None
        self._copy: Any = None
        self._count = 0
        self._search: list[SearchRow] = []  # written by their own COPY after their entries' one ends

    def add(self, row: EntryRow, search: SearchRow | None = None) -> None:
        if self._copy is None:
            self._block = self._cursor.copy(_COPY_IN)
            self._copy = self._block.__enter__()
        self._copy.write_row(row)
        if search is not None:
            self._search.append(search)
        self._count += 1
        if self._count % COPY_ROWS == 0 or self._count == ANALYZE_AFTER:
            self._end(None, None, None)
            if self._count == ANALYZE_AFTER:
                self._cursor.execute(f"ANALYZE {ENTRIES}")

    def _end(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        block, self._block, self._copy = self._block, None, None
        block.__exit__(kind, exc, tb)  # on an exception psycopg sends CopyFail: the server drops the COPY
        if kind is None and self._search:
            with self._cursor.copy(_COPY_SEARCH_IN) as copy:
                for search in self._search:
                    copy.write_row(search)
            self._search = []

    def __enter__(self) -> _CopySink:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._copy is not None:
            self._end(kind, exc, tb)


def _pgcopy_header(buf: bytearray) -> int:
    if buf[:11] != _PGCOPY_SIGNATURE:
        raise StoreError("PostgreSQL COPY did not start with the binary signature")
    return 19 + int.from_bytes(buf[15:19], "big")


def _pgcopy_rows(buf: bytearray, pos: int) -> tuple[bytes, int, int]:
    """The complete rows from ``pos`` on, each as its text and a newline; how many; where the rest starts."""
    view = memoryview(buf)
    try:
        parts: list[memoryview] = []
        end = len(buf)
        while pos + 6 <= end and buf[pos : pos + 2] == b"\x00\x01":
            length = int.from_bytes(buf[pos + 2 : pos + 6], "big")
            if pos + 6 + length > end:
                break
            parts.append(view[pos + 6 : pos + 6 + length])
            pos += 6 + length
        out = b"\n".join(parts) + b"\n" if parts else b""
        rows = len(parts)
        for part in parts:
            part.release()
    finally:
        view.release()
    return out, rows, pos


def translate(exc: psycopg.Error, *, write: bool) -> SessionStoreError:
    """The one place where psycopg errors become the store's."""
    diag = getattr(exc, "diag", None)
    if exc.sqlstate == "23505" and diag is not None and diag.constraint_name == ENTRY_ID_UNIQUE:
        return EntryIdTakenError("the session already has an entry with that id")
    if exc.sqlstate == "23505" and diag is not None and diag.constraint_name == SESSION_ID_UNIQUE:
        # (a concurrent create of the id committed first: the insert waited for it, then failed)
        found = _SESSION_ID_DETAIL.search(diag.message_detail or "")
        return SessionExistsError(found.group(1) if found else "?")
    return StoreError(f"database {'refused the write' if write else 'error'}: {exc}")


def reset_connection(dbapi_connection: Any, record: Any) -> None:
    """Pool checkin: psycopg's defaults again (no autocommit, the server's isolation, read-write);
    a connection that cannot be reset is dropped."""
    if dbapi_connection is None:  # invalidated
        return
    try:
        _restore_defaults(blocking_driver(dbapi_connection))
    except Exception as exc:
        record.invalidate(exc)


def _restore_defaults(driver: Any) -> None:
    if driver.autocommit:
        driver.autocommit = False
    if driver.isolation_level is not None:
        driver.isolation_level = None
    if driver.read_only is not None:
        driver.read_only = None


class PostgresBackend:
    """Transactions on the pooled psycopg connections of ``engine``: psycopg's ``Connection`` objects, or
    on an async engine its ``AsyncConnection`` objects, driven from greenlets on their event loop
    (:mod:`sessionstore.store.pg_async`)."""

    name = "postgresql"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        if not event.contains(engine, "checkin", reset_connection):
            event.listen(engine, "checkin", reset_connection)

    @contextmanager
    def read(self, *, tenant: str) -> Iterator[PostgresTx]:
        with self._transaction(tenant, write=False, pipeline=False) as tx:
            yield tx

    @contextmanager
    def write(self, *, tenant: str, bulk: bool = False) -> Iterator[PostgresTx]:
        with self._transaction(tenant, write=True, pipeline=not bulk) as tx:  # COPY cannot run in a pipeline
            yield tx

    @contextmanager
    def _transaction(self, tenant: str, *, write: bool, pipeline: bool) -> Iterator[PostgresTx]:
        try:
            raw = self.engine.raw_connection()
        except Exception as exc:
            raise StoreError(f"cannot connect: {exc}") from exc
        driver: Any = blocking_driver(raw)
        broken = False
        try:
            if not write:  # psycopg then begins with BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY
                driver.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
                driver.read_only = True
            if pipeline:
                driver.autocommit = True  # BEGIN and COMMIT are sent below, inside the pipeline
            cursor = driver.cursor()
            try:
                if pipeline:
                    with driver.pipeline():
                        cursor.execute("BEGIN")
                        yield PostgresTx(cursor, STATEMENTS, tenant)
                        cursor.execute("COMMIT")
                else:
                    yield PostgresTx(cursor, STATEMENTS, tenant)
                    raw.commit()
            except BaseException:
                try:
                    raw.rollback()  # psycopg sends ROLLBACK whenever the server reports a transaction open
                except Exception:  # the connection broke: report what broke it, and do not pool it again
                    broken = True
                    raw.invalidate()
                raise
            finally:
                if not broken:
                    cursor.close()
                    try:
                        _restore_defaults(driver)
                    except Exception:  # (the checkin listener would drop it too)
                        raw.invalidate()
        except psycopg.Error as exc:
            raise translate(exc, write=write) from exc
        finally:
            raw.close()

    def checkpoint(self) -> None:
        """(The server checkpoints on its own schedule.)"""

    def close(self) -> None:
        self.engine.dispose()

"""The PostgreSQL layout stays distributable by session key (issue 24 point 5, SPEC 17 "Scale-out"): each
per-session statement of the PostgreSQL backend names one session key, so that on Citus the tables
distributed by it keep appends, context, exports and feeds on one shard; only the statements named here
as fan-outs (listing, search, stats across sessions, sync sources) read many sessions.

Checked twice: statically over the backend's one table of statements (``postgres.STATEMENTS`` and the
few its transaction class adds), and on a real PostgreSQL run of every per-session operation, whose
executed SQL is recorded at the cursor and must all be statements checked statically."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import fields
from typing import Any

import pytest

from sessionstore.api import SessionStore
from sessionstore.store import archive, postgres, retention
from sessionstore.store.postgres import ENTRIES, SEARCH, SEARCH_MARKS, SESSIONS, SOURCES, STATEMENTS, USAGE
from tests.builders import assistant, user

DISTRIBUTED = {SESSIONS: "key", ENTRIES: "session_key", SEARCH: "session_key", USAGE: "session_key",
               SOURCES: "session_key", SEARCH_MARKS: "session_key", "sessionstore_archives": "session_key",
               "sessionstore_holds": "session_key"}
"""The tables distributed on Citus, and the column each is distributed by (the session key)."""

LOOKUPS = {"head", "head_for_update", "session", "export_head"}
"""Per-session statements that find the session by its ``(tenant, id)``, the unique name a caller gives,
and not by its key: the first statement of each per-session operation (see the README's Citus section)."""
CREATES = {"insert_session"}
"""The insert that makes a session's key (an identity value the database draws)."""
FAN_OUT = {"sessions", "session_ids_with_prefix", "sources", "usage_sums", "counter_sums", "search_lag",
           "clear_search_marks", "clear_search_rows"}
"""Statements that read many sessions: the tenant's listing (and its ids by prefix) and sync sources, stats
across sessions, the sessions whose search index lags; and turning the search index off (every session's
rows, once)."""
DATABASE_WIDE = {"usage_sums", "counter_sums", "clear_search_marks", "clear_search_rows"}
"""Fan-outs not by tenant: of chosen keys (stats), or of every tenant (the index is the database's)."""
TENANT_TABLES = {"deleted_sources", "put_deleted_source", "forget_deleted_source", "setting", "put_setting"}
"""Statements on ``sessionstore_deleted_sources``, a per-tenant table with no session key (the session is gone),
and on ``sessionstore_settings`` (the database's, not distributed)."""
EXTRA_FAN_OUT = {"_SESSIONS_WITH_TEXT": postgres._SESSIONS_WITH_TEXT,
                 "_SESSIONS_WITH_TEXT_ALL": postgres._SESSIONS_WITH_TEXT_ALL,
                 "archive._ARCHIVE_FILES": postgres.PostgresTx.in_driver_style(archive._ARCHIVE_FILES)}
"""The search's fan-out (which sessions hold a text; the tenant's archived sessions), beside ``STATEMENTS``."""

_TABLE_USE = re.compile(r"\b(FROM|JOIN|INTO|UPDATE|COPY)\s+(\w+)(?:\s+(?!WHERE|ON|SET|WITH|\()(\w+))?", re.I)


RETENTION_PER_SESSION = {"archive._SELECT_ARCHIVE": archive._SELECT_ARCHIVE,
                         "archive._INSERT_ARCHIVE": archive._INSERT_ARCHIVE,
                         "archive._DELETE_ARCHIVE": archive._DELETE_ARCHIVE,
                         "archive._DELETE_ENTRIES": archive._DELETE_ENTRIES,
                         "retention._HOLD": retention._HOLD, "retention._UNHOLD": retention._UNHOLD}
"""The retention modules' per-session statements (``Tx.run``, in PostgreSQL's style as the backend runs
them): each names the session key. Their fan-outs (a tenant's holds, archives and candidates, the
policies) are run by ``retention run`` and ``ls``, not by the per-session operations below."""


def test_the_retention_modules_per_session_statements_name_the_session_key() -> None:
    for name, sql in RETENTION_PER_SESSION.items():
        pg = postgres.PostgresTx.in_driver_style(sql)
        assert touches_distributed(pg) and misses_the_key(pg) == [], f"{name}: {pg}"


def statements() -> dict[str, str]:
    named: dict[str, str] = {}
    for field in fields(STATEMENTS):
        value = getattr(STATEMENTS, field.name)
        if isinstance(value, tuple):
            named.update((f"{field.name}[{i}]", sql) for i, sql in enumerate(value))
        else:
            named[field.name] = value
    return named


def _base(name: str) -> str:
    return name.split("[", 1)[0]


def misses_the_key(sql: str) -> list[str]:
    """Each use of a distributed table in ``sql`` that no session key pins: a read or write must have
    ``<alias>.<column> = %(key)s`` (or the unqualified column without an alias; ``%s`` where the statement
    is positional), an insert must carry the column in its column list."""
    missing = []
    for verb, table, alias in _TABLE_USE.findall(sql):
        column = DISTRIBUTED.get(table)
        if column is None:
            continue
        if verb.upper() in ("INTO", "COPY") and re.search(rf"{table}\s*\(([^)]*)\)", sql):
            listed = re.search(rf"{table}\s*\(([^)]*)\)", sql)
            if listed and column in [c.strip() for c in listed.group(1).split(",")]:
                continue
        key = r"\s*=\s*%(?:\(key\))?s"
        qualified = rf"\b{alias}\.{column}{key}" if alias else rf"(?<![.\w]){column}{key}"
        if not re.search(qualified, sql):
            missing.append(f"{table} {alias}".strip())
    return missing


def touches_distributed(sql: str) -> bool:
    return any(table in DISTRIBUTED for _verb, table, _alias in _TABLE_USE.findall(sql))


def test_every_per_session_statement_names_the_session_key() -> None:
    named = statements()
    classified = LOOKUPS | CREATES | FAN_OUT | TENANT_TABLES
    assert classified <= {_base(n) for n in named}
    for name, sql in named.items():
        if _base(name) in classified:
            continue
        assert touches_distributed(sql), f"{name}: touches no distributed table: classify it"
        assert misses_the_key(sql) == [], f"{name} does not name the session key: {sql}"


def test_the_copies_of_imports_and_exports_carry_or_name_the_session_key() -> None:
    for sql in (postgres._COPY_IN, postgres._COPY_SEARCH_IN, postgres._COPY_OUT):
        assert misses_the_key(sql) == [], sql


def test_the_fan_outs_are_exactly_listing_search_stats_and_sync_sources() -> None:
    """The statements that do not name one key are the named fan-outs and the (tenant, id) lookups."""
    named = {**statements(), **EXTRA_FAN_OUT}
    unkeyed = {_base(n) for n, sql in named.items() if touches_distributed(sql) and misses_the_key(sql)}
    assert unkeyed == LOOKUPS | CREATES | FAN_OUT | set(EXTRA_FAN_OUT)
    for name in LOOKUPS:  # (each finds one session by its unique (tenant, id))
        assert re.search(r"\btenant = %\(tenant\)s AND s?\.?id = %\(sid\)s", named[name]), name
    for name in FAN_OUT - DATABASE_WIDE:  # (the tenant's sessions)
        assert "tenant = %(tenant)s" in named[name], name


class _Recording:
    """A DB-API cursor that records the SQL it is given."""

    def __init__(self, cursor: Any, seen: list[str]) -> None:
        self._cursor = cursor
        self._seen = seen

    def execute(self, sql: Any, *args: Any, **kwargs: Any) -> Any:
        self._seen.append(str(sql))
        return self._cursor.execute(sql, *args, **kwargs)

    def executemany(self, sql: Any, *args: Any, **kwargs: Any) -> Any:
        self._seen.append(str(sql))
        return self._cursor.executemany(sql, *args, **kwargs)

    def copy(self, sql: Any, *args: Any, **kwargs: Any) -> Any:
        self._seen.append(str(sql))
        return self._cursor.copy(sql, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)


@pytest.fixture
def recorded(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SessionStore, list[str]]]:
    seen: list[str] = []

    class RecordingTx(postgres.PostgresTx):
        def __init__(self, cursor: Any, statements: Any, tenant: str) -> None:
            super().__init__(_Recording(cursor, seen), statements, tenant)

    monkeypatch.setattr(postgres, "PostgresTx", RecordingTx)
    with SessionStore(pg_url) as store:
        yield store, seen


def test_a_real_run_of_every_per_session_operation_issues_only_the_checked_statements(
        recorded: tuple[SessionStore, list[str]]) -> None:
    store, seen = recorded
    sid = store.create_session(cwd="/w")
    first = store.append_message(sid, user("hello distributed world"))
    second = store.append_message(sid, assistant("hi"))
    store.append_entries(sid, [{"type": "message", "message": user("again")}])
    store.append_label(sid, first, "start")
    store.branch(sid, first)
    store.append_message(sid, user("on a branch"))
    store.context(sid)
    store.path(sid, second)
    store.tree(sid)
    store.stats(sid)
    store.entry(sid, second)
    exported = io.BytesIO()
    store.export_jsonl(sid, exported)
    store.write_entry_lines(sid, io.BytesIO())
    store.write_context_json(sid, io.BytesIO())
    forked = store.fork(sid, leaf_id=second)
    store.compact(forked, summary="s", first_kept_entry_id=second)
    exported.seek(0)
    imported = store.import_jsonl(io.BytesIO(exported.getvalue().replace(sid.encode(), b"copy-of-it"))).session_id
    per_session = list(seen)
    store.list_sessions()
    store.search("distributed")
    store.stats_all(by="model")
    fan_out = seen[len(per_session):]
    store.delete_session(forked)
    store.delete_session(imported)
    per_session += seen[len(per_session) + len(fan_out):]

    known = {" ".join(sql.split()) for sql in (*statements().values(), postgres._COPY_IN, postgres._COPY_SEARCH_IN,
                                               postgres._COPY_OUT)}
    known |= {" ".join(postgres.PostgresTx.in_driver_style(sql).split()) for sql in RETENTION_PER_SESSION.values()}
    fan_out_names = {n for n in statements() if _base(n) in FAN_OUT}
    fan_out_sql = {" ".join(statements()[n].split()) for n in fan_out_names} | {
        " ".join(s.split()) for s in EXTRA_FAN_OUT.values()}
    transaction = {"BEGIN", "COMMIT", f"ANALYZE {ENTRIES}"}
    for sql in per_session:
        flat = " ".join(sql.split())
        assert flat in transaction or flat in known, f"a statement outside the checked table: {flat}"
        assert flat not in fan_out_sql, f"a per-session operation fanned out: {flat}"
    text_hits = [s for s in fan_out if "ROW_NUMBER() OVER (PARTITION BY s.session_key" in s]
    assert text_hits and all("s.session_key IN (" in s for s in text_hits)  # (the search reads chosen sessions)
    for sql in fan_out:
        flat = " ".join(sql.split())
        assert flat in transaction or flat in known or flat in fan_out_sql or sql in text_hits, f"unchecked: {flat}"


@pytest.mark.parametrize(("sql", "missing"), [
    (f"SELECT payload FROM {ENTRIES} WHERE entry_id = %(eid)s", [ENTRIES]),
    (f"SELECT e.payload FROM {ENTRIES} e JOIN {ENTRIES} p ON p.seq = e.parent_seq WHERE e.session_key = %(key)s",
     [f"{ENTRIES} p"]),
    (f"UPDATE {SESSIONS} SET name = %(name)s WHERE tenant = %(tenant)s AND id = %(sid)s", [SESSIONS]),
    (f"INSERT INTO {USAGE} (model_key, day) VALUES (%s, %s)", [USAGE]),
    (f"DELETE FROM {SEARCH} WHERE session_key = %(key)s", []),
])
def test_the_check_finds_a_use_of_a_distributed_table_that_no_key_pins(sql: str, missing: list[str]) -> None:
    assert misses_the_key(sql) == missing

"""The schema comes from Alembic revisions and is checked on open."""

from __future__ import annotations

import io
import json
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import Connection, Engine, create_engine, inspect, text
from sqlalchemy.engine import make_url

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.errors import InvalidInputError, SchemaError, SessionNotFoundError
from sessionstore.store import migrate
from sessionstore.store.engine import make_engine
from sessionstore.store.entry_store import EntryStore
from sessionstore.store.migrate import SCHEMA_REVISION
from sessionstore.store.records import SessionInfo
from sessionstore.store.schema import metadata, sessions
from sessionstore.wire import dump_line
from tests.builders import Json, assistant, user
from tests.conftest import BACKENDS, PG_URL, _admin_url, drop_pg_database, fresh_pg_database
from tests.requirements import POSTGRES


@contextmanager
def _connect(store: SessionStore, *, begin: bool = False) -> Iterator[Connection]:
    """A connection of a test's own on the store's database (the store keeps its engine to itself)."""
    engine = make_engine(store.url)
    try:
        with engine.begin() if begin else engine.connect() as conn:
            yield conn
    finally:
        engine.dispose()


def _begin(store: SessionStore) -> AbstractContextManager[Connection]:
    return _connect(store, begin=True)


def _dialect(store: SessionStore) -> str:
    return make_url(store.url).get_backend_name()



def test_the_code_needs_the_head_revision_of_the_migrations() -> None:
    assert migrate.head_revision() == SCHEMA_REVISION


def test_a_new_sqlite_database_is_created_by_the_migrations(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    SessionStore(url).close()
    with sqlite3.connect(tmp_path / "new.db") as conn:
        assert conn.execute("SELECT version_num FROM sessionstore_alembic_version").fetchone() == (SCHEMA_REVISION,)
        triggers = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    # (the search index's vocabulary, revision 0018; ``columnsize=0``: no docsize table)
    fts = {"sessionstore_search_terms", "sessionstore_search_postings", "sessionstore_search_terms_fts",
           *(f"sessionstore_search_terms_fts_{p}" for p in ("data", "idx", "config"))}
    assert tables == {"sessionstore_alembic_version", "sessionstore_sessions", "sessionstore_entries",
                      "sessionstore_usage", "sessionstore_search", "sessionstore_sources",
                      "sessionstore_deleted_sources", "sessionstore_tokens", "sessionstore_idempotency",
                      "sessionstore_rate_windows", "sessionstore_search_marks", "sessionstore_settings",
                      "sessionstore_retention", "sessionstore_holds", "sessionstore_archives", "sessionstore_erasures",
                      "sessionstore_leases", *fts}
    assert {"sessionstore_entries_append_only_update", "sessionstore_entries_append_only_delete",
            "sessionstore_entries_no_replace"} <= triggers


def test_the_migrated_schema_matches_the_code_schema(db_url: str) -> None:
    engine = make_engine(db_url)
    migrate.upgrade(engine)
    inspector = inspect(engine)
    # (SQLite's search index, its terms, postings and their FTS5 table, is SQLite's own, which the code's
    # schema does not describe; so are PostgreSQL's optional pg_trgm indexes, ``*_trgm``.)
    tables = {t for t in inspector.get_table_names()
              if not t.startswith(("sessionstore_search_terms", "sessionstore_search_postings"))}
    assert tables == {t.name for t in metadata.sorted_tables} | {migrate.VERSION_TABLE}
    for table in metadata.sorted_tables:
        assert [(c["name"], c["nullable"]) for c in inspector.get_columns(table.name)] == [
            (c.name, c.nullable) for c in table.columns
        ]
        pk = inspector.get_pk_constraint(table.name)
        assert (pk["name"], pk["constrained_columns"]) == (
            table.primary_key.name, [c.name for c in table.primary_key.columns]
        )
        assert {(u["name"], tuple(u["column_names"])) for u in inspector.get_unique_constraints(table.name)} == {
            (u.name, tuple(c.name for c in u.columns))
            for u in table.constraints if u.__class__.__name__ == "UniqueConstraint"
        }
        indexes = [i for i in inspector.get_indexes(table.name)
                   if not i.get("duplicates_constraint") and not str(i["name"]).endswith("_trgm")]
        assert {(i["name"], tuple(i["column_names"])) for i in indexes} == {
            (i.name, tuple(c.name for c in i.columns)) for i in table.indexes
        }
        assert {
            (fk["name"], tuple(fk["constrained_columns"]), fk["referred_table"], tuple(fk["referred_columns"]))
            for fk in inspector.get_foreign_keys(table.name)
        } == {
            (fk.name, tuple(fk.column_keys), fk.referred_table.name, tuple(e.column.name for e in fk.elements))
            for fk in table.foreign_key_constraints
        }
        checks = {c["name"] for c in inspector.get_check_constraints(table.name)}
        assert checks == {c.name for c in table.constraints if c.__class__.__name__ == "CheckConstraint"}
    engine.dispose()


def test_a_database_without_a_recorded_revision_is_refused_when_upgrades_are_off(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with SessionStore(url) as store:
        store.create_session(cwd="/w")
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute("DELETE FROM sessionstore_alembic_version")
    with pytest.raises(SchemaError, match="db upgrade"), SessionStore(url, upgrade=False):
        pass


def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'future.db'}"
    SessionStore(url).close()
    with sqlite3.connect(tmp_path / "future.db") as conn:
        conn.execute("UPDATE sessionstore_alembic_version SET version_num = '9999'")
    with pytest.raises(SchemaError, match="newer version"):
        SessionStore(url)


def test_db_commands_report_and_upgrade_the_schema(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", url, "db", "current"]).output.strip() == "none"
    checked = runner.invoke(cli, ["--db", url, "db", "check"])
    assert checked.exit_code == 2 and "no such database file" in checked.stderr  # (and none was created)
    upgraded = runner.invoke(cli, ["--db", url, "db", "upgrade"])
    assert upgraded.output.strip() == f"created the schema at {SCHEMA_REVISION}"
    assert runner.invoke(cli, ["--db", url, "db", "check"]).exit_code == 0


def test_sqlite_runs_in_wal_with_full_sync_by_default(tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'w.db'}") as store, _connect(store) as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_a_database_at_the_base_revision_is_upgraded_on_open(tmp_path: Path) -> None:
    from alembic import command

    url = f"sqlite:///{tmp_path / 'base.db'}"
    SessionStore(url).close()
    engine = make_engine(url)
    with engine.connect() as conn, migrate.foreign_keys_off(conn), conn.begin():
        config = migrate.alembic_config()
        config.attributes["connection"] = conn
        command.downgrade(config, "base")
    with engine.connect() as conn:
        assert migrate.current_revision(conn) is None
    engine.dispose()
    with SessionStore(url) as store:
        sid = store.create_session(cwd="/w")
        assert store.session(sid).cwd == "/w"


def test_postgresql_without_the_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from sessionstore.errors import BackendUnavailableError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "psycopg" else real(name, *a))
    with pytest.raises(BackendUnavailableError, match=r"sessionstore\[postgres\]"):
        make_engine("postgresql://user@localhost/db")


@pytest.mark.requires(POSTGRES)
def test_postgresql_is_never_upgraded_on_open_and_says_what_to_run() -> None:
    name = f"sessionstore_bare_{uuid.uuid4().hex[:8]}"
    admin = create_engine(_admin_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
        with pytest.raises(SchemaError, match="sessionstore db upgrade"):
            SessionStore(url)
        result = CliRunner().invoke(cli, ["--db", url, "db", "upgrade"])
        assert result.exit_code == 0, result.output
        with SessionStore(url) as store:
            assert store.list_sessions() == []
    finally:
        drop_pg_database(name)
        admin.dispose()


def test_normal_durability_runs_sqlite_with_normal_sync(tmp_path: Path) -> None:
    with EntryStore(f"sqlite:///{tmp_path / 'n.db'}", durability="normal") as store, store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_an_import_gives_back_the_foreign_key_checks_and_page_cache_it_turned_off(tmp_path: Path) -> None:
    """An import (a bulk write) runs without SQLite's foreign-key checks and with a larger page cache;
    the pooled connection (reused by the calls that follow) gets both back, also when the import fails."""
    from tests.paths import PI_FILES

    with SessionStore(f"sqlite:///{tmp_path / 'b.db'}") as store:
        store.import_jsonl(PI_FILES["large-session"])
        with pytest.raises(InvalidInputError):
            store.import_entries({"type": "session", "id": "bad", "timestamp": "t", "cwd": "/w"},
                                 [{"type": "custom", "id": "x", "parentId": "x", "timestamp": "t"}])
        with _connect(store) as conn:
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA cache_size").scalar() == -2000
        assert [s.id for s in store.list_sessions()] == ["d703a1a9-1b7b-4fb1-b512-c9738b1fe617"]


@pytest.mark.requires(POSTGRES)
def test_postgresql_jsonb_payloads_of_revision_0001_become_json_text_with_their_entries_kept() -> None:
    name = f"sessionstore_0001_{uuid.uuid4().hex[:8]}"
    admin = create_engine(_admin_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    engine = make_engine(url)
    try:
        migrate.upgrade(engine, "0001")
        header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
        user = {"type": "message", "id": "a1", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
                "message": {"role": "user", "content": "hi, a: b", "timestamp": 1, "x": [1e-7, 2.5, 1e21, 3.0]}}
        with engine.begin() as conn:
            conn.execute(
                text("INSERT INTO sessions (id, version, cwd, created, header, leaf_id, leaf_seq, entry_count,"
                     " message_count, deleting) VALUES ('s1', 3, '/w', :ts, CAST(:h AS jsonb), 'a1', 0, 1, 1, FALSE)"),
                {"ts": header["timestamp"], "h": json.dumps(header)},
            )
            conn.execute(
                text("INSERT INTO entries (session_id, seq, entry_id, parent_id, depth, type, role, timestamp,"
                     " payload, ctx_depth) VALUES ('s1', 0, 'a1', NULL, 0, 'message', 'user', :ts,"
                     " CAST(:p AS jsonb), 0)"),
                {"ts": user["timestamp"], "p": json.dumps(user)},
            )
        with pytest.raises(SchemaError, match=r"0001.*sessionstore db upgrade"):
            SessionStore(url)
        result = CliRunner().invoke(cli, ["--db", url, "db", "upgrade"])
        assert result.exit_code == 0, result.output
        lines = result.output.strip().splitlines()
        assert lines[0].startswith("applied 0002: ") and lines[-1] == f"schema at {SCHEMA_REVISION} (was 0001)"
        with engine.connect() as conn:
            types = conn.execute(
                text("SELECT table_name, data_type FROM information_schema.columns"
                     " WHERE column_name IN ('payload', 'header') ORDER BY table_name")
            ).all()
        assert types == [("sessionstore_entries", "json"), ("sessionstore_sessions", "json")]
        with SessionStore(url) as store:
            assert store.path("s1") == [user]
            out = io.BytesIO()
            assert store.export_jsonl("s1", out) == 1
            assert [json.loads(line) for line in out.getvalue().splitlines()] == [header, user]
            # The entry written through jsonb is stored again as pi writes lines (compact, JS numbers),
            # in the key order jsonb kept.
            line = out.getvalue().splitlines()[1]
            assert line == dump_line(json.loads(line))[:-1]
            assert b'"x":[1e-7,2.5,1e+21,3]' in line and b'"content":"hi, a: b"' in line
            appended = store.append_message("s1", {"role": "user", "content": "again", "timestamp": 2})
            assert [e["id"] for e in store.path("s1")] == ["a1", appended]
    finally:
        engine.dispose()
        drop_pg_database(name)
        admin.dispose()


def test_sessions_written_before_revision_0003_get_their_leaf_facts_on_upgrade(tmp_path: Path) -> None:
    """Revision 0003 copies each leaf entry's facts onto its session row; appends then continue the
    path (depth, context, model) as if the session had been written by this version."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    migrate.upgrade(engine, "0002")
    entries = [
        ({"type": "model_change", "id": "m1", "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z",
          "provider": "anthropic", "modelId": "opus"}, None, "model_change", None, 0),
        ({"type": "message", "id": "u1", "parentId": "m1", "timestamp": "2025-01-01T00:00:01.000Z",
          "message": {"role": "user", "content": "hi", "timestamp": 1}}, 0, "message", "user", 0),
    ]
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO sessions (id, version, cwd, created, header, leaf_id, leaf_seq, entry_count,"
                 " message_count, deleting) VALUES ('s1', 3, '/w', 'ts', :h, 'u1', 1, 2, 1, 0)"),
            {"h": json.dumps({"type": "session", "version": 3, "id": "s1", "timestamp": "ts", "cwd": "/w"})},
        )
        for seq, (entry, parent_seq, kind, role, model_seq) in enumerate(entries):
            conn.execute(
                text("INSERT INTO entries (session_id, seq, entry_id, parent_id, parent_seq, depth, type, role,"
                     " timestamp, payload, ctx_depth, model_seq) VALUES ('s1', :seq, :id, :parent, :parent_seq,"
                     " :seq, :kind, :role, :ts, :payload, 0, :model_seq)"),
                {"seq": seq, "id": entry["id"], "parent": entry["parentId"], "parent_seq": parent_seq, "kind": kind,
                 "role": role, "ts": entry["timestamp"], "payload": json.dumps(entry), "model_seq": model_seq},
            )
    engine.dispose()
    with SessionStore(url) as store:
        with _connect(store) as conn:
            row = conn.execute(text("SELECT leaf_seq, leaf_depth, leaf_ctx_depth, leaf_model_seq, leaf_run_start"
                                    " FROM sessionstore_sessions")).one()
        assert tuple(row) == (1, 1, 0, 0, 0)
        reply = store.append_message("s1", {"role": "assistant", "content": [], "api": "x", "provider": "anthropic",
                                            "model": "opus", "usage": {}, "stopReason": "stop", "timestamp": 2})
        assert [e["id"] for e in store.path("s1")] == ["m1", "u1", reply]
        context = store.context("s1")
        assert context.model == {"provider": "anthropic", "modelId": "opus"}
        assert [m["role"] for m in context.messages] == ["user", "assistant"]


def test_revision_0004_moves_the_parent_link_to_parent_seq_and_back_keeping_every_entry(db_url: str) -> None:
    from alembic import command

    from tests.paths import PI_FILES

    with SessionStore(db_url) as store:
        sid = store.import_jsonl(PI_FILES["before-compaction"]).session_id
        path = store.path(sid)
    engine = make_engine(db_url)
    config = migrate.alembic_config()
    try:
        with engine.connect() as conn, migrate.foreign_keys_off(conn), conn.begin():
            config.attributes["connection"] = conn
            command.downgrade(config, "0003")
        names = {i["name"] for i in inspect(engine).get_indexes("entries")}
        assert "ix_entries_parent" in names and "ix_entries_children" not in names
        migrate.upgrade(engine)
        with engine.connect() as conn:
            assert migrate.current_revision(conn) == SCHEMA_REVISION
    finally:
        engine.dispose()
    with SessionStore(db_url) as store:
        assert store.path(sid) == path
        reply = store.append_message(sid, {"role": "user", "content": "after the round trip", "timestamp": 1})
        assert store.path(sid)[-1]["id"] == reply and store.path(sid)[-2] == path[-1]
        assert [c["id"] for c in store.children(sid, path[-1]["id"])] == [reply]
        store.delete_session(sid)
        assert store.list_sessions() == []


@pytest.mark.requires(POSTGRES)
def test_going_back_to_jsonb_is_refused_naming_the_entries_that_hold_a_nul(pg_template: str) -> None:
    name, db_url = fresh_pg_database(pg_template)
    try:
        _refused_downgrade(db_url)
    finally:
        drop_pg_database(name)


def _refused_downgrade(db_url: str) -> None:
    from alembic import command

    with SessionStore(db_url) as store:
        sid = store.create_session(cwd="/w")
        store.append_message(sid, {"role": "user", "content": "a \\u0000 that is only text", "timestamp": 1})
        bad = store.append_message(sid, {"role": "user", "content": "binary\x00output", "timestamp": 2})
    engine = make_engine(db_url)
    config = migrate.alembic_config()
    try:
        with (pytest.raises(RuntimeError, match=f"1 payload.*{sid}/{bad}"), engine.connect() as conn,
              migrate.foreign_keys_off(conn), conn.begin()):
            config.attributes["connection"] = conn
            command.downgrade(config, "0001")
        with engine.connect() as conn:
            assert migrate.current_revision(conn) == SCHEMA_REVISION
    finally:
        engine.dispose()


# -- Raw SQL cannot change the tree of a session that readers see (revision 0005) ---------------

_ENTRY = ("session_key, seq, entry_id, parent_seq, run_start, depth, ctx_depth, compaction_seq, model_seq,"
          " thinking_seq, type, payload")
_KEY = "(SELECT key FROM sessionstore_sessions WHERE id = :sid)"
_SWAPPED = "'{\"swapped\": true}'"


def _copy_of_entry(seq: int, *, new_seq: str = "seq", new_id: str = "entry_id", rowid: bool = False) -> str:
    """A SELECT of entry ``seq`` of session ``:sid`` as an entries row with another payload."""
    columns = _ENTRY.replace("seq, entry_id,", f"{new_seq}, {new_id},", 1).replace("payload", _SWAPPED)
    return (f"SELECT {'rowid, ' if rowid else ''}{columns} FROM sessionstore_entries"
            f" WHERE session_key = {_KEY} AND seq = {seq}")


def _session_columns(*, key: bool) -> str:
    return ", ".join(c.name for c in sessions.columns if key or c.name != "key")


def _copy_of_session(*, key: bool, **values: str) -> str:
    """A SELECT of session ``:sid`` as a sessions row (with its ``key`` or without, for a new one), with
    ``values`` for some columns."""
    columns = ", ".join(values.get(c.name, c.name) for c in sessions.columns if key or c.name != "key")
    return f"SELECT {columns} FROM sessionstore_sessions WHERE id = :sid"


_INSERT_OTHER = (f"INSERT INTO sessionstore_sessions ({_session_columns(key=False)})"
                 f" {_copy_of_session(key=False, id=repr('other'))}")
_DELETE_A_LEAF = ["UPDATE sessionstore_sessions SET deleting = TRUE WHERE id = :sid",
                  f"DELETE FROM sessionstore_entries WHERE session_key = {_KEY} AND seq = 3"]
_BOTH, _SQLITE, _POSTGRESQL = ("sqlite", "postgresql"), ("sqlite",), ("postgresql",)
_ATTACKS: dict[str, tuple[tuple[str, ...], list[str]]] = {
    # SQLite's REPLACE deletes the rows in its way without firing their delete trigger.
    "INSERT OR REPLACE over an entry's seq": (_SQLITE, [
        f"INSERT OR REPLACE INTO sessionstore_entries ({_ENTRY}) {_copy_of_entry(1, new_id=repr('swapped'))}"]),
    "REPLACE INTO over an entry's id at a new seq": (_SQLITE, [
        f"REPLACE INTO sessionstore_entries ({_ENTRY}) {_copy_of_entry(2, new_seq='9')}"]),
    "INSERT OR REPLACE over an entry's rowid": (_SQLITE, [
        f"INSERT OR REPLACE INTO sessionstore_entries (rowid, {_ENTRY})"
        f" {_copy_of_entry(3, new_seq='9', new_id=repr('x'), rowid=True)}"]),
    "mark deleting, delete a leaf, REPLACE the session row unmarked": (_SQLITE, [
        *_DELETE_A_LEAF,
        f"REPLACE INTO sessionstore_sessions ({_session_columns(key=True)})"
        f" {_copy_of_session(key=True, deleting='FALSE')}"]),
    "mark deleting, delete a leaf, REPLACE the session row unmarked under a new key": (_SQLITE, [
        *_DELETE_A_LEAF,
        f"REPLACE INTO sessionstore_sessions ({_session_columns(key=False)})"
        f" {_copy_of_session(key=False, deleting='FALSE')}"]),
    "REPLACE a new session row over the key of the session": (_SQLITE, [
        f"REPLACE INTO sessionstore_sessions ({_session_columns(key=True)})"
        f" {_copy_of_session(key=True, id=repr('other'))}"]),
    "REPLACE a new session row over the rowid of the session": (_SQLITE, [
        f"REPLACE INTO sessionstore_sessions (rowid, {_session_columns(key=False)})"
        f" {_copy_of_session(key=False, id='rowid, ' + repr('other'))}"]),
    "UPDATE OR REPLACE a new session row onto the rowid of the session": (_SQLITE, [
        _INSERT_OTHER,
        "UPDATE OR REPLACE sessionstore_sessions SET rowid = (SELECT rowid FROM sessionstore_sessions WHERE id = :sid)"
        " WHERE id = 'other'"]),
    "UPDATE OR REPLACE a new session row onto the rowid of the session, named _rowid_": (_SQLITE, [
        _INSERT_OTHER,
        "UPDATE OR REPLACE sessionstore_sessions SET _rowid_ = (SELECT oid FROM sessionstore_sessions WHERE id = :sid)"
        " WHERE id = 'other'"]),
    "a new session row adopting the entries of a session deleted with its key": (_SQLITE, [
        _INSERT_OTHER,
        "UPDATE sessionstore_sessions SET deleting = TRUE WHERE id = 'other'",
        "DELETE FROM sessionstore_sessions WHERE id = 'other'",
        # foreign keys off: entries under the next key, then a session row that gets that key
        f"INSERT INTO sessionstore_entries ({_ENTRY}) SELECT (SELECT max(key) + 1 FROM sessionstore_sessions),"
        f" {_ENTRY.split(', ', 1)[1]} FROM sessionstore_entries WHERE session_key = {_KEY} AND seq = 0",
        f"INSERT INTO sessionstore_sessions ({_session_columns(key=False)})"
        f" {_copy_of_session(key=False, id=repr('adopter'))}"]),
    "ON CONFLICT DO UPDATE of an entry's seq": (_BOTH, [
        f"INSERT INTO sessionstore_entries ({_ENTRY}) {_copy_of_entry(1)} ON CONFLICT (session_key, seq) DO UPDATE"
        " SET payload = excluded.payload"]),
    "ON CONFLICT DO UPDATE of an entry's id": (_BOTH, [
        f"INSERT INTO sessionstore_entries ({_ENTRY}) {_copy_of_entry(1, new_seq='9')}"
        " ON CONFLICT (session_key, entry_id) DO UPDATE SET payload = excluded.payload"]),
    "mark deleting, delete a leaf, unmark": (_BOTH, [
        *_DELETE_A_LEAF, "UPDATE sessionstore_sessions SET deleting = FALSE WHERE id = :sid"]),
    "mark deleting, delete a leaf, unmark by ON CONFLICT DO UPDATE": (_BOTH, [
        *_DELETE_A_LEAF,
        f"INSERT INTO sessionstore_sessions ({_session_columns(key=False)}) {_copy_of_session(key=False)}"
        " ON CONFLICT (tenant, id) DO UPDATE SET deleting = FALSE"]),
    "delete the session row, keeping its entries": (_BOTH, ["DELETE FROM sessionstore_sessions WHERE id = :sid"]),
    "rename the session away from its entries": (_BOTH, [
        "UPDATE sessionstore_sessions SET id = 'renamed' WHERE id = :sid"]),
    "move the session's key away from its entries": (_BOTH, [
        "UPDATE sessionstore_sessions SET key = key + 1000 WHERE id = :sid"]),
    "MERGE updating an entry": (_POSTGRESQL, [
        "MERGE INTO sessionstore_entries e USING (SELECT key FROM sessionstore_sessions WHERE id = :sid) s"
        f" ON e.session_key = s.key AND e.seq = 1 WHEN MATCHED THEN UPDATE SET payload = {_SWAPPED}"]),
    "MERGE deleting a leaf": (_POSTGRESQL, [
        "MERGE INTO sessionstore_entries e USING (SELECT key FROM sessionstore_sessions WHERE id = :sid) s"
        " ON e.session_key = s.key AND e.seq = 3 WHEN MATCHED THEN DELETE"]),
    "mark deleting, delete a leaf, unmark by MERGE": (_POSTGRESQL, [
        *_DELETE_A_LEAF,
        "MERGE INTO sessionstore_sessions t USING (SELECT CAST(:sid AS text) AS id) s ON t.id = s.id"
        " WHEN MATCHED THEN UPDATE SET deleting = FALSE"]),
    # Revision 0012: a new entry only at the end (an integer seq, the next one); the header fixed.
    # (A root, its run starting at itself: every other constraint of the row holds.)
    **{f"INSERT a forged entry at seq {seq}": (backends, [
        f"INSERT INTO sessionstore_entries (session_key, seq, entry_id, parent_seq, run_start, depth, ctx_depth, type,"
        f" payload) SELECT key, {seq}, 'forged', NULL, {seq}, 0, 0, 'message', {_SWAPPED}"
        f" FROM sessionstore_sessions WHERE id = :sid"])
       for seq, backends in (("1.5", _SQLITE), ("4.5", _SQLITE), ("'abc'", _SQLITE), ("-5", _BOTH), ("50", _BOTH))},
    **{f"UPDATE the session's {column}": (_BOTH, [
        f"UPDATE sessionstore_sessions SET {column} = {value} WHERE id = :sid"])
       for column, value in (("header", "'{\"type\": \"session\", \"version\": 3, \"id\": \"forged\"}'"),
                             ("cwd", "'/forged'"), ("version", "2"), ("created", "'2020-01-01T00:00:00.000Z'"),
                             ("parent_session", "'/forged.jsonl'"))},
    "TRUNCATE entries": (_POSTGRESQL, ["TRUNCATE sessionstore_entries"]),
    "TRUNCATE sessions CASCADE": (_POSTGRESQL, ["TRUNCATE sessionstore_sessions CASCADE"]),
}
_REFUSED_BY_FOREIGN_KEY = {("postgresql", "delete the session row, keeping its entries")}
"""PostgreSQL always checks foreign keys; SQLite's shell does not, and a trigger refuses it there."""


def _attacks() -> list[object]:
    return [
        pytest.param(backend.values[0], name, marks=backend.marks, id=f"{backend.id}: {name}")
        for backend in BACKENDS
        for name, (backends, _) in _ATTACKS.items()
        if backend.values[0] in backends
    ]


@pytest.fixture
def tree(store: SessionStore) -> str:
    """A session with two branches: a -> b -> c and a -> d (seq 0..3; the leaf is d)."""
    sid = store.create_session(cwd="/w")
    a = store.append_message(sid, user("a"))
    store.append_message(sid, assistant("b"))
    store.append_message(sid, user("c"))
    store.branch(sid, a)
    store.append_message(sid, user("d"))
    store.create_session(cwd="/w")  # a bystander
    return sid


def _seen(store: SessionStore, sid: str) -> tuple[list[Json], list[Json], bytes, SessionInfo, list[SessionInfo]]:
    """What readers see of ``sid``: its path, its entries, its export and its listing."""
    out = io.BytesIO()
    store.export_jsonl(sid, out)
    return store.path(sid), store.entries(sid), out.getvalue(), store.session(sid), store.list_sessions()


def _run_raw(store: SessionStore, statements: list[str], sid: str) -> None:
    """Run ``statements`` in one transaction as a user at a raw prompt would: SQLite through the
    ``sqlite3`` module with the shell's defaults (foreign keys off), PostgreSQL through psycopg."""
    if _dialect(store) == "sqlite":
        conn = sqlite3.connect(str(make_url(store.url).database), isolation_level=None)
        try:
            assert conn.execute("PRAGMA foreign_keys").fetchone() == (0,)
            conn.execute("BEGIN")
            try:
                for statement in statements:
                    conn.execute(statement, {"sid": sid})
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()
        return
    with _begin(store) as pg:
        for statement in statements:
            pg.execute(text(statement), {"sid": sid})


def _refused(store: SessionStore, sid: str, attack: str) -> None:
    seen = _seen(store, sid)
    refusal = "foreign key constraint" if (_dialect(store), attack) in _REFUSED_BY_FOREIGN_KEY else "append-only"
    with pytest.raises(Exception, match=refusal):
        _run_raw(store, _ATTACKS[attack][1], sid)
    assert _seen(store, sid) == seen


@pytest.mark.parametrize(("backend", "attack"), _attacks(), indirect=["backend"])
def test_raw_sql_cannot_swap_or_remove_an_entry_of_a_session_readers_see(
    store: SessionStore, tree: str, attack: str
) -> None:
    _refused(store, tree, attack)
    assert store.append_message(tree, user("after")) == store.path(tree)[-1]["id"]


def test_a_taken_entry_id_is_still_reported_as_taken_through_the_replace_guard(store: SessionStore, tree: str) -> None:
    """On SQLite the guard against REPLACE refuses a taken id before the unique index does; its message
    carries the index's, so that the store still names the id (or draws another when it chose it)."""
    taken = store.path(tree)[-1]["id"]
    with pytest.raises(InvalidInputError, match=f"already has an entry '{taken}'"):
        store.append_message(tree, user("again"), entry_id=taken)


def test_a_session_marked_deleting_by_raw_sql_stays_gone_until_imported_again(
    store: SessionStore, tree: str, tmp_path: Path
) -> None:
    """Each step committed on its own: the marked session is gone for every reader at once, entries
    may then go one by one, and the mark cannot be cleared; importing the export brings it back."""
    exported = tmp_path / "tree.jsonl"
    with exported.open("wb") as fp:
        store.export_jsonl(tree, fp)
    path = store.path(tree)
    for statement in _DELETE_A_LEAF:
        _run_raw(store, [statement], tree)
    with pytest.raises(Exception, match="append-only: a session marked deleting stays marked"):
        _run_raw(store, ["UPDATE sessionstore_sessions SET deleting = FALSE WHERE id = :sid"], tree)
    for read in (store.path, store.entries, store.session):
        with pytest.raises(SessionNotFoundError):
            read(tree)
    assert tree not in [s.id for s in store.list_sessions()]
    result = CliRunner().invoke(cli, ["--db", store.url, "import", str(exported)])  # no --replace needed
    assert result.exit_code == 0, result.output
    assert store.path(tree) == path
    store.delete_session(tree)
    assert tree not in [s.id for s in store.list_sessions()]


_TRIGGERS_BEFORE_0005 = {
    "sqlite": {"entries_append_only_update", "entries_append_only_delete"},
    "postgresql": {"entries_append_only", "entries_no_truncate"},
}


def _triggers(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            return set(conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'trigger'").scalars())
        return set(conn.exec_driver_sql("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal").scalars())


@pytest.mark.parametrize("revision", ["0004", "0003", "0002", "0001"])
def test_a_database_at_an_earlier_revision_keeps_every_entry_through_the_head_and_back(
    store: SessionStore, tree: str, revision: str, tmp_path: Path
) -> None:
    """Down to ``revision`` (0005's guards and 0006's tables go), then up again in place: every session reads as before,
    the guards are back, and appends, delete_session and import --replace work."""
    from alembic import command

    from tests.paths import PI_FILES

    imported = store.import_jsonl(PI_FILES["before-compaction"]).session_id
    seen = {sid: _seen(store, sid) for sid in (tree, imported)}
    engine = make_engine(store.url)
    config = migrate.alembic_config()
    try:
        with engine.connect() as conn, migrate.foreign_keys_off(conn), conn.begin():
            config.attributes["connection"] = conn
            command.downgrade(config, revision)
        assert _triggers(engine) == _TRIGGERS_BEFORE_0005[engine.dialect.name]
        migrate.upgrade(engine)
        with engine.connect() as conn:
            assert migrate.current_revision(conn) == SCHEMA_REVISION
    finally:
        engine.dispose()
    with SessionStore(store.url) as again:
        for sid, before in seen.items():
            now = _seen(again, sid)
            if _dialect(again) == "postgresql" and revision == "0001":  # jsonb kept the objects, not the text
                assert now[:2] + now[3:] == before[:2] + before[3:]
                assert [json.loads(line) for line in now[2].splitlines()] == [
                    json.loads(line) for line in before[2].splitlines()
                ]
            else:
                assert now == before
        _refused(again, tree, "mark deleting, delete a leaf, unmark")
        if _dialect(again) == "sqlite":
            _refused(again, tree, "REPLACE INTO over an entry's id at a new seq")
        assert again.append_message(tree, user("after")) == again.path(tree)[-1]["id"]
        again.delete_session(tree)
        exported = tmp_path / "imported.jsonl"
        with exported.open("wb") as fp:
            again.export_jsonl(imported, fp)
        upgraded = _seen(again, imported)
        result = CliRunner().invoke(cli, ["--db", again.url, "import", "--replace", str(exported)])
        assert result.exit_code == 0, result.output
        assert _seen(again, imported)[:3] == upgraded[:3]
        assert {s.id for s in again.list_sessions()} == {s.id for s in seen[imported][4]} - {tree}


def test_a_new_sqlite_database_gets_8_kib_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    new = tmp_path / "new.db"
    with SessionStore(f"sqlite:///{new}"):
        pass
    old = tmp_path / "old.db"
    conn = sqlite3.connect(old)
    conn.execute("CREATE TABLE other_library (x)")  # written before: its page size stays
    conn.commit()
    conn.close()
    with SessionStore(f"sqlite:///{old}"):
        pass
    assert [sqlite3.connect(p).execute("PRAGMA page_size").fetchone()[0] for p in (new, old)] == [8192, 4096]


def test_an_appended_assistant_message_is_stored_with_pis_integral_costs(tmp_path: Path) -> None:
    """Costs stay JSON integers where they are integral (``JSON.stringify`` writes 0, not 0.0)."""
    from sessionstore import assistant_message

    url = f"sqlite:///{tmp_path / 'c.db'}"
    with SessionStore(url) as store:
        sid = store.create_session(cwd="/w")
        store.append_message(sid, assistant_message([{"type": "text", "text": "a"}], api="x", provider="p",
                                                    model="m"))
        out = io.BytesIO()
        store.export_jsonl(sid, out)
    assert b'"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}' in out.getvalue()

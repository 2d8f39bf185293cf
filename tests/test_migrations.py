"""Revision 0006 on both backends: databases written at every earlier revision migrate in place with
every session and entry fact; a database shared with other libraries' tables and Alembic upgrades;
the append-only guards hold on the new tables.

The databases are built as each revision's code wrote them: ``migrate.upgrade(engine, N)``, then rows
inserted with raw SQL in revision N's columns, with the revision recorded in ``alembic_version`` as
that code kept it. The facts an entry row carried are computed here by walking the parent links.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, create_engine, inspect, text

from sessionstore.errors import SchemaTooNewError
from sessionstore.store import migrate
from sessionstore.store.engine import make_engine
from sessionstore.store.migrate import SCHEMA_REVISION
from tests.conftest import BACKENDS, _admin_url, _database_url, drop_pg_database
from tests.requirements import POSTGRES

Json = dict[str, Any]
EARLIER = ["0001", "0002", "0003", "0004", "0005"]


# -- databases ---------------------------------------------------------------------------------


# -- sessions as pi wrote them, and the facts each row carried -----------------------------------

T0 = 1735689600000


def _ts(i: int) -> str:
    return f"2025-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z"


def _message(eid: str, parent: str | None, i: int, role: str, text_: str) -> Json:
    message: Json = {"role": role, "content": [{"type": "text", "text": text_}], "timestamp": T0 + i * 1000}
    if role == "assistant":
        message.update(api="anthropic-messages", provider="anthropic", model="claude-opus", stopReason="stop",
                       usage={"input": 3, "output": 5, "totalTokens": 8})
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": _ts(i), "message": message}


def _entry(kind: str, eid: str, parent: str | None, i: int, **fields: Any) -> Json:
    return {"type": kind, "id": eid, "parentId": parent, "timestamp": _ts(i), **fields}


@dataclass
class Session:
    id: str
    created: str
    entries: list[Json]
    leaf: str | None
    deleting: bool = False
    header: Json = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.header = {"type": "session", "version": 3, "id": self.id, "timestamp": self.created, "cwd": "/w/ünï"}


def _sessions() -> list[Session]:
    linear = [
        _entry("model_change", "l0", None, 0, provider="anthropic", modelId="claude-opus"),
        _message("l1", "l0", 1, "user", "Grüße, 世界 🎉: fix the \"bug\" in a\\b"),
        _message("l2", "l1", 2, "assistant", "Done — ✓"),
        _message("l3", "l2", 3, "user", "thanks"),
        _message("l4", "l3", 4, "assistant", "\u2028 line separator and tab\t"),
    ]
    # a -> b -> c, a -> d (seq 3, a leaf), b -> e -> f -> label (the leaf): run_start 0 0 0 3 4 4 4
    branched = [
        _message("a", None, 0, "user", "a"),
        _message("b", "a", 1, "assistant", "b"),
        _message("c", "b", 2, "user", "c"),
        _message("d", "a", 3, "user", "d"),
        _message("e", "b", 4, "user", "e"),
        _message("f", "e", 5, "assistant", "f"),
        _entry("label", "g", "f", 6, targetId="c", label="keep ✓"),
    ]
    compacted = [
        _entry("model_change", "k0", None, 0, provider="openai", modelId="gpt"),
        _message("k1", "k0", 1, "user", "first question"),
        _message("k2", "k1", 2, "assistant", "first answer"),
        _message("k3", "k2", 3, "user", "second question"),
        _message("k4", "k3", 4, "assistant", "second answer"),
        _entry("compaction", "k5", "k4", 5, summary="the user asked twice", firstKeptEntryId="k3", tokensBefore=900),
        _entry("thinking_level_change", "k6", "k5", 6, thinkingLevel="high"),
        _message("k7", "k6", 7, "user", "third question"),
        _entry("session_info", "k8", "k7", 8, name="  Compacted ünïcode  "),
        _message("k9", "k8", 9, "assistant", "third answer"),
        # a branch back to before the compaction
        _message("k10", "k2", 10, "user", "another second question"),
    ]
    gone = [_message("x0", None, 0, "user", "gone"), _message("x1", "x0", 1, "assistant", "gone too")]
    return [
        Session("linear-1", "2025-01-03T00:00:00.000Z", linear, "l4"),
        Session("branched-2", "2025-01-01T00:00:00.000Z", branched, "g"),
        Session("compacted-3", "2025-01-02T00:00:00.000Z", compacted, "k9"),
        Session("empty-4", "2025-01-02T00:00:00.000Z", [], None),
        Session("deleting-5", "2025-01-01T12:00:00.000Z", gone, "x1", deleting=True),
    ]


@dataclass(frozen=True)
class Facts:
    seq: int
    entry_id: str
    parent_seq: int | None
    run_start: int
    depth: int
    ctx_depth: int
    compaction_seq: int | None
    model_seq: int | None
    thinking_seq: int | None
    type: str


def _facts(entries: list[Json]) -> list[Facts]:
    """Each entry's facts, by walking its parent links to the root."""
    seq_of = {e["id"]: i for i, e in enumerate(entries)}

    def path(seq: int) -> list[int]:  # root first
        out: list[int] = []
        at: int | None = seq
        while at is not None:
            out.append(at)
            parent = entries[at]["parentId"]
            at = None if parent is None else seq_of[parent]
        return out[::-1]

    def latest(on_path: list[int], wanted: Any) -> int | None:
        found = [s for s in on_path if wanted(entries[s])]
        return found[-1] if found else None

    facts = []
    for seq, e in enumerate(entries):
        on_path = path(seq)
        parent_seq = on_path[-2] if len(on_path) > 1 else None
        run_start = seq
        while run_start > 0 and path(run_start)[-2:-1] == [run_start - 1]:
            run_start -= 1
        compaction = latest(on_path, lambda x: x["type"] == "compaction")
        ctx_depth = 0
        if compaction is not None:
            kept = seq_of.get(entries[compaction]["firstKeptEntryId"])
            ctx_depth = on_path.index(kept) if kept in on_path else on_path.index(compaction)
        facts.append(Facts(
            seq=seq, entry_id=e["id"], parent_seq=parent_seq, run_start=run_start, depth=len(on_path) - 1,
            ctx_depth=ctx_depth, compaction_seq=compaction,
            model_seq=latest(on_path, lambda x: x["type"] == "model_change"
                             or (x["type"] == "message" and x["message"]["role"] == "assistant")),
            thinking_seq=latest(on_path, lambda x: x["type"] == "thinking_level_change"), type=e["type"],
        ))
    return facts


def _listing(session: Session) -> Json:
    messages = [e["message"] for e in session.entries if e["type"] == "message"]
    names = [e["name"].strip() for e in session.entries if e["type"] == "session_info"]
    users = [m["content"][0]["text"] for m in messages if m["role"] == "user"]
    return {
        "entry_count": len(session.entries), "message_count": len(messages), "name": names[-1] if names else None,
        "first_message": users[0] if users else None,
        "modified_ms": max((m["timestamp"] for m in messages), default=None),
    }


def _line(entry: Json) -> str:
    """The entry's line as pi writes it (JSON.stringify: compact, UTF-8)."""
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


# -- writing them as revision N's code did -------------------------------------------------------


def _build(engine: Engine, revision: str, sessions: list[Session]) -> None:
    migrate.upgrade(engine, revision)
    dialect = engine.dialect.name
    as_json = "CAST(:{} AS jsonb)" if dialect == "postgresql" and revision == "0001" else (
        "CAST(:{} AS json)" if dialect == "postgresql" else ":{}")
    leaf_columns = revision >= "0003"
    with engine.begin() as conn:
        for s in sessions:
            facts = _facts(s.entries)
            leaf = next((f for f in facts if f.entry_id == s.leaf), None)
            values: Json = {
                "id": s.id, "version": 3, "cwd": s.header["cwd"], "created": s.created, "parent_session": None,
                "header": _line(s.header), "leaf_id": s.leaf, "leaf_seq": leaf and leaf.seq, **_listing(s),
                "deleting": s.deleting,
            }
            if leaf_columns:
                values.update(leaf_depth=leaf and leaf.depth, leaf_ctx_depth=leaf and leaf.ctx_depth,
                              leaf_compaction_seq=leaf and leaf.compaction_seq, leaf_model_seq=leaf and leaf.model_seq,
                              leaf_thinking_seq=leaf and leaf.thinking_seq)
            placeholders = [as_json.format(k) if k == "header" else f":{k}" for k in values]
            conn.execute(text(f"INSERT INTO sessions ({', '.join(values)}) VALUES ({', '.join(placeholders)})"),
                         values)
            for f, e in zip(facts, s.entries, strict=True):
                row = {
                    "session_id": s.id, "seq": f.seq, "entry_id": f.entry_id, "parent_id": e["parentId"],
                    "parent_seq": f.parent_seq, "depth": f.depth, "type": f.type,
                    "role": e["message"]["role"] if e["type"] == "message" else None, "timestamp": e["timestamp"],
                    "payload": _line(e), "ctx_depth": f.ctx_depth, "compaction_seq": f.compaction_seq,
                    "model_seq": f.model_seq, "thinking_seq": f.thinking_seq,
                }
                placeholders = [as_json.format(k) if k == "payload" else f":{k}" for k in row]
                conn.execute(text(f"INSERT INTO entries ({', '.join(row)}) VALUES ({', '.join(placeholders)})"), row)
        # Revisions 0001-0005 were recorded in Alembic's default version table.
        conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL,"
                          " CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"))
        conn.execute(text("INSERT INTO alembic_version SELECT version_num FROM sessionstore_alembic_version"))
        conn.execute(text("DROP TABLE sessionstore_alembic_version"))


def _tables(conn: Connection) -> set[str]:
    if conn.dialect.name == "sqlite":
        return set(conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table'").scalars())
    return set(conn.exec_driver_sql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").scalars())


def _check_migrated(engine: Engine, sessions: list[Session], revision: str) -> None:
    kept = [s for s in sessions if not s.deleting]
    pg_jsonb = engine.dialect.name == "postgresql" and revision == "0001"  # jsonb kept objects, not text
    with engine.connect() as conn:
        assert migrate.current_revision(conn) == SCHEMA_REVISION
        versions = conn.execute(text("SELECT version_num FROM sessionstore_alembic_version")).scalars().all()
        assert versions == [SCHEMA_REVISION]
        assert not {"alembic_version", "sessions", "entries"} & _tables(conn)
        rows = {r.id: r._asdict() for r in conn.execute(text(
            "SELECT key, id, version, cwd, created, parent_session, CAST(header AS TEXT) AS header, leaf_id, leaf_seq,"
            " leaf_depth, leaf_ctx_depth, leaf_run_start, leaf_compaction_seq, leaf_model_seq, leaf_thinking_seq,"
            " entry_count, message_count, name, first_message, modified_ms, deleting FROM sessionstore_sessions"))}
        # Sessions marked deleting were gone for readers and are not copied.
        assert set(rows) == {s.id for s in kept}
        # Keys 1.. in order of creation (then id).
        by_creation = sorted(kept, key=lambda s: (s.created, s.id))
        assert [rows[s.id]["key"] for s in by_creation] == list(range(1, len(kept) + 1))
        for s in kept:
            row = rows[s.id]
            facts = _facts(s.entries)
            leaf = next((f for f in facts if f.entry_id == s.leaf), None)
            assert json.loads(row.pop("header")) == s.header
            assert row == {
                "key": row["key"], "id": s.id, "version": 3, "cwd": "/w/ünï", "created": s.created,
                "parent_session": None, "leaf_id": s.leaf, "leaf_seq": leaf and leaf.seq,
                "leaf_depth": leaf and leaf.depth, "leaf_ctx_depth": leaf and leaf.ctx_depth,
                "leaf_run_start": leaf and leaf.run_start, "leaf_compaction_seq": leaf and leaf.compaction_seq,
                "leaf_model_seq": leaf and leaf.model_seq, "leaf_thinking_seq": leaf and leaf.thinking_seq,
                **_listing(s), "deleting": False,
            }
            stored = conn.execute(text(
                "SELECT seq, entry_id, parent_seq, run_start, depth, ctx_depth, compaction_seq, model_seq,"
                " thinking_seq, type, CAST(payload AS TEXT) FROM sessionstore_entries WHERE session_key = :k"
                " ORDER BY seq"),
                {"k": row["key"]}).all()
            assert [Facts(*r[:10]) for r in stored] == facts
            payloads = [r[10] for r in stored]
            if pg_jsonb:
                assert [json.loads(p) for p in payloads] == s.entries
            else:
                assert payloads == [_line(e) for e in s.entries]  # byte for byte
        assert conn.execute(text("SELECT count(*) FROM sessionstore_entries")).scalar() == sum(
            len(s.entries) for s in kept)


def _run_starts_are_not_all_zero(sessions: list[Session]) -> None:
    branched = _facts(next(s for s in sessions if s.id == "branched-2").entries)
    assert [f.run_start for f in branched] == [0, 0, 0, 3, 4, 4, 4]


# -- tests ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("revision", EARLIER)
@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_a_database_written_at_an_earlier_revision_migrates_in_place_with_every_fact(
    engine: Engine, revision: str
) -> None:
    sessions = _sessions()
    _run_starts_are_not_all_zero(sessions)
    _build(engine, revision, sessions)
    with engine.connect() as conn:
        assert migrate.current_revision(conn) == revision  # read from alembic_version until the upgrade
    assert migrate.upgrade(engine) == SCHEMA_REVISION
    _check_migrated(engine, sessions, revision)


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_downgrade_gives_back_the_rows_of_0005_and_upgrading_again_the_same_facts(engine: Engine) -> None:
    from alembic import command

    sessions = _sessions()
    _build(engine, "0005", sessions)
    columns = ("session_id, seq, entry_id, parent_id, parent_seq, depth, type, role, timestamp,"
               " CAST(payload AS TEXT), ctx_depth, compaction_seq, model_seq, thinking_seq")
    session_columns = "id, cwd, created, CAST(header AS TEXT), leaf_id, leaf_seq, leaf_depth, entry_count, name"
    with engine.connect() as conn:
        entries_query = f"SELECT {columns} FROM entries WHERE session_id <> 'deleting-5' ORDER BY 1, 2"
        before = conn.execute(text(entries_query)).all()
        sessions_query = f"SELECT {session_columns} FROM sessions WHERE NOT deleting ORDER BY 1"
        before_sessions = conn.execute(text(sessions_query)).all()
    migrate.upgrade(engine)
    config = migrate.alembic_config()
    with engine.connect() as conn, migrate.foreign_keys_off(conn), conn.begin():
        config.attributes["connection"] = conn
        command.downgrade(config, "0005")
    with engine.connect() as conn:
        assert migrate.current_revision(conn) == "0005"
        assert conn.execute(text(f"SELECT {columns} FROM entries ORDER BY 1, 2")).all() == before
        assert conn.execute(text(f"SELECT {session_columns} FROM sessions ORDER BY 1")).all() == before_sessions
        assert not {"sessionstore_sessions", "sessionstore_entries"} & _tables(conn)
    assert migrate.upgrade(engine) == SCHEMA_REVISION
    _check_migrated(engine, sessions, "0005")


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_new_session_keys_follow_the_copied_ones(engine: Engine) -> None:
    _build(engine, "0005", _sessions())
    migrate.upgrade(engine)
    with engine.begin() as conn:
        key = conn.execute(text(
            "INSERT INTO sessionstore_sessions (tenant, id, version, cwd, created, header, entry_count,"
            " message_count, deleting) VALUES ('default', 'new', 3, '/w', 'ts', '{}', 0, 0, FALSE) RETURNING key"
        )).scalar_one()
        copied = conn.execute(text("SELECT max(key) FROM sessionstore_sessions WHERE id <> 'new'")).scalar_one()
        assert key == copied + 1


_FOREIGN = {
    # Google ADK / the OpenAI Agents SDK: tables of their own in the same database.
    "sessions": "CREATE TABLE sessions (app_name VARCHAR(128), user_id VARCHAR(128), id VARCHAR(128), state TEXT,"
                " PRIMARY KEY (app_name, user_id, id))",
    "agent_sessions": "CREATE TABLE agent_sessions (session_id TEXT PRIMARY KEY, created_at TEXT)",
    "agent_messages": "CREATE TABLE agent_messages (id INTEGER PRIMARY KEY, session_id TEXT, message_data TEXT)",
    "alembic_version": "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)",
    "entries": "CREATE TABLE entries (id INTEGER PRIMARY KEY, body TEXT)",
}


@pytest.mark.parametrize("foreign_revision", ["abc123", "0003"])
@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_a_database_shared_with_other_libraries_gets_the_schema_and_leaves_theirs_alone(
    engine: Engine, foreign_revision: str
) -> None:
    """Another library's ``sessions`` and Alembic ``alembic_version`` (even one holding a revision
    that reads like ours, without our tables) stay as they were."""
    tables = dict(_FOREIGN)
    if foreign_revision == "0003":
        del tables["entries"]  # an 0003 of ours would have had both tables
    with engine.begin() as conn:
        for ddl in tables.values():
            conn.execute(text(ddl))
        conn.execute(text("INSERT INTO sessions VALUES ('app', 'u', 's1', '{\"k\": 1}')"))
        conn.execute(text("INSERT INTO agent_messages VALUES (1, 's1', '{\"role\": \"user\"}')"))
        conn.execute(text("INSERT INTO alembic_version VALUES (:v)"), {"v": foreign_revision})
        assert migrate.current_revision(conn) is None
    assert migrate.upgrade(engine) == SCHEMA_REVISION
    assert migrate.upgrade(engine) == SCHEMA_REVISION  # and again: nothing to do
    with engine.connect() as conn:
        migrate.check(conn)
        ours = {t for t in _tables(conn) if t.startswith("sessionstore_")}
        assert {"sessionstore_sessions", "sessionstore_entries", "sessionstore_alembic_version"} <= ours
        assert set(tables) | ours == _tables(conn)
        assert conn.execute(text("SELECT * FROM sessions")).all() == [("app", "u", "s1", '{"k": 1}')]
        assert conn.execute(text("SELECT * FROM agent_messages")).all() == [(1, "s1", '{"role": "user"}')]
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [foreign_revision]


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_our_old_revision_moves_out_of_alembic_version_and_a_newer_one_of_ours_is_refused(engine: Engine) -> None:
    _build(engine, "0004", _sessions())
    with engine.begin() as conn:
        migrate.adopt_legacy_version(conn)
        assert "alembic_version" not in _tables(conn)
        assert migrate.current_revision(conn) == "0004"
        conn.execute(text("UPDATE sessionstore_alembic_version SET version_num = '9999'"))
    with pytest.raises(SchemaTooNewError, match="newer version"):
        migrate.upgrade(engine)


# -- the append-only guards on the new tables -----------------------------------------------------


def _snapshot(conn: Connection) -> tuple[Sequence[Any], Sequence[Any]]:
    return (
        conn.execute(text("SELECT key, id, leaf_id, deleting, entry_count FROM sessionstore_sessions"
                          " ORDER BY key")).all(),
        conn.execute(text("SELECT session_key, seq, entry_id, parent_seq, CAST(payload AS TEXT)"
                          " FROM sessionstore_entries ORDER BY session_key, seq")).all(),
    )


def _run_raw(engine: Engine, statements: list[str], sid: str) -> None:
    """As a user at a raw prompt: SQLite through ``sqlite3`` with the shell's defaults (foreign keys
    off), PostgreSQL through psycopg."""
    if engine.dialect.name == "sqlite":
        conn = sqlite3.connect(str(engine.url.database), isolation_level=None)
        try:
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
    with engine.begin() as pg:
        for statement in statements:
            pg.execute(text(statement), {"sid": sid})


def _attacks() -> list[Any]:
    from tests.test_schema import _ATTACKS

    return [
        pytest.param(backend.values[0], name, marks=backend.marks, id=f"{backend.id}: {name}")
        for backend in BACKENDS
        for name, (backends, _) in _ATTACKS.items()
        if backend.values[0] in backends
    ]


@pytest.mark.parametrize(("backend", "attack"), _attacks(), indirect=["backend"])
def test_raw_sql_cannot_swap_or_remove_an_entry_of_a_migrated_session(engine: Engine, attack: str) -> None:
    """The attacks of tests/test_schema.py (revision 0005's) against a session that revision 0006
    copied: a -> b -> c, a -> d (seq 3, a leaf), and more."""
    from tests.test_schema import _ATTACKS, _REFUSED_BY_FOREIGN_KEY

    _build(engine, "0005", _sessions())
    migrate.upgrade(engine)
    with engine.connect() as conn:
        before = _snapshot(conn)
    refusal = "foreign key constraint" if (engine.dialect.name, attack) in _REFUSED_BY_FOREIGN_KEY else "append-only"
    with pytest.raises(Exception, match=refusal):
        _run_raw(engine, _ATTACKS[attack][1], "branched-2")
    with engine.connect() as conn:
        assert _snapshot(conn) == before


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_a_marked_session_loses_its_entries_and_row_but_cannot_be_unmarked(engine: Engine) -> None:
    _build(engine, "0005", _sessions())
    migrate.upgrade(engine)
    key = "(SELECT key FROM sessionstore_sessions WHERE id = :sid)"
    _run_raw(engine, ["UPDATE sessionstore_sessions SET deleting = TRUE WHERE id = :sid"], "branched-2")
    with pytest.raises(Exception, match="append-only: a session marked deleting stays marked"):
        _run_raw(engine, ["UPDATE sessionstore_sessions SET deleting = FALSE WHERE id = :sid"], "branched-2")
    _run_raw(engine, [f"DELETE FROM sessionstore_entries WHERE session_key = {key} AND seq = 3"], "branched-2")
    _run_raw(engine, [f"DELETE FROM sessionstore_entries WHERE session_key = {key}",
                      "DELETE FROM sessionstore_sessions WHERE id = :sid"], "branched-2")
    with engine.connect() as conn:
        assert "branched-2" not in {r[1] for r in _snapshot(conn)[0]}


def test_a_taken_entry_id_is_refused_with_sqlites_own_message_for_the_unique_index(tmp_path: Path) -> None:
    """The store recognises that text to draw another id or name the taken one."""
    engine = make_engine(f"sqlite:///{tmp_path / 's.db'}")
    try:
        _build(engine, "0005", _sessions())
        migrate.upgrade(engine)
        with pytest.raises(Exception) as refused, engine.begin() as conn:
            conn.execute(text(
                "INSERT INTO sessionstore_entries (session_key, seq, entry_id, parent_seq, run_start, depth, ctx_depth,"
                " type, payload) SELECT key, entry_count, 'a', NULL, entry_count, 0, 0, 'custom', '{}'"
                " FROM sessionstore_sessions WHERE id = 'branched-2'"))  # at the next seq, as the store appends
        assert "UNIQUE constraint failed: sessionstore_entries.session_key, sessionstore_entries.entry_id" in str(
            refused.value)
    finally:
        engine.dispose()


def test_a_new_database_gets_the_same_schema_as_an_upgraded_one(tmp_path: Path) -> None:
    """Created directly at the head revision or through 0001..0006: the same tables, indexes and triggers."""
    schemas = []
    for name, revision in (("new", None), ("old", "0001")):
        engine = make_engine(f"sqlite:///{tmp_path / name}.db")
        if revision:
            migrate.upgrade(engine, revision)
        migrate.upgrade(engine)
        with engine.connect() as conn:
            schemas.append(sorted(conn.exec_driver_sql("SELECT type, name, tbl_name, sql FROM sqlite_master").all()))
        engine.dispose()
    assert schemas[0] == schemas[1]


@pytest.mark.requires(POSTGRES)
def test_a_new_postgresql_database_gets_the_same_schema_as_an_upgraded_one(tmp_path: Path) -> None:
    query = """
        SELECT 'column', table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' '
               || is_identity || ' ' || coalesce(column_default, '')
        FROM information_schema.columns WHERE table_schema = 'public'
        UNION ALL SELECT 'constraint', conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
        WHERE connamespace = 'public'::regnamespace
        UNION ALL SELECT 'index', indexdef FROM pg_indexes WHERE schemaname = 'public'
        UNION ALL SELECT 'trigger', pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
        UNION ALL SELECT 'function', pg_get_functiondef(p.oid) FROM pg_proc p
        WHERE pronamespace = 'public'::regnamespace
        ORDER BY 1, 2"""
    schemas = []
    for revision in (None, "0001"):
        name = f"sessionstore_mig_{uuid.uuid4().hex[:12]}"
        admin = create_engine(_admin_url(), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        engine = make_engine(_database_url(name))
        try:
            if revision:
                migrate.upgrade(engine, revision)
            migrate.upgrade(engine)
            with engine.connect() as conn:
                schemas.append(conn.execute(text(query)).all())
        finally:
            engine.dispose()
            drop_pg_database(name)
    assert schemas[0] == schemas[1]



def test_revision_0007_computes_the_listing_facts_again_as_pi_lists_a_session(engine: Engine) -> None:
    """A session stored at 0006 with the old listing rule (the first user text even when empty, only
    object messages counted) lists as pi lists it once 0007 has run."""
    migrate.upgrade(engine, "0006")
    image = {"role": "user", "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}],
             "timestamp": T0 + 5}
    entries = [
        {"type": "message", "id": "a", "parentId": None, "timestamp": _ts(1), "message": image},
        {"type": "message", "id": "b", "parentId": "a", "timestamp": _ts(2), "message": "not an object"},
        {"type": "message", "id": "c", "parentId": "b", "timestamp": _ts(3),
         "message": {"role": "user", "content": [{"type": "text", "text": "hello"}, {"type": "text"}]}},
    ]
    header = json.dumps({"type": "session", "version": 3, "id": "s7", "timestamp": _ts(0), "cwd": "/w"})
    payload = "CAST(:payload AS json)" if engine.dialect.name == "postgresql" else ":payload"
    with engine.begin() as conn:
        key = conn.execute(text(
            "INSERT INTO sessionstore_sessions (id, version, cwd, created, header, entry_count, message_count,"
            " first_message, modified_ms, deleting) VALUES ('s7', 3, '/w', :created, "
            + ("CAST(:header AS json)" if engine.dialect.name == "postgresql" else ":header")
            + ", 3, 2, '', :modified, FALSE) RETURNING key"),
            {"created": _ts(0), "header": header, "modified": T0 + 5}).scalar_one()
        for seq, entry in enumerate(entries):
            conn.execute(text(
                "INSERT INTO sessionstore_entries (session_key, seq, entry_id, parent_seq, run_start, depth,"
                f" ctx_depth, type, payload) VALUES (:key, :seq, :eid, :parent, 0, :seq, 0, 'message', {payload})"),
                {"key": key, "seq": seq, "eid": entry["id"], "parent": None if seq == 0 else seq - 1,
                 "payload": json.dumps(entry)})
    migrate.upgrade(engine)
    with engine.connect() as conn:
        row = conn.execute(text("SELECT message_count, first_message, modified_ms FROM sessionstore_sessions"
                                " WHERE id = 's7'")).one()
    # every message entry counts; the first NON-EMPTY user text, blocks joined as JavaScript joins them;
    # the last activity: the entry's date where the message has no numeric timestamp
    assert tuple(row) == (3, "hello ", T0 + 3_000)


def test_revision_0008_backfills_the_catalog_of_every_session(engine: Engine) -> None:
    """A session stored at 0007 gets pi's stats counters, its usage sums and its search texts when 0008
    runs, the same as the store writes them for the same entries."""
    from sessionstore.api import SessionStore

    migrate.upgrade(engine, "0007")
    usage = {"input": 10, "output": 5, "cacheRead": 2, "cacheWrite": 1, "totalTokens": 18,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.25}}
    entries = [
        {"type": "message", "id": "a", "parentId": None, "timestamp": _ts(1),
         "message": {"role": "user", "content": "Find the Needle", "timestamp": T0 + 1}},
        {"type": "message", "id": "b", "parentId": "a", "timestamp": _ts(2),
         "message": {"role": "assistant", "provider": "anthropic", "model": "claude", "usage": usage,
                     "content": [{"type": "thinking", "thinking": "hidden thought"},
                                 {"type": "toolCall", "id": "t", "name": "grep", "arguments": {"q": "x"}}],
                     "stopReason": "toolUse", "timestamp": T0 + 2}},
        {"type": "message", "id": "c", "parentId": "b", "timestamp": _ts(3),
         "message": {"role": "toolResult", "toolCallId": "t", "toolName": "grep", "isError": False,
                     "content": [{"type": "text", "text": "found it"}], "timestamp": T0 + 3}},
    ]
    header = json.dumps({"type": "session", "version": 3, "id": "s8", "timestamp": _ts(0), "cwd": "/w"})
    pg = engine.dialect.name == "postgresql"
    with engine.begin() as conn:
        key = conn.execute(text(
            "INSERT INTO sessionstore_sessions (id, version, cwd, created, header, entry_count, message_count,"
            " first_message, modified_ms, leaf_id, leaf_seq, leaf_depth, leaf_ctx_depth, leaf_run_start, deleting)"
            " VALUES ('s8', 3, '/w', :created, " + ("CAST(:header AS json)" if pg else ":header")
            + ", 3, 3, 'Find the Needle', :modified, 'c', 2, 2, 0, 0, FALSE) RETURNING key"),
            {"created": _ts(0), "header": header, "modified": T0 + 2}).scalar_one()
        for seq, entry in enumerate(entries):
            conn.execute(text(
                "INSERT INTO sessionstore_entries (session_key, seq, entry_id, parent_seq, run_start, depth,"
                " ctx_depth, model_seq, type, payload) VALUES (:key, :seq, :eid, :parent, 0, :seq, 0, :model,"
                f" 'message', {'CAST(:payload AS json)' if pg else ':payload'})"),
                {"key": key, "seq": seq, "eid": entry["id"], "parent": None if seq == 0 else seq - 1,
                 "model": 1 if seq >= 1 else None, "payload": json.dumps(entry)})
    migrate.upgrade(engine)
    with engine.connect() as conn:
        counters = conn.execute(text("SELECT user_messages, assistant_messages, tool_results, tool_calls"
                                     " FROM sessionstore_sessions WHERE id = 's8'")).one()
        sums = conn.execute(text("SELECT model_key, day, entries, input, output, cache_read, cache_write, cost"
                                 " FROM sessionstore_usage")).all()
        searched = conn.execute(text("SELECT seq, role, text, extra FROM sessionstore_search ORDER BY seq")).all()
    assert tuple(counters) == (1, 1, 1, 1)
    assert [tuple(r) for r in sums] == [("anthropic/claude", _ts(2)[:10], 1, 10, 5, 2, 1, 0.25)]
    assert [tuple(r) for r in searched] == [(0, "user", "find the needle", ""),
                                            (1, "assistant", "", 'hidden thought grep {"q":"x"}'),
                                            (2, "toolResult", "", "grep found it")]
    with SessionStore(engine.url.render_as_string(hide_password=False)) as store:
        assert [r.session.id for r in store.search("needle")] == ["s8"]
        assert [r.session.id for r in store.search("hidden", everything=True)] == ["s8"]
        assert store.search("hidden") == []


def test_revision_0010_gives_every_session_its_activity_time_and_downgrade_drops_it(engine: Engine) -> None:
    """Sessions stored at 0009 get ``active_ms``: the latest of the header's time, every entry's own
    timestamp (a label's too, which pi's modified ignores) and pi's modified (a message's own later
    time); a session without entries gets its header's time. Downgrading to 0009 drops the column and
    upgrading again computes the same."""
    from alembic import command

    migrate.upgrade(engine, "0009")
    pg = engine.dialect.name == "postgresql"
    entries = [
        {"type": "message", "id": "a", "parentId": None, "timestamp": _ts(1),
         "message": {"role": "user", "content": "hi", "timestamp": T0 + 30_000}},  # pi's modified: later
        {"type": "label", "id": "b", "parentId": "a", "timestamp": _ts(50), "targetId": "a", "label": "x"},
        {"type": "custom", "id": "c", "parentId": "b", "timestamp": "not a date", "customType": "k"},
    ]
    with engine.begin() as conn:
        for sid, created, rows, modified in (("s10", _ts(0), entries, T0 + 30_000), ("empty", _ts(7), [], None)):
            header = json.dumps({"type": "session", "version": 3, "id": sid, "timestamp": created, "cwd": "/w"})
            key = conn.execute(text(
                "INSERT INTO sessionstore_sessions (id, version, cwd, created, header, entry_count, message_count,"
                " modified_ms, deleting) VALUES (:sid, 3, '/w', :created, "
                + ("CAST(:header AS json)" if pg else ":header") + ", :count, 1, :modified, FALSE) RETURNING key"),
                {"sid": sid, "created": created, "header": header, "count": len(rows), "modified": modified},
            ).scalar_one()
            for seq, entry in enumerate(rows):
                conn.execute(text(
                    "INSERT INTO sessionstore_entries (session_key, seq, entry_id, parent_seq, run_start, depth,"
                    f" ctx_depth, type, payload) VALUES (:key, :seq, :eid, :parent, 0, :seq, 0, :type,"
                    f" {'CAST(:payload AS json)' if pg else ':payload'})"),
                    {"key": key, "seq": seq, "eid": entry["id"], "parent": None if seq == 0 else seq - 1,
                     "type": entry["type"], "payload": json.dumps(entry)})

    def active() -> dict[str, int]:
        with engine.connect() as conn:
            return {sid: ms for sid, ms in conn.execute(text("SELECT id, active_ms FROM sessionstore_sessions"))}

    migrate.upgrade(engine)
    assert active() == {"s10": T0 + 50_000, "empty": T0 + 7_000}
    config = migrate.alembic_config()
    with engine.connect() as conn, migrate.foreign_keys_off(conn), conn.begin():
        config.attributes["connection"] = conn
        command.downgrade(config, "0009")
    with engine.connect() as conn:
        columns = {c["name"] for c in inspect(conn).get_columns("sessionstore_sessions")}
    assert "active_ms" not in columns and "modified_ms" in columns
    migrate.upgrade(engine)
    assert active() == {"s10": T0 + 50_000, "empty": T0 + 7_000}


def test_revision_0011_adds_the_deleted_sources_and_downgrade_drops_them(engine: Engine) -> None:
    """Sessions stored at 0010 read as before; the table of files whose synced session was deleted
    starts empty, takes a row per path (an upsert), and goes with a downgrade to 0010."""
    from alembic import command

    migrate.upgrade(engine, "0010")
    migrate.upgrade(engine, "0011")
    with engine.begin() as conn:
        assert "sessionstore_deleted_sources" in inspect(conn).get_table_names()
        for sid in ("a", "b"):
            conn.execute(text("INSERT INTO sessionstore_deleted_sources (path, session_id, deleted_at)"
                              " VALUES ('/p/x.jsonl', :sid, 'now') ON CONFLICT (path) DO UPDATE SET"
                              " session_id = excluded.session_id"), {"sid": sid})
        assert conn.execute(text("SELECT path, session_id FROM sessionstore_deleted_sources")).all() == [
            ("/p/x.jsonl", "b")]
    config = migrate.alembic_config()
    with engine.connect() as conn, migrate.foreign_keys_off(conn), conn.begin():
        config.attributes["connection"] = conn
        command.downgrade(config, "0010")
    with engine.connect() as conn:
        assert "sessionstore_deleted_sources" not in inspect(conn).get_table_names()
    migrate.upgrade(engine)


def test_revision_0012_keeps_new_entries_at_the_end_and_the_header_fixed_and_downgrade_lifts_it(
        engine: Engine) -> None:
    """A database at 0011 accepts an entry at seq -5 and an UPDATE of a header; after 0012 both are
    refused (the store's own appends go on), and downgrading to 0011 lifts the refusal again."""
    from alembic import command

    from sessionstore.api import SessionStore
    from tests.builders import user

    url = engine.url.render_as_string(hide_password=False)
    migrate.upgrade(engine)
    with SessionStore(url) as store:
        sid = store.create_session(cwd="/w")
        store.append_message(sid, user("a"))
    forged = ("INSERT INTO sessionstore_entries (session_key, seq, entry_id, run_start, depth, ctx_depth, type,"
              " payload) SELECT session_key, -5, :eid, -5, 0, 0, type, payload FROM sessionstore_entries"
              " WHERE seq = 0")
    header = "UPDATE sessionstore_sessions SET header = '{\"type\": \"session\", \"id\": \"x\"}', cwd = '/x'"
    for statement, params in ((forged, {"eid": "forged"}), (header, {})):
        with pytest.raises(Exception, match="append-only"), engine.begin() as conn:
            conn.execute(text(statement), params)
    config = migrate.alembic_config()
    with engine.connect() as conn, migrate.foreign_keys_off(conn), conn.begin():
        config.attributes["connection"] = conn
        command.downgrade(config, "0011")
    with engine.begin() as conn:
        conn.execute(text(forged), {"eid": "forged"})
        conn.execute(text(header))
    assert migrate.upgrade(engine) == SCHEMA_REVISION
    with engine.connect() as conn:
        assert conn.execute(text("SELECT min(seq) FROM sessionstore_entries")).scalar_one() == -5


def test_revision_0015_adds_the_rate_windows_and_downgrade_drops_them(engine: Engine) -> None:
    """A database at 0014 has no rate windows; 0015 adds them empty, counting by an upsert per (tenant,
    window); a downgrade to 0014 drops them and keeps the sessions."""
    from alembic import command

    from sessionstore.api import SessionStore
    from sessionstore.service.config import RateLimit
    from sessionstore.service.ratelimit import RateLimiter
    from tests.builders import user

    url = engine.url.render_as_string(hide_password=False)
    migrate.upgrade(engine, "0014")
    with engine.connect() as conn:
        assert "sessionstore_rate_windows" not in inspect(conn).get_table_names()
    assert migrate.upgrade(engine) == SCHEMA_REVISION == "0016"
    with SessionStore(url) as store:
        sid = store.create_session(cwd="/w")
        store.append_message(sid, user("a"))
        limiter = RateLimiter(store, RateLimit(3, 60))
        assert [limiter.hit("acme", now=120_000 + n) for n in range(3)] == [1, 2, 3]
    with engine.connect() as conn:
        assert conn.execute(text("SELECT tenant, window_ms, requests FROM sessionstore_rate_windows")).all() == [
            ("acme", 120_000, 3)]
    config = migrate.alembic_config()
    with engine.connect() as conn, migrate.foreign_keys_off(conn), conn.begin():
        config.attributes["connection"] = conn
        command.downgrade(config, "0014")
    with engine.connect() as conn:
        assert "sessionstore_rate_windows" not in inspect(conn).get_table_names()
    migrate.upgrade(engine)
    with SessionStore(url) as store:
        assert [e["message"]["content"][0]["text"] for e in store.path(sid)] == ["a"]

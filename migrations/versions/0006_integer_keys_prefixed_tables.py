"""Tables named ``sessionstore_sessions`` / ``sessionstore_entries``; entries name their session by an
integer key and carry ``run_start``; ``parent_id``, ``role`` and ``timestamp`` go (the payload has them).

- Names: the OpenAI Agents SDK and Google ADK create a ``sessions`` table too, and another library's
  Alembic keeps ``alembic_version``; in a shared database ``db upgrade`` died on the first. The names
  of sessionstore's tables, triggers and functions now start with ``sessionstore`` (those of indexes
  and constraints after their ``ix_``/``pk_``/... prefix), and Alembic's version table is
  ``sessionstore_alembic_version`` (``store/migrate.py`` moves our revision out of ``alembic_version``
  before this revision runs, and creates a new database at this revision directly, without 0001's
  ``sessions``).
- Smaller rows: the text session id was in every entry row and in both of its indexes; the integer
  ``session_key`` (SQLite: the rowid of the session row) takes a few bytes. ``parent_id``, ``role``
  and ``timestamp`` were copies of payload fields that no query reads.
- ``run_start``: the seq of the first entry of the longest run ending at this entry in which each
  entry's parent is the entry appended just before it (``parent_seq = seq - 1``). The path from a leaf
  is then a few contiguous seq ranges, read by range scans instead of one lookup per entry; sessions
  carry their leaf's as ``leaf_run_start`` with the other leaf facts (0003).

Upgrade, on both backends, in the migration's one transaction: create the new tables, copy the
sessions (keys assigned 1, 2, ... in order of ``created``, then id), copy the entries in (key, seq)
order with ``run_start`` computed by a window over each session, fill ``leaf_run_start``, drop the old
tables with their triggers (SQLite: dropped before the copy's tables are touched, as 0005 asks), then
create the append-only triggers of 0001 and 0005 for the new tables. PostgreSQL: the identity
sequence of ``key`` is moved past the copied keys, and both tables are analysed.

Sessions marked ``deleting`` are not copied: readers already treat them as gone, the mark is one-way
(0005), and their entries may be partly deleted (a copy could then break the parent foreign key).
Their ids can be imported again afterwards, as before.

The triggers are those of 0001 and 0005 on the new names (SQLite trigger names are global to the
database, so they are prefixed too). On SQLite a session row is now refused also when its ``id`` is
taken (a REPLACE by id would give it a new key and orphan the old row's entries), and an AFTER INSERT
trigger refuses a session row whose new key already has entries (a BEFORE trigger cannot see an
automatically assigned rowid). The message for a taken entry id contains SQLite's own for the unique
index, ``UNIQUE constraint failed: sessionstore_entries.session_key, sessionstore_entries.entry_id``.

Downgrade rebuilds 0005's ``sessions`` and ``entries`` (``parent_id`` from the parent row, ``role`` and
``timestamp`` read back from the payload with the database's JSON functions; a timestamp or role
holding ``\\u0000`` or a lone surrogate comes back decoded rather than in ``dbtext``'s escaped form, and
PostgreSQL refuses a ``\\u0000`` there) and 0005's triggers, again without sessions marked
``deleting``. The version stays in ``sessionstore_alembic_version``: a sessionstore older than this
revision reads ``alembic_version``, so rename the table back to hand the database to one.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

SESSIONS = "sessionstore_sessions"
ENTRIES = "sessionstore_entries"

APPEND_ONLY = "session entries are append-only"
DELETE_REFUSED = f"{APPEND_ONLY}: DELETE refused (use delete_session)"
DELETING_ONE_WAY = "a session marked deleting stays marked (its entries go with it: use delete_session)"
KEY_FIXED = "the id and key of a session never change"
OVER_AN_ENTRY = f"{APPEND_ONLY}: INSERT over an existing entry refused (UNIQUE constraint failed: {ENTRIES}."
OVER_A_SESSION = f"{APPEND_ONLY}: INSERT over an existing session refused (UNIQUE constraint failed: {SESSIONS}."

SESSION_COLUMNS = (
    "version, cwd, created, parent_session, header, leaf_id, leaf_seq, leaf_depth, leaf_ctx_depth,"
    " leaf_compaction_seq, leaf_model_seq, leaf_thinking_seq, entry_count, message_count, name, first_message,"
    " modified_ms, deleting"
)
"""The session columns that 0005 and this revision share."""
FACT_COLUMNS = "depth, ctx_depth, compaction_seq, model_seq, thinking_seq, type, payload"
"""The entry columns that 0005 and this revision share (besides seq and entry_id)."""


def _tables_ddl(dialect: str) -> list[str]:
    # SQLite: an INTEGER PRIMARY KEY is the rowid itself. JSON: PostgreSQL json, the text as written (0002).
    key = "key BIGINT GENERATED BY DEFAULT AS IDENTITY" if dialect == "postgresql" else "key INTEGER NOT NULL"
    return [
        f"""CREATE TABLE {SESSIONS} (
        {key},
        id TEXT NOT NULL,
        version INTEGER NOT NULL,
        cwd TEXT NOT NULL,
        created TEXT NOT NULL,
        parent_session TEXT,
        header JSON NOT NULL,
        leaf_id TEXT,
        leaf_seq BIGINT,
        leaf_depth BIGINT,
        leaf_ctx_depth BIGINT,
        leaf_run_start BIGINT,
        leaf_compaction_seq BIGINT,
        leaf_model_seq BIGINT,
        leaf_thinking_seq BIGINT,
        entry_count BIGINT NOT NULL,
        message_count BIGINT NOT NULL,
        name TEXT,
        first_message TEXT,
        modified_ms BIGINT,
        deleting BOOLEAN NOT NULL,
        CONSTRAINT pk_{SESSIONS} PRIMARY KEY (key),
        CONSTRAINT uq_{SESSIONS}_id UNIQUE (id)
        )""",
        f"CREATE INDEX ix_{SESSIONS}_cwd ON {SESSIONS} (cwd)",
        # The parent foreign key's conventional name (..._sessionstore_entries) passes PostgreSQL's
        # 63 characters; it is named without the referred table, which is its own.
        f"""CREATE TABLE {ENTRIES} (
        session_key BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        entry_id TEXT NOT NULL,
        parent_seq BIGINT,
        run_start BIGINT NOT NULL,
        depth BIGINT NOT NULL,
        ctx_depth BIGINT NOT NULL,
        compaction_seq BIGINT,
        model_seq BIGINT,
        thinking_seq BIGINT,
        type TEXT NOT NULL,
        payload JSON NOT NULL,
        CONSTRAINT pk_{ENTRIES} PRIMARY KEY (session_key, seq),
        CONSTRAINT uq_{ENTRIES}_session_key_entry_id UNIQUE (session_key, entry_id),
        CONSTRAINT fk_{ENTRIES}_session_key_{SESSIONS} FOREIGN KEY (session_key) REFERENCES {SESSIONS} (key),
        CONSTRAINT fk_{ENTRIES}_session_key_parent_seq FOREIGN KEY (session_key, parent_seq)
          REFERENCES {ENTRIES} (session_key, seq),
        CONSTRAINT ck_{ENTRIES}_parent_link CHECK (parent_seq IS NULL OR parent_seq < seq),
        CONSTRAINT ck_{ENTRIES}_run_start CHECK (run_start <= seq)
        )""",
        f"CREATE INDEX ix_{ENTRIES}_children ON {ENTRIES} (session_key, parent_seq)",
    ]


SQLITE_TRIGGERS = {
    f"{ENTRIES}_append_only_update": f"""BEFORE UPDATE ON {ENTRIES}
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: UPDATE refused'); END""",
    f"{ENTRIES}_append_only_delete": f"""BEFORE DELETE ON {ENTRIES}
        WHEN NOT EXISTS (SELECT 1 FROM {SESSIONS} WHERE key = OLD.session_key AND deleting)
        BEGIN SELECT RAISE(ABORT, '{DELETE_REFUSED}'); END""",
    # REPLACE deletes the rows in its way without firing their delete triggers: probe every key first.
    f"{ENTRIES}_no_replace": f"""BEFORE INSERT ON {ENTRIES}
        WHEN EXISTS (SELECT 1 FROM {ENTRIES} WHERE session_key = NEW.session_key AND seq = NEW.seq)
          OR EXISTS (SELECT 1 FROM {ENTRIES} WHERE session_key = NEW.session_key AND entry_id = NEW.entry_id)
          OR EXISTS (SELECT 1 FROM {ENTRIES} WHERE rowid = NEW.rowid)
        BEGIN
          SELECT RAISE(ABORT, '{OVER_AN_ENTRY}session_key, {ENTRIES}.entry_id)')
          WHERE EXISTS (SELECT 1 FROM {ENTRIES} WHERE session_key = NEW.session_key AND entry_id = NEW.entry_id);
          SELECT RAISE(ABORT, '{OVER_AN_ENTRY}session_key, {ENTRIES}.seq)')
          WHERE EXISTS (SELECT 1 FROM {ENTRIES} WHERE session_key = NEW.session_key AND seq = NEW.seq);
          SELECT RAISE(ABORT, '{OVER_AN_ENTRY}rowid)');
        END""",
    f"{SESSIONS}_deleting_one_way": f"""BEFORE UPDATE OF deleting ON {SESSIONS}
        WHEN OLD.deleting AND NEW.deleting IS NOT OLD.deleting
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: {DELETING_ONE_WAY}'); END""",
    # key is the rowid; SQLite matches rowid, oid and _rowid_ in UPDATE OF by name.
    f"{SESSIONS}_key_fixed": f"""BEFORE UPDATE OF key, id, rowid, oid, _rowid_ ON {SESSIONS}
        WHEN NEW.id IS NOT OLD.id OR NEW.key IS NOT OLD.key
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: {KEY_FIXED}'); END""",
    f"{SESSIONS}_delete_empty_only": f"""BEFORE DELETE ON {SESSIONS}
        WHEN EXISTS (SELECT 1 FROM {ENTRIES} WHERE session_key = OLD.key)
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: DELETE of a session with entries refused (use delete_session)');
        END""",
    # A REPLACE over the id would give the row a new key and orphan the old row's entries; one over
    # the key would adopt them.
    f"{SESSIONS}_no_replace": f"""BEFORE INSERT ON {SESSIONS}
        WHEN EXISTS (SELECT 1 FROM {SESSIONS} WHERE id = NEW.id)
          OR EXISTS (SELECT 1 FROM {SESSIONS} WHERE key = NEW.key)
        BEGIN
          SELECT RAISE(ABORT, '{OVER_A_SESSION}id)') WHERE EXISTS (SELECT 1 FROM {SESSIONS} WHERE id = NEW.id);
          SELECT RAISE(ABORT, '{OVER_A_SESSION}key)');
        END""",
    # After the insert: before it, an automatically assigned key reads as -1.
    f"{SESSIONS}_insert_fresh_only": f"""AFTER INSERT ON {SESSIONS}
        WHEN EXISTS (SELECT 1 FROM {ENTRIES} WHERE session_key = NEW.key)
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: INSERT of a session row over existing entries refused'); END""",
}

PG_ENTRIES_FUNCTION = "sessionstore_entries_append_only"
PG_REFUSE_FUNCTION = "sessionstore_refuse"
PG_SESSION_TRIGGERS = {
    f"{SESSIONS}_deleting_one_way": ("deleting", "OLD.deleting AND NOT NEW.deleting", DELETING_ONE_WAY),
    f"{SESSIONS}_key_fixed": (
        "id, key", "OLD.id IS DISTINCT FROM NEW.id OR OLD.key IS DISTINCT FROM NEW.key", KEY_FIXED
    ),
}


def _create_triggers(dialect: str) -> None:
    if dialect == "sqlite":
        for name, body in SQLITE_TRIGGERS.items():
            op.execute(f"CREATE TRIGGER {name} {body}")
        return
    # OR REPLACE: on upgrade the functions of 0001 and 0005 exist (their triggers went with the old tables).
    op.execute(
        f"""CREATE OR REPLACE FUNCTION {PG_ENTRIES_FUNCTION}() RETURNS trigger AS $$
        BEGIN
          IF TG_OP = 'DELETE' AND EXISTS (
              SELECT 1 FROM {SESSIONS} WHERE key = OLD.session_key AND deleting) THEN
            RETURN OLD;
          END IF;
          RAISE EXCEPTION '{APPEND_ONLY}: % refused', TG_OP;
        END $$ LANGUAGE plpgsql"""
    )
    op.execute(
        f"""CREATE TRIGGER {ENTRIES}_append_only BEFORE UPDATE OR DELETE ON {ENTRIES}
        FOR EACH ROW EXECUTE FUNCTION {PG_ENTRIES_FUNCTION}()"""
    )
    op.execute(
        f"""CREATE TRIGGER {ENTRIES}_no_truncate BEFORE TRUNCATE ON {ENTRIES}
        FOR EACH STATEMENT EXECUTE FUNCTION {PG_ENTRIES_FUNCTION}()"""
    )
    op.execute(
        f"""CREATE OR REPLACE FUNCTION {PG_REFUSE_FUNCTION}() RETURNS trigger AS $$
        BEGIN
          RAISE EXCEPTION '{APPEND_ONLY}: %', TG_ARGV[0];
        END $$ LANGUAGE plpgsql"""
    )
    for name, (columns, condition, message) in PG_SESSION_TRIGGERS.items():
        quoted = message.replace("'", "''")
        op.execute(
            f"""CREATE TRIGGER {name} BEFORE UPDATE OF {columns} ON {SESSIONS}
            FOR EACH ROW WHEN ({condition}) EXECUTE FUNCTION {PG_REFUSE_FUNCTION}('{quoted}')"""
        )


def _create_tables(dialect: str) -> None:
    for statement in _tables_ddl(dialect):
        op.execute(statement)
    if dialect == "postgresql":
        # As 0001: lz4 where the server has it (faster than pglz on bulk loads).
        op.execute(
            f"""DO $$ BEGIN
                 ALTER TABLE {ENTRIES} ALTER COLUMN payload SET COMPRESSION lz4;
               EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN NULL;
               END $$"""
        )


def create_schema() -> None:
    """The schema of this revision in a database without one (``store/migrate.py`` runs it instead of
    0001..0006, whose 0001 would create ``sessions``, and stamps the database at this revision)."""
    dialect = op.get_bind().dialect.name
    _create_tables(dialect)
    _create_triggers(dialect)


# -- 0005 -> 0006 ----------------------------------------------------------------------------------

OLD_SQLITE_TRIGGERS = (
    "entries_append_only_update", "entries_append_only_delete", "entries_no_replace", "sessions_deleting_one_way",
    "sessions_key_fixed", "sessions_delete_empty_only", "sessions_insert_fresh_only",
)


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        # Before anything else (0005): a trigger naming a dropped table breaks later DDL.
        for name in OLD_SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    _create_tables(dialect)
    op.execute(
        f"""INSERT INTO {SESSIONS} (key, id, {SESSION_COLUMNS})
        SELECT ROW_NUMBER() OVER (ORDER BY created, id), id, {SESSION_COLUMNS}
        FROM sessions WHERE NOT deleting ORDER BY created, id"""
    )
    op.execute(
        f"""INSERT INTO {ENTRIES} (session_key, seq, entry_id, parent_seq, run_start, {FACT_COLUMNS})
        SELECT s.key, e.seq, e.entry_id, e.parent_seq,
          MAX(CASE WHEN e.parent_seq IS NULL OR e.parent_seq <> e.seq - 1 THEN e.seq END)
            OVER (PARTITION BY s.key ORDER BY e.seq),
          {", ".join(f"e.{c.strip()}" for c in FACT_COLUMNS.split(","))}
        FROM entries e JOIN {SESSIONS} s ON s.id = e.session_id
        ORDER BY s.key, e.seq"""
    )
    op.execute(
        f"""UPDATE {SESSIONS} SET leaf_run_start = (
          SELECT e.run_start FROM {ENTRIES} e WHERE e.session_key = {SESSIONS}.key AND e.seq = {SESSIONS}.leaf_seq)
        WHERE leaf_seq IS NOT NULL"""
    )
    # With their indexes and triggers; on PostgreSQL the functions stay and are replaced below.
    op.execute("DROP TABLE entries")
    op.execute("DROP TABLE sessions")
    if dialect == "postgresql":
        op.execute(
            f"SELECT setval(pg_get_serial_sequence('{SESSIONS}', 'key'),"
            f" COALESCE((SELECT MAX(key) FROM {SESSIONS}), 0) + 1, false)"
        )
        op.execute(f"ANALYZE {SESSIONS}")
        op.execute(f"ANALYZE {ENTRIES}")
    _create_triggers(dialect)


# -- 0006 -> 0005 ----------------------------------------------------------------------------------

OLD_APPEND_ONLY_TRIGGERS = {
    "entries_append_only_update": """BEFORE UPDATE ON entries
        BEGIN SELECT RAISE(ABORT, 'session entries are append-only: UPDATE refused'); END""",
    "entries_append_only_delete": """BEFORE DELETE ON entries
        WHEN NOT EXISTS (SELECT 1 FROM sessions WHERE id = OLD.session_id AND deleting)
        BEGIN SELECT RAISE(ABORT, 'session entries are append-only: DELETE refused (use delete_session)'); END""",
}
"""0001's SQLite triggers; 0005's come from its own module."""


def _old_tables_ddl() -> list[str]:
    return [
        """CREATE TABLE sessions (
        id VARCHAR NOT NULL,
        version INTEGER NOT NULL,
        cwd TEXT NOT NULL,
        created TEXT NOT NULL,
        parent_session TEXT,
        header JSON NOT NULL,
        leaf_id TEXT,
        leaf_seq BIGINT,
        entry_count BIGINT NOT NULL,
        message_count BIGINT NOT NULL,
        name TEXT,
        first_message TEXT,
        modified_ms BIGINT,
        deleting BOOLEAN NOT NULL,
        leaf_depth BIGINT,
        leaf_ctx_depth BIGINT,
        leaf_compaction_seq BIGINT,
        leaf_model_seq BIGINT,
        leaf_thinking_seq BIGINT,
        CONSTRAINT pk_sessions PRIMARY KEY (id)
        )""",
        "CREATE INDEX ix_sessions_cwd ON sessions (cwd)",
        """CREATE TABLE entries (
        session_id VARCHAR NOT NULL,
        seq BIGINT NOT NULL,
        entry_id TEXT NOT NULL,
        parent_id TEXT,
        parent_seq BIGINT,
        depth BIGINT NOT NULL,
        type TEXT NOT NULL,
        role TEXT,
        timestamp TEXT NOT NULL,
        payload JSON NOT NULL,
        ctx_depth BIGINT NOT NULL,
        compaction_seq BIGINT,
        model_seq BIGINT,
        thinking_seq BIGINT,
        CONSTRAINT pk_entries PRIMARY KEY (session_id, seq),
        CONSTRAINT uq_entries_session_id_entry_id UNIQUE (session_id, entry_id),
        CONSTRAINT fk_entries_session_id_sessions FOREIGN KEY(session_id) REFERENCES sessions (id),
        CONSTRAINT fk_entries_session_id_parent_seq_entries FOREIGN KEY(session_id, parent_seq)
          REFERENCES entries (session_id, seq),
        CONSTRAINT ck_entries_parent_link CHECK ((parent_id IS NULL AND parent_seq IS NULL)
          OR (parent_id IS NOT NULL AND parent_seq IS NOT NULL AND parent_seq < seq))
        )""",
        "CREATE INDEX ix_entries_children ON entries (session_id, parent_seq)",
    ]


def _role_and_timestamp(dialect: str) -> tuple[str, str]:
    """SQL for 0005's ``role`` and ``timestamp`` columns of entry ``e``, as ``facts.entry_values`` made them."""
    if dialect == "postgresql":
        # PostgreSQL's json operators refuse a value holding the escape \u0000 anywhere (a tool's binary
        # output), so the two fields are read from a copy where it is U+FFFD (they hold none themselves).
        p = "replace(e.payload::text, '\\u0000', '\\ufffd')::json"
        role = (
            f"CASE WHEN e.type = 'message' AND json_typeof({p} -> 'message') = 'object'"
            f" AND json_typeof({p} -> 'message' -> 'role') = 'string' THEN {p} -> 'message' ->> 'role' END"
        )
        timestamp = (
            f"CASE WHEN json_typeof({p}) = 'object' AND json_typeof({p} -> 'timestamp') = 'string'"
            f" THEN {p} ->> 'timestamp' ELSE '' END"
        )
        return role, timestamp
    role = (
        "CASE WHEN e.type = 'message' AND json_type(e.payload, '$.message.role') = 'text'"
        " THEN json_extract(e.payload, '$.message.role') END"
    )
    timestamp = (
        "CASE WHEN json_type(e.payload, '$.timestamp') = 'text' THEN json_extract(e.payload, '$.timestamp') ELSE '' END"
    )
    return role, timestamp


def _revision_0005() -> Any:
    """The module of revision 0005 (its triggers, recreated as it wrote them)."""
    path = Path(__file__).with_name("0005_no_replace_no_single_delete.py")
    spec = importlib.util.spec_from_file_location("sessionstore_revision_0005", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for name in SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    for statement in _old_tables_ddl():
        op.execute(statement)
    if dialect == "postgresql":
        op.execute(
            """DO $$ BEGIN
                 ALTER TABLE entries ALTER COLUMN payload SET COMPRESSION lz4;
               EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN NULL;
               END $$"""
        )
    op.execute(f"INSERT INTO sessions (id, {SESSION_COLUMNS}) SELECT id, {SESSION_COLUMNS} FROM {SESSIONS}"
               " WHERE NOT deleting ORDER BY key")
    role, timestamp = _role_and_timestamp(dialect)
    op.execute(
        f"""INSERT INTO entries (session_id, seq, entry_id, parent_id, parent_seq, role, timestamp, {FACT_COLUMNS})
        SELECT s.id, e.seq, e.entry_id, p.entry_id, e.parent_seq, {role}, {timestamp},
          {", ".join(f"e.{c.strip()}" for c in FACT_COLUMNS.split(","))}
        FROM {ENTRIES} e JOIN {SESSIONS} s ON s.key = e.session_key
        LEFT JOIN {ENTRIES} p ON p.session_key = e.session_key AND p.seq = e.parent_seq
        WHERE NOT s.deleting
        ORDER BY s.id, e.seq"""
    )
    op.execute(f"DROP TABLE {ENTRIES}")
    op.execute(f"DROP TABLE {SESSIONS}")
    if dialect == "sqlite":
        for name, body in {**OLD_APPEND_ONLY_TRIGGERS, **_revision_0005().SQLITE_TRIGGERS}.items():
            op.execute(f"CREATE TRIGGER {name} {body}")
        return
    op.execute(f"DROP FUNCTION {PG_REFUSE_FUNCTION}()")
    op.execute(
        f"""CREATE OR REPLACE FUNCTION {PG_ENTRIES_FUNCTION}() RETURNS trigger AS $$
        BEGIN
          IF TG_OP = 'DELETE' AND EXISTS (
              SELECT 1 FROM sessions WHERE id = OLD.session_id AND deleting) THEN
            RETURN OLD;
          END IF;
          RAISE EXCEPTION '{APPEND_ONLY}: % refused', TG_OP;
        END $$ LANGUAGE plpgsql"""
    )
    op.execute(
        f"""CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON entries
        FOR EACH ROW EXECUTE FUNCTION {PG_ENTRIES_FUNCTION}()"""
    )
    op.execute(
        f"""CREATE TRIGGER entries_no_truncate BEFORE TRUNCATE ON entries
        FOR EACH STATEMENT EXECUTE FUNCTION {PG_ENTRIES_FUNCTION}()"""
    )
    _revision_0005()._create_pg_triggers()

"""The database refuses ``INSERT OR REPLACE`` / ``REPLACE INTO`` over an entry and the deletion of
single entries: no raw SQL short of dropping a table or its triggers can change or remove an entry of
a session that readers see.

SQLite's REPLACE conflict resolution deletes the rows in its way without firing delete triggers
(``recursive_triggers`` is off by default), so the append-only triggers of 0001 did not see it, and a
row could be swapped through any of the three keys of ``entries``: the primary key ``(session_id,
seq)``, the unique ``(session_id, entry_id)``, or the hidden ``rowid`` given explicitly. A ``BEFORE
INSERT`` trigger refuses an insert that meets an existing row on any of them (three index probes; the
statement's ``OR REPLACE`` overrides any conflict clause of the table, so nothing cheaper stops it).
Its message for a taken entry id contains SQLite's own (``UNIQUE constraint failed: entries.session_id,
entries.entry_id``), which the store recognises to draw a new id or name the taken one: the trigger
fires before the unique index is checked.

Entries go only while their session row is marked ``deleting`` (0001). The mark is now one-way: once
set it cannot be cleared, and a marked session is gone for every reader, so entries can go only
with their whole session. Around it, on both backends, a session's id (and on SQLite its rowid)
never changes; on SQLite, where the shell runs with ``foreign_keys`` off, a session row cannot be
deleted while it has entries, nor inserted where entries with its id exist or over the rowid of
another row (a REPLACE), so entries cannot be orphaned and no new or restored session row can adopt
them. PostgreSQL checks its foreign keys always and has no REPLACE: ``ON CONFLICT DO UPDATE`` and
``MERGE`` fire the row triggers (0001 refuses them on entries), ``TRUNCATE`` of either table reaches
the trigger of 0001.

Cost: the session triggers fire only on writes that name their columns (``UPDATE OF``; SQLite matches
``rowid``, ``oid`` and ``_rowid_`` by name), so appends do not run them (PostgreSQL appends measured
the same with and without them: +2 us on average, within +-40 us, of 1.1 ms). ``entries_no_replace``
runs on every SQLite insert. Measured in one process (CPU time; the same store code alternating call
by call between databases with and without the triggers of 0005): +3 to +5 us per imported entry
(+10-15% of an import's CPU time), and no difference beyond the noise per append (-1 to +6 us of
150-260 us). Most of it is the price of a row trigger on ``entries`` at all (in raw ``sqlite3`` an
empty one costs about two thirds as much); the three probes are the rest. A trigger checking that
``parent_seq`` names a row (``foreign_keys`` off leaves that unchecked) would add another 1-2.5 us
per imported entry and 7-13 us per append (+4-7%), and is not here.

A future revision that rebuilds ``entries`` on SQLite (as 0004 does) has to drop these triggers
before and create them after: ``ALTER TABLE ... RENAME`` refuses while a trigger names a missing
table, and ``DROP TABLE entries`` takes ``entries_no_replace`` with it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

APPEND_ONLY = "session entries are append-only"
OVER_AN_ENTRY = f"{APPEND_ONLY}: INSERT over an existing entry refused (UNIQUE constraint failed: entries."
DELETING_ONE_WAY = "a session marked deleting stays marked (its entries go with it: use delete_session)"
KEY_FIXED = "the id of a session never changes"

SQLITE_TRIGGERS = {
    "entries_no_replace": f"""BEFORE INSERT ON entries
        WHEN EXISTS (SELECT 1 FROM entries WHERE session_id = NEW.session_id AND seq = NEW.seq)
          OR EXISTS (SELECT 1 FROM entries WHERE session_id = NEW.session_id AND entry_id = NEW.entry_id)
          OR EXISTS (SELECT 1 FROM entries WHERE rowid = NEW.rowid)
        BEGIN
          SELECT RAISE(ABORT, '{OVER_AN_ENTRY}session_id, entries.entry_id)')
          WHERE EXISTS (SELECT 1 FROM entries WHERE session_id = NEW.session_id AND entry_id = NEW.entry_id);
          SELECT RAISE(ABORT, '{OVER_AN_ENTRY}session_id, entries.seq)')
          WHERE EXISTS (SELECT 1 FROM entries WHERE session_id = NEW.session_id AND seq = NEW.seq);
          SELECT RAISE(ABORT, '{OVER_AN_ENTRY}rowid)');
        END""",
    "sessions_deleting_one_way": f"""BEFORE UPDATE OF deleting ON sessions
        WHEN OLD.deleting AND NEW.deleting IS NOT OLD.deleting
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: {DELETING_ONE_WAY}'); END""",
    "sessions_key_fixed": f"""BEFORE UPDATE OF id, rowid, oid, _rowid_ ON sessions
        WHEN NEW.id IS NOT OLD.id OR NEW.rowid IS NOT OLD.rowid
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: {KEY_FIXED}'); END""",
    "sessions_delete_empty_only": f"""BEFORE DELETE ON sessions
        WHEN EXISTS (SELECT 1 FROM entries WHERE session_id = OLD.id)
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: DELETE of a session with entries refused (use delete_session)');
        END""",
    "sessions_insert_fresh_only": f"""BEFORE INSERT ON sessions
        WHEN EXISTS (SELECT 1 FROM entries WHERE session_id = NEW.id)
          OR EXISTS (SELECT 1 FROM sessions WHERE rowid = NEW.rowid)
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: INSERT of a session row over existing entries refused'); END""",
}

PG_FUNCTION = "sessionstore_refuse"
PG_TRIGGERS = {
    "sessions_deleting_one_way": ("deleting", "OLD.deleting AND NOT NEW.deleting", DELETING_ONE_WAY),
    "sessions_key_fixed": ("id", "OLD.id IS DISTINCT FROM NEW.id", KEY_FIXED),
}


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for name, body in SQLITE_TRIGGERS.items():
            op.execute(f"CREATE TRIGGER {name} {body}")
    elif dialect == "postgresql":
        _create_pg_triggers()


def _create_pg_triggers() -> None:
    op.execute(
        f"""CREATE FUNCTION {PG_FUNCTION}() RETURNS trigger AS $$
        BEGIN
          RAISE EXCEPTION '{APPEND_ONLY}: %', TG_ARGV[0];
        END $$ LANGUAGE plpgsql"""
    )
    for name, (column, condition, message) in PG_TRIGGERS.items():
        quoted = message.replace("'", "''")
        op.execute(
            f"""CREATE TRIGGER {name} BEFORE UPDATE OF {column} ON sessions
            FOR EACH ROW WHEN ({condition}) EXECUTE FUNCTION {PG_FUNCTION}('{quoted}')"""
        )


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for name in SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    elif dialect == "postgresql":
        for name in PG_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON sessions")
        op.execute(f"DROP FUNCTION IF EXISTS {PG_FUNCTION}()")

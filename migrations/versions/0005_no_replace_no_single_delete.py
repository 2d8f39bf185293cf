"""SQLite refuses ``INSERT OR REPLACE`` / ``REPLACE INTO`` over an entry.

SQLite's REPLACE conflict resolution deletes the rows in its way without firing delete triggers
(``recursive_triggers`` is off by default), so the append-only triggers of 0001 did not see it, and a
row could be swapped through any of the three keys of ``entries``: the primary key ``(session_id,
seq)``, the unique ``(session_id, entry_id)``, or the hidden ``rowid`` given explicitly. A ``BEFORE
INSERT`` trigger refuses an insert that meets an existing row on any of them (three index probes; the
statement's ``OR REPLACE`` overrides any conflict clause of the table, so nothing cheaper stops it).
Its message for a taken entry id contains SQLite's own (``UNIQUE constraint failed: entries.session_id,
entries.entry_id``), which the store recognises to draw a new id or name the taken one: the trigger
fires before the unique index is checked. PostgreSQL has no REPLACE; ``ON CONFLICT DO UPDATE`` and
``MERGE`` fire the row triggers of 0001.

Cost: ``entries_no_replace`` runs on every SQLite insert. Measured in one process (CPU time; the
same store code alternating call by call between databases with and without it): +3 to +5 us per
imported entry (+10-15% of an import's CPU time), and no difference beyond the noise per append (-1
to +6 us of 150-260 us). Most of it is the price of a row trigger on ``entries`` at all (in raw
``sqlite3`` an empty one costs about two thirds as much); the three probes are the rest. A trigger
checking that ``parent_seq`` names a row (``foreign_keys`` off leaves that unchecked) would add
another 1-2.5 us per imported entry and 7-13 us per append (+4-7%), and is not here.

A future revision that rebuilds ``entries`` on SQLite (as 0004 does) has to create
``entries_no_replace`` again: ``DROP TABLE entries`` takes it with it.

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
}


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name, body in SQLITE_TRIGGERS.items():
            op.execute(f"CREATE TRIGGER {name} {body}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")

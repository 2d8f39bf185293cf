"""A new entry goes only at the end of its session, and a session's header never changes: raw SQL can
no longer forge history (issue 22).

Before, a plain ``INSERT`` of an entry with ``seq`` 4.5, ``'abc'`` (SQLite stores a value that does not
convert to an integer as it is) or -5 (both backends) was accepted, and the export showed the forged
entry in the middle of the history or before it; an ``UPDATE`` of the stored ``header`` (or the
``version``, ``cwd``, ``created``, ``parent_session`` beside it) changed the exported header line.

- ``sessionstore_entries_at_the_end`` refuses an entry whose ``seq`` is not an integer or not the
  session's next one (one more than its greatest seq; 0 for the first). The store appends and imports
  exactly so (seq is the 0-based append position); entries of a session are then always 0..n-1. SQLite:
  a ``BEFORE INSERT`` row trigger, where ``typeof`` sees the stored type (``'5'`` converts to the
  integer 5 and passes, ``4.5`` and ``'abc'`` do not). PostgreSQL (``bigint`` refuses ``'abc'`` and
  rounds 4.5): an ``AFTER INSERT`` statement trigger over the statement's new rows (a ``COPY`` too),
  which holds the same rule for the statement's rows of each session at once.
- ``sessionstore_sessions_header_fixed``: an ``UPDATE`` of ``header``, ``version``, ``cwd``, ``created``
  or ``parent_session`` that changes one is refused (PostgreSQL compares ``json`` as its text); the
  store never updates them (``import --replace`` writes a new session row).

Both messages start with 0005's "session entries are append-only". Cost, measured with the same store
code alternating between databases with and without the trigger (5,000-entry imports, single
appends): SQLite +3% CPU per import (one primary-key probe per row; wall time within the noise),
appends the same (654 against 650 us median); PostgreSQL, per statement, +3-5% per import of 5,000
entries (median +28 ms of 1.07 s) and +3% per append (median +42 us of 1.26 ms), where a row trigger
cost +11-17% per import. A future revision that rebuilds ``sessionstore_entries`` drops the trigger
first and creates it after, as 0005 says of its own.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

SESSIONS = "sessionstore_sessions"
ENTRIES = "sessionstore_entries"
APPEND_ONLY = "session entries are append-only"
AT_THE_END = f"{APPEND_ONLY}: a new entry goes at the end of its session (an integer seq, the next one)"
HEADER_FIXED = "the header of a session never changes"
HEADER_COLUMNS = ("header", "version", "cwd", "created", "parent_session")
NEXT_SEQ = f"COALESCE((SELECT max(seq) FROM {ENTRIES} WHERE session_key = NEW.session_key), -1) + 1"

AT_THE_END_TRIGGER = f"{ENTRIES}_at_the_end"
HEADER_TRIGGER = f"{SESSIONS}_header_fixed"
PG_AT_THE_END_FUNCTION = "sessionstore_entries_at_the_end"
PG_REFUSE_FUNCTION = "sessionstore_refuse"
"""0006's function: raises its argument after "session entries are append-only: "."""


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            f"""CREATE TRIGGER {AT_THE_END_TRIGGER} BEFORE INSERT ON {ENTRIES}
            WHEN typeof(NEW.seq) <> 'integer' OR NEW.seq <> {NEXT_SEQ}
            BEGIN SELECT RAISE(ABORT, '{AT_THE_END}'); END"""
        )
        changed = " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in HEADER_COLUMNS)
        op.execute(
            f"""CREATE TRIGGER {HEADER_TRIGGER} BEFORE UPDATE OF {", ".join(HEADER_COLUMNS)} ON {SESSIONS}
            WHEN {changed}
            BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: {HEADER_FIXED}'); END"""
        )
        return
    # One check per statement (a COPY of 20,000 rows is one): a row trigger costs PostgreSQL's COPY
    # +11-17% (its per-row function call), this one nothing measurable. The new rows of each session
    # are contiguous (the primary key makes them distinct), start at 0 or right after an existing
    # entry, and no entry comes after them: with the entries before the statement 0..n-1, they are n..
    op.execute(
        f"""CREATE FUNCTION {PG_AT_THE_END_FUNCTION}() RETURNS trigger AS $$
        BEGIN
          IF EXISTS (
              SELECT 1 FROM (SELECT session_key, min(seq) AS lo, max(seq) AS hi, count(*) AS n
                             FROM sessionstore_new_entries GROUP BY session_key) AS added
              WHERE added.lo < 0 OR added.hi - added.lo + 1 <> added.n
                 OR (added.lo > 0 AND NOT EXISTS (SELECT 1 FROM {ENTRIES} e
                                                  WHERE e.session_key = added.session_key AND e.seq = added.lo - 1))
                 OR EXISTS (SELECT 1 FROM {ENTRIES} e WHERE e.session_key = added.session_key AND e.seq > added.hi))
          THEN
            RAISE EXCEPTION '{AT_THE_END}';
          END IF;
          RETURN NULL;
        END $$ LANGUAGE plpgsql"""
    )
    op.execute(
        f"""CREATE TRIGGER {AT_THE_END_TRIGGER} AFTER INSERT ON {ENTRIES}
        REFERENCING NEW TABLE AS sessionstore_new_entries
        FOR EACH STATEMENT EXECUTE FUNCTION {PG_AT_THE_END_FUNCTION}()"""
    )
    changed = " OR ".join(
        f"OLD.{c}::text IS DISTINCT FROM NEW.{c}::text" if c == "header" else f"OLD.{c} IS DISTINCT FROM NEW.{c}"
        for c in HEADER_COLUMNS
    )
    op.execute(
        f"""CREATE TRIGGER {HEADER_TRIGGER} BEFORE UPDATE OF {", ".join(HEADER_COLUMNS)} ON {SESSIONS}
        FOR EACH ROW WHEN ({changed}) EXECUTE FUNCTION {PG_REFUSE_FUNCTION}('{HEADER_FIXED}')"""
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"DROP TRIGGER IF EXISTS {AT_THE_END_TRIGGER}")
        op.execute(f"DROP TRIGGER IF EXISTS {HEADER_TRIGGER}")
        return
    op.execute(f"DROP TRIGGER IF EXISTS {AT_THE_END_TRIGGER} ON {ENTRIES}")
    op.execute(f"DROP TRIGGER IF EXISTS {HEADER_TRIGGER} ON {SESSIONS}")
    op.execute(f"DROP FUNCTION IF EXISTS {PG_AT_THE_END_FUNCTION}()")

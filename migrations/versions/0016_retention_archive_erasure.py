"""Retention, archive and erasure (SPEC 18, issue 26).

- ``sessionstore_retention``: one policy per tenant, the days of inactivity after which its sessions are
  archived and deleted (either may be null).
- ``sessionstore_holds``: sessions exempt from the policy (``sessionstore hold``), by session key.
- ``sessionstore_archives``: one row per archived session: the archive file (relative to the archive
  directory), its SHA-256 and size, the entries it holds and when it was written. While a session has
  this row its entries may be deleted (the archive moved them out of the database) and the row may go
  only once the session has every entry back (a restore) or is being deleted: the append-only triggers
  of 0006 are widened by exactly that.
- ``sessionstore_erasures``: the audit of erasures (tenant, session id, when, by whom, how many entries),
  never what was erased.
- ``sessionstore_leases``: named leases (the scheduled retention run), held by one worker at a time
  until they expire.

Downgrade drops the tables and puts 0006's triggers back (archived sessions must be restored first: their
entries are not in the database).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

SESSIONS = "sessionstore_sessions"
ENTRIES = "sessionstore_entries"
ARCHIVES = "sessionstore_archives"
APPEND_ONLY = "session entries are append-only"
DELETE_REFUSED = f"{APPEND_ONLY}: DELETE refused (use delete_session)"
UNARCHIVE_REFUSED = "an archived session keeps its archive row until its entries are all back (restore)"
PG_ENTRIES_FUNCTION = "sessionstore_entries_append_only"

SQLITE_DELETE_TRIGGER = f"{ENTRIES}_append_only_delete"
SQLITE_DELETE_BEFORE = f"""BEFORE DELETE ON {ENTRIES}
        WHEN NOT EXISTS (SELECT 1 FROM {SESSIONS} WHERE key = OLD.session_key AND deleting)
        BEGIN SELECT RAISE(ABORT, '{DELETE_REFUSED}'); END"""
SQLITE_DELETE_NOW = f"""BEFORE DELETE ON {ENTRIES}
        WHEN NOT EXISTS (SELECT 1 FROM {SESSIONS} WHERE key = OLD.session_key AND deleting)
         AND NOT EXISTS (SELECT 1 FROM {ARCHIVES} WHERE session_key = OLD.session_key)
        BEGIN SELECT RAISE(ABORT, '{DELETE_REFUSED}'); END"""
# The archive row of a live session goes only when its entries are all there again.
WHOLE_AGAIN = f"""EXISTS (SELECT 1 FROM {SESSIONS} s WHERE s.key = OLD.session_key AND NOT s.deleting
                   AND s.entry_count <> (SELECT count(*) FROM {ENTRIES} e WHERE e.session_key = OLD.session_key))"""
SQLITE_UNARCHIVE_TRIGGER = f"{ARCHIVES}_whole_again"
SQLITE_GONE_TRIGGER = f"{SESSIONS}_retention_rows_go"
"""SQLite runs an import's transaction without foreign keys: a replaced session's hold and archive rows
must go with it all the same (its key may be given to the next session)."""

PG_FUNCTION_BEFORE = f"""CREATE OR REPLACE FUNCTION {PG_ENTRIES_FUNCTION}() RETURNS trigger AS $$
        BEGIN
          IF TG_OP = 'DELETE' AND EXISTS (
              SELECT 1 FROM {SESSIONS} WHERE key = OLD.session_key AND deleting) THEN
            RETURN OLD;
          END IF;
          RAISE EXCEPTION '{APPEND_ONLY}: % refused', TG_OP;
        END $$ LANGUAGE plpgsql"""
PG_FUNCTION_NOW = f"""CREATE OR REPLACE FUNCTION {PG_ENTRIES_FUNCTION}() RETURNS trigger AS $$
        BEGIN
          IF TG_OP = 'DELETE' THEN
            IF EXISTS (SELECT 1 FROM {SESSIONS} WHERE key = OLD.session_key AND deleting)
               OR EXISTS (SELECT 1 FROM {ARCHIVES} WHERE session_key = OLD.session_key) THEN
              RETURN OLD;
            END IF;
          END IF;
          RAISE EXCEPTION '{APPEND_ONLY}: % refused', TG_OP;
        END $$ LANGUAGE plpgsql"""
PG_UNARCHIVE_FUNCTION = "sessionstore_archives_whole_again"


def upgrade() -> None:
    key = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "sessionstore_retention",
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("archive_after_days", sa.Double(), nullable=True),
        sa.Column("delete_after_days", sa.Double(), nullable=True),
        sa.Column("updated_at", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", name="pk_sessionstore_retention"),
    )
    op.create_table(
        "sessionstore_holds",
        sa.Column("session_key", sa.BigInteger(), nullable=False),
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("held_at", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("session_key", name="pk_sessionstore_holds"),
        sa.ForeignKeyConstraint(["session_key"], [f"{SESSIONS}.key"], ondelete="CASCADE",
                                name="fk_sessionstore_holds_session_key_sessionstore_sessions"),
    )
    op.create_table(
        ARCHIVES,
        sa.Column("session_key", sa.BigInteger(), nullable=False),
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("file", sa.Text(), nullable=False),
        sa.Column("sha256", sa.Text(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("entries", sa.BigInteger(), nullable=False),
        sa.Column("archived_at", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("session_key", name="pk_sessionstore_archives"),
        sa.ForeignKeyConstraint(["session_key"], [f"{SESSIONS}.key"], ondelete="CASCADE",
                                name="fk_sessionstore_archives_session_key_sessionstore_sessions"),
    )
    op.create_index("ix_sessionstore_archives_tenant", ARCHIVES, ["tenant"])
    op.create_table(
        "sessionstore_erasures",
        sa.Column("id", key, sa.Identity(), nullable=False),
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("erased_at", sa.Text(), nullable=False),
        sa.Column("erased_by", sa.Text(), nullable=False),
        sa.Column("entries", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_sessionstore_erasures"),
    )
    op.create_table(
        "sessionstore_leases",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("holder", sa.Text(), nullable=False),
        sa.Column("expires_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_sessionstore_leases"),
    )
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"DROP TRIGGER {SQLITE_DELETE_TRIGGER}")
        op.execute(f"CREATE TRIGGER {SQLITE_DELETE_TRIGGER} {SQLITE_DELETE_NOW}")
        op.execute(f"""CREATE TRIGGER {SQLITE_UNARCHIVE_TRIGGER} BEFORE DELETE ON {ARCHIVES}
            WHEN {WHOLE_AGAIN}
            BEGIN SELECT RAISE(ABORT, '{UNARCHIVE_REFUSED}'); END""")
        op.execute(f"""CREATE TRIGGER {SQLITE_GONE_TRIGGER} AFTER DELETE ON {SESSIONS}
            BEGIN
              DELETE FROM sessionstore_holds WHERE session_key = OLD.key;
              DELETE FROM {ARCHIVES} WHERE session_key = OLD.key;
            END""")
        return
    op.execute(PG_FUNCTION_NOW)
    op.execute(f"""CREATE FUNCTION {PG_UNARCHIVE_FUNCTION}() RETURNS trigger AS $$
        BEGIN
          IF {WHOLE_AGAIN} THEN
            RAISE EXCEPTION '{UNARCHIVE_REFUSED}';
          END IF;
          RETURN OLD;
        END $$ LANGUAGE plpgsql""")
    op.execute(f"""CREATE TRIGGER {ARCHIVES}_whole_again BEFORE DELETE ON {ARCHIVES}
        FOR EACH ROW EXECUTE FUNCTION {PG_UNARCHIVE_FUNCTION}()""")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"DROP TRIGGER {SQLITE_GONE_TRIGGER}")
        op.execute(f"DROP TRIGGER {SQLITE_UNARCHIVE_TRIGGER}")
        op.execute(f"DROP TRIGGER {SQLITE_DELETE_TRIGGER}")
        op.execute(f"CREATE TRIGGER {SQLITE_DELETE_TRIGGER} {SQLITE_DELETE_BEFORE}")
    else:
        op.execute(f"DROP TRIGGER {ARCHIVES}_whole_again ON {ARCHIVES}")
        op.execute(f"DROP FUNCTION {PG_UNARCHIVE_FUNCTION}()")
        op.execute(PG_FUNCTION_BEFORE)
    for table in ("sessionstore_leases", "sessionstore_erasures", ARCHIVES, "sessionstore_holds",
                  "sessionstore_retention"):
        op.drop_table(table)

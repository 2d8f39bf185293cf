"""Initial schema: sessions, append-only entries.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

Payload = sa.JSON().with_variant(JSONB(), "postgresql")

APPEND_ONLY = "session entries are append-only"


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("cwd", sa.Text(), nullable=False),
        sa.Column("created", sa.Text(), nullable=False),
        sa.Column("parent_session", sa.Text()),
        sa.Column("header", Payload, nullable=False),
        sa.Column("leaf_id", sa.Text()),
        sa.Column("leaf_seq", sa.BigInteger()),
        sa.Column("entry_count", sa.BigInteger(), nullable=False),
        sa.Column("message_count", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.Text()),
        sa.Column("first_message", sa.Text()),
        sa.Column("modified_ms", sa.BigInteger()),
        sa.Column("deleting", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_sessions"),
    )
    op.create_table(
        "entries",
        sa.Column("session_id", sa.String(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("entry_id", sa.Text(), nullable=False),
        sa.Column("parent_id", sa.Text()),
        sa.Column("parent_seq", sa.BigInteger()),
        sa.Column("depth", sa.BigInteger(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("role", sa.Text()),
        sa.Column("timestamp", sa.Text(), nullable=False),
        sa.Column("payload", Payload, nullable=False),
        sa.Column("ctx_depth", sa.BigInteger(), nullable=False),
        sa.Column("compaction_seq", sa.BigInteger()),
        sa.Column("model_seq", sa.BigInteger()),
        sa.Column("thinking_seq", sa.BigInteger()),
        sa.PrimaryKeyConstraint("session_id", "seq", name="pk_entries"),
        sa.UniqueConstraint("session_id", "entry_id", name="uq_entries_session_id_entry_id"),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], name="fk_entries_session_id_sessions"),
        sa.ForeignKeyConstraint(
            ["session_id", "parent_id"],
            ["entries.session_id", "entries.entry_id"],
            name="fk_entries_session_id_parent_id_entries",
        ),
    )
    # Serves the parent foreign key (deleting a session checks every entry for children) and children().
    # parent_id leads so that lookups by (session_id, entry_id) cannot pick this index by mistake
    # (PostgreSQL without statistics did, and scanned the whole session for every append).
    op.create_index("ix_entries_parent", "entries", ["parent_id", "session_id"])
    op.create_index("ix_sessions_cwd", "sessions", ["cwd"])

    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        op.execute(
            f"""CREATE TRIGGER entries_append_only_update BEFORE UPDATE ON entries
            BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: UPDATE refused'); END"""
        )
        op.execute(
            f"""CREATE TRIGGER entries_append_only_delete BEFORE DELETE ON entries
            WHEN NOT EXISTS (SELECT 1 FROM sessions WHERE id = OLD.session_id AND deleting)
            BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: DELETE refused (use delete_session)'); END"""
        )
    elif dialect == "postgresql":
        # lz4 compresses large payloads faster than pglz (about +50% on bulk loads); servers built
        # without lz4 keep the default.
        op.execute(
            """DO $$ BEGIN
                 ALTER TABLE entries ALTER COLUMN payload SET COMPRESSION lz4;
               EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN NULL;
               END $$"""
        )
        op.execute(
            f"""CREATE FUNCTION sessionstore_entries_append_only() RETURNS trigger AS $$
            BEGIN
              IF TG_OP = 'DELETE' AND EXISTS (
                  SELECT 1 FROM sessions WHERE id = OLD.session_id AND deleting) THEN
                RETURN OLD;
              END IF;
              RAISE EXCEPTION '{APPEND_ONLY}: % refused', TG_OP;
            END $$ LANGUAGE plpgsql"""
        )
        op.execute(
            """CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON entries
            FOR EACH ROW EXECUTE FUNCTION sessionstore_entries_append_only()"""
        )
        op.execute(
            """CREATE TRIGGER entries_no_truncate BEFORE TRUNCATE ON entries
            FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_entries_append_only()"""
        )


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS entries_no_truncate ON entries")
        op.execute("DROP TRIGGER IF EXISTS entries_append_only ON entries")
        op.execute("DROP FUNCTION IF EXISTS sessionstore_entries_append_only()")
    op.drop_table("entries")
    op.drop_table("sessions")

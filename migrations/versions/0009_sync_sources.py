"""Sync sources: where a session was mirrored from (``sessionstore sync``) and how far it was read.

``sessionstore_sources`` has at most one row per session (``session_key``) and per file (``path``,
unique): the file's size and mtime (ns) when it was last looked at, the bytes and lines of it that
are in the database (complete lines only), the lengths of the first and of the last consumed line and
a hash of each of the two (a changed prefix is seen without reading the file), the file's
version as read (an incremental read needs v3), the parent ids named so far by no entry (the
"parents precede their children" rule across syncs) and the time of the last sync. The row goes
with its session (``ON DELETE CASCADE``). Sessions stored before this revision have no row (they
were not synced). Downgrade drops the table.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessionstore_sources",
        sa.Column("session_key", sa.BigInteger(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mtime_ns", sa.BigInteger(), nullable=False),
        sa.Column("consumed_bytes", sa.BigInteger(), nullable=False),
        sa.Column("consumed_lines", sa.BigInteger(), nullable=False),
        sa.Column("head_bytes", sa.BigInteger(), nullable=False),
        sa.Column("tail_bytes", sa.BigInteger(), nullable=False),
        sa.Column("check_hash", sa.Text(), nullable=False),
        sa.Column("file_version", sa.Integer(), nullable=False),
        sa.Column("dangling", sa.Text(), nullable=False),
        sa.Column("synced_at", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("session_key", name="pk_sessionstore_sources"),
        sa.UniqueConstraint("path", name="uq_sessionstore_sources_path"),
        sa.ForeignKeyConstraint(["session_key"], ["sessionstore_sessions.key"],
                                name="fk_sessionstore_sources_session_key_sessionstore_sessions", ondelete="CASCADE"),
    )


def downgrade() -> None:
    op.drop_table("sessionstore_sources")

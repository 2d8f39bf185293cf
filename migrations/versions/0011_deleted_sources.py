"""Deleted sync sources: the files whose synced session was deleted on purpose (``rm``,
``SessionStore.delete_session``), which ``sessionstore sync`` does not import again.

``sessionstore_deleted_sources`` has one row per file (``path``, the primary key): the id of the
session that was deleted and the time of the deletion. A sync skips such a file, and a file naming
such a session (moved meanwhile), unless ``--include-deleted``, whose import of the file removes the
row. ``--prune`` removes a session whose file is gone without writing a row. No foreign key: the
session is gone. Downgrade drops the table.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessionstore_deleted_sources",
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("deleted_at", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("path", name="pk_sessionstore_deleted_sources"),
    )


def downgrade() -> None:
    op.drop_table("sessionstore_deleted_sources")

"""Sessions carry the facts of their leaf entry (depth, context depth, latest compaction, model and
thinking entries).

An append needs these facts of its parent. Read with a join on ``entries``, they cost a second
lookup, and on PostgreSQL a second round trip: the session row has to be locked by one statement
and the join read by another (a locking join re-checks only the locked row when it waited, and
would see a stale leaf). On the session row they come with the lock in one statement.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

COLUMNS = {
    "leaf_depth": "depth",
    "leaf_ctx_depth": "ctx_depth",
    "leaf_compaction_seq": "compaction_seq",
    "leaf_model_seq": "model_seq",
    "leaf_thinking_seq": "thinking_seq",
}


def upgrade() -> None:
    for column in COLUMNS:
        op.add_column("sessions", sa.Column(column, sa.BigInteger()))
    assignments = ", ".join(
        f"{column} = (SELECT e.{source} FROM entries e WHERE e.session_id = sessions.id AND e.seq = sessions.leaf_seq)"
        for column, source in COLUMNS.items()
    )
    op.execute(f"UPDATE sessions SET {assignments} WHERE leaf_seq IS NOT NULL")


def downgrade() -> None:
    for column in COLUMNS:
        op.drop_column("sessions", column)

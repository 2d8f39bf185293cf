"""Rate limits of the service (SPEC 15 ``RATE_LIMITED``, issue 24 point 5): ``sessionstore_rate_windows``
counts each tenant's requests per fixed window (its start, epoch ms), one upsert per request, so that the
limit holds across every worker and host on the database. Windows before the current one are removed as
new ones start. Downgrade drops the table.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessionstore_rate_windows",
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("window_ms", sa.BigInteger(), nullable=False),
        sa.Column("requests", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "window_ms", name="pk_sessionstore_rate_windows"),
    )


def downgrade() -> None:
    op.drop_table("sessionstore_rate_windows")

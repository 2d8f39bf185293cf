"""Tokens and idempotency records: who may call the service, and the first answers of retried requests.

``sessionstore_tokens`` has one row per token (``sessionstore token create``): its public id (the
primary key; the part of the token text after ``ss_``, before the secret), its tenant, scope, name,
creation time, expiry and revocation times (ISO 8601 UTC, or null), and the SHA-256 of its secret (hex),
never the secret. ``sessionstore_idempotency`` keeps, per (tenant, key), the fingerprint of the first
request sent with an ``Idempotency-Key`` and the answer it got (status, headers as a JSON object, body),
for 24 hours. Downgrade drops both tables.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessionstore_tokens",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("name", sa.Text()),
        sa.Column("created", sa.Text(), nullable=False),
        sa.Column("expires", sa.Text()),
        sa.Column("revoked", sa.Text()),
        sa.Column("secret_sha256", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_sessionstore_tokens"),
        sa.CheckConstraint("scope IN ('read', 'write', 'admin')", name="ck_sessionstore_tokens_scope"),
    )
    op.create_index("ix_sessionstore_tokens_tenant", "sessionstore_tokens", ["tenant"])
    op.create_table(
        "sessionstore_idempotency",
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("fingerprint", sa.Text(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("headers", sa.Text(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "key", name="pk_sessionstore_idempotency"),
    )
    op.create_index("ix_sessionstore_idempotency_created_ms", "sessionstore_idempotency", ["created_ms"])


def downgrade() -> None:
    op.drop_index("ix_sessionstore_idempotency_created_ms", "sessionstore_idempotency")
    op.drop_table("sessionstore_idempotency")
    op.drop_index("ix_sessionstore_tokens_tenant", "sessionstore_tokens")
    op.drop_table("sessionstore_tokens")

"""PostgreSQL keeps payloads as ``json`` (the text as written) instead of ``jsonb``.

``jsonb`` reorders keys and re-spaces the text, so an export had to decode and re-encode every
entry (about 0.1x the speed of writing the lines) and was equal to the imported file only object
for object. ``json`` stores the line pi wrote, as SQLite does: exports write it back byte for byte,
imports skip the binary conversion, and reads get the text without a server-side re-encode. The
store queries no field inside a payload, so nothing needs ``jsonb``'s operators. SQLite: no change.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _retype(to: str) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    # The append-only trigger refuses UPDATE of rows, not a change of column type (no row trigger
    # fires for ALTER TABLE); the rewrite keeps each stored value, re-rendered by the new type.
    op.execute(f"ALTER TABLE entries ALTER COLUMN payload TYPE {to} USING payload::text::{to}")
    op.execute(f"ALTER TABLE sessions ALTER COLUMN header TYPE {to} USING header::text::{to}")
    op.execute(
        """DO $$ BEGIN
             ALTER TABLE entries ALTER COLUMN payload SET COMPRESSION lz4;
           EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN NULL;
           END $$"""
    )


def upgrade() -> None:
    _retype("json")


def downgrade() -> None:
    _retype("jsonb")

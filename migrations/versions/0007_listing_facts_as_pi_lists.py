"""Listing facts as pi 1.6 lists a session: ``message_count`` counts every ``message`` entry (also one
whose message is not an object), ``first_message`` is the first NON-EMPTY user text (an image-only
first prompt no longer leaves it empty) with text blocks joined as JavaScript joins them, and
``modified_ms`` is the latest activity as pi's ``getMessageActivityTime`` computes it. The three
columns of every session are computed again from its entries, in append order, with the store's own
fold (``sessionstore.store.facts.SessionStats``: the rule has one home, and this revision applies
the rule of the version that runs it). The schema itself does not change; downgrading keeps the
recomputed values (0006's code reads them as they are).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from sessionstore.store.dbtext import to_db
from sessionstore.store.facts import SessionStats
from sessionstore.wire.codec import json_loads

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

BATCH = 2_000
"""Payloads fetched at a time while a session is folded."""


def upgrade() -> None:
    conn = op.get_bind()
    payload = "payload::text" if conn.dialect.name == "postgresql" else "payload"
    keys = [row[0] for row in conn.execute(sa.text("SELECT key FROM sessionstore_sessions ORDER BY key"))]
    read = sa.text(f"SELECT seq, {payload} FROM sessionstore_entries WHERE session_key = :key AND seq >= :after"
                   " ORDER BY seq LIMIT :batch")
    write = sa.text("UPDATE sessionstore_sessions SET message_count = :message_count,"
                    " first_message = :first_message, modified_ms = :modified_ms WHERE key = :key")
    for key in keys:
        stats = SessionStats()
        after = 0
        while rows := conn.execute(read, {"key": key, "after": after, "batch": BATCH}).all():
            for _seq, text in rows:
                stats.add(json_loads(text))
            after = rows[-1][0] + 1
        conn.execute(write, {"key": key, "message_count": stats.message_count,
                             "first_message": to_db(stats.first_message), "modified_ms": stats.modified_ms})


def downgrade() -> None:
    """Nothing to undo: 0006 has the same columns."""

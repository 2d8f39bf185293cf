"""The activity time of a session: ``sessionstore_sessions.active_ms`` (epoch ms, NOT NULL), the time
of its last activity of any kind, which ``ls`` lists by (issue 14: a fork, a new session or an append
made seconds ago comes first; ``modified_ms`` stays pi's last message activity, pi's order).

The store writes it on every write of the session row (``sessionstore.store.facts.later_activity``,
the rule's one home): the header's time, every entry's own timestamp and pi's message activity, and
for writes through the API the time of the write. This revision backfills every existing session with
what its rows tell: the latest of its header's time, its entries' timestamps and ``modified_ms``
(folded by ``facts.SessionStats``, as the store folds an import; sessions whose writes happened
through the API get their entries' times, which those writes set to the time of the write).
Downgrade drops the column.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from sessionstore.models import js
from sessionstore.store.dbtext import from_db
from sessionstore.store.facts import SessionStats
from sessionstore.wire.codec import json_loads

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

BATCH = 2_000
"""Payloads fetched at a time while a session is folded."""


def upgrade() -> None:
    conn = op.get_bind()
    op.add_column("sessionstore_sessions",
                  sa.Column("active_ms", sa.BigInteger(), nullable=False, server_default="0"))
    payload = "payload::text" if conn.dialect.name == "postgresql" else "payload"
    sessions = conn.execute(sa.text("SELECT key, created, modified_ms FROM sessionstore_sessions ORDER BY key")).all()
    read = sa.text(f"SELECT seq, {payload} FROM sessionstore_entries WHERE session_key = :key AND seq >= :after"
                   " ORDER BY seq LIMIT :batch")
    write = sa.text("UPDATE sessionstore_sessions SET active_ms = :active_ms WHERE key = :key")
    for key, created, modified_ms in sessions:
        stats = SessionStats()
        stats.touch(js.date_ms(from_db(created)))
        stats.touch(modified_ms)
        after = 0
        while rows := conn.execute(read, {"key": key, "after": after, "batch": BATCH}).all():
            for _seq, text in rows:
                stats.add(json_loads(text))
            after = rows[-1][0] + 1
        conn.execute(write, {"key": key, "active_ms": stats.activity_ms()})


def downgrade() -> None:
    op.execute("ALTER TABLE sessionstore_sessions DROP COLUMN active_ms")

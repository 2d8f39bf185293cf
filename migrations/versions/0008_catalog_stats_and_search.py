"""The catalog: pi's session stats kept per session, and a search index of every entry's text.

- ``sessionstore_sessions`` gains ``user_messages``, ``assistant_messages``, ``tool_results`` and
  ``tool_calls``: pi's ``getSessionStats`` counts, over every entry of every branch.
- ``sessionstore_usage``: pi's usage sums of a session per breakdown key (``{provider}/{model}``,
  ``Tools/summaries``) and UTC day, so that ``stats`` reads a few rows and no payload.
- ``sessionstore_search``: the folded search texts of each entry that has any (``text``: what pi's
  session picker searches; ``extra``: the rest). SQLite indexes them in ``sessionstore_search_fts``, an
  FTS5 table with the trigram tokenizer over the table's own rows (external content), kept in step by
  triggers; PostgreSQL in pg_trgm GIN indexes, when the extension exists or can be created (without
  it the same queries scan the table). Only ``text`` is indexed: ``extra`` (tool results, thinking,
  bash output: most of the text) is read by a scan when a search asks for it (``--everything``), so
  that imports and appends do not pay a trigram index of every tool output.

Every existing session is folded once, in append order, with the rules the store writes with
(``sessionstore.models.entry_catalog`` and ``facts.SessionStats``: one home for each rule). Downgrade
drops what this revision added. The catalog's rows go with their session (``ON DELETE CASCADE``: they
are derived from its entries, also when raw SQL deletes it).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from sessionstore.models.entry_catalog import usage_of
from sessionstore.store.backend import search_row
from sessionstore.store.facts import SessionStats, UsageBuckets
from sessionstore.store.sqlite import ROWID_SESSION
from sessionstore.wire.codec import json_loads

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

BATCH = 2_000
"""Payloads fetched at a time while a session is folded."""

COUNTERS = ("user_messages", "assistant_messages", "tool_results", "tool_calls")

SQLITE_FTS = (
    "CREATE VIRTUAL TABLE sessionstore_search_fts USING fts5(text, content='sessionstore_search',"
    " content_rowid='rowid', tokenize='trigram case_sensitive 1')",
    "CREATE TRIGGER sessionstore_search_fts_insert AFTER INSERT ON sessionstore_search BEGIN"
    " INSERT INTO sessionstore_search_fts (rowid, text) VALUES (new.rowid, new.text); END",
    "CREATE TRIGGER sessionstore_search_fts_delete AFTER DELETE ON sessionstore_search BEGIN"
    " INSERT INTO sessionstore_search_fts (sessionstore_search_fts, rowid, text)"
    " VALUES ('delete', old.rowid, old.text); END",
    "CREATE TRIGGER sessionstore_search_no_update BEFORE UPDATE ON sessionstore_search BEGIN"
    " SELECT RAISE(ABORT, 'sessionstore_search rows are written once'); END",
)

PG_TRGM_INDEXES = (
    "CREATE INDEX ix_sessionstore_search_text_trgm ON sessionstore_search USING gin (text gin_trgm_ops)",
)


def upgrade() -> None:
    conn = op.get_bind()
    dialect = conn.dialect.name
    for name in COUNTERS:
        op.add_column("sessionstore_sessions",
                      sa.Column(name, sa.BigInteger(), nullable=False, server_default="0"))
    op.create_table(
        "sessionstore_usage",
        sa.Column("session_key", sa.BigInteger(), nullable=False),
        sa.Column("model_key", sa.Text(), nullable=False),
        sa.Column("day", sa.Text(), nullable=False),
        sa.Column("entries", sa.BigInteger(), nullable=False),
        *(sa.Column(c, sa.Double(), nullable=False) for c in ("input", "output", "cache_read", "cache_write", "cost")),
        sa.PrimaryKeyConstraint("session_key", "model_key", "day", name="pk_sessionstore_usage"),
        sa.ForeignKeyConstraint(["session_key"], ["sessionstore_sessions.key"],
                                name="fk_sessionstore_usage_session_key_sessionstore_sessions", ondelete="CASCADE"),
    )
    op.create_table(
        "sessionstore_search",
        _rowid_column(dialect),
        sa.Column("session_key", sa.BigInteger(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("extra", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("rowid", name="pk_sessionstore_search"),
        sa.UniqueConstraint("session_key", "seq", name="uq_sessionstore_search_session_key_seq"),
        sa.ForeignKeyConstraint(["session_key"], ["sessionstore_sessions.key"],
                                name="fk_sessionstore_search_session_key_sessionstore_sessions", ondelete="CASCADE"),
    )
    if dialect == "sqlite":
        for statement in SQLITE_FTS:
            op.execute(statement)
    else:
        _pg_trigram_indexes(conn)
    _backfill(conn, dialect)


def _rowid_column(dialect: str) -> sa.Column[Any]:
    """SQLite: ``INTEGER PRIMARY KEY``, the rowid (the FTS5 table's ``content_rowid``); PostgreSQL: an identity."""
    if dialect == "sqlite":
        return sa.Column("rowid", sa.Integer(), autoincrement=True)
    return sa.Column("rowid", sa.BigInteger(), sa.Identity())


def _pg_trigram_indexes(conn: Any) -> None:
    """pg_trgm's GIN indexes, in a savepoint: a server without the extension (or a role that may not
    create it) keeps the table unindexed, and the migration goes on."""
    try:
        with conn.begin_nested():
            conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_trgm"))
            for statement in PG_TRGM_INDEXES:
                conn.execute(sa.text(statement))
    except sa.exc.DBAPIError:
        pass


def _backfill(conn: Any, dialect: str) -> None:
    payload = "payload::text" if dialect == "postgresql" else "payload"
    keys = [row[0] for row in conn.execute(sa.text("SELECT key FROM sessionstore_sessions ORDER BY key"))]
    read = sa.text(f"SELECT seq, {payload} FROM sessionstore_entries WHERE session_key = :key AND seq >= :after"
                   " ORDER BY seq LIMIT :batch")
    counters = sa.text("UPDATE sessionstore_sessions SET " + ", ".join(f"{c} = :{c}" for c in COUNTERS)
                       + " WHERE key = :key")
    # (SQLite: the rowid the store gives a search row, which its FTS queries read the session from)
    rowid = f":session_key * {ROWID_SESSION} + :seq" if dialect == "sqlite" else "DEFAULT"
    add_search = sa.text(f"INSERT INTO sessionstore_search (rowid, session_key, seq, role, text, extra)"
                         f" VALUES ({rowid}, :session_key, :seq, :role, :text, :extra)")
    add_usage = sa.text("INSERT INTO sessionstore_usage (session_key, model_key, day, entries, input, output,"
                        " cache_read, cache_write, cost) VALUES (:session_key, :model_key, :day, :entries, :input,"
                        " :output, :cache_read, :cache_write, :cost)")
    for key in keys:
        stats = SessionStats()
        buckets = UsageBuckets()
        after = 0
        while rows := conn.execute(read, {"key": key, "after": after, "batch": BATCH}).all():
            found = []
            for seq, text in rows:
                entry = json_loads(text)
                stats.add(entry)
                buckets.add(entry, usage_of(entry))
                row = search_row(key, seq, entry)
                if row is not None:
                    found.append(row._asdict())
            if found:
                conn.execute(add_search, found)
            after = rows[-1][0] + 1
        conn.execute(counters, {"key": key, **{c: getattr(stats, c) for c in COUNTERS}})
        usage_rows = [row._asdict() for row in buckets.rows(key)]
        if usage_rows:
            conn.execute(add_usage, usage_rows)


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        for name in ("sessionstore_search_fts_insert", "sessionstore_search_fts_delete",
                     "sessionstore_search_no_update"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS sessionstore_search_fts")
    op.drop_table("sessionstore_search")
    op.drop_table("sessionstore_usage")
    for name in COUNTERS:  # (SQLite 3.35 drops a column in place: the table and its triggers stay)
        op.execute(f"ALTER TABLE sessionstore_sessions DROP COLUMN {name}")

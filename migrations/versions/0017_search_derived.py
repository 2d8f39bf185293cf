"""The search index is derived data (issue 25): appends no longer write it, it catches up from the
committed entries.

- ``sessionstore_search_marks``: per session, ``next_seq``, how far its search rows go (every entry with
  a lower seq has its row, when it has search text). Backfilled from ``entry_count``: until now every
  write added its entries' search rows in its own transaction, so every session is indexed to its end.
- ``sessionstore_settings``: settings of the database, here ``search_index`` = ``on``.
- SQLite: the FTS5 trigram table is made again with ``columnsize=0`` (no per-row size table: nothing
  ranks by it), rebuilt from ``sessionstore_search`` by FTS5's ``rebuild``. It keeps the trigrams'
  positions (``detail=full``): without them (``detail=none``, measured: about a quarter of the index's
  bytes) FTS5 must check each candidate row's stored text against the needle, and the search benchmark's
  p50 went from 25 to 66 ms (a phrase 41 -> 583 ms) against its 50 ms target.

Downgrade drops the two tables and makes the 0008 FTS table again; since a downgraded store writes
search rows with each append again, the sessions whose index lagged are indexed to their end first.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from sessionstore.store.backend import search_row
from sessionstore.store.sqlite import ROWID_SESSION
from sessionstore.wire.codec import json_loads

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

FTS_TRIGGERS = (
    "CREATE TRIGGER sessionstore_search_fts_insert AFTER INSERT ON sessionstore_search BEGIN"
    " INSERT INTO sessionstore_search_fts (rowid, text) VALUES (new.rowid, new.text); END",
    "CREATE TRIGGER sessionstore_search_fts_delete AFTER DELETE ON sessionstore_search BEGIN"
    " INSERT INTO sessionstore_search_fts (sessionstore_search_fts, rowid, text)"
    " VALUES ('delete', old.rowid, old.text); END",
)
FTS_0017 = (
    "CREATE VIRTUAL TABLE sessionstore_search_fts USING fts5(text, content='sessionstore_search',"
    " content_rowid='rowid', tokenize='trigram case_sensitive 1', columnsize=0)"
)
FTS_0008 = (
    "CREATE VIRTUAL TABLE sessionstore_search_fts USING fts5(text, content='sessionstore_search',"
    " content_rowid='rowid', tokenize='trigram case_sensitive 1')"
)


def upgrade() -> None:
    op.create_table(
        "sessionstore_search_marks",
        sa.Column("session_key", sa.BigInteger(), nullable=False),
        sa.Column("next_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("session_key", name="pk_sessionstore_search_marks"),
        sa.ForeignKeyConstraint(["session_key"], ["sessionstore_sessions.key"],
                                name="fk_sessionstore_search_marks_session_key_sessionstore_sessions",
                                ondelete="CASCADE"),
    )
    op.create_table(
        "sessionstore_settings",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_sessionstore_settings"),
    )
    op.execute("INSERT INTO sessionstore_settings (name, value) VALUES ('search_index', 'on')")
    op.execute("INSERT INTO sessionstore_search_marks (session_key, next_seq)"
               " SELECT key, entry_count FROM sessionstore_sessions WHERE entry_count > 0")
    if op.get_bind().dialect.name == "sqlite":
        _make_fts(FTS_0017)


def _make_fts(create: str) -> None:
    for name in ("sessionstore_search_fts_insert", "sessionstore_search_fts_delete"):
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.execute("DROP TABLE IF EXISTS sessionstore_search_fts")
    op.execute(create)
    for statement in FTS_TRIGGERS:
        op.execute(statement)
    op.execute("INSERT INTO sessionstore_search_fts (sessionstore_search_fts) VALUES ('rebuild')")


def downgrade() -> None:
    conn = op.get_bind()
    dialect = conn.dialect.name
    _index_to_the_end(conn, dialect)
    op.drop_table("sessionstore_settings")
    op.drop_table("sessionstore_search_marks")
    if dialect == "sqlite":
        _make_fts(FTS_0008)


def _index_to_the_end(conn: sa.Connection, dialect: str) -> None:
    """Index what lags (revision 0015's store reads the search rows as complete); with the index off,
    every session."""
    payload = "payload::text" if dialect == "postgresql" else "payload"
    lagging = conn.execute(sa.text(
        "SELECT s.key, COALESCE(m.next_seq, 0) FROM sessionstore_sessions s"
        " LEFT JOIN sessionstore_search_marks m ON m.session_key = s.key"
        " WHERE s.entry_count > COALESCE(m.next_seq, 0)")).all()
    rowid = f":session_key * {ROWID_SESSION} + :seq" if dialect == "sqlite" else "DEFAULT"
    add = sa.text(f"INSERT INTO sessionstore_search (rowid, session_key, seq, role, text, extra)"
                  f" VALUES ({rowid}, :session_key, :seq, :role, :text, :extra)")
    read = sa.text(f"SELECT seq, {payload} FROM sessionstore_entries WHERE session_key = :key AND seq >= :after"
                   " ORDER BY seq")
    for key, after in lagging:
        rows = [row._asdict() for seq, text in conn.execute(read, {"key": key, "after": after})
                if (row := search_row(key, seq, json_loads(text))) is not None]
        if rows:
            conn.execute(add, rows)

"""SQLite's search index becomes a vocabulary: the terms of the search rows and the sessions holding each,
instead of an FTS5 trigram index of every search row's text (issue 25: bytes per message).

The one question the index answers (``Tx.sessions_with_text``) is which sessions have an entry whose
folded text holds a needle, and such a needle has no space (a phrase with spaces is answered from its
words, then checked against the rows; see ``store/sqlite.py``). The folded text's whitespace runs are
single spaces, so a space-free needle is in a text exactly when it is in one of the text's
space-separated terms. So the index keeps each distinct term once:

- ``sessionstore_search_terms``: ``id``, ``term`` (unique);
- ``sessionstore_search_postings``: ``(term_id, session_key)``, one row per term a session's rows hold,
  and an index by ``(session_key, term_id)`` for a session's removal (its terms held by no other session
  go with it);
- ``sessionstore_search_terms_fts``: FTS5 trigrams of the terms (external content, kept by triggers),
  which finds the terms that hold a needle of three characters or more; a shorter needle scans the terms.

The search rows (``sessionstore_search``) stay: they give the hits and the phrases. The 0017 FTS5 table of
their text and its triggers are dropped. PostgreSQL is unchanged (pg_trgm indexes the rows' text).

Downgrade drops the three and makes 0017's FTS5 table again, rebuilt from the search rows.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

SEARCH_FTS_TRIGGERS = ("sessionstore_search_fts_insert", "sessionstore_search_fts_delete")
FTS_0017 = (
    "CREATE VIRTUAL TABLE sessionstore_search_fts USING fts5(text, content='sessionstore_search',"
    " content_rowid='rowid', tokenize='trigram case_sensitive 1', columnsize=0)"
)
FTS_0017_TRIGGERS = (
    "CREATE TRIGGER sessionstore_search_fts_insert AFTER INSERT ON sessionstore_search BEGIN"
    " INSERT INTO sessionstore_search_fts (rowid, text) VALUES (new.rowid, new.text); END",
    "CREATE TRIGGER sessionstore_search_fts_delete AFTER DELETE ON sessionstore_search BEGIN"
    " INSERT INTO sessionstore_search_fts (sessionstore_search_fts, rowid, text)"
    " VALUES ('delete', old.rowid, old.text); END",
)
TERMS = (
    "CREATE TABLE sessionstore_search_terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL,"
    " CONSTRAINT uq_sessionstore_search_terms_term UNIQUE (term))",
    "CREATE TABLE sessionstore_search_postings (term_id INTEGER NOT NULL, session_key INTEGER NOT NULL,"
    " CONSTRAINT pk_sessionstore_search_postings PRIMARY KEY (term_id, session_key)) WITHOUT ROWID",
    "CREATE INDEX ix_sessionstore_search_postings_session ON sessionstore_search_postings (session_key, term_id)",
    "CREATE VIRTUAL TABLE sessionstore_search_terms_fts USING fts5(term, content='sessionstore_search_terms',"
    " content_rowid='id', tokenize='trigram case_sensitive 1', columnsize=0)",
    "CREATE TRIGGER sessionstore_search_terms_fts_insert AFTER INSERT ON sessionstore_search_terms BEGIN"
    " INSERT INTO sessionstore_search_terms_fts (rowid, term) VALUES (new.id, new.term); END",
    "CREATE TRIGGER sessionstore_search_terms_fts_delete AFTER DELETE ON sessionstore_search_terms BEGIN"
    " INSERT INTO sessionstore_search_terms_fts (sessionstore_search_terms_fts, rowid, term)"
    " VALUES ('delete', old.id, old.term); END",
    "CREATE TRIGGER sessionstore_search_terms_no_update BEFORE UPDATE ON sessionstore_search_terms BEGIN"
    " SELECT RAISE(ABORT, 'a search term is never changed'); END",
)
BACKFILL_ROWS = 20_000


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for name in SEARCH_FTS_TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.execute("DROP TABLE IF EXISTS sessionstore_search_fts")
    for statement in TERMS:
        op.execute(statement)
    _backfill(op.get_bind())


def _backfill(conn: sa.Connection) -> None:
    """The terms and postings of the search rows there are, a session at a time."""
    from sessionstore.store.sqlite import add_terms

    raw: Any = conn.connection.driver_connection
    cursor = raw.cursor()
    keys = [key for (key,) in cursor.execute("SELECT DISTINCT session_key FROM sessionstore_search").fetchall()]
    for key in keys:
        cursor.execute("SELECT text FROM sessionstore_search WHERE session_key = ?", (key,))
        while rows := cursor.fetchmany(BACKFILL_ROWS):
            add_terms(raw.cursor(), {key: {term for (text,) in rows for term in text.split(" ")}})


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for name in ("sessionstore_search_terms_fts_insert", "sessionstore_search_terms_fts_delete",
                 "sessionstore_search_terms_no_update"):
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    for table in ("sessionstore_search_terms_fts", "sessionstore_search_postings", "sessionstore_search_terms"):
        op.execute(f"DROP TABLE IF EXISTS {table}")
    op.execute(FTS_0017)
    for statement in FTS_0017_TRIGGERS:
        op.execute(statement)
    op.execute("INSERT INTO sessionstore_search_fts (sessionstore_search_fts) VALUES ('rebuild')")

"""The database schema (SQLAlchemy Core). Created only by the Alembic revisions in ``migrations/``.

``entries`` is append-only: triggers of the migrations (0001, 0005) refuse UPDATE, DELETE and SQLite's
REPLACE of entries, and entries go only with their whole session (``deleting`` is one-way, and readers
treat a marked session as gone). Besides the entry itself (``payload``, pi's JSON with every field)
each row stores immutable facts about its ancestry, computed once at append time, so that resuming
reads only what the context needs:

- ``depth``: distance from the root (roots have 0);
- ``ctx_depth``: the depth at which the context of a leaf here starts (0 without compaction; for the
  last compaction on the path, the depth of its first kept entry when that entry is on the path,
  else the compaction's own depth);
- ``compaction_seq`` / ``model_seq`` / ``thinking_seq``: the latest compaction, model-setting entry
  (``model_change`` or assistant message) and ``thinking_level_change`` on the path, this entry
  included.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

SCHEMA_REVISION = "0005"
"""The Alembic revision this code needs (a test checks it is the head of ``migrations/versions``)."""

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

Payload = JSON()
"""JSON text as written (PostgreSQL ``json``, not ``jsonb``: exports give back the stored line byte for byte)."""

sessions = Table(
    "sessions",
    metadata,
    Column("id", String, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("cwd", Text, nullable=False),
    Column("created", Text, nullable=False),
    Column("parent_session", Text),
    Column("header", Payload, nullable=False),
    Column("leaf_id", Text),
    Column("leaf_seq", BigInteger),
    # The leaf entry's facts (its row's depth .. thinking_seq), read by appends with the session row.
    Column("leaf_depth", BigInteger),
    Column("leaf_ctx_depth", BigInteger),
    Column("leaf_compaction_seq", BigInteger),
    Column("leaf_model_seq", BigInteger),
    Column("leaf_thinking_seq", BigInteger),
    Column("entry_count", BigInteger, nullable=False),
    Column("message_count", BigInteger, nullable=False),
    Column("name", Text),
    Column("first_message", Text),
    Column("modified_ms", BigInteger),
    Column("deleting", Boolean, nullable=False),
    Index("ix_sessions_cwd", "cwd"),
)

entries = Table(
    "entries",
    metadata,
    Column("session_id", String, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("entry_id", Text, nullable=False),
    Column("parent_id", Text),
    Column("parent_seq", BigInteger),
    Column("depth", BigInteger, nullable=False),
    Column("type", Text, nullable=False),
    Column("role", Text),
    Column("timestamp", Text, nullable=False),
    Column("payload", Payload, nullable=False),
    Column("ctx_depth", BigInteger, nullable=False),
    Column("compaction_seq", BigInteger),
    Column("model_seq", BigInteger),
    Column("thinking_seq", BigInteger),
    PrimaryKeyConstraint("session_id", "seq"),
    UniqueConstraint("session_id", "entry_id"),
    ForeignKeyConstraint(["session_id"], ["sessions.id"]),
    # The parent link the database checks is parent_seq (the parent's primary key); parent_id is the
    # same parent's id, kept as data. The index serves children() and the foreign key.
    ForeignKeyConstraint(["session_id", "parent_seq"], ["entries.session_id", "entries.seq"]),
    Index("ix_entries_children", "session_id", "parent_seq"),
    CheckConstraint(
        "(parent_id IS NULL AND parent_seq IS NULL)"
        " OR (parent_id IS NOT NULL AND parent_seq IS NOT NULL AND parent_seq < seq)",
        name="ck_entries_parent_link",
    ),
)

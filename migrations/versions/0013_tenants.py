"""Tenants: every session belongs to one (``sessionstore_sessions.tenant``), and every key, index and
uniqueness rule of the sessions and of their sync sources starts with it (SPEC 16, issue 23).

- ``sessionstore_sessions.tenant TEXT NOT NULL``; existing sessions are the tenant ``default``'s.
  The session id is unique per tenant, ``(tenant, id)`` (two tenants may import the same pi file),
  no longer alone; the listing index by ``cwd`` is ``(tenant, cwd)``. The tenant is a header column
  (0012's ``sessionstore_sessions_header_fixed`` refuses an ``UPDATE`` that changes it), and SQLite's
  ``sessionstore_sessions_no_replace`` refuses an ``INSERT`` over a ``(tenant, id)`` that is taken.
- ``sessionstore_sources`` gets ``tenant`` (its session's) and ``UNIQUE (tenant, path)`` instead of
  ``UNIQUE (path)``: two tenants may sync the same directory; ``sessionstore_deleted_sources`` gets
  ``tenant`` and the primary key ``(tenant, path)``.
- Entries, usage and search rows name their session by its key, which is already one tenant's.

SQLite cannot drop a ``UNIQUE`` constraint: the three tables are rebuilt (copied to a temporary
table, dropped, created anew under their own names, copied back, keys kept), with their indexes and
triggers. That needs ``foreign_keys`` off (a ``DROP TABLE`` would otherwise cascade to the usage,
search and source rows): ``store/migrate.py`` and ``env.py`` turn it off around an upgrade, as
SQLite's procedure for such changes asks, and this revision checks the keys afterwards
(``PRAGMA foreign_key_check``). PostgreSQL alters the tables in place.

Downgrade refuses a database where a tenant other than ``default`` holds sessions or sources (the
older schema cannot tell them apart); else it restores 0012's constraints, indexes and triggers.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

SESSIONS = "sessionstore_sessions"
ENTRIES = "sessionstore_entries"
SOURCES = "sessionstore_sources"
DELETED = "sessionstore_deleted_sources"
DEFAULT_TENANT = "default"

APPEND_ONLY = "session entries are append-only"
HEADER_FIXED = "the header of a session never changes"
OVER_A_SESSION = f"{APPEND_ONLY}: INSERT over an existing session refused (UNIQUE constraint failed: {SESSIONS}."
HEADER_TRIGGER = f"{SESSIONS}_header_fixed"
PG_REFUSE_FUNCTION = "sessionstore_refuse"
"""0006's function: raises its argument after "session entries are append-only: "."""

SESSION_COLUMNS = (
    "key", "id", "version", "cwd", "created", "parent_session", "header", "leaf_id", "leaf_seq", "leaf_depth",
    "leaf_ctx_depth", "leaf_run_start", "leaf_compaction_seq", "leaf_model_seq", "leaf_thinking_seq",
    "entry_count", "message_count", "name", "first_message", "modified_ms", "deleting", "user_messages",
    "assistant_messages", "tool_results", "tool_calls", "active_ms",
)
SOURCE_COLUMNS = (
    "session_key", "path", "size", "mtime_ns", "consumed_bytes", "consumed_lines", "head_bytes", "tail_bytes",
    "check_hash", "file_version", "dangling", "synced_at",
)
DELETED_COLUMNS = ("path", "session_id", "deleted_at")


def _header_columns(with_tenant: bool) -> tuple[str, ...]:
    return ("header", "version", "cwd", "created", "parent_session", *(("tenant",) if with_tenant else ()))


def _sessions_ddl(with_tenant: bool) -> str:
    tenant = "tenant TEXT NOT NULL,\n        " if with_tenant else ""  # (last, as PostgreSQL adds it)
    unique = "uq_sessionstore_sessions_tenant_id UNIQUE (tenant, id)" if with_tenant else \
        "uq_sessionstore_sessions_id UNIQUE (id)"
    return f"""CREATE TABLE {SESSIONS} (
        key INTEGER NOT NULL,
        id TEXT NOT NULL,
        version INTEGER NOT NULL,
        cwd TEXT NOT NULL,
        created TEXT NOT NULL,
        parent_session TEXT,
        header JSON NOT NULL,
        leaf_id TEXT,
        leaf_seq BIGINT,
        leaf_depth BIGINT,
        leaf_ctx_depth BIGINT,
        leaf_run_start BIGINT,
        leaf_compaction_seq BIGINT,
        leaf_model_seq BIGINT,
        leaf_thinking_seq BIGINT,
        entry_count BIGINT NOT NULL,
        message_count BIGINT NOT NULL,
        name TEXT,
        first_message TEXT,
        modified_ms BIGINT,
        deleting BOOLEAN NOT NULL,
        user_messages BIGINT DEFAULT '0' NOT NULL,
        assistant_messages BIGINT DEFAULT '0' NOT NULL,
        tool_results BIGINT DEFAULT '0' NOT NULL,
        tool_calls BIGINT DEFAULT '0' NOT NULL,
        active_ms BIGINT DEFAULT '0' NOT NULL,
        {tenant}CONSTRAINT pk_{SESSIONS} PRIMARY KEY (key),
        CONSTRAINT {unique}
        )"""


def _sources_ddl(with_tenant: bool) -> str:
    tenant = "tenant TEXT NOT NULL,\n        " if with_tenant else ""  # (last, as PostgreSQL adds it)
    unique = "uq_sessionstore_sources_tenant_path UNIQUE (tenant, path)" if with_tenant else \
        "uq_sessionstore_sources_path UNIQUE (path)"
    return f"""CREATE TABLE {SOURCES} (
        session_key BIGINT NOT NULL,
        path TEXT NOT NULL,
        size BIGINT NOT NULL,
        mtime_ns BIGINT NOT NULL,
        consumed_bytes BIGINT NOT NULL,
        consumed_lines BIGINT NOT NULL,
        head_bytes BIGINT NOT NULL,
        tail_bytes BIGINT NOT NULL,
        check_hash TEXT NOT NULL,
        file_version INTEGER NOT NULL,
        dangling TEXT NOT NULL,
        synced_at TEXT NOT NULL,
        {tenant}CONSTRAINT pk_{SOURCES} PRIMARY KEY (session_key),
        CONSTRAINT {unique},
        CONSTRAINT fk_{SOURCES}_session_key_{SESSIONS} FOREIGN KEY (session_key) REFERENCES {SESSIONS} (key)
          ON DELETE CASCADE
        )"""


def _deleted_ddl(with_tenant: bool) -> str:
    tenant = "tenant TEXT NOT NULL,\n        " if with_tenant else ""  # (last, as PostgreSQL adds it)
    key = "tenant, path" if with_tenant else "path"
    return f"""CREATE TABLE {DELETED} (
        path TEXT NOT NULL,
        session_id TEXT NOT NULL,
        deleted_at TEXT NOT NULL,
        {tenant}CONSTRAINT pk_{DELETED} PRIMARY KEY ({key})
        )"""


def _sqlite_session_triggers(with_tenant: bool) -> list[str]:
    """0006's triggers on the sessions table and 0012's header trigger; with tenants, a taken id is
    one taken in the same tenant, and the tenant is a header column."""
    same = "tenant = NEW.tenant AND id = NEW.id" if with_tenant else "id = NEW.id"
    taken = f"{SESSIONS}.tenant, {SESSIONS}.id" if with_tenant else f"{SESSIONS}.id"
    header = _header_columns(with_tenant)
    changed = " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in header)
    return [
        f"""CREATE TRIGGER {SESSIONS}_deleting_one_way BEFORE UPDATE OF deleting ON {SESSIONS}
        WHEN OLD.deleting AND NEW.deleting IS NOT OLD.deleting
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: a session marked deleting stays marked (its entries go with it:"""
        """ use delete_session)'); END""",
        f"""CREATE TRIGGER {SESSIONS}_key_fixed BEFORE UPDATE OF key, id, rowid, oid, _rowid_ ON {SESSIONS}
        WHEN NEW.id IS NOT OLD.id OR NEW.key IS NOT OLD.key
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: the id and key of a session never change'); END""",
        f"""CREATE TRIGGER {SESSIONS}_delete_empty_only BEFORE DELETE ON {SESSIONS}
        WHEN EXISTS (SELECT 1 FROM {ENTRIES} WHERE session_key = OLD.key)
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: DELETE of a session with entries refused (use delete_session)');
        END""",
        f"""CREATE TRIGGER {SESSIONS}_no_replace BEFORE INSERT ON {SESSIONS}
        WHEN EXISTS (SELECT 1 FROM {SESSIONS} WHERE {same})
          OR EXISTS (SELECT 1 FROM {SESSIONS} WHERE key = NEW.key)
        BEGIN
          SELECT RAISE(ABORT, '{OVER_A_SESSION}{taken.removeprefix(SESSIONS + ".")})')
          WHERE EXISTS (SELECT 1 FROM {SESSIONS} WHERE {same});
          SELECT RAISE(ABORT, '{OVER_A_SESSION}key)');
        END""",
        f"""CREATE TRIGGER {SESSIONS}_insert_fresh_only AFTER INSERT ON {SESSIONS}
        WHEN EXISTS (SELECT 1 FROM {ENTRIES} WHERE session_key = NEW.key)
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: INSERT of a session row over existing entries refused'); END""",
        f"""CREATE TRIGGER {HEADER_TRIGGER} BEFORE UPDATE OF {", ".join(header)} ON {SESSIONS}
        WHEN {changed}
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}: {HEADER_FIXED}'); END""",
    ]


def _sqlite_rebuild(table: str, ddl: str, columns: tuple[str, ...], tenant_value: str | None,
                    after: list[str]) -> None:
    """Rebuild ``table`` as ``ddl`` (its name kept, so that the other tables' foreign keys and
    triggers name it still): its rows go to a temporary table and come back, with ``tenant_value``
    (SQL) as their tenant when given."""
    copy = f"{table}_0013"
    names = ", ".join(columns)
    op.execute(f"CREATE TEMP TABLE {copy} AS SELECT * FROM {table}")
    op.execute(f"DROP TABLE {table}")  # its indexes and triggers with it; foreign_keys is off: no cascade
    op.execute(ddl)
    if tenant_value is None:
        op.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM temp.{copy}")
    else:
        op.execute(f"INSERT INTO {table} ({names}, tenant) SELECT {names}, {tenant_value} FROM temp.{copy}")
    op.execute(f"DROP TABLE temp.{copy}")
    for statement in after:
        op.execute(statement)


def _check_sqlite_foreign_keys_off() -> None:
    conn = op.get_bind()
    if conn.execute(text("PRAGMA foreign_keys")).scalar():
        raise RuntimeError("revision 0013 rebuilds SQLite tables and needs PRAGMA foreign_keys off during the"
                           " upgrade (sessionstore db upgrade and the alembic env do so)")


def _check_sqlite_keys() -> None:
    problems = op.get_bind().execute(text("PRAGMA foreign_key_check")).all()
    if problems:
        raise RuntimeError(f"revision 0013 left rows whose foreign key names nothing: {problems[:5]}")


def _sqlite(with_tenant: bool) -> None:
    _check_sqlite_foreign_keys_off()
    tenant = f"'{DEFAULT_TENANT}'" if with_tenant else None
    cwd_index = (f"CREATE INDEX ix_{SESSIONS}_tenant_cwd ON {SESSIONS} (tenant, cwd)" if with_tenant
                 else f"CREATE INDEX ix_{SESSIONS}_cwd ON {SESSIONS} (cwd)")
    _sqlite_rebuild(SESSIONS, _sessions_ddl(with_tenant), SESSION_COLUMNS, tenant,
                    [cwd_index, *_sqlite_session_triggers(with_tenant)])
    # A source's tenant is its session's.
    source_tenant = f"(SELECT s.tenant FROM {SESSIONS} s WHERE s.key = session_key)" if with_tenant else None
    _sqlite_rebuild(SOURCES, _sources_ddl(with_tenant), SOURCE_COLUMNS, source_tenant, [])
    _sqlite_rebuild(DELETED, _deleted_ddl(with_tenant), DELETED_COLUMNS, tenant, [])
    _check_sqlite_keys()


def _pg_header_trigger(with_tenant: bool) -> None:
    header = _header_columns(with_tenant)
    changed = " OR ".join(
        f"OLD.{c}::text IS DISTINCT FROM NEW.{c}::text" if c == "header" else f"OLD.{c} IS DISTINCT FROM NEW.{c}"
        for c in header
    )
    op.execute(f"DROP TRIGGER IF EXISTS {HEADER_TRIGGER} ON {SESSIONS}")
    op.execute(
        f"""CREATE TRIGGER {HEADER_TRIGGER} BEFORE UPDATE OF {", ".join(header)} ON {SESSIONS}
        FOR EACH ROW WHEN ({changed}) EXECUTE FUNCTION {PG_REFUSE_FUNCTION}('{HEADER_FIXED}')"""
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite(with_tenant=True)
        return
    for table in (SESSIONS, SOURCES, DELETED):
        op.execute(f"ALTER TABLE {table} ADD COLUMN tenant TEXT NOT NULL DEFAULT '{DEFAULT_TENANT}'")
        op.execute(f"ALTER TABLE {table} ALTER COLUMN tenant DROP DEFAULT")  # every writer names its tenant
    op.execute(f"UPDATE {SOURCES} src SET tenant = s.tenant FROM {SESSIONS} s WHERE s.key = src.session_key")
    op.execute(f"ALTER TABLE {SESSIONS} DROP CONSTRAINT uq_{SESSIONS}_id")
    op.execute(f"ALTER TABLE {SESSIONS} ADD CONSTRAINT uq_{SESSIONS}_tenant_id UNIQUE (tenant, id)")
    op.execute(f"DROP INDEX ix_{SESSIONS}_cwd")
    op.execute(f"CREATE INDEX ix_{SESSIONS}_tenant_cwd ON {SESSIONS} (tenant, cwd)")
    op.execute(f"ALTER TABLE {SOURCES} DROP CONSTRAINT uq_{SOURCES}_path")
    op.execute(f"ALTER TABLE {SOURCES} ADD CONSTRAINT uq_{SOURCES}_tenant_path UNIQUE (tenant, path)")
    op.execute(f"ALTER TABLE {DELETED} DROP CONSTRAINT pk_{DELETED}")
    op.execute(f"ALTER TABLE {DELETED} ADD CONSTRAINT pk_{DELETED} PRIMARY KEY (tenant, path)")
    _pg_header_trigger(with_tenant=True)


def downgrade() -> None:
    conn = op.get_bind()
    for table in (SESSIONS, SOURCES, DELETED):
        others = conn.execute(text(f"SELECT count(*) FROM {table} WHERE tenant <> :t"), {"t": DEFAULT_TENANT}).scalar()
        if others:
            raise RuntimeError(f"cannot downgrade below revision 0013: {others} rows of {table} belong to tenants"
                               f" other than {DEFAULT_TENANT!r} (delete them first)")
    if conn.dialect.name == "sqlite":
        _sqlite(with_tenant=False)
        return
    _pg_header_trigger(with_tenant=False)
    op.execute(f"ALTER TABLE {DELETED} DROP CONSTRAINT pk_{DELETED}")
    op.execute(f"ALTER TABLE {DELETED} ADD CONSTRAINT pk_{DELETED} PRIMARY KEY (path)")
    op.execute(f"ALTER TABLE {SOURCES} DROP CONSTRAINT uq_{SOURCES}_tenant_path")
    op.execute(f"ALTER TABLE {SOURCES} ADD CONSTRAINT uq_{SOURCES}_path UNIQUE (path)")
    op.execute(f"DROP INDEX ix_{SESSIONS}_tenant_cwd")
    op.execute(f"CREATE INDEX ix_{SESSIONS}_cwd ON {SESSIONS} (cwd)")
    op.execute(f"ALTER TABLE {SESSIONS} DROP CONSTRAINT uq_{SESSIONS}_tenant_id")
    op.execute(f"ALTER TABLE {SESSIONS} ADD CONSTRAINT uq_{SESSIONS}_id UNIQUE (id)")
    for table in (SESSIONS, SOURCES, DELETED):
        op.execute(f"ALTER TABLE {table} DROP COLUMN tenant")

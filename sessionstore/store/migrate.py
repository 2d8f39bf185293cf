"""Schema versions through Alembic (the plain-function API; the CLI's ``db`` commands wrap it).

Opening a store at the current revision reads ``alembic_version`` with one statement; Alembic
itself is imported only to upgrade or to list the revisions it knows.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text

from sessionstore.errors import SchemaError, SchemaTooNewError
from sessionstore.store.engine import WRITE
from sessionstore.store.schema import SCHEMA_REVISION

if TYPE_CHECKING:
    from alembic.config import Config


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    # `migrations/` is installed as the package `sessionstore._migrations` (see pyproject.toml).
    location = Path(str(import_module("sessionstore._migrations").__file__)).parent
    config.set_main_option("script_location", str(location))
    return config


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory

    return {script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()}


def current_revision(conn: Connection) -> str | None:
    """The revision ``alembic_version`` records (``None``: no sessionstore schema yet)."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    rows = conn.execute(text("SELECT version_num FROM alembic_version")).all()
    if len(rows) > 1:  # not a schema sessionstore wrote
        raise SchemaError(f"the database's schema version cannot be read: {len(rows)} rows in alembic_version")
    return str(rows[0][0]) if rows else None


def _too_new(current: str) -> SchemaTooNewError:
    return SchemaTooNewError(
        f"the database was written by a newer version of sessionstore (schema revision {current!r}; this one knows"
        f" revisions up to {SCHEMA_REVISION!r}): upgrade sessionstore"
    )


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Bring the schema to ``revision``; safe when several processes open a new database at once."""
    with engine.connect().execution_options(**WRITE) as conn:
        with conn.begin():
            current = current_revision(conn)
            if current != SCHEMA_REVISION or revision != "head":
                if current is not None and current not in known_revisions():
                    raise _too_new(current)
                from alembic import command

                config = alembic_config()
                config.attributes["connection"] = conn
                command.upgrade(config, revision)
        with conn.begin():
            return current_revision(conn)


def check(conn: Connection) -> None:
    """Raise :class:`SchemaError` unless the schema is at :data:`SCHEMA_REVISION`."""
    current = current_revision(conn)
    if current == SCHEMA_REVISION:
        return
    if current is None:
        raise SchemaError("the database has no sessionstore schema: run `sessionstore db upgrade`")
    if current not in known_revisions():
        raise _too_new(current)
    raise SchemaError(
        f"the database schema is at revision {current!r}, this version needs {SCHEMA_REVISION!r}:"
        " run `sessionstore db upgrade`"
    )


def ensure_schema(engine: Engine, *, auto_upgrade: bool) -> None:
    """Check the schema on open; on SQLite (``auto_upgrade``) a new or older database is upgraded."""
    with engine.connect() as conn:
        current = current_revision(conn)
        conn.rollback()
    if current == SCHEMA_REVISION:
        return
    if auto_upgrade:
        with engine.connect() as conn:
            try:
                check(conn)
            except SchemaTooNewError:
                raise
            except SchemaError:
                pass
            finally:
                conn.rollback()
        upgrade(engine)
        return
    with engine.connect() as conn:
        check(conn)

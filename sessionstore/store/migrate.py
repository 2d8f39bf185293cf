"""Schema versions through Alembic (the plain-function API; the CLI's ``db`` commands wrap it)."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from sessionstore.errors import SchemaError
from sessionstore.store.engine import WRITE
from sessionstore.store.schema import SCHEMA_REVISION


def alembic_config() -> Config:
    config = Config()
    # `migrations/` is installed as the package `sessionstore._migrations` (see pyproject.toml).
    location = Path(str(import_module("sessionstore._migrations").__file__)).parent
    config.set_main_option("script_location", str(location))
    return config


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Bring the schema to ``revision``; safe when several processes open a new database at once."""
    with engine.connect().execution_options(**WRITE) as conn:
        with conn.begin():
            if current_revision(conn) != SCHEMA_REVISION or revision != "head":
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
    known = {script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()}
    if current not in known:
        raise SchemaError(
            f"the database schema is at revision {current!r}, which this version of sessionstore does not know"
            " (it was written by a newer version): upgrade sessionstore"
        )
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
            except SchemaError as exc:
                if "does not know" in str(exc):
                    raise
            finally:
                conn.rollback()
        upgrade(engine)
        return
    with engine.connect() as conn:
        check(conn)

"""Schema versions through Alembic (the plain-function API; the CLI's ``db`` commands wrap it).

Alembic keeps our revision in ``sessionstore_alembic_version`` (:data:`VERSION_TABLE`): a database may
be shared with another library whose Alembic uses ``alembic_version``. Revisions 0001-0005 were kept
there; :func:`upgrade` moves such a revision to our table in the transaction of the upgrade, and
:func:`current_revision` reads it there until then. A database without a sessionstore schema gets the
newest schema a revision can create in one step (0006's ``create_schema``), without 0001's table
names, and the revisions after it.

Opening a store at the current revision reads the version table with one statement (after the
inspector's check that the table exists); Alembic itself is imported only to upgrade or to list the
revisions it knows.

Any number of stores may open (and create) databases at once, from threads, tasks and processes.
Alembic keeps its ``context`` and ``op`` (and the revision modules it loads) in process-wide state, so
every use of it holds one lock of the process (:func:`_alembic`); an upgrade runs in one transaction
that first takes the database's writer lock (:func:`lock_schema`: ``BEGIN IMMEDIATE`` on SQLite, an
advisory lock on PostgreSQL) and only then reads the revision, so a second process or thread waits
and then finds the schema made.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.exc import SQLAlchemyError

from sessionstore.errors import SchemaError, SchemaTooNewError, StoreError
from sessionstore.store.engine import WRITE, WRITE_OPTION
from sessionstore.store.revision import SCHEMA_REVISION, VERSION_TABLE

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

LEGACY_VERSION_TABLE = "alembic_version"
LEGACY_REVISIONS = frozenset({"0001", "0002", "0003", "0004", "0005"})
"""Our revisions that were recorded in Alembic's default table, ``alembic_version``."""


_ALEMBIC_LOCK = threading.Lock()
SCHEMA_LOCK_KEY = 0x73657373696F6E73
"""PostgreSQL advisory lock key of schema changes (the bytes of ``sessions``)."""


@contextmanager
def _alembic() -> Iterator[None]:
    """Hold the process's one lock on Alembic's process-wide state (not reentrant: a holder calls the
    unlocked helpers). A task on an event loop (the async PostgreSQL store opens under SQLAlchemy's
    ``greenlet_spawn``) waits for it without blocking the loop, on which the holder may be waiting."""
    if not _ALEMBIC_LOCK.acquire(blocking=False):
        if _in_loop_greenlet():
            from sessionstore.store.pg_async import await_on_loop

            while not _ALEMBIC_LOCK.acquire(blocking=False):
                await_on_loop(asyncio.sleep(0.005))
        else:
            _ALEMBIC_LOCK.acquire()
    try:
        yield
    finally:
        _ALEMBIC_LOCK.release()


def _in_loop_greenlet() -> bool:
    try:
        from sqlalchemy.util.concurrency import in_greenlet
    except ImportError:  # pragma: no cover - without greenlet there is no store on an event loop
        return False
    return bool(in_greenlet())


def lock_schema(conn: Connection) -> None:
    """Take the database's lock for a schema change in ``conn``'s transaction, before the revision is
    read: PostgreSQL's transaction-level advisory lock :data:`SCHEMA_LOCK_KEY`; on SQLite the
    transaction must be a writer's (``BEGIN IMMEDIATE``: the connection's ``WRITE`` option), which
    holds the file's write lock already."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
    elif conn.dialect.name == "sqlite" and not conn.get_execution_options().get(WRITE_OPTION, False):
        raise StoreError("a schema change on SQLite needs a writer's transaction (BEGIN IMMEDIATE)")


@contextmanager
def foreign_keys_off(conn: Connection) -> Iterator[None]:
    """On SQLite, ``PRAGMA foreign_keys`` off while ``conn`` runs a schema change (set before its
    transaction begins: SQLite ignores the pragma inside one), then back as it was. SQLite's procedure
    for a table rebuild asks for it: a ``DROP TABLE`` of a parent table would otherwise cascade to its
    children's rows (revision 0013 rebuilds the sessions table and checks the keys itself after)."""
    if conn.dialect.name != "sqlite":
        yield
        return
    raw = conn.connection.dbapi_connection
    assert raw is not None
    before = raw.execute("PRAGMA foreign_keys").fetchone()[0]
    raw.execute("PRAGMA foreign_keys = OFF")
    try:
        yield
    finally:
        raw.execute(f"PRAGMA foreign_keys = {'ON' if before else 'OFF'}")


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    # `migrations/` is installed as the package `sessionstore._migrations` (see pyproject.toml).
    location = Path(str(import_module("sessionstore._migrations").__file__)).parent
    config.set_main_option("script_location", str(location))
    return config


def _scripts(config: Config | None = None) -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(config or alembic_config())


def head_revision() -> str | None:
    with _alembic():
        return _scripts().get_current_head()


@dataclass(frozen=True, slots=True)
class Revision:
    """A schema revision: its id and the first line of its description."""

    revision: str
    title: str


def history() -> list[Revision]:
    """Every revision this version knows, oldest first."""
    with _alembic():
        scripts = list(_scripts().walk_revisions())
    return [Revision(str(s.revision), _title(s.doc or "")) for s in reversed(scripts)]


def _title(doc: str) -> str:
    """The first sentence of a revision's description, on one line, without reST markup."""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split()).replace("``", "")
    sentence = paragraph.split(". ")[0].rstrip(".")
    return sentence if len(sentence) <= 110 else sentence[:109].rstrip() + "…"


def applied_between(before: str | None, after: str | None) -> list[Revision]:
    """The revisions an upgrade from ``before`` (``None``: no schema) to ``after`` applied, in order."""
    ids = [r.revision for r in history()]
    if after not in ids:
        return []
    start = 0 if before is None or before not in ids else ids.index(before) + 1
    return history()[start : ids.index(after) + 1]


def known_revisions() -> set[str]:
    with _alembic():
        return _known_revisions()


def _known_revisions() -> set[str]:
    return {script.revision for script in _scripts().walk_revisions()}


def current_revision(conn: Connection) -> str | None:
    """The revision ``sessionstore_alembic_version`` records, or one of 0001-0005 that
    ``alembic_version`` still holds (``None``: no sessionstore schema yet)."""
    inspector = inspect(conn)
    if inspector.has_table(VERSION_TABLE):
        rows = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).all()
        if len(rows) > 1:  # not a schema sessionstore wrote
            raise SchemaError(f"the database's schema version cannot be read: {len(rows)} rows in {VERSION_TABLE}")
        return str(rows[0][0]) if rows else None
    return _legacy_revision(conn) if inspector.has_table(LEGACY_VERSION_TABLE) else None


def _legacy_revision(conn: Connection) -> str | None:
    """Our revision in ``alembic_version``: its one row is one of 0001-0005 and our tables of those
    revisions exist (anything else there is another library's)."""
    rows = conn.execute(text(f"SELECT version_num FROM {LEGACY_VERSION_TABLE}")).all()
    if len(rows) != 1 or rows[0][0] not in LEGACY_REVISIONS:
        return None
    inspector = inspect(conn)
    return str(rows[0][0]) if inspector.has_table("sessions") and inspector.has_table("entries") else None


def adopt_legacy_version(conn: Connection) -> None:
    """Move a revision 0001-0005 from ``alembic_version`` to ``sessionstore_alembic_version`` (in the
    caller's transaction); ``alembic_version`` goes with it. Another library's ``alembic_version`` is
    left alone."""
    inspector = inspect(conn)
    if inspector.has_table(VERSION_TABLE) or not inspector.has_table(LEGACY_VERSION_TABLE):
        return
    legacy = _legacy_revision(conn)
    if legacy is None:
        return
    # As Alembic creates its version table.
    conn.execute(text(f"CREATE TABLE {VERSION_TABLE} (version_num VARCHAR(32) NOT NULL,"
                      f" CONSTRAINT {VERSION_TABLE}_pkc PRIMARY KEY (version_num))"))
    conn.execute(text(f"INSERT INTO {VERSION_TABLE} (version_num) VALUES (:v)"), {"v": legacy})
    conn.execute(text(f"DROP TABLE {LEGACY_VERSION_TABLE}"))


def create_newest_schema(context: MigrationContext, scripts: ScriptDirectory) -> str | None:
    """Before an upgrade from no sessionstore schema that passes a revision able to create its own
    schema (``create_schema()`` in its module, e.g. 0006), create that schema and stamp the database at
    that revision, so that the upgrade goes on from there without 0001's table names (``sessions``
    may be another library's). Returns the revision stamped, else ``None`` (the command is not such an
    upgrade: a stamp, a downgrade, an upgrade to a revision before the creating one). ``env.py`` calls
    it once Alembic's context is configured, under ``alembic upgrade`` as under ``db upgrade``."""
    from alembic.operations import Operations
    from alembic.runtime.migration import RevisionStep

    plan = context.opts.get("fn")
    if plan is None or "destination_rev" not in context.opts or context.get_current_heads():
        return None
    steps = list(plan((), context))  # the command's steps from no schema (pure: it reads the scripts)
    if not steps or not all(isinstance(step, RevisionStep) and step.is_upgrade for step in steps):
        return None
    planned = {step.revision.revision for step in steps}
    for script in scripts.walk_revisions():  # head first
        create = getattr(script.module, "create_schema", None)
        if create is not None and script.revision in planned:
            with Operations.context(context):
                create()
            context.stamp(scripts, script.revision)
            return str(script.revision)
    return None


def _too_new(current: str) -> SchemaTooNewError:
    return SchemaTooNewError(
        f"the database was written by a newer version of sessionstore (schema revision {current!r}; this one knows"
        f" revisions up to {SCHEMA_REVISION!r}): upgrade sessionstore"
    )


@contextmanager
def _translated() -> Iterator[None]:
    """The SQLAlchemy path's one point of translation: its errors (connecting, reading the version
    table, running a migration) become :class:`StoreError`, the driver's error chained."""
    try:
        yield
    except SQLAlchemyError as exc:
        driver = getattr(exc, "orig", None)
        raise StoreError(f"database error: {driver if driver is not None else exc}") from exc


def database_revision(engine: Engine) -> str | None:
    """The revision the database records (``None``: no sessionstore schema yet)."""
    with _translated(), engine.connect() as conn:
        return current_revision(conn)


def check_database(engine: Engine) -> None:
    """Raise :class:`SchemaError` unless the database's schema is at :data:`SCHEMA_REVISION`."""
    with _translated(), engine.connect() as conn:
        check(conn)


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Bring the schema to ``revision``; safe when several processes open a new database at once."""
    with _translated():
        return _upgrade(engine, revision)


def _upgrade(engine: Engine, revision: str) -> str | None:
    with _alembic(), engine.connect().execution_options(**WRITE) as conn, foreign_keys_off(conn):
        with conn.begin():
            lock_schema(conn)
            adopt_legacy_version(conn)
            current = current_revision(conn)
            if current != SCHEMA_REVISION or revision != "head":
                if current is not None and current not in _known_revisions():
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


def ensure_schema(engine: Engine, *, auto_upgrade: bool, create: bool = True) -> None:
    """Check the schema on open; with ``auto_upgrade`` an older database is upgraded, and a new one
    gets the schema unless ``create`` is false (then it raises :class:`SchemaError`)."""
    with _translated():
        _ensure_schema(engine, auto_upgrade=auto_upgrade, create=create)


def _ensure_schema(engine: Engine, *, auto_upgrade: bool, create: bool) -> None:
    with engine.connect() as conn:
        current = current_revision(conn)
        conn.rollback()
    if current == SCHEMA_REVISION:
        return
    if auto_upgrade and (create or current is not None):
        with engine.connect() as conn:
            try:
                check(conn)
            except SchemaTooNewError:
                raise
            except SchemaError:
                pass
            finally:
                conn.rollback()
        _upgrade(engine, "head")
        return
    with engine.connect() as conn:
        check(conn)

"""Engines: URL defaults, SQLite pragmas, driver availability. SQLAlchemy keeps the engine and its
pool (and the schema and Alembic); the store's statements run on the backends' driver connections.

SQLite runs in WAL mode with ``busy_timeout``; ``synchronous`` is ``FULL`` by default (every
acknowledged append survives a crash of the process or the machine) or ``NORMAL`` (faster; a power
loss may lose the last transactions, never corrupt the file). Transactions on SQLAlchemy connections
(migrations) with the ``WRITE`` option start with ``BEGIN IMMEDIATE``, as the backend's writes do.
An existing SQLite file at the current schema is opened without SQLAlchemy
(:func:`open_current_sqlite`; the settings are :func:`~sessionstore.store.sqlite_file.configure_connection`
either way), and this module imports SQLAlchemy only when it makes an engine.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessionstore.errors import BackendUnavailableError, InvalidInputError, StoreError
from sessionstore.store.sqlite_file import PAGE_SIZE, Durability, check_durability, configure_connection, open_current

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from sessionstore.store.backend import Backend

__all__ = ["PAGE_SIZE", "WRITE", "WRITE_OPTION", "Durability", "make_engine", "open_backend", "open_current_sqlite",
           "upgrades_on_open"]
WRITE_OPTION = "sessionstore_write"
WRITE = {WRITE_OPTION: True}
"""Execution options of a connection whose transaction writes (``BEGIN IMMEDIATE`` on SQLite)."""
PG_CONNECT_TIMEOUT = 10
"""Seconds a new PostgreSQL connection may take (libpq's ``connect_timeout``) unless the URL sets one."""


def create_private_file(path: Path) -> None:
    """Create the SQLite file ``path`` readable and writable by its owner only (``0600``), in a directory
    created ``0700`` when missing (each missing parent too), before SQLite opens it (SQLite gives its
    ``-wal`` and ``-shm`` files the database file's mode). An existing file, and its mode, are left as
    they are, as are existing directories."""
    if path.is_dir():
        raise InvalidInputError(f"{path} is a directory, not a SQLite database file")
    if path.exists():
        return
    _make_private_dirs(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:  # another process created it meanwhile, or a dangling symlink: SQLite decides
        return
    os.close(fd)


def _make_private_dirs(folder: Path) -> None:
    """``folder`` and its missing parents, each ``0700`` (``Path.mkdir(parents=True)`` gives the parents
    the umask's mode: ``0777`` under umask 000)."""
    missing: list[Path] = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        try:
            made.mkdir(mode=0o700)
        except FileExistsError:  # another process made it meanwhile
            if not made.is_dir():
                raise


def make_engine(url: str, *, durability: Durability = "full", on_event_loop: bool = False,
                create: bool = True) -> Engine:
    """An engine for ``url`` (``sqlite:///path``, ``postgresql://...``), configured for sessionstore.

    ``create=False``: a SQLite file that does not exist raises :class:`StoreError` naming its absolute
    path, and nothing is created (``create=True`` makes the file and its folders, see
    :func:`create_private_file`).

    ``on_event_loop`` (PostgreSQL only): the blocking face of an async engine, whose pool holds psycopg's
    ``AsyncConnection`` objects; every use of it must run under SQLAlchemy's ``greenlet_spawn`` on the
    loop that owns them (:class:`~sessionstore.aio.AsyncSessionStore` does)."""
    from sqlalchemy import create_engine, event
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    from sessionstore.wire.codec import json_dumps, json_loads

    check_durability(durability)
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise InvalidInputError(f"not a database URL: {url!r}") from exc
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        if importlib.util.find_spec("psycopg") is None:
            raise BackendUnavailableError("PostgreSQL needs the psycopg driver: pip install 'sessionstore[postgres]'")
        # A pooled connection the server closed (a restart, pg_terminate_backend, an idle timeout) is found
        # at checkout by the ping and replaced, instead of failing the transaction given it; a server out
        # of reach fails the connect within the timeout instead of holding the caller (the URL's own wins).
        options: dict[str, Any] = {"json_serializer": json_dumps, "json_deserializer": json_loads,
                                   "pool_recycle": 3600, "pool_pre_ping": True}
        if "connect_timeout" not in parsed.query:
            options["connect_args"] = {"connect_timeout": PG_CONNECT_TIMEOUT}
        if on_event_loop:
            if importlib.util.find_spec("greenlet") is None:
                raise BackendUnavailableError("the async PostgreSQL store runs on SQLAlchemy's asyncio layer, which"
                                              " needs greenlet: pip install 'sessionstore[postgres]'")
            from sqlalchemy.ext.asyncio import create_async_engine

            return create_async_engine(parsed, **options).sync_engine
        return create_engine(parsed, **options)
    if backend != "sqlite":
        raise InvalidInputError(f"unsupported database {backend!r}: use sqlite:/// or postgresql://")
    if on_event_loop:
        raise InvalidInputError("an engine on the event loop is PostgreSQL's (SQLite's calls run on a worker thread)")
    if parsed.host:
        # sqlite://name.db: SQLAlchemy reads "name.db" as a host, which SQLite has no use for
        path = parsed.host + (f"/{parsed.database}" if parsed.database else "")
        raise InvalidInputError(
            f"not a SQLite URL: {url!r} (a SQLite URL has three slashes before a relative path,"
            f" sqlite:///{path}, and four before an absolute one, sqlite:////abs/{path})"
        )
    database = parsed.database
    if database and database != ":memory:" and not database.startswith("file:"):
        if create:
            create_private_file(Path(database).expanduser())
        elif not Path(database).expanduser().exists():
            raise StoreError(f"no such database file: {Path(database).expanduser().absolute()}")
    try:
        # No rollback when a connection returns to the pool: every transaction on it ends with a commit
        # or a rollback before it is given back (the backend's, and SQLAlchemy's own Connection).
        engine = create_engine(parsed, json_serializer=json_dumps, json_deserializer=json_loads,
                               pool_reset_on_return=None)
    except NoSuchModuleError as exc:  # pragma: no cover - sqlite3 ships with CPython
        raise BackendUnavailableError(str(exc)) from exc
    except ArgumentError as exc:
        raise InvalidInputError(f"not a SQLite URL: {url!r}: {str(exc).splitlines()[0]}") from exc
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        configure_connection(dbapi_connection, durability)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        write = conn.get_execution_options().get(WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def open_current_sqlite(url: str, durability: Durability) -> tuple[Backend, str] | None:
    """The SQLite backend on ``url``'s file without SQLAlchemy, and the file's absolute URL (for an engine
    made later), when the URL is a plain one and the file is at the current schema
    (:func:`sessionstore.store.sqlite_file.open_current`); else ``None``."""
    source = open_current(url, durability)
    if source is None:
        return None
    from sessionstore.store.sqlite import SqliteBackend

    return SqliteBackend(source), source.url


def open_backend(engine: Engine) -> Backend:
    """The backend of ``engine``'s database: the one place that maps a database to its module."""
    if engine.dialect.name == "postgresql":
        from sessionstore.store.postgres import PostgresBackend

        return PostgresBackend(engine)
    from sessionstore.store.sqlite import SqliteBackend

    return SqliteBackend(engine)


def upgrades_on_open(engine: Engine) -> bool:
    """Whether opening a store brings an older schema up to date: an embedded SQLite file yes; a
    server's database only through ``sessionstore db upgrade`` (its owner decides when)."""
    return engine.dialect.name == "sqlite"

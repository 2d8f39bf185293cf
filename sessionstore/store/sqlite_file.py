"""An existing SQLite file whose schema is current, opened with ``sqlite3`` itself.

Opening a store on SQLite needs SQLAlchemy only to create or upgrade the schema (Alembic) and to
parse the URLs SQLAlchemy accepts. The store's own statements run on ``sqlite3`` connections in any
case (:mod:`sessionstore.store.sqlite`), so a plain ``sqlite:///path`` URL naming a file that exists
and holds the schema this code needs (:data:`~sessionstore.store.revision.SCHEMA_REVISION`) is opened
here, with the same connection settings, and SQLAlchemy is not imported: a command that reads or
appends starts without it. Every other URL, a missing file, and a schema that is absent, older or
newer take SQLAlchemy's path (:func:`~sessionstore.store.engine.make_engine`), which creates,
upgrades or says why not.

This module imports only the standard library (and the store's errors when it raises one).
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any, Literal

from sessionstore.store.revision import SCHEMA_REVISION, VERSION_TABLE

Durability = Literal["full", "normal"]
PAGE_SIZE = 8192
"""SQLite page size of a new database: rows of about a kilobyte (a typical message entry) leave little
unused space in a page of this size (a 4 KiB page holds two or three of them, with up to a third
unused); PostgreSQL's pages have the same size."""
_PREFIX = "sqlite:///"
_NOT_PLAIN = frozenset("?#%~")
"""Characters after which a URL is left to SQLAlchemy's parser (query options, escapes, a home dir)."""


def check_durability(durability: object) -> None:
    if durability not in ("full", "normal"):
        from sessionstore.errors import InvalidInputError

        raise InvalidInputError(f"durability must be 'full' or 'normal', got {durability!r}")


def configure_connection(dbapi_connection: Any, durability: Durability) -> None:
    """The settings of every sessionstore SQLite connection: WAL, ``busy_timeout``, foreign keys,
    ``synchronous`` ``FULL`` or ``NORMAL``, and no implicit transactions (the store issues BEGIN)."""
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout = 60000")
    cursor.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a no-op unless the database is still empty
    _switch_to_wal(cursor)
    cursor.execute(f"PRAGMA synchronous = {'FULL' if durability == 'full' else 'NORMAL'}")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


WAL_SWITCH_TRIES = 600
"""How often switching a file to WAL is tried (every 0.1 s: the busy timeout's minute)."""


def _switch_to_wal(cursor: Any) -> None:
    """``PRAGMA journal_mode = WAL``, tried again while another connection holds the file: SQLite
    answers the switch of a new file that another process is switching too with ``database is locked``
    at once, without waiting in the busy handler."""
    import sqlite3
    import time

    for attempt in range(WAL_SWITCH_TRIES):
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == WAL_SWITCH_TRIES - 1:
                raise
            time.sleep(0.1)


def plain_path(url: str) -> str | None:
    """The file of a URL ``sqlite:///relative`` or ``sqlite:////absolute`` with nothing that needs
    SQLAlchemy's parser (no query, escape, ``~``, ``:memory:`` or ``file:`` URI); else ``None``."""
    if not url.startswith(_PREFIX):
        return None
    path = url[len(_PREFIX):]
    if not path or path == ":memory:" or path.startswith("file:") or not _NOT_PLAIN.isdisjoint(path):
        return None
    return path


class DirectConnection:
    """A ``sqlite3`` connection with the methods the SQLite backend calls on a pooled one."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.dbapi_connection = connection

    def cursor(self) -> sqlite3.Cursor:
        return self.dbapi_connection.cursor()

    def commit(self) -> None:
        self.dbapi_connection.commit()

    def rollback(self) -> None:
        self.dbapi_connection.rollback()

    def detach(self) -> None:
        """(Not pooled: nothing to detach from.)"""

    def close(self) -> None:
        self.dbapi_connection.close()

    def invalidate(self) -> None:
        self.dbapi_connection.close()


class SqliteFile:
    """Connections to one SQLite file, each configured by :func:`configure_connection`; the SQLite
    backend keeps them (one per thread), so there is no pool. ``spare``: an open connection to give
    out first (the one that checked the schema)."""

    @property
    def url(self) -> str:
        """A URL of :attr:`path` for SQLAlchemy (``sqlite:////absolute``)."""
        return _PREFIX + self.path

    def __init__(self, path: str, durability: Durability, spare: sqlite3.Connection | None = None) -> None:
        self.path = os.path.abspath(path)
        """The file, made absolute once (as SQLAlchemy's SQLite dialect does), so that every connection
        opens it whatever the working directory is later."""
        self.durability: Durability = durability
        self._spare = spare

    def raw_connection(self) -> DirectConnection:
        spare, self._spare = self._spare, None
        if spare is not None:
            return DirectConnection(spare)
        connection = sqlite3.connect(self.path, check_same_thread=False)
        try:
            configure_connection(connection, self.durability)
        except BaseException:
            connection.close()
            raise
        return DirectConnection(connection)

    def dispose(self, close: bool = True) -> None:
        """Close the spare connection if it was never given out (the backend closes the others)."""
        spare, self._spare = self._spare, None
        if spare is not None and close:
            spare.close()


def open_current(url: str, durability: Durability) -> SqliteFile | None:
    """``url``'s file when it is a plain SQLite URL of an existing file at :data:`SCHEMA_REVISION`,
    else ``None`` (also for any error: SQLAlchemy's path then reports it). The schema is read before
    any setting is made, so a file that is not a sessionstore database is left as it is."""
    check_durability(durability)
    path = plain_path(url)
    if path is None or not os.path.isfile(path):
        return None
    try:
        connection = sqlite3.connect(path, check_same_thread=False)
    except sqlite3.Error:
        return None
    try:
        connection.execute("PRAGMA busy_timeout = 60000")
        rows = connection.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchall()
        if rows != [(SCHEMA_REVISION,)]:
            connection.close()
            return None
        configure_connection(connection, durability)
    except sqlite3.Error:
        connection.close()
        return None
    return SqliteFile(path, durability, spare=connection)

"""psycopg's async connections under the PostgreSQL backend's blocking code.

:class:`~sessionstore.aio.AsyncSessionStore` runs each call of the one set of store rules (the
``SessionStore`` and ``EntryStore`` code, the backend's statements) as a greenlet on the caller's event
loop, through SQLAlchemy's asyncio layer (``greenlet_spawn``). Its engine is an async one, so the pool
holds :class:`psycopg.AsyncConnection` objects. :class:`LoopConnection` gives the backend the part of
psycopg's blocking interface it uses (autocommit, isolation, read-only, pipelines, cursors, ``COPY``);
each call awaits the async method through SQLAlchemy's ``await_``, which suspends the greenlet and lets
the loop run other tasks until the server answers. Outside such a greenlet every method raises
(SQLAlchemy's ``MissingGreenlet``): the connections are only ever driven from the loop that owns them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
import sqlalchemy.util

await_on_loop: Any = getattr(sqlalchemy.util, "await_", None) or sqlalchemy.util.await_only
"""SQLAlchemy's bridge from a greenlet under ``greenlet_spawn`` to its loop: ``await_on_loop(awaitable)``
suspends the greenlet until the awaitable is done and gives its result (``await_``; ``await_only`` before 2.1)."""


class LoopCopy:
    """A ``COPY`` under way (psycopg's ``AsyncCopy``)."""

    def __init__(self, copy: Any) -> None:
        self._copy = copy

    def write_row(self, row: Sequence[Any]) -> None:
        await_on_loop(self._copy.write_row(row))

    def write(self, data: bytes | str) -> None:
        await_on_loop(self._copy.write(data))

    def __iter__(self) -> Iterator[Any]:
        while True:
            chunk = await_on_loop(self._copy.read())
            if not chunk:
                return
            yield chunk


class LoopCursor:
    """A cursor of an :class:`psycopg.AsyncConnection`, with blocking methods."""

    def __init__(self, cursor: psycopg.AsyncCursor[Any]) -> None:
        self._cursor = cursor

    def execute(self, query: Any, params: Any = None) -> LoopCursor:
        await_on_loop(self._cursor.execute(query, params))
        return self

    def executemany(self, query: Any, params_seq: Any) -> None:
        await_on_loop(self._cursor.executemany(query, params_seq))

    def fetchone(self) -> Any:
        return await_on_loop(self._cursor.fetchone())

    def fetchall(self) -> list[Any]:
        return list(await_on_loop(self._cursor.fetchall()))

    def fetchmany(self, size: int = 0) -> list[Any]:
        return list(await_on_loop(self._cursor.fetchmany(size)))

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @contextmanager
    def copy(self, statement: Any, params: Any = None) -> Iterator[LoopCopy]:
        block = self._cursor.copy(statement, params)
        copy = await_on_loop(block.__aenter__())
        try:
            yield LoopCopy(copy)
        except BaseException as exc:
            # psycopg's own exit sends CopyFail (or, for COPY TO, ends the read) and raises nothing new
            if not await_on_loop(block.__aexit__(type(exc), exc, exc.__traceback__)):
                raise
        else:
            await_on_loop(block.__aexit__(None, None, None))

    def close(self) -> None:
        await_on_loop(self._cursor.close())


class LoopConnection:
    """The blocking face of a :class:`psycopg.AsyncConnection` that the backend's transactions use."""

    def __init__(self, connection: psycopg.AsyncConnection[Any]) -> None:
        self._connection = connection

    @property
    def autocommit(self) -> bool:
        return self._connection.autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        await_on_loop(self._connection.set_autocommit(value))

    @property
    def isolation_level(self) -> psycopg.IsolationLevel | None:
        return self._connection.isolation_level

    @isolation_level.setter
    def isolation_level(self, value: psycopg.IsolationLevel | None) -> None:
        await_on_loop(self._connection.set_isolation_level(value))

    @property
    def read_only(self) -> bool | None:
        return self._connection.read_only

    @read_only.setter
    def read_only(self, value: bool | None) -> None:
        await_on_loop(self._connection.set_read_only(value))

    @contextmanager
    def pipeline(self) -> Iterator[None]:
        block = self._connection.pipeline()
        await_on_loop(block.__aenter__())
        try:
            yield
        except BaseException as exc:
            if not await_on_loop(block.__aexit__(type(exc), exc, exc.__traceback__)):
                raise
        else:
            await_on_loop(block.__aexit__(None, None, None))

    def cursor(self) -> LoopCursor:
        return LoopCursor(self._connection.cursor())


def blocking_driver(dbapi_connection: Any) -> Any:
    """The psycopg connection under a pooled DB-API connection, with blocking methods: psycopg's own
    ``Connection`` of a blocking engine as it is, an async engine's ``AsyncConnection`` as a
    :class:`LoopConnection`."""
    driver = getattr(dbapi_connection, "driver_connection", dbapi_connection)
    if isinstance(driver, psycopg.AsyncConnection):
        return LoopConnection(driver)
    return driver

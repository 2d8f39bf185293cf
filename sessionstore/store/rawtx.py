"""Transactions straight on the driver connection, for the hot paths (append, import, resume, export).

SQLAlchemy Core costs ~0.2 ms per statement in compilation and result handling, more than a
SQLite commit in WAL+NORMAL; these paths therefore run fixed statements on the DBAPI cursor of a
pooled connection (pragmas and ``BEGIN IMMEDIATE`` as for every other write). Statements are written
with ``:name`` parameters and translated once per dialect, or with the dialect's positional style.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from sqlalchemy import Engine

from sessionstore.errors import StoreError

BULK_CACHE_KIB = 32 * 1024
"""SQLite page cache of a bulk write (an import): the unique index on entry ids is random-keyed, and
a larger cache keeps more of it (+10% on a 200,000-entry import) within the 1 GB import's memory budget."""
DEFAULT_CACHE_KIB = 2000
"""SQLite's default page cache (``cache_size = -2000``), restored after a bulk write."""

_NAMED = re.compile(r"(?<!:):([a-z_]+)")


@lru_cache(maxsize=256)
def _translate(sql: str, dialect: str) -> str:
    if dialect == "postgresql":
        return _NAMED.sub(r"%(\1)s", sql).replace("{payload_text}", "payload::text")
    return sql.replace("{payload_text}", "payload")


class RawTx:
    """Statements inside one write transaction; rows come back as tuples."""

    def __init__(self, cursor: Any, dialect: str) -> None:
        self.cursor = cursor
        self.dialect = dialect

    def execute(self, sql: str, params: dict[str, Any] | tuple[Any, ...] | None = None) -> None:
        """``params``: a dict for ``:name`` parameters, or a tuple for SQL written for this dialect's
        positional style (``?`` on SQLite, ``%s`` on PostgreSQL)."""
        if isinstance(params, tuple):
            self.cursor.execute(sql, params)
        else:
            self.cursor.execute(_translate(sql, self.dialect), params or {})

    def executemany(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """Rows of positional parameters (SQL written for this dialect's style, as ``execute``)."""
        self.cursor.executemany(sql, rows)

    def one(self, sql: str, params: dict[str, Any] | None = None) -> tuple[Any, ...] | None:
        self.cursor.execute(_translate(sql, self.dialect), params or {})
        row = self.cursor.fetchone()
        return tuple(row) if row is not None else None

    def all(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        self.cursor.execute(_translate(sql, self.dialect), params or {})
        return [tuple(row) for row in self.cursor.fetchall()]

    def scalar(self, sql: str, params: dict[str, Any] | None = None) -> Any:
        row = self.one(sql, params)
        return None if row is None else row[0]


def entry_id_taken(exc: BaseException) -> bool:
    """Whether a write failed because the session already has an entry with that id."""
    cause = exc.__cause__
    diag = getattr(cause, "diag", None)
    if diag is not None:  # psycopg
        return getattr(cause, "sqlstate", None) == "23505" and diag.constraint_name == "uq_entries_session_id_entry_id"
    return "UNIQUE constraint failed: entries.session_id, entries.entry_id" in str(cause)


def _driver_errors(dialect: str) -> tuple[type[BaseException], ...]:
    if dialect == "sqlite":
        import sqlite3

        return (sqlite3.Error,)
    import psycopg

    return (psycopg.Error,)


@contextmanager
def raw_write(
    engine: Engine, *, write: bool = True, bulk: bool = False, pipeline: bool = False
) -> Iterator[RawTx]:
    """A transaction on a pooled driver connection; committed on success, rolled back on error.
    ``write=False``: a read transaction (one consistent snapshot for its statements).
    ``bulk``: an import: SQLite does not check foreign keys in this transaction (the caller checks every
    parent) and gets a larger page cache for it; both are restored afterwards.
    ``pipeline``: PostgreSQL sends statements whose results are not read without waiting for them:
    an append takes two round trips, BEGIN with its locking read, then the insert, the session update
    and COMMIT with the one Sync that ends pipeline mode; a failed write surfaces there. BEGIN and
    COMMIT are sent as statements on a connection switched to autocommit for the transaction (psycopg's
    own BEGIN and commit() each end with a Sync and wait for it: four round trips). Not for COPY.
    Parameters stay bound on the server (a client-bound batch of the same statements was ~10% faster,
    but would put entry contents into the statement text that PostgreSQL logs on any failed statement).

    PostgreSQL reads (``write=False``) run as ``REPEATABLE READ READ ONLY``: every statement of the
    read sees one snapshot (an export's header and its entries agree), at no extra round trip.
    The engine's checkin listener (``engine._back_to_psycopg_defaults``) puts a connection's
    autocommit, isolation and read-only settings back when it returns to the pool, however this ended.

    Driver errors become :class:`StoreError` (the driver's error chained)."""
    dialect = engine.dialect.name
    errors = _driver_errors(dialect)
    try:
        raw = engine.raw_connection()
    except Exception as exc:
        raise StoreError(f"cannot connect: {exc}") from exc
    try:
        driver: Any = raw.driver_connection
        snapshot = not write and dialect == "postgresql"
        pipelined = pipeline and write and dialect == "postgresql"
        if snapshot:  # psycopg then begins with BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY
            import psycopg

            driver.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            driver.read_only = True
        if pipelined:
            driver.autocommit = True  # BEGIN and COMMIT are sent below, inside the pipeline
        cursor = raw.cursor()
        try:
            if dialect == "sqlite":
                if bulk:
                    cursor.execute("PRAGMA foreign_keys = OFF")  # only outside a transaction
                    cursor.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
                cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            if pipelined:
                with driver.pipeline():
                    cursor.execute("BEGIN")
                    yield RawTx(cursor, dialect)
                    cursor.execute("COMMIT")
            else:
                yield RawTx(cursor, dialect)
                raw.commit()
        except BaseException:
            try:
                raw.rollback()  # psycopg sends ROLLBACK whenever the server reports a transaction open
            except Exception:  # the connection broke: report what broke it, and do not pool it again
                raw.invalidate()
            raise
        finally:
            if dialect == "sqlite" and bulk:
                cursor.execute("PRAGMA foreign_keys = ON")
                cursor.execute(f"PRAGMA cache_size = -{DEFAULT_CACHE_KIB}")  # gives the pages back
            cursor.close()
    except errors as exc:
        raise StoreError(f"database {'refused the write' if write else 'error'}: {exc}") from exc
    finally:
        raw.close()

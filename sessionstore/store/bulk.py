"""Where an import's rows go: batched ``executemany`` on SQLite, one streaming ``COPY`` on PostgreSQL.

On PostgreSQL the rows are written into the open ``COPY`` as they are made, so that the server stores
one part of the file while the reader parses and validates the next (it is a separate process: on two
cores the import's Python work and the server's work overlap instead of taking turns)."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from sessionstore.store.facts import ENTRY_COLUMNS
from sessionstore.store.rawtx import RawTx

Row = tuple[Any, ...]

INSERT_BATCH = 2_000
"""Rows per ``executemany`` on SQLite; on PostgreSQL, the rows of the first ``COPY``, after which the
table is analyzed (without statistics PostgreSQL checks each parent key by scanning the session's rows,
which makes a large import quadratic)."""
COPY_ROWS = 20_000
"""Rows per ``COPY`` after the first: a row the server refuses is reported when its ``COPY`` ends, so
within this many rows, not after the rest of a large file (each ``COPY`` costs a round trip)."""


class RowSink:
    """``add`` rows of :func:`~sessionstore.store.facts.entry_values`, then ``close`` (or leave the
    ``with`` block): every row is in the transaction. Leaving by an exception abandons the rows not yet
    written (a PostgreSQL ``COPY`` is failed, so the transaction can be rolled back)."""

    def __init__(self, tx: RawTx, insert_sql: str) -> None:
        self._tx = tx
        self._insert_sql = insert_sql
        self._postgresql = tx.dialect == "postgresql"
        self._batch: list[Row] = []
        self._copy_block: Any = None
        self._copy: Any = None
        self._count = 0

    def add(self, row: Row) -> None:
        if self._postgresql:
            if self._copy is None:
                self._open_copy()
            self._copy.write_row(row)
            self._count += 1
            if self._count % COPY_ROWS == 0 or self._count == INSERT_BATCH:
                self._close_copy(None, None, None)
                if self._count == INSERT_BATCH:
                    self._tx.execute("ANALYZE entries")
            return
        self._batch.append(row)
        if len(self._batch) >= INSERT_BATCH:
            self._flush_batch()

    def close(self) -> None:
        if self._postgresql:
            if self._copy is not None:
                self._close_copy(None, None, None)
        elif self._batch:
            self._flush_batch()

    def _flush_batch(self) -> None:
        self._tx.executemany(self._insert_sql, self._batch)
        self._batch = []

    def _open_copy(self) -> None:
        self._copy_block = self._tx.cursor.copy(f"COPY entries ({', '.join(ENTRY_COLUMNS)}) FROM STDIN")
        self._copy = self._copy_block.__enter__()

    def _close_copy(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        block, self._copy_block, self._copy = self._copy_block, None, None
        block.__exit__(kind, exc, tb)  # on an exception psycopg sends CopyFail: the server drops the COPY

    def __enter__(self) -> RowSink:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is None:
            self.close()
        elif self._copy is not None:
            self._close_copy(kind, exc, tb)

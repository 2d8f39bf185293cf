"""Imports are one transaction on both backends, also when they fail part-way through the rows already
sent to the database (PostgreSQL streams them into an open COPY, which pauses once for ANALYZE)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from sessionstore.api import SessionStore
from sessionstore.errors import JsonlError, StoreError
from sessionstore.store import entry_store as store_module
from sessionstore.store.backend import EntryRow
from sessionstore.store.entry_store import EntryStore
from sessionstore.store.schema import entries, sessions
from sessionstore.store.sqlite import INSERT_BATCH
from tests.conftest import BACKENDS

POSTGRESQL_ONLY = pytest.mark.parametrize(
    "backend", [b for b in BACKENDS if b.values == ("postgresql",)], indirect=True
)
"""For what only PostgreSQL has: the ``store`` fixture on PostgreSQL alone (skipped without a server)."""

HEADER = b'{"type":"session","version":3,"id":"%s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\n'


def file_of(session_id: str, count: int, *, bad_line: int | None = None) -> bytes:
    lines = [HEADER % session_id.encode()]
    for n in range(2, count + 2):
        parent = "null" if n == 2 else f'"m{n - 1}"'
        line = (f'{{"type":"message","id":"m{n}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z",'
                f'"message":{{"role":"user","content":"line {n}","timestamp":1}}}}\n')
        lines.append(b"{not json\n" if n == bad_line else line.encode())
    return b"".join(lines)


def rows_in(engine: Engine) -> tuple[int, int]:
    with engine.connect() as conn:
        return (
            conn.execute(select(func.count()).select_from(sessions)).scalar_one(),
            conn.execute(select(func.count()).select_from(entries)).scalar_one(),
        )


@pytest.mark.parametrize("bad_line", [501, INSERT_BATCH + 501], ids=["in-first-rows", "after-the-analyze-pause"])
def test_a_bad_line_late_in_a_file_leaves_nothing_and_the_store_goes_on(
    store: SessionStore, bad_line: int, db_engine: Engine
) -> None:
    with pytest.raises(JsonlError) as caught:
        store.import_jsonl(io.BytesIO(file_of("late", bad_line + 100, bad_line=bad_line)))
    assert caught.value.line == bad_line
    assert rows_in(db_engine) == (0, 0)
    assert store.import_jsonl(io.BytesIO(file_of("late", 300))).entries == 300
    assert rows_in(db_engine) == (1, 300)


@pytest.mark.parametrize("bad_row", [10, INSERT_BATCH + 10], ids=["in-first-rows", "after-the-analyze-pause"])
def test_a_row_the_database_refuses_part_way_leaves_nothing_and_the_store_goes_on(
    store: SessionStore, bad_row: int, monkeypatch: pytest.MonkeyPatch, db_engine: Engine
) -> None:
    """A row that passes the reader but not the database's CHECK (a parent after its child): on
    PostgreSQL the server refuses it while later rows are still being streamed."""
    real = store_module.entry_row

    def corrupt(*args: Any) -> EntryRow:
        row = real(*args)
        return row._replace(parent_seq=row.seq + 1) if row.seq == bad_row else row  # a parent after the entry

    monkeypatch.setattr(store_module, "entry_row", corrupt)
    with pytest.raises(StoreError):
        store.import_jsonl(io.BytesIO(file_of("refused", bad_row + 1_000)))
    monkeypatch.undo()
    assert rows_in(db_engine) == (0, 0)
    assert store.import_jsonl(io.BytesIO(file_of("refused", 300))).entries == 300
    assert [e["id"] for e in store.path("refused")][-1] == "m301"


@POSTGRESQL_ONLY  # a SQLite connection cannot be ended from outside
def test_an_import_whose_connection_dies_reports_why_and_the_store_goes_on(
    db_engine: Engine, entry_store: EntryStore
) -> None:
    """The server ends the import's connection part-way (an administrator, a restart): the error says
    so (not the failed rollback after it), nothing is written, and the broken connection is not reused."""
    from sqlalchemy import create_engine, text

    killer = create_engine(db_engine.url, isolation_level="AUTOCOMMIT")
    killed: list[int] = []

    def kill_the_import() -> None:
        if not killed:
            with killer.connect() as conn:
                killed.extend(conn.execute(text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )).scalars())

    try:
        with pytest.raises(StoreError, match=r"(?i)terminat|server closed|consuming input failed") as caught:
            entry_store.insert_session(
                {"type": "session", "version": 3, "id": "dies", "timestamp": "t", "cwd": "/w"},
                _entries(3 * INSERT_BATCH), progress=kill_the_import,
            )
        assert killed and "connection is lost" not in str(caught.value)
    finally:
        killer.dispose()
    assert rows_in(db_engine) == (0, 0)
    # (the kill ended every connection to the database: the one of the store that imported is not reused)
    assert entry_store.import_jsonl(io.BytesIO(file_of("after", 300))).entries == 300


def _entries(count: int) -> list[dict[str, Any]]:
    stamp = "2025-01-01T00:00:01.000Z"
    return [
        {"type": "message", "id": f"m{n}", "parentId": None if n == 0 else f"m{n - 1}", "timestamp": stamp,
         "message": {"role": "user", "content": f"line {n}", "timestamp": 1}}
        for n in range(count)
    ]


def test_a_row_the_database_refuses_is_reported_within_a_copy_not_at_the_end_of_the_file(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch, db_engine: Engine, entry_store: EntryStore
) -> None:
    """PostgreSQL reports a refused row when the COPY holding it ends: the rows go in COPYs of
    ``COPY_ROWS``, so an import stops soon after a bad row instead of reading the rest of the file
    (SQLite when the executemany batch holding it runs)."""
    if entry_store.backend.name == "postgresql":
        from sessionstore.store import postgres

        monkeypatch.setattr(postgres, "COPY_ROWS", 500)
    real = store_module.entry_row
    bad = INSERT_BATCH + 10

    def corrupt(*args: Any) -> EntryRow:
        row = real(*args)
        return row._replace(parent_seq=row.seq + 1) if row.seq == bad else row

    monkeypatch.setattr(store_module, "entry_row", corrupt)
    consumed = 0

    def counted() -> Any:
        nonlocal consumed
        for entry in _entries(20 * INSERT_BATCH):
            consumed += 1
            yield entry

    with pytest.raises(StoreError, match="ck_sessionstore_entries_parent_link"):
        entry_store.insert_session({"type": "session", "version": 3, "id": "early", "timestamp": "t", "cwd": "/w"},
                             counted())
    # PostgreSQL: within the COPY of 500 rows holding it; SQLite: within its executemany batch
    assert consumed <= bad + (500 if entry_store.backend.name == "postgresql" else INSERT_BATCH) + 1
    assert rows_in(db_engine) == (0, 0)


@POSTGRESQL_ONLY
def test_an_import_after_one_whose_analyze_was_rolled_back_analyzes_again(
    store: SessionStore, db_engine: Engine, entry_store: EntryStore
) -> None:
    """A failed import's ANALYZE leaves the table's row estimate behind (kept outside the transaction)
    but not its column statistics; the next import must gather them again, or later reads of a large
    session would be planned blind (a 30,000-entry path walk then scans the table at every step)."""

    def fail() -> None:
        raise RuntimeError("stop after the first COPY")

    header = {"type": "session", "version": 3, "id": "once", "timestamp": "t", "cwd": "/w"}
    with pytest.raises(RuntimeError):
        entry_store.insert_session(header, _entries(INSERT_BATCH + 10), progress=fail)

    def statistics() -> tuple[float, bool]:
        with db_engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT reltuples FROM pg_class WHERE oid = 'sessionstore_entries'::regclass"
            ).scalar()
            has = conn.exec_driver_sql(
                "SELECT EXISTS (SELECT 1 FROM pg_stats"
                " WHERE tablename = 'sessionstore_entries' AND attname = 'parent_seq')"
            ).scalar()
        return float(rows), bool(has)

    assert statistics() == (INSERT_BATCH, False)
    entry_store.insert_session(header, _entries(INSERT_BATCH + 10))
    assert statistics()[1]

"""``alembic upgrade head`` with the top-level ``alembic.ini`` and ``sessionstore db upgrade`` give the
same schema (issue 22, section 6), on both backends, also in a database that already holds another
library's ``sessions`` table and ``alembic_version``.

Before the fix plain Alembic ran 0001 on such a database and failed (``table sessions already
exists``), where ``db upgrade`` created 0006's schema directly; on SQLite it also ran without the
store's engine (no WAL, 4 KiB pages, DDL outside a transaction).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.config import CommandLine
from click.testing import CliRunner
from sqlalchemy import Connection, text

from sessionstore.cli import cli
from sessionstore.store.engine import make_engine
from sessionstore.store.revision import SCHEMA_REVISION
from tests.conftest import BACKENDS, drop_pg_database, fresh_pg_database
from tests.paths import ROOT

PG_SCHEMA = """
    SELECT 'column', table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' '
           || is_identity || ' ' || coalesce(column_default, '')
    FROM information_schema.columns WHERE table_schema = 'public'
    UNION ALL SELECT 'constraint', conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
    WHERE connamespace = 'public'::regnamespace
    UNION ALL SELECT 'index', indexdef FROM pg_indexes WHERE schemaname = 'public'
    UNION ALL SELECT 'trigger', pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
    UNION ALL SELECT 'function', pg_get_functiondef(p.oid) FROM pg_proc p
    WHERE pronamespace = 'public'::regnamespace
    ORDER BY 1, 2"""

FOREIGN = [
    # Google ADK / the OpenAI Agents SDK keep a `sessions` table; another library's Alembic its version.
    "CREATE TABLE sessions (app_name VARCHAR(128), user_id VARCHAR(128), id VARCHAR(128), state TEXT,"
    " PRIMARY KEY (app_name, user_id, id))",
    "INSERT INTO sessions VALUES ('app', 'u', 's1', '{}')",
    "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)",
    "INSERT INTO alembic_version VALUES ('abc123')",
]


@pytest.fixture(params=BACKENDS)
def new_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], str]]:
    """A maker of empty databases of the backend (no sessionstore schema)."""
    names: list[str] = []

    def make() -> str:
        if request.param == "sqlite":
            return f"sqlite:///{tmp_path / f'{uuid.uuid4().hex[:8]}.db'}"
        name, url = fresh_pg_database(prefix="sessionstore_e")
        names.append(name)
        return url

    yield make
    for name in names:
        drop_pg_database(name)


def _run_sql(url: str, statements: list[str]) -> None:
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(text(statement))
    finally:
        engine.dispose()


def _schema(url: str) -> list[Any]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return _describe(conn)
    finally:
        engine.dispose()


def _describe(conn: Connection) -> list[Any]:
    if conn.dialect.name == "postgresql":
        rows = [tuple(r) for r in conn.execute(text(PG_SCHEMA)).all()]
    else:
        rows = sorted(tuple(r) for r in conn.exec_driver_sql("SELECT type, name, tbl_name, sql FROM sqlite_master"))
        rows += [("pragma", name, conn.exec_driver_sql(f"PRAGMA {name}").scalar()) for name in
                 ("page_size", "journal_mode")]
    versions = conn.execute(text("SELECT version_num FROM sessionstore_alembic_version")).scalars().all()
    theirs = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    sessions = [tuple(r) for r in conn.execute(text("SELECT * FROM sessions")).all()]
    return [*rows, ("ours", versions), ("theirs", theirs), ("their sessions", sessions)]


def _plain_alembic(*args: str) -> None:
    CommandLine(prog="alembic").main(argv=["-c", str(ROOT / "alembic.ini"), *args])


def _db_upgrade(url: str) -> None:
    result = CliRunner().invoke(cli, ["--db", url, "db", "upgrade"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("foreign", [True, False], ids=["beside-foreign-tables", "empty"])
def test_plain_alembic_upgrade_head_gives_the_schema_db_upgrade_gives(
        new_database: Callable[[], str], foreign: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # as a user runs it from a checkout
    by_alembic, by_cli = new_database(), new_database()
    for url in (by_alembic, by_cli):
        _run_sql(url, FOREIGN if foreign else ["CREATE TABLE sessions (id TEXT)",
                                               "CREATE TABLE alembic_version (version_num VARCHAR(32))"])
    _plain_alembic("-x", f"url={by_alembic}", "upgrade", "head")
    _db_upgrade(by_cli)
    schema = _schema(by_alembic)
    assert ("ours", [SCHEMA_REVISION]) in schema
    assert schema == _schema(by_cli)
    _plain_alembic("-x", f"url={by_alembic}", "upgrade", "head")  # again: nothing to do
    assert _schema(by_alembic) == schema


def test_plain_alembic_stamp_of_an_empty_database_creates_no_tables(new_database: Callable[[], str]) -> None:
    """Only an upgrade creates the schema: a stamp records the revision and nothing else."""
    url = new_database()
    _run_sql(url, FOREIGN)
    _plain_alembic("-x", f"url={url}", "stamp", "head")
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT version_num FROM sessionstore_alembic_version")).scalars().all() == [
                SCHEMA_REVISION]
            assert not conn.execute(text("SELECT 1 FROM information_schema.tables WHERE table_name ="
                                         " 'sessionstore_sessions'" if conn.dialect.name == "postgresql" else
                                         "SELECT 1 FROM sqlite_master WHERE name = 'sessionstore_sessions'")).all()
    finally:
        engine.dispose()

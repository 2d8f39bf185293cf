"""``--db`` as a newcomer gives it (issue 22, section 4): a read never creates a database, errors name
it, a plain path is a SQLite file, ``postgres://`` is PostgreSQL.

Before, ``--db sqlite:///tmp/x.db`` (a relative path: three slashes) run from another directory
silently created ``./tmp/x.db`` and its folders, and ``ls`` printed ``no sessions``; ``--db ./x.db``
was refused as not a URL, and so was ``postgres://``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.cli.app import READ_ONLY_COMMANDS
from sessionstore.errors import SchemaError, StoreError
from sessionstore.store.location import database_url
from tests.paths import PI_FILES

SID = "00000000-0000-4000-8000-000000000001"
READS = [
    ["ls"], ["context", SID], ["context", SID, "--json"], ["tree", SID], ["show", SID, "abcd"], ["export", SID],
    ["stats", SID], ["search", "hello"], ["validate", SID], ["db", "check"],
]


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory: an empty folder of its own."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def test_the_read_commands_are_the_ones_the_cli_has() -> None:
    assert set(cli.commands) >= READ_ONLY_COMMANDS  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", READS, ids=" ".join)
def test_a_read_of_a_missing_database_says_so_naming_it_and_creates_nothing(
        elsewhere: Path, command: list[str]) -> None:
    result = run("--db", "sqlite:///tmp/x.db", *command)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("error: database tmp/x.db: no such database file: ")
    assert str(elsewhere / "tmp" / "x.db") in result.stderr
    assert "sqlite:////tmp/x.db" in result.stderr  # what a relative URL may have meant
    assert len(result.stderr.splitlines()) == 1
    assert list(elsewhere.iterdir()) == []


def test_db_current_of_a_missing_database_is_none_and_creates_nothing(elsewhere: Path) -> None:
    result = run("--db", "sqlite:///tmp/x.db", "db", "current")
    assert (result.exit_code, result.stdout) == (0, "none\n")
    assert list(elsewhere.iterdir()) == []


def test_a_write_creates_the_database_a_read_then_finds(elsewhere: Path) -> None:
    made = run("--db", "sqlite:///tmp/x.db", "new", "--id", SID)
    assert made.exit_code == 0, made.output
    assert (elsewhere / "tmp" / "x.db").is_file()
    listed = run("--db", "sqlite:///tmp/x.db", "ls", "--json")
    assert listed.exit_code == 0, listed.output
    assert SID in listed.stdout


@pytest.mark.parametrize("given", ["./x.db", "x.db", "{cwd}/x.db", "~/x.db"])
def test_a_plain_path_is_a_sqlite_file(elsewhere: Path, given: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(elsewhere))
    path = given.format(cwd=elsewhere)
    made = run("--db", path, "new", "--id", SID)
    assert made.exit_code == 0, made.output
    assert (elsewhere / "x.db").is_file()
    assert SID in run("--db", path, "ls").stdout
    with SessionStore(f"sqlite:///{elsewhere / 'x.db'}") as store:
        assert [s.id for s in store.list_sessions()] == [SID]


def test_a_plain_path_from_the_environment_is_a_sqlite_file_too(
        elsewhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONSTORE_DB", "env.db")
    assert run("new", "--id", SID).exit_code == 0
    assert (elsewhere / "env.db").is_file()


def test_database_urls_are_read_as_given_and_postgres_as_postgresql() -> None:
    assert database_url("sqlite:///rel.db") == "sqlite:///rel.db"
    assert database_url("sqlite://") == "sqlite://"
    assert database_url("postgresql://u@h/db") == "postgresql://u@h/db"
    assert database_url("postgres://u:p@h:5432/db?sslmode=disable") == "postgresql://u:p@h:5432/db?sslmode=disable"


def test_postgres_scheme_opens_postgresql(pg_url: str) -> None:
    assert pg_url.startswith("postgresql")
    url = "postgres://" + pg_url.split("://", 1)[1]
    made = run("--db", url, "new", "--id", SID)
    assert made.exit_code == 0, made.output
    listed = run("--db", url, "ls", "--json")
    assert listed.exit_code == 0, listed.output
    assert SID in listed.stdout


def test_a_store_opened_without_create_needs_an_existing_database(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such.db"
    with pytest.raises(StoreError, match=f"no such database file: {missing}"):
        SessionStore(f"sqlite:///{missing}", create=False)
    assert not missing.parent.exists()
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    with pytest.raises(SchemaError, match="no sessionstore schema"):
        SessionStore(f"sqlite:///{empty}", create=False)
    with sqlite3.connect(empty) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []
    with SessionStore(f"sqlite:///{empty}") as store:  # a writer creates the schema
        store.create_session(cwd="/w")
    with SessionStore(f"sqlite:///{empty}", create=False) as store:
        assert len(store.list_sessions()) == 1


async def test_an_async_store_opened_without_create_needs_an_existing_database(tmp_path: Path) -> None:
    from sessionstore.aio import AsyncSessionStore

    missing = tmp_path / "no" / "such.db"
    store = AsyncSessionStore(f"sqlite:///{missing}", create=False)
    try:
        with pytest.raises(StoreError, match=f"no such database file: {missing}"):
            await store.open()
    finally:
        await store.aclose()
    assert not missing.parent.exists()


def test_a_word_that_is_neither_a_url_nor_a_path_is_refused_and_creates_nothing(elsewhere: Path) -> None:
    result = run("--db", "nonsense", "db", "upgrade")
    assert result.exit_code == 2 and "not a database URL: 'nonsense'" in result.stderr
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("given", ["sqlite://", "sqlite:///", "", " ", "sqlite:///:memory:",
                                   "sqlite:///file:x?mode=memory&uri=true", "sqlite://:memory:"])
def test_an_in_memory_or_empty_database_is_refused_it_would_keep_nothing(
    elsewhere: Path, given: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each command is a process of its own: what it wrote to an in-memory database is gone when it
    ends. Before, ``import`` printed the new id and exited 0 (and ``sqlite://:memory:`` was an internal
    error)."""
    for result in (run("--db", given, "import", str(PI_FILES["before-compaction"])),
                   CliRunner(env={"SESSIONSTORE_DB": given}).invoke(cli, ["ls"]) if given.strip() else None):
        if result is None:
            continue
        assert result.exit_code == 2 and result.stdout == "", result.output
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("error: --db "), result.stderr
        assert "internal" not in result.stderr
        assert given == "sqlite://:memory:" or "--db ./sessions.db" in result.stderr
    assert list(elsewhere.iterdir()) == []
    with SessionStore("sqlite://") as store:  # the library keeps accepting it
        assert store.list_sessions() == []

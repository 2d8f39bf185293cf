"""Shared fixtures. ``db_url``/``store`` run every test on a real SQLite file and, when
``SESSIONSTORE_TEST_PG_URL`` names a PostgreSQL server (CI always does), on a fresh PostgreSQL
database per test, cloned from a migrated template. Without it the PostgreSQL half skips (fails under
CI), as every missing optional part does: ``pytest.mark.requires(PART)`` (``tests/requirements.py``)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from sessionstore.api import SessionStore
from sessionstore.store import migrate
from sessionstore.store.engine import make_engine
from sessionstore.store.entry_store import EntryStore
from tests.paths import FIXTURES, PI_FILES, ROOT
from tests.requirements import CHROMIUM, POSTGRES, Part, chromium_path, require

__all__ = ["FIXTURES", "PI_FILES", "ROOT"]

# Dates without a zone are local time in JavaScript and here; the expected values (and node, a child
# process, reading the same dates) assume UTC, so the suite runs in UTC on a machine in any zone.
os.environ["TZ"] = "UTC"
time.tzset()

PG_URL = os.environ.get("SESSIONSTORE_TEST_PG_URL")
BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.requires(POSTGRES)),
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires(part): the test needs an optional part (tests/requirements.py): skipped without it, "
        "failed under CI")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers(name="requires"):
        for part in mark.args:
            assert isinstance(part, Part), f"pytest.mark.requires takes tests.requirements parts, not {part!r}"
            require(part)


def _admin_url() -> str:
    require(POSTGRES)
    assert PG_URL is not None
    return make_url(PG_URL).set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


def _database_url(name: str) -> str:
    require(POSTGRES)
    assert PG_URL is not None
    return make_url(PG_URL).set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    """A migrated PostgreSQL database that each test's database is cloned from."""
    name = f"sessionstore_tpl_{uuid.uuid4().hex[:8]}"
    admin = create_engine(_admin_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine = make_engine(_database_url(name))
    migrate.upgrade(engine)
    engine.dispose()
    yield name
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def fresh_pg_database(template: str | None = None, *, prefix: str = "sessionstore_t") -> tuple[str, str]:
    """A new PostgreSQL database, cloned from ``template`` (``None``: empty, no schema): its name and URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(_admin_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
    admin.dispose()
    return name, _database_url(name)


def drop_pg_database(name: str) -> None:
    admin = create_engine(_admin_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'sessions.db'}"
        return
    template = request.getfixturevalue("pg_template")
    name, url = fresh_pg_database(template)
    yield url
    drop_pg_database(name)


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh PostgreSQL database, for a test of what only PostgreSQL has (skipped, as ``db_url``'s
    PostgreSQL half is, when ``SESSIONSTORE_TEST_PG_URL`` is not set; under CI, which starts a server,
    that fails instead)."""
    require(POSTGRES)
    name, url = fresh_pg_database(request.getfixturevalue("pg_template"))
    yield url
    drop_pg_database(name)


@pytest.fixture(scope="session")
def chromium() -> str:
    """The headless browser of the HTML viewer's tests (tests/browser.py drives it)."""
    require(CHROMIUM)
    found = chromium_path()
    assert found is not None
    return found


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sessions.db'}"


@pytest.fixture
def store(db_url: str) -> Iterator[SessionStore]:
    with SessionStore(db_url) as opened:
        yield opened


@pytest.fixture
def db_engine(store: SessionStore, db_url: str) -> Iterator[Engine]:
    """An engine of its own on the store's database, for tests that look at the rows themselves
    (opened after the store, which creates the schema)."""
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def entry_store(store: SessionStore, db_url: str) -> Iterator[EntryStore]:
    """The layer below ``SessionStore`` on the store's database, for tests of its own operations."""
    with EntryStore(db_url) as opened:
        yield opened


@pytest.fixture
def engine(backend: str, tmp_path: Path) -> Iterator[Engine]:
    """An empty database (SQLite file or a new PostgreSQL database) without any schema, for tests that
    build a database at an older revision."""
    if backend == "sqlite":
        made = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
        yield made
        made.dispose()
        return
    name, url = fresh_pg_database(prefix="sessionstore_empty")
    made = make_engine(url)
    yield made
    made.dispose()
    drop_pg_database(name)


class Clock:
    """The store's clock of writes (``entry_store.now_ms``, the activity time of writes through the API),
    ticking a second per reading from 2031-01-01 (after every real timestamp a test writes), so that
    writes in one millisecond still order."""

    START = 1_924_992_000_000  # 2031-01-01T00:00:00Z

    def __init__(self) -> None:
        self.now = self.START

    def __call__(self) -> int:
        self.now += 1_000
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    ticking = Clock()
    monkeypatch.setattr("sessionstore.store.entry_store.now_ms", ticking)
    return ticking

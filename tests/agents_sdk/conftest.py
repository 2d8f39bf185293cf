"""The backend the SDK's own session tests run on (every test four times: SQLite and PostgreSQL, through
``SessionStore`` and ``AsyncSessionStore``), and the tests left out (``exclusions.py``), deselected at
collection (pytest reports them as deselected; ``test_exclusions.py`` checks that each names a test)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sessionstore import AsyncSessionStore
from tests.agents_sdk import substitute
from tests.agents_sdk.exclusions import excluded
from tests.conftest import drop_pg_database, fresh_pg_database
from tests.requirements import INSTALL_AGENTS, POSTGRES, module_present, require

if not module_present("agents", install=INSTALL_AGENTS):  # (the agents extra installs it; CI always has it)
    collect_ignore_glob = ["test_*.py"]

    def pytest_report_header() -> str:
        return f"tests/agents_sdk: not run, openai-agents is not installed; run: {INSTALL_AGENTS}"

SUBSTITUTIONS = [
    pytest.param(("sqlite", False), id="sqlite-SessionStore"),
    pytest.param(("sqlite", True), id="sqlite-AsyncSessionStore"),
    pytest.param(("postgresql", False), id="postgresql-SessionStore"),
    pytest.param(("postgresql", True), id="postgresql-AsyncSessionStore"),
]


@pytest.fixture(params=SUBSTITUTIONS, autouse=True)
async def substituted_backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[substitute.Databases]:
    backend, asynchronous = request.param
    numbers = itertools.count()
    made: list[str] = []

    def new_url(place: str) -> str:
        if backend == "sqlite":
            return f"sqlite:///{tmp_path / f'sessionstore-{next(numbers)}.db'}"
        name, url = fresh_pg_database(request.getfixturevalue("pg_template"))
        made.append(name)
        return url

    if backend == "postgresql":
        require(POSTGRES)
        request.getfixturevalue("pg_template")  # (made before the test: a fixture cannot be asked for inside it)
    databases = substitute.Databases(backend, asynchronous, new_url)
    substitute.CURRENT.append(databases)
    try:
        yield databases
    finally:
        substitute.CURRENT.remove(databases)
        for store in databases.stores.values():
            if isinstance(store, AsyncSessionStore):
                await store.aclose()
            else:
                store.close()
        for name in made:
            drop_pg_database(name)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    ours = [item for item in items if Path(str(item.path)).parent == here]
    left_out = excluded(ours)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]

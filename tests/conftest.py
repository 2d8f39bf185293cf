"""Shared fixtures: a real SQLite file per test (and PostgreSQL when SESSIONSTORE_TEST_PG_URL is set)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sessionstore.api import SessionStore
from tests.paths import FIXTURES, PI_FILES, ROOT

__all__ = ["FIXTURES", "PI_FILES", "ROOT"]


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sessions.db'}"


@pytest.fixture
def store(db_url: str) -> Iterator[SessionStore]:
    with SessionStore(db_url) as opened:
        yield opened

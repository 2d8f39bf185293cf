"""A SQLite database that sessionstore creates is its owner's alone: the file 0600 (and the WAL and
shared-memory files SQLite makes beside it), the default data directory 0700."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.store.location import ENV_URL, default_db_path
from tests.builders import user


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    """The most permissive umask, so that only the modes sessionstore asks for are seen."""
    old = os.umask(0)
    yield
    os.umask(old)


def test_a_new_database_file_and_its_wal_files_are_0600(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "sessions.db"
    with SessionStore(f"sqlite:///{path}") as store:
        sid = store.create_session(cwd="/w")
        store.append_message(sid, user("hi"))
        wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
        assert wal.exists() and shm.exists()
        assert mode(path) == mode(wal) == mode(shm) == 0o600
    assert mode(path.parent) == 0o700


def test_an_existing_database_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with SessionStore(f"sqlite:///{path}"):
        pass
    path.chmod(0o664)
    with SessionStore(f"sqlite:///{path}") as store:
        store.create_session(cwd="/w")
    assert mode(path) == 0o664


def test_the_default_database_lives_in_a_private_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_URL, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    path = default_db_path()
    assert path.is_relative_to(tmp_path)
    result = CliRunner().invoke(cli, ["new", "--cwd", "/w"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert mode(path) == 0o600 and mode(path.parent) == 0o700
    assert mode(tmp_path / "data") == 0o700  # a parent it had to make too


def test_every_folder_the_store_makes_for_a_new_file_is_0700_and_existing_ones_keep_their_mode(
        tmp_path: Path) -> None:
    """Under umask 000 the missing parents were 0777 (only the innermost folder was 0700)."""
    tmp_path.chmod(0o755)
    path = tmp_path / "a" / "b" / "c" / "sessions.db"
    with SessionStore(f"sqlite:///{path}") as store:
        store.create_session(cwd="/w")
    assert [mode(folder) for folder in (path.parent, path.parent.parent, path.parent.parent.parent)] == [0o700] * 3
    assert mode(tmp_path) == 0o755 and mode(path) == 0o600

"""Archive and restore killed (SIGKILL) at each of their steps (``SESSIONSTORE_TEST_CRASH_AT``, see
``sessionstore.store.archive``): the session is whole in exactly one place, the database or its archive
file, once the archive directory is reconciled, and exports byte for byte as before, on both backends."""

from __future__ import annotations

import gzip
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sessionstore.api import SessionStore
from sessionstore.store import archive
from tests.paths import PI_FILES

pytestmark = pytest.mark.slow

MAIN = "import sys; from sessionstore.cli import main; sys.argv[0] = 'sessionstore'; main()"


def _cli(url: str, *args: str, crash_at: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, archive.CRASH_ENV: crash_at}
    return subprocess.run([sys.executable, "-c", MAIN, "--db", url, *args], env=env, capture_output=True,
                          text=True, timeout=120)


def _export(store: SessionStore, sid: str) -> bytes:
    out = io.BytesIO()
    store.export_jsonl(sid, out)
    return out.getvalue()


def _whole_in_one_place(store: SessionStore, sid: str, directory: Path, before: bytes) -> str:
    archive.reconcile(store._entries, directory)
    files = [p for p in directory.rglob("*") if p.is_file()]
    info = archive.archive_info(store._entries, sid)
    stored = store._entries.count_entries(sid) if info is None else 0
    if info is None:
        assert files == [] and stored > 0
        assert _export(store, sid) == before
        return "database"
    assert files == [Path(info.file)]
    with store._entries.backend.read() as tx:
        assert tx.run("SELECT count(*) FROM sessionstore_entries").fetchone()[0] == 0
    with gzip.open(info.file, "rb") as fp:
        assert fp.read() == before
    assert _export(store, sid) == before  # (restores it)
    return "archive"


@pytest.mark.parametrize("step", ["archive:after-write", "archive:after-rename", "archive:after-commit"])
def test_an_archive_killed_at_each_step_leaves_the_session_whole_in_one_place(
        db_url: str, tmp_path: Path, step: str) -> None:
    directory = tmp_path / "archive"
    with SessionStore(db_url) as store:
        sid = store.import_jsonl(PI_FILES["before-compaction"]).session_id
        before = _export(store, sid)
    done = _cli(db_url, "archive", sid, "--archive-dir", str(directory), crash_at=step)
    assert done.returncode == -signal.SIGKILL, done.stderr
    with SessionStore(db_url) as store:
        where = _whole_in_one_place(store, sid, directory, before)
    assert where == ("archive" if step == "archive:after-commit" else "database")


@pytest.mark.parametrize("step", ["restore:after-verify", "restore:after-insert", "restore:after-commit"])
def test_a_restore_killed_at_each_step_leaves_the_session_whole_in_one_place(
        db_url: str, tmp_path: Path, step: str) -> None:
    directory = tmp_path / "archive"
    with SessionStore(db_url) as store:
        sid = store.import_jsonl(PI_FILES["before-compaction"]).session_id
        before = _export(store, sid)
        archive.archive_session(store._entries, sid, archive_dir=directory)
    done = _cli(db_url, "restore", sid, crash_at=step)
    assert done.returncode == -signal.SIGKILL, done.stderr
    with SessionStore(db_url) as store:
        where = _whole_in_one_place(store, sid, directory, before)
    assert where == ("database" if step == "restore:after-commit" else "archive")

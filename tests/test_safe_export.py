"""`export -o FILE` replaces FILE in one step through a private temporary file, and never writes
through a symlink or onto anything but a regular file."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO

import pytest
from click.testing import CliRunner, Result

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.cli.read_cmd import write_file_atomically
from tests.paths import PI_FILES

SESSION = "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"
EXPECTED = (PI_FILES["large-session"].parent / "large-session.v3.jsonl").read_bytes()


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'db' / 'sessions.db'}"
    with SessionStore(url) as store:
        store.import_jsonl(PI_FILES["large-session"])
    return url


def export(url: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", url, "export", SESSION, *args], catch_exceptions=False)


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".partial"))


def assert_refused(result: Result, *needles: str) -> None:
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    for needle in needles:
        assert needle in result.stderr


def test_export_writes_the_file_and_leaves_no_temporary_file(url: str, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    result = export(url, "-o", str(target))
    assert result.exit_code == 0 and result.stderr == f"wrote 1018 entries to {target}\n"
    assert target.read_bytes() == EXPECTED
    assert leftovers(tmp_path) == []
    assert export(url, "-o", "-").stdout_bytes == EXPECTED


def test_a_new_file_gets_the_usual_mode_and_a_replaced_file_keeps_its_own(url: str, tmp_path: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    new = tmp_path / "new.jsonl"
    assert export(url, "-o", str(new)).exit_code == 0
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~umask
    kept = tmp_path / "kept.jsonl"
    kept.write_text("old")
    kept.chmod(0o640)
    inode = kept.stat().st_ino
    assert export(url, "-o", str(kept)).exit_code == 0
    assert kept.read_bytes() == EXPECTED and stat.S_IMODE(kept.stat().st_mode) == 0o640
    assert kept.stat().st_ino != inode  # a new file renamed onto it, not the old one rewritten


def test_a_symlink_is_refused_and_left_alone(url: str, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    link = tmp_path / "out.jsonl"
    link.symlink_to(victim)
    assert_refused(export(url, "-o", str(link)), str(link), "symbolic link")
    assert link.is_symlink() and os.readlink(link) == str(victim) and victim.read_text() == "precious"
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "nowhere")
    assert_refused(export(url, "-o", str(dangling)), "symbolic link")
    assert not (tmp_path / "nowhere").exists()
    assert leftovers(tmp_path) == []


def test_what_is_not_a_regular_file_is_refused_and_left_alone(url: str, tmp_path: Path) -> None:
    null = Path("/dev/null")
    if null.exists():
        assert_refused(export(url, "-o", str(null)), "/dev/null", "not a regular file")
        assert stat.S_ISCHR(null.stat().st_mode)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert_refused(export(url, "-o", str(fifo)), "not a regular file")  # (opening it would block)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    directory = tmp_path / "dir"
    directory.mkdir()
    assert_refused(export(url, "-o", str(directory)), "not a regular file")
    assert directory.is_dir() and list(directory.iterdir()) == []
    assert leftovers(tmp_path) == []


def test_a_missing_directory_or_session_writes_nothing(url: str, tmp_path: Path) -> None:
    missing_dir = tmp_path / "no" / "such" / "dir.jsonl"
    assert_refused(export(url, "-o", str(missing_dir)), f"cannot write {missing_dir}: No such file or directory")
    nothing = CliRunner().invoke(cli, ["--db", url, "export", "nosuch", "-o", str(tmp_path / "x.jsonl")])
    assert_refused(nothing, "no session")
    assert not (tmp_path / "x.jsonl").exists() and leftovers(tmp_path) == []


def test_a_failed_write_removes_the_temporary_file_and_keeps_the_old_target(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("old")

    def fails_halfway(fp: IO[bytes]) -> int:
        fp.write(b"partial line")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_file_atomically(target, fails_halfway)
    assert target.read_text() == "old" and leftovers(tmp_path) == []


def test_the_temporary_file_is_private_while_it_is_written(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("old")
    target.chmod(0o644)
    seen: list[int] = []

    def look(fp: IO[bytes]) -> int:
        seen.append(stat.S_IMODE(os.fstat(fp.fileno()).st_mode))
        (partial,) = leftovers(tmp_path)
        seen.append(int(partial.startswith(".out.jsonl.")))
        return 0

    write_file_atomically(target, look)
    assert seen == [0o600, 1] and stat.S_IMODE(target.stat().st_mode) == 0o644

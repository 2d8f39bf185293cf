"""``sessionstore tail`` (issue 24 point 3) on a local database, both backends: the last entries as
``tree`` shows them or as JSONL, and with ``--follow`` each entry another process stores, as it is
stored, until the session is deleted or Ctrl-C ends it (no traceback)."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessionstore.api import SessionStore

WITHIN = 5.0


def sessionstore(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "sessionstore"), *args]


def run(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(sessionstore("--db", db_url, *args), capture_output=True, text=True, timeout=60)


@pytest.fixture
def session(db_url: str) -> Iterator[tuple[SessionStore, str, list[str]]]:
    with SessionStore(db_url) as store:
        sid = store.create_session(cwd="/tail", session_id="tailed-session")
        ids = [store.append_custom(sid, "tick", {"n": n}) for n in range(5)]
        yield store, sid, ids


def _interruptible() -> None:
    """Ctrl-C reaches the child as a terminal's would, also when this suite runs as a background job
    (a non-interactive shell starts those with SIGINT ignored, and the child would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Following:
    """``tail --follow`` running, its stdout lines queued as they come."""

    def __init__(self, db_url: str, *args: str) -> None:
        self.process = subprocess.Popen(sessionstore("--db", db_url, "tail", *args), stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, preexec_fn=_interruptible)
        self.lines: queue.Queue[str] = queue.Queue()
        assert self.process.stdout is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.lines.put(line.rstrip("\n"))

    def take(self, count: int) -> list[str]:
        return [self.lines.get(timeout=WITHIN) for _ in range(count)]

    def stop(self) -> tuple[int, str]:
        if self.process.poll() is None:
            self.process.kill()
        _out, err = self.process.communicate(timeout=30)
        return self.process.returncode, err


def test_tail_prints_the_last_entries_as_tree_shows_them(db_url: str, session: tuple[SessionStore, str, list[str]]
                                                         ) -> None:
    _store, sid, ids = session
    done = run(db_url, "tail", sid, "-n", "2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{ids[3]} custom tick", f"{ids[4]} custom tick"]
    after = run(db_url, "tail", sid, "--after", "0", "--json")
    assert [json.loads(line)["id"] for line in after.stdout.splitlines()] == ids[1:]
    assert json.loads(after.stdout.splitlines()[0])["data"] == {"n": 1}


def test_tail_of_a_missing_session_is_one_error_line(db_url: str, session: object) -> None:
    done = run(db_url, "tail", "no-such-session")
    assert done.returncode == 2 and done.stderr.startswith("error: ") and len(done.stderr.splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_tail_follow_prints_what_another_process_appends_until_the_session_is_deleted(
        db_url: str, session: tuple[SessionStore, str, list[str]]) -> None:
    store, sid, ids = session
    following = Following(db_url, sid, "--follow", "-n", "1", "--json")
    assert json.loads(following.take(1)[0])["id"] == ids[-1]
    time.sleep(1.0)  # (it is watching)
    code = ("import sys; from sessionstore.api import SessionStore\n"
            "with SessionStore(sys.argv[1]) as s: print(s.append_custom(sys.argv[2], 'other', {'n': 9}))")
    added = subprocess.run([sys.executable, "-c", code, db_url, sid], capture_output=True, text=True,
                           timeout=60, check=True).stdout.strip()
    (line,) = following.take(1)
    assert json.loads(line)["id"] == added
    new_leaf = ids[1]
    store.branch(sid, new_leaf)
    time.sleep(1.0)  # (a move and a deletion within one look are one change: the deletion)
    store.delete_session(sid)
    assert following.process.wait(timeout=WITHIN * 2) == 0
    _code, err = following.stop()
    assert f"leaf moved to {new_leaf}" in err and "was deleted" in err and "Traceback" not in err


def test_ctrl_c_ends_tail_follow_without_a_traceback(db_url: str, session: tuple[SessionStore, str, list[str]]
                                                     ) -> None:
    _store, sid, ids = session
    following = Following(db_url, sid, "--follow", "-n", "1")
    assert following.take(1) == [f"{ids[-1]} custom tick"]
    time.sleep(0.5)
    following.process.send_signal(signal.SIGINT)
    assert following.process.wait(timeout=10) == 130
    _code, err = following.stop()
    assert err == ""

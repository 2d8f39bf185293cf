"""What the review of issue 22's sync found, on both backends: a file that now holds another session
leaves the old one (a source gone), a rewrite never silently drops what the database added to a synced
session, a deletion is remembered per session (not per path), a withheld last line is counted, and a
rewrite that keeps the size and mtime (``cp -p``) is seen."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from tests.test_sync import chat, header, project, session_file
from tests.test_sync_integrity import _io, texts


def run(store: SessionStore, *args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(cli, ["--db", store.url, *args])
    return done.exit_code, done.stdout, done.stderr


def rewrite_middle(path: Path) -> None:
    """A middle line changed (same session id), a new mtime: a rewrite."""
    path.write_bytes(path.read_bytes().replace(b"question 2", b"QUESTION 2"))
    os.utime(path, ns=(1, path.stat().st_mtime_ns + 1_000_000_000))


# -- 1. another session's file in the place of a synced one ---------------------------------------
def test_another_sessions_file_at_a_synced_path_is_imported_and_the_old_session_kept(store: SessionStore,
                                                                                     tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "s", [header("old"), *chat(2)])
    run(store, "sync", str(root))
    session_file(project(root), "s", [header("new"), *chat(4)])
    code, out, _ = run(store, "sync", str(root))
    assert code == 0  # failed before: "0 imported, 0 appended, 1 rewritten", and "old" was deleted
    assert out.startswith("1 imported, 0 appended, 0 rewritten,")
    assert "1 source gone, kept; --prune removes them" in out
    assert {info.id: info.entry_count for info in store.list_sessions()} == {"old": 2, "new": 4}
    assert store.session("new").source_path == str(path)
    listed = {row["id"]: row for row in json.loads(run(store, "ls", "--json")[1])}
    assert listed["old"]["sourceGone"] is True and listed["new"]["sourceGone"] is False
    assert store.sync(root).unchanged == 1  # the new session's file, synced now
    moved = project(root, "/work/q") / "back.jsonl"  # the old session's file turns up again: it takes it back
    session_file(moved.parent, "back", [header("old"), *chat(3)])
    result = store.sync(root)
    assert (result.imported, result.gone, result.failed) == (1, 0, 0)
    assert store.session("old").entry_count == 3


# -- 2. what the database added to a synced session ------------------------------------------------
@pytest.mark.parametrize("change", [
    ["append", "s2", "--user", "added here"],
    ["label", "s2", "e0003", "keep"],
    ["name", "s2", "named here"],
    ["branch", "s2", "e0002"],
])
def test_a_rewrite_never_drops_what_the_database_added(store: SessionStore, tmp_path: Path,
                                                       change: list[str]) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "s2", [header("s2"), *chat(6)])
    assert store.sync(root).imported == 1
    code, _, err = run(store, *change)
    assert code == 0, err
    before = store.entries("s2"), store.leaf("s2")
    rewrite_middle(path)
    code, out, err = run(store, "sync", str(root))
    assert code == 1  # failed before: "1 rewritten", and what the command added was gone
    assert out.startswith("0 imported, 0 appended, 0 rewritten, 0 unchanged, 0 pruned, 0 pending, 1 failed")
    assert err.startswith(f"failed: {path}: session s2 has ")
    assert "re-importing the file would lose that" in err and "sync --adopt replaces" in err
    lost = "its leaf moved in the database (a branch)" if change[0] == "branch" else "entry not from its file"
    assert lost in err
    assert (store.entries("s2"), store.leaf("s2")) == before
    assert store.sync(root).failed == 1  # every sync says so, until the user chooses
    done = store.sync(root, adopt=True)
    assert (done.rewritten, done.failed) == (1, 0)
    assert "QUESTION 2" in texts(store, "s2") and store.session("s2").entry_count == 6


def test_entries_appended_by_both_sides_are_remembered_across_appends(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "s3", [header("s3"), *chat(4)])
    store.sync(root)
    run(store, "append", "s3", "--user", "added here")
    with path.open("ab") as fp:  # pi goes on writing the file: appended after the local entry
        fp.write(json.dumps(chat(1, start=4, parent="e0003")[0]).encode() + b"\n")
    assert store.sync(root).appended == 1
    rewrite_middle(path)
    result = store.sync(root)
    assert result.failed == 1 and "1 entry not from its file" in result.failures[0].reason
    assert "added here" in texts(store, "s3")


def test_a_rewrite_of_a_session_the_database_left_alone_goes_on(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "s4", [header("s4"), *chat(4)])
    store.sync(root)
    with path.open("ab") as fp:
        fp.write(json.dumps(chat(1, start=4, parent="e0003")[0]).encode() + b"\n")
    assert store.sync(root).appended == 1
    rewrite_middle(path)
    assert store.sync(root).rewritten == 1


# -- 3. a deletion is the session's, not the path's -------------------------------------------------
def test_another_session_at_a_deleted_sessions_path_is_synced(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "d", [header("gone1"), *chat(2)])
    store.sync(root)
    assert run(store, "rm", "gone1", "--yes")[0] == 0
    session_file(project(root), "d", [header("other1"), *chat(3)])
    result = store.sync(root)
    assert (result.imported, result.deleted) == (1, 0)  # failed before: 0 imported, 1 deleted
    assert [info.id for info in store.list_sessions()] == ["other1"]
    assert store.session("other1").source_path == str(path)
    assert store.sync(root).unchanged == 1


def test_a_deleted_session_imported_again_by_hand_is_not_called_deleted(store: SessionStore,
                                                                        tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "h", [header("hand2"), *chat(2)])
    store.sync(root)
    store.delete_session("hand2")
    assert store.sync(root).deleted == 1
    store.import_jsonl(_io(path.read_bytes()))
    code, out, err = run(store, "sync", str(root))
    assert "deleted session" not in out  # failed before: "1 deleted session not synced"
    assert code == 1 and "was not synced from this file (sync --adopt replaces it" in err
    assert store.sync(root, adopt=True).imported == 1
    assert store.sync(root).unchanged == 1


# -- 4. a last line held back is counted ------------------------------------------------------------
def test_a_withheld_last_line_is_counted_as_waiting(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "w", [header("w"), *chat(2)])
    with path.open("ab") as fp:
        fp.write(json.dumps(chat(1, start=2, parent="e0001")[0]).encode())  # no newline
    code, out, _ = run(store, "sync", str(root))
    assert code == 0  # failed before: nothing said of the line held back
    assert out.strip() == ("1 imported, 0 appended, 0 rewritten, 0 unchanged, 0 pruned, 0 pending, 0 failed;"
                           " 1 last line waiting for its newline")
    again = json.loads(run(store, "sync", str(root), "--json")[1])  # settled: read now
    assert (again["appended"], again["waiting"]) == (1, 0)
    with path.open("ab") as fp:
        fp.write(b'{"type": "message", "id": "torn"')  # a torn write, not whole: stays
    assert json.loads(run(store, "sync", str(root), "--json")[1])["waiting"] == 1
    assert json.loads(run(store, "sync", str(root), "--json")[1])["waiting"] == 1


# -- 5. a rewrite that keeps the size and the mtime --------------------------------------------------
def test_a_copy_that_keeps_size_and_mtime_is_a_rewrite(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "m", [header("m"), *chat(6)])
    store.sync(root)
    elsewhere = tmp_path / "edited.jsonl"
    elsewhere.write_bytes(path.read_bytes().replace(b"question 2", b"QUESTION 2"))
    before = path.stat()
    os.utime(elsewhere, ns=(before.st_atime_ns, before.st_mtime_ns))
    shutil.copy2(elsewhere, tmp_path / "staged.jsonl")
    os.replace(tmp_path / "staged.jsonl", path)  # rsync -t: a new file renamed in place, same size and mtime
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    result = store.sync(root)
    assert result.rewritten == 1  # failed before: unchanged, the old line kept for ever
    assert "QUESTION 2" in texts(store, "m")
    shutil.copy2(path, tmp_path / "same.jsonl")  # cp -p of the same bytes over it: checked, nothing to do
    with path.open("r+b") as fp:
        fp.write((tmp_path / "same.jsonl").read_bytes())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert store.sync(root).unchanged == 1
    assert store.sync(root).unchanged == 1


def test_two_sessions_taking_turns_at_one_path_keep_both(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    for turn in range(4):
        sid = "ta" if turn % 2 == 0 else "tb"
        path = session_file(project(root), "t", [header(sid), *chat(2 + turn)])
        result = store.sync(root)
        assert (result.imported, result.failed, result.gone) == (1, 0, 1 if turn else 0), result.failures
        assert store.session(sid).source_path == str(path) and store.session(sid).entry_count == 2 + turn
    assert sorted(info.id for info in store.list_sessions()) == ["ta", "tb"]


def test_a_moved_file_does_not_take_over_what_the_database_added(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "mv", [header("mv"), *chat(4)])
    store.sync(root)
    run(store, "append", "mv", "--user", "added here")
    moved = project(root, "/work/q") / path.name
    path.rename(moved)
    result = store.sync(root)
    assert result.failed == 1 and "1 entry not from its file" in result.failures[0].reason  # failed before: lost
    assert "added here" in texts(store, "mv")
    assert store.sync(root, adopt=True).imported == 1
    assert store.session("mv").source_path == str(moved) and store.session("mv").entry_count == 4

"""``sessionstore sync`` keeps the mirror true to the files, on both backends (issue 22): a rewrite that
keeps the size is seen, a last line without its newline is read once the file has settled, one
file's unexpected failure is that file's, names that are not regular files are skipped with a reason,
and sessions whose file is gone are counted."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.store import facts as facts_module
from tests.test_sync import chat, header, project, session_file

BIG = "1" + "0" * 309
"""An integer beyond the double range, written as digits (``JSON.parse`` reads it as Infinity)."""


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def texts(store: SessionStore, session_id: str) -> list[str]:
    return [e["message"]["content"][0]["text"] if isinstance(e["message"]["content"], list)
            else e["message"]["content"] for e in store.entries(session_id) if e["type"] == "message"]


# -- a rewrite that keeps the size ---------------------------------------------------------------------
def test_a_middle_line_rewritten_at_the_same_size_is_a_rewrite(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "r1", [header("r1"), *chat(6)])
    assert store.sync(root).imported == 1
    before = path.stat()
    changed = path.read_bytes().replace(b"question 2", b"QUESTION 2")
    path.write_bytes(changed)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    assert path.stat().st_size == before.st_size
    result = store.sync(root)
    assert (result.rewritten, result.unchanged, result.appended) == (1, 0, 0)
    assert "QUESTION 2" in texts(store, "r1") and "question 2" not in texts(store, "r1")
    assert store.sync(root).unchanged == 1


def test_a_middle_line_rewritten_and_a_line_appended_is_a_rewrite(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "r2", [header("r2"), *chat(6)])
    assert store.sync(root).imported == 1
    grown = path.read_bytes().replace(b"answer 3", b"ANSWER 3")
    grown += json.dumps(chat(1, start=6, parent="e0005")[0]).encode() + b"\n"
    path.write_bytes(grown)
    result = store.sync(root)
    assert (result.rewritten, result.appended) == (1, 0)
    assert "ANSWER 3" in texts(store, "r2") and len(texts(store, "r2")) == 7


def test_a_touched_file_is_unchanged_and_an_append_after_it_is_appended(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "r3", [header("r3"), *chat(4)])
    store.sync(root)
    os.utime(path, ns=(0, path.stat().st_mtime_ns + 5_000_000_000))
    assert (store.sync(root).unchanged, store.sync(root).rewritten) == (1, 0)
    with path.open("ab") as fp:
        fp.write(json.dumps(chat(1, start=4, parent="e0003")[0]).encode() + b"\n")
    result = store.sync(root)
    assert (result.appended, result.rewritten, result.entries) == (1, 0, 1)


def test_a_source_recorded_without_a_prefix_digest_is_reimported_once(store: SessionStore, tmp_path: Path) -> None:
    """A check from before the prefix digest (two parts): the file's next change re-imports it."""
    from sqlalchemy import text

    from sessionstore.store.engine import make_engine

    root = tmp_path / "sessions"
    path = session_file(project(root), "r4", [header("r4"), *chat(2)])
    store.sync(root)
    engine = make_engine(store.url)
    with engine.begin() as conn:
        (check,) = conn.execute(text("SELECT check_hash FROM sessionstore_sources")).one()
        old = ":".join(check.split(":")[:2])
        conn.execute(text("UPDATE sessionstore_sources SET check_hash = :c"), {"c": old})
    engine.dispose()
    with path.open("ab") as fp:
        fp.write(json.dumps(chat(1, start=2, parent="e0001")[0]).encode() + b"\n")
    assert store.sync(root).rewritten == 1
    with path.open("ab") as fp:
        fp.write(json.dumps(chat(1, start=3, parent="e0002")[0]).encode() + b"\n")
    assert store.sync(root).appended == 1
    assert len(texts(store, "r4")) == 4


# -- a last line without its newline ---------------------------------------------------------------------
def torn(path: Path) -> bytes:
    """Drop the file's final newline (a torn write: the line is whole, its newline lost)."""
    data = path.read_bytes()
    path.write_bytes(data[:-1])
    return data[:-1]


def test_a_whole_last_line_without_its_newline_is_read_once_the_file_settled(store: SessionStore,
                                                                             tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "t1", [header("t1"), *chat(5)])
    torn(path)
    first = store.sync(root)
    assert first.imported == 1 and store.session("t1").message_count == 4  # maybe being written: left
    second = store.sync(root)  # unchanged since: not being written, read as pi reads it
    assert (second.appended, second.entries, second.failed) == (1, 1, 0)
    assert store.session("t1").message_count == 5 and store.leaf("t1") == "e0004"
    assert store.sync(root).unchanged == 1


def test_the_newline_pi_adds_later_reads_nothing_twice(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "t2", [header("t2"), *chat(3)])
    torn(path)
    store.sync(root)
    store.sync(root)
    with path.open("ab") as fp:  # pi's load appends the newline, then pi appends its entries
        fp.write(b"\n")
    assert store.sync(root).entries == 0
    bad = {**chat(1, start=4, parent="e0003")[0], "id": "e0002"}  # a duplicate id: its line number is asked
    with path.open("ab") as fp:
        fp.write(json.dumps(chat(1, start=3, parent="e0002")[0]).encode() + b"\n")
        fp.write(json.dumps(bad).encode() + b"\n")
    result = store.sync(root)
    assert [(f.line, "duplicate" in f.reason) for f in result.failures] == [(6, True)]
    lines = lines_of(path)
    path.write_bytes(b"".join(lines[:-1]))
    result = store.sync(root)
    assert (result.appended, result.entries, result.failed) == (1, 1, 0)
    assert [e["id"] for e in store.entries("t2")] == ["e0000", "e0001", "e0002", "e0003"]


def test_a_torn_last_line_that_is_not_whole_stays_unread(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "t3", [header("t3"), *chat(3)])
    data = path.read_bytes()
    path.write_bytes(data[:-20])
    for _ in range(3):
        result = store.sync(root)
        assert result.failed == 0
    assert store.session("t3").message_count == 2
    path.write_bytes(data)
    assert store.sync(root).entries == 1 and store.session("t3").message_count == 3


# -- one file's unexpected failure ---------------------------------------------------------------------
def test_a_number_beyond_the_double_range_does_not_stop_the_sync(store: SessionStore, tmp_path: Path) -> None:
    """Read as pi reads it, the file imports; while it cannot be, it is that file's failure at its line
    and every other file still syncs."""
    directory = project(tmp_path / "sessions")
    big = directory / "2025-01-01T00-00-00-000Z_a.jsonl"
    entry = json.dumps(chat(1)[0]).replace('"2025-01-01T00:00:01.000Z"', BIG)
    big.write_text(json.dumps(header("a")) + "\n" + entry + "\n")
    after = session_file(directory, "b", [header("b"), *chat(2)], ts="2025-01-02T00-00-00-000Z")
    result = store.sync(tmp_path / "sessions")
    assert store.session("b").message_count == 2
    if result.failures:
        (failure,) = result.failures
        assert (failure.path, failure.line) == (str(big), 2) and "OverflowError" in failure.reason
        assert result.imported == 1
    else:
        assert result.imported == 2
    assert after.exists()


def test_an_unexpected_failure_inside_one_files_import_is_that_files(store: SessionStore, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault injected into a later stage of the import (the session facts of one entry): no content
    is known to provoke one once numbers are read as pi reads them, and the sync must survive the next."""
    real_add = facts_module.SessionStats.add

    def add(self: facts_module.SessionStats, entry: dict[str, object]) -> None:
        if entry.get("id") == "poison":
            raise RuntimeError("a stage failed")
        real_add(self, entry)

    monkeypatch.setattr(facts_module.SessionStats, "add", add)
    root = tmp_path / "sessions"
    directory = project(root)
    session_file(directory, "a", [header("a"), *chat(2)], ts="2025-01-01T00-00-00-000Z")
    poisoned = session_file(directory, "b", [header("b"), *chat(2), {**chat(1, start=2, parent="e0001")[0],
                                                                     "id": "poison"}], ts="2025-01-02T00-00-00-000Z")
    session_file(directory, "c", [header("c"), *chat(3)], ts="2025-01-03T00-00-00-000Z")
    done = CliRunner().invoke(cli, ["--db", store.url, "sync", str(root)])
    assert done.exit_code == 1
    assert f"failed: {poisoned}:4: cannot be stored (RuntimeError: a stage failed)" in done.stderr
    assert done.stdout.strip().startswith("2 imported,") and "1 failed" in done.stdout
    assert {info.id for info in store.list_sessions()} == {"a", "c"}
    monkeypatch.setattr(facts_module.SessionStats, "add", real_add)
    assert store.sync(root).imported == 1  # nothing of it was written: the next sync imports it


def test_an_unexpected_failure_while_appending_is_that_files(store: SessionStore, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "a", [header("a"), *chat(2)])
    store.sync(root)
    real_add = facts_module.SessionStats.add

    def add(self: facts_module.SessionStats, entry: dict[str, object]) -> None:
        if entry.get("id") == "poison":
            raise RuntimeError("a stage failed")
        real_add(self, entry)

    monkeypatch.setattr(facts_module.SessionStats, "add", add)
    with path.open("ab") as fp:
        fp.write(json.dumps({**chat(1, start=2, parent="e0001")[0], "id": "poison"}).encode() + b"\n")
    (failure,) = store.sync(root).failures
    assert (failure.path, failure.line, failure.reason) == (str(path), 4, "cannot be stored (RuntimeError: a stage"
                                                                          " failed)")
    monkeypatch.setattr(facts_module.SessionStats, "add", real_add)
    assert store.sync(root).appended == 1


# -- names in a sessions directory ---------------------------------------------------------------------
def test_a_failing_files_name_with_a_newline_stays_on_its_line(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    bad = project(root) / "2025-01-01T00-00-00-000Z_bad\nname.jsonl"
    bad.write_bytes(json.dumps(header("bad")).encode() + b"\nnope\n")
    done = CliRunner().invoke(cli, ["--db", store.url, "sync", str(root)])
    assert done.exit_code == 1
    failed = [line for line in done.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1 and "_bad\\nname.jsonl:2: " in failed[0]
    assert len(done.stderr.splitlines()) == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_is_skipped_with_its_reason_and_never_opened(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    directory = project(root)
    fifo = directory / "2025-01-01T00-00-00-000Z_fifo.jsonl"
    os.mkfifo(fifo)
    (directory / "2025-01-01T00-00-00-000Z_dir.jsonl").mkdir()
    session_file(directory, "ok", [header("ok"), *chat(2)])
    outcome: dict[str, object] = {}

    def run() -> None:
        outcome["done"] = CliRunner().invoke(cli, ["--db", store.url, "sync", str(root), "--json"])

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():  # it opened the FIFO: unblock it
        with open(fifo, "wb"):
            pass
        pytest.fail("sync opened the FIFO for reading")
    done = outcome["done"]
    assert done.exit_code == 0, done.output  # type: ignore[attr-defined]
    report = json.loads(done.stdout)  # type: ignore[attr-defined]
    assert report["imported"] == 1
    assert report["skipped"] == [
        {"path": str(directory / "2025-01-01T00-00-00-000Z_dir.jsonl"), "line": None,
         "reason": "a directory, not a regular file: skipped"},
        {"path": str(fifo), "line": None, "reason": "a FIFO, not a regular file: skipped"}]
    text_run = CliRunner().invoke(cli, ["--db", store.url, "sync", str(root)])
    assert f"skipped: {fifo}: a FIFO, not a regular file: skipped" in text_run.stderr
    assert "2 names skipped (not a regular file)" in text_run.stdout
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


# -- sessions whose file is gone -----------------------------------------------------------------------
def test_sources_gone_are_counted_kept_and_said(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    directory = project(root)
    gone = [session_file(directory, sid, [header(sid), *chat(1)], ts=f"2025-01-0{i + 1}T00-00-00-000Z")
            for i, sid in enumerate(["g1", "g2", "g3", "k1"])]
    store.sync(root)
    for path in gone[:3]:
        path.unlink()
    runner = CliRunner()
    done = runner.invoke(cli, ["--db", store.url, "sync", str(root)])
    assert done.exit_code == 0
    assert done.stdout.strip().endswith("; 3 sources gone, kept; --prune removes them")
    report = json.loads(runner.invoke(cli, ["--db", store.url, "sync", str(root), "--json"]).stdout)
    assert (report["gone"], report["unchanged"]) == (3, 1)
    assert {info.id for info in store.list_sessions()} == {"g1", "g2", "g3", "k1"}
    listed = json.loads(runner.invoke(cli, ["--db", store.url, "ls", "--json"]).stdout)
    assert {row["id"]: row["sourceGone"] for row in listed} == {"g1": True, "g2": True, "g3": True, "k1": False}
    table = runner.invoke(cli, ["--db", store.url, "ls"]).stdout.splitlines()
    assert [f"{gone[i]} (gone)  " in line for i, line in enumerate(sorted(table[1:]))] == [True] * 3 + [False]
    store.import_jsonl(_io(json.dumps(header("hand")).encode() + b"\n"))
    hand = json.loads(runner.invoke(cli, ["--db", store.url, "ls", "--json"]).stdout)
    assert [row["sourceGone"] for row in hand if row["id"] == "hand"] == [None]
    pruned = store.sync(root, prune=True)
    assert (pruned.pruned, pruned.gone) == (3, 0)


# -- a session deleted on purpose ----------------------------------------------------------------------
def test_rm_of_a_synced_session_says_so_and_sync_does_not_bring_it_back(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "d1", [header("d1"), *chat(2)])
    session_file(project(root), "k1", [header("k1"), *chat(2)], ts="2025-01-02T00-00-00-000Z")
    runner = CliRunner()
    runner.invoke(cli, ["--db", store.url, "sync", str(root)])
    done = runner.invoke(cli, ["--db", store.url, "rm", "d1", "--yes"])
    assert done.exit_code == 0
    assert f"it was synced from {path}, which stays; sync will not import it again" in done.stderr
    again = runner.invoke(cli, ["--db", store.url, "sync", str(root)])
    assert again.exit_code == 0
    assert again.stdout.strip() == ("0 imported, 0 appended, 0 rewritten, 1 unchanged, 0 pruned, 0 pending, 0 failed;"
                                    " 1 deleted session not synced; --include-deleted syncs them")
    with path.open("ab") as fp:  # pi goes on writing it: still deleted
        fp.write(json.dumps(chat(1, start=2, parent="e0001")[0]).encode() + b"\n")
    assert json.loads(runner.invoke(cli, ["--db", store.url, "sync", str(root), "--json"]).stdout)["deleted"] == 1
    assert {info.id for info in store.list_sessions()} == {"k1"}
    back = runner.invoke(cli, ["--db", store.url, "sync", str(root), "--include-deleted"])
    assert back.exit_code == 0 and back.stdout.startswith("1 imported,")
    assert store.session("d1").message_count == 3
    assert store.sync(root).unchanged == 2  # synced again: the deletion is forgotten


def test_a_deleted_sessions_file_moved_elsewhere_is_not_brought_back(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "d2", [header("d2"), *chat(2)])
    store.sync(root)
    store.delete_session("d2")
    moved = project(root, "/work/q") / path.name
    path.rename(moved)
    result = store.sync(root)
    assert (result.imported, result.deleted, result.failed) == (0, 1, 0)
    assert store.list_sessions() == []
    assert store.sync(root, include_deleted=True).imported == 1


def test_prune_and_a_session_never_synced_leave_no_deletion_behind(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "p1", [header("p1"), *chat(2)])
    store.sync(root)
    saved = path.read_bytes()
    path.unlink()
    assert store.sync(root, prune=True).pruned == 1
    path.write_bytes(saved)  # the file is back (restored from pi's trash): a prune forgot nothing on purpose
    assert store.sync(root).imported == 1
    store.import_jsonl(_io(saved.replace(b'"p1"', b'"h1"')))
    store.delete_session("h1")
    assert store._entries.deleted_sources() == {}


def _io(data: bytes) -> object:
    import io

    return io.BytesIO(data)


def test_a_settled_v1_file_without_its_last_newline_is_read_whole(store: SessionStore, tmp_path: Path) -> None:
    from tests.paths import FIXTURES

    root = tmp_path / "sessions"
    path = project(root) / "2024-11-01T08-00-00-000Z_legacy.jsonl"
    whole = (FIXTURES / "legacy" / "compaction-v1.jsonl").read_bytes()
    path.write_bytes(whole.rstrip(b"\n"))
    store.sync(root)
    again = store.sync(root)
    assert (again.rewritten, again.failed) == (1, 0)
    synced = [e["id"] for e in store.entries("legacy-v1-compaction")]
    reference = SessionStore("sqlite:///" + str(tmp_path / "ref.db"))
    reference.import_jsonl(FIXTURES / "legacy" / "compaction-v1.jsonl")
    assert synced == [e["id"] for e in reference.entries("legacy-v1-compaction")]
    reference.close()
    assert store.sync(root).unchanged == 1


def test_a_device_is_skipped_with_its_reason(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    device = project(root) / "2025-01-01T00-00-00-000Z_null.jsonl"
    try:
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers
    except (PermissionError, AttributeError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    result = store.sync(root)
    assert [(s.path, s.reason) for s in result.skipped] == [
        (str(device), "a character device, not a regular file: skipped")]
    assert (result.imported, result.failed, result.pending) == (0, 0, 0)

"""``sessionstore sync`` (``catalog.sync``) on both backends: a pi session directory mirrored into the
database, each file imported, appended to, re-imported or left alone as its state says."""

from __future__ import annotations

import builtins
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from sessionstore.api import SessionStore
from sessionstore.catalog.defaults import default_sessions_dir
from sessionstore.catalog.sync import SyncResult, watch
from sessionstore.cli import cli
from sessionstore.store.engine import make_engine
from tests.builders import assistant, user
from tests.paths import FIXTURES, PI_FILES

V3_REAL = FIXTURES / "pi" / "before-compaction.v3.jsonl"
V1_LEGACY = FIXTURES / "legacy" / "compaction-v1.jsonl"
V1_LEGACY_AS_PI_REWRITES_IT = FIXTURES / "legacy" / "compaction-v1.v3.jsonl"
Json = dict[str, Any]


def project(root: Path, cwd: str = "/work/p") -> Path:
    directory = root / f"--{cwd.lstrip('/').replace('/', '-')}--"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def session_file(directory: Path, session_id: str, lines: list[Json], *, ts: str = "2025-01-01T00-00-00-000Z") -> Path:
    path = directory / f"{ts}_{session_id}.jsonl"
    path.write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    return path


def header(session_id: str, cwd: str = "/work/p") -> Json:
    return {"type": "session", "version": 3, "id": session_id, "timestamp": "2025-01-01T00:00:00.000Z", "cwd": cwd}


def message(entry_id: str, parent: str | None, body: Json) -> Json:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z",
            "message": body}


def chat(n: int, *, start: int = 0, parent: str | None = None) -> list[Json]:
    """``n`` entries alternating user and assistant messages, chained from ``parent``."""
    out = []
    for i in range(start, start + n):
        body = user(f"question {i}") if i % 2 == 0 else assistant(f"answer {i}")
        out.append(message(f"e{i:04d}", parent, body))
        parent = f"e{i:04d}"
    return out


def append_lines(path: Path, lines: list[Json], *, raw: bytes = b"") -> None:
    with path.open("ab") as fp:
        fp.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines) + raw)


def counts(result: SyncResult) -> tuple[int, int, int, int, int, int, int]:
    return (result.imported, result.appended, result.rewritten, result.unchanged, result.pruned, result.pending,
            result.failed)


def catalog_rows(store: SessionStore, session_id: str) -> Json:
    """The session's row (counters, texts, leaf), search rows and usage rows, without its key."""
    engine = make_engine(store.url)
    try:
        with engine.connect() as conn:
            key = conn.execute(text("SELECT key FROM sessionstore_sessions WHERE id = :i"), {"i": session_id}).scalar()
            session = conn.execute(text(
                "SELECT entry_count, message_count, name, first_message, modified_ms, user_messages,"
                " assistant_messages, tool_results, tool_calls, leaf_id, leaf_seq, leaf_depth, leaf_ctx_depth,"
                " leaf_run_start, leaf_compaction_seq, leaf_model_seq, leaf_thinking_seq"
                " FROM sessionstore_sessions WHERE key = :k"), {"k": key}).one()
            search = conn.execute(text("SELECT seq, role, text, extra FROM sessionstore_search WHERE session_key = :k"
                                       " ORDER BY seq"), {"k": key}).all()
            usage = conn.execute(text("SELECT model_key, day, entries, input, output, cache_read, cache_write, cost"
                                      " FROM sessionstore_usage WHERE session_key = :k ORDER BY model_key, day"),
                                 {"k": key}).all()
            entries = conn.execute(text(
                "SELECT seq, entry_id, parent_seq, run_start, depth, ctx_depth, compaction_seq, model_seq,"
                " thinking_seq, type FROM sessionstore_entries WHERE session_key = :k ORDER BY seq"), {"k": key}).all()
    finally:
        engine.dispose()
    return {"session": tuple(session), "search": [tuple(r) for r in search], "usage": [tuple(r) for r in usage],
            "entries": [tuple(r) for r in entries]}


def same_as_a_full_import(store: SessionStore, session_id: str, path: Path) -> None:
    """The synced session holds what a fresh import of its file gives: entries, catalog rows, export."""
    synced = catalog_rows(store, session_id)
    exported = path.parent / "exported.out"
    with exported.open("wb") as fp:
        store.export_jsonl(session_id, fp)
    store.delete_session(session_id)
    store.import_jsonl(path)
    assert catalog_rows(store, session_id) == synced
    with exported.open("rb") as fp:
        again = fp.read()
    exported.unlink()
    with exported.open("wb") as fp:
        store.export_jsonl(session_id, fp)
    assert exported.read_bytes() == again


def source_of(store: SessionStore, session_id: str) -> str | None:
    return store.session(session_id).source_path


# -- new, unchanged, grown ---------------------------------------------------------------------
def test_new_files_are_imported_and_a_second_sync_finds_them_unchanged(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    a = session_file(project(root, "/work/a"), "sa", [header("sa", "/work/a"), *chat(5)])
    shutil.copy(V3_REAL, project(root, "/work/b") / "2025-12-09T00-00-00-000Z_ffae.jsonl")
    first = store.sync(root)
    assert counts(first) == (2, 0, 0, 0, 0, 0, 0)
    assert first.entries == 5 + len(V3_REAL.read_bytes().splitlines()) - 1
    assert counts(store.sync(root)) == (0, 0, 0, 2, 0, 0, 0)
    assert source_of(store, "sa") == str(a)
    assert store.leaf("sa") == "e0004"


def test_a_grown_file_gets_only_its_new_lines_with_the_catalog_rows_of_a_full_import(
    store: SessionStore, tmp_path: Path
) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "sg", [header("sg"), *chat(4)])
    store.sync(root)
    append_lines(path, [*chat(3, start=4, parent="e0003"),
                        {"type": "session_info", "id": "n1", "parentId": "e0006", "timestamp": "2025-01-02T00:00:00Z",
                         "name": "named later"},
                        message("e0100", "e0001", user("a branch from e0001")),
                        message("e0101", "gone", user("a parent naming no entry: a root"))])
    result = store.sync(root)
    assert counts(result) == (0, 1, 0, 0, 0, 0, 0) and result.entries == 6
    assert store.leaf("sg") == "e0101"  # pi's loader: the last entry is the leaf
    assert store.session("sg").name == "named later"
    assert [e["id"] for e in store.path("sg", "e0100")] == ["e0000", "e0001", "e0100"]
    assert store.path("sg") == [store.entry("sg", "e0101")]
    same_as_a_full_import(store, "sg", path)


def test_a_grown_real_pi_file_appended_in_slices_equals_its_import(store: SessionStore, tmp_path: Path) -> None:
    """pi's own file (a compaction, tool calls, model changes), cut into four growing prefixes."""
    root = tmp_path / "sessions"
    lines = V3_REAL.read_bytes().splitlines(keepends=True)
    path = project(root) / "2025-12-09T00-00-00-000Z_real.jsonl"
    cuts = [1, 200, 640, 641, len(lines)]
    path.write_bytes(b"".join(lines[: cuts[0]]))
    assert counts(store.sync(root)) == (1, 0, 0, 0, 0, 0, 0)
    for end in cuts[1:]:
        with path.open("ab") as fp:
            fp.write(b"".join(lines[len(path.read_bytes().splitlines()) : end]))
        assert store.sync(root).appended == 1
    sid = json.loads(lines[0])["id"]
    assert store.session(sid).entry_count == len(lines) - 1
    same_as_a_full_import(store, sid, path)


def test_a_partial_last_line_waits_for_its_newline(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "sp", [header("sp"), *chat(2)])
    store.sync(root)
    half = json.dumps(message("e0002", "e0001", user("being written"))).encode()
    with path.open("ab") as fp:
        fp.write(half[:20])
    assert store.sync(root).unchanged == 1  # nothing complete past the offset: its size is recorded
    assert store.session("sp").entry_count == 2
    with path.open("ab") as fp:
        fp.write(half[20:] + b"\n")
    result = store.sync(root)
    assert counts(result) == (0, 1, 0, 0, 0, 0, 0) and store.leaf("sp") == "e0002"


def test_a_new_file_with_a_partial_header_or_empty_is_pending_not_failed(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    directory = project(root)
    partial = directory / "2025-01-01T00-00-00-000Z_sh.jsonl"
    partial.write_bytes(json.dumps(header("sh")).encode()[:30])
    (directory / "2025-01-01T00-00-00-000Z_empty.jsonl").write_bytes(b"")
    assert counts(store.sync(root)) == (0, 0, 0, 0, 0, 2, 0)
    assert store.list_sessions() == []
    partial.write_bytes(json.dumps(header("sh")).encode() + b"\n")
    assert counts(store.sync(root)) == (1, 0, 0, 0, 0, 1, 0)
    assert store.session("sh").entry_count == 0  # a header-only file: a session without entries
    append_lines(partial, chat(1))
    assert store.sync(root).appended == 1 and store.leaf("sh") == "e0000"


# -- rewritten -----------------------------------------------------------------------------------
def test_a_v1_file_that_pi_rewrote_as_v3_is_reimported(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = project(root) / "2024-11-01T08-00-00-000Z_legacy.jsonl"
    shutil.copy(V1_LEGACY, path)
    assert store.sync(root).imported == 1
    sid = "legacy-v1-compaction"
    shutil.copy(V1_LEGACY_AS_PI_REWRITES_IT, path)  # pi's migration on load: new ids, a version-3 header
    os.utime(path, ns=(1, 1))
    result = store.sync(root)
    assert counts(result) == (0, 0, 1, 0, 0, 0, 0)
    after = [e["id"] for e in store.entries(sid)]
    assert after == [json.loads(line)["id"] for line in path.read_bytes().splitlines()[1:]]
    assert source_of(store, sid) == str(path)
    same_as_a_full_import(store, sid, path)


def test_a_truncated_or_edited_file_is_reimported_and_may_name_another_session(
    store: SessionStore, tmp_path: Path
) -> None:
    root = tmp_path / "sessions"
    session_file(project(root), "st", [header("st"), *chat(6)])
    store.sync(root)
    session_file(project(root), "st", [header("st"), *chat(3)])  # shorter
    assert store.sync(root).rewritten == 1 and store.session("st").entry_count == 3
    lines = [header("st"), *chat(3)]
    lines[3] = message("e0002", "e0001", user("same length?"))  # the last consumed line changed
    session_file(project(root), "st", lines)
    assert store.sync(root).rewritten == 1
    assert store.entry("st", "e0002")["message"]["content"][0]["text"] == "same length?"
    path = session_file(project(root), "st", [header("other"), *chat(2)])  # the path holds another session now
    result = store.sync(root)
    assert (result.imported, result.rewritten, result.gone) == (1, 0, 1)  # failed before: 1 rewritten, st deleted
    assert sorted(s.id for s in store.list_sessions()) == ["other", "st"]
    assert store.session("st").entry_count == 3 and source_of(store, "other") == str(path)
    assert store.sync(root).gone == 1
    assert store.sync(root, prune=True).pruned == 1
    assert [s.id for s in store.list_sessions()] == ["other"]


# -- unchanged costs a stat ---------------------------------------------------------------------
def test_an_unchanged_file_is_not_opened(store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "su", [header("su"), *chat(3)])
    store.sync(root)
    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def spy(opener: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(file: Any, *args: Any, **kwargs: Any) -> Any:
            if str(file) == str(path):
                opened.append(str(file))
                raise PermissionError(13, "no reading in this test", str(file))
            return opener(file, *args, **kwargs)
        return wrapped

    monkeypatch.setattr(builtins, "open", spy(real_open))
    monkeypatch.setattr(os, "open", spy(real_os_open))
    assert counts(store.sync(root)) == (0, 0, 0, 1, 0, 0, 0)
    assert opened == []
    os.utime(path, ns=(5, 5))  # same size, another mtime: looked at (and now unreadable: a failure)
    result = store.sync(root)
    assert opened and result.failed == 1 and "no reading in this test" in result.failures[0].reason


# -- deletions ------------------------------------------------------------------------------------
def test_a_deleted_file_keeps_its_session_unless_prune_and_prune_spares_hand_imports(
    store: SessionStore, tmp_path: Path
) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "sd", [header("sd"), *chat(2)])
    store.sync(root)
    store.import_jsonl(PI_FILES["before-compaction"])  # imported by hand
    path.unlink()
    assert counts(store.sync(root)) == (0, 0, 0, 0, 0, 0, 0)
    assert "sd" in {s.id for s in store.list_sessions()}
    assert store.sync(root, prune=True).pruned == 1
    assert {s.id for s in store.list_sessions()} == {"ffae836b-9420-4060-ac13-7745215f90ff"}


def test_prune_only_looks_under_the_synced_directory(store: SessionStore, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    p1 = session_file(project(one), "s1", [header("s1")])
    session_file(project(two), "s2", [header("s2")])
    store.sync(one)
    store.sync(two)
    p1.unlink()
    assert store.sync(two, prune=True).pruned == 0
    assert store.sync(one, prune=True).pruned == 1
    assert [s.id for s in store.list_sessions()] == ["s2"]


def test_prune_spares_the_sessions_of_a_directory_it_could_not_read(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(Found by review: ``lexists`` says False for a file in a directory that cannot be searched.)"""
    root = tmp_path / "sessions"
    session_file(project(root, "/a"), "sa", [header("sa", "/a")])
    hidden = project(root, "/b")
    session_file(hidden, "sb", [header("sb", "/b")])
    store.sync(root)
    real_scandir, real_lstat = os.scandir, os.lstat

    def refusing_scandir(path: Any) -> Any:
        if os.fspath(path) == str(hidden):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    def refusing_lstat(path: Any, *args: Any, **kwargs: Any) -> Any:
        if os.fspath(path).startswith(str(hidden) + os.sep):
            raise PermissionError(13, "Permission denied", str(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", refusing_scandir)
    monkeypatch.setattr(os, "lstat", refusing_lstat)
    result = store.sync(root, prune=True)
    assert result.pruned == 0 and result.failed == 1
    assert {s.id for s in store.list_sessions()} == {"sa", "sb"}


# -- failures ---------------------------------------------------------------------------------------
def test_a_bad_file_fails_with_file_and_line_and_the_others_sync(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    good = session_file(project(root), "ok", [header("ok"), *chat(2)])
    bad = project(root) / "2025-01-01T00-00-00-000Z_bad.jsonl"
    bad.write_bytes(json.dumps(header("bad")).encode() + b"\n" + json.dumps(chat(1)[0]).encode() + b"\n{oops\n")
    utf8 = project(root, "/work/q") / "2025-01-01T00-00-00-000Z_u.jsonl"
    shutil.copy(FIXTURES / "invalid" / "JSONL_INVALID-invalid-utf8.jsonl", utf8)
    garbage = project(root, "/work/q") / "2025-01-01T00-00-00-000Z_g.jsonl"
    garbage.write_bytes(b"\x00\xff garbage\n")
    result = store.sync(root)
    assert counts(result) == (1, 0, 0, 0, 0, 0, 3)
    by_path = {f.path: f for f in result.failures}
    assert by_path[str(bad)].line == 3 and "JSON" in by_path[str(bad)].reason
    assert by_path[str(utf8)].line is not None and "UTF-8" in by_path[str(utf8)].reason
    assert by_path[str(garbage)].line == 1
    assert str(by_path[str(bad)]).startswith(f"{bad}:3: ")
    assert {s.id for s in store.list_sessions()} == {"ok"} and source_of(store, "ok") == str(good)
    assert store.sync(root).failed == 3  # tried again each time (nothing recorded for them)


def test_a_bad_appended_line_fails_at_its_real_line_and_appends_nothing(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "sb", [header("sb"), *chat(3)])
    store.sync(root)
    append_lines(path, chat(1, start=3, parent="e0002"), raw=b"[1, 2]\n")
    result = store.sync(root)
    assert result.failed == 1 and result.failures[0].line == 6 and "object" in result.failures[0].reason
    assert store.session("sb").entry_count == 3
    path.write_bytes(path.read_bytes()[: -len(b"[1, 2]\n")])
    assert store.sync(root).appended == 1 and store.session("sb").entry_count == 4


def test_an_appended_id_the_session_has_fails_at_its_line(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "sx", [header("sx"), *chat(3)])
    store.sync(root)
    append_lines(path, [*chat(1, start=3, parent="e0002"), message("e0001", "e0003", user("dup"))])
    result = store.sync(root)
    assert result.failed == 1 and result.failures[0].line == 6 and "e0001" in result.failures[0].reason
    assert store.session("sx").entry_count == 3


def test_a_parent_that_comes_after_its_child_is_refused_across_syncs(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "sw", [header("sw"), *chat(1), message("c1", "later", user("orphan"))])
    store.sync(root)
    append_lines(path, [message("later", "e0000", user("too late"))])
    result = store.sync(root)
    assert result.failed == 1 and result.failures[0].line == 4 and "line 3" in result.failures[0].reason


def test_a_session_imported_by_hand_is_not_taken_over_unless_adopt(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root), "sh", [header("sh"), *chat(2)])
    store.import_jsonl(path)
    result = store.sync(root)
    assert result.failed == 1 and "not synced from this file" in result.failures[0].reason
    assert source_of(store, "sh") is None
    assert store.sync(root, adopt=True).imported == 1 and source_of(store, "sh") == str(path)


# -- paths -------------------------------------------------------------------------------------------
def test_a_moved_file_takes_its_session_along_and_a_copy_beside_it_fails(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = session_file(project(root, "/work/a"), "sm", [header("sm"), *chat(2)])
    store.sync(root)
    moved = project(root, "/work/b") / path.name
    path.rename(moved)
    result = store.sync(root, prune=True)
    assert counts(result) == (1, 0, 0, 0, 0, 0, 0)
    assert source_of(store, "sm") == str(moved) and store.session("sm").entry_count == 2
    shutil.copy(moved, project(root, "/work/c") / path.name)
    result = store.sync(root)
    assert result.failed == 1 and f"synced from {moved}" in result.failures[0].reason


def test_a_symlinked_project_directory_is_synced_once(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere" / "--work-l--"
    elsewhere.mkdir(parents=True)
    session_file(elsewhere, "sl", [header("sl"), *chat(2)])
    (root / "--work-l--").symlink_to(elsewhere, target_is_directory=True)
    assert store.sync(root).imported == 1
    assert source_of(store, "sl") == str(root / "--work-l--" / "2025-01-01T00-00-00-000Z_sl.jsonl")
    (root / "--alias--").symlink_to(elsewhere, target_is_directory=True)  # a second path to the same file
    assert counts(store.sync(root)) == (0, 0, 0, 2, 0, 0, 0)
    (root / "stray.jsonl").write_bytes(b"not in a project directory\n")  # pi looks only in sub-directories
    assert store.sync(root).failed == 0


def test_the_default_directory_is_pis(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~/agent")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_sessions_dir() == tmp_path / "agent" / "sessions"
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    assert default_sessions_dir() == tmp_path / ".pi" / "agent" / "sessions"


# -- command line ------------------------------------------------------------------------------------
def test_cli_sync_json_counts_failures_and_exit_status(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    session_file(project(root), "c1", [header("c1"), *chat(2)])
    bad = project(root) / "2025-01-01T00-00-00-000Z_bad.jsonl"
    bad.write_bytes(json.dumps(header("bad")).encode() + b"\nnope\n")
    runner = CliRunner()
    done = runner.invoke(cli, ["--db", store.url, "sync", str(root), "--json"])
    assert done.exit_code == 1, done.output
    assert json.loads(done.stdout) == {
        "imported": 1, "appended": 0, "rewritten": 0, "unchanged": 0, "pruned": 0, "pending": 0, "failed": 1,
        "entries": 2, "gone": 0, "deleted": 0, "waiting": 0, "skipped": [],
        "failures": [{"path": str(bad), "line": 2, "reason": json.loads(done.stdout)["failures"][0]["reason"]}]}
    bad.unlink()
    done = runner.invoke(cli, ["--db", store.url, "sync", str(root)])
    assert done.exit_code == 0 and done.stdout.strip() == (
        "0 imported, 0 appended, 0 rewritten, 1 unchanged, 0 pruned, 0 pending, 0 failed")
    listed = runner.invoke(cli, ["--db", store.url, "ls", "--json"])
    (row,) = json.loads(listed.stdout)
    assert row["sourcePath"] == str(root / "--work-p--" / "2025-01-01T00-00-00-000Z_c1.jsonl")
    assert "SOURCE" in runner.invoke(cli, ["--db", store.url, "ls"]).stdout


def test_cli_sync_of_a_missing_directory_is_one_error_line(store: SessionStore, tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["--db", store.url, "sync", str(tmp_path / "nowhere")])
    assert done.exit_code == 2
    assert done.stderr.strip() == f"error: the sessions directory {tmp_path / 'nowhere'} does not exist"
    assert "Traceback" not in done.output


def test_cli_sync_reads_pis_agent_directory_by_default(store: SessionStore, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    session_file(project(tmp_path / "agent" / "sessions"), "d1", [header("d1")])
    done = CliRunner().invoke(cli, ["--db", store.url, "sync"])
    assert done.exit_code == 0, done.output
    assert [s.id for s in store.list_sessions()] == ["d1"]


def test_cli_watch_runs_its_cycles_and_prints_the_totals(store: SessionStore, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    session_file(project(root), "w1", [header("w1"), *chat(2)])
    done = CliRunner().invoke(cli, ["--db", store.url, "sync", str(root), "--watch", "--interval", "0",
                                    "--watch-cycles", "3", "--json"])
    assert done.exit_code == 0, done.output
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0]["imported"] == 1 and lines[-1]["total"]["unchanged"] == 2 and len(lines) == 2


def test_watch_mirrors_what_is_written_between_cycles(store: SessionStore, tmp_path: Path) -> None:
    """A bounded watch whose sleep is pi writing (no real sleeps)."""
    root = tmp_path / "sessions"
    path = session_file(project(root), "wp", [header("wp")])
    writes = iter([lambda: append_lines(path, chat(2)), lambda: append_lines(path, chat(1, start=2, parent="e0001")),
                   lambda: path.unlink()])
    seen: list[tuple[int, ...]] = []
    totals = watch(store._entries, root, interval=0.0, cycles=4, prune=True,
                   on_cycle=lambda r: seen.append(counts(r)), sleep=lambda _s: next(writes)())
    assert seen == [(1, 0, 0, 0, 0, 0, 0), (0, 1, 0, 0, 0, 0, 0), (0, 1, 0, 0, 0, 0, 0), (0, 0, 0, 0, 1, 0, 0)]
    assert (totals.imported, totals.appended, totals.pruned, totals.entries) == (1, 2, 1, 3)
    assert store.list_sessions() == []

"""The streamed ``--json`` outputs (issue 14 item 2) are the bytes of the in-memory ones: the context
(``write_context_json`` against ``js_dumpb(context().to_json(), indent=2)``) and the tree
(``write_tree_json`` against ``js_dumpb(flat_tree_json(tree()), indent=2)``), on the real pi
files, every fixture, and hand-made sessions with what the context rules treat specially, at every
leaf. No time is measured here (``benchmarks/memory.py`` gives the figures)."""

from __future__ import annotations

import io
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from sessionstore.api import SessionStore
from sessionstore.errors import SessionStoreError
from sessionstore.store.records import UNSET, flat_tree_json
from sessionstore.wire.jsjson import js_dumpb
from tests.builders import TS_MS, assistant, entry, msg, result, user
from tests.paths import FIXTURES, PI_FILES, ROOT

Json = dict[str, Any]
HEADER: Json = {"type": "session", "version": 3, "id": "s-stream", "timestamp": "2025-01-01T00:00:00.000Z",
                "cwd": "/w"}


def in_memory_context(store: SessionStore, sid: str, leaf: Any = UNSET, provider_safe: bool = False) -> bytes:
    return js_dumpb(store.context(sid, leaf_id=leaf, provider_safe=provider_safe).to_json(), indent=2) + b"\n"


def streamed_context(store: SessionStore, sid: str, leaf: Any = UNSET, provider_safe: bool = False) -> bytes:
    out = io.BytesIO()
    store.write_context_json(sid, out, leaf_id=leaf, provider_safe=provider_safe)
    return out.getvalue()


def in_memory_tree(store: SessionStore, sid: str) -> bytes:
    return js_dumpb(flat_tree_json(store.tree(sid)), indent=2) + b"\n"


def streamed_tree(store: SessionStore, sid: str) -> bytes:
    out = io.BytesIO()
    store.write_tree_json(sid, out)
    return out.getvalue()


def assert_same_outputs(store: SessionStore, sid: str, leaves: list[Any]) -> None:
    for leaf in leaves:
        for safe in (False, True):
            assert streamed_context(store, sid, leaf, safe) == in_memory_context(store, sid, leaf, safe), (leaf, safe)
    assert streamed_tree(store, sid) == in_memory_tree(store, sid)


def importable_fixtures() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.jsonl") if "invalid" not in p.parts)


@pytest.mark.parametrize("name", sorted(PI_FILES))
def test_the_real_pi_files_stream_the_same_bytes(store: SessionStore, name: str) -> None:
    sid = store.import_jsonl(PI_FILES[name]).session_id
    path = store.path(sid)
    # the leaf, an early entry, and entries around the compactions of before-compaction
    leaves: list[Any] = [UNSET, path[len(path) // 3]["id"]]
    leaves += [e["id"] for e in path if e.get("type") == "compaction"]
    assert_same_outputs(store, sid, leaves)


def test_every_fixture_streams_the_same_bytes(sqlite_url: str) -> None:
    with SessionStore(sqlite_url) as store:
        checked = 0
        for path in importable_fixtures():
            try:
                sid = store.import_jsonl(path, lenient=True, replace=True).session_id
            except SessionStoreError:
                continue
            assert_same_outputs(store, sid, [UNSET, None])
            checked += 1
        assert checked >= 30


def odd_session() -> list[Json]:
    """Everything the context rules treat specially, on one tree: settings, a system message before
    the kept point, compactions (an earlier one that contributes nothing, the last with a system
    message), edits (a replacement, an omission, a string content for a toolResult, one without a
    replacement, one whose target is not in the context, one of an uneditable entry, one replaced
    by a later one), bash executions (one excluded), custom and branch-summary messages, an assistant
    that errored, unanswered tool calls, a message entry without a message, null content, odd
    numbers and lone surrogates, and a side branch."""
    call = ("c1", "read", {"path": "a"})
    return [
        msg("u1", None, user("first")),
        entry("mc", "u1", "model_change", provider="p2", modelId="m2"),
        entry("tl", "mc", "thinking_level_change", thinkingLevel="high"),
        msg("a1", "tl", assistant("calling", call)),
        msg("r1", "a1", result("c1", "read", "file a")),
        entry("k1", "r1", "compaction", summary="early summary", firstKeptEntryId="a1", tokensBefore=10),
        msg("sys", "k1", {"role": "system", "content": "be brief", "timestamp": TS_MS}),
        msg("u2", "sys", user("kept from here")),
        msg("a2", "u2", assistant("two calls", ("c2", "bash", {"command": "ls"}), ("c3", "read", {"path": "b"}))),
        msg("r2", "a2", result("c2", "bash", "out")),
        msg("bx", "r2", {"role": "bashExecution", "command": "make", "output": "ok\n", "exitCode": 2,
                         "cancelled": False, "truncated": True, "fullOutputPath": "/tmp/o", "timestamp": TS_MS}),
        msg("bx2", "bx", {"role": "bashExecution", "command": "secret", "output": "", "exitCode": 0,
                          "cancelled": False, "truncated": False, "excludeFromContext": True, "timestamp": TS_MS}),
        entry("cm", "bx2", "custom_message", customType="note", content="a note \ud800 lone", display=True),
        entry("bs", "cm", "branch_summary", fromId="zz", summary="what the other branch did"),
        msg("aerr", "bs", assistant("oops", ("c4", "read", {"path": "c"}), stop="error")),
        msg("nomsg", "aerr", None),  # type: ignore[arg-type]
        msg("nullc", "nomsg", {"role": "user", "content": None, "timestamp": 1.0e21}),
        entry("k2", "nullc", "compaction", summary="the summary", firstKeptEntryId="u2", tokensBefore=1e6,
              systemMessage={"role": "system", "content": "prompt", "timestamp": TS_MS}),
        msg("u3", "k2", user("after the compaction", ts=5)),
        msg("a3", "u3", assistant("big numbers 5.0", ("c5", "edit", {"n": 1e-7, "m": 2**60}))),
        entry("e1", "a3", "context_edit", targetId="u2", replacement={"content": "edited"}),
        entry("e2", "e1", "context_edit", targetId="r2", replacement={"content": "shorter result"}),
        entry("e3", "e2", "context_edit", targetId="a2", replacement=None),
        entry("e4", "e3", "context_edit", targetId="u1"),  # no replacement; u1 is before the kept part
        entry("e5", "e4", "context_edit", targetId="nowhere", replacement={"content": "x"}),
        entry("e6", "e5", "context_edit", targetId="bs", replacement={"content": "not editable"}),
        entry("e7", "e6", "context_edit", targetId="u3", replacement={"content": "first edit"}),
        entry("e8", "e7", "context_edit", targetId="u3", replacement={"content": [{"type": "text", "text": "2nd"}]}),
        entry("e9", "e8", "context_edit", targetId="k2", replacement={"content": "the compaction"}),
        msg("u4", "e9", user("the end")),
        entry("lb", "u4", "label", targetId="u3", label="here"),
        # a side branch off u2
        msg("s1", "u2", assistant("side", ("c9", "read", {"path": "s"}))),
        msg("s2", "s1", {"role": "system", "content": "side prompt", "timestamp": TS_MS}),
        msg("s3", "s2", user("side user")),
    ]


def test_a_session_of_odd_entries_streams_the_same_bytes_at_every_leaf(store: SessionStore) -> None:
    entries = odd_session()
    sid = store.import_entries(HEADER, entries).session_id
    store.branch(sid, "lb")
    assert_same_outputs(store, sid, [UNSET, None, *(e["id"] for e in entries)])
    diagnostics = store.context(sid, provider_safe=True).diagnostics
    codes = {d.code for d in diagnostics}
    assert {"CONTEXT_EDIT_TARGET_NOT_IN_CONTEXT", "CONTEXT_EDIT_WITHOUT_REPLACEMENT", "CONTEXT_EDIT_NO_EFFECT",
            "PROVIDER_SAFE_SYNTHETIC_RESULT", "PROVIDER_SAFE_DROPPED_ASSISTANT"} <= codes, codes


def test_a_compaction_whose_kept_entry_is_not_on_the_path_streams_the_same_bytes(store: SessionStore) -> None:
    entries = [
        msg("u1", None, user("one")),
        msg("r0", "u1", result("gone", "read")),  # an orphan result
        entry("k1", "r0", "compaction", summary="s", firstKeptEntryId="r0", tokensBefore=1),  # kept: a toolResult
        msg("u2", "k1", user("two")),
        entry("k2", "u2", "compaction", summary="t", firstKeptEntryId="elsewhere", tokensBefore=2),
        msg("u3", "k2", user("three")),
        entry("k3", "u1", "compaction", summary="self", firstKeptEntryId="k3"),  # keeps from itself
        msg("u4", "k3", user("four")),
    ]
    sid = store.import_entries(HEADER, entries).session_id
    assert_same_outputs(store, sid, [UNSET, None, *(e["id"] for e in entries)])
    codes = {d.code for e in entries for d in store.context(sid, leaf_id=e["id"]).diagnostics}
    assert {"COMPACTION_FIRST_KEPT_NOT_ON_PATH", "COMPACTION_FIRST_KEPT_IS_TOOL_RESULT"} <= codes


def test_a_deep_tree_streams_the_same_bytes(store: SessionStore) -> None:
    """Deeper than orjson nests (its whole-value writer gives up at 254 levels; the streamed one writes
    each entry by itself), with forks, labels and the leaf on a side branch."""
    entries = [msg("n0", None, user("root"))]
    for i in range(1, 300):
        entries.append(msg(f"n{i}", f"n{i - 1}", user(f"entry {i}")))
    entries += [msg("f1", "n10", user("fork")), msg("f2", "f1", user("fork 2")), msg("f3", "n299", user("tip")),
                msg("g1", None, user("a second root")),
                entry("l1", "g1", "label", targetId="n150", label="middle"),
                entry("l2", "l1", "label", targetId="f1", label="fork")]
    sid = store.import_entries(HEADER, entries).session_id
    store.branch(sid, "f2")
    assert streamed_tree(store, sid) == in_memory_tree(store, sid)
    assert streamed_context(store, sid) == in_memory_context(store, sid)


def test_synthetic_sessions_stream_the_same_bytes(sqlite_url: str) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from _synth import SHAPES, make_session
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    with SessionStore(sqlite_url) as store:
        for shape in SHAPES:
            header, entries, leaf = make_session(shape, 1200)
            sid = store.import_entries(header, entries).session_id
            if leaf is not None:
                store.branch(sid, leaf)
            assert_same_outputs(store, sid, [UNSET, entries[len(entries) // 2]["id"]])


def test_an_empty_session_and_a_missing_one(store: SessionStore) -> None:
    sid = store.create_session(cwd="/w")
    assert_same_outputs(store, sid, [UNSET, None])
    assert streamed_tree(store, sid) == b"[]\n"
    with pytest.raises(SessionStoreError):
        store.write_context_json("nope", io.BytesIO())
    with pytest.raises(SessionStoreError):
        store.write_tree_json("nope", io.BytesIO())


def test_the_stream_reads_the_path_in_pages(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A path longer than a page is read page by page (the pages' seams change nothing)."""
    from sessionstore.store import entry_store

    monkeypatch.setattr(entry_store, "STREAM_PAGE", 7)
    entries = [msg("n0", None, user("root"))]
    for i in range(1, 60):
        message = assistant(f"a{i}", (f"c{i}", "read", {})) if i % 3 == 1 else (
            result(f"c{i - 1}", "read") if i % 3 == 2 else user(f"u{i}"))
        entries.append(msg(f"n{i}", f"n{i - 1}", message))
    entries.append(entry("k", "n59", "compaction", summary="s", firstKeptEntryId="n21", tokensBefore=1))
    entries.append(msg("t", "k", user("tail")))
    sid = store.import_entries(HEADER, entries).session_id
    assert_same_outputs(store, sid, [UNSET, "n59", "n5"])


@pytest.mark.parametrize("output", ["file", "appended file", "pipe"])
@pytest.mark.parametrize("spooled_bytes", [1, 1 << 20])
def test_a_file_or_pipe_gets_the_same_bytes_from_the_spooled_sections(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, output: str, spooled_bytes: int
) -> None:
    """Written to a real file or a pipe (the spooled projected messages sent by the kernel once they are
    on disk, or read back while in memory), the context is the same bytes, at every leaf of the odd
    session, provider-safe or not."""
    from sessionstore.context import stream

    monkeypatch.setattr(stream, "SPOOL_IN_MEMORY", spooled_bytes)
    entries = odd_session()
    sid = store.import_entries(HEADER, entries).session_id
    store.branch(sid, "lb")
    for leaf in [UNSET, None, *(e["id"] for e in entries)]:
        for safe in (False, True):
            expected = in_memory_context(store, sid, leaf, safe)
            if output != "pipe":  # (O_APPEND: an output sendfile may refuse, then the bytes are copied)
                (tmp_path / "out.json").write_bytes(b"before\n")
                with (tmp_path / "out.json").open("ab" if output == "appended file" else "wb") as fp:
                    store.write_context_json(sid, fp, leaf_id=leaf, provider_safe=safe)
                got = (tmp_path / "out.json").read_bytes()
                got = got.removeprefix(b"before\n") if output == "appended file" else got
            else:
                got = _through_a_pipe(partial(store.write_context_json, sid, leaf_id=leaf, provider_safe=safe))
            assert got == expected, (leaf, safe)


def _through_a_pipe(write: Any) -> bytes:
    import os
    import threading

    read_end, write_end = os.pipe()
    received: list[bytes] = []

    def drain() -> None:
        with os.fdopen(read_end, "rb") as source:
            received.append(source.read())

    reader = threading.Thread(target=drain)
    reader.start()
    with os.fdopen(write_end, "wb") as fp:
        write(fp)
    reader.join()
    return received[0]


def test_a_text_only_stdout_gets_whole_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    """An embedding's text-only stdout: a character split between two writes of the stream arrives whole."""
    from sessionstore.cli.app import binary_stdout

    class TextOnly(io.StringIO):
        pass

    captured = TextOnly()
    monkeypatch.setattr(sys, "stdout", captured)
    with binary_stdout() as out:
        data = '{"t": "é😀"}\n'.encode()
        for i in range(len(data)):
            out.write(data[i : i + 1])
    assert captured.getvalue() == '{"t": "é😀"}\n'

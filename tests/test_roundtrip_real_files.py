"""Real pi sessions survive import and export unchanged, and give the context pi's own code gives.

``fixtures/pi/*.jsonl`` are v1 files written by pi; ``*.v3.jsonl`` are the same files after pi's own
upgrade (with sessionstore's deterministic ids ``f"{index:08x}"`` where pi draws random ones); so are
``fixtures/legacy``'s (``tests/differential/test_upgrades_against_pi.py`` checks them against pi).

A v3 file exports byte for byte as it was imported (``tests.session_mutants.v3_export_of``: each
line as it is, spaces and tabs at its ends included, without the carriage returns before its
newline; blank lines dropped), its header's ``leafId`` and unknown fields included.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sessionstore.api import ImportResult, SessionStore
from sessionstore.validate import validate_transcript
from sessionstore.wire import SessionFileReader, dump_line, write_session_file
from tests.session_mutants import mutant, v3_export_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PI = {name: FIXTURES / "pi" / f"{name}.jsonl" for name in ("large-session", "before-compaction")}
TREE_V3 = FIXTURES / "valid" / "tree-v3.jsonl"
V1_COMPACTION = FIXTURES / "legacy" / "compaction-v1.jsonl"
V2_HOOK = FIXTURES / "legacy" / "hook-message-v2.jsonl"
LEGACY = sorted(p for p in (FIXTURES / "legacy").glob("*.jsonl") if not p.name.endswith(".v3.jsonl"))
V3_MUTANTS = 150

each_pi_file = pytest.mark.parametrize("name", list(PI))


def ordered(value: Any) -> Any:
    """``value`` with every dict turned into its list of items, so that comparing also compares key order."""
    if isinstance(value, dict):
        return [(k, ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [ordered(v) for v in value]
    return value


def v3_form(path: Path) -> Path:
    return path.with_suffix(".v3.jsonl")


def read_entries(path: Path) -> list[dict[str, Any]]:
    return [entry for _line, entry in SessionFileReader(path).entries()]


def exported(store: SessionStore, session_id: str) -> bytes:
    out = io.BytesIO()
    store.export_jsonl(session_id, out)
    return out.getvalue()


def parsed_lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines()]


@contextmanager
def open_store(directory: Path, name: str = "s.db") -> Iterator[SessionStore]:
    store = SessionStore(f"sqlite:///{directory / name}")
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SessionStore]:
    with open_store(tmp_path) as store:
        yield store


@pytest.fixture(scope="module")
def pi_sessions(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[SessionStore, dict[str, ImportResult]]]:
    """Both real files imported once into one database (read-only for the tests that use it)."""
    with open_store(tmp_path_factory.mktemp("pi")) as store:
        yield store, {name: store.import_jsonl(path) for name, path in PI.items()}


# -- byte-for-byte with pi's upgrade -----------------------------------------------------------
@each_pi_file
def test_a_pi_v1_file_read_and_written_back_is_byte_for_byte_pis_upgraded_v3_file(name: str) -> None:
    reader = SessionFileReader(PI[name])
    out = io.BytesIO()
    count = write_session_file(reader.header, (entry for _line, entry in reader.entries()), out)
    assert out.getvalue() == v3_form(PI[name]).read_bytes()
    assert reader.skipped == []
    assert count == {"large-session": 1018, "before-compaction": 1002}[name]


@each_pi_file
def test_an_imported_pi_file_exports_byte_for_byte_as_pis_upgraded_v3_file(
    pi_sessions: tuple[SessionStore, dict[str, ImportResult]], name: str
) -> None:
    store, imported = pi_sessions
    assert exported(store, imported[name].session_id) == v3_form(PI[name]).read_bytes()


# -- import -> export -> import ----------------------------------------------------------------
@each_pi_file
def test_import_export_import_gives_the_same_entries_in_the_same_order_with_the_same_keys(
    tmp_path: Path, name: str
) -> None:
    with open_store(tmp_path, "first.db") as first, open_store(tmp_path, "second.db") as second:
        sid = first.import_jsonl(PI[name]).session_id
        data = exported(first, sid)
        again = second.import_jsonl(io.BytesIO(data))
        assert again.session_id == sid
        assert again.skipped == ()
        assert ordered(second.header(sid)) == ordered(first.header(sid))
        assert ordered(second.entries(sid)) == ordered(first.entries(sid))
        assert second.leaf(sid) == first.leaf(sid)
        assert exported(second, sid) == data


@each_pi_file
def test_every_exported_entry_equals_the_imported_one_with_its_keys_in_order(
    pi_sessions: tuple[SessionStore, dict[str, ImportResult]], name: str
) -> None:
    store, imported = pi_sessions
    sid = imported[name].session_id
    read = read_entries(PI[name])
    stored = store.entries(sid)
    header, *lines = parsed_lines(exported(store, sid))
    assert header["version"] == 3
    assert ordered(stored) == ordered(read)
    assert ordered(lines) == ordered(read)


@each_pi_file
def test_v1_ids_are_the_same_when_the_file_is_imported_into_two_databases(tmp_path: Path, name: str) -> None:
    with open_store(tmp_path, "a.db") as a, open_store(tmp_path, "b.db") as b:
        first, second = a.import_jsonl(PI[name]), b.import_jsonl(PI[name])
        ids = [e["id"] for e in a.entries(first.session_id)]
        assert ids == [e["id"] for e in b.entries(second.session_id)]
        assert first.leaf_id == second.leaf_id == ids[-1]
    assert ids[:3] == ["00000001", "00000002", "00000003"]


@each_pi_file
def test_unknown_fields_unknown_blocks_and_unknown_entry_types_survive_import_and_export(
    tmp_path: Path, name: str
) -> None:
    header, *entries = [json.loads(line) for line in PI[name].read_bytes().splitlines()]
    entries[0]["xEntryNote"] = {"by": "test", "values": [1, 2.5, None, True]}
    roles = [e["message"]["role"] if e.get("message", {}).get("content") else None for e in entries]
    assistant, result = roles.index("assistant"), roles.index("toolResult")
    entries[assistant]["message"]["xProviderTrace"] = "opaque-trace-1"
    entries[assistant]["message"]["content"][0]["xBlockMeta"] = {"cache": "ephemeral", "n": 3}
    entries[result]["message"]["xDuration"] = 12.75
    # before the last entry: after both compactions, so no v1 firstKeptEntryIndex moves
    entries.insert(
        -1,
        {
            "type": "x_bookmark",
            "timestamp": "2025-12-09T00:00:00.000Z",
            "color": "red",
            "payload": {"nested": [True, None, {"deep": "é"}]},
        },
    )
    source = tmp_path / f"{name}-extended.jsonl"
    source.write_bytes(b"".join(dump_line(o) for o in [header, *entries]))

    with open_store(tmp_path) as store:
        sid = store.import_jsonl(source).session_id
        _header, *lines = parsed_lines(exported(store, sid))
        assert ordered(lines) == ordered(read_entries(source))
        assert lines[0]["xEntryNote"] == {"by": "test", "values": [1, 2.5, None, True]}
        assert list(lines[0])[-3:] == ["xEntryNote", "id", "parentId"]
        assert lines[assistant]["message"]["xProviderTrace"] == "opaque-trace-1"
        assert lines[assistant]["message"]["content"][0]["xBlockMeta"] == {"cache": "ephemeral", "n": 3}
        assert lines[result]["message"]["xDuration"] == 12.75
        bookmark = lines[-2]
        assert ordered(bookmark) == ordered(
            {**entries[-2], "id": bookmark["id"], "parentId": lines[-3]["id"]}
        )
        assert lines[-1]["parentId"] == bookmark["id"]

        with open_store(tmp_path, "again.db") as again:
            again.import_jsonl(io.BytesIO(exported(store, sid)))
            assert ordered(again.entries(sid)) == ordered(store.entries(sid))
        # unknown data is ignored by context building: the same messages as the original file
        messages = {"large-session": 914, "before-compaction": 446}[name]
        assert len(store.context(sid).messages) == messages


# -- legacy and hand-made fixtures -------------------------------------------------------------
@pytest.mark.parametrize("path", LEGACY, ids=[p.name for p in LEGACY])
def test_a_legacy_file_exports_byte_for_byte_as_pi_rewrites_it(store: SessionStore, path: Path) -> None:
    """Numbers as JavaScript writes them (1e3 -> 1000, -0 -> 0), escapes and key order as
    JSON.stringify writes them, a repeated key once, blank lines and CRLF gone."""
    sid = store.import_jsonl(path).session_id
    assert exported(store, sid) == v3_form(path).read_bytes()


def test_a_v2_hook_message_is_imported_as_a_custom_message_and_exported_as_v3(db: SessionStore) -> None:
    sid = db.import_jsonl(V2_HOOK).session_id
    assert [e["message"]["role"] for e in db.entries(sid)] == ["user", "custom", "assistant", "custom"]
    assert exported(db, sid) == v3_form(V2_HOOK).read_bytes()
    context = db.context(sid)
    assert [m["role"] for m in context.messages] == ["user", "custom", "assistant", "custom"]
    assert context.messages[1]["customType"] == "git-status"
    assert [m["role"] for m in context.llm] == ["user", "user", "assistant", "user"]
    assert context.llm[1]["content"] == [{"type": "text", "text": "Working tree clean."}]


def test_a_v1_compaction_index_is_imported_as_the_id_pi_computes(db: SessionStore) -> None:
    sid = db.import_jsonl(V1_COMPACTION).session_id
    entries = db.entries(sid)
    compaction = next(e for e in entries if e["type"] == "compaction")
    # index 5 counts parsed objects, header included (line 7: line 6 is blank)
    assert compaction["firstKeptEntryId"] == f"{5:08x}" == "00000005"
    assert "firstKeptEntryIndex" not in compaction
    assert exported(db, sid) == v3_form(V1_COMPACTION).read_bytes()
    context = db.context(sid)
    assert [m["role"] for m in context.messages] == [
        "compactionSummary",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert context.entry_ids == ["00000007", "00000005", "00000006", "00000008", "00000009"]
    assert context.messages[1]["content"][0]["text"] == "Now summarise CHANGELOG.md"


def test_the_hand_made_v3_tree_round_trips_byte_for_byte_and_builds_pis_context(db: SessionStore) -> None:
    result = db.import_jsonl(TREE_V3)
    sid = result.session_id
    assert (result.entries, result.leaf_id) == (19, "e19")
    assert exported(db, sid) == TREE_V3.read_bytes()
    context = db.context(sid)
    assert [m["role"] for m in context.messages] == [
        "compactionSummary",
        "branchSummary",
        "custom",
        "user",
        "reviewNote",
        "assistant",
        "user",
        "assistant",
    ]
    assert context.entry_ids == ["e14", "e08", "e09", "e11", "e12", "e13", "e18", "e19"]
    assert context.thinking_level == "high"
    assert context.model == {"provider": "anthropic", "modelId": "claude-opus-4-5"}
    assert "reviewNote" not in [m["role"] for m in context.llm]  # an unregistered role is not sent
    assert any(d.entry_id == "e12" for d in context.diagnostics)
    assert db.labels(sid) == {"e02": "start"}
    assert db.session(sid).name == "arithmetic demo"


def test_the_abandoned_branch_of_the_hand_made_tree_has_its_own_context(db: SessionStore) -> None:
    sid = db.import_jsonl(TREE_V3).session_id
    context = db.context(sid, leaf_id="e07")
    assert [m["role"] for m in context.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "user",
        "assistant",
    ]
    assert context.thinking_level == "off"
    assert context.model == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}
    assert context.diagnostics == []


# -- facts pi's own code gives for the real files ----------------------------------------------
def test_large_session_has_1018_entries_and_its_context_holds_914_messages(
    pi_sessions: tuple[SessionStore, dict[str, ImportResult]],
) -> None:
    store, imported = pi_sessions
    sid = imported["large-session"].session_id
    assert imported["large-session"].entries == len(store.entries(sid)) == 1018
    context = store.context(sid)
    assert len(context.messages) == 914
    assert Counter(m["role"] for m in context.messages) == {"user": 88, "assistant": 453, "toolResult": 373}
    assert context.thinking_level == "off"
    assert context.model == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}


def test_before_compaction_context_starts_with_the_second_compaction_summary(
    pi_sessions: tuple[SessionStore, dict[str, ImportResult]],
) -> None:
    store, imported = pi_sessions
    sid = imported["before-compaction"].session_id
    assert imported["before-compaction"].entries == len(store.entries(sid)) == 1002
    compactions = [e for e in store.entries(sid) if e["type"] == "compaction"]
    assert len(compactions) == 2
    context = store.context(sid)
    assert len(context.messages) == 446
    second = compactions[1]
    assert context.messages[0]["role"] == "compactionSummary"
    assert context.messages[0]["summary"] == second["summary"]
    assert context.messages[0]["tokensBefore"] == second["tokensBefore"]
    assert context.entry_ids[0] == second["id"]
    assert context.entry_ids[1] == second["firstKeptEntryId"]
    assert Counter(m["role"] for m in context.llm) == {"user": 35, "assistant": 219, "toolResult": 192}
    assert context.model == {"provider": "anthropic", "modelId": "claude-opus-4-5"}


@each_pi_file
def test_aborted_turns_are_reported_as_missing_tool_results_and_the_session_still_loads(
    pi_sessions: tuple[SessionStore, dict[str, ImportResult]], name: str
) -> None:
    store, imported = pi_sessions
    context = store.context(imported[name].session_id)
    missing = [d for d in context.diagnostics if d.code == "MISSING_TOOL_RESULT"]
    assert missing
    stop_reasons = set()
    for diagnostic in missing:
        assert diagnostic.message_index is not None
        assert context.entry_ids[diagnostic.message_index] == diagnostic.entry_id
        message = context.messages[diagnostic.message_index]
        assert message["role"] == "assistant"
        assert any(block["type"] == "toolCall" for block in message["content"])
        stop_reasons.add(message["stopReason"])
    assert stop_reasons & {"aborted", "error"}


@each_pi_file
def test_the_provider_safe_context_has_no_missing_tool_result(
    pi_sessions: tuple[SessionStore, dict[str, ImportResult]], name: str
) -> None:
    store, imported = pi_sessions
    sid = imported[name].session_id
    plain = store.context(sid)
    safe = store.context(sid, provider_safe=True)
    assert "MISSING_TOOL_RESULT" in {d.code for d in validate_transcript(plain.llm)}
    assert "MISSING_TOOL_RESULT" not in {d.code for d in validate_transcript(safe.llm)}
    assert {d.code for d in safe.diagnostics} & {
        "PROVIDER_SAFE_DROPPED_ASSISTANT",
        "PROVIDER_SAFE_SYNTHETIC_RESULT",
    }
    assert not any(m["role"] == "assistant" and m["stopReason"] in ("aborted", "error") for m in safe.llm)


# -- v3 files round trip byte for byte ----------------------------------------------------------
def test_v3_mutants_export_byte_for_byte_and_export_again_unchanged(store: SessionStore) -> None:
    """Seeded v3 files (odd numbers, escapes, repeated keys, a header leafId and unknown header fields,
    spaces and tabs at line ends, CRLF, CR CR LF, blank lines, no last newline) export as they are, but
    for the CRs before a newline and the blank lines; the export imports to the same session and
    exports the same bytes again."""
    mismatches = []
    for seed in range(V3_MUTANTS):
        data = mutant(seed, 3)
        sid = store.import_jsonl(io.BytesIO(data)).session_id
        first = exported(store, sid)
        if first != v3_export_of(data):
            mismatches.append(f"mutant {seed}: {first[:200]!r}")
            continue
        leaf = store.leaf(sid)
        store.import_jsonl(io.BytesIO(first), replace=True)
        if exported(store, sid) != first or store.leaf(sid) != leaf:
            mismatches.append(f"mutant {seed}: a second round trip changed it")
    assert not mismatches, f"{len(mismatches)} of {V3_MUTANTS}:\n" + "\n".join(mismatches[:5])


HEADER = '{"type":"session","version":3,"id":"rt","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"'


def v3_file(header_tail: str, *, line_end: str = "\n", trailing: str = "") -> bytes:
    entries = [
        '{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"hi","timestamp":1}}',
        '{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z",'
        '"message":{"role":"user","content":"again","timestamp":2}}',
    ]
    return "".join(line + trailing + line_end for line in [HEADER + header_tail + "}", *entries]).encode()


@pytest.mark.parametrize(("tail", "leaf"), [
    (',"leafId":"a"', "a"), (',"leafId":"b"', "b"), (',"leafId":null', None), (',"leafId":"gone"', "b"),
    (',"leafId":7', "b"), (',"x-origin":{"b":1E3,"a":"\\u00e9"},"leafId":"a","2":-0', "a"),
])
def test_a_header_leaf_id_and_unknown_header_fields_export_byte_for_byte(
    store: SessionStore, tail: str, leaf: str | None
) -> None:
    data = v3_file(tail)
    result = store.import_jsonl(io.BytesIO(data))
    assert result.leaf_id == leaf == store.leaf("rt")
    assert exported(store, "rt") == data
    assert "leafId" not in store.header("rt")  # the export's record of the leaf, not a header field


def test_a_stale_header_leaf_id_is_set_in_its_place_when_the_leaf_moved(store: SessionStore) -> None:
    store.import_jsonl(io.BytesIO(v3_file(',"leafId":"a","x":1e3')))
    store.branch("rt", "b")
    header = exported(store, "rt").split(b"\n")[0]
    assert header == (HEADER + ',"leafId":"b","x":1000}').encode()
    store.reset_leaf("rt")
    header = exported(store, "rt").split(b"\n")[0]
    assert json.loads(header)["leafId"] is None


@pytest.mark.parametrize(("trailing", "line_end"), [(" ", "\n"), ("\t \t", "\r\n"), ("", "\r\r\n"), (" ", "\r\r\n")])
def test_spaces_and_tabs_at_line_ends_are_kept_and_the_crs_before_a_newline_dropped(
    store: SessionStore, trailing: str, line_end: str
) -> None:
    data = v3_file("", line_end=line_end, trailing=trailing)
    store.import_jsonl(io.BytesIO(data))
    assert exported(store, "rt") == v3_file("", trailing=trailing)


def test_the_mutants_hold_every_form_an_upgrade_rewrites_and_a_round_trip_keeps() -> None:
    files = [mutant(seed, version) for version in (1, 2, 3) for seed in range(V3_MUTANTS)]
    corpus = b"".join(files)
    forms = {
        "exponent": b"1e3", "integral float": b".0,", "negative zero": b"-0,", "1e308": b"1e308",
        "beyond 2**53": b"9007199254740993", "beyond 64 bits": b"18446744073709551616",
        "escaped e acute": b"\\u00e9", "escaped slash": b"\\/", "surrogate pair": b"\\ud83d\\ude00",
        "lone surrogate": b"\\ud800", "escaped control": b"\\u0001", "index key": b'"10":',
        "CRLF": b"}\r\n", "CR CR LF": b"\r\r\n", "trailing space": b"} \n", "trailing tab": b"}\t\n",
        "blank line": b"\n\n", "header leafId": b'"leafId":',
    }
    assert [name for name, form in forms.items() if form not in corpus] == []
    assert sum(not data.endswith(b"\n") for data in files) > 10  # no last newline
    lines = [line for data in files for line in data.split(b"\n")]
    assert sum(line.count(b'"timestamp"') > 2 for line in lines) > 10  # a key given twice (entry, message)

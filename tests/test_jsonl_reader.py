"""Reading pi JSONL files line by line, upgrading them to v3, and writing them as pi writes them."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from sessionstore.errors import JsonlError
from sessionstore.wire import CURRENT_VERSION, SessionFileReader, dump_line, write_session_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TREE_V3 = FIXTURES / "valid" / "tree-v3.jsonl"
V1_COMPACTION = FIXTURES / "legacy" / "compaction-v1.jsonl"
V2_HOOK = FIXTURES / "legacy" / "hook-message-v2.jsonl"
LEGACY = [V1_COMPACTION, V2_HOOK]


def ordered(value: Any) -> Any:
    """``value`` with every dict turned into its list of items, so that comparing also compares key order."""
    if isinstance(value, dict):
        return [(k, ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [ordered(v) for v in value]
    return value


def read(path: Path | io.BytesIO, **options: Any) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]:
    reader = SessionFileReader(path, **options)
    return reader.header, list(reader.entries())


def written(header: dict[str, Any], entries: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    write_session_file(header, entries, out)
    return out.getvalue()


def file_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# -- v3 files are read as they are -------------------------------------------------------------
def test_a_v3_file_is_read_unchanged_every_entry_with_its_keys_in_file_order() -> None:
    header, entries = read(TREE_V3)
    header_line, *entry_lines = file_lines(TREE_V3)
    assert ordered(header) == ordered(header_line)
    assert [ordered(e) for _line, e in entries] == [ordered(e) for e in entry_lines]


def test_a_v3_file_written_back_is_byte_for_byte_the_file() -> None:
    header, entries = read(TREE_V3)
    assert written(header, [e for _line, e in entries]) == TREE_V3.read_bytes()


def test_the_entries_come_with_their_line_numbers() -> None:
    _header, entries = read(TREE_V3)
    assert [line for line, _e in entries] == list(range(2, 21))


def test_unknown_entry_types_unknown_roles_and_unknown_fields_are_kept_as_they_are() -> None:
    entries = {e["id"]: e for _line, e in read(TREE_V3)[1]}
    assert entries["e17"] == {
        "type": "bookmark",
        "id": "e17",
        "parentId": "e16",
        "timestamp": "2025-03-01T10:02:03.000Z",
        "color": "red",
        "note": {"pinned": True, "tags": ["math", 1, None]},
    }
    assert entries["e12"]["message"]["role"] == "reviewNote"
    assert entries["e12"]["message"]["score"] == 0.5
    assert entries["e03"]["message"]["content"][0]["thinkingSignature"] == "sig-opaque-1"
    assert entries["e03"]["message"]["responseId"] == "resp-001"


def test_the_valid_tree_fixture_has_every_kind_of_entry() -> None:
    entries = [e for _line, e in read(TREE_V3)[1]]
    kinds = {e["type"] for e in entries}
    assert kinds >= {
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom_message",
        "label",
        "session_info",
        "bookmark",
    }
    children: dict[str | None, list[str]] = {}
    for entry in entries:
        children.setdefault(entry["parentId"], []).append(entry["id"])
    assert children["e05"] == ["e06", "e08"]  # a branch point


def test_a_binary_stream_reads_like_a_file_and_is_named_in_errors() -> None:
    data = TREE_V3.read_bytes()
    header, entries = read(io.BytesIO(data))
    assert header["id"] == "tree-v3-demo"
    assert len(entries) == 19
    with pytest.raises(JsonlError) as caught:
        read(io.BytesIO(data + b"not json\n"))
    assert caught.value.line == 21
    assert str(caught.value).startswith("<stream>:21: invalid JSON")


# -- v1: ids from positions, firstKeptEntryIndex -> firstKeptEntryId ---------------------------
def test_a_v1_header_is_upgraded_to_version_3_and_keeps_its_old_fields() -> None:
    with SessionFileReader(V1_COMPACTION) as reader:
        header = reader.header
        assert reader.source_version == 1
    assert header == {
        "type": "session",
        "id": "legacy-v1-compaction",
        "timestamp": "2024-11-01T08:00:00.000Z",
        "cwd": "/work/demo",
        "provider": "anthropic",
        "modelId": "claude-sonnet-4-5",
        "thinkingLevel": "off",
        "version": CURRENT_VERSION,
    }
    assert list(header)[-1] == "version"  # added at the end, as pi's mutation adds it


def test_v1_entries_are_chained_in_file_order_with_ids_from_their_position_not_their_line() -> None:
    entries = read(V1_COMPACTION)[1]
    # line 6 is blank: positions count parsed objects (header = 0), so line 7 is entry 5
    assert [line for line, _e in entries] == [2, 3, 4, 5, 7, 8, 9, 10, 11]
    assert [e["id"] for _line, e in entries] == [f"{n:08x}" for n in range(1, 10)]
    assert [e["parentId"] for _line, e in entries] == [None] + [f"{n:08x}" for n in range(1, 9)]
    assert all(list(e)[-2:] == ["id", "parentId"] for _line, e in entries if e["type"] != "compaction")


def test_a_v1_compaction_index_becomes_the_id_of_the_entry_at_that_position() -> None:
    entries = {e["id"]: e for _line, e in read(V1_COMPACTION)[1]}
    compaction = entries["00000007"]
    assert compaction["type"] == "compaction"
    assert "firstKeptEntryIndex" not in compaction
    assert compaction["firstKeptEntryId"] == "00000005"
    assert entries["00000005"]["message"]["content"][0]["text"] == "Now summarise CHANGELOG.md"
    assert list(compaction) == [
        "type",
        "timestamp",
        "summary",
        "tokensBefore",
        "id",
        "parentId",
        "firstKeptEntryId",
    ]


@pytest.mark.parametrize(
    ("index", "kept"),
    [(3, "00000003"), (2, "00000002"), (0, None), (9, None), (-1, None), ("3", None)],
    ids=["earlier-entry", "the-entry-before", "the-header", "a-later-entry", "negative", "not-a-number"],
)
def test_a_v1_compaction_index_follows_pis_rule(tmp_path: Path, index: Any, kept: str | None) -> None:
    path = tmp_path / "v1.jsonl"
    lines = [
        '{"type":"session","id":"v1-rule","timestamp":"2024-11-01T08:00:00.000Z","cwd":"/w"}',
        *(
            f'{{"type":"message","timestamp":"2024-11-01T08:00:0{n}.000Z",'
            f'"message":{{"role":"user","content":"m{n}","timestamp":{n}}}}}'
            for n in range(1, 4)
        ),
        '{"type":"compaction","timestamp":"2024-11-01T08:00:05.000Z","summary":"s","firstKeptEntryIndex":'
        + json.dumps(index)
        + ',"tokensBefore":10}',
    ]
    path.write_text("\n".join(lines) + "\n")
    reader = SessionFileReader(path, lenient=True)
    compaction = [e for _line, e in reader.entries() if e["type"] == "compaction"]
    if kept is None:  # pi stores no id: never the header, a later entry or a guess
        assert all("firstKeptEntryId" not in c for c in compaction)
    else:
        assert compaction[0]["firstKeptEntryId"] == kept


def test_reading_the_same_v1_file_twice_gives_the_same_ids() -> None:
    first = [e["id"] for _line, e in read(V1_COMPACTION)[1]]
    second = [e["id"] for _line, e in read(V1_COMPACTION)[1]]
    assert first == second


# -- v2: hookMessage -> custom -------------------------------------------------------------------
def test_a_v2_hook_message_becomes_a_custom_message_with_everything_else_unchanged() -> None:
    header, entries = read(V2_HOOK)
    assert header["version"] == 3
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    originals = file_lines(V2_HOOK)[1:]
    for (_line, entry), original in zip(entries, originals, strict=True):
        message = original["message"]
        if message["role"] == "hookMessage":
            message["role"] = "custom"
        assert ordered(entry) == ordered(original)
    assert [e["message"]["role"] for _line, e in entries] == ["user", "custom", "assistant", "custom"]


def test_a_v3_file_keeps_a_role_named_hook_message() -> None:
    data = V2_HOOK.read_bytes().replace(b'"version":2', b'"version":3', 1)
    entries = read(io.BytesIO(data))[1]
    assert entries[1][1]["message"]["role"] == "hookMessage"


@pytest.mark.parametrize("path", LEGACY, ids=[p.name for p in LEGACY])
def test_a_legacy_file_written_back_is_byte_for_byte_its_pi_upgraded_form(path: Path) -> None:
    header, entries = read(path)
    assert written(header, [e for _line, e in entries]) == path.with_suffix(".v3.jsonl").read_bytes()


# -- lenient reading -----------------------------------------------------------------------------
def test_lenient_reading_skips_a_bad_line_and_its_children_become_roots_as_pi_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "tree.jsonl"
    lines = TREE_V3.read_text().splitlines(keepends=True)
    lines[4] = "{oops\n"  # line 5 is e04, the toolResult; e05 is its child
    path.write_text("".join(lines))
    reader = SessionFileReader(path, lenient=True)
    kept = [e["id"] for _line, e in reader.entries()]
    assert "e04" not in kept and len(kept) == 18 and kept[:4] == ["e01", "e02", "e03", "e05"]
    assert [(s.line, s.reason.split(":")[0]) for s in reader.skipped] == [(5, "invalid JSON")]
    assert [(d.code, d.entry_id) for d in reader.diagnostics] == [("PARENT_NOT_FOUND", "e05")]
    assert "line 6" in reader.diagnostics[0].message


def test_a_skipped_line_reports_as_json() -> None:
    reader = SessionFileReader(io.BytesIO(TREE_V3.read_bytes() + b"[]\n"), lenient=True)
    list(reader.entries())
    assert [s.to_json() for s in reader.skipped] == [
        {"line": 21, "reason": "expected a JSON object, got array"}
    ]


def test_blank_lines_are_not_errors_and_still_count_as_lines() -> None:
    data = TREE_V3.read_bytes().replace(b"\n", b"\n\n", 2)
    entries = read(io.BytesIO(data))[1]
    assert [line for line, _e in entries][:3] == [3, 5, 6]
    assert len(entries) == 19


# -- writing as JSON.stringify does ------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "js"),
    [
        ({"a": 5.0}, b'{"a":5}'),
        ({"a": -0.0}, b'{"a":0}'),
        ({"a": [1.0, 2.5]}, b'{"a":[1,2.5]}'),
        ({"a": 0.000001}, b'{"a":0.000001}'),
        ({"a": 2.5e-10}, b'{"a":2.5e-10}'),
        ({"a": 1e-6}, b'{"a":0.000001}'),
        ({"a": 1e20}, b'{"a":100000000000000000000}'),
        ({"a": 1e21}, b'{"a":1e+21}'),
        ({"a": 1.5e300}, b'{"a":1.5e+300}'),
        ({"a": 1.2345678901234568e20}, b'{"a":123456789012345680000}'),
        ({"a": 0.1, "b": 3.14}, b'{"a":0.1,"b":3.14}'),
        ({"s": "5.0,1e5]"}, b'{"s":"5.0,1e5]"}'),
        ({"s": "é ✓"}, '{"s":"é ✓"}'.encode()),
        ({"z": 1, "a": 2}, b'{"z":1,"a":2}'),
        ({"a": 1e-7}, b'{"a":1e-7}'),
        ({"a": 3e-7}, b'{"a":3e-7}'),
        # around the bound below which orjson switches to exponents (1e-5) and JavaScript (1e-6)
        ({"a": 1e-5, "b": 1.5e-5}, b'{"a":0.00001,"b":0.000015}'),
        ({"a": 9.5e-6}, b'{"a":0.0000095}'),
        ({"a": 1e16, "b": 1.5e16}, b'{"a":10000000000000000,"b":15000000000000000}'),
        ({"a": 4503599627370495.5}, b'{"a":4503599627370495.5}'),
        ({"a": float("nan"), "b": float("inf")}, b'{"a":null,"b":null}'),
        ({"a": (2.0, [{"b": 3.0}])}, b'{"a":[2,[{"b":3}]]}'),
        ({"a": type("F", (float,), {})(4.0)}, b'{"a":4}'),
    ],
)
def test_dump_line_writes_what_json_stringify_writes(value: Any, js: bytes) -> None:
    assert dump_line(value) == js + b"\n"


@pytest.mark.parametrize("seed", range(5))
def test_dump_line_agrees_with_the_text_scan_it_replaced_on_random_documents(seed: int) -> None:
    """dump_line finds floats by walking the value; the fallback path scans the text instead. The two
    must agree, including on strings that look like numbers and floats nested anywhere."""
    import random

    import orjson

    from sessionstore.wire.codec import _to_js_numbers

    rnd = random.Random(seed)
    leaves: list[Any] = [-1e-7, 1e21, 1e16, 5e-324, -0.0, 123456789012345.0, 7, True, None, "", "q\"",
                         'x":1e-7,', "\\", "1.0]", ":5.0,", "[1e-9]", "日本1e+5"]

    def value(depth: int = 0) -> Any:
        roll = rnd.random()
        if depth > 3 or roll < 0.35:
            return rnd.choice([*leaves, rnd.random() * 10 ** rnd.randint(-12, 25), float(rnd.randint(-5, 5))])
        if roll < 0.65:
            return [value(depth + 1) for _ in range(rnd.randint(0, 4))]
        return {rnd.choice(["a", "1.0,", '"', ":2.0}"]) + str(i): value(depth + 1) for i in range(rnd.randint(0, 4))}

    for _ in range(2_000):
        doc = {"k": value()}
        assert dump_line(doc) == _to_js_numbers(orjson.dumps(doc)) + b"\n", doc


def test_write_session_file_writes_the_header_then_one_entry_per_line_and_counts_entries() -> None:
    out = io.BytesIO()
    count = write_session_file({"type": "session", "id": "s"}, iter([{"id": "a"}, {"id": "b"}]), out)
    assert count == 2
    assert out.getvalue() == b'{"type":"session","id":"s"}\n{"id":"a"}\n{"id":"b"}\n'


def test_lenient_v1_reading_chains_past_a_refused_entry(tmp_path: Path) -> None:
    stamp = '"timestamp":"2025-01-01T00:00:00.000Z"'
    lines = [
        '{"type":"session","id":"v1s",' + stamp + ',"cwd":"/"}',
        '{"type":"message",' + stamp + ',"message":{"role":"user","content":"a","timestamp":1}}',
        '[{"type":"message"}]',
        '{"type":"message",' + stamp + ',"message":{"role":"user","content":"b","timestamp":1}}',
    ]
    path = tmp_path / "v1.jsonl"
    path.write_text("\n".join(lines) + "\n")
    reader = SessionFileReader(path, lenient=True)
    assert [(e["id"], e["parentId"]) for _, e in reader.entries()] == [
        ("00000001", None),
        ("00000003", "00000001"),
    ]
    assert [s.line for s in reader.skipped] == [3]


def test_a_v1_compaction_whose_index_names_no_entry_loads_and_keeps_nothing(tmp_path: Path) -> None:
    stamp = '"timestamp":"2025-01-01T00:00:00.000Z"'
    lines = [
        '{"type":"session","id":"v1c",' + stamp + ',"cwd":"/"}',
        '{"type":"message",' + stamp + ',"message":{"role":"user","content":"a","timestamp":1}}',
        '{"type":"compaction",' + stamp + ',"summary":"s","firstKeptEntryIndex":99,"tokensBefore":1}',
    ]
    path = tmp_path / "v1.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (_, _), (_, compaction) = list(SessionFileReader(path).entries())
    assert "firstKeptEntryId" not in compaction and "firstKeptEntryIndex" not in compaction

"""Real pi sessions validate: the only problems are the unanswered tool calls of interrupted turns."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from sessionstore.validate import validate_transcript

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pi"
SESSION_FILES = sorted(FIXTURES.glob("*.v3.jsonl"))

# Entry id of each assistant message with unanswered tool calls -> how many calls it left unanswered.
# Checked by hand: all but one are turns that ended with stopReason "aborted" or "error" (the user
# interrupted, or the provider terminated mid-stream); 00000273 ended with "toolUse" and the user spoke
# next before any result was recorded.
EXPECTED_UNANSWERED = {
    "before-compaction.v3.jsonl": {"00000175": 1, "00000181": 3, "00000273": 1, "000002a5": 1},
    "large-session.v3.jsonl": {"00000020": 16, "000000e9": 1, "0000034a": 1},
}


def load_linear_messages(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The message dicts of all ``message`` entries in file order, with their entry ids."""
    lines = path.read_text(encoding="utf-8").splitlines()
    entries = [json.loads(line) for line in lines[1:] if line.strip()]
    messages = [entry for entry in entries if entry.get("type") == "message"]
    return [entry["message"] for entry in messages], [entry["id"] for entry in messages]


def test_the_fixture_directory_holds_the_expected_sessions() -> None:
    assert {path.name for path in SESSION_FILES} == set(EXPECTED_UNANSWERED)


@pytest.mark.parametrize("path", SESSION_FILES, ids=lambda path: path.name)
class TestRealSession:
    def test_only_missing_tool_results_are_reported(self, path: Path) -> None:
        messages, entry_ids = load_linear_messages(path)
        diagnostics = validate_transcript(messages, entry_ids=entry_ids)
        assert {d.code for d in diagnostics} == {"MISSING_TOOL_RESULT"}
        per_entry: dict[str, int] = {}
        for diagnostic in diagnostics:
            assert diagnostic.entry_id is not None
            per_entry[diagnostic.entry_id] = per_entry.get(diagnostic.entry_id, 0) + 1
        assert per_entry == EXPECTED_UNANSWERED[path.name]

    def test_each_reported_call_really_has_no_later_result(self, path: Path) -> None:
        messages, entry_ids = load_linear_messages(path)
        for diagnostic in validate_transcript(messages, entry_ids=entry_ids):
            index = diagnostic.message_index
            assert index is not None
            message = messages[index]
            assert message["role"] == "assistant"
            assert entry_ids[index] == diagnostic.entry_id
            block_index = int(diagnostic.message.split(".content[")[1].split("]")[0])
            block = message["content"][block_index]
            assert block["type"] == "toolCall"
            assert repr(block["id"]) in diagnostic.message
            answered_later = {m.get("toolCallId") for m in messages[index + 1 :] if m["role"] == "toolResult"}
            answered_anywhere = {m.get("toolCallId") for m in messages if m["role"] == "toolResult"}
            assert block["id"] not in answered_later
            assert block["id"] not in answered_anywhere
            assert message["stopReason"] in {"aborted", "error", "toolUse"}

    def test_the_session_survives_a_json_round_trip_with_the_same_findings(self, path: Path) -> None:
        messages, entry_ids = load_linear_messages(path)
        restored = json.loads(json.dumps(messages))
        assert validate_transcript(restored, entry_ids=entry_ids) == validate_transcript(
            messages, entry_ids=entry_ids
        )

    def test_the_interrupted_turns_are_the_only_problem(self, path: Path) -> None:
        messages, _ = load_linear_messages(path)
        unanswered = {d.message_index for d in validate_transcript(messages)}
        kept = [m for i, m in enumerate(messages) if i not in unanswered]
        assert validate_transcript(kept) == ()

    def test_validation_is_fast(self, path: Path) -> None:
        messages, entry_ids = load_linear_messages(path)
        started = time.perf_counter()
        validate_transcript(messages, entry_ids=entry_ids)
        assert time.perf_counter() - started < 1.0

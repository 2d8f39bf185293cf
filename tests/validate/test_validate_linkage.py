"""Linkage: every tool call has a unique id and exactly one later result with the same id and name."""

from __future__ import annotations

import json
from typing import Any

from sessionstore.validate import SHAPE_CODES, Diagnostic, validate_transcript


def user(text: str = "Read auth.ts") -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def call(call_id: str, name: str = "read", arguments: Any = None) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments or {"path": "auth.ts"}}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks), "api": "a", "provider": "p", "model": "m", "usage": {},
            "stopReason": "toolUse", "timestamp": 2}


def result(call_id: str, name: str = "read", **extra: Any) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": "ok"}],
        "isError": False,
        "timestamp": 3,
        **extra,
    }


def findings(diagnostics: tuple[Diagnostic, ...]) -> list[tuple[str, int | None]]:
    return [(d.code, d.message_index) for d in diagnostics]


class TestValidRounds:
    def test_a_call_followed_by_its_result_is_a_valid_round(self) -> None:
        assert validate_transcript([user(), assistant(call("c1")), result("c1")]) == ()

    def test_parallel_calls_with_results_in_any_later_order_are_valid(self) -> None:
        transcript = [user(), assistant(call("a"), call("b", "bash")), result("b", "bash"), result("a")]
        assert validate_transcript(transcript) == ()

    def test_a_result_may_come_several_messages_after_its_call(self) -> None:
        transcript = [
            assistant(call("a")),
            user("interjection"),
            {"role": "custom", "customType": "n", "content": "", "display": False, "timestamp": 4},
            result("a"),
        ]
        assert validate_transcript(transcript) == ()

    def test_a_valid_transcript_keeps_its_links_through_json(self) -> None:
        transcript = [
            user(),
            assistant(call("c1", arguments={"nested": {"list": [1, "two", None]}})),
            result("c1"),
        ]
        restored = json.loads(json.dumps(transcript))
        assert validate_transcript(restored) == ()
        assert restored[1]["content"][0]["id"] == restored[2]["toolCallId"] == "c1"


class TestEachLinkageCode:
    def test_a_call_id_used_twice_is_a_duplicate_at_the_second_call(self) -> None:
        transcript = [assistant(call("c1")), result("c1"), assistant(call("c1")), result("c1")]
        diagnostics = validate_transcript(transcript)
        assert findings(diagnostics) == [("DUPLICATE_TOOL_CALL_ID", 2)]
        assert diagnostics[0].message == (
            "messages[2].content[0].id: tool call id 'c1' is already used by messages[0].content[0]"
        )

    def test_a_call_id_used_twice_in_one_message_is_a_duplicate(self) -> None:
        diagnostics = validate_transcript([assistant(call("c1"), call("c1")), result("c1")])
        assert findings(diagnostics) == [("DUPLICATE_TOOL_CALL_ID", 0)]
        assert diagnostics[0].message.startswith("messages[0].content[1].id:")

    def test_a_second_result_for_one_call_is_a_duplicate_result(self) -> None:
        diagnostics = validate_transcript([assistant(call("c1")), result("c1"), result("c1")])
        assert findings(diagnostics) == [("DUPLICATE_TOOL_RESULT", 2)]
        assert diagnostics[0].message == (
            "messages[2].toolCallId: tool call 'c1' at messages[0].content[0] "
            "already has its result at messages[1]"
        )

    def test_a_result_whose_id_no_call_has_is_an_orphan(self) -> None:
        diagnostics = validate_transcript([user(), result("call-missing")])
        assert findings(diagnostics) == [("ORPHAN_TOOL_RESULT", 1)]
        assert diagnostics[0].message == "messages[1].toolCallId: no tool call has id 'call-missing'"

    def test_the_orphan_disappears_once_its_call_precedes_it(self) -> None:
        orphan = [result("call-missing")]
        assert findings(validate_transcript(orphan)) == [("ORPHAN_TOOL_RESULT", 0)]
        assert validate_transcript([assistant(call("call-missing")), *orphan]) == ()

    def test_a_result_before_its_call_is_reported_once(self) -> None:
        diagnostics = validate_transcript([result("c1"), assistant(call("c1"))])
        assert findings(diagnostics) == [("TOOL_RESULT_BEFORE_CALL", 0)]
        assert diagnostics[0].message == (
            "messages[0].toolCallId: result for tool call 'c1' "
            "appears before its call at messages[1].content[0]"
        )

    def test_a_result_before_and_another_after_the_call_leave_only_the_misplaced_one(self) -> None:
        diagnostics = validate_transcript([result("c1"), assistant(call("c1")), result("c1")])
        assert findings(diagnostics) == [("TOOL_RESULT_BEFORE_CALL", 0)]

    def test_a_result_naming_another_tool_is_a_name_mismatch_but_still_answers_the_call(self) -> None:
        diagnostics = validate_transcript([assistant(call("c1", "read")), result("c1", "write")])
        assert findings(diagnostics) == [("TOOL_NAME_MISMATCH", 1)]
        assert diagnostics[0].message == (
            "messages[1].toolName: result names tool 'write' "
            "but tool call 'c1' at messages[0].content[0] is 'read'"
        )

    def test_a_call_without_a_later_result_is_missing_at_the_call(self) -> None:
        diagnostics = validate_transcript(
            [user(), assistant(call("a"), call("b", "bash")), result("a"), user("again")]
        )
        assert findings(diagnostics) == [("MISSING_TOOL_RESULT", 1)]
        assert (
            diagnostics[0].message == "messages[1].content[1]: tool call 'b' ('bash') has no later toolResult"
        )

    def test_every_unanswered_call_of_an_aborted_turn_is_reported(self) -> None:
        aborted = {**assistant(call("a"), call("b"), call("c")), "stopReason": "aborted"}
        diagnostics = validate_transcript([user(), aborted, user("sorry, go on")])
        assert findings(diagnostics) == [("MISSING_TOOL_RESULT", 1)] * 3
        assert [d.message.split(":")[0] for d in diagnostics] == [
            f"messages[1].content[{i}]" for i in range(3)
        ]


class TestNoCascades:
    def test_a_call_with_bad_arguments_causes_no_orphan_and_no_missing(self) -> None:
        transcript = [assistant(call("c1", arguments=["not", "an", "object"])), result("c1")]
        assert findings(validate_transcript(transcript)) == [("TOOL_ARGUMENTS_NOT_OBJECT", 0)]
        assert findings(validate_transcript(transcript[:1])) == [("TOOL_ARGUMENTS_NOT_OBJECT", 0)]

    def test_a_call_without_a_name_causes_no_orphan_and_no_missing(self) -> None:
        nameless = {"type": "toolCall", "id": "c1", "arguments": {}}
        assert findings(validate_transcript([assistant(nameless), result("c1")])) == [
            ("INVALID_TOOL_CALL", 0)
        ]
        assert findings(validate_transcript([assistant(nameless)])) == [("INVALID_TOOL_CALL", 0)]

    def test_a_malformed_result_silences_the_missing_result_of_its_call(self) -> None:
        broken = result("c1", isError="no")
        assert findings(validate_transcript([assistant(call("c1")), broken])) == [("INVALID_TOOL_RESULT", 1)]

    def test_a_malformed_result_is_not_reported_as_an_orphan(self) -> None:
        broken = result("nobody", content=None)
        assert findings(validate_transcript([broken])) == [("INVALID_TOOL_RESULT", 0)]

    def test_a_tool_call_misplaced_in_user_content_is_remembered(self) -> None:
        misplaced = {"role": "user", "content": [call("c1")], "timestamp": 1}
        assert findings(validate_transcript([misplaced, result("c1")])) == [("INVALID_CONTENT_BLOCK", 0)]

    def test_a_duplicated_call_id_produces_no_ambiguous_linkage_diagnostics(self) -> None:
        transcript = [
            result("dup", "early"),  # before either call
            assistant(call("dup", "read")),
            assistant(call("dup", "bash")),
            result("dup", "write"),  # which call? mismatched with both
            result("dup", "read"),  # a second result
        ]
        assert findings(validate_transcript(transcript)) == [("DUPLICATE_TOOL_CALL_ID", 2)]
        assert findings(validate_transcript(transcript[1:3])) == [("DUPLICATE_TOOL_CALL_ID", 1)]  # no missing

    def test_a_malformed_call_sharing_an_id_with_a_good_one_is_still_a_duplicate(self) -> None:
        transcript = [assistant(call("c1")), assistant(call("c1", arguments=[1])), result("c1")]
        assert findings(validate_transcript(transcript)) == [
            ("TOOL_ARGUMENTS_NOT_OBJECT", 1),
            ("DUPLICATE_TOOL_CALL_ID", 1),
        ]

    def test_other_rounds_are_still_checked_next_to_a_malformed_one(self) -> None:
        transcript = [assistant(call("bad", arguments=[1]), call("good")), result("bad"), result("stray")]
        assert findings(validate_transcript(transcript)) == [
            ("TOOL_ARGUMENTS_NOT_OBJECT", 0),
            ("MISSING_TOOL_RESULT", 0),
            ("ORPHAN_TOOL_RESULT", 2),
        ]


class TestOrderAndEntryIds:
    def test_shape_diagnostics_come_first_then_linkage_each_by_message_index(self) -> None:
        transcript = [
            result("orphan"),  # linkage at 0
            assistant(call("c1")),  # linkage (missing) at 1
            {"role": "user", "timestamp": 1},  # shape at 2
            result("c2", "read", isError=None),  # shape at 3
            assistant(call("c3", arguments=[1])),  # shape at 4
            result("c1", "other"),  # linkage at 5
        ]
        diagnostics = validate_transcript(transcript)
        assert findings(diagnostics) == [
            ("INVALID_MESSAGE", 2),
            ("INVALID_TOOL_RESULT", 3),
            ("TOOL_ARGUMENTS_NOT_OBJECT", 4),
            ("ORPHAN_TOOL_RESULT", 0),
            ("TOOL_NAME_MISMATCH", 5),
        ]
        shape = [d.code in SHAPE_CODES for d in diagnostics]
        assert shape == sorted(shape, reverse=True)

    def test_every_diagnostic_names_the_entry_its_message_came_from(self) -> None:
        transcript = [result("orphan"), assistant(call("c1")), {"role": "user", "timestamp": 1}]
        diagnostics = validate_transcript(transcript, entry_ids=["e0", "e1", "e2"])
        assert [(d.code, d.entry_id) for d in diagnostics] == [
            ("INVALID_MESSAGE", "e2"),
            ("ORPHAN_TOOL_RESULT", "e0"),
            ("MISSING_TOOL_RESULT", "e1"),
        ]
        assert diagnostics[0].to_json()["entryId"] == "e2"

    def test_missing_or_unusable_entry_ids_leave_the_entry_unnamed(self) -> None:
        transcript = [result("a"), result("b"), result("c")]
        diagnostics = validate_transcript(transcript, entry_ids=["e0", 7])  # type: ignore[list-item]
        assert [d.entry_id for d in diagnostics] == ["e0", None, None]
        assert [d.entry_id for d in validate_transcript(transcript)] == [None, None, None]

    def test_whole_transcript_diagnostics_name_no_entry(self) -> None:
        (diagnostic,) = validate_transcript("nope", entry_ids=["e0"])
        assert (diagnostic.message_index, diagnostic.entry_id) == (None, None)

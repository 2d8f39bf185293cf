"""Shape rules: each message must have pi's wire shape (SPEC 1, 2), and only what a role requires."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from sessionstore.validate import Diagnostic, validate_transcript

USAGE = {
    "input": 10,
    "output": 5,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 15,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def assistant(*blocks: Any, **extra: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": list(blocks),
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": USAGE,
        "stopReason": "toolUse",
        "timestamp": 1_748_568_000_100,
        **extra,
    }


_DEFAULT_ARGUMENTS: Any = {"path": "auth.ts"}


def call(
    call_id: str = "call-1", name: str = "read", arguments: Any = _DEFAULT_ARGUMENTS, **extra: Any
) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments, **extra}


def result(call_id: str = "call-1", name: str = "read", **extra: Any) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": "export function authorize() {}"}],
        "isError": False,
        "timestamp": 1_748_568_000_200,
        **extra,
    }


REQUIRED_DEFAULTS: dict[str, dict[str, Any]] = {
    "user": {"content": "", "timestamp": 1},
    "assistant": {"content": [], "api": "a", "provider": "p", "model": "m", "usage": USAGE, "stopReason": "stop",
                  "timestamp": 1},
    "toolResult": {"timestamp": 1},
    "bashExecution": {"command": "ls", "output": "", "cancelled": False, "truncated": False, "timestamp": 1},
    "custom": {"customType": "n", "content": "", "display": False, "timestamp": 1},
    "branchSummary": {"summary": "s", "fromId": "a", "timestamp": 1},
    "compactionSummary": {"summary": "s", "tokensBefore": 1, "timestamp": 1},
}


def complete(message: dict[str, Any], expected: str = "") -> dict[str, Any]:
    """``message`` with the required keys it lacks filled in, except the key ``expected`` names."""
    named = expected.split(":", 1)[0].removeprefix("messages[0].")
    role = message.get("role")
    defaults = REQUIRED_DEFAULTS.get(role, {}) if isinstance(role, str) else {}
    return {**{k: v for k, v in defaults.items() if k != named}, **message}


def findings(diagnostics: tuple[Diagnostic, ...]) -> list[tuple[str, int | None]]:
    return [(d.code, d.message_index) for d in diagnostics]


def only(diagnostics: tuple[Diagnostic, ...]) -> Diagnostic:
    assert len(diagnostics) == 1, diagnostics
    return diagnostics[0]


EVERY_ROLE: list[dict[str, Any]] = [
    {"role": "user", "content": "Read auth.ts", "timestamp": 1_748_568_000_000},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "and"},
            {"type": "image", "data": "iVBO", "mimeType": "image/png"},
        ],
        "timestamp": 1_748_568_000_001,
    },
    assistant(
        {"type": "thinking", "thinking": "hmm", "thinkingSignature": "opaque", "redacted": False},
        {"type": "text", "text": "I will inspect that file.", "textSignature": "opaque"},
        call(thoughtSignature="opaque", namespace="fs"),
        responseId="resp-1",
        unknownProviderField={"anything": [1, 2]},
    ),
    result(details={"ui": "only"}),
    {
        "role": "bashExecution",
        "command": "ls",
        "output": "",
        "exitCode": None,
        "cancelled": False,
        "truncated": False,
        "timestamp": 1,
    },
    {
        "role": "bashExecution",
        "command": "ls",
        "output": "a",
        "cancelled": True,
        "truncated": True,
        "timestamp": 1,
    },
    {"role": "custom", "customType": "note", "content": "remember", "display": False, "timestamp": 1},
    {"role": "custom", "customType": "note", "content": [{"type": "text", "text": "x"}], "display": True,
     "timestamp": 1},
    {"role": "branchSummary", "summary": "we tried X", "fromId": "abcd1234", "timestamp": 1},
    {"role": "compactionSummary", "summary": "so far", "tokensBefore": 175004, "timestamp": 1},
]


class TestValidTranscripts:
    def test_every_built_in_role_in_its_wire_shape_is_valid(self) -> None:
        assert validate_transcript(EVERY_ROLE) == ()

    def test_an_empty_transcript_is_valid(self) -> None:
        assert validate_transcript([]) == ()
        assert validate_transcript(()) == ()

    def test_a_valid_transcript_survives_a_json_round_trip(self) -> None:
        restored = json.loads(json.dumps(EVERY_ROLE))
        assert validate_transcript(restored) == ()
        assert [m["role"] for m in restored] == [m["role"] for m in EVERY_ROLE]

    def test_fields_pi_leaves_optional_are_not_required(self) -> None:
        bare_assistant = {key: value for key, value in assistant(call()).items() if key != "responseId"}
        bare_result = {key: value for key, value in result().items() if key != "details"}
        bash = {"role": "bashExecution", "command": "ls", "output": "", "cancelled": False, "truncated": False,
                "timestamp": 1}
        assert validate_transcript([bare_assistant, bare_result, bash]) == ()

    def test_fields_pi_requires_are_required_timestamps_included(self) -> None:
        bare_assistant = {"role": "assistant", "content": [call()]}
        bare_result = {"role": "toolResult", "toolCallId": "call-1", "toolName": "read", "content": [],
                       "isError": True}
        assert [d.message for d in validate_transcript([bare_assistant, bare_result])] == [
            f"messages[0].{key}: required field is missing"
            for key in ("api", "provider", "model", "usage", "stopReason", "timestamp")
        ] + ["messages[1].timestamp: required field is missing"]

    def test_the_partial_json_field_of_real_files_is_tolerated(self) -> None:
        transcript = [assistant(call(partialJson='{"path": "auth')), result()]
        assert validate_transcript(transcript) == ()

    def test_opaque_provider_data_is_never_reported(self) -> None:
        odd = assistant(
            {"type": "text", "text": "x", "textSignature": 12},
            {"type": "thinking", "thinking": "y", "thinkingSignature": None, "redacted": "yes"},
            call(thoughtSignature=["not", "a", "string"]),
            stopReason="somethingNew",
            responseId=None,
            responseModel=5,
            durationMs="slow",
        )
        odd["content"][1]["redacted"] = False
        assert validate_transcript([odd, result(details=object(), nestedCalls="x")]) == ()

    def test_known_optional_fields_must_hold_their_type_when_present(self) -> None:
        odd = assistant({"type": "thinking", "thinking": "y", "redacted": "yes"}, usage="not even a dict",
                        errorMessage=None)
        assert [(d.code, d.message) for d in validate_transcript([odd])] == [
            ("INVALID_CONTENT_BLOCK", "messages[0].content[0].redacted: expected a boolean, got str"),
            ("INVALID_MESSAGE", "messages[0].usage: expected an object, got str"),
            ("INVALID_MESSAGE", "messages[0].errorMessage: expected a string, got NoneType"),
        ]

    def test_pydantic_models_are_read_through_model_dump_by_alias(self) -> None:
        class ToolResult(BaseModel):
            model_config = ConfigDict(populate_by_name=True)
            role: str = "toolResult"
            tool_call_id: str = Field(alias="toolCallId")
            tool_name: str = Field(alias="toolName")
            content: list[dict[str, str]]
            is_error: bool = Field(alias="isError")
            timestamp: int = 1

        good = ToolResult(tool_call_id="call-1", tool_name="read", content=[], is_error=False)
        assert validate_transcript([assistant(call()), good]) == ()

    def test_nested_argument_values_may_be_any_json_value(self) -> None:
        arguments = {
            "s": "x",
            "i": -3,
            "big": 10**40,
            "f": 1.5,
            "b": True,
            "n": None,
            "list": [1, [2, {"k": []}]],
            "tuple": (1, 2),
            "__proto__": {"constructor": 1},
            "": "empty key",
        }
        assert validate_transcript([assistant(call(arguments=arguments)), result()]) == ()


class TestNotAList:
    @pytest.mark.parametrize(
        ("value", "got"),
        [
            (None, "NoneType"),
            (42, "int"),
            ("not a transcript", "str"),
            (b"bytes", "bytes"),
            ({"role": "user", "content": "hi"}, "dict"),
            ({1, 2}, "set"),
        ],
    )
    def test_a_transcript_that_is_not_a_list_is_reported_once_for_the_whole(
        self, value: object, got: str
    ) -> None:
        diagnostic = only(validate_transcript(value))
        assert diagnostic.code == "TRANSCRIPT_NOT_A_LIST"
        assert diagnostic.message_index is None
        assert diagnostic.message == f"messages: expected a list of messages, got {got}"

    def test_a_generator_is_not_a_list_and_is_not_consumed(self) -> None:
        produced: list[int] = []

        def messages() -> Any:
            produced.append(1)
            yield {"role": "user", "content": "hi"}

        generator = messages()
        assert findings(validate_transcript(generator)) == [("TRANSCRIPT_NOT_A_LIST", None)]
        assert produced == []


class TestNotAMapping:
    def test_each_message_that_is_not_a_mapping_is_reported_at_its_index(self) -> None:
        transcript = [None, 3, "hi", b"x", ["nested"], {"role": "user", "content": "ok", "timestamp": 1}]
        assert findings(validate_transcript(transcript)) == [("MESSAGE_NOT_A_MAPPING", i) for i in range(5)]
        assert (
            validate_transcript(transcript)[4].message == "messages[4]: expected a message mapping, got list"
        )

    def test_an_object_whose_model_dump_is_not_a_mapping_is_not_a_mapping(self) -> None:
        class Odd:
            def model_dump(self, **_: object) -> int:
                return 1

        diagnostic = only(validate_transcript([Odd()]))
        assert diagnostic.code == "MESSAGE_NOT_A_MAPPING"
        assert "model_dump() returned int" in diagnostic.message


class TestRoles:
    def test_an_unknown_role_is_reported_and_the_message_otherwise_ignored(self) -> None:
        diagnostic = only(validate_transcript([{"role": "notification", "content": 12}]))
        assert diagnostic.code == "UNKNOWN_ROLE"
        assert (
            diagnostic.message
            == "messages[0].role: unknown role 'notification' (neither built in nor registered)"
        )

    def test_a_registered_role_is_accepted_without_shape_checks(self) -> None:
        transcript = [{"role": "notification", "text": 1}]
        assert validate_transcript(transcript, known_roles=["notification"]) == ()
        assert validate_transcript(transcript, known_roles="notification") == ()
        assert validate_transcript(transcript, known_roles=frozenset({"notification"})) == ()

    def test_registering_a_built_in_role_does_not_switch_off_its_rules(self) -> None:
        diagnostic = only(validate_transcript([{"role": "user", "timestamp": 1}], known_roles=["user"]))
        assert diagnostic.code == "INVALID_MESSAGE"

    def test_role_names_are_case_sensitive(self) -> None:
        assert only(validate_transcript([{"role": "User", "content": "hi"}])).code == "UNKNOWN_ROLE"


class TestInvalidMessage:
    @pytest.mark.parametrize(
        ("message", "expected"),
        [
            ({"content": "hi"}, "messages[0].role: required field is missing"),
            ({"role": 1, "content": "hi"}, "messages[0].role: expected a string, got int"),
            ({"role": "user"}, "messages[0].content: required field is missing"),
            (
                {"role": "user", "content": 5},
                "messages[0].content: expected a string or a list of content blocks, got int",
            ),
            (
                {"role": "assistant", "content": "hi"},
                "messages[0].content: expected a list of content blocks, got str",
            ),
            (
                {"role": "assistant", "content": None},
                "messages[0].content: expected a list of content blocks, got NoneType",
            ),
            ({"role": "bashExecution", "command": "ls"}, "messages[0].output: required field is missing"),
            (
                {"role": "bashExecution", "command": ["ls"], "output": ""},
                "messages[0].command: expected a string, got list",
            ),
            ({"role": "custom", "content": "x"}, "messages[0].customType: required field is missing"),
            (
                {"role": "custom", "customType": "n", "content": {}},
                "messages[0].content: expected a string or a list of content blocks, got dict",
            ),
            (
                {"role": "branchSummary", "summary": None},
                "messages[0].summary: expected a string, got NoneType",
            ),
            (
                {"role": "compactionSummary", "tokensBefore": 1},
                "messages[0].summary: required field is missing",
            ),
        ],
    )
    def test_a_missing_or_mistyped_required_field_is_named(
        self, message: dict[str, Any], expected: str
    ) -> None:
        diagnostic = only(validate_transcript([complete(message, expected)]))
        assert diagnostic.code == "INVALID_MESSAGE"
        assert diagnostic.message == expected
        assert diagnostic.message_index == 0

    def test_independent_problems_of_one_message_are_all_reported(self) -> None:
        diagnostics = validate_transcript([{"role": "bashExecution"}])
        assert [d.message for d in diagnostics] == [
            f"messages[0].{key}: required field is missing"
            for key in ("command", "output", "cancelled", "truncated", "timestamp")
        ]


class TestInvalidContentBlock:
    @pytest.mark.parametrize(
        ("message", "expected"),
        [
            (
                {"role": "user", "content": ["hi"]},
                "messages[0].content[0]: expected a content block mapping, got str",
            ),
            (
                {"role": "user", "content": [{"text": "hi"}]},
                "messages[0].content[0].type: required field is missing",
            ),
            (
                assistant({"type": "tool_use", "id": "x"}),
                "messages[0].content[0].type: 'tool_use' is not a content block type "
                "(allowed: text, thinking, toolCall)",
            ),
            (
                {"role": "user", "content": [{"type": "thinking", "thinking": "x"}]},
                "messages[0].content[0].type: 'thinking' is not allowed in user content "
                "(allowed: image, text)",
            ),
            (
                assistant({"type": "image", "data": "x", "mimeType": "image/png"}),
                "messages[0].content[0].type: 'image' is not allowed in assistant content "
                "(allowed: text, thinking, toolCall)",
            ),
            (
                {"role": "user", "content": [{"type": "text", "text": None}]},
                "messages[0].content[0].text: expected a string, got NoneType",
            ),
            (
                {"role": "user", "content": [{"type": "image", "data": "x"}]},
                "messages[0].content[0].mimeType: required field is missing",
            ),
            (
                assistant({"type": "thinking", "text": "x"}),
                "messages[0].content[0].thinking: required field is missing",
            ),
            (
                {"role": "custom", "customType": "n", "content": [{"type": "text", "text": 1}]},
                "messages[0].content[0].text: expected a string, got int",
            ),
        ],
    )
    def test_a_bad_block_is_named_by_its_path(self, message: dict[str, Any], expected: str) -> None:
        diagnostic = only(validate_transcript([complete(message)]))
        assert diagnostic.code == "INVALID_CONTENT_BLOCK"
        assert diagnostic.message == expected

    def test_a_tool_call_in_a_tool_result_is_a_misplaced_block(self) -> None:
        bad = result(content=[call("call-2")])
        codes = findings(validate_transcript([assistant(call()), bad]))
        assert codes == [("INVALID_CONTENT_BLOCK", 1)]

    def test_blocks_may_be_a_tuple(self) -> None:
        assert validate_transcript([complete({"role": "user", "content": ({"type": "text", "text": "x"},)})]) == ()


class TestInvalidToolCall:
    @pytest.mark.parametrize(
        ("block", "expected"),
        [
            (call(""), "messages[0].content[0].id: expected a non-empty string, got ''"),
            (call(7), "messages[0].content[0].id: expected a string, got int"),  # type: ignore[arg-type]
            (
                {"type": "toolCall", "id": "c", "arguments": {}},
                "messages[0].content[0].name: required field is missing",
            ),
            (
                {"type": "toolCall", "id": "c", "name": "read"},
                "messages[0].content[0].arguments: required field is missing",
            ),
        ],
    )
    def test_a_tool_call_without_id_name_or_arguments_is_invalid(
        self, block: dict[str, Any], expected: str
    ) -> None:
        diagnostic = only(validate_transcript([assistant(block)]))
        assert diagnostic.code == "INVALID_TOOL_CALL"
        assert diagnostic.message == expected


class TestToolArgumentsNotObject:
    def test_the_message_names_the_path_and_what_was_found(self) -> None:
        transcript = [
            complete({"role": "user", "content": "go"}),
            assistant({"type": "text", "text": "ok"}),
            result("c0"),
            assistant({"type": "text", "text": "now"}, call(arguments=[1, 2])),
        ]
        diagnostics = validate_transcript(transcript)
        assert diagnostics[0].code == "TOOL_ARGUMENTS_NOT_OBJECT"
        assert diagnostics[0].message == "messages[3].content[1].arguments: expected a JSON object, got list"

    @pytest.mark.parametrize(
        ("arguments", "expected"),
        [
            ("{}", "arguments: expected a JSON object, got str"),
            (None, "arguments: expected a JSON object, got NoneType"),
            ({1: "x"}, "arguments: expected a JSON object, got a key of type int"),
            ({"nested": [0, 1, math.nan]}, "arguments.nested[2]: expected a finite number, got nan"),
            ({"x": {"y": -math.inf}}, "arguments.x.y: expected a finite number, got -inf"),
            ({"odd key": {1, 2}}, 'arguments["odd key"]: expected a JSON value, got set'),
            ({"raw": b"\x00"}, "arguments.raw: expected a JSON value, got bytes"),
            ({"obj": object()}, "arguments.obj: expected a JSON value, got object"),
            (
                {"deep": [{"k": {(1, 2): 3}}]},
                "arguments.deep[0].k: expected a JSON object, got a key of type tuple",
            ),
        ],
    )
    def test_arguments_must_be_a_json_object_all_the_way_down(self, arguments: object, expected: str) -> None:
        diagnostic = only(validate_transcript([assistant(call(arguments=arguments)), result()]))
        assert diagnostic.code == "TOOL_ARGUMENTS_NOT_OBJECT"
        assert diagnostic.message == "messages[0].content[0]." + expected

    def test_a_cycle_is_not_json(self) -> None:
        arguments: dict[str, Any] = {"list": []}
        arguments["list"].append(arguments)
        diagnostic = only(validate_transcript([assistant(call(arguments=arguments)), result()]))
        assert diagnostic.code == "TOOL_ARGUMENTS_NOT_OBJECT"
        assert diagnostic.message.startswith("messages[0].content[0].arguments.list[0]: ")
        assert "cycle" in diagnostic.message

    def test_shared_substructure_is_not_a_cycle_and_is_checked_once(self) -> None:
        shared: dict[str, Any] = {"leaf": 1}
        for _ in range(300):  # 2**300 paths: only linear work is affordable
            shared = {"a": shared, "b": [shared, shared]}
        assert validate_transcript([assistant(call(arguments=shared)), result()]) == ()


class TestInvalidToolResult:
    @pytest.mark.parametrize(
        ("missing_or_bad", "expected"),
        [
            ({"toolName": 3}, "messages[1].toolName: expected a string, got int"),
            ({"content": "text"}, "messages[1].content: expected a list of content blocks, got str"),
            ({"isError": "false"}, "messages[1].isError: expected a boolean, got str"),
            ({"isError": 0}, "messages[1].isError: expected a boolean, got int"),
        ],
    )
    def test_a_tool_result_without_its_fields_is_invalid(
        self, missing_or_bad: dict[str, Any], expected: str
    ) -> None:
        diagnostics = validate_transcript([assistant(call()), {**result(), **missing_or_bad}])
        assert [(d.code, d.message) for d in diagnostics] == [("INVALID_TOOL_RESULT", expected)]

    def test_an_unreadable_call_id_is_named_and_cannot_answer_any_call(self) -> None:
        diagnostics = validate_transcript([assistant(call()), result(toolCallId=None)])
        assert [(d.code, d.message) for d in diagnostics] == [
            ("INVALID_TOOL_RESULT", "messages[1].toolCallId: expected a string, got NoneType"),
            (
                "MISSING_TOOL_RESULT",
                "messages[0].content[0]: tool call 'call-1' ('read') has no later toolResult",
            ),
        ]

    def test_a_missing_is_error_flag_is_named(self) -> None:
        bad = result()
        del bad["isError"]
        diagnostic = only(validate_transcript([assistant(call()), bad]))
        assert (diagnostic.code, diagnostic.message) == (
            "INVALID_TOOL_RESULT",
            "messages[1].isError: required field is missing",
        )

    def test_a_bad_block_in_a_tool_result_is_a_content_block_problem(self) -> None:
        bad = result(content=[{"type": "text"}])
        diagnostic = only(validate_transcript([assistant(call()), bad]))
        assert (diagnostic.code, diagnostic.message) == (
            "INVALID_CONTENT_BLOCK",
            "messages[1].content[0].text: required field is missing",
        )

"""Models (SPEC 1-3) and message constructors with immutable JSON snapshots (SPEC 8)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic import ValidationError

from sessionstore.models.content import ToolCall
from sessionstore.models.entries import CompactionEntry, MessageEntry, UnknownEntry, parse_entry
from sessionstore.models.frozen import FrozenDict, freeze_json
from sessionstore.models.messages import (
    AssistantMessage,
    BashExecutionMessage,
    UnknownMessage,
    assistant_message,
    parse_agent_message,
    tool_result_message,
    user_message,
)
from sessionstore.validate import validate_transcript


def call(arguments: Any) -> list[dict[str, Any]]:
    return [{"type": "toolCall", "id": "c1", "name": "f", "arguments": arguments}]


def make(arguments: Any) -> AssistantMessage:
    return assistant_message(call(arguments), api="a", provider="p", model="m", stop_reason="toolUse")


def test_later_mutation_of_the_callers_data_does_not_change_the_message() -> None:
    arguments = {"nested": [1, {"k": "v"}]}
    message = make(arguments)
    arguments["nested"][1]["k"] = "changed"
    arguments["new"] = 1
    assert message.to_wire()["content"][0]["arguments"] == {"nested": [1, {"k": "v"}]}


def test_the_messages_own_arguments_cannot_be_mutated() -> None:
    message = make({"nested": [1, 2]})
    block = message.content[0]
    assert isinstance(block, ToolCall)
    assert isinstance(block.arguments, FrozenDict)
    with pytest.raises(TypeError):
        block.arguments["x"] = 1  # type: ignore[index]
    with pytest.raises(AttributeError):
        block.arguments["nested"].append(3)
    with pytest.raises(ValidationError):
        message.model = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("arguments", "path", "error"),
    [
        ({"nested": [1, 2, math.nan]}, "arguments.nested[2]", ValueError),
        ({"x": math.inf}, "arguments.x", ValueError),
        ({1: "a"}, "arguments[1]", TypeError),
        ({"s": {1, 2}}, "arguments.s", TypeError),
        ({"b": b"bytes"}, "arguments.b", TypeError),
        ({"o": object()}, "arguments.o", TypeError),
    ],
)
def test_bad_argument_values_are_rejected_naming_the_path(arguments: Any, path: str, error: type) -> None:
    with pytest.raises(error, match=r"\b" + path.replace("[", r"\[").replace("]", r"\]")):
        make(arguments)


def test_cyclic_arguments_are_rejected() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(ValueError, match="cycle"):
        make(cyclic)


def test_arguments_must_be_an_object() -> None:
    with pytest.raises(TypeError, match="arguments"):
        make([1, 2])


def test_proto_and_class_keys_are_ordinary_keys() -> None:
    message = make({"__proto__": {"polluted": True}, "__class__": "x"})
    assert message.to_wire()["content"][0]["arguments"] == {"__proto__": {"polluted": True}, "__class__": "x"}


def test_a_valid_message_survives_a_json_round_trip_and_validation() -> None:
    messages = [
        user_message("hi", timestamp=1),
        make({"left": 20, "right": 22, "deep": [{"a": None, "b": 1.5, "c": True}]}),
        tool_result_message(tool_call_id="c1", tool_name="f", content="42", timestamp=3),
    ]
    wire = json.loads(json.dumps([m.to_wire() for m in messages]))
    assert validate_transcript(wire) == ()
    assert wire[1]["content"][0]["id"] == "c1"
    assert wire[1]["content"][0]["arguments"]["deep"][0] == {"a": None, "b": 1.5, "c": True}
    assert parse_agent_message(wire[1]) == messages[1]


def test_unknown_fields_on_known_objects_are_kept() -> None:
    data = {"role": "assistant", "content": [{"type": "text", "text": "x", "textSignature": "sig", "future": 1}],
            "api": "a", "provider": "p", "model": "m", "usage": {}, "stopReason": "stop", "timestamp": 1,
            "responseId": "r", "vendorField": {"keep": "me"}}
    parsed = parse_agent_message(data)
    assert isinstance(parsed, AssistantMessage)
    assert parsed.to_wire() == data


def test_unknown_roles_are_opaque_messages() -> None:
    parsed = parse_agent_message({"role": "telemetry", "x": [1]})
    assert isinstance(parsed, UnknownMessage)
    assert parsed.to_wire() == {"role": "telemetry", "x": [1]}


def test_app_roles_parse_into_their_models() -> None:
    parsed = parse_agent_message({"role": "bashExecution", "command": "ls", "output": "", "exitCode": None,
                                  "cancelled": False, "truncated": False, "timestamp": 1})
    assert isinstance(parsed, BashExecutionMessage)


def test_entries_are_a_discriminated_union_with_an_unknown_fallback() -> None:
    base = {"id": "a", "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z"}
    assert isinstance(parse_entry({**base, "type": "message", "message": {"role": "user", "content": "x"}}),
                      MessageEntry)
    assert isinstance(parse_entry({**base, "type": "compaction", "summary": "s", "firstKeptEntryId": "b",
                                   "tokensBefore": 1}), CompactionEntry)
    unknown = parse_entry({**base, "type": "future", "payload": 1})
    assert isinstance(unknown, UnknownEntry)
    assert unknown.to_wire() == {**base, "type": "future", "payload": 1}


def test_a_message_entry_without_a_message_is_invalid() -> None:
    with pytest.raises(ValidationError, match="message"):
        parse_entry({"id": "a", "parentId": None, "timestamp": "t", "type": "message"})


def test_freeze_json_accepts_plain_json_and_thaws_back() -> None:
    frozen = freeze_json({"a": [1, 2.5, None, True, "s", {"b": []}]})
    assert frozen == {"a": (1, 2.5, None, True, "s", {"b": ()})}
    assert hash(frozen) == hash(freeze_json({"a": [1, 2.5, None, True, "s", {"b": []}]}))


def test_now_iso_writes_what_to_iso_string_writes() -> None:
    """``new Date().toISOString()``: UTC, milliseconds always present (also at .000), ``Z``."""
    import re
    from datetime import UTC, datetime
    from unittest import mock

    from sessionstore.models import timestamps

    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", timestamps.now_iso())
    for moment, text in [
        (datetime(2026, 1, 2, 3, 4, 5, 0, tzinfo=UTC), "2026-01-02T03:04:05.000Z"),
        (datetime(2026, 1, 2, 3, 4, 5, 999_999, tzinfo=UTC), "2026-01-02T03:04:05.999Z"),
    ]:
        with mock.patch.object(timestamps, "datetime", mock.Mock(wraps=datetime, now=lambda tz, m=moment: m)):
            assert timestamps.now_iso() == text
            assert timestamps.iso_to_ms(text) == int(moment.timestamp() * 1000)

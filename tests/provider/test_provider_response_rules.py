"""Rules across the records of one response: start, content order, terminal, ids, stop reasons."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from sessionstore.provider import (
    FixtureProviderAdapter,
    ProviderStream,
    TextBlock,
    TextDelta,
    ToolCall,
    Usage,
)
from tests.provider.provider_support import (
    complete,
    end,
    expect_failure,
    expect_result_failure,
    fixture_with,
    start,
    text,
    tool,
)


def stream_of(*records: object) -> ProviderStream:
    return FixtureProviderAdapter(fixture_with(list(records))).stream("request-1")


async def test_each_text_delta_becomes_its_own_chunk_and_text_block_in_order() -> None:
    chunks, response = await complete(stream_of(start(), text("first"), text("second"), text(""), end()))

    assert chunks == [TextDelta("first"), TextDelta("second"), TextDelta("")]
    assert response.content == (TextBlock("first"), TextBlock("second"), TextBlock(""))
    assert response.text == "firstsecond"


async def test_text_and_tool_calls_keep_their_record_order_in_chunks_and_content() -> None:
    records = [
        start("response-mixed"),
        text("I will add. "),
        tool("call-a", "add", {"left": 1, "right": 2}),
        text("And read. "),
        tool("call-b", "read", {"path": "README.md"}),
        end("response-mixed", "tool_call", {"input_tokens": 9, "output_tokens": 4}),
    ]

    chunks, response = await complete(stream_of(*records))

    call_a = ToolCall("call-a", "add", {"left": 1, "right": 2})
    call_b = ToolCall("call-b", "read", {"path": "README.md"})
    assert chunks == [TextDelta("I will add. "), call_a, TextDelta("And read. "), call_b]
    assert response.content == (TextBlock("I will add. "), call_a, TextBlock("And read. "), call_b)
    assert response.tool_calls == (call_a, call_b)
    assert response.id == "message-response-mixed"
    assert response.role == "assistant"
    assert response.response_id == "response-mixed"
    assert response.usage == Usage(input_tokens=9, output_tokens=4)


async def test_chunks_and_the_final_response_are_immutable() -> None:
    chunks, response = await complete(
        stream_of(
            start(),
            text("t"),
            tool("call-1", arguments={"nested": {"list": [1]}}),
            end(stop_reason="tool_call"),
        )
    )

    for value in (*chunks, response, response.usage, *response.content):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, dataclasses.fields(value)[0].name, "changed")
    assert isinstance(response.content, tuple)
    arguments: Any = response.tool_calls[0].arguments
    with pytest.raises(TypeError):
        arguments["nested"] = 1
    with pytest.raises(TypeError):
        arguments["nested"]["list"] = 1
    assert arguments["nested"]["list"] == (1,)


async def test_to_json_returns_fresh_plain_camel_case_data() -> None:
    chunks, response = await complete(
        stream_of(start("r"), text("t"), tool("c", arguments={"a": [1]}), end("r", "tool_call"))
    )

    as_json: Any = response.to_json()
    as_json["content"][1]["arguments"]["a"].append(2)

    assert [chunk.to_json() for chunk in chunks] == [
        {"type": "textDelta", "text": "t"},
        {"type": "toolCall", "id": "c", "name": "add", "arguments": {"a": [1]}},
    ]
    assert response.to_json() == {
        "id": "message-r",
        "role": "assistant",
        "content": [
            {"type": "text", "text": "t"},
            {"type": "toolCall", "id": "c", "name": "add", "arguments": {"a": [1]}},
        ],
        "stopReason": "toolCall",
        "usage": {"inputTokens": 3, "outputTokens": 4},
        "responseId": "r",
    }


@pytest.mark.parametrize("early", [text("too early"), tool(), end()], ids=["text_delta", "tool_call", "response_end"])
async def test_a_record_before_response_start_is_rejected(early: object) -> None:
    seen = await expect_failure(stream_of(early, start(), end()), "PROVIDER_MISSING_START")

    assert seen.error is not None and seen.error.record_index == 0


async def test_a_second_response_start_is_rejected() -> None:
    await expect_failure(stream_of(start("a"), text("x"), start("b"), end("a")), "PROVIDER_DUPLICATE_START")


async def test_a_repeated_tool_call_id_within_a_response_is_malformed() -> None:
    seen = await expect_failure(
        stream_of(start(), tool("call-dup"), tool("call-dup"), end(stop_reason="tool_call")),
        "PROVIDER_MALFORMED_RECORD",
    )

    assert seen.chunks == [ToolCall("call-dup", "add", {"left": 1, "right": 2})]


async def test_response_end_with_other_id_is_rejected() -> None:
    await expect_failure(stream_of(start("response-a"), text("x"), end("response-b")), "PROVIDER_RESPONSE_ID_MISMATCH")


async def test_tool_call_stop_reason_without_a_tool_call_is_rejected() -> None:
    await expect_failure(stream_of(start(), text("x"), end(stop_reason="tool_call")), "PROVIDER_STOP_REASON_MISMATCH")


async def test_stop_reason_stop_after_a_tool_call_is_rejected() -> None:
    await expect_failure(stream_of(start(), tool(), end(stop_reason="stop")), "PROVIDER_STOP_REASON_MISMATCH")


async def test_length_stop_reason_is_consistent_with_or_without_tool_calls() -> None:
    _, with_call = await complete(stream_of(start(), tool(), end(stop_reason="length")))
    _, without = await complete(stream_of(start(), text("x"), end(stop_reason="length")))

    assert with_call.stop_reason == without.stop_reason == "length"


async def test_records_ending_without_response_end_fail_both_consumers_after_the_chunks() -> None:
    seen = await expect_failure(stream_of(start(), text("partial"), tool()), "PROVIDER_MISSING_TERMINAL")

    assert seen.chunks == [TextDelta("partial"), ToolCall("call-1", "add", {"left": 1, "right": 2})]


async def test_a_response_without_any_record_is_missing_its_terminal() -> None:
    await expect_result_failure(stream_of(), "PROVIDER_MISSING_TERMINAL")


async def test_a_second_response_end_is_a_duplicate_terminal() -> None:
    seen = await expect_failure(stream_of(start(), text("x"), end(), end()), "PROVIDER_DUPLICATE_TERMINAL")

    assert seen.chunks == [TextDelta("x")]
    assert seen.error is not None and seen.error.record_index == 3


@pytest.mark.parametrize(
    "late",
    [text("late"), tool(), start(), {"type": "transport_error", "code": "RESET", "message": "late"}],
    ids=["text_delta", "tool_call", "response_start", "transport_error"],
)
async def test_a_non_terminal_record_after_response_end_is_an_invalid_terminal(late: object) -> None:
    await expect_failure(stream_of(start(), text("x"), end(), late), "PROVIDER_INVALID_TERMINAL")


async def test_transport_error_becomes_a_typed_error_with_the_provider_code() -> None:
    seen = await expect_failure(
        stream_of(start(), text("x"), {"type": "transport_error", "code": "UPSTREAM_RESET", "message": "reset"}),
        "PROVIDER_TRANSPORT_ERROR",
    )

    assert seen.chunks == [TextDelta("x")]
    assert seen.error is not None
    assert (seen.error.provider_code, seen.error.message, seen.error.record_index) == (
        "UPSTREAM_RESET",
        "reset",
        2,
    )


async def test_transport_error_before_response_start_is_still_a_transport_error() -> None:
    await expect_failure(
        stream_of({"type": "transport_error", "code": "DNS", "message": "no route"}),
        "PROVIDER_TRANSPORT_ERROR",
    )


async def test_errors_name_the_index_of_the_offending_record() -> None:
    error = await expect_result_failure(
        stream_of(start(), text("a"), text("b"), {"type": "text_delta", "text": 1}),
        "PROVIDER_MALFORMED_RECORD",
    )

    assert error.record_index == 3
    assert "record 3" in str(error)

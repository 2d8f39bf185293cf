"""One record's own shape: known types, required fields, usage aliases, stop-reason vocabulary."""

from __future__ import annotations

import pytest

from sessionstore.provider import FixtureProviderAdapter, ProviderStream, TextDelta, ToolCall, Usage
from tests.provider.provider_support import (
    complete,
    end,
    expect_failure,
    fixture_with,
    start,
    text,
    tool,
)


def stream_of(*records: object) -> ProviderStream:
    return FixtureProviderAdapter(fixture_with(list(records))).stream("request-1")


async def usage_of(usage: object) -> Usage:
    _, response = await complete(stream_of(start(), text("hi"), end(usage=usage)))
    return response.usage


async def test_unknown_record_type_is_rejected() -> None:
    seen = await expect_failure(
        stream_of(start(), text("before"), {"type": "surprise", "payload": True}), "PROVIDER_UNKNOWN_RECORD"
    )

    assert seen.chunks == [TextDelta("before")]
    assert seen.error is not None and seen.error.record_index == 2


async def test_transport_vocabulary_is_not_the_model_vocabulary() -> None:
    await expect_failure(stream_of(start(), {"type": "textDelta", "text": "x"}), "PROVIDER_UNKNOWN_RECORD")


@pytest.mark.parametrize(
    "record",
    ["text_delta", 42, None, ["response_start"], {}, {"type": None}, {"type": 7}, {"kind": "text_delta"}],
    ids=repr,
)
async def test_a_record_that_is_not_an_object_with_a_string_type_is_malformed(record: object) -> None:
    await expect_failure(stream_of(start(), record), "PROVIDER_MALFORMED_RECORD")


@pytest.mark.parametrize(
    "record",
    [
        {"type": "response_start", "responseId": "r", "role": "user"},
        {"type": "response_start", "responseId": "r"},
        {"type": "response_start", "responseId": "", "role": "assistant"},
        {"type": "response_start", "responseId": 7, "role": "assistant"},
    ],
    ids=["role-user", "no-role", "empty-id", "int-id"],
)
async def test_response_start_needs_a_response_id_and_the_assistant_role(record: object) -> None:
    await expect_failure(stream_of(record), "PROVIDER_MALFORMED_RECORD")


@pytest.mark.parametrize("value", [42, None, ["a"], {"text": "a"}], ids=repr)
async def test_text_delta_text_must_be_a_string(value: object) -> None:
    await expect_failure(stream_of(start(), {"type": "text_delta", "text": value}), "PROVIDER_MALFORMED_RECORD")


@pytest.mark.parametrize(
    ("field", "value"),
    [("id", ""), ("id", None), ("id", 7), ("name", ""), ("name", None), ("name", ["add"])],
    ids=repr,
)
async def test_tool_call_needs_a_non_empty_string_id_and_name(field: str, value: object) -> None:
    record = tool()
    record[field] = value

    await expect_failure(stream_of(start(), record), "PROVIDER_MALFORMED_RECORD")


@pytest.mark.parametrize("arguments", [[1, 2], "{}", 1, True], ids=repr)
async def test_tool_call_arguments_must_be_a_json_object(arguments: object) -> None:
    await expect_failure(stream_of(start(), tool(arguments=arguments)), "PROVIDER_MALFORMED_RECORD")


async def test_tool_call_without_arguments_is_malformed() -> None:
    record = tool()
    del record["arguments"]

    await expect_failure(stream_of(start(), record), "PROVIDER_MALFORMED_RECORD")


async def test_tool_call_arguments_keep_dunder_keys_as_ordinary_keys() -> None:
    arguments = {"__proto__": {"polluted": True}, "__class__": "x", "constructor": "y", "prototype": None}

    chunks, response = await complete(
        stream_of(start(), tool("call-1", arguments=arguments), end(stop_reason="tool_call"))
    )

    call = chunks[0]
    assert isinstance(call, ToolCall)
    assert dict(call.arguments) == arguments
    assert call.arguments["__proto__"] == {"polluted": True}
    assert type(call.arguments).__name__ == "mappingproxy"
    assert response.to_json()["content"] == [
        {"type": "toolCall", "id": "call-1", "name": "add", "arguments": arguments}
    ]


async def test_tool_call_id_from_the_provider_is_kept_verbatim() -> None:
    odd_id = "  toolu_01 Ä/ü:\u200b "

    _, response = await complete(stream_of(start(), tool(odd_id), end(stop_reason="tool_call")))

    assert response.tool_calls[0].id == odd_id


@pytest.mark.parametrize(
    "record",
    [
        {"type": "response_end", "stopReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {
            "type": "response_end",
            "responseId": "",
            "stopReason": "stop",
            "usage": {"inputTokens": 1, "outputTokens": 1},
        },
        {"type": "response_end", "responseId": "response-1", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "response_end", "responseId": "response-1", "stopReason": "stop"},
        {"type": "response_end", "responseId": "response-1", "stopReason": "stop", "usage": [1, 1]},
    ],
    ids=["no-response-id", "empty-response-id", "no-stop-reason", "no-usage", "usage-not-object"],
)
async def test_response_end_needs_response_id_stop_reason_and_usage(record: object) -> None:
    await expect_failure(stream_of(start(), text("x"), record), "PROVIDER_MALFORMED_RECORD")


@pytest.mark.parametrize("stop_reason", ["toolCall", "toolUse", "end_turn", "error", "aborted", "", None, 1])
async def test_response_end_stop_reason_outside_the_transport_vocabulary_is_malformed(
    stop_reason: object,
) -> None:
    record = end()
    record["stopReason"] = stop_reason

    await expect_failure(stream_of(start(), text("x"), record), "PROVIDER_MALFORMED_RECORD")


async def test_transport_tool_call_stop_reason_is_normalized_to_tool_call() -> None:
    _, response = await complete(stream_of(start(), tool(), end(stop_reason="tool_call")))

    assert response.stop_reason == "toolCall"


async def test_length_stop_reason_is_kept_as_length() -> None:
    _, response = await complete(stream_of(start(), text("trunc"), end(stop_reason="length")))

    assert response.stop_reason == "length"


async def test_usage_accepts_camel_case_counts() -> None:
    assert await usage_of({"inputTokens": 12, "outputTokens": 8}) == Usage(input_tokens=12, output_tokens=8)


async def test_usage_accepts_snake_case_counts() -> None:
    assert await usage_of({"input_tokens": 30, "output_tokens": 6}) == Usage(input_tokens=30, output_tokens=6)


async def test_usage_accepts_one_alias_per_count_even_when_mixed() -> None:
    assert await usage_of({"inputTokens": 1, "output_tokens": 0}) == Usage(input_tokens=1, output_tokens=0)


@pytest.mark.parametrize(
    "usage",
    [
        {"inputTokens": 1, "input_tokens": 1, "outputTokens": 1},
        {"inputTokens": None, "input_tokens": 1, "outputTokens": 1},
        {"inputTokens": 1, "outputTokens": 1, "output_tokens": None},
    ],
    ids=["both-given", "camel-null", "snake-null"],
)
async def test_usage_naming_one_count_with_both_aliases_is_malformed_even_if_one_is_null(
    usage: object,
) -> None:
    seen = await expect_failure(stream_of(start(), text("x"), end(usage=usage)), "PROVIDER_MALFORMED_RECORD")

    assert seen.error is not None and "both" in seen.error.message


@pytest.mark.parametrize(
    "usage", [{"inputTokens": 1}, {"output_tokens": 1}, {}], ids=["no-output", "no-input", "empty"]
)
async def test_usage_missing_a_count_is_malformed(usage: object) -> None:
    await expect_failure(stream_of(start(), text("x"), end(usage=usage)), "PROVIDER_MALFORMED_RECORD")


@pytest.mark.parametrize("count", [-1, True, False, 1.0, 1.5, "1", None, [1], 2**53], ids=repr)
async def test_usage_counts_must_be_non_negative_integers_that_are_not_bools(count: object) -> None:
    await expect_failure(
        stream_of(start(), text("x"), end(usage={"inputTokens": count, "outputTokens": 1})),
        "PROVIDER_MALFORMED_RECORD",
    )


async def test_usage_counts_up_to_the_largest_safe_integer_are_accepted() -> None:
    assert (await usage_of({"inputTokens": 2**53 - 1, "outputTokens": 0})).input_tokens == 2**53 - 1


@pytest.mark.parametrize(
    "record",
    [
        {"type": "transport_error", "code": "", "message": "m"},
        {"type": "transport_error", "code": 503, "message": "m"},
        {"type": "transport_error", "code": "RESET", "message": 42},
        {"type": "transport_error", "code": "RESET"},
    ],
    ids=["empty-code", "int-code", "int-message", "no-message"],
)
async def test_malformed_transport_error_is_malformed_rather_than_a_transport_error(record: object) -> None:
    await expect_failure(stream_of(start(), record), "PROVIDER_MALFORMED_RECORD")


async def test_unknown_fields_of_known_records_are_ignored() -> None:
    chunks, response = await complete(
        stream_of(
            start(model="m-1"),
            {**text("hi"), "index": 0},
            end(usage={"inputTokens": 1, "outputTokens": 2, "cacheRead": 5}),
        )
    )

    assert response.text == "hi"
    assert len(chunks) == 1

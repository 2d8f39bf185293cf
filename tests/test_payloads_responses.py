"""Responses back into the session (issue 15 item 2): SDK responses become pi's AssistantMessage as
pi-ai 1.6's streams record them, and the next payload replays them (fixtures/responses/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessionstore.api import SessionStore
from sessionstore.errors import InvalidInputError
from sessionstore.models.messages import user_message
from sessionstore.payloads import (
    anthropic_message_to_pi,
    build_payload,
    openai_chat_to_pi,
    openai_response_to_pi,
    record_anthropic,
    record_openai_chat,
    record_openai_response,
)
from tests.paths import ROOT

FIXTURES = ROOT / "fixtures" / "responses"
TOOLS = [{"name": "get_weather", "description": "The weather of a city",
          "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}]
T = 1_700_000_000_000


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


def sdk(name: str) -> Any:
    """The fixture as the SDK's own response model (so the fixtures keep the SDKs' shapes)."""
    data = fixture(name)
    if name.startswith("anthropic"):
        from anthropic.types import Message
        return Message.model_validate(data)
    if name.startswith("openai-chat"):
        from openai.types.chat import ChatCompletion
        return ChatCompletion.model_validate(data)
    from openai.types.responses import Response
    return Response.model_validate(data)


def test_every_fixture_is_a_valid_sdk_response() -> None:
    names = sorted(p.stem for p in FIXTURES.glob("*.json"))
    assert len(names) >= 12
    for name in names:
        assert sdk(name) is not None


# -- Anthropic ------------------------------------------------------------------------------------
def test_anthropic_blocks_ids_signatures_usage_and_cost() -> None:
    got = anthropic_message_to_pi(sdk("anthropic-tool-use"), model="claude-sonnet-4-5", timestamp=T)
    assert got == anthropic_message_to_pi(fixture("anthropic-tool-use"), model="claude-sonnet-4-5", timestamp=T)
    assert list(got) == ["role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp",
                         "responseId", "responseModel", "rawStopReason"]
    assert got["content"] == [
        {"type": "thinking", "thinking": "The user wants the weather; I should call the tool.",
         "thinkingSignature": "EqQBCkYIBRgCKkDsig+abc=="},
        {"type": "thinking", "thinking": "[Reasoning redacted]",
         "thinkingSignature": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP", "redacted": True},
        {"type": "text", "text": "Let me check the weather."},
        {"type": "toolCall", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
         "arguments": {"location": "Paris", "unit": "celsius"}},
    ]
    assert (got["api"], got["provider"], got["model"]) == ("anthropic-messages", "anthropic", "claude-sonnet-4-5")
    assert got["responseModel"] == "claude-sonnet-4-5-20250929"
    assert got["stopReason"] == "toolUse" and got["rawStopReason"] == "tool_use"
    usage = got["usage"]
    assert (usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"], usage["cacheWrite1h"],
            usage["totalTokens"]) == (2095, 503, 4000, 1200, 1000, 7798)
    cost = usage["cost"]  # $3 / $15 / $0.30 / $3.75 per million; 1 h writes at twice the input price
    assert cost["input"] == pytest.approx(2095 * 3e-6) and cost["output"] == pytest.approx(503 * 15e-6)
    assert cost["cacheRead"] == pytest.approx(4000 * 0.3e-6)
    assert cost["cacheWrite"] == pytest.approx((200 * 3.75 + 1000 * 6) / 1e6)
    assert cost["total"] == pytest.approx(sum(cost[k] for k in ("input", "output", "cacheRead", "cacheWrite")))
    assert cost["totalFromProvider"] is False


@pytest.mark.parametrize(("name", "stop", "error"), [
    ("anthropic-end-turn", "stop", None),
    ("anthropic-max-tokens", "length", None),
    ("anthropic-refusal", "error", "The model refused to complete the request"),
])
def test_anthropic_stop_reasons(name: str, stop: str, error: str | None) -> None:
    got = anthropic_message_to_pi(sdk(name), timestamp=T)
    assert got["stopReason"] == stop and got.get("errorMessage") == error
    assert "responseModel" not in got  # the response's model is the registry's


def test_anthropic_unknown_stop_reason_and_missing_one_are_errors_as_in_pi_ai() -> None:
    data = fixture("anthropic-end-turn")
    assert anthropic_message_to_pi({**data, "stop_reason": "surprise"}, timestamp=T)["errorMessage"] == \
        "Unhandled stop reason: surprise"
    assert anthropic_message_to_pi({**data, "stop_reason": None}, timestamp=T)["errorMessage"] == \
        "Anthropic stream ended without a stop reason"


# -- Chat Completions -----------------------------------------------------------------------------
def test_chat_tool_calls_usage_and_openrouter_billed_cost() -> None:
    got = openai_chat_to_pi(sdk("openai-chat-tool-calls"), provider="openrouter", timestamp=T)
    assert got == openai_chat_to_pi(fixture("openai-chat-tool-calls"), provider="openrouter", timestamp=T)
    assert got["content"] == [
        {"type": "text", "text": "Checking both cities."},
        {"type": "toolCall", "id": "call_abc123", "name": "get_weather", "arguments": {"location": "Paris"}},
        {"type": "toolCall", "id": "call_def456", "name": "get_weather", "arguments": {"location": "Rome"}},
    ]
    assert got["stopReason"] == "toolUse" and got["rawStopReason"] == "tool_calls"
    usage = got["usage"]
    assert list(usage) == ["input", "output", "cacheRead", "cacheWrite", "reasoning", "totalTokens", "cost"]
    assert (usage["input"], usage["cacheRead"], usage["output"], usage["totalTokens"]) == (176, 1024, 60, 1260)
    assert usage["cost"]["total"] == 0.00123 and usage["cost"]["totalFromProvider"] is True


def test_chat_reasoning_content_becomes_thinking_signed_with_its_field() -> None:
    got = openai_chat_to_pi(sdk("openai-chat-deepseek-reasoning"), provider="deepseek", timestamp=T)
    assert got["content"] == [
        {"type": "thinking", "thinking": "6 times 7 is 42.", "thinkingSignature": "reasoning_content"},
        {"type": "text", "text": "42."}]
    assert (got["usage"]["input"], got["usage"]["cacheRead"], got["usage"]["reasoning"]) == (36, 64, 12)
    assert got["stopReason"] == "stop"


@pytest.mark.parametrize(("name", "stop", "error"), [
    ("openai-chat-length", "length", None),
    ("openai-chat-content-filter", "error", "Provider finish_reason: content_filter"),
])
def test_chat_stop_reasons(name: str, stop: str, error: str | None) -> None:
    got = openai_chat_to_pi(sdk(name), provider="openrouter", timestamp=T)
    assert got["stopReason"] == stop and got.get("errorMessage") == error


def test_chat_reasoning_details_merge_and_bad_arguments() -> None:
    data = fixture("openai-chat-length")
    message = data["choices"][0]["message"]
    message["reasoning_details"] = [{"type": "reasoning.text", "text": "a", "format": "x"},
                                    {"type": "reasoning.text", "text": "b", "signature": "s"},
                                    {"type": "reasoning.encrypted", "data": "E"}]
    message["tool_calls"] = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "[1]"}}]
    got = openai_chat_to_pi(data, provider="openrouter", timestamp=T)
    thinking, text, call = got["content"]
    assert thinking["thinkingSignature"] == (
        '[{"type":"reasoning.text","text":"ab","format":"x","signature":"s"},{"type":"reasoning.encrypted","data":"E"}]')
    assert text == {"type": "text", "text": "Part of"}
    assert call["arguments"] == {} and call["argumentsError"].startswith("Tool arguments must be a JSON object")


# -- Responses ------------------------------------------------------------------------------------
def test_responses_reasoning_text_signature_and_call_ids() -> None:
    got = openai_response_to_pi(fixture("openai-responses-tool-call"), model="gpt-5", timestamp=T)
    thinking, text, call = got["content"]
    item = fixture("openai-responses-tool-call")["output"][0]
    assert thinking == {"type": "thinking", "thinking": "**Weather lookup**\n\nCall the tool.",
                        "thinkingSignature": json.dumps(item, separators=(",", ":"))}
    assert text == {"type": "text", "text": "Looking it up.",
                    "textSignature": '{"v":1,"id":"msg_67ccd2bf17f0819081ff3bb2cf6508e6","phase":"commentary"}'}
    assert call == {"type": "toolCall", "id": "call_12345xyz|fc_67ccd2c0d5a88190a3b5f2b3", "name": "get_weather",
                    "arguments": {"location": "Paris"}}
    assert got["stopReason"] == "toolUse" and got["rawStopReason"] == "completed"
    usage = got["usage"]
    assert (usage["input"], usage["cacheRead"], usage["cacheWrite"], usage["reasoning"], usage["totalTokens"]) == \
        (696, 2048, 256, 192, 3300)
    # The SDK object gives the same message; its item's keys come in the SDK's field order.
    from_sdk = openai_response_to_pi(sdk("openai-responses-tool-call"), model="gpt-5", timestamp=T)
    assert json.loads(from_sdk["content"][0].pop("thinkingSignature")) == json.loads(thinking.pop("thinkingSignature"))
    assert from_sdk == got


@pytest.mark.parametrize(("name", "stop", "raw", "error"), [
    ("openai-responses-final", "stop", "completed", None),
    ("openai-responses-incomplete", "length", "incomplete.max_output_tokens", None),
    ("openai-responses-content-filter", "error", "incomplete.content_filter", "Response incomplete: content_filter"),
])
def test_responses_stop_reasons(name: str, stop: str, raw: str, error: str | None) -> None:
    got = openai_response_to_pi(sdk(name), model="gpt-5", timestamp=T)
    assert (got["stopReason"], got["rawStopReason"], got.get("errorMessage")) == (stop, raw, error)


def test_responses_flex_service_tier_halves_the_cost() -> None:
    data = fixture("openai-responses-final")
    flex = openai_response_to_pi(data, model="gpt-5", timestamp=T)["usage"]["cost"]
    default = openai_response_to_pi({**data, "service_tier": "default"}, model="gpt-5", timestamp=T)["usage"]["cost"]
    assert flex["total"] == pytest.approx(default["total"] / 2)


def test_a_model_of_another_api_or_not_in_the_registry_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        openai_chat_to_pi(fixture("openai-chat-length"), provider="openai", model="gpt-5")
    with pytest.raises(InvalidInputError):
        anthropic_message_to_pi(fixture("anthropic-end-turn"), model="claude-none")


# -- round trips: payload -> response -> record -> tool result -> payload ------------------------
CASES = [
    ("anthropic", "claude-sonnet-4-5", "anthropic-tool-use", record_anthropic, anthropic_message_to_pi),
    ("openrouter", "openai/gpt-4.1", "openai-chat-tool-calls", record_openai_chat, openai_chat_to_pi),
    ("openai", "gpt-5", "openai-responses-tool-call", record_openai_response, openai_response_to_pi),
]


@pytest.mark.parametrize(("provider", "model", "name", "record", "convert"), CASES, ids=[c[0] for c in CASES])
def test_a_recorded_response_is_replayed_by_the_next_payload(
    store: SessionStore, provider: str, model: str, name: str, record: Any, convert: Any, tmp_path: Path,
) -> None:
    sid = store.create_session(cwd=str(tmp_path))
    user = user_message("What is the weather in Paris?", timestamp=T)
    store.append_message(sid, user)
    first = build_payload(store.context(sid).llm, provider=provider, model=model, tools=TOOLS)
    assert first
    entry = record(store, sid, fixture(name), provider=provider, model=model, timestamp=T + 1)
    expected = convert(fixture(name), provider=provider, model=model, timestamp=T + 1)
    assert store.entry(sid, entry)["message"] == expected
    results = []
    for block in expected["content"]:
        if block["type"] == "toolCall":
            result = store.append_tool_result(sid, tool_call_id=block["id"], tool_name=block["name"], content="18 C")
            results.append(store.entry(sid, result)["message"])
    assert results
    second = build_payload(store.context(sid).llm, provider=provider, model=model, tools=TOOLS)
    user_wire = next(e["message"] for e in store.path(sid) if e["type"] == "message")
    context = [user_wire, expected, *results]
    assert second == build_payload(context, provider=provider, model=model, tools=TOOLS)
    text = json.dumps(second)
    for block in expected["content"]:
        if block["type"] == "toolCall":
            assert block["id"].split("|")[0] in text
        if block["type"] == "thinking" and provider == "anthropic":
            assert json.dumps(block["thinkingSignature"]) in text
    if provider == "openai":  # the reasoning item goes back with its encrypted content
        assert "gAAAAABoENCRYPTED==" in text


"""An Anthropic Messages response as pi-ai 1.6's ``anthropic-messages`` stream records it.

The response is the final ``Message`` (what ``messages.create`` returns, or the SDK stream's final
message): pi-ai's stream reads the same facts from its events (``message_start``: id, model, usage;
``content_block_*``: the blocks in order; ``message_delta``: stop reason and final usage)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from sessionstore.models import js
from sessionstore.models.wire import JsonObject as Json
from sessionstore.payloads.anthropic import ACTIVE_EFFORT
from sessionstore.payloads.response_common import (
    append_diagnostic,
    apply_openrouter_cost,
    calculate_cost,
    fail,
    is_openrouter,
    number,
    registry_cost,
    response_json,
    response_model,
    start_message,
)

STOP_REASONS = {"end_turn": "stop", "max_tokens": "length", "tool_use": "toolUse", "pause_turn": "stop",
                "stop_sequence": "stop"}
"""pi-ai's ``mapStopReason`` (``refusal`` and ``sensitive`` stop with an error, see ``_stop``)."""


def _stop(reason: Any, details: Any) -> tuple[str, str | None]:
    if isinstance(reason, str) and reason in STOP_REASONS:
        return STOP_REASONS[reason], None
    if reason == "refusal":
        explanation = details.get("explanation") if isinstance(details, Mapping) else None
        return "error", explanation if js.truthy(explanation) else "The model refused to complete the request"
    if reason == "sensitive":
        return "error", "Provider stopped with: sensitive"
    return "error", f"Unhandled stop reason: {js.to_string(reason)}"


def _block(block: Mapping[str, Any]) -> Json | None:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return {"type": "text", "text": text if text is not None else ""}
    if kind == "thinking":
        thinking, signature = block.get("thinking"), block.get("signature")
        return {"type": "thinking", "thinking": thinking if thinking is not None else "",
                "thinkingSignature": signature if signature is not None else ""}
    if kind == "redacted_thinking":
        return {"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": block.get("data"),
                "redacted": True}
    if kind == "tool_use":
        # The stream starts the call with no arguments and parses the streamed JSON of `input`.
        arguments = block.get("input")
        return {"type": "toolCall", "id": block.get("id"), "name": block.get("name"),
                "arguments": copy.deepcopy(arguments) if isinstance(arguments, dict) else {}}
    return None  # server tools, search results, ...: pi-ai's stream keeps none of them


def anthropic_message_to_pi(
    message: Any, *, provider: str = "anthropic", model: str | None = None, timestamp: int | None = None
) -> Json:
    """pi's AssistantMessage for an Anthropic ``Message`` (SDK object, mapping or JSON text), as pi-ai
    1.6's stream produces it for ``model`` of ``provider`` (default: the response's model).

    ``timestamp`` defaults to now (pi-ai stamps the request's start). A ``refusal`` or unknown stop
    reason gives ``stopReason: "error"`` and pi-ai's ``errorMessage``, as pi-ai records it."""
    data = response_json(message, "Anthropic message")
    facts = response_model(provider, model, data, "anthropic-messages")
    out = start_message(facts, timestamp)
    if facts.compat.get("supportsMidConvoEffort") is True:
        # The request's effort, which its effort markers carry (buildParams' providerThinkingLevel): the
        # one build_payload sends, pi-ai's default (`options.effort ?? "high"`).
        out["providerThinkingLevel"] = ACTIVE_EFFORT
    if data.get("id") is not None:
        out["responseId"] = data["id"]
    cost = registry_cost(facts)
    response_model_id = data.get("model")
    if response_model_id != facts.id:
        if response_model_id is not None:
            out["responseModel"] = response_model_id
        fallbacks = facts.compat.get("allowedFallbackModels") or []
        fallback = next((f for f in fallbacks if isinstance(f, Mapping) and f.get("provider") == facts.provider
                         and f.get("model") == response_model_id), None)
        if fallback is not None and js.truthy(fallback.get("cost")):
            cost = fallback["cost"]
    found = data.get("usage")
    raw_usage: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    usage = out["usage"]
    usage["input"] = number(raw_usage.get("input_tokens"))
    usage["output"] = number(raw_usage.get("output_tokens"))
    usage["cacheRead"] = number(raw_usage.get("cache_read_input_tokens"))
    usage["cacheWrite"] = number(raw_usage.get("cache_creation_input_tokens"))
    creation = raw_usage.get("cache_creation")
    usage["cacheWrite1h"] = number(creation.get("ephemeral_1h_input_tokens")) if isinstance(creation, Mapping) else 0
    details = raw_usage.get("output_tokens_details")
    if isinstance(details, Mapping) and details.get("thinking_tokens") is not None:
        usage["reasoning"] = details["thinking_tokens"]
    usage["totalTokens"] = usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
    calculate_cost(cost, usage)
    if is_openrouter(facts) and raw_usage:
        apply_openrouter_cost(usage, raw_usage)
    blocks = data.get("content") or []
    for block in blocks:
        if isinstance(block, Mapping) and block.get("type") == "fallback":
            if out["content"]:
                return fail(out, "Anthropic performed an unsupported mid-output model fallback")
            continue
        converted = _block(block) if isinstance(block, Mapping) else None
        if converted is not None:
            out["content"].append(converted)
    reason = data.get("stop_reason")
    if not js.truthy(reason):
        return fail(out, "Anthropic stream ended without a stop reason")
    out["rawStopReason"] = reason
    stop, error = _stop(reason, data.get("stop_details"))
    out["stopReason"] = stop
    if error is not None:
        return fail(out, error)
    transformations = data.get("input_transformations")
    if isinstance(transformations, list) and transformations:
        # Reported once the stream has succeeded, each entry's type, path and reason (null ones left out).
        append_diagnostic(out, "anthropic_input_transformations", [
            {key: entry[key] for key in ("type", "path", "reason") if entry.get(key) is not None}
            if isinstance(entry, Mapping) else {} for entry in transformations])
    return out

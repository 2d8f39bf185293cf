"""OpenAI responses as pi-ai 1.6's ``openai-completions`` and ``openai-responses`` streams record them.

Chat Completions: the final ``ChatCompletion``, read as the one chunk whose delta is its first choice's
message (reasoning first, then text, then tool calls, as pi-ai's chunk handler orders them).
Responses: the final ``Response``, read as its ``output`` items' ``output_item.done`` events and the
terminal ``response.completed`` / ``response.incomplete`` / ``response.failed`` event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessionstore.errors import InvalidInputError
from sessionstore.models import js
from sessionstore.models.wire import JsonObject as Json
from sessionstore.payloads.openai_chat import _reasoning_detail
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
    tool_arguments,
    zero_usage,
)
from sessionstore.wire.jsjson import js_dumps

CHAT_STOP_REASONS = {"stop": "stop", "end": "stop", "length": "length", "function_call": "toolUse",
                     "tool_calls": "toolUse"}
"""pi-ai's Chat Completions ``mapStopReason``; any other finish reason stops with an error."""
CHAT_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
"""The message fields pi-ai reads reasoning text from, the first non-empty one winning."""
SERVICE_TIER_MULTIPLIERS = {"flex": 0.5, "priority": 2, "fast": 2}


def _chat_usage(raw: Mapping[str, Any], cost: Mapping[str, Any], openrouter: bool) -> Json:
    """pi-ai's ``parseChunkUsage``."""
    prompt = number(raw.get("prompt_tokens"))
    details = raw.get("prompt_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    cache_read = details.get("cached_tokens")
    if cache_read is None:
        cache_read = raw.get("prompt_cache_hit_tokens")
    if cache_read is None:
        cache_read = raw.get("cached_tokens")
    cache_read = cache_read if isinstance(cache_read, int | float) and not isinstance(cache_read, bool) else 0
    cache_write = number(details.get("cache_write_tokens"))
    input_tokens = max(0, prompt - cache_read - cache_write)
    output = number(raw.get("completion_tokens"))
    completion_details = raw.get("completion_tokens_details")
    reasoning = number(completion_details.get("reasoning_tokens")) if isinstance(completion_details, Mapping) else 0
    usage: Json = {"input": input_tokens, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write,
                   "reasoning": reasoning or number(raw.get("reasoning_tokens")),
                   "totalTokens": input_tokens + output + cache_read + cache_write,
                   "cost": zero_usage()["cost"]}
    calculate_cost(cost, usage)
    if openrouter:
        apply_openrouter_cost(usage, raw)
    return usage


def _append_detail(details: list[Json], detail: Mapping[str, Any]) -> None:
    """pi-ai's ``appendOpenAIReasoningDetail``: consecutive text (summary) entries merge into one.

    JavaScript's ``??=`` and ``||=`` may assign ``undefined``: such a key keeps its place in the entry
    (a later value lands there) and ``JSON.stringify`` leaves it out. It is held as ``js.MISSING`` here
    and dropped by ``_details_json``."""
    last = details[-1] if details else None
    kind = detail.get("type")
    if last is not None and kind == last.get("type") and kind in ("reasoning.text", "reasoning.summary"):
        field = "text" if kind == "reasoning.text" else "summary"
        last[field] += detail[field]
        if kind == "reasoning.text" and not js.truthy(last.get("signature", js.MISSING)):
            last["signature"] = detail.get("signature", js.MISSING)  # lastDetail.signature ||= detail.signature
        # fillMissingCommonReasoningDetailFields: id ??=, format ||=, index ??=
        if js.nullish(last.get("id", js.MISSING)):
            last["id"] = detail.get("id", js.MISSING)
        if not js.truthy(last.get("format", js.MISSING)):
            last["format"] = detail.get("format", js.MISSING)
        if js.nullish(last.get("index", js.MISSING)):
            last["index"] = detail.get("index", js.MISSING)
        return
    details.append(dict(detail))


def _details_json(details: list[Json]) -> str:
    """``JSON.stringify(details)``: keys holding ``undefined`` left out."""
    return js_dumps([{key: value for key, value in detail.items() if value is not js.MISSING} for detail in details])


def openai_chat_to_pi(
    completion: Any, *, provider: str = "openai", model: str | None = None, timestamp: int | None = None
) -> Json:
    """pi's AssistantMessage for a Chat Completions ``ChatCompletion`` (SDK object, mapping or JSON
    text), as pi-ai 1.6's ``openai-completions`` stream produces it for ``model`` of ``provider``.

    Grammar (``custom``) tool calls are refused: their arguments depend on the tool declarations."""
    data = response_json(completion, "chat completion")
    facts = response_model(provider, model, data, "openai-completions")
    out = start_message(facts, timestamp)
    if js.truthy(data.get("id")):
        out["responseId"] = data["id"]
    if isinstance(data.get("model"), str) and data["model"] and data["model"] != facts.id:
        out["responseModel"] = data["model"]
    cost = registry_cost(facts)
    if isinstance(data.get("usage"), Mapping):
        out["usage"] = _chat_usage(data["usage"], cost, is_openrouter(facts))
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], Mapping) else None
    finished = False
    if choice is not None:
        if not js.truthy(data.get("usage")) and isinstance(choice.get("usage"), Mapping):
            out["usage"] = _chat_usage(choice["usage"], cost, is_openrouter(facts))
        reason = choice.get("finish_reason")
        if js.truthy(reason):
            out["rawStopReason"] = reason
            out["stopReason"] = CHAT_STOP_REASONS.get(reason, "error") if isinstance(reason, str) else "error"
            if out["stopReason"] == "error":
                out["errorMessage"] = f"Provider finish_reason: {js.to_string(reason)}"
            finished = True
        message = choice.get("message") or choice.get("delta")
        if isinstance(message, Mapping):
            _chat_content(out, message, facts.provider)
    if not finished and facts.compat.get("supportsFinishReason") is False:
        out["stopReason"] = "toolUse" if any(b["type"] == "toolCall" for b in out["content"]) else "stop"
    if out["stopReason"] == "error":
        return fail(out, out.get("errorMessage") or "Provider returned an error stop reason")
    if (not finished and facts.compat.get("supportsFinishReason") is not False) or out["stopReason"] == "pending":
        return fail(out, "Stream ended without finish_reason")
    return out


def _chat_content(out: Json, message: Mapping[str, Any], provider: str) -> None:
    blocks: list[Json] = out["content"]
    thinking: Json | None = None
    field = next((f for f in CHAT_REASONING_FIELDS if isinstance(message.get(f), str) and message[f]), None)
    if field is not None:
        signature = "reasoning_content" if provider == "opencode-go" and field == "reasoning" else field
        thinking = {"type": "thinking", "thinking": message[field], "thinkingSignature": signature}
        blocks.append(thinking)
    details: list[Json] | None = None
    raw_details = message.get("reasoning_details")
    if isinstance(raw_details, list):
        for detail in raw_details:
            if not _reasoning_detail(detail):
                continue
            if thinking is None:
                thinking = {"type": "thinking", "thinking": "", "thinkingSignature": ""}
                blocks.append(thinking)
            details = details if details is not None else []
            _append_detail(details, detail)
    content = message.get("content")
    if isinstance(content, str) and content:
        blocks.append({"type": "text", "text": content})
    by_id: dict[str, Json] = {}
    for call in message.get("tool_calls") or []:
        if not isinstance(call, Mapping):
            continue
        function = call.get("function") if isinstance(call.get("function"), Mapping) else None
        if function is None and call.get("custom") is not None:
            raise InvalidInputError("grammar (custom) tool calls are not ported: their arguments depend "
                                    "on the declared tools")
        function = function or {}
        call_id = call.get("id")
        block = by_id.get(call_id) if isinstance(call_id, str) and call_id else None
        if block is None:
            name = function.get("name")
            block = {"type": "toolCall", "id": call_id if js.truthy(call_id) else "",
                     "name": name if name is not None else "", "arguments": {}, "_text": ""}
            blocks.append(block)
            if isinstance(call_id, str) and call_id:
                by_id[call_id] = block
        if isinstance(function.get("arguments"), str):
            block["_text"] += function["arguments"]
    for block in blocks:
        if block["type"] == "toolCall":
            block.update(tool_arguments(block.pop("_text")))
        elif block is thinking and details is not None:
            block["thinkingSignature"] = _details_json(details)


def _text_signature(item: Mapping[str, Any]) -> str:
    """pi-ai's ``encodeTextSignatureV1``."""
    payload: Json = {"v": 1, "id": item.get("id")}
    if js.truthy(item.get("phase")):
        payload["phase"] = item["phase"]
    return js_dumps(payload)


def _join_part(value: Any) -> str:
    """How ``Array#join`` writes an element (``null`` and ``undefined`` as nothing)."""
    return "" if value is None else js.to_string(value)


def _response_item(item: Mapping[str, Any], grammar_inputs: Mapping[str, str]) -> Json | None:
    kind = item.get("type")
    if kind == "reasoning":
        summary = [s for s in item.get("summary") or [] if isinstance(s, Mapping)]
        content = [c for c in item.get("content") or [] if isinstance(c, Mapping)]
        summary_text = "\n\n".join(_join_part(s.get("text")) for s in summary)
        content_text = "\n\n".join(_join_part(c.get("text")) for c in content)
        # The streamed text it falls back to: each summary part ends with a blank line.
        streamed = "".join((s.get("text") or "") + "\n\n" for s in summary) + "".join(
            c.get("text") or "" for c in content)
        return {"type": "thinking", "thinking": summary_text or content_text or streamed,
                "thinkingSignature": js_dumps(item)}
    if kind == "message":
        parts = [c.get("text") if c.get("type") == "output_text" else c.get("refusal")
                 for c in item.get("content") or [] if isinstance(c, Mapping)]
        text = "".join(p if isinstance(p, str) else "" for p in parts)
        return {"type": "text", "text": text, "textSignature": _text_signature(item)}
    if kind in ("function_call", "custom_tool_call"):
        block: Json = {"type": "toolCall", "id": f"{js.to_string(item.get('call_id', js.MISSING))}|"
                                                 f"{js.to_string(item.get('id', js.MISSING))}",
                       "name": item.get("name"), "arguments": {}}
        if "namespace" in item:
            block["namespace"] = item["namespace"]
        if kind == "function_call":
            block.update(tool_arguments(item.get("arguments")))
        else:
            name = item.get("name")
            prop = grammar_inputs.get(name, "input") if isinstance(name, str) else "input"
            block["arguments"] = {prop: item.get("input") or ""}
        return block
    return None  # web search, file search, computer calls, ...: pi-ai's stream keeps none of them


def openai_response_to_pi(
    response: Any,
    *,
    provider: str = "openai",
    model: str | None = None,
    timestamp: int | None = None,
    grammar_inputs: Mapping[str, str] | None = None,
) -> Json:
    """pi's AssistantMessage for a Responses API ``Response`` (SDK object, mapping or JSON text), as
    pi-ai 1.6's ``openai-responses`` stream produces it for ``model`` of ``provider``.

    ``grammar_inputs`` maps a grammar tool's name to the argument property its input goes in (pi-ai
    reads it from the declared tools; ``input`` when not named)."""
    data = response_json(response, "response")
    facts = response_model(provider, model, data, "openai-responses")
    out = start_message(facts, timestamp)
    if data.get("id") is not None:
        out["responseId"] = data["id"]
    for item in data.get("output") or []:
        if isinstance(item, Mapping):
            block = _response_item(item, grammar_inputs or {})
            if block is not None:
                out["content"].append(block)
    status = data.get("status")
    if status == "failed":
        out["rawStopReason"] = status
        error, details = data.get("error"), data.get("incomplete_details")
        if js.truthy(error):
            fields: Mapping[str, Any] = error if isinstance(error, Mapping) else {}
            code, text = fields.get("code"), fields.get("message")
            message = (f"{js.to_string(code) if js.truthy(code) else 'unknown'}: "
                       f"{js.to_string(text) if js.truthy(text) else 'no message'}")
        elif isinstance(details, Mapping) and js.truthy(details.get("reason")):
            message = f"incomplete: {js.to_string(details['reason'])}"
        else:
            message = "Unknown error (no error details in response)"
        return fail(out, message)
    _reasoning_removals(out, data.get("input_transformations"))
    raw_usage = data.get("usage")
    if isinstance(raw_usage, Mapping):
        details = raw_usage.get("input_tokens_details")
        details = details if isinstance(details, Mapping) else {}
        cached, written = number(details.get("cached_tokens")), number(details.get("cache_write_tokens"))
        output_details = raw_usage.get("output_tokens_details")
        out["usage"] = {
            "input": max(0, number(raw_usage.get("input_tokens")) - cached - written),
            "output": number(raw_usage.get("output_tokens")),
            "cacheRead": cached,
            "cacheWrite": written,
            "reasoning": number(output_details.get("reasoning_tokens")) if isinstance(output_details, Mapping) else 0,
            "totalTokens": number(raw_usage.get("total_tokens")),
            "cost": zero_usage()["cost"],
        }
    calculate_cost(registry_cost(facts), out["usage"])
    tier = data.get("service_tier")
    multiplier = SERVICE_TIER_MULTIPLIERS.get(tier, 1) if isinstance(tier, str) else 1
    if tier in ("priority", "fast") and facts.id == "gpt-5.5":
        multiplier = 2.5
    if multiplier != 1:
        cost = out["usage"]["cost"]
        for key in ("input", "output", "cacheRead", "cacheWrite"):
            cost[key] *= multiplier
        cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    incomplete = data.get("incomplete_details")
    reason = incomplete.get("reason") if isinstance(incomplete, Mapping) else None
    reason = reason if isinstance(reason, str) else None
    if status is not None:
        out["rawStopReason"] = f"{status}.{reason}" if reason else status
    stop, error = _response_stop(status, reason)
    out["stopReason"] = stop
    if stop == "stop" and any(b["type"] == "toolCall" for b in out["content"]):
        out["stopReason"] = "toolUse"
    if stop == "error":
        return fail(out, error or "An unknown error occurred")
    return out


def _reasoning_removals(out: Json, transformations: Any) -> None:
    """pi-ai's ``appendReasoningRemovals``: the replayed reasoning items the API withheld, except
    ``turn_boundary`` removals (reported for every earlier turn by models that use only the current one's)."""
    if not isinstance(transformations, list):
        return
    removals = [t for t in transformations if isinstance(t, Mapping) and t.get("type") == "reasoning"
                and t.get("action") == "removed" and t.get("reason") != "turn_boundary"]
    if removals:
        append_diagnostic(out, "openai_input_transformations", [
            {key: t[key] for key in ("type", "id", "action", "reason") if key in t} for t in removals])


def _response_stop(status: Any, reason: str | None) -> tuple[str, str | None]:
    """pi-ai's Responses ``mapStopReason``."""
    if not js.truthy(status) or status in ("completed", "in_progress", "queued"):
        return "stop", None
    if status == "incomplete":
        if reason == "max_output_tokens":
            return "length", None
        return "error", f"Response incomplete: {reason}" if reason else "Response incomplete without a provider reason"
    if status == "cancelled":
        return "error", None
    return "error", f"Unhandled stop reason: {js.to_string(status)}"

"""The Anthropic Messages request pi-ai 1.6 builds (``api/anthropic-messages``: ``buildParams``,
``convertMessages``, ``convertTools``; SPEC 14.2), for an API key (not a Claude OAuth token), with
no thinking option and no session id (so no message threads)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sessionstore.context.system import current_tools
from sessionstore.models import js
from sessionstore.models.js_text import js_trim
from sessionstore.models.wire import JsonObject as Json
from sessionstore.payloads.facts import ModelFacts
from sessionstore.payloads.sampling import resolve_strict, tool_parameters
from sessionstore.payloads.text import (
    render_system_message_update,
    sanitize_id,
    sanitize_surrogates,
    system_message_text,
)
from sessionstore.payloads.transcript import leading_system_message, resolve_transcript
from sessionstore.payloads.transform import split_error_tool_result_images, transform_messages

ConvertTools = Callable[[Sequence[Json]], list[Json]]

FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
SERVER_SIDE_FALLBACK_BETA = "server-side-fallback-2026-07-01"
MID_CONVERSATION_OUTPUT_CONFIG_BETA = "mid-conversation-output-config-2026-07-01"
THINKING_BINDING_CONTROLS_BETA = "thinking-binding-controls-2026-08-01"
INLINE_TOOLS_BETA = "inline-tools-2026-09-15"
DEFERRED_TOOL_PLACEHOLDER: Json = {
    "name": "__pi_deferred_placeholder__",
    "description": "Reserved placeholder. Never available. Never call this.",
    "input_schema": {"type": "object", "properties": {}, "required": []},
    "defer_loading": True,
}
ACTIVE_EFFORT = "high"
"""pi-ai's effort when the caller names none (``options.effort ?? "high"``)."""
_EFFORTS = ("low", "medium", "high", "xhigh", "max")
_STRICT_UNSUPPORTED = frozenset(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                                 "maxItems", "uniqueItems", "minContains", "maxContains", "minProperties",
                                 "maxProperties"))
_STRICT_STRING_FORMATS = frozenset(("date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4",
                                    "ipv6", "uuid"))


def compat(model: ModelFacts) -> Json:
    """pi-ai's ``getAnthropicCompat`` (the flags that shape a payload)."""
    raw = model.compat
    return {
        "supportsEagerToolInputStreaming": raw.get("supportsEagerToolInputStreaming", True),
        "supportsLongCacheRetention": raw.get("supportsLongCacheRetention", True),
        "supportsCacheControlOnTools": raw.get("supportsCacheControlOnTools", True),
        "supportsTemperature": raw.get("supportsTemperature", True),
        "allowEmptySignature": raw.get("allowEmptySignature", False),
        "supportsStrictTools": raw.get("supportsStrictTools", False),
        "supportsMidConvoSystemMessages": raw.get("supportsMidConvoSystemMessages", False),
        "supportsMidConvoToolChanges": raw.get("supportsMidConvoToolChanges", False),
    }


def normalize_tool_call_id(tool_call_id: str, _source: Json) -> str:
    """Anthropic's id pattern ``^[a-zA-Z0-9_-]+$``, at most 64 characters."""
    return sanitize_id(tool_call_id)[:64]


def _image(block: Mapping[str, Any]) -> Json:
    return {"type": "image", "source": js.obj(("type", "base64"), ("media_type", block.get("mimeType", js.MISSING)),
                                              ("data", block.get("data", js.MISSING)))}


def _result_content(content: Sequence[Json]) -> Any:
    """pi-ai's ``convertContentBlocks``: texts only -> one string; else blocks, a caption first when no text."""
    if not any(js.get(block, "type") == "image" for block in content):
        return sanitize_surrogates("\n".join(_join_part(block.get("text")) for block in content))
    blocks = [{"type": "text", "text": sanitize_surrogates(block["text"])} if block.get("type") == "text"
              else _image(block) for block in content]
    if not any(block["type"] == "text" for block in blocks):
        blocks.insert(0, {"type": "text", "text": "(see attached image)"})
    return blocks


def _join_part(value: Any) -> str:
    """An element as ``Array#join`` writes it (``null`` and ``undefined`` as nothing)."""
    return "" if value is None else js.to_string(value)


def _tool_result(message: Json, content: Sequence[Json]) -> Json:
    return js.obj(("type", "tool_result"), ("tool_use_id", message.get("toolCallId", js.MISSING)),
                  ("content", _result_content(content)), ("is_error", message.get("isError", js.MISSING)))


def _assistant_blocks(message: Json, allow_empty_signature: bool) -> list[Json]:
    blocks: list[Json] = []
    for block in message["content"]:
        kind = js.get(block, "type")
        if kind == "text":
            if len(js_trim(block["text"])) > 0:
                blocks.append({"type": "text", "text": sanitize_surrogates(block["text"])})
        elif kind == "thinking":
            signature = block.get("thinkingSignature", js.MISSING)
            if js.truthy(block.get("redacted", js.MISSING)):
                blocks.append(js.obj(("type", "redacted_thinking"), ("data", signature)))
                continue
            signed = js.truthy(signature) and len(js_trim(signature)) > 0
            thinking = block.get("thinking", "")
            if len(js_trim(thinking)) == 0 and not signed:
                continue
            if signed:
                blocks.append({"type": "thinking", "thinking": sanitize_surrogates(thinking), "signature": signature})
            elif allow_empty_signature:
                blocks.append({"type": "thinking", "thinking": sanitize_surrogates(thinking), "signature": ""})
            else:
                blocks.append({"type": "text", "text": sanitize_surrogates(thinking)})
        elif kind == "toolCall":
            arguments = block.get("arguments")
            blocks.append(js.obj(("type", "tool_use"), ("id", block.get("id", js.MISSING)),
                                 ("name", block.get("name", js.MISSING)),
                                 ("input", {} if arguments is None else arguments)))
    return blocks


def _system_blocks(message: Json, convert_tool_definitions: ConvertTools | None) -> list[Json]:
    text = render_system_message_update(message)
    blocks: list[Json] = [{"type": "text", "text": sanitize_surrogates(text)}] if text else []
    if convert_tool_definitions is not None:
        added = list(message.get("toolsAdded") or [])
        redefined = {tool.get("name") for tool in added}
        for tool in message.get("toolsRemoved") or []:
            if tool.get("name") not in redefined:
                blocks.append({"type": "tool_removal", "tool": {"type": "tool_reference", "name": tool.get("name")}})
        for definition in convert_tool_definitions(added):
            blocks.append({"type": "tool_addition", "tool": {"type": "tool_definition", "definition": definition}})
    return blocks


def convert_messages(messages: Sequence[Json], *, cache_control: Json | None, allow_empty_signature: bool,
                     managed_provider: str | None = None,
                     convert_tool_definitions: ConvertTools | None = None) -> tuple[list[Json], dict[int, str]]:
    """pi-ai's ``convertMessages``: the request's messages, and the effort each replayed assistant turn of
    ``managed_provider`` ran at (by index)."""
    params: list[Json] = []
    levels: dict[int, str] = {}
    held_system: list[Json] = []  # later system messages land right before the next assistant turn sent
    i = 0
    while i < len(messages):
        message = messages[i]
        role = message.get("role")
        if role == "system":
            blocks = _system_blocks(message, convert_tool_definitions)
            if blocks:
                held_system.append({"role": "system", "content": blocks})
        elif role == "user":
            content = message["content"]
            if isinstance(content, str):
                if len(js_trim(content)) > 0:
                    params.append({"role": "user", "content": sanitize_surrogates(content)})
            else:
                converted = [{"type": "text", "text": sanitize_surrogates(item["text"])} if item.get("type") == "text"
                             else _image(item) for item in content]
                kept = [b for b in converted if b["type"] != "text" or len(js_trim(b["text"])) > 0]
                if kept:
                    params.append({"role": "user", "content": kept})
        elif role == "assistant":
            blocks = _assistant_blocks(message, allow_empty_signature)
            if blocks:
                params.extend(held_system)
                held_system.clear()
                if (managed_provider is not None and message.get("api") == "anthropic-messages"
                        and message.get("provider") == managed_provider
                        and message.get("providerThinkingLevel") in _EFFORTS):
                    levels[len(params)] = message["providerThinkingLevel"]
                params.append({"role": "assistant", "content": blocks})
        elif role == "toolResult":
            results: list[Json] = []
            error_images: list[Json] = []
            while i < len(messages) and messages[i].get("role") == "toolResult":
                result = messages[i]
                split = split_error_tool_result_images(result)
                results.append(_tool_result(result, split[0] if split else result["content"]))
                if split:
                    error_images.append({"type": "text", "text": split[1]})
                    error_images.extend(_image(image) for image in split[2])
                i += 1
            i -= 1
            params.append({"role": "user", "content": [*results, *error_images]})
        i += 1
    params.extend(held_system)
    if cache_control is not None and params and params[-1]["role"] in ("user", "system"):
        last = params[-1]
        if isinstance(last["content"], list):
            if last["content"] and last["content"][-1].get("type") in (
                    "text", "image", "tool_result", "tool_addition", "tool_removal"):
                last["content"][-1] = {**last["content"][-1], "cache_control": cache_control}
        elif isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"], "cache_control": cache_control}]
    return params, levels


def _strict_unsupported(key: str, value: Any) -> bool:
    if key in _STRICT_UNSUPPORTED:
        return True
    if key == "minItems":
        return value not in (0, 1) or isinstance(value, bool)
    if key == "format":
        return not isinstance(value, str) or value not in _STRICT_STRING_FORMATS
    return False


def convert_tools(tools: Sequence[Json], *, eager_input_streaming: bool, strict_tools: bool,
                  cache_control: Json | None) -> list[Json]:
    """pi-ai's ``convertTools``: the input schema keeps only what Anthropic accepts at its root."""
    out = []
    for index, tool in enumerate(tools):
        strict = resolve_strict(tool, strict_tools, _strict_unsupported)
        schema = tool_parameters(tool, strict)
        schema = schema if isinstance(schema, Mapping) else {}
        properties, required = schema.get("properties"), schema.get("required")
        legacy = {"type": "object", "properties": {} if properties is None else properties,
                  "required": [] if required is None else required}
        for key in ("additionalProperties", "$defs", "definitions"):
            if key in schema:
                legacy[key] = schema[key]
        input_schema = {**schema, **legacy} if strict is True else legacy
        out.append(js.obj(
            ("name", tool.get("name", js.MISSING)), ("description", tool.get("description", js.MISSING)),
            ("eager_input_streaming", True if eager_input_streaming else js.MISSING),
            ("strict", True if strict is True else js.MISSING), ("input_schema", input_schema),
            ("cache_control", cache_control if cache_control is not None and index == len(tools) - 1 else js.MISSING),
        ))
    return out


def _cache_control(model: ModelFacts, cache_retention: str) -> Json | None:
    if cache_retention == "none":
        return None
    long = cache_retention == "long" and compat(model)["supportsLongCacheRetention"]
    return {"type": "ephemeral", "ttl": "1h"} if long else {"type": "ephemeral"}


def build_request(model: ModelFacts, messages: Sequence[Json], *, max_tokens: int | None = None,
                  temperature: float | None = None, cache_retention: str = "short") -> Json:
    """pi-ai's ``buildParams`` for a transcript (a leading system message holds the prompt and tools)."""
    flags = compat(model)
    messages = resolve_transcript(messages, mid_conversation_system_messages=flags["supportsMidConvoSystemMessages"])
    cache_control = _cache_control(model, cache_retention)
    initial = leading_system_message(messages)
    initial_text = system_message_text(initial) if initial is not None else ""
    transformed = transform_messages(messages, model, normalize_tool_call_id)
    conversation = transformed[1:] if initial is not None else transformed

    def convert_definitions(tools: Sequence[Json], tool_cache_control: Json | None = None) -> list[Json]:
        return convert_tools(tools, eager_input_streaming=flags["supportsEagerToolInputStreaming"],
                             strict_tools=flags["supportsStrictTools"], cache_control=tool_cache_control)

    initial_tools = list((initial or {}).get("toolsAdded") or [])
    native_tool_changes = (flags["supportsMidConvoSystemMessages"] and flags["supportsMidConvoToolChanges"]
                           and len(initial_tools) > 0)
    effort_messages = model.compat.get("supportsMidConvoEffort") is True
    converted, levels = convert_messages(
        conversation, cache_control=cache_control, allow_empty_signature=flags["allowEmptySignature"],
        managed_provider=model.provider if effort_messages else None,
        convert_tool_definitions=convert_definitions if native_tool_changes else None)
    tools = current_tools(messages)
    fallbacks = model.compat.get("allowedFallbackModels") or []
    betas = []
    if tools and not flags["supportsEagerToolInputStreaming"]:
        betas.append(FINE_GRAINED_TOOL_STREAMING_BETA)
    if fallbacks:
        betas.append(SERVER_SIDE_FALLBACK_BETA)
    if effort_messages:
        betas += [MID_CONVERSATION_OUTPUT_CONFIG_BETA, THINKING_BINDING_CONTROLS_BETA]
    if native_tool_changes:
        betas.append(INLINE_TOOLS_BETA)
    params: Json = {
        "model": model.id,
        "messages": _with_effort_messages(converted, levels) if effort_messages else converted,
        "max_tokens": max_tokens if max_tokens is not None else model.max_tokens,
        "stream": True,
    }
    if betas:
        params["betas"] = list(dict.fromkeys(betas))
    if initial_text:
        params["system"] = [js.obj(("type", "text"), ("text", sanitize_surrogates(initial_text)),
                                   ("cache_control", cache_control if cache_control is not None else js.MISSING))]
    if temperature is not None and not effort_messages and flags["supportsTemperature"]:
        params["temperature"] = temperature
    tool_cache_control = cache_control if flags["supportsCacheControlOnTools"] else None
    if native_tool_changes:
        params["tools"] = [*convert_definitions(initial_tools, tool_cache_control), DEFERRED_TOOL_PLACEHOLDER]
    elif tools:
        params["tools"] = convert_definitions(tools, tool_cache_control)
    if effort_messages:
        params["thinking"] = {"type": "adaptive", "display": "summarized",
                              "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
        params["output_config"] = {"effort": "low"}
    if fallbacks:
        params["fallbacks"] = [{"model": fallback.get("model")} for fallback in fallbacks]
    return params


def _with_effort_messages(messages: list[Json], levels: dict[int, str]) -> list[Json]:
    """pi-ai's ``insertThinkingLevelMessages``: each replayed turn's effort before it, the active one last."""
    out: list[Json] = []
    for index, message in enumerate(messages):
        if index in levels:
            out.append({"role": "system", "content": [], "output_config": {"effort": levels[index]}})
        out.append(message)
    out.append({"role": "system", "content": [], "output_config": {"effort": ACTIVE_EFFORT}})
    return out

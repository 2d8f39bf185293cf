"""The OpenAI Responses request pi-ai 1.6 builds (``api/openai-responses``: ``getCompat``,
``buildParams``; ``api/openai-responses-shared``: ``convertResponsesMessages``,
``convertResponsesTools``; SPEC 14.4), for an OpenAI API key (not a ChatGPT sign-in), with no
reasoning option and no session id."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sessionstore.errors import InvalidInputError
from sessionstore.models import js
from sessionstore.models.js_text import js_trim
from sessionstore.models.wire import JsonObject as Json
from sessionstore.payloads.facts import ModelFacts
from sessionstore.payloads.sampling import (
    grammar_input_properties,
    grammar_tool_input,
    resolve_grammar,
    resolve_strict,
    tool_parameters,
)
from sessionstore.payloads.text import (
    js_length,
    render_system_message_update,
    sanitize_id,
    sanitize_surrogates,
    short_hash,
    system_message_text,
)
from sessionstore.payloads.transcript import (
    ToolSupport,
    declared_tools,
    resolve_transcript,
    resolve_transcript_tools,
)
from sessionstore.payloads.transform import transform_messages
from sessionstore.wire.jsjson import js_dumps

TOOL_CALL_PROVIDERS = frozenset(("openai", "openai-codex", "opencode"))
"""Providers whose ``call|item`` tool-call ids are kept as two parts (pi-ai's ``OPENAI_TOOL_CALL_PROVIDERS``)."""
INCREMENTAL_TOOLS_NOTICE = (
    "This is an incremental tools update. Previously declared tools remain available unless explicitly marked "
    "unavailable. A tool declared again here is available again, and its latest definition replaces the earlier one."
)


def compat(model: ModelFacts) -> Json:
    """pi-ai's ``getCompat`` for the Responses API (the flags that shape a payload)."""
    raw = model.compat
    return {
        "supportsMidConvoSystemMessages": raw.get("supportsMidConvoSystemMessages", False),
        "supportsLongCacheRetention": raw.get("supportsLongCacheRetention", True),
        "supportsStrictMode": raw.get("supportsStrictMode", False),
        "supportsOpenAIGrammarTools": raw.get("supportsOpenAIGrammarTools", False),
        "supportsAdditionalTools": raw.get("supportsAdditionalTools", False),
        "supportsToolSearch": raw.get("supportsToolSearch", False),
        "supportsExplicitPromptCacheMode": raw.get("supportsExplicitPromptCacheMode", False),
        "supportsMaxOutputTokens": raw.get("supportsMaxOutputTokens", True),
    }


def tool_support(flags: Json) -> ToolSupport:
    """pi-ai's ``getResponsesToolSupport``."""
    if flags["supportsMidConvoSystemMessages"] and flags["supportsAdditionalTools"]:
        return "changes"
    return "additions" if flags["supportsToolSearch"] else "none"


def _id_part(part: str) -> str:
    return sanitize_id(part)[:64].rstrip("_")


def _normalizer(model: ModelFacts) -> Any:
    def normalize(tool_call_id: str, source: Json) -> str:
        if model.provider not in TOOL_CALL_PROVIDERS or "|" not in tool_call_id:
            return _id_part(tool_call_id)
        parts = tool_call_id.split("|")
        foreign = source.get("provider") != model.provider or source.get("api") != model.api
        item_id = f"fc_{short_hash(parts[1])}"[:64] if foreign else _id_part(parts[1])
        if not item_id.startswith("fc_"):
            item_id = _id_part(f"fc_{item_id}")
        return f"{_id_part(parts[0])}|{item_id}"
    return normalize


def _text_signature(signature: Any) -> tuple[str, Any]:
    """pi-ai's ``parseTextSignature``: ``(id, phase)`` of a ``{v: 1, id, phase?}`` JSON or a plain id."""
    if isinstance(signature, str) and signature.startswith("{"):
        try:
            parsed = json.loads(signature)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("v") == 1 and isinstance(parsed.get("id"), str):
            phase = parsed.get("phase")
            return parsed["id"], phase if phase in ("commentary", "final_answer") else js.MISSING
    return signature, js.MISSING


def _tool_result_output(model: ModelFacts, content: Sequence[Json]) -> Any:
    text = "\n".join(str(b.get("text", "")) for b in content if js.get(b, "type") == "text")
    images = [b for b in content if js.get(b, "type") == "image"]
    has_text = len(js_trim(text)) > 0
    if not images or not model.images:
        return sanitize_surrogates(text if has_text else "(see attached image)" if images else "(no tool output)")
    output: list[Json] = [{"type": "input_text", "text": sanitize_surrogates(text)}] if has_text else []
    output.extend({"type": "input_image", "detail": "auto", "image_url": _data_url(image)} for image in images)
    return output


def _data_url(block: Mapping[str, Any]) -> str:
    mime_type, data = js.to_string(block.get("mimeType", js.MISSING)), js.to_string(block.get("data", js.MISSING))
    return f"data:{mime_type};base64,{data}"


def convert_tools(tools: Sequence[Json], flags: Json, *, tool_search_result: bool = False) -> list[Json]:
    """pi-ai's ``convertResponsesTools`` (``strict: false`` unless a tool asks for strict sampling)."""
    out = []
    for tool in tools:
        deferred = True if tool_search_result else js.MISSING
        grammar = resolve_grammar(tool, bool(flags["supportsOpenAIGrammarTools"]))
        if grammar is not None:
            out.append(js.obj(("type", "custom"), ("name", tool.get("name", js.MISSING)),
                              ("description", tool.get("description", js.MISSING)),
                              ("format", {"type": "grammar", "syntax": grammar.format,
                                          "definition": grammar.definition}), ("defer_loading", deferred)))
            continue
        strict = resolve_strict(tool, bool(flags["supportsStrictMode"]))
        strict_value = strict if strict is not None else False
        out.append(js.obj(("type", "function"), ("name", tool.get("name", js.MISSING)),
                          ("description", tool.get("description", js.MISSING)),
                          ("parameters", tool_parameters(tool, strict_value is True)), ("defer_loading", deferred),
                          ("strict", strict_value if flags["supportsStrictMode"] else js.MISSING)))
    return out


def convert_messages(model: ModelFacts, messages: Sequence[Json], flags: Json) -> list[Json]:
    """pi-ai's ``convertResponsesMessages`` for the model's own provider."""
    messages = resolve_transcript(messages, mid_conversation_system_messages=flags["supportsMidConvoSystemMessages"])
    grammar = grammar_input_properties(declared_tools(messages), bool(flags["supportsOpenAIGrammarTools"]))
    transformed = transform_messages(messages, model, _normalizer(model))
    support = tool_support(flags)
    folded = resolve_transcript_tools(messages, support).folded_system_messages
    instruction_role = "developer" if model.reasoning and model.compat.get("supportsDeveloperRole") is not False \
        else "system"
    items: list[Json] = []
    declared_additional = False
    unavailable: dict[str, None] = {}

    def add_tools(message: Json, seed: str) -> None:
        nonlocal declared_additional
        tools = list(message.get("toolsAdded") or [])
        for tool in tools:
            unavailable.pop(tool.get("name"), None)
        if not tools:
            return
        if support == "changes":
            if declared_additional:
                notice = INCREMENTAL_TOOLS_NOTICE
                if unavailable:
                    notice += f"\nStill unavailable: {', '.join(unavailable)}."
                items.append({"role": instruction_role, "content": notice})
            declared_additional = True
            items.append({"type": "additional_tools", "role": "developer", "tools": convert_tools(tools, flags)})
        elif support == "additions":
            names = [js.to_string(tool.get("name", js.MISSING)) for tool in tools]
            call_id = "pi_tool_load_" + short_hash(seed + ":" + ",".join(names))
            items.append({"type": "tool_search_call", "call_id": call_id, "execution": "client",
                          "status": "completed", "arguments": {"query": " ".join(names), "limit": len(names)}})
            items.append({"type": "tool_search_output", "call_id": call_id, "execution": "client",
                          "status": "completed", "tools": convert_tools(tools, flags, tool_search_result=True)})

    msg_index = 0
    system_index = 0
    for source_index, message in enumerate(transformed):
        role = message.get("role")
        leading = source_index == 0 and role == "system"
        if role == "system":
            anchors = system_index >= folded
            system_index += 1
            if anchors:
                add_tools(message, f"system:{msg_index}")
            parts = [system_message_text(message) if leading else render_system_message_update(message)]
            if anchors:
                added = {tool.get("name") for tool in message.get("toolsAdded") or []}
                removed = [tool.get("name") for tool in message.get("toolsRemoved") or []
                           if tool.get("name") not in added]
                if removed:
                    parts.append("The following tools are no longer available. Do not call them:\n"
                                 + "\n".join(f"- {name}" for name in removed))
                unavailable.update(dict.fromkeys(removed))
            text = "\n\n".join(part for part in parts if part)
            if text:
                items.append({"role": instruction_role, "content": sanitize_surrogates(text)})
        elif role == "user":
            content = message["content"]
            if isinstance(content, str):
                part = {"type": "input_text", "text": sanitize_surrogates(content)}
                items.append({"role": "user", "content": [part]})
            else:
                if not content:
                    continue
                items.append({"role": "user", "content": [
                    {"type": "input_text", "text": sanitize_surrogates(item["text"])} if item.get("type") == "text"
                    else {"type": "input_image", "detail": "auto", "image_url": _data_url(item)} for item in content]})
        elif role == "assistant":
            output = _assistant_items(message, model, msg_index, grammar)
            if not output:
                continue
            items.extend(output)
        elif role == "toolResult":
            call_id = str(message.get("toolCallId")).split("|")[0]
            kind = "custom_tool_call_output" if message.get("toolName") in grammar else "function_call_output"
            items.append({"type": kind, "call_id": call_id, "output": _tool_result_output(model, message["content"])})
        if not leading:
            msg_index += 1
    return items


def _assistant_items(message: Json, model: ModelFacts, msg_index: int, grammar: dict[str, str]) -> list[Json]:
    same_provider_and_api = message.get("provider") == model.provider and message.get("api") == model.api
    same_model = same_provider_and_api and message.get("model") == model.id
    different_model = same_provider_and_api and message.get("model") != model.id
    output: list[Json] = []
    text_index = 0
    for block in message["content"]:
        kind = js.get(block, "type")
        if kind == "thinking":
            signature = block.get("thinkingSignature")
            if js.truthy(signature):
                try:
                    output.append(json.loads(signature))
                except (TypeError, ValueError) as exc:
                    raise InvalidInputError(
                        f"a thinking signature is not JSON (pi-ai's JSON.parse throws): {exc}") from None
        elif kind == "text":
            msg_id, phase = _text_signature(block.get("textSignature"))
            fallback = f"msg_pi_{msg_index}" if text_index == 0 else f"msg_pi_{msg_index}_{text_index}"
            text_index += 1
            if not js.truthy(msg_id):
                msg_id = fallback
            elif js_length(msg_id) > 64:
                msg_id = f"msg_{short_hash(msg_id)}"
            output.append(js.obj(
                ("type", "message"), ("role", "assistant"),
                ("content", [{"type": "output_text", "text": sanitize_surrogates(block["text"]), "annotations": []}]),
                ("status", "completed"), ("id", msg_id), ("phase", phase)))
        elif kind == "toolCall":
            parts = str(block.get("id")).split("|")
            call_id, item_id = parts[0], parts[1] if len(parts) > 1 else None
            name = block.get("name")
            custom = isinstance(name, str) and name in grammar
            if different_model or item_id is None or not item_id.startswith("ctc_" if custom else "fc_"):
                item_id = None
            namespace = block.get("namespace", js.MISSING) if same_model else js.MISSING
            if custom:
                output.append(js.obj(("type", "custom_tool_call"), ("id", item_id or js.MISSING), ("call_id", call_id),
                                     ("name", name), ("input", sanitize_surrogates(grammar_tool_input(
                                         str(name), block.get("arguments"), grammar[str(name)]))),
                                     ("namespace", namespace)))
            else:
                output.append(js.obj(("type", "function_call"), ("id", item_id or js.MISSING), ("call_id", call_id),
                                     ("name", block.get("name", js.MISSING)),
                                     ("arguments", js_dumps(block["arguments"]) if "arguments" in block
                                      else js.MISSING),
                                     ("namespace", namespace)))
    return output


def build_request(model: ModelFacts, messages: Sequence[Json], *, max_tokens: int | None = None,
                  temperature: float | None = None, cache_retention: str = "short") -> Json:
    """pi-ai's ``buildParams`` for the Responses API (a leading system message holds the prompt and tools)."""
    flags = compat(model)
    messages = resolve_transcript(messages, mid_conversation_system_messages=flags["supportsMidConvoSystemMessages"])
    request_tools = resolve_transcript_tools(messages, tool_support(flags)).request_tools
    params: Json = {"model": model.id, "input": convert_messages(model, messages, flags), "stream": True}
    explicit_cache = flags["supportsExplicitPromptCacheMode"]
    long = cache_retention == "long" and flags["supportsLongCacheRetention"]
    if long and not explicit_cache:
        params["prompt_cache_retention"] = "24h"
    if explicit_cache and cache_retention == "none":
        params["prompt_cache_options"] = {"mode": "explicit"}
    elif explicit_cache and long:
        params["prompt_cache_options"] = {"ttl": "30m"}
    params["store"] = False
    if max_tokens and flags["supportsMaxOutputTokens"]:
        params["max_output_tokens"] = max(max_tokens, 16)
    if temperature is not None:
        params["temperature"] = temperature
    if request_tools:
        params["tools"] = convert_tools(request_tools, flags)
    if model.reasoning:
        off = (model.thinking_level_map or {}).get("off", js.MISSING)
        if model.provider != "github-copilot" and off is not None:
            params["reasoning"] = {"effort": "none" if off is js.MISSING else off}
        if model.provider == "xai":
            params["include"] = ["reasoning.encrypted_content"]
    return params

"""The OpenAI Chat Completions request pi-ai 1.6 builds (``api/openai-completions``: ``getCompat``,
``buildParams``, ``convertMessages``, ``convertTools``; SPEC 14.3), for OpenAI and every
OpenAI-compatible provider of its registry, with no reasoning option and no session id."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

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
    js_slice,
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

REASONING_FIELDS = ("reasoning", "reasoning_content", "reasoning_text")
TOOL_RESULT_BRIDGE = "I have processed the tool results."
TOOL_IMAGES_CAPTION = "Attached image(s) from tool result:"


def detect_compat(model: ModelFacts) -> Json:
    """pi-ai's ``detectCompat``: a provider's quirks told from its name and base URL."""
    provider, url = model.provider, model.base_url
    is_zai = provider in ("zai", "zai-coding-cn") or "api.z.ai" in url or "open.bigmodel.cn" in url
    is_together = provider == "together" or "api.together.ai" in url or "api.together.xyz" in url
    is_moonshot = provider in ("moonshotai", "moonshotai-cn") or "api.moonshot." in url
    is_openrouter = provider == "openrouter" or "openrouter.ai" in url
    is_workers_ai = provider == "cloudflare-workers-ai" or "api.cloudflare.com" in url
    is_ai_gateway = provider == "cloudflare-ai-gateway" or "gateway.ai.cloudflare.com" in url
    is_nvidia = provider == "nvidia" or "integrate.api.nvidia.com" in url
    is_ant_ling = provider == "ant-ling" or "api.ant-ling.com" in url
    is_cerebras = provider == "cerebras" or "cerebras.ai" in url
    is_deepseek = provider == "deepseek" or "deepseek.com" in url.lower()
    is_grok = provider == "xai" or "api.x.ai" in url
    non_standard = (is_nvidia or is_cerebras or is_grok or is_together or "chutes.ai" in url or is_deepseek or is_zai
                    or is_moonshot or provider == "opencode" or "opencode.ai" in url or is_workers_ai or is_ai_gateway
                    or is_ant_ling)
    max_tokens_field = ("chutes.ai" in url or is_deepseek or is_moonshot or is_ai_gateway or is_together or is_nvidia
                        or is_ant_ling or is_zai)
    thinking_format = ("deepseek" if is_deepseek else "zai" if is_zai else "together" if is_together
                       else "ant-ling" if is_ant_ling else "openrouter" if is_openrouter else "openai")
    return {
        "supportsStore": not non_standard,
        "supportsDeveloperRole": provider == "openai" or "api.openai.com" in url,
        "supportsReasoningEffort": not (is_grok or is_zai or is_moonshot or is_together or is_ai_gateway
                                        or is_nvidia or is_ant_ling),
        "supportsUsageInStreaming": True,
        "maxTokensField": "max_tokens" if max_tokens_field else "max_completion_tokens",
        "requiresToolResultName": False,
        "requiresAssistantAfterToolResult": False,
        "requiresNonNullAssistantContent": False,
        "requiresToolsWithToolHistory": False,
        "requiresThinkingAsText": False,
        "requiresReasoningContentOnAssistantMessages": is_deepseek,
        "thinkingFormat": thinking_format,
        "chatTemplateKwargs": {},
        "chatTemplateArgs": {},
        "zaiToolStream": False,
        "supportsStrictMode": False,
        "supportsOpenAIGrammarTools": False,
        "supportsMidConvoSystemMessages": False,
        "supportsMidConvoToolAdditions": False,
        "cacheControlFormat": "anthropic" if provider == "openrouter" and model.id.startswith("anthropic/") else None,
        "supportsLongCacheRetention": not (is_together or is_workers_ai or is_ai_gateway or is_nvidia or is_ant_ling),
    }


def compat(model: ModelFacts) -> Json:
    """pi-ai's ``getCompat``: the detected quirks, each overridden by the registry's ``compat`` when it names it."""
    detected = detect_compat(model)
    merged = {key: model.compat[key] if model.compat.get(key) is not None else value
              for key, value in detected.items()}
    merged["vllmPriority"] = model.compat.get("vllmPriority")
    return merged


def normalize_tool_call_id(model: ModelFacts, tool_call_id: str) -> str:
    """pi-ai's Chat Completions id rule: a Responses ``call|item`` id becomes ``call_item`` (at most 40
    characters, else the call part cut and a short hash); OpenAI's own ids are cut to 40."""
    if "|" in tool_call_id:
        call_part, item_part = tool_call_id.split("|", 1)
        call_id, item_id = sanitize_id(call_part), sanitize_id(item_part)
        combined = f"{call_id}_{item_id}" if item_id else call_id
        if len(combined) <= 40:
            return combined
        digest = short_hash(tool_call_id)[:8]
        return f"{call_id[:max(1, 40 - len(digest) - 1)]}_{digest}"
    if model.provider == "openai" and js_length(tool_call_id) > 40:
        return js_slice(tool_call_id, 40)
    return tool_call_id


def _image_url(block: Mapping[str, Any]) -> Json:
    return {"type": "image_url", "image_url": {
        "url": f"data:{js.to_string(block.get('mimeType', js.MISSING))};base64,"
               f"{js.to_string(block.get('data', js.MISSING))}"}}


def _reasoning_detail(detail: Any) -> bool:
    if not isinstance(detail, dict):
        return False
    if not (detail.get("id") is None or isinstance(detail["id"], str)):
        return False
    if "format" in detail and not isinstance(detail["format"], str):
        return False
    if "index" in detail and (not isinstance(detail["index"], int | float) or isinstance(detail["index"], bool)):
        return False
    kind = detail.get("type")
    if kind == "reasoning.summary":
        return isinstance(detail.get("summary"), str)
    if kind == "reasoning.encrypted":
        return isinstance(detail.get("data"), str)
    if kind == "reasoning.text":
        return isinstance(detail.get("text"), str) and (detail.get("signature") is None
                                                        or isinstance(detail["signature"], str))
    return False


def _parse_json(text: Any) -> Any:
    if not js.truthy(text) or not isinstance(text, str):
        return js.MISSING
    try:
        return json.loads(text)
    except ValueError:
        return js.MISSING


def _reasoning_details(signature: Any) -> list[Any] | None:
    parsed = _parse_json(signature)
    if isinstance(parsed, list) and parsed and all(_reasoning_detail(d) for d in parsed):
        return parsed
    return None


def _legacy_encrypted_detail(signature: Any) -> Any:
    parsed = _parse_json(signature)
    if (_reasoning_detail(parsed) and parsed["type"] == "reasoning.encrypted" and isinstance(parsed.get("id"), str)
            and parsed["id"] and parsed["data"]):
        return parsed
    return None


def _assistant(message: Json, model: ModelFacts, flags: Json, grammar: dict[str, str]) -> Json | None:
    bridge = flags["requiresAssistantAfterToolResult"] or flags["requiresNonNullAssistantContent"]
    out: Json = {"role": "assistant", "content": "" if bridge else None}
    blocks = message["content"]
    text_parts = [sanitize_surrogates(b["text"]) for b in blocks
                  if js.get(b, "type") == "text" and len(js_trim(b["text"])) > 0]
    text = "".join(text_parts)
    thinking = [b for b in blocks if js.get(b, "type") == "thinking"]
    calls = [b for b in blocks if js.get(b, "type") == "toolCall"]
    signed = next((d for d in (_reasoning_details(b.get("thinkingSignature")) for b in thinking) if d is not None),
                  None)
    legacy = [d for d in (_legacy_encrypted_detail(c.get("thoughtSignature")) for c in calls) if d is not None]
    preserved = signed if signed is not None else (legacy or None)
    non_empty = [b for b in thinking if len(js_trim(b.get("thinking", ""))) > 0]
    if non_empty:
        if flags["requiresThinkingAsText"]:
            thinking_text = "\n\n".join(sanitize_surrogates(b["thinking"]) for b in non_empty)
            out["content"] = [{"type": "text", "text": thinking_text},
                              *({"type": "text", "text": part} for part in text_parts)]
        else:
            if text:
                out["content"] = text
            if preserved is None:
                signature = non_empty[0].get("thinkingSignature")
                if model.provider == "opencode-go" and signature == "reasoning":
                    signature = "reasoning_content"
                if signature in REASONING_FIELDS:
                    out[signature] = "\n".join(b["thinking"] for b in non_empty)
    elif text:
        out["content"] = text
    if calls:
        out["tool_calls"] = [_tool_call(call, grammar) for call in calls]
    if preserved is not None:
        out["reasoning_details"] = preserved
    if flags["requiresReasoningContentOnAssistantMessages"] and model.reasoning and "reasoning_content" not in out:
        out["reasoning_content"] = ""
    content = out["content"]
    if not (content is not None and len(content) > 0) and "tool_calls" not in out:
        return None
    return out


def _tool_call(call: Json, grammar: dict[str, str]) -> Json:
    name = call.get("name")
    if isinstance(name, str) and name in grammar:
        return {"id": call.get("id"), "type": "custom", "custom": {
            "name": name, "input": sanitize_surrogates(grammar_tool_input(name, call.get("arguments"), grammar[name]))}}
    function = js.obj(("name", call.get("name", js.MISSING)),
                      ("arguments", js_dumps(call["arguments"]) if "arguments" in call else js.MISSING))
    return js.obj(("id", call.get("id", js.MISSING)), ("type", "function"), ("function", function))


def convert_messages(model: ModelFacts, messages: Sequence[Json], flags: Json) -> list[Json]:
    """pi-ai's ``convertMessages`` for Chat Completions."""
    messages = resolve_transcript(messages, mid_conversation_system_messages=flags["supportsMidConvoSystemMessages"])
    grammar = grammar_input_properties(declared_tools(messages), bool(flags["supportsOpenAIGrammarTools"]))
    transformed = transform_messages(messages, model, lambda tool_call_id, _source: normalize_tool_call_id(
        model, tool_call_id))
    folded = resolve_transcript_tools(messages, _tool_support(flags)).folded_system_messages
    instruction_role = "developer" if model.reasoning and flags["supportsDeveloperRole"] else "system"
    params: list[Json] = []
    last_role: str | None = None
    system_index = 0
    i = 0
    while i < len(transformed):
        message = transformed[i]
        role = message.get("role")
        if flags["requiresAssistantAfterToolResult"] and last_role == "toolResult" and role == "user":
            params.append({"role": "assistant", "content": TOOL_RESULT_BRIDGE})
        if role == "system":
            added = list(message.get("toolsAdded") or []) if system_index >= folded else []
            system_index += 1
            if added:
                params.append({"role": "system", "tools": convert_tools(added, flags)})
            text = system_message_text(message) if i == 0 else render_system_message_update(message)
            if text:
                params.append({"role": instruction_role, "content": sanitize_surrogates(text)})
        elif role == "user":
            content = message["content"]
            if isinstance(content, str):
                params.append({"role": "user", "content": sanitize_surrogates(content)})
            else:
                parts = [{"type": "text", "text": sanitize_surrogates(item["text"])} if item.get("type") == "text"
                         else _image_url(item) for item in content
                         if item.get("type") != "text" or len(item["text"]) > 0]
                if not parts:
                    i += 1
                    continue
                params.append({"role": "user", "content": parts})
        elif role == "assistant":
            converted = _assistant(message, model, flags, grammar)
            if converted is None:
                i += 1
                continue
            params.append(converted)
        elif role == "toolResult":
            images: list[Json] = []
            while i < len(transformed) and transformed[i].get("role") == "toolResult":
                result = transformed[i]
                text = "\n".join(str(b.get("text", "")) for b in result["content"] if js.get(b, "type") == "text")
                has_images = any(js.get(b, "type") == "image" for b in result["content"])
                shown = text if len(js_trim(text)) > 0 else "(see attached image)" if has_images else "(no tool output)"
                tool_message: Json = {"role": "tool", "content": sanitize_surrogates(shown),
                                      "tool_call_id": result.get("toolCallId")}
                if flags["requiresToolResultName"] and js.truthy(result.get("toolName", js.MISSING)):
                    tool_message["name"] = result["toolName"]
                params.append(tool_message)
                if has_images and model.images:
                    images.extend(_image_url(b) for b in result["content"] if js.get(b, "type") == "image")
                i += 1
            if images:
                if flags["requiresAssistantAfterToolResult"]:
                    params.append({"role": "assistant", "content": TOOL_RESULT_BRIDGE})
                params.append({"role": "user", "content": [{"type": "text", "text": TOOL_IMAGES_CAPTION}, *images]})
                last_role = "user"
            else:
                last_role = "toolResult"
            continue
        last_role = role
        i += 1
    return params


def convert_tools(tools: Sequence[Json], flags: Json) -> list[Json]:
    """pi-ai's ``convertTools`` for Chat Completions (``strict: false`` unless a tool asks for strict sampling)."""
    out = []
    for tool in tools:
        grammar = resolve_grammar(tool, bool(flags["supportsOpenAIGrammarTools"]))
        if grammar is not None:
            out.append({"type": "custom", "custom": js.obj(
                ("name", tool.get("name", js.MISSING)), ("description", tool.get("description", js.MISSING)),
                ("format", {"type": "grammar", "grammar": {"syntax": grammar.format,
                                                            "definition": grammar.definition}}))})
            continue
        supports_strict = flags["supportsStrictMode"] is not False
        strict = resolve_strict(tool, supports_strict)
        out.append({"type": "function", "function": js.obj(
            ("name", tool.get("name", js.MISSING)), ("description", tool.get("description", js.MISSING)),
            ("parameters", tool_parameters(tool, strict)),
            ("strict", (strict if strict is not None else False) if supports_strict else js.MISSING))})
    return out


def _tool_support(flags: Json) -> ToolSupport:
    return "additions" if flags["supportsMidConvoSystemMessages"] is True and flags[
        "supportsMidConvoToolAdditions"] is True else "none"


def _chat_template_values(model: ModelFacts, values: Any) -> Json | None:
    """pi-ai's ``buildChatTemplateValues`` with reasoning off."""
    resolved: Json = {}
    for key, value in (values or {}).items():
        if not isinstance(value, Mapping):
            resolved[key] = value
            continue
        if value.get("omitWhenOff") or value.get("$var") in ("thinking.enabled", "thinking.budget"):
            if value.get("$var") == "thinking.enabled" and not value.get("omitWhenOff"):
                resolved[key] = False
            continue
        off = (model.thinking_level_map or {}).get("off", js.MISSING)
        if isinstance(off, str):
            resolved[key] = off
    return resolved or None


def _thinking_off(model: ModelFacts, flags: Json, params: Json) -> None:
    """The reasoning fields of pi-ai's ``buildParams`` when the caller asks for no reasoning."""
    if not model.reasoning:
        return
    level_map = model.thinking_level_map or {}
    off = level_map.get("off", js.MISSING)
    thinking_format = flags["thinkingFormat"]
    if thinking_format == "zai":
        params["thinking"] = {"type": "disabled"}
    elif thinking_format == "qwen":
        params["enable_thinking"] = False
    elif thinking_format == "qwen-chat-template":
        params["chat_template_kwargs"] = {"enable_thinking": False, "preserve_thinking": True}
    elif thinking_format == "chat-template":
        values = _chat_template_values(model, flags["chatTemplateKwargs"])
        if values is not None:
            params["chat_template_kwargs"] = values
    elif thinking_format == "baseten":
        values = _chat_template_values(model, flags["chatTemplateArgs"])
        if values is not None:
            params["chat_template_args"] = values
        if flags["supportsReasoningEffort"] and isinstance(off, str):
            params["reasoning_effort"] = off
    elif thinking_format == "deepseek":
        if off is not None:
            params["thinking"] = {"type": "disabled"}
    elif thinking_format == "openrouter":
        if off is not None:
            params["reasoning"] = {"effort": "none" if off is js.MISSING else off}
    elif thinking_format == "together":
        params["reasoning"] = {"enabled": False}
    elif thinking_format == "string-thinking":
        if off is not None:
            params["thinking"] = "none" if off is js.MISSING else off
    elif flags["supportsReasoningEffort"] and isinstance(off, str):
        params["reasoning_effort"] = off


def _add_cache_control(message: Json, cache_control: Json) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return False
        message["content"] = [{"type": "text", "text": content, "cache_control": cache_control}]
        return True
    if not isinstance(content, list):
        return False
    for index in range(len(content) - 1, -1, -1):
        if js.get(content[index], "type") == "text":
            content[index] = {**content[index], "cache_control": cache_control}
            return True
    return False


def _apply_anthropic_cache_control(messages: list[Json], tools: list[Json] | None, cache_control: Json) -> None:
    for message in messages:
        if message["role"] in ("system", "developer"):
            _add_cache_control(message, cache_control)
            break
    if tools:
        tools[-1] = {**tools[-1], "cache_control": cache_control}
    for message in reversed(messages):
        if message["role"] in ("user", "assistant", "tool") and _add_cache_control(message, cache_control):
            break


def _has_tool_history(messages: Sequence[Json]) -> bool:
    return any(m.get("role") == "toolResult" or (m.get("role") == "assistant" and any(
        js.get(b, "type") == "toolCall" for b in m.get("content") or [])) for m in messages)


def build_request(model: ModelFacts, messages: Sequence[Json], *, max_tokens: int | None = None,
                  temperature: float | None = None, cache_retention: str = "short") -> Json:
    """pi-ai's ``buildParams`` for a transcript (a leading system message holds the prompt and tools)."""
    flags = compat(model)
    messages = resolve_transcript(messages, mid_conversation_system_messages=flags["supportsMidConvoSystemMessages"])
    request_tools = resolve_transcript_tools(messages, _tool_support(flags)).request_tools
    converted = convert_messages(model, messages, flags)
    cache_control: Json | None = None
    if flags["cacheControlFormat"] == "anthropic" and cache_retention != "none":
        long = cache_retention == "long" and flags["supportsLongCacheRetention"]
        cache_control = {"type": "ephemeral", "ttl": "1h"} if long else {"type": "ephemeral"}
    params: Json = {"model": model.id, "messages": converted, "stream": True}
    if cache_retention == "long" and flags["supportsLongCacheRetention"]:
        params["prompt_cache_retention"] = "24h"
    if flags["supportsUsageInStreaming"] is not False:
        params["stream_options"] = {"include_usage": True}
    if flags["supportsStore"]:
        params["store"] = False
    if max_tokens:
        params["max_tokens" if flags["maxTokensField"] == "max_tokens" else "max_completion_tokens"] = max_tokens
    if temperature is not None:
        params["temperature"] = temperature
    if request_tools:
        params["tools"] = convert_tools(request_tools, flags)
        if flags["zaiToolStream"]:
            params["tool_stream"] = True
    elif flags["requiresToolsWithToolHistory"] and _has_tool_history(messages):
        params["tools"] = []
    if cache_control is not None:
        _apply_anthropic_cache_control(converted, params.get("tools"), cache_control)
    if flags["vllmPriority"] is not None:
        params["priority"] = flags["vllmPriority"]
    _thinking_off(model, flags, params)
    if js.truthy(model.compat.get("openRouterRouting", js.MISSING)):
        params["provider"] = model.compat["openRouterRouting"]
    routing = model.compat.get("vercelGatewayRouting", js.MISSING)
    if isinstance(routing, Mapping) and (js.truthy(js.get(routing, "only")) or js.truthy(js.get(routing, "order"))):
        gateway = {key: routing[key] for key in ("only", "order") if js.truthy(js.get(routing, key))}
        params["providerOptions"] = {"gateway": gateway}
    return params

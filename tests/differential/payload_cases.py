"""Synthetic contexts for the payload tests: each names the pi-ai rule it exercises (SPEC 14)."""

from __future__ import annotations

import json
from typing import Any

Json = dict[str, Any]

OPUS = {"provider": "anthropic", "api": "anthropic-messages", "model": "claude-opus-4-5"}
GPT52 = {"provider": "openai", "api": "openai-responses", "model": "gpt-5.2"}
GPT51 = {"provider": "openai", "api": "openai-responses", "model": "gpt-5.1"}
GPT41_OR = {"provider": "openrouter", "api": "openai-completions", "model": "openai/gpt-4.1"}
DEEPSEEK = {"provider": "deepseek", "api": "openai-completions", "model": "deepseek-v4-pro"}
PNG = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
JPEG = {"type": "image", "data": "/9j/4AAQ", "mimeType": "image/jpeg"}
LONG_RESPONSES_ID = "call_" + "Ab9+/=" * 12 + "|fc_" + "x+Y/z=" * 80
READ_TOOL = {"name": "read", "description": "Read a file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "number"}}, "required": ["path"]}}
BASH_TOOL = {"name": "bash", "description": "Run a command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"],
    "additionalProperties": False, "$defs": {"x": {"type": "string"}}}}
STRICT_TOOL = {"name": "edit", "description": "Edit",
               "constrainedSampling": {"type": "json_schema", "strict": "prefer"},
               "parameters": {"type": "object", "properties": {"path": {"type": "string"},
                                                               "old": {"type": "string"}}, "required": ["path"]}}

_clock = iter(range(1_000, 1_000_000))


def user(content: Any) -> Json:
    return {"role": "user", "content": content, "timestamp": next(_clock)}


def assistant(content: list[Json], origin: Json = OPUS, stop: str = "stop", **extra: Any) -> Json:
    usage = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    return {"role": "assistant", "content": content, **origin, "usage": usage, "stopReason": stop,
            "timestamp": next(_clock), **extra}


def call(call_id: str, name: str = "read", arguments: Any = None, **extra: Any) -> Json:
    return {"type": "toolCall", "id": call_id, "name": name,
            "arguments": {"path": "a.txt"} if arguments is None else arguments, **extra}


def result(call_id: str, content: list[Json] | None = None, name: str = "read", error: bool = False) -> Json:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name,
            "content": [{"type": "text", "text": "ok"}] if content is None else content, "isError": error,
            "timestamp": next(_clock)}


def system(content: Any, **extra: Any) -> Json:
    return {"role": "system", "content": content, **extra, "timestamp": next(_clock)}


def text(value: str, **extra: Any) -> Json:
    return {"type": "text", "text": value, **extra}


def thinking(value: str, signature: str | None = None, **extra: Any) -> Json:
    block = {"type": "thinking", "thinking": value, **extra}
    if signature is not None:
        block["thinkingSignature"] = signature
    return block


REASONING_ITEM = json.dumps({"type": "reasoning", "id": "rs_0a1", "summary": [{"type": "summary_text", "text": "s"}],
                             "encrypted_content": "gAAAA"})
REASONING_DETAILS = json.dumps([{"type": "reasoning.text", "text": "think", "format": "openai-responses-v1",
                                 "index": 0}, {"type": "reasoning.encrypted", "data": "enc", "id": "r1"}])

CONTEXTS: dict[str, Json] = {
    "thinking-signed-unsigned-blank-and-signed-empty": {"systemPrompt": "You are terse.", "messages": [
        user("hello"),
        assistant([thinking("signed thought", "EqQBCkgIARABGAIiQ"), thinking("unsigned thought"),
                   thinking("   "), thinking("", "EqSigOnly"), text("hi there")]),
        user([text("next")]),
    ]},
    "redacted-thinking": {"messages": [
        user("q"), assistant([thinking("", "opaque-redacted-payload", redacted=True), text("a")]), user("q2")]},
    "cross-model-turns": {"systemPrompt": "sys", "tools": [READ_TOOL], "messages": [
        user("start"),
        assistant([thinking("r", REASONING_ITEM), text("from gpt", textSignature=json.dumps(
            {"v": 1, "id": "msg_abc", "phase": "final_answer"})), call("call_1|fc_1", thoughtSignature="ts")],
            GPT52, "toolUse"),
        result("call_1|fc_1"),
        assistant([thinking("ds thinking", "reasoning_content"), text("from deepseek"), call("call_ds_2")],
                  DEEPSEEK, "toolUse"),
        result("call_ds_2"),
        assistant([thinking("or", REASONING_DETAILS), text("from openrouter")], GPT41_OR),
        assistant([thinking("other gpt", REASONING_ITEM), text("gpt-5.1 text", textSignature="msg_plain"),
                   call("call_9|fc_9")], GPT51, "toolUse"),
        result("call_9|fc_9"),
        assistant([thinking("claude", "EqClaude"), text("from claude"), call("toolu_01A")], OPUS, "toolUse"),
        result("toolu_01A"),
        user("go on"),
    ]},
    "long-and-pipe-tool-call-ids": {"messages": [
        user("x"),
        assistant([call(LONG_RESPONSES_ID), call("call_short|fc_short"), call("call_pipe_only|"),
                   call("id with spaces/and+signs=" * 4), call("call_😀|fc_é")], GPT52, "toolUse"),
        result(LONG_RESPONSES_ID), result("call_short|fc_short"), result("call_pipe_only|"),
        result("id with spaces/and+signs=" * 4), result("call_😀|fc_é"),
        assistant([text("done")], GPT52),
        assistant([call("toolu_" + "z" * 70)], OPUS, "toolUse"),
        result("toolu_" + "z" * 70),
    ]},
    "orphaned-calls": {"messages": [
        user("x"),
        assistant([call("toolu_a"), call("toolu_b")], OPUS, "toolUse"),
        result("toolu_b"),
        user("interrupt"),
        assistant([call("toolu_c")], OPUS, "toolUse"),
        assistant([text("again")]),
        assistant([call("toolu_d", arguments={})], OPUS, "toolUse"),
    ]},
    "aborted-and-errored-turns": {"messages": [
        user("x"),
        assistant([thinking("partial", "EqSig"), call("toolu_e")], OPUS, "aborted"),
        result("toolu_e", [text("result of an aborted call")]),
        assistant([text("partial answer")], OPUS, "error", errorMessage="boom"),
        user("retry"),
        assistant([text("")], OPUS),
        assistant([text("answer")]),
    ]},
    "images-in-user-messages-and-tool-results": {"messages": [
        user([text("look"), PNG, JPEG, text(""), text("  "), PNG]),
        user([PNG]),
        assistant([call("toolu_i1"), call("toolu_i2"), call("toolu_i3"), call("toolu_i4")], OPUS, "toolUse"),
        result("toolu_i1", [text("shot"), PNG]),
        result("toolu_i2", [PNG, JPEG]),
        result("toolu_i3", [text("failed"), PNG], error=True),
        result("toolu_i4", []),
        user([text("(image omitted: model does not support images)"), PNG]),
    ]},
    "consecutive-tool-results-and-numbers": {"tools": [READ_TOOL, BASH_TOOL], "messages": [
        user("x"),
        assistant([text("calling"),
                   call("toolu_n1", arguments={"a": 1e-7, "b": 1e21, "c": 5.0, "d": "é✓", "e": [1, 2]}),
                   call("toolu_n2", "bash", {"command": "ls | wc"}), call("toolu_n3", "bash", {})], OPUS, "toolUse"),
        result("toolu_n1", [text("line 1"), text("line 2")]),
        result("toolu_n2", [text("   ")], name="bash"),
        result("toolu_n3", [text("3")], name="bash"),
        assistant([text("  "), text("done"), text("twice")]),
    ]},
    "system-messages": {"messages": [
        system("Base prompt.", sections={"env": "cwd=/x", "style": "terse"}, toolsAdded=[READ_TOOL]),
        user("x"),
        assistant([call("toolu_s1")], OPUS, "toolUse"),
        system([text("Mid-call update.")], sections={"env": "cwd=/y", "style": None}),
        result("toolu_s1"),
        system("Added bash.", toolsAdded=[BASH_TOOL], toolsRemoved=[{"name": "read"}]),
        user("y"),
        assistant([text("ok")]),
        system("", sections={"new": "section"}),
        user("z"),
    ]},
    "null-content-surrogates-and-empty-user-text": {"systemPrompt": "p\ud800q", "messages": [
        {"role": "user", "content": None, "timestamp": 1},
        user(""),
        user("   "),
        user([text("")]),
        user("lone \udc00 surrogate and pair 😀"),
        assistant([text("reply \ud83d"), call("toolu_z", arguments={"s": "\ud800"})], OPUS, "toolUse"),
        result("toolu_z", [text("out \udfff")]),
    ]},
    "strict-tools": {"tools": [STRICT_TOOL, READ_TOOL], "messages": [user("edit")]},
    "null-and-absent-content-of-every-role": {"messages": [  # pi-ai reads null or absent content as []
        user(None),
        {"role": "user", "timestamp": next(_clock)},
        user("q"),
        {**assistant([]), "content": None},
        user("q2"),
        assistant([text("calling"), call("toolu_n1")], OPUS, "toolUse"),
        {**result("toolu_n1"), "content": None},
        {key: value for key, value in assistant([]).items() if key != "content"},
        user("end"),
    ]},
    "recorded-effort-levels": {"messages": [  # providerThinkingLevel, as record_anthropic writes it
        user("one"),
        assistant([text("at high")], OPUS, providerThinkingLevel="high"),
        user("two"),
        assistant([text("at low")], OPUS, providerThinkingLevel="low"),
        user("three"),
        assistant([text("unknown level")], OPUS, providerThinkingLevel="extreme"),
        user("four"),
        assistant([text("another provider")], GPT52, providerThinkingLevel="high"),
        user("five"),
    ]},
}

TARGETS = [
    ("anthropic", "claude-opus-4-5"),
    ("openai", "gpt-5.2"),
    ("openrouter", "openai/gpt-4.1"),
    ("deepseek", "deepseek-v4-pro"),
]
"""The issue's targets: Anthropic Messages, OpenAI Responses, Chat Completions through OpenRouter, DeepSeek."""

QUIRK_TARGETS = [
    ("anthropic", "claude-fable-5"),  # system messages in place, native tool changes, fallbacks, strict tools
    ("anthropic", "claude-fable-5-1"),  # effort markers (supportsMidConvoEffort)
    ("fireworks", "accounts/fireworks/models/deepseek-v4p1-flash"),  # empty signatures, no eager streaming
    ("openrouter", "anthropic/claude-fable-5:batch"),  # Anthropic cache control on Chat Completions
    ("fireworks", "accounts/fireworks/models/kimi-k3"),  # tool additions in system messages
    ("zai", "glm-4.7"),
    ("qwen-token-plan", "deepseek-v4-pro"),
    ("together", "deepseek-ai/DeepSeek-V4-Pro-0813"),
    ("baseten", "zai-org/GLM-5.2"),
    ("kimi-coding", "k3"),
    ("github-copilot", "gpt-5.6-luna"),  # additional_tools items
    ("openai", "gpt-5.6-luna"),  # tool search, explicit prompt cache mode
    ("xai", "grok-4.3"),
    ("openai", "gpt-4.1"),
]
"""Models whose compat flags take the other branches of pi-ai's builders."""

"""Provider responses for ``test_responses_against_pi``: the SDK-shaped files of ``fixtures/responses/``
and synthetic responses covering each rule of pi-ai 1.6's three stream functions, each with the registry
models it is recorded under (``pi_responses.mjs`` streams it to pi-ai, the port converts it whole)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.paths import ROOT

Json = dict[str, Any]

ANTHROPIC = [("anthropic", "claude-opus-4-5")]
RESPONSES = [("openai", "gpt-5.2")]
CHAT = [("openrouter", "openai/gpt-4.1"), ("deepseek", "deepseek-v4-pro")]
"""The issue's targets by api (``models.json``: anthropic-messages, openai-responses, openai-completions)."""

LONG_ID = "toolu_" + "x" * 120 + "_end"
PIPE_ID = "call_a|b|c"
EMOJI = "Weather \U0001f324\ufe0f in Z\u00fcrich \u2014 \u4e2d\u6587 ok"


@dataclass(frozen=True)
class Case:
    name: str
    provider: str
    model: str
    response: Json


# -- Anthropic Messages -------------------------------------------------------------------------------------
def anthropic(id: str, content: list[Json], stop: str | None = "end_turn", *, model: str = "claude-opus-4-5",
              usage: Json | None = None, **extra: Any) -> Json:
    return {"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": stop, "stop_sequence": None,
            "usage": usage if usage is not None else {"input_tokens": 12, "output_tokens": 34}, **extra}


def tool_use(id: str, name: str, arguments: Json) -> Json:
    return {"type": "tool_use", "id": id, "name": name, "input": arguments}


CACHE_USAGE = {"input_tokens": 2095, "output_tokens": 503, "cache_creation_input_tokens": 1200,
               "cache_read_input_tokens": 4000, "cache_creation": {"ephemeral_5m_input_tokens": 200,
                                                                   "ephemeral_1h_input_tokens": 1000},
               "service_tier": "standard", "output_tokens_details": {"thinking_tokens": 300}}

ANTHROPIC_CASES: dict[str, tuple[Json, list[tuple[str, str]]]] = {
    "text": (anthropic("msg_a1", [{"type": "text", "text": "Hello there, how can I help?", "citations": None}]),
             ANTHROPIC),
    "emoji-text": (anthropic("msg_a2", [{"type": "text", "text": EMOJI}]), ANTHROPIC),
    "thinking-signature-tools": (anthropic("msg_a3", [
        {"type": "thinking", "thinking": "Two cities, so two calls. " * 5, "signature": "EqQBCkYIBRgCKkDsig+abc=="},
        {"type": "text", "text": "Checking both."},
        tool_use(LONG_ID, "get_weather", {"location": "Paris", "units": ["c", "f"], "deep": {"a": [1, 2.5, None]}}),
        tool_use(PIPE_ID, "get_weather", {"location": EMOJI}),
        tool_use("toolu_empty", "list_files", {}),
    ], "tool_use", model="claude-opus-4-5-20251101", usage=CACHE_USAGE), ANTHROPIC),
    "redacted-thinking": (anthropic("msg_a4", [
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
        {"type": "thinking", "thinking": "", "signature": "Sig"},
        {"type": "text", "text": "Done."},
    ]), ANTHROPIC),
    "thinking-without-signature": (anthropic("msg_a5", [{"type": "thinking", "thinking": "hmm", "signature": ""},
                                                        {"type": "text", "text": ""}]), ANTHROPIC),
    "max-tokens": (anthropic("msg_a6", [{"type": "text", "text": "The long answer begins"}], "max_tokens",
                             usage={"input_tokens": 10, "output_tokens": 16, "cache_read_input_tokens": None,
                                    "cache_creation_input_tokens": None}), ANTHROPIC),
    "pause-turn": (anthropic("msg_a7", [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "weather"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        {"type": "text", "text": "Searching."},
    ], "pause_turn"), ANTHROPIC),
    "stop-sequence": (anthropic("msg_a8", [{"type": "text", "text": "Up to the stop"}], "stop_sequence",
                                stop_sequence_value="END"), ANTHROPIC),
    "refusal-explained": (anthropic("msg_a9", [{"type": "text", "text": "I can't"}], "refusal",
                                    stop_details={"type": "refusal", "category": "cyber",
                                                  "explanation": "This looks like malware."}), ANTHROPIC),
    "sensitive": (anthropic("msg_a10", [], "sensitive"), ANTHROPIC),
    "unknown-stop-reason": (anthropic("msg_a16", [{"type": "text", "text": "full"}], "model_context_window_exceeded",
                                      usage={"input_tokens": 100, "output_tokens": 40}), ANTHROPIC),
    "no-stop-reason": (anthropic("msg_a11", [{"type": "text", "text": "cut"}], None), ANTHROPIC),
    "fallback-first": (anthropic("msg_a12", [{"type": "fallback", "model": "claude-opus-4-5"},
                                             {"type": "text", "text": "After the fallback."}]), ANTHROPIC),
    "fallback-mid-output": (anthropic("msg_a13", [{"type": "text", "text": "Before"},
                                                  {"type": "fallback", "model": "claude-opus-4-5"},
                                                  {"type": "text", "text": "After"}]), ANTHROPIC),
    "fallback-model-cost": (anthropic("msg_a14", [{"type": "text", "text": "From the fallback model."}],
                                      model="claude-opus-5", usage=CACHE_USAGE),
                            [("anthropic", "claude-fable-5")]),
    "effort-model": (anthropic("msg_a17", [{"type": "text", "text": "Effort markers."}], model="claude-fable-5-1"),
                     [("anthropic", "claude-fable-5-1")]),
    "openrouter-cost": (anthropic("gen-1", [{"type": "text", "text": "Via OpenRouter."}],
                                  model="anthropic/claude-4.6-opus-20260205",
                                  usage={"input_tokens": 100, "output_tokens": 20, "cost": 0.0042, "is_byok": False}),
                        [("openrouter", "~anthropic/claude-opus-latest")]),
    "input-transformations": (anthropic("msg_a18", [{"type": "text", "text": "ok"}], input_transformations=[
        {"type": "tool_result_truncated", "path": "messages.3.content.0", "reason": "too_long"},
        {"type": "image_removed", "path": None, "reason": "unsupported"}]), ANTHROPIC),
    "input-transformations-refusal": (anthropic("msg_a19", [], "refusal", input_transformations=[
        {"type": "image_removed", "path": "messages.0", "reason": "unsupported"}]), ANTHROPIC),
    "tiered-cost": (anthropic("msg_a15", [{"type": "text", "text": "Long prompt."}], model="claude-haiku-5-5",
                              usage={"input_tokens": 150000, "output_tokens": 1000, "cache_read_input_tokens": 20000,
                                     "cache_creation_input_tokens": 0}), [("anthropic", "claude-haiku-5-5")]),
}


# -- Chat Completions -----------------------------------------------------------------------------------------
def chat(id: str, message: Json, finish: str | None = "stop", *, model: str = "openai/gpt-4.1",
         usage: Json | None = None, **choice_extra: Any) -> Json:
    completion: Json = {"id": id, "object": "chat.completion", "created": 1741570283, "model": model,
                        "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                                     "message": {"role": "assistant", **message}, **choice_extra}]}
    if usage is not None:
        completion["usage"] = usage
    return completion


def call(id: str, name: str, arguments: str) -> Json:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


CHAT_USAGE = {"prompt_tokens": 1200, "completion_tokens": 60, "total_tokens": 1260,
              "prompt_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 100},
              "completion_tokens_details": {"reasoning_tokens": 20}}
DETAILS = [
    {"type": "reasoning.text", "text": "First I think.", "signature": None, "format": "openai-responses-v1",
     "index": 0},
    {"type": "reasoning.text", "text": " Then I think more.", "signature": "sig-1", "index": 0},
    {"type": "reasoning.summary", "summary": "Thinking", "format": "openai-responses-v1", "index": 1},
    {"type": "reasoning.encrypted", "data": "gAAAAB-encrypted", "id": "rs_1", "format": "openai-responses-v1",
     "index": 2},
    {"type": "reasoning.unknown", "data": "dropped"},
]

CHAT_CASES: dict[str, tuple[Json, list[tuple[str, str]]]] = {
    "text": (chat("chatcmpl-1", {"content": "Hello! " + EMOJI, "refusal": None}, usage=CHAT_USAGE), CHAT),
    "tool-calls": (chat("chatcmpl-2", {"content": "Checking both cities.", "tool_calls": [
        call("call_abc123", "get_weather", '{"location": "Paris"}'),
        call(LONG_ID, "get_weather", '{"location": "Rome", "days": [1, 2], "x": {"y": null}}'),
        call(PIPE_ID, "read", '{"path": "a|b.txt"}'),
        call("call_noargs", "now", ""),
    ]}, "tool_calls", usage=CHAT_USAGE), CHAT),
    "tool-calls-without-content": (chat("chatcmpl-3", {"content": None, "tool_calls": [
        call("call_1", "get_weather", '{"location":"Oslo"}')]}, "tool_calls"), CHAT),
    "length": (chat("chatcmpl-4", {"content": "The long answer"}, "length",
                    usage={"prompt_tokens": 10, "completion_tokens": 16, "total_tokens": 26}), CHAT),
    "content-filter": (chat("chatcmpl-5", {"content": "I can"}, "content_filter"), CHAT),
    "unknown-finish": (chat("chatcmpl-6", {"content": "odd"}, "weird_reason"), CHAT),
    "no-finish": (chat("chatcmpl-7", {"content": "cut"}, None), CHAT),
    "function-call-finish": (chat("chatcmpl-8", {"content": "legacy"}, "function_call"), CHAT),
    "reasoning-content": (chat("chatcmpl-9", {"content": "42.", "reasoning_content": "6 times 7 is 42. " * 3},
                               model="deepseek-v4-pro",
                               usage={"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                                      "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36,
                                      "completion_tokens_details": {"reasoning_tokens": 12}}), CHAT),
    "reasoning-and-tools": (chat("chatcmpl-10", {"content": "", "reasoning_content": "Need the tool.",
                                                 "tool_calls": [call("call_00_abc", "bash", '{"cmd": "ls -la"}')]},
                                 "tool_calls", model="deepseek-v4-pro"), CHAT),
    "duplicate-reasoning-fields": (chat("chatcmpl-26", {"content": "ok", "reasoning_content": "same text here",
                                                        "reasoning": "same text here"}), CHAT),
    "reasoning-field": (chat("chatcmpl-11", {"content": "ok", "reasoning": "via reasoning"}), CHAT),
    "reasoning-text-field": (chat("chatcmpl-12", {"content": "ok", "reasoning_text": "via reasoning_text",
                                                  "reasoning_content": ""}), CHAT),
    "reasoning-details": (chat("chatcmpl-13", {"content": "ok", "reasoning": "First I think. Then I think more.",
                                               "reasoning_details": DETAILS}, usage={
        **CHAT_USAGE, "cost": 0.00123, "is_byok": False}), CHAT),
    "reasoning-details-merged-fields": (chat("chatcmpl-23", {"content": "ok", "reasoning_details": [
        {"type": "reasoning.text", "text": "a", "id": None, "format": ""},
        {"type": "reasoning.text", "text": "b"},
        {"type": "reasoning.summary", "summary": "s1"},
        {"type": "reasoning.summary", "summary": "s2", "index": 3, "format": "f", "id": "rs_9"},
        {"type": "reasoning.text", "text": "c"},
        {"type": "reasoning.text", "text": "d", "signature": "sig", "index": 1, "format": "g", "id": "rs_10"},
        {"type": "reasoning.summary", "summary": "t1"},
        {"type": "reasoning.summary", "summary": "t2", "index": 2},
        {"type": "reasoning.summary", "summary": "t3", "id": "rs_11"},  # id lands where `undefined` was put
    ]}), CHAT),
    "reasoning-details-only": (chat("chatcmpl-14", {"content": "ok", "reasoning_details": DETAILS[3:4]}), CHAT),
    "openrouter-byok": (chat("chatcmpl-15", {"content": "ok"}, usage={
        **CHAT_USAGE, "cost": 0.001, "is_byok": True,
        "cost_details": {"upstream_inference_cost": None, "upstream_inference_prompt_cost": 0.002,
                         "upstream_inference_completions_cost": 0.003}}), CHAT),
    "openrouter-byok-upstream": (chat("chatcmpl-16", {"content": "ok"}, usage={
        **CHAT_USAGE, "cost": 0.001, "is_byok": True, "cost_details": {"upstream_inference_cost": 0.02}}), CHAT),
    "kimi-cached-tokens": (chat("chatcmpl-17", {"content": "ok"}, usage={
        "prompt_tokens": 500, "completion_tokens": 5, "total_tokens": 505, "cached_tokens": 300}), CHAT),
    "choice-usage": (chat("chatcmpl-18", {"content": "ok"}, usage=None,
                          usage_in_choice={"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}), CHAT),
    "bad-arguments": (chat("chatcmpl-19", {"content": None, "tool_calls": [
        call("call_bad", "bash", '{"cmd": "ls'), call("call_array", "bash", '["ls"]'),
        call("call_nan", "write", '{"n": NaN}')]}, "tool_calls"), CHAT),
    "repairable-arguments": (chat("chatcmpl-20", {"content": None, "tool_calls": [
        call("call_ctl", "write", '{"text": "line one\nline two\ttab\x01", "path": "C:\\dir\\file \\u12"}'),
        call("call_esc", "write", '{"text": "ok \\u00e9 \\n", "bad": "\\q"}')]},
        "tool_calls"), CHAT),
    "no-choices": ({"id": "chatcmpl-25", "object": "chat.completion", "created": 1741570283, "model": "openai/gpt-4.1",
                    "choices": [], "usage": CHAT_USAGE}, CHAT),
    "other-model": (chat("chatcmpl-21", {"content": "ok"}, model="openai/gpt-4.1-2025-04-14"), CHAT),
    "opencode-go-reasoning": (chat("chatcmpl-22", {"content": "ok", "reasoning": "thinking"},
                                   model="deepseek-v4-pro"), [("opencode-go", "deepseek-v4-pro")]),
}


# -- Responses ------------------------------------------------------------------------------------------------
def response(id: str, output: list[Json], status: str = "completed", *, model: str = "gpt-5.2-2025-12-11",
             usage: Json | None = None, **extra: Any) -> Json:
    return {"id": id, "object": "response", "created_at": 1741476542, "status": status, "model": model,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": None,
            "incomplete_details": None, "output": output,
            "usage": usage if usage is not None else RESPONSES_USAGE, **extra}


def message(id: str, text: str, phase: str | None = "final_answer") -> Json:
    item: Json = {"type": "message", "id": id, "status": "completed", "role": "assistant",
                  "content": [{"type": "output_text", "text": text, "annotations": []}]}
    if phase is not None:
        item["phase"] = phase
    return item


def function_call(call_id: str, item_id: str, name: str, arguments: str, **extra: Any) -> Json:
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": arguments,
            "status": "completed", **extra}


def reasoning(id: str, summary: list[str], content: list[str] | None = None, encrypted: str | None = None) -> Json:
    item: Json = {"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": s} for s in summary]}
    if content is not None:
        item["content"] = [{"type": "reasoning_text", "text": c} for c in content]
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


RESPONSES_USAGE = {"input_tokens": 3000, "input_tokens_details": {"cached_tokens": 2048, "cache_write_tokens": 256},
                   "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": 192}, "total_tokens": 3300}

RESPONSES_CASES: dict[str, tuple[Json, list[tuple[str, str]]]] = {
    "text": (response("resp_1", [message("msg_1", "Hello! " + EMOJI)]), RESPONSES),
    "reasoning-encrypted-tools": (response("resp_2", [
        reasoning("rs_1", ["**Weather lookup**", "Call the tool for both cities."], encrypted="gAAAAABoENCRYPTED=="),
        message("msg_2", "Looking it up.", "commentary"),
        function_call("call_12345xyz", "fc_" + "f" * 200, "get_weather", '{"location":"Paris"}'),
        function_call(PIPE_ID, "fc_2", "get_weather", '{"location":"Rome","days":[1,2]}', namespace="weather"),
        function_call("call_noargs", "fc_3", "now", ""),
    ]), RESPONSES),
    "reasoning-content-only": (response("resp_3", [reasoning("rs_2", [], ["raw reasoning", "more"]),
                                                   message("msg_3", "ok", None)]), RESPONSES),
    "reasoning-empty": (response("resp_4", [reasoning("rs_3", [], encrypted="gAAAA-only"),
                                            message("msg_4", "ok")]), RESPONSES),
    "reasoning-empty-summary-texts": (response("resp_5", [reasoning("rs_4", ["", ""]), message("msg_5", "ok")]),
                                      RESPONSES),
    "refusal-part": (response("resp_6", [{"type": "message", "id": "msg_6", "status": "completed",
                                          "role": "assistant", "content": [
                                              {"type": "output_text", "text": "Partly ", "annotations": []},
                                              {"type": "refusal", "refusal": "I can't help with that."}]}]),
                     RESPONSES),
    "two-messages": (response("resp_7", [message("msg_7a", "First.", "commentary"),
                                         message("msg_7b", "Second.", "final_answer")]), RESPONSES),
    "web-search": (response("resp_8", [{"type": "web_search_call", "id": "ws_1", "status": "completed",
                                        "action": {"type": "search", "query": "weather"}},
                                       message("msg_8", "Found it.")]), RESPONSES),
    "custom-tool": (response("resp_9", [{"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_c1",
                                         "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch\n",
                                         "status": "completed"}]), RESPONSES),
    "max-output-tokens": (response("resp_10", [message("msg_10", "The long")], "incomplete",
                                   incomplete_details_value={"reason": "max_output_tokens"}), RESPONSES),
    "content-filter": (response("resp_11", [], "incomplete",
                                incomplete_details_value={"reason": "content_filter"}), RESPONSES),
    "incomplete-without-reason": (response("resp_12", [message("msg_12", "cut")], "incomplete"), RESPONSES),
    "failed": (response("resp_13", [], "failed", error_value={"code": "server_error", "message": "Boom."}),
               RESPONSES),
    "failed-odd-error": (response("resp_28", [], "failed", error_value={"code": None, "message": "", "n": True}),
                         RESPONSES),
    "failed-error-code-number": (response("resp_29", [], "failed", error_value={"code": 503, "message": True}),
                                 RESPONSES),
    "failed-incomplete-details": (response("resp_30", [message("msg_30", "partial")], "failed",
                                           incomplete_details_value={"reason": "max_output_tokens"}), RESPONSES),
    "failed-without-details": (response("resp_14", [], "failed"), RESPONSES),
    "cancelled": (response("resp_15", [message("msg_15", "stopped")], "cancelled"), RESPONSES),
    "flex-tier": (response("resp_16", [message("msg_16", "cheap")], service_tier="flex"), RESPONSES),
    "priority-tier": (response("resp_17", [message("msg_17", "fast")], service_tier="priority"), RESPONSES),
    "priority-gpt-5.5": (response("resp_18", [message("msg_18", "fast")], model="gpt-5.5",
                                  service_tier="priority"), [("openai", "gpt-5.5")]),
    "tiered-cost": (response("resp_19", [message("msg_19", "long")], model="gpt-5.5", usage={
        "input_tokens": 300000, "input_tokens_details": {"cached_tokens": 100000}, "output_tokens": 10,
        "total_tokens": 300010}), [("openai", "gpt-5.5")]),
    "unknown-status": (response("resp_22", [message("msg_22", "odd")], "weird"), RESPONSES),
    "in-progress-status": (response("resp_23", [message("msg_23", "early")], "in_progress"), RESPONSES),
    "one-empty-summary-part": (response("resp_24", [reasoning("rs_24", [""]), message("msg_24", "ok")]), RESPONSES),
    "null-usage": (response("resp_25", [message("msg_25", "ok")], usage_value=None), RESPONSES),
    "reasoning-removals": (response("resp_26", [message("msg_26", "ok")], input_transformations=[
        {"type": "reasoning", "id": "rs_old", "action": "removed", "reason": "prefix_mismatch", "extra": 1},
        {"type": "reasoning", "id": "rs_older", "action": "removed", "reason": "turn_boundary"},
        {"type": "reasoning", "action": "removed", "reason": None},
        {"type": "reasoning", "id": "rs_kept", "action": "kept", "reason": "model_mismatch"},
        {"type": "message", "id": "msg_x", "action": "removed", "reason": "prefix_mismatch"}]), RESPONSES),
    "turn-boundary-removals-only": (response("resp_27", [message("msg_27", "ok")], input_transformations=[
        {"type": "reasoning", "id": "rs_older", "action": "removed", "reason": "turn_boundary"}]), RESPONSES),
    "no-usage": (response("resp_20", [message("msg_20", "ok")], usage={}), RESPONSES),
    "bad-arguments": (response("resp_21", [function_call("call_bad", "fc_bad", "bash", '{"cmd": "ls')]), RESPONSES),
}


def _fix(response: Json) -> Json:
    """``*_value`` keywords set fields the builders also set (``stop_sequence``, ``incomplete_details``, ``error``)."""
    for key in [k for k in response if k.endswith("_value")]:
        response[key.removesuffix("_value")] = response.pop(key)
    choices = response.get("choices")
    if isinstance(choices, list) and choices and "usage_in_choice" in choices[0]:
        choices[0]["usage"] = choices[0].pop("usage_in_choice")
    return response


FIXTURE_TARGETS = {"anthropic": ANTHROPIC, "openai-chat": CHAT, "openai-responses": RESPONSES}


def fixture_cases() -> list[Case]:
    cases = []
    for path in sorted((ROOT / "fixtures" / "responses").glob("*.json")):
        prefix = next(p for p in FIXTURE_TARGETS if path.stem.startswith(p))
        for provider, model in FIXTURE_TARGETS[prefix]:
            data = json.loads(path.read_text(encoding="utf-8"))
            cases.append(Case(f"file-{path.stem}-{provider}-{model}", provider, model, data))
    return cases


def all_cases() -> list[Case]:
    cases = fixture_cases()
    for api, table in (("anthropic", ANTHROPIC_CASES), ("chat", CHAT_CASES), ("responses", RESPONSES_CASES)):
        for name, (data, targets) in table.items():
            for provider, model in targets:
                cases.append(Case(f"{api}-{name}-{provider}-{model}", provider, model,
                                  _fix(json.loads(json.dumps(data)))))
    return cases

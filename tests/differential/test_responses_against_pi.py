"""``record_anthropic``, ``record_openai_chat`` and ``record_openai_response`` record a provider response as
the AssistantMessage pi-ai 1.6's own stream functions record for it: ``pi_responses.mjs`` streams each
response of ``response_cases`` to pi-ai (as the SSE events the provider sends for it, through a stand-in
for fetch, all cases in one node process) and takes the message of its final ``done``/``error`` event;
the port converts the finished response. The two are compared field by field, then as JSON text (key
order included). The port is fed the response's JSON text here, and separately the SDK's own object.

Pinned or left out:
- ``timestamp`` is pinned: the port is given the one pi-ai stamped (``Date.now()`` at the request).
- ``durationMs`` is left out: pi-ai's event stream times the response from the stream's creation; a
  finished response carries no duration, and the port writes none.
- ``diagnostics[].timestamp`` is pinned to the message's: pi-ai stamps a diagnostic when its event
  arrives (``Date.now()``), the port with the message's timestamp (it has no later time to give).

Differences kept by design (``BY_DESIGN`` names the cases and fields, and checks that they differ only so):
- ``argumentsError`` of malformed tool-call arguments: pi-ai's text starts with V8's ``JSON.parse``
  message, the port's with Python's ``json`` message; both give ``arguments: {}`` and end with the
  received arguments (pi-ai's own "Tool arguments must be a JSON object" is matched exactly).
- An Anthropic stream that pi-ai fails before ``message_delta`` (a stop reason it does not know, whose
  ``mapStopReason`` throws; a fallback block after content): its message keeps ``message_start``'s
  output count (the API streams an early count there, 1 in ``pi_responses.mjs``). A finished
  ``Message`` has only the final usage, which the port records (``output``, ``totalTokens`` and the
  output and total cost differ; input and cache counts agree).
- From an SDK object (``test_an_sdk_object_records_what_its_json_records``): a Responses item stored as
  a reasoning signature has its keys in the order the SDK declares them, not the order they came in.

Not compared: Chat Completions tool calls that share an id. pi-ai's result then depends on how the
provider cut the stream (one call per delta merges them by id; arguments in later deltas that carry only
``index`` open a new nameless call); a finished completion does not say, and the port merges them.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessionstore.payloads import record_anthropic, record_openai_chat, record_openai_response
from sessionstore.payloads.facts import model_facts
from sessionstore.wire.jsjson import js_dumps
from tests.differential.oracle import Oracle
from tests.differential.response_cases import Case, all_cases

Json = dict[str, Any]
RESPONSES_ORACLE = Path(__file__).with_name("pi_responses.mjs")
CASES = {case.name: case for case in all_cases()}
REQUEST_PATHS = {"anthropic-messages": "/v1/messages", "openai-completions": "/chat/completions",
                 "openai-responses": "/responses"}


def run_pi_responses(oracle: Oracle, cases: list[Case]) -> list[Json]:
    request = {"cases": [{"provider": c.provider, "model": c.model, "response": c.response} for c in cases]}
    done = subprocess.run(
        [oracle.node, str(RESPONSES_ORACLE)], input=json.dumps(request), capture_output=True, text=True,
        env={"SESSIONSTORE_PI_DIR": str(oracle.pi_dir), "PATH": "/usr/bin:/bin"}, timeout=300, check=False)
    if done.returncode != 0:
        pytest.fail(f"pi_responses.mjs exited with {done.returncode}:\n{done.stderr[-4000:]}")
    results: list[Json] = json.loads(done.stdout)["results"]
    assert len(results) == len(cases)
    return results


@pytest.fixture(scope="module")
def pi(oracle: Oracle) -> dict[str, Json]:
    names = list(CASES)
    return dict(zip(names, run_pi_responses(oracle, [CASES[name] for name in names]), strict=True))


class Appender:
    """A store that keeps what ``record_*`` appends."""

    def __init__(self) -> None:
        self.appended: list[tuple[str, Json]] = []

    def append_message(self, session_id: str, message: Any, **options: Any) -> str:
        assert not options
        self.appended.append((session_id, message))
        return f"entry-{len(self.appended)}"


def sdk_object(api: str, data: Json) -> Any:
    """The response as the SDK's own model where it validates (the fixtures keep the SDKs' shapes), else None."""
    from pydantic import ValidationError
    try:
        if api == "anthropic-messages":
            from anthropic.types import Message
            return Message.model_validate(data)
        if api == "openai-completions":
            from openai.types.chat import ChatCompletion
            return ChatCompletion.model_validate(data)
        from openai.types.responses import Response
        return Response.model_validate(data)
    except ValidationError:
        return None


RECORDERS = {"anthropic-messages": record_anthropic, "openai-completions": record_openai_chat,
             "openai-responses": record_openai_response}


def ours(case: Case, api: str, timestamp: int, *, sdk: bool = False) -> Json:
    """The port's message, through ``record_*``, from the response's JSON text (or, with ``sdk``, from the
    SDK's own model of it)."""
    store = Appender()
    response = sdk_object(api, case.response) if sdk else json.dumps(case.response)
    assert response is not None
    entry = RECORDERS[api](store, "session", response, provider=case.provider, model=case.model, timestamp=timestamp)
    assert entry == "entry-1" and len(store.appended) == 1 and store.appended[0][0] == "session"
    return store.appended[0][1]


def by_design(name: str) -> tuple[set[str], Callable[[Json, Json], None] | None]:
    return next((value for prefix, value in BY_DESIGN.items() if name.startswith(prefix)), (set(), None))


def field_differences(expected: Json, got: Json) -> list[str]:
    return [f"{key}: pi-ai {expected.get(key, '<absent>')!r}, port {got.get(key, '<absent>')!r}"
            for key in dict.fromkeys([*expected, *got]) if expected.get(key, ...) != got.get(key, ...)]


@pytest.mark.parametrize("name", list(CASES))
def test_recorded_message_equals_pi_ais(name: str, pi: dict[str, Json]) -> None:
    case, result = CASES[name], pi[name]
    assert "failure" not in result, result.get("failure")
    expected = result["message"]
    api = expected["api"]
    method, _, url_path = result["request"].partition(" ")
    assert method == "POST" and url_path.endswith(REQUEST_PATHS[api]), result["request"]
    assert (result["event"] == "error") == (expected["stopReason"] == "error")
    expected.pop("durationMs", None)
    for diagnostic in expected.get("diagnostics", []):
        assert diagnostic["timestamp"] >= expected["timestamp"]
        diagnostic["timestamp"] = expected["timestamp"]
    got = ours(case, api, expected["timestamp"])
    fields, check = by_design(name)
    assert field_differences({k: v for k, v in expected.items() if k not in fields},
                             {k: v for k, v in got.items() if k not in fields}) == []
    if check is not None:
        check(expected, got)
        return
    assert js_dumps(got) == js_dumps(expected), "same fields, different key order"


NOT_AN_OBJECT = "Tool arguments must be a JSON object\n"  # pi-ai's own words, not the JSON parser's


def arguments_error_wording(expected: Json, got: Json) -> None:
    """Malformed tool-call arguments: the same blocks, except for the parser's words in ``argumentsError``."""
    assert len(got["content"]) == len(expected["content"])
    for ours_block, pi_block in zip(got["content"], expected["content"], strict=True):
        if "argumentsError" not in pi_block or pi_block["argumentsError"].startswith(NOT_AN_OBJECT):
            assert js_dumps(ours_block) == js_dumps(pi_block)
            continue
        assert ours_block["arguments"] == pi_block["arguments"] == {}
        assert list(ours_block) == list(pi_block)
        assert {k: v for k, v in ours_block.items() if k != "argumentsError"} == \
            {k: v for k, v in pi_block.items() if k != "argumentsError"}
        received = pi_block["argumentsError"].split("\n\nReceived arguments:\n", 1)[1]
        assert ours_block["argumentsError"].endswith(f"\n\nReceived arguments:\n{received}")
        assert ours_block["argumentsError"] != pi_block["argumentsError"]


def usage_of_message_start(expected: Json, got: Json) -> None:
    """pi-ai failed before ``message_delta``: its usage has ``message_start``'s output count; the rest agrees."""
    pi_usage, our_usage = expected["usage"], got["usage"]
    assert list(our_usage) == list(pi_usage)
    for key in ("input", "cacheRead", "cacheWrite", "cacheWrite1h"):
        assert our_usage[key] == pi_usage[key], key
    assert pi_usage["output"] <= 1 < our_usage["output"]
    assert our_usage["totalTokens"] - pi_usage["totalTokens"] == our_usage["output"] - pi_usage["output"]
    for key in ("input", "cacheRead", "cacheWrite", "totalFromProvider"):
        assert our_usage["cost"][key] == pi_usage["cost"][key], key


BY_DESIGN: dict[str, tuple[set[str], Callable[[Json, Json], None]]] = {
    "anthropic-unknown-stop-reason-": ({"usage"}, usage_of_message_start),
    "anthropic-fallback-mid-output-": ({"usage"}, usage_of_message_start),
    "chat-bad-arguments-": ({"content"}, arguments_error_wording),
    "responses-bad-arguments-": ({"content"}, arguments_error_wording),
}
"""Case-name prefixes whose listed fields differ by design (see the module docstring), with the check that
they differ only as stated; every other field of those messages, and of every other message, is equal."""


def signatures_parsed(message: Json) -> Json:
    """The message with each thinking signature that is JSON text replaced by its value."""
    out = json.loads(json.dumps(message))
    for block in out["content"]:
        if block["type"] == "thinking" and block.get("thinkingSignature", "")[:1] in ("{", "["):
            block["thinkingSignature"] = json.loads(block["thinkingSignature"])
    return out


SDK_CASES = [name for name, case in CASES.items()
             if sdk_object(model_facts(case.provider, case.model).api, case.response) is not None]


@pytest.mark.parametrize("name", SDK_CASES)
def test_an_sdk_object_records_what_its_json_records(name: str, pi: dict[str, Json]) -> None:
    """The same message, up to key order inside JSON signatures (by design): the SDK's ``model_dump``
    writes a Responses item's fields in the order the SDK declares them, not the order they came in
    (which pi-ai keeps in ``JSON.stringify(item)``); a parsed SDK object no longer has that order.
    Responses the SDK's types refuse (unknown stop reasons, blocks it does not know) are left out."""
    case, expected = CASES[name], pi[name]["message"]
    from_json = ours(case, expected["api"], expected["timestamp"])
    from_sdk = ours(case, expected["api"], expected["timestamp"], sdk=True)
    assert signatures_parsed(from_sdk) == signatures_parsed(from_json)
    assert [list(block) for block in from_sdk["content"]] == [list(block) for block in from_json["content"]]
    assert list(from_sdk) == list(from_json)


def test_the_cases_cover_the_rules(pi: dict[str, Json]) -> None:
    """What the comparisons above are worth: the cases reach each branch the issue names."""
    messages = [pi[name]["message"] for name in CASES]
    blocks = [block for m in messages for block in m["content"]]
    stops = {m["stopReason"] for m in messages}
    assert stops == {"stop", "length", "toolUse", "error"}
    assert {(m["api"], m["provider"], m["model"]) for m in messages} >= {
        ("anthropic-messages", "anthropic", "claude-opus-4-5"), ("openai-responses", "openai", "gpt-5.2"),
        ("openai-completions", "openrouter", "openai/gpt-4.1"), ("openai-completions", "deepseek", "deepseek-v4-pro")}
    assert any(b["type"] == "thinking" and b.get("redacted") for b in blocks)
    assert any(b["type"] == "thinking" and b.get("thinkingSignature", "").startswith("Eq") for b in blocks)
    assert any(b["type"] == "thinking" and "encrypted_content" in b.get("thinkingSignature", "") for b in blocks)
    assert any(b["type"] == "thinking" and b.get("thinkingSignature") == "reasoning_content" for b in blocks)
    assert any(b["type"] == "thinking" and b.get("thinkingSignature", "").startswith("[{") for b in blocks)
    ids = [b["id"] for b in blocks if b["type"] == "toolCall"]
    assert any(len(i) > 120 for i in ids) and any(i.count("|") >= 2 for i in ids)
    assert any(b["type"] == "toolCall" and "argumentsError" in b for b in blocks)
    assert any(m["usage"]["cacheRead"] and m["usage"]["cacheWrite"] for m in messages)
    assert any(m["usage"].get("cacheWrite1h") for m in messages)
    assert any(m["usage"]["cost"].get("totalFromProvider") for m in messages)
    assert any(m.get("errorMessage") for m in messages)
    assert any(m.get("providerThinkingLevel") for m in messages)
    assert {d["type"] for m in messages for d in m.get("diagnostics", [])} == {
        "anthropic_input_transformations", "openai_input_transformations"}

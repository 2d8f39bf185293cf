"""sessionstore.payloads without Node.js: the registry facts, the front door's inputs and refusals, and
the small rules every builder shares (the payloads themselves are compared with pi-ai's in
tests/differential/test_payloads_against_pi.py)."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import pytest

from sessionstore.errors import InvalidInputError
from sessionstore.payloads import build_payload, model_facts, registry_version
from sessionstore.payloads.text import sanitize_surrogates, short_hash
from tests.differential.payload_cases import CONTEXTS, TARGETS

Json = dict[str, Any]
MESSAGES = CONTEXTS["cross-model-turns"]["messages"]


def test_the_registry_is_pi_ais_1_6_and_names_the_issues_targets_with_their_apis() -> None:
    assert registry_version() == "1.6.0"
    apis = {target: model_facts(*target).api for target in TARGETS}
    assert apis == {
        ("anthropic", "claude-opus-4-5"): "anthropic-messages",
        ("openai", "gpt-5.2"): "openai-responses",
        ("openrouter", "openai/gpt-4.1"): "openai-completions",
        ("deepseek", "deepseek-v4-pro"): "openai-completions",
    }


def test_deepseek_v4_pro_takes_text_only_and_keeps_system_messages_in_place() -> None:
    facts = model_facts("deepseek", "deepseek-v4-pro")
    assert not facts.images
    assert facts.compat["supportsMidConvoSystemMessages"] is True
    assert facts.compat["requiresReasoningContentOnAssistantMessages"] is True


@pytest.mark.parametrize(("provider", "model"), [("nope", "x"), ("anthropic", "claude-nope")])
def test_a_model_the_registry_does_not_have_is_refused(provider: str, model: str) -> None:
    with pytest.raises(InvalidInputError, match="registry has no"):
        build_payload([], provider=provider, model=model)


def test_a_model_of_an_api_not_ported_is_refused_naming_its_api() -> None:
    with pytest.raises(InvalidInputError, match="google-generative-ai"):
        build_payload([], provider="google", model=next(iter(_google_models())))


def _google_models() -> list[str]:
    from sessionstore.payloads import model_ids

    return [m for m in model_ids("google") if model_facts("google", m).api == "google-generative-ai"]


@dataclass
class HasLlm:
    llm: list[Json]


def test_a_message_list_a_context_mapping_and_a_context_result_give_the_same_payload() -> None:
    target = {"provider": "openai", "model": "gpt-5.2"}
    from_list = build_payload(MESSAGES, system_prompt="sys", **target)
    from_mapping = build_payload({"systemPrompt": "sys", "messages": MESSAGES}, **target)
    from_result = build_payload(HasLlm(list(MESSAGES)), system_prompt="sys", **target)
    assert from_list == from_mapping == from_result
    assert from_list["input"][0] == {"role": "developer", "content": "sys"}


def test_system_prompt_and_tools_given_as_arguments_win_over_the_context_mappings() -> None:
    tool = {"name": "t", "description": "d", "parameters": {"type": "object", "properties": {}}}
    payload = build_payload({"systemPrompt": "old", "tools": [], "messages": [{"role": "user", "content": "x"}]},
                            provider="anthropic", model="claude-opus-4-5", system_prompt="new", tools=[tool])
    assert payload["system"][0]["text"] == "new"
    assert [t["name"] for t in payload["tools"]] == ["t"]


@pytest.mark.parametrize(("provider", "model"), TARGETS)
def test_building_a_payload_leaves_the_source_messages_as_they_were(provider: str, model: str) -> None:
    for context in CONTEXTS.values():
        before = copy.deepcopy(context)
        build_payload(context, provider=provider, model=model)
        assert context == before


def test_max_tokens_and_cache_retention_reach_the_anthropic_request() -> None:
    payload = build_payload([{"role": "user", "content": "x"}], provider="anthropic", model="claude-opus-4-5",
                            system_prompt="s", max_tokens=1000, cache_retention="long")
    assert payload["max_tokens"] == 1000
    assert payload["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    unchached = build_payload([{"role": "user", "content": "x"}], provider="anthropic", model="claude-opus-4-5",
                              system_prompt="s", cache_retention="none")
    assert "cache_control" not in unchached["system"][0]


def test_a_source_that_is_not_a_context_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        build_payload("hello", provider="openai", model="gpt-5.2")
    with pytest.raises(InvalidInputError):
        build_payload({"messages": "hello"}, provider="openai", model="gpt-5.2")


def test_a_responses_thinking_signature_that_is_not_json_is_refused_as_pi_ai_throws() -> None:
    turn = {"role": "assistant", "provider": "openai", "api": "openai-responses", "model": "gpt-5.2",
            "stopReason": "stop", "content": [{"type": "thinking", "thinking": "t", "thinkingSignature": "not json"}]}
    with pytest.raises(InvalidInputError, match="not JSON"):
        build_payload([turn], provider="openai", model="gpt-5.2")


@pytest.mark.parametrize(("text", "expected"), [
    ("", "k4n83c7h0j2b"), ("call_abc|fc_123", "jp01dsxufnom"), ("😀 é", "icw8kdpib8jw"), ("x" * 500, "130aesn1aldl4j"),
])
def test_short_hash_is_pi_ais_over_utf16_code_units(text: str, expected: str) -> None:
    assert short_hash(text) == expected  # the values pi-ai's shortHash prints for the same strings


def test_sanitize_surrogates_drops_lone_surrogates_and_keeps_pairs() -> None:
    assert sanitize_surrogates("a\ud800b\udc00c😀\ud83d\ude00") == "abc😀\ud83d\ude00"


@pytest.mark.parametrize(("source", "options", "expected"), [
    ({"messages": [1]}, {}, "messages[0] must be an object"),
    ([{"role": "user", "content": "x", "timestamp": 1}, "x"], {}, "messages[1] must be an object"),
    ({"messages": [], "tools": [1]}, {}, "tools[0] must be an object"),
    ([], {"tools": "x"}, "tools must be a list"),
    ([], {"max_tokens": "x"}, "max_tokens must be a positive int"),
    ([], {"max_tokens": True}, "max_tokens must be a positive int"),
    ([], {"temperature": "hot"}, "temperature must be a number"),
    ([], {"system_prompt": 5}, "the system prompt must be a string"),
    ({"messages": [], "systemPrompt": []}, {}, "the system prompt must be a string"),
])
@pytest.mark.parametrize("target", [("anthropic", "claude-fable-5"), ("openai", "gpt-5.2"), ("openai", "gpt-4o")])
def test_bad_arguments_are_refused_with_an_invalid_input_error_naming_them(
    source: Any, options: dict[str, Any], expected: str, target: tuple[str, str]
) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(expected)):
        build_payload(source, provider=target[0], model=target[1], **options)

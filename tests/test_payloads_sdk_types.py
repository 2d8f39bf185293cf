"""Every payload sessionstore.payloads builds is a request of the official SDK's types (``anthropic``'s
beta ``MessageCreateParamsStreaming``, which pi-ai sends through ``client.beta.messages.create``;
``openai``'s ``CompletionCreateParamsStreaming`` and ``ResponseCreateParamsStreaming``), but for the
provider extensions pi-ai sends untyped through the OpenAI SDK, each named below. No network."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sessionstore.api import SessionStore
from sessionstore.payloads import build_payload, model_facts
from tests.differential.payload_cases import CONTEXTS, QUIRK_TARGETS, TARGETS
from tests.paths import FIXTURES
from tests.requirements import INSTALL_DEV, module
from tests.sdk_request_types import Mismatch, check

anthropic_params: Any = module("anthropic.types.beta.message_create_params", install=INSTALL_DEV)
chat_params: Any = module("openai.types.chat.completion_create_params", install=INSTALL_DEV)
responses_params: Any = module("openai.types.responses.response_create_params", install=INSTALL_DEV)

REQUEST_TYPES: dict[str, Any] = {
    "anthropic-messages": anthropic_params.MessageCreateParamsStreaming,
    "openai-completions": chat_params.CompletionCreateParamsStreaming,
    "openai-responses": responses_params.ResponseCreateParamsStreaming,
}
PROVIDER_EXTENSIONS: dict[str, set[str]] = {
    "anthropic-messages": set(),
    "openai-responses": set(),
    "openai-completions": {
        "$.thinking",  # DeepSeek, Z.ai: {type: enabled|disabled}
        "$.enable_thinking",  # Qwen
        "$.reasoning",  # OpenRouter {effort}, Together {enabled}
        "$.chat_template_args",  # Baseten
        "$.chat_template_kwargs",  # vLLM-style chat templates
        "$.tool_stream",  # Z.ai
        "$.messages[].reasoning_content",  # DeepSeek (required on every assistant turn), llama.cpp
        "$.messages[].reasoning",
        "$.messages[].reasoning_text",
        "$.messages[].reasoning_details",  # OpenRouter's structured reasoning replay
        "$.messages[].content[].cache_control",  # OpenRouter to Anthropic models
        "$.tools[].cache_control",
    },
}
TARGETS_ALL = [*TARGETS, *QUIRK_TARGETS]


def undeclared_keys(payload: Any, api: str) -> set[str]:
    return {re.sub(r"\[\d+\]", "[]", path) for path in check(payload, REQUEST_TYPES[api])}


@pytest.mark.parametrize("context_name", sorted(CONTEXTS))
@pytest.mark.parametrize(("provider", "model"), TARGETS_ALL, ids=[f"{p}-{m}" for p, m in TARGETS_ALL])
def test_a_synthetic_contexts_payload_is_an_sdk_request(context_name: str, provider: str, model: str) -> None:
    api = model_facts(provider, model).api
    payload = build_payload(CONTEXTS[context_name], provider=provider, model=model)
    assert undeclared_keys(payload, api) <= PROVIDER_EXTENSIONS[api]


@pytest.mark.parametrize("file", sorted((FIXTURES / "pi").glob("*.jsonl")), ids=lambda f: f.name)
def test_the_payloads_of_a_real_pi_file_are_sdk_requests(file: Path, tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'store.db'}") as store:
        llm = store.context(store.import_jsonl(file).session_id).llm
    for provider, model in TARGETS:
        api = model_facts(provider, model).api
        payload = build_payload(llm, provider=provider, model=model, system_prompt="You are pi.")
        assert undeclared_keys(payload, api) <= PROVIDER_EXTENSIONS[api], (provider, model)


def test_the_check_refuses_what_pydantic_lets_through() -> None:
    """pydantic validates the SDKs' ``Iterable`` fields lazily and keeps unknown keys: this check must not."""
    bogus_role = {"model": "m", "max_tokens": 1, "stream": True, "messages": [{"role": "bogus", "content": "x"}]}
    with pytest.raises(Mismatch, match="bogus"):
        check(bogus_role, REQUEST_TYPES["anthropic-messages"])
    unknown_key = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x", "colour": "red"}]}
    assert check(unknown_key, REQUEST_TYPES["openai-completions"]) == ["$.messages[0].colour"]

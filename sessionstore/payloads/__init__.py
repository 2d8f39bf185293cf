"""Provider request payloads exactly as pi-ai 1.6 builds them (SPEC 14).

``build_payload(source, provider=..., model=...)`` turns a context into the request body pi-ai's
``Models.stream(model, context, options)`` would send for that model of its registry: the Anthropic
Messages API, OpenAI Chat Completions (OpenAI and the OpenAI-compatible providers: OpenRouter,
DeepSeek, ...) or the OpenAI Responses API, as the registry's ``api`` says. ``source`` is one of

- a provider message list (pi's four roles, what ``SessionStore.context(sid).llm`` returns),
- pi-ai's ``Context`` as a mapping: ``{"systemPrompt"?, "messages", "tools"?}``,
- any object with an ``llm`` attribute holding such a list (a ``ContextResult``).

``system_prompt`` and ``tools`` (pi-ai's ``Tool``: ``{name, description, parameters,
constrainedSampling?}``) are folded into a leading system message, as pi-ai's ``normalizeContext``
does; given both in ``source`` and as arguments, the arguments win.

The payload is what pi-ai builds with an API key and these options only: ``max_tokens``,
``temperature`` and ``cache_retention`` (``"short"``, pi-ai's default, ``"long"`` or ``"none"``; pi-ai
also reads ``PI_CACHE_RETENTION``, this function reads no environment). No reasoning option, no
session id (so no prompt cache key, no Anthropic message threads), no OAuth or ChatGPT sign-in
credentials. The facts of the model come from ``models.json`` (see ``facts``).

Raises ``InvalidInputError`` for a model the registry does not have, a model of an api not ported
(Bedrock, Google, Mistral, Codex, ...), and where pi-ai throws (a tool that requires strict sampling
the model cannot give, a Responses thinking signature that is not JSON).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from sessionstore.errors import InvalidInputError
from sessionstore.payloads import anthropic, openai_chat, openai_responses
from sessionstore.payloads.facts import ModelFacts, model_facts, model_ids, providers, registry_version
from sessionstore.payloads.responses import (
    anthropic_message_to_pi,
    openai_chat_to_pi,
    openai_response_to_pi,
    record_anthropic,
    record_openai_chat,
    record_openai_response,
)
from sessionstore.payloads.transcript import initial_system_message

__all__ = ["API_BUILDERS", "CacheRetention", "ModelFacts", "anthropic_message_to_pi", "build_payload", "model_facts",
           "model_ids", "openai_chat_to_pi", "openai_response_to_pi", "providers", "record_anthropic",
           "record_openai_chat", "record_openai_response", "registry_version"]

Json = dict[str, Any]
CacheRetention = Literal["short", "long", "none"]
Builder = Callable[..., Json]

API_BUILDERS: Mapping[str, Builder] = {
    "anthropic-messages": anthropic.build_request,
    "openai-completions": openai_chat.build_request,
    "openai-responses": openai_responses.build_request,
}
"""The apis whose requests are ported, each to its builder ``(model, transcript, **options) -> payload``."""


def _mappings(value: Any, what: str) -> list[Json]:
    """``value`` as a list of dicts (copies), or ``InvalidInputError`` naming ``what`` and the bad item."""
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise InvalidInputError(f"{what} must be a list, got {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise InvalidInputError(f"{what}[{index}] must be an object, got {type(item).__name__}")
    return [dict(item) for item in value]


def _check_options(system_prompt: Any, max_tokens: Any, temperature: Any) -> None:
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise InvalidInputError(f"the system prompt must be a string, got {type(system_prompt).__name__}")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise InvalidInputError(f"max_tokens must be a positive int, got {max_tokens!r}")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, int | float)
                                    or temperature != temperature):
        raise InvalidInputError(f"temperature must be a number, got {temperature!r}")


def _context_parts(source: Any) -> tuple[list[Json], str | None, list[Json] | None]:
    if isinstance(source, Mapping):
        messages = source.get("messages")
        if not isinstance(messages, Sequence) or isinstance(messages, str):
            raise InvalidInputError("a context mapping needs a 'messages' list")
        tools = source.get("tools")
        return (_mappings(messages, "messages"), source.get("systemPrompt"),
                None if tools is None else _mappings(tools, "tools"))
    llm = getattr(source, "llm", None)
    if llm is not None:
        source = llm
    if isinstance(source, Sequence) and not isinstance(source, str | bytes):
        return _mappings(source, "messages"), None, None
    raise InvalidInputError("expected a message list, a context mapping or an object with an llm list")


def build_payload(
    source: Any,
    *,
    provider: str,
    model: str,
    system_prompt: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    cache_retention: CacheRetention = "short",
) -> Json:
    """The request body pi-ai 1.6 sends to ``model`` of ``provider`` for ``source`` (see the module docstring).

    The source messages are never modified."""
    facts = model_facts(provider, model)
    builder = API_BUILDERS.get(facts.api)
    if builder is None:
        raise InvalidInputError(f"{provider} {model} uses the {facts.api} api, whose requests are not ported "
                                f"(ported: {', '.join(API_BUILDERS)})")
    messages, source_prompt, source_tools = _context_parts(source)
    prompt = system_prompt if system_prompt is not None else source_prompt
    _check_options(prompt, max_tokens, temperature)
    tool_list = _mappings(tools, "tools") if tools is not None else source_tools
    head = initial_system_message(prompt, tool_list)
    transcript = [head, *messages] if head is not None else messages
    return builder(facts, transcript, max_tokens=max_tokens, temperature=temperature,
                   cache_retention=cache_retention)

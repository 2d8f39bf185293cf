"""Provider request payloads exactly as pi-ai 1.6 builds them (SPEC 14).

``build_payload(source, provider=..., model=...)`` turns a context into the request body pi-ai's
``Models.stream(model, context, options)`` would send for that model of its registry: the Anthropic
Messages API, OpenAI Chat Completions (OpenAI and the OpenAI-compatible providers: OpenRouter,
DeepSeek, ...) or the OpenAI Responses API, as the registry's ``api`` says. ``source`` is one of

- a provider message list (pi's four roles, what ``SessionStore.context(sid).llm`` returns),
- pi-ai's ``Context`` as a mapping: ``{"systemPrompt"?, "messages", "tools"?}``,
- ``ContextResult.to_json()`` (``context --json``'s output): its ``llm`` list is the messages,
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
from sessionstore.models.js import json_type
from sessionstore.models.roles import BUILTIN_ROLES, PROVIDER_ROLES, role_of
from sessionstore.models.wire import JsonObject as Json
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

__all__ = ["API_BUILDERS", "CacheRetention", "ModelFacts", "anthropic_message_to_pi", "build_payload", "context_parts",
           "model_facts", "model_ids", "openai_chat_to_pi", "openai_response_to_pi", "providers", "record_anthropic",
           "record_openai_chat", "record_openai_response", "registry_version"]

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


def context_parts(source: Any) -> tuple[list[Json], str | None, list[Json] | None]:
    """The provider messages (copies), system prompt and tools of a ``build_payload`` source.

    A mapping with an ``llm`` list is ``ContextResult.to_json()`` (``context --json``'s output): its
    ``llm`` are the messages (its ``messages`` are the AgentMessages they were projected from). A
    message whose role is not a provider role (``system``, ``user``, ``assistant``, ``toolResult``) is
    refused naming it: pi-ai never sends one (its builders would skip it), so it is not dropped
    silently. Content that is ``null`` or absent is left for the builders, which read it as ``[]`` as
    pi-ai does (:func:`~sessionstore.payloads.transform.with_content`)."""
    if isinstance(source, Mapping):
        if "llm" in source and "messages" in source and "sessionId" not in source:
            raise InvalidInputError("the context has both 'llm' and 'messages' but is not context --json's output"
                                    " (no 'sessionId'): give the provider messages as one of them")
        key = "llm" if "llm" in source else "messages"
        messages = source.get(key)
        if not isinstance(messages, Sequence) or isinstance(messages, str):
            raise InvalidInputError(f"a context mapping needs a '{key}' list"
                                    + ("" if key == "llm" else " (or context --json's 'llm')"))
        tools = source.get("tools")
        return (_provider_messages(messages, key), source.get("systemPrompt"),
                None if tools is None else _mappings(tools, "tools"))
    llm = getattr(source, "llm", None)
    if llm is not None:
        source = llm
    if isinstance(source, Sequence) and not isinstance(source, str | bytes):
        return _provider_messages(source, "messages"), None, None
    raise InvalidInputError("expected a message list, a context mapping or an object with an llm list")


def _provider_messages(value: Any, what: str) -> list[Json]:
    messages = _mappings(value, what)
    for index, message in enumerate(messages):
        role = role_of(message)
        if role not in PROVIDER_ROLES:
            if "role" not in message:
                found = "has no role"
            elif role is None:  # (role_of: pi matches a role that is not a string with none of its cases)
                found = f"role of type {json_type(message['role'])} is not a known role"
            else:
                found = f"role {role!r} is " + ("an AgentMessage role" if role in BUILTIN_ROLES else "not a known role")
            raise InvalidInputError(
                f"{what}[{index}]: {found}, not a provider message (system, user, assistant,"
                " toolResult), and pi-ai does not send it: give the provider messages (context --json's"
                " output as it is, or its 'llm' list as 'messages')")
    return messages


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
    messages, source_prompt, source_tools = context_parts(source)
    prompt = system_prompt if system_prompt is not None else source_prompt
    _check_options(prompt, max_tokens, temperature)
    tool_list = _mappings(tools, "tools") if tools is not None else source_tools
    head = initial_system_message(prompt, tool_list)
    transcript = [head, *messages] if head is not None else messages
    return builder(facts, transcript, max_tokens=max_tokens, temperature=temperature,
                   cache_retention=cache_retention)

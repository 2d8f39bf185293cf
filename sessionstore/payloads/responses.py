"""Provider responses back into the session (issue 15 item 2): an SDK response becomes pi's
AssistantMessage exactly as pi-ai 1.6's stream function would have recorded it, so the next
``build_payload`` replays the turn as pi-ai would.

- ``anthropic_message_to_pi(message, provider=, model=)``: an Anthropic ``Message``;
- ``openai_chat_to_pi(completion, ...)``: a Chat Completions ``ChatCompletion`` (OpenAI and the
  OpenAI-compatible providers of pi-ai's registry);
- ``openai_response_to_pi(response, ...)``: a Responses API ``Response``.

Each takes the SDK's pydantic object (``anthropic.types.Message``, ``openai.types.chat.ChatCompletion``,
``openai.types.responses.Response``; read through ``model_dump``, the SDKs are never imported), its JSON
as a mapping, or its JSON text. ``model`` names the registry model the request went to (default: the
response's ``model``); a response from another model id (a dated snapshot, a fallback) is recorded as
pi-ai records it, with ``responseModel``. Usage and ``usage.cost`` follow pi-ai (``calculateCost`` over
the registry's prices in ``models.json``, OpenRouter's billed cost, Responses service tiers).

A response pi-ai treats as failed (a refusal, a content filter, an incomplete response, a missing stop
reason) gives ``stopReason: "error"`` with pi-ai's ``errorMessage``: pi stores such turns, and
``build_payload`` leaves them out, as pi-ai does.

``record_anthropic``, ``record_openai_chat`` and ``record_openai_response`` append the converted message
to a session with ``store.append_message`` and return the entry id; a tool's result goes in with
``SessionStore.append_tool_result`` under the call's ``id``.

Tool-call arguments are read as pi-ai's ``parseToolCallArguments`` reads them (``repairJson`` first); a
call whose arguments are still not a JSON object keeps ``arguments: {}`` and an ``argumentsError`` that
words the parse error as Python does (pi-ai's is V8's). The input-transformation reports pi-ai keeps in
``diagnostics`` are stamped with the message's timestamp. Anthropic models with effort markers record
``providerThinkingLevel: "high"``, the effort ``build_payload`` sends.

Not ported: Claude Code (OAuth) tool renaming, Chat Completions grammar tool calls, and ``durationMs``
(pi-ai times the stream; a finished response has no duration). Checked against pi-ai's own stream
functions by ``tests/differential/test_responses_against_pi.py`` (see ``PORTED.md``).
"""

from __future__ import annotations

from typing import Any, Protocol

from sessionstore.models.wire import JsonObject as Json
from sessionstore.payloads.response_anthropic import anthropic_message_to_pi
from sessionstore.payloads.response_openai import openai_chat_to_pi, openai_response_to_pi

__all__ = ["MessageAppender", "anthropic_message_to_pi", "openai_chat_to_pi", "openai_response_to_pi",
           "record_anthropic", "record_openai_chat", "record_openai_response"]

_UNSET: Any = object()


class MessageAppender(Protocol):
    """What recording needs of a store: ``SessionStore.append_message``."""

    def append_message(self, session_id: str, message: Any, **options: Any) -> str: ...


def _append(store: MessageAppender, session_id: str, message: Json, expected_leaf: Any) -> str:
    if expected_leaf is _UNSET:
        return store.append_message(session_id, message)
    return store.append_message(session_id, message, expected_leaf=expected_leaf)


def record_anthropic(store: MessageAppender, session_id: str, message: Any, *, provider: str = "anthropic",
                     model: str | None = None, timestamp: int | None = None, expected_leaf: Any = _UNSET) -> str:
    """Append an Anthropic ``Message`` to the session as pi's assistant message (see
    ``anthropic_message_to_pi``); returns the new entry's id. ``expected_leaf`` as for ``append_message``."""
    converted = anthropic_message_to_pi(message, provider=provider, model=model, timestamp=timestamp)
    return _append(store, session_id, converted, expected_leaf)


def record_openai_chat(store: MessageAppender, session_id: str, completion: Any, *, provider: str = "openai",
                       model: str | None = None, timestamp: int | None = None, expected_leaf: Any = _UNSET) -> str:
    """Append a ``ChatCompletion`` to the session as pi's assistant message (see ``openai_chat_to_pi``)."""
    converted = openai_chat_to_pi(completion, provider=provider, model=model, timestamp=timestamp)
    return _append(store, session_id, converted, expected_leaf)


def record_openai_response(store: MessageAppender, session_id: str, response: Any, *, provider: str = "openai",
                           model: str | None = None, timestamp: int | None = None,
                           expected_leaf: Any = _UNSET) -> str:
    """Append a Responses API ``Response`` to the session as pi's assistant message (see
    ``openai_response_to_pi``)."""
    converted = openai_response_to_pi(response, provider=provider, model=model, timestamp=timestamp)
    return _append(store, session_id, converted, expected_leaf)

"""Recording model turns into a session: the provider's final response becomes a stored assistant
message (pi's message model), tool results keep the provider's tool-call ids.

Only a completed response is appended. A failed or aborted response appends nothing, unless the
caller asks (``record_failures=True``): then an assistant message with stopReason ``error`` or
``aborted`` and ``errorMessage`` is appended, as pi does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sessionstore.api import Leaf, SessionStore
from sessionstore.models.messages import AssistantMessage, assistant_message
from sessionstore.provider import AssistantResponse, FixtureProviderError, ProviderChunk, ProviderStream
from sessionstore.store.records import UNSET

STOP_REASONS = {"stop": "stop", "toolCall": "toolUse", "length": "length"}
"""Provider stop reasons -> pi's (a tool-call response stops with ``toolUse``)."""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    api: str = "fixture"
    provider: str = "fixture"
    model: str = "fixture-model"


@dataclass(frozen=True, slots=True)
class RecordedTurn:
    """What happened to one response: ``entry_id`` is set when something was appended."""

    entry_id: str | None
    message: AssistantMessage | None
    response: AssistantResponse | None
    error: FixtureProviderError | None

    @property
    def completed(self) -> bool:
        return self.error is None


def response_to_message(
    response: AssistantResponse, model: ModelInfo, *, timestamp: int | None = None
) -> AssistantMessage:
    """The stored form of a completed response: content in order, usage mapped, ids kept verbatim."""
    content: list[dict[str, Any]] = [dict(block.to_json()) for block in response.content]
    usage = response.usage
    return assistant_message(
        content,
        api=model.api,
        provider=model.provider,
        model=model.model,
        stop_reason=STOP_REASONS.get(response.stop_reason, response.stop_reason),
        usage={
            "input": usage.input_tokens,
            "output": usage.output_tokens,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": usage.input_tokens + usage.output_tokens,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        response_id=response.response_id,
        timestamp=timestamp,
    )


async def record_response(
    store: SessionStore,
    session_id: str,
    response: ProviderStream | Awaitable[AssistantResponse],
    *,
    model: ModelInfo | None = None,
    record_failures: bool = False,
    on_chunk: Callable[[ProviderChunk], None] | None = None,
    expected_leaf: Leaf = UNSET,
) -> RecordedTurn:
    """Await ``response`` (iterating its chunks first when ``on_chunk`` is given) and append the
    assistant message when it completed. Provider failures are returned in ``RecordedTurn.error``."""
    model = model or ModelInfo()
    try:
        if on_chunk is not None and isinstance(response, ProviderStream):
            async for chunk in response:
                on_chunk(chunk)
        final = await response
    except FixtureProviderError as exc:
        if not record_failures:
            return RecordedTurn(None, None, None, exc)
        failed = assistant_message(
            [],
            api=model.api,
            provider=model.provider,
            model=model.model,
            stop_reason="aborted" if exc.code == "PROVIDER_ABORTED" else "error",
            error_message=f"{exc.code}: {exc.message}",
        )
        entry_id = store.append_message(session_id, failed, expected_leaf=expected_leaf)
        return RecordedTurn(entry_id, failed, None, exc)
    message = response_to_message(final, model)
    entry_id = store.append_message(session_id, message, expected_leaf=expected_leaf)
    return RecordedTurn(entry_id, message, final, None)


def append_tool_result(
    store: SessionStore,
    session_id: str,
    *,
    tool_call_id: str,
    tool_name: str,
    content: str | list[Any],
    is_error: bool = False,
    details: Any = None,
    expected_leaf: Leaf = UNSET,
) -> str:
    """``store.append_tool_result``: the result of a tool call under the provider's own tool-call id."""
    return store.append_tool_result(session_id, tool_call_id=tool_call_id, tool_name=tool_name, content=content,
                                    is_error=is_error, details=details, expected_leaf=expected_leaf)

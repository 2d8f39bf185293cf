"""Messages (SPEC 2, 12.2): the four provider roles, pi's app roles, and roles registered by the application.

``parse_agent_message`` turns wire data into the typed union; a role nobody registered becomes an
:class:`UnknownMessage` that keeps every field. The constructors ``user_message``,
``assistant_message`` and ``tool_result_message`` snapshot their input (SPEC 8): they read it once,
copy it, and return immutable values whose nested tool arguments cannot be mutated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, TypeAdapter

from sessionstore.models.content import (
    AssistantContentBlock,
    FrozenJson,
    ImageContent,
    NotNull,
    Number,
    TextContent,
    TextContentBlock,
    ToolCall,
    UserContentBlock,
    WireModel,
)
from sessionstore.models.frozen import freeze_json, thaw
from sessionstore.models.roles import (
    BUILTIN_ROLES,
    PROVIDER_ROLES,
    known_roles,
    register_role,
    registered_role,
    role_of,
    unregister_role,
)
from sessionstore.models.timestamps import now_ms
from sessionstore.models.wire import (
    AgentMessageDict,
    AssistantContentBlockDict,
    TextContentDict,
    ToolDict,
    ToolResultContentBlockDict,
    UsageDict,
    UserContentBlockDict,
)

StopReason = Literal["stop", "length", "toolUse", "error", "aborted", "pending", "deferred"]


class Cost(WireModel):
    """Costs are JSON numbers, as in pi: an integral cost stays an int (written ``0``, as
    ``JSON.stringify`` writes it, not ``0.0``)."""

    input: Number = 0
    output: Number = 0
    cache_read: Number = 0
    cache_write: Number = 0
    total: Number = 0


class Usage(WireModel):
    """pi-ai's ``Usage``; a missing count reads as 0 (older pi wrote no ``totalTokens``)."""

    input: Number = 0
    output: Number = 0
    cache_read: Number = 0
    cache_write: Number = 0
    total_tokens: NotNull[Number] = None
    cost: NotNull[Cost] = None


ZERO_USAGE: Mapping[str, Any] = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


class UserMessage(WireModel):
    role: Literal["user"] = "user"
    content: str | tuple[UserContentBlock, ...]
    timestamp: Number


class AssistantMessage(WireModel):
    role: Literal["assistant"] = "assistant"
    content: tuple[AssistantContentBlock, ...]
    api: str
    provider: str
    model: str
    usage: Usage
    stop_reason: str
    error_message: NotNull[str] = None
    response_id: FrozenJson = None  # opaque, like every optional field pi 1.6 added (kept as extras)
    timestamp: Number

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(block for block in self.content if isinstance(block, ToolCall))


class ToolResultMessage(WireModel):
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: tuple[UserContentBlock, ...]
    details: FrozenJson = None
    is_error: StrictBool
    timestamp: Number


class BashExecutionMessage(WireModel):
    role: Literal["bashExecution"] = "bashExecution"
    command: str
    output: str
    exit_code: Number | None = None
    cancelled: StrictBool
    truncated: StrictBool
    full_output_path: NotNull[str] = None
    exclude_from_context: NotNull[StrictBool] = None
    timestamp: Number


class CustomMessage(WireModel):
    role: Literal["custom"] = "custom"
    custom_type: str
    content: str | tuple[UserContentBlock, ...]
    display: StrictBool
    details: FrozenJson = None
    timestamp: Number


class BranchSummaryMessage(WireModel):
    role: Literal["branchSummary"] = "branchSummary"
    summary: str
    from_id: str | None
    timestamp: Number


class CompactionSummaryMessage(WireModel):
    role: Literal["compactionSummary"] = "compactionSummary"
    summary: str
    tokens_before: Number
    timestamp: Number


class ToolDefinition(WireModel):
    """A tool a ``system`` message makes available (pi-ai's ``Tool``; extras kept)."""

    name: str
    description: str
    parameters: FrozenJson


class ToolReference(WireModel):
    """A tool a ``system`` message removes (pi-ai's ``ToolReference``)."""

    name: str


class SystemMessage(WireModel):
    """pi 1.6's fourth provider role: the base prompt (leading) or later instructions, named prompt
    sections (``None`` removes a section) and the tools added or removed at this point."""

    role: Literal["system"] = "system"
    content: str | tuple[TextContentBlock, ...]
    sections: dict[str, str | None] | None = None
    tools_added: tuple[ToolDefinition, ...] | None = None
    tools_removed: tuple[ToolReference, ...] | None = None
    timestamp: Number


class UnknownMessage(WireModel):
    """A message whose role no registry knows: kept verbatim, reported by validation, never sent."""

    role: str


ProviderMessage = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")
]
BuiltinAgentMessage = Annotated[
    SystemMessage
    | UserMessage
    | AssistantMessage
    | ToolResultMessage
    | BashExecutionMessage
    | CustomMessage
    | BranchSummaryMessage
    | CompactionSummaryMessage,
    Field(discriminator="role"),
]
BUILTIN_MESSAGE_ADAPTER: TypeAdapter[Any] = TypeAdapter(BuiltinAgentMessage)
PROVIDER_MESSAGE_ADAPTER: TypeAdapter[Any] = TypeAdapter(ProviderMessage)

def parse_agent_message(data: AgentMessageDict | Mapping[str, Any]) -> WireModel:
    """Typed view of a wire message. Raises ``pydantic.ValidationError`` for a known role of bad shape."""
    role = role_of(data)
    if role in BUILTIN_ROLES:
        return BUILTIN_MESSAGE_ADAPTER.validate_python(data)  # type: ignore[no-any-return]
    registered = registered_role(role) if role is not None else None
    if registered is not None:
        return registered.model.model_validate(data)
    return UnknownMessage.model_validate(data)


def _snapshot(value: Any, path: str) -> Any:
    return freeze_json(value, path)


def user_message(
    content: str | Sequence[UserContentBlockDict | Mapping[str, Any]], *, timestamp: int | None = None
) -> UserMessage:
    """A user message; ``content`` is a string or a list of text/image blocks (copied)."""
    snap = _snapshot(content, "content")
    return UserMessage.model_validate(
        {"role": "user", "content": thaw(snap), "timestamp": now_ms() if timestamp is None else timestamp}
    )


def system_message(
    content: str | Sequence[TextContentDict | Mapping[str, Any]],
    *,
    sections: Mapping[str, str | None] | None = None,
    tools_added: Sequence[ToolDict | Mapping[str, Any]] | None = None,
    tools_removed: list[str] | None = None,
    timestamp: int | None = None,
) -> SystemMessage:
    """A ``system`` message (pi 1.6): ``content`` is a string or text blocks; ``sections`` maps a
    section name to its text (``None`` removes it); ``tools_added`` are complete tool definitions
    (``name``, ``description``, ``parameters``); ``tools_removed`` names tools that stop being available."""
    data: dict[str, Any] = {"role": "system", "content": thaw(_snapshot(content, "content"))}
    if sections is not None:
        data["sections"] = thaw(_snapshot(dict(sections), "sections"))
    if tools_added is not None:
        data["toolsAdded"] = thaw(_snapshot(list(tools_added), "toolsAdded"))
    if tools_removed is not None:
        data["toolsRemoved"] = [{"name": name} for name in tools_removed]
    data["timestamp"] = now_ms() if timestamp is None else timestamp
    return SystemMessage.model_validate(data)


def assistant_message(
    content: Sequence[AssistantContentBlockDict | Mapping[str, Any]],
    *,
    api: str,
    provider: str,
    model: str,
    stop_reason: str = "stop",
    usage: UsageDict | Mapping[str, Any] | None = None,
    error_message: str | None = None,
    response_id: str | None = None,
    timestamp: int | None = None,
) -> AssistantMessage:
    """An assistant message. Tool-call arguments must be JSON objects (str keys, finite numbers, no
    cycles); a bad value raises ``TypeError``/``ValueError`` naming its path (``content[1].arguments.x``)."""
    snap = thaw(_snapshot(content, "content"))
    data: dict[str, Any] = {
        "role": "assistant",
        "content": snap,
        "api": api,
        "provider": provider,
        "model": model,
        "usage": thaw(_snapshot(usage, "usage")) if usage is not None else dict(ZERO_USAGE),
        "stopReason": stop_reason,
        "timestamp": now_ms() if timestamp is None else timestamp,
    }
    if error_message is not None:
        data["errorMessage"] = error_message
    if response_id is not None:
        data["responseId"] = response_id
    for i, block in enumerate(snap):
        if isinstance(block, dict) and block.get("type") == "toolCall" and not isinstance(
            block.get("arguments"), dict
        ):
            raise TypeError(f"content[{i}].arguments: expected a JSON object")
    return AssistantMessage.model_validate(data)


def tool_result_message(
    *,
    tool_call_id: str,
    tool_name: str,
    content: str | Sequence[ToolResultContentBlockDict | Mapping[str, Any]],
    is_error: bool = False,
    details: Any = None,
    timestamp: int | None = None,
) -> ToolResultMessage:
    """A tool result; a string ``content`` becomes one text block."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else thaw(_snapshot(content, "content"))
    data: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": tool_call_id,
        "toolName": tool_name,
        "content": blocks,
        "isError": is_error,
        "timestamp": now_ms() if timestamp is None else timestamp,
    }
    if details is not None:
        data["details"] = thaw(_snapshot(details, "details"))
    return ToolResultMessage.model_validate(data)


__all__ = [
    "BUILTIN_ROLES",
    "PROVIDER_ROLES",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "CustomMessage",
    "ImageContent",
    "SystemMessage",
    "TextContent",
    "ToolResultMessage",
    "UnknownMessage",
    "UserMessage",
    "assistant_message",
    "known_roles",
    "parse_agent_message",
    "register_role",
    "registered_role",
    "system_message",
    "tool_result_message",
    "unregister_role",
    "user_message",
]

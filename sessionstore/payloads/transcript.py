"""pi-ai's transcript rules (``utils/transcript``): a context's system prompt and tools folded into a
leading system message, system messages replayed into one, and the tool list a request declares.
The replay itself (``getCurrentSystemMessage``, ``getCurrentTools``) is :mod:`sessionstore.context.system`'s,
the one port that compaction uses too.

Messages are pi's provider message dicts; nothing here modifies them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sessionstore.context.system import current_system_message, current_tools
from sessionstore.models.wire import JsonObject as Json

ToolSupport = Literal["none", "additions", "changes"]


def initial_system_message(system_prompt: str | None, tools: Sequence[Json] | None) -> Json | None:
    """pi-ai's ``createInitialSystemMessage``: ``None`` when the prompt and the tool list are both empty."""
    has_prompt = system_prompt is not None and len(system_prompt) > 0
    has_tools = tools is not None and len(tools) > 0
    if not has_prompt and not has_tools:
        return None
    message: Json = {"role": "system", "content": system_prompt or ""}
    if has_tools:
        message["toolsAdded"] = list(tools or [])
    message["timestamp"] = 0
    return message


def leading_system_message(messages: Sequence[Json]) -> Json | None:
    """pi-ai's ``getInitialSystemMessage``: the first message when it is a system message."""
    return messages[0] if messages and messages[0].get("role") == "system" else None


def _system_messages(messages: Sequence[Json]) -> list[Json]:
    return [message for message in messages if message.get("role") == "system"]


def _named(tools: Any) -> list[Json]:
    return [dict(tool) for tool in tools or [] if isinstance(tool, Mapping)]


def declared_tools(messages: Sequence[Json]) -> list[Json]:
    """pi-ai's ``getDeclaredTools``: every tool any system message adds, the last definition of a name
    in the place of its first."""
    tools: dict[Any, Json] = {}
    for message in _system_messages(messages):
        for tool in _named(message.get("toolsAdded")):
            tools[tool.get("name")] = tool
    return list(tools.values())


def resolve_transcript(messages: Sequence[Json], *, mid_conversation_system_messages: bool) -> list[Json]:
    """pi-ai's ``resolveTranscript``: later system messages stay in place when the model takes them;
    otherwise all of them collapse into one leading message (``collapseSystemMessages``)."""
    if mid_conversation_system_messages:
        return list(messages)
    head = current_system_message(messages)
    rest = [message for message in messages if message.get("role") != "system"]
    return [head, *rest] if head is not None else rest


def _last_non_additive_tool_change(system_messages: Sequence[Json]) -> int:
    declared: set[Any] = set()
    last = -1
    for index, message in enumerate(system_messages):
        if _named(message.get("toolsRemoved")):
            last = index
        for tool in _named(message.get("toolsAdded")):
            if tool.get("name") in declared:
                last = index
            declared.add(tool.get("name"))
    return last


@dataclass(frozen=True, slots=True)
class TranscriptTools:
    """pi-ai's ``resolveTranscriptTools``: the request-level tool list, and how many leading system
    messages it already accounts for (later ones declare their additions in place)."""

    request_tools: list[Json]
    folded_system_messages: int


def resolve_transcript_tools(messages: Sequence[Json], support: ToolSupport) -> TranscriptTools:
    system_messages = _system_messages(messages)
    if support == "none":
        return TranscriptTools(current_tools(system_messages), len(system_messages))
    if support == "changes":
        return TranscriptTools([], 0)
    leading = 1 if leading_system_message(messages) is not None else 0
    folded = max(leading, _last_non_additive_tool_change(system_messages) + 1)
    return TranscriptTools(current_tools(system_messages[:folded]), folded)

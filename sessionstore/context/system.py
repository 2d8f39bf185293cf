"""The current system prompt of a context (pi-ai 1.6 ``getCurrentSystemMessage``).

Replaying every ``system`` message in order gives the prompt in force: the non-empty contents
(the text blocks of one message joined by ``"\\n"``) joined by ``"\\n\\n"``; ``sections`` patched by
name (``null`` removes one); tools resolved by removing each message's ``toolsRemoved`` names and
then adding or replacing its ``toolsAdded`` by name; the timestamp of the first system message.
pi stores this replay on a compaction (``systemMessage``), because the system messages its kept
range holds are no longer sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sessionstore.models import js
from sessionstore.models.js import MISSING
from sessionstore.models.roles import role_of
from sessionstore.models.wire import JsonObject as Json


def content_text(content: Any, separator: str = "\n") -> str:
    """pi-ai's ``contentText``: a string content, or its text blocks joined by ``separator``."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    # Array#join writes undefined and null as ""
    texts = (js.get(b, "text") for b in content if js.get(b, "type") == "text")
    return separator.join("" if js.nullish(text) else js.to_string(text) for text in texts)


def current_tools(messages: Iterable[Any]) -> list[Any]:
    """The tools available after every system message's removals and additions, in pi's order."""
    tools: dict[Any, Any] = {}
    for message in messages:
        if role_of(message) != "system":
            continue
        for tool in _list(js.get(message, "toolsRemoved")):
            tools.pop(_key(js.get(tool, "name")), None)
        for tool in _list(js.get(message, "toolsAdded")):
            tools[_key(js.get(tool, "name"))] = tool
    return list(tools.values())


def current_system_message(messages: Iterable[Any]) -> Json | None:
    """The replayed system message, or ``None`` when there is neither a system message nor a tool."""
    messages = list(messages)
    content: list[str] = []
    sections: dict[str, Any] = {}
    timestamp: Any = MISSING
    for message in messages:
        if role_of(message) != "system":
            continue
        if js.nullish(timestamp):
            timestamp = js.get(message, "timestamp")
        text = content_text(js.get(message, "content"))
        if text:
            content.append(text)
        patch = js.get(message, "sections")
        if isinstance(patch, dict):
            for name, value in patch.items():
                if value is None:
                    sections.pop(name, None)
                else:
                    sections[name] = value
    tools = current_tools(messages)
    if timestamp is MISSING and not tools:
        return None
    return js.obj(
        ("role", "system"),
        ("content", "\n\n".join(content)),
        ("sections", sections if sections else MISSING),
        ("toolsAdded", tools if tools else MISSING),
        ("timestamp", 0 if js.nullish(timestamp) else timestamp),
    )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _key(name: Any) -> Any:
    return name if isinstance(name, str | int | float | bool) or name is None else repr(name)

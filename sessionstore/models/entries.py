"""Session entries and the file header (SPEC 3, 12.3), discriminated by ``type``.

Two views of one shape. The pydantic models are the strict form: what the store writes itself
(appends are validated against them). :func:`entry_problems` is the tolerant reading pi does on
load: a file entry whose fields are missing or of the wrong type is still stored verbatim and read
as pi reads it; each problem is reported as a diagnostic, never a refusal. Unknown entry types
become :class:`UnknownEntry` and keep every field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, TypeAdapter, field_validator

from sessionstore.models.content import ImageContent, TextContent, WireModel
from sessionstore.models.js import json_type
from sessionstore.models.wire import SessionEntryDict

ENTRY_TYPES = frozenset({
    "message",
    "context_edit",
    "usage",
    "thinking_level_change",
    "model_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
})


class EntryBase(WireModel):
    id: str = Field(min_length=1)
    parent_id: str | None = None
    timestamp: str


class MessageEntry(EntryBase):
    type: Literal["message"] = "message"
    message: dict[str, Any]

    @field_validator("message")
    @classmethod
    def _has_role(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(value.get("role"), str):
            raise ValueError("message needs a string 'role'")
        return value


class ThinkingLevelChangeEntry(EntryBase):
    type: Literal["thinking_level_change"] = "thinking_level_change"
    thinking_level: str


class ModelChangeEntry(EntryBase):
    type: Literal["model_change"] = "model_change"
    provider: str
    model_id: str


class CompactionEntry(EntryBase):
    type: Literal["compaction"] = "compaction"
    summary: str
    first_kept_entry_id: str | None = None  # absent in v1 files whose index named no entry (pi keeps nothing)
    tokens_before: int | float
    details: Any = None
    usage: dict[str, Any] | None = None
    from_hook: bool | None = None
    system_message: dict[str, Any] | None = None


class BranchSummaryEntry(EntryBase):
    type: Literal["branch_summary"] = "branch_summary"
    from_id: str | None
    summary: str
    details: Any = None
    usage: dict[str, Any] | None = None
    from_hook: bool | None = None


class CustomEntry(EntryBase):
    type: Literal["custom"] = "custom"
    custom_type: str
    data: Any = None


class CustomMessageEntry(EntryBase):
    type: Literal["custom_message"] = "custom_message"
    custom_type: str
    content: str | list[Annotated[TextContent | ImageContent, Field(discriminator="type")]]
    display: bool
    details: Any = None


class LabelEntry(EntryBase):
    type: Literal["label"] = "label"
    target_id: str
    label: str | None = None


class SessionInfoEntry(EntryBase):
    type: Literal["session_info"] = "session_info"
    name: str | None = None


class ContextEditReplacement(WireModel):
    content: str | list[Any]


class ContextEditEntry(EntryBase):
    """An edit of an earlier entry's part of the context on this branch (pi 1.6): ``replacement``
    ``None`` omits the target's messages, else their ``content`` is replaced."""

    type: Literal["context_edit"] = "context_edit"
    target_id: str
    replacement: ContextEditReplacement | None


class UsageEntry(EntryBase):
    """Model usage outside the conversation (pi 1.6 writes ``kind: "cache_warm"``); counted in totals."""

    type: Literal["usage"] = "usage"
    kind: str
    provider: str
    model: str
    usage: dict[str, Any]
    note: str | None = None


class UnknownEntry(EntryBase):
    """An entry type this version does not know: stored and exported unchanged, ignored by context."""

    type: str


def _entry_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in ENTRY_TYPES else "unknown"


SessionEntry = Annotated[
    Annotated[MessageEntry, Tag("message")]
    | Annotated[ThinkingLevelChangeEntry, Tag("thinking_level_change")]
    | Annotated[ModelChangeEntry, Tag("model_change")]
    | Annotated[CompactionEntry, Tag("compaction")]
    | Annotated[BranchSummaryEntry, Tag("branch_summary")]
    | Annotated[CustomEntry, Tag("custom")]
    | Annotated[CustomMessageEntry, Tag("custom_message")]
    | Annotated[LabelEntry, Tag("label")]
    | Annotated[SessionInfoEntry, Tag("session_info")]
    | Annotated[ContextEditEntry, Tag("context_edit")]
    | Annotated[UsageEntry, Tag("usage")]
    | Annotated[UnknownEntry, Tag("unknown")],
    Discriminator(_entry_tag),
]
ENTRY_ADAPTER: TypeAdapter[Any] = TypeAdapter(SessionEntry)


def parse_entry(data: SessionEntryDict | Mapping[str, Any]) -> Any:
    """Typed, validated view of a wire entry; raises ``pydantic.ValidationError`` on a bad shape."""
    return _ENTRY_VALIDATOR(data)


_ENTRY_VALIDATOR = ENTRY_ADAPTER.validator.validate_python  # the adapter's wrapper costs ~0.4 us per entry


# -- the tolerant reading: what pi 1.6's types say a file entry holds -------------------------------
_STR = (str,)
_NUMBER = (int, float)

_REQUIRED: dict[str, tuple[tuple[str, tuple[type, ...], bool], ...]] = {
    # type -> (field, accepted JSON types, may be absent)
    "thinking_level_change": (("thinkingLevel", _STR, False),),
    "model_change": (("provider", _STR, False), ("modelId", _STR, False)),
    "compaction": (
        ("summary", _STR, False),
        ("firstKeptEntryId", _STR, True),
        ("tokensBefore", _NUMBER, False),
        ("usage", (dict,), True),
        ("systemMessage", (dict,), True),
    ),
    "branch_summary": (("fromId", (str, type(None)), False), ("summary", _STR, False), ("usage", (dict,), True)),
    "custom": (("customType", _STR, False),),
    "custom_message": (("customType", _STR, False), ("content", (str, list), False), ("display", (bool,), False)),
    "label": (("targetId", _STR, False), ("label", (str, type(None)), True)),
    "session_info": (("name", (str, type(None)), True),),
    "context_edit": (("targetId", _STR, False), ("replacement", (dict, type(None)), False)),
    "usage": (("kind", _STR, False), ("provider", _STR, False), ("model", _STR, False), ("usage", (dict,), False)),
}

_MESSAGE_CONTENT: dict[str, tuple[type, ...]] = {
    "user": (str, list),
    "assistant": (list,),
    "toolResult": (list,),
    "system": (str, list),
    "custom": (str, list),
}


def entry_problems(entry: Mapping[str, Any]) -> list[str]:
    """What a file entry lacks of pi 1.6's shape for its type, one phrase each (``[]``: well formed).

    Never raises and never refuses: each problem is for a diagnostic; the entry is kept verbatim
    and read the way pi reads it (context building normalises missing content as pi does)."""
    problems: list[str] = []
    kind = entry.get("type")
    if not isinstance(kind, str):
        return [f"type is {json_type(kind)}, not a string: the entry is kept and contributes nothing"]
    if not isinstance(entry.get("timestamp"), str):
        problems.append(f"timestamp is {'missing' if 'timestamp' not in entry else json_type(entry['timestamp'])}")
    for name, types, optional in _REQUIRED.get(kind, ()):
        if name not in entry:
            if not optional:
                problems.append(f"{name} is missing")
        elif (not isinstance(entry[name], types) or (types == _NUMBER and isinstance(entry[name], bool))) and not (
            optional and entry[name] is None
        ):
            problems.append(f"{name} is {json_type(entry[name])}")
    replacement = entry.get("replacement")
    content = replacement.get("content") if isinstance(replacement, dict) else None
    if kind == "context_edit" and isinstance(replacement, dict) and not isinstance(content, str | list):
        problems.append("replacement.content is not a string or an array")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            problems.append(f"message is {'missing' if 'message' not in entry else json_type(message)}")
            return problems
        role = message.get("role")
        if not isinstance(role, str):
            problems.append(f"message.role is {'missing' if 'role' not in message else json_type(role)}")
            return problems
        accepted = _MESSAGE_CONTENT.get(role)
        if accepted is not None and not isinstance(message.get("content"), accepted):
            got = "missing" if "content" not in message else json_type(message["content"])
            problems.append(f"message.content ({role}) is {got}")
        if role == "bashExecution":
            for name in ("command", "output"):
                if not isinstance(message.get(name), str):
                    got = "missing" if name not in message else json_type(message[name])
                    problems.append(f"message.{name} is {got}")
    return problems

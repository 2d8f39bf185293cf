"""Session entries and the file header (SPEC 3), discriminated by ``type``.

Entries are validated structurally on import (required fields and their JSON types); a message
entry's ``message`` must be an object with a string ``role``, its inner shape is checked by
transcript validation on load, so a real session with an odd message still loads. Unknown entry
types become :class:`UnknownEntry` and keep every field.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, TypeAdapter, field_validator

from sessionstore.models.content import ImageContent, TextContent, WireModel

ENTRY_TYPES = frozenset({
    "message",
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
    parent_id: str | None
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
    from_hook: bool | None = None


class BranchSummaryEntry(EntryBase):
    type: Literal["branch_summary"] = "branch_summary"
    from_id: str
    summary: str
    details: Any = None
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
    | Annotated[UnknownEntry, Tag("unknown")],
    Discriminator(_entry_tag),
]
ENTRY_ADAPTER: TypeAdapter[Any] = TypeAdapter(SessionEntry)


class SessionHeader(WireModel):
    type: Literal["session"] = "session"
    version: int | None = None
    id: str = Field(min_length=1)
    timestamp: str
    cwd: str = ""
    parent_session: str | None = None


def parse_entry(data: dict[str, Any]) -> Any:
    """Typed, validated view of a wire entry; raises ``pydantic.ValidationError`` on a bad shape."""
    return _ENTRY_VALIDATOR(data)


_ENTRY_VALIDATOR = ENTRY_ADAPTER.validator.validate_python  # the adapter's wrapper costs ~0.4 us per entry


def random_entry_id() -> str:
    """8 random hex characters, as pi generates entry ids."""
    return os.urandom(4).hex()


def new_entry_id(taken: Callable[[str], bool]) -> str:
    """An entry id as pi generates it: 8 hex characters, retried while ``taken`` (a full UUID after
    100 collisions)."""
    for _ in range(100):
        candidate = random_entry_id()
        if not taken(candidate):
            return candidate
    return str(uuid.uuid4())

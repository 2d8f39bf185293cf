"""``custom_message``: a message an extension injects, in the context as a ``custom`` message (pi's
``CustomMessageEntry``)."""

from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field

from sessionstore.models.content import ImageContent, TextContent
from sessionstore.models.kinds.base import EntryBase, EntryBaseDict, EntryKind, plain_json, put_optional
from sessionstore.models.wire import JsonObject as Json
from sessionstore.models.wire import JsonValue, UserContentBlockDict


class CustomMessageEntryDict(EntryBaseDict):
    type: Literal["custom_message"]
    customType: str
    content: str | list[UserContentBlockDict]
    details: NotRequired[JsonValue]
    display: bool


class CustomMessageEntry(EntryBase):
    type: Literal["custom_message"] = "custom_message"
    custom_type: str
    content: str | list[Annotated[TextContent | ImageContent, Field(discriminator="type")]]
    display: bool
    details: Any = None


def build(entry: Mapping[str, Any], where: str) -> Json:
    """``display`` left out is ``True`` (shown), as the typed append's default."""
    fields: Json = {"type": "custom_message", "customType": entry.get("customType"),
                    "content": plain_json(entry.get("content"), f"{where}content"),
                    "display": entry.get("display", True)}
    put_optional(fields, entry, "details", path=f"{where}details")
    return fields


KIND = EntryKind("custom_message", CustomMessageEntryDict, CustomMessageEntry, build)

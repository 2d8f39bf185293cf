"""``custom``: an extension's state, never part of the context (pi's ``CustomEntry``)."""

from collections.abc import Mapping
from typing import Any, Literal, NotRequired

from sessionstore.models.kinds.base import EntryBase, EntryBaseDict, EntryKind, put_optional
from sessionstore.models.wire import JsonObject as Json
from sessionstore.models.wire import JsonValue


class CustomEntryDict(EntryBaseDict):
    type: Literal["custom"]
    customType: str
    data: NotRequired[JsonValue]


class CustomEntry(EntryBase):
    type: Literal["custom"] = "custom"
    custom_type: str
    data: Any = None


def build(entry: Mapping[str, Any], where: str) -> Json:
    fields: Json = {"type": "custom", "customType": entry.get("customType")}
    put_optional(fields, entry, "data", path=f"{where}data")
    return fields


KIND = EntryKind("custom", CustomEntryDict, CustomEntry, build)

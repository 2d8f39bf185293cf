"""``thinking_level_change``: the reasoning level from here on (pi's ``ThinkingLevelChangeEntry``)."""

from collections.abc import Mapping
from typing import Any, Literal

from sessionstore.models.kinds.base import EntryBase, EntryBaseDict, EntryKind
from sessionstore.models.wire import JsonObject as Json


class ThinkingLevelChangeEntryDict(EntryBaseDict):
    type: Literal["thinking_level_change"]
    thinkingLevel: str


class ThinkingLevelChangeEntry(EntryBase):
    type: Literal["thinking_level_change"] = "thinking_level_change"
    thinking_level: str


def build(entry: Mapping[str, Any], where: str) -> Json:
    return {"type": "thinking_level_change", "thinkingLevel": entry.get("thinkingLevel")}


KIND = EntryKind("thinking_level_change", ThinkingLevelChangeEntryDict, ThinkingLevelChangeEntry, build)

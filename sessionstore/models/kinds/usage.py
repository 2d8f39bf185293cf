"""``usage``: model usage outside the conversation, counted in the session's totals (pi 1.6's
``UsageEntry``; it writes ``kind: "cache_warm"``)."""

from collections.abc import Mapping
from typing import Any, Literal, NotRequired

from sessionstore.models.kinds.base import EntryBase, EntryBaseDict, EntryKind, plain_json
from sessionstore.models.wire import JsonObject as Json
from sessionstore.models.wire import UsageDict


class UsageEntryDict(EntryBaseDict):
    type: Literal["usage"]
    kind: str  # pi writes "cache_warm"
    provider: str
    model: str
    usage: UsageDict
    note: NotRequired[str]


class UsageEntry(EntryBase):
    """Model usage outside the conversation (pi 1.6 writes ``kind: "cache_warm"``); counted in totals."""

    type: Literal["usage"] = "usage"
    kind: str
    provider: str
    model: str
    usage: dict[str, Any]
    note: str | None = None


def build(entry: Mapping[str, Any], where: str) -> Json:
    fields: Json = {"type": "usage", "kind": entry.get("kind"), "provider": entry.get("provider"),
                    "model": entry.get("model"), "usage": plain_json(entry.get("usage"), f"{where}usage")}
    if entry.get("note"):  # pi writes the note only when truthy
        fields["note"] = entry["note"]
    return fields


KIND = EntryKind("usage", UsageEntryDict, UsageEntry, build)

"""``label``: a bookmark on an entry, or its removal (pi's ``LabelEntry``)."""

from collections.abc import Mapping
from typing import Any, Literal, NotRequired

from sessionstore.errors import EntryNotFoundError
from sessionstore.models.kinds.base import EntryBase, EntryBaseDict, EntryKind, SessionView, put_optional
from sessionstore.models.wire import JsonObject as Json


class LabelEntryDict(EntryBaseDict):
    type: Literal["label"]
    targetId: str
    label: NotRequired[str | None]  # absent (or empty) clears


class LabelEntry(EntryBase):
    type: Literal["label"] = "label"
    target_id: str
    label: str | None = None


def build(entry: Mapping[str, Any], where: str) -> Json:
    fields: Json = {"type": "label", "targetId": entry.get("targetId")}
    put_optional(fields, entry, "label")
    return fields


def check(view: SessionView, entry: Json) -> None:
    """pi refuses to label an id the session does not have (on any branch)."""
    target = entry.get("targetId")
    if not isinstance(target, str) or not view.has(target):
        raise EntryNotFoundError(view.session_id, str(target))


KIND = EntryKind("label", LabelEntryDict, LabelEntry, build, check)

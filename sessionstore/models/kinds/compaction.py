"""``compaction``: a summary standing for the path before ``firstKeptEntryId`` (pi's ``CompactionEntry``)."""

from collections.abc import Mapping
from typing import Any, Literal, NotRequired

from sessionstore.errors import InvalidCompactionError, InvalidInputError
from sessionstore.models.kinds.base import EntryBase, EntryBaseDict, EntryKind, SessionView, put_optional
from sessionstore.models.wire import JsonObject as Json
from sessionstore.models.wire import JsonValue, SystemMessageDict, UsageDict


class CompactionEntryDict(EntryBaseDict):
    type: Literal["compaction"]
    summary: str
    firstKeptEntryId: NotRequired[str]  # pi 1.6 always writes it; v1 files whose index named no entry lack it
    tokensBefore: int | float
    details: NotRequired[JsonValue]
    usage: NotRequired[UsageDict]
    fromHook: NotRequired[bool]
    systemMessage: NotRequired[SystemMessageDict]


class CompactionEntry(EntryBase):
    type: Literal["compaction"] = "compaction"
    summary: str
    first_kept_entry_id: str | None = None  # absent in v1 files whose index named no entry (pi keeps nothing)
    tokens_before: int | float
    details: Any = None
    usage: dict[str, Any] | None = None
    from_hook: bool | None = None
    system_message: dict[str, Any] | None = None


def build(entry: Mapping[str, Any], where: str) -> Json:
    """A compaction as given; the store writes no compaction without ``firstKeptEntryId`` (only v1
    files lack it). ``SessionStore.compact`` plans one."""
    if not isinstance(entry.get("firstKeptEntryId"), str):
        raise InvalidInputError("a compaction needs a string 'firstKeptEntryId' (compact plans it: 'sessionstore"
                                f" compact', SessionStore.compact), got {entry.get('firstKeptEntryId')!r}")
    fields: Json = {"type": "compaction", "summary": entry.get("summary"),
                    "firstKeptEntryId": entry.get("firstKeptEntryId"), "tokensBefore": entry.get("tokensBefore")}
    put_optional(fields, entry, "details", path=f"{where}details")
    put_optional(fields, entry, "usage", path=f"{where}usage")
    put_optional(fields, entry, "fromHook")
    put_optional(fields, entry, "systemMessage", path=f"{where}systemMessage")
    return fields


def check(view: SessionView, entry: Json) -> None:
    """``firstKeptEntryId`` is on the path before the compaction and is not a toolResult (pi stores such
    ids unchecked, then drops context or sends an orphan result)."""
    first_kept = entry["firstKeptEntryId"]
    target = view.entry_on_path(first_kept)
    if target is None:
        raise InvalidCompactionError(
            f"firstKeptEntryId {first_kept!r} is not on the path before the compaction"
            " (pi would silently drop every kept message)"
        )
    message = target.get("message")
    if target.get("type") == "message" and isinstance(message, dict) and message.get("role") == "toolResult":
        raise InvalidCompactionError(
            f"firstKeptEntryId {first_kept!r} is a toolResult: the kept part would start with a result"
            " whose call was summarised away"
        )


KIND = EntryKind("compaction", CompactionEntryDict, CompactionEntry, build, check)

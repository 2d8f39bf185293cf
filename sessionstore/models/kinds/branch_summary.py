"""``branch_summary``: a summary of the branch left, where the path goes on (pi's ``BranchSummaryEntry``)."""

from collections.abc import Mapping
from typing import Any, Literal, NotRequired

from sessionstore.errors import InvalidInputError
from sessionstore.models.kinds.base import EntryBase, EntryBaseDict, EntryKind, put_optional
from sessionstore.models.wire import JsonObject as Json
from sessionstore.models.wire import JsonValue, UsageDict


class BranchSummaryEntryDict(EntryBaseDict):
    type: Literal["branch_summary"]
    fromId: str | None  # pi writes a string ("root" for the root); older files hold null
    summary: str
    details: NotRequired[JsonValue]
    usage: NotRequired[UsageDict]
    fromHook: NotRequired[bool]


class BranchSummaryEntry(EntryBase):
    type: Literal["branch_summary"] = "branch_summary"
    from_id: str | None
    summary: str
    details: Any = None
    usage: dict[str, Any] | None = None
    from_hook: bool | None = None


def build(entry: Mapping[str, Any], where: str) -> Json:
    """``fromId`` must be given (null is older files' form, not a default)."""
    if "fromId" not in entry:
        raise InvalidInputError('a branch_summary needs "fromId": the leaf it leaves ("root" when none)')
    fields: Json = {"type": "branch_summary", "fromId": entry["fromId"], "summary": entry.get("summary")}
    put_optional(fields, entry, "details", path=f"{where}details")
    put_optional(fields, entry, "usage", path=f"{where}usage")
    put_optional(fields, entry, "fromHook")
    return fields


KIND = EntryKind("branch_summary", BranchSummaryEntryDict, BranchSummaryEntry, build)

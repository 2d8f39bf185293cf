"""``session_info``: the session's name (the latest wins; pi's ``SessionInfoEntry``)."""

import re
from collections.abc import Mapping
from typing import Any, Literal, NotRequired

from sessionstore.errors import InvalidInputError
from sessionstore.models.kinds.base import EntryBase, EntryBaseDict, EntryKind
from sessionstore.models.wire import JsonObject as Json

_LINE_BREAKS = re.compile(r"[\r\n]+")


class SessionInfoEntryDict(EntryBaseDict):
    type: Literal["session_info"]
    name: NotRequired[str | None]


class SessionInfoEntry(EntryBase):
    type: Literal["session_info"] = "session_info"
    name: str | None = None


def session_name(name: Any) -> str:
    """A session name as pi 1.6 writes it: every run of CR/LF becomes one space, then trimmed."""
    if not isinstance(name, str):
        raise InvalidInputError(f"a session name must be a string, got {type(name).__name__}")
    return _LINE_BREAKS.sub(" ", name).strip()


def build(entry: Mapping[str, Any], where: str) -> Json:
    return {"type": "session_info", "name": session_name(entry.get("name"))}


KIND = EntryKind("session_info", SessionInfoEntryDict, SessionInfoEntry, build)

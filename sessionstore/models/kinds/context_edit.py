"""``context_edit``: what the model sees of an earlier entry on this branch, replaced or omitted (pi 1.6's
``ContextEditEntry``)."""

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from sessionstore.errors import EntryNotFoundError, InvalidInputError
from sessionstore.models.content import WireModel
from sessionstore.models.kinds.base import EntryBase, EntryBaseDict, EntryKind, SessionView, plain_json
from sessionstore.models.roles import BLOCK_TEXT_ROLES, EDIT_TARGET_ROLES
from sessionstore.models.wire import ContentBlockDict
from sessionstore.models.wire import JsonObject as Json


class ContextEditReplacementDict(TypedDict):
    content: str | list[ContentBlockDict]  # the content of the target's message


class ContextEditEntryDict(EntryBaseDict):
    type: Literal["context_edit"]
    targetId: str
    replacement: ContextEditReplacementDict | None  # null omits the target from the context


class ContextEditReplacement(WireModel):
    content: str | list[Any]


class ContextEditEntry(EntryBase):
    """An edit of an earlier entry's part of the context on this branch (pi 1.6): ``replacement``
    ``None`` omits the target's messages, else their ``content`` is replaced."""

    type: Literal["context_edit"] = "context_edit"
    target_id: str
    replacement: ContextEditReplacement | None


def context_replacement(replacement: Any) -> Any:
    """A context edit's ``replacement`` as given: ``None`` or a mapping with string/array content."""
    if replacement is not None and (
        not isinstance(replacement, Mapping) or not isinstance(replacement.get("content"), str | list)
    ):
        raise InvalidInputError("Context edit replacement must be null or contain string/array content")
    return replacement


def build(entry: Mapping[str, Any], where: str) -> Json:
    """The edit as stored; its target's role (a string content becomes one text block for assistant and
    toolResult targets) is applied by :func:`check`, which reads the target. ``replacement`` must be
    given: null omits the target, so a missing key is not read as null."""
    if "replacement" not in entry:
        raise InvalidInputError('a context_edit needs "replacement": null (omit the target) or {"content": ...}')
    replacement = context_replacement(entry.get("replacement"))
    if replacement is None:
        return {"type": "context_edit", "targetId": entry.get("targetId"), "replacement": None}
    stored = {"content": plain_json(replacement["content"], f"{where}replacement.content")}
    return {"type": "context_edit", "targetId": entry.get("targetId"), "replacement": stored}


def check(view: SessionView, entry: Json) -> None:
    """The target exists, is on the branch the edit extends, and contributes editable model content
    (a ``custom_message`` or a user, assistant or toolResult ``message``); pi's error texts."""
    target_id = entry.get("targetId")
    if not isinstance(target_id, str) or not view.has(target_id):
        raise EntryNotFoundError(view.session_id, str(target_id))
    target = view.entry_on_path(target_id)
    if target is None:
        raise InvalidInputError(f"Entry {target_id} is not on the active branch")
    message = target.get("message")
    role = message.get("role") if target.get("type") == "message" and isinstance(message, dict) else None
    if target.get("type") != "custom_message" and role not in EDIT_TARGET_ROLES:
        raise InvalidInputError(f"Entry {target_id} does not contribute editable model content")
    replacement = entry.get("replacement")
    content = replacement.get("content") if isinstance(replacement, dict) else None
    if isinstance(replacement, dict) and role in BLOCK_TEXT_ROLES and isinstance(content, str):
        entry["replacement"] = {**replacement, "content": [{"type": "text", "text": replacement["content"]}]}


def problems(entry: Mapping[str, Any]) -> list[str]:
    replacement = entry.get("replacement")
    content = replacement.get("content") if isinstance(replacement, dict) else None
    if isinstance(replacement, dict) and not isinstance(content, str | list):
        return ["replacement.content is not a string or an array"]
    return []


KIND = EntryKind("context_edit", ContextEditEntryDict, ContextEditEntry, build, check, problems)

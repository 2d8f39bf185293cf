"""The one home of what an append of each entry type needs, refuses and normalises.

Both the typed appends of :class:`~sessionstore.api.SessionStore` (``append_label``, ``compact`` ...) and the
generic ``append_entries`` go through these rules, so nothing one refuses can be stored by the other:

- :func:`entry_fields` turns a pi v3 entry object (without ``id``/``parentId``/``timestamp``) into the
  fields the store writes, in the key order the typed append writes them (unknown fields follow, kept);
- :func:`check_in_transaction` runs the rules that read the session (a label's target exists, a context
  edit's target is on the branch and editable, a compaction's ``firstKeptEntryId``) inside the append's
  transaction, before anything is written, so they hold against concurrent writers too.

Each rule raises with the text the typed append has always raised; the generic path prefixes it with the
entry's place (``entries[3]: ...``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from sessionstore.errors import EntryNotFoundError, InvalidCompactionError, InvalidInputError
from sessionstore.models.frozen import MAX_JSON_DEPTH, freeze_json, thaw
from sessionstore.models.wire import AgentMessageDict
from sessionstore.models.wire import JsonObject as Json
from sessionstore.wire.codec import dump_line, json_loads, within_json_depth

if TYPE_CHECKING:
    from sessionstore.models.content import WireModel
    from sessionstore.store.entry_store import AppendView

_LINE_BREAKS = re.compile(r"[\r\n]+")
EDITABLE_ROLES = ("user", "assistant", "toolResult")


def plain_json(value: Any, path: str) -> Any:
    """A deep copy of ``value`` that is plain JSON data (``InvalidInputError`` naming ``path`` if not)."""
    try:
        return thaw(freeze_json(value, path))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(str(exc)) from None


def message_to_wire(message: WireModel | AgentMessageDict | Mapping[str, Any]) -> AgentMessageDict:
    """Wire data of a message: a model's ``to_wire()``, or a deep copy of a mapping whose known role
    must have the right shape (unknown roles are kept as opaque data; role ``system`` is pi 1.6's)."""
    from pydantic import ValidationError

    from sessionstore.models.content import WireModel
    from sessionstore.models.messages import parse_agent_message
    from sessionstore.wire.jsonl import format_validation_error

    if isinstance(message, WireModel):
        return cast(AgentMessageDict, message.to_wire())
    if not isinstance(message, Mapping):
        raise InvalidInputError(f"a message must be a mapping or a message model, got {type(message).__name__}")
    too_deep = InvalidInputError(f"a message nested deeper than {MAX_JSON_DEPTH} levels (or holding itself)")
    try:  # a deep copy through the line pi would write, which also proves the message is plain JSON data
        text = dump_line(dict(message), finite_only=True)
    except RecursionError:
        raise too_deep from None
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"a message must be plain JSON data: {exc}") from None
    if text.count(b"[") + text.count(b"{") > MAX_JSON_DEPTH and not within_json_depth(message):
        raise too_deep
    data: Json = json_loads(text)
    if not isinstance(data.get("role"), str):
        raise InvalidInputError("a message needs a string 'role'")
    try:
        parse_agent_message(data)
    except ValidationError as exc:
        raise InvalidInputError(f"bad {data['role']!r} message: {format_validation_error(exc)}") from None
    return cast(AgentMessageDict, data)


def session_name(name: Any) -> str:
    """A session name as pi 1.6 writes it: every run of CR/LF becomes one space, then trimmed."""
    if not isinstance(name, str):
        raise InvalidInputError(f"a session name must be a string, got {type(name).__name__}")
    return _LINE_BREAKS.sub(" ", name).strip()


def context_replacement(replacement: Any) -> Any:
    """A context edit's ``replacement`` as given: ``None`` or a mapping with string/array content."""
    if replacement is not None and (
        not isinstance(replacement, Mapping) or not isinstance(replacement.get("content"), str | list)
    ):
        raise InvalidInputError("Context edit replacement must be null or contain string/array content")
    return replacement


def _optional(fields: Json, entry: Mapping[str, Any], key: str, *, path: str | None = None) -> None:
    """Copy ``entry[key]`` into ``fields`` unless absent or ``None`` (as plain JSON when ``path``)."""
    value = entry.get(key)
    if value is not None:
        fields[key] = plain_json(value, path) if path is not None else value


def _message(entry: Mapping[str, Any], where: str) -> Json:
    if "message" not in entry:
        raise InvalidInputError("a message entry needs a 'message'")
    return {"type": "message", "message": message_to_wire(entry["message"])}


def _custom(entry: Mapping[str, Any], where: str) -> Json:
    fields: Json = {"type": "custom", "customType": entry.get("customType")}
    _optional(fields, entry, "data", path=f"{where}data")
    return fields


def _custom_message(entry: Mapping[str, Any], where: str) -> Json:
    fields: Json = {"type": "custom_message", "customType": entry.get("customType"),
                    "content": plain_json(entry.get("content"), f"{where}content"), "display": entry.get("display")}
    _optional(fields, entry, "details", path=f"{where}details")
    return fields


def _label(entry: Mapping[str, Any], where: str) -> Json:
    fields: Json = {"type": "label", "targetId": entry.get("targetId")}
    _optional(fields, entry, "label")
    return fields


def _session_info(entry: Mapping[str, Any], where: str) -> Json:
    return {"type": "session_info", "name": session_name(entry.get("name"))}


def _model_change(entry: Mapping[str, Any], where: str) -> Json:
    return {"type": "model_change", "provider": entry.get("provider"), "modelId": entry.get("modelId")}


def _thinking_level_change(entry: Mapping[str, Any], where: str) -> Json:
    return {"type": "thinking_level_change", "thinkingLevel": entry.get("thinkingLevel")}


def _usage(entry: Mapping[str, Any], where: str) -> Json:
    fields: Json = {"type": "usage", "kind": entry.get("kind"), "provider": entry.get("provider"),
                    "model": entry.get("model"), "usage": plain_json(entry.get("usage"), f"{where}usage")}
    if entry.get("note"):  # pi writes the note only when truthy
        fields["note"] = entry["note"]
    return fields


def _context_edit(entry: Mapping[str, Any], where: str) -> Json:
    """The edit as stored; its target's role (a string content becomes one text block for assistant and
    toolResult targets) is applied by :func:`check_in_transaction`, which reads the target."""
    replacement = context_replacement(entry.get("replacement"))
    if replacement is None:
        return {"type": "context_edit", "targetId": entry.get("targetId"), "replacement": None}
    stored = {"content": plain_json(replacement["content"], f"{where}replacement.content")}
    return {"type": "context_edit", "targetId": entry.get("targetId"), "replacement": stored}


def _branch_summary(entry: Mapping[str, Any], where: str) -> Json:
    fields: Json = {"type": "branch_summary", "fromId": entry.get("fromId"), "summary": entry.get("summary")}
    _optional(fields, entry, "details", path=f"{where}details")
    _optional(fields, entry, "usage", path=f"{where}usage")
    _optional(fields, entry, "fromHook")
    return fields


def _compaction(entry: Mapping[str, Any], where: str) -> Json:
    fields: Json = {"type": "compaction", "summary": entry.get("summary"),
                    "firstKeptEntryId": entry.get("firstKeptEntryId"), "tokensBefore": entry.get("tokensBefore")}
    _optional(fields, entry, "details", path=f"{where}details")
    _optional(fields, entry, "usage", path=f"{where}usage")
    _optional(fields, entry, "fromHook")
    _optional(fields, entry, "systemMessage", path=f"{where}systemMessage")
    return fields


_FIELDS: dict[str, Callable[[Mapping[str, Any], str], Json]] = {
    "message": _message,
    "custom": _custom,
    "custom_message": _custom_message,
    "label": _label,
    "session_info": _session_info,
    "model_change": _model_change,
    "thinking_level_change": _thinking_level_change,
    "usage": _usage,
    "context_edit": _context_edit,
    "branch_summary": _branch_summary,
    "compaction": _compaction,
}
_KNOWN: dict[str, frozenset[str]] = {
    "message": frozenset({"type", "message"}),
    "custom": frozenset({"type", "customType", "data"}),
    "custom_message": frozenset({"type", "customType", "content", "display", "details"}),
    "label": frozenset({"type", "targetId", "label"}),
    "session_info": frozenset({"type", "name"}),
    "model_change": frozenset({"type", "provider", "modelId"}),
    "thinking_level_change": frozenset({"type", "thinkingLevel"}),
    "usage": frozenset({"type", "kind", "provider", "model", "usage", "note"}),
    "context_edit": frozenset({"type", "targetId", "replacement"}),
    "branch_summary": frozenset({"type", "fromId", "summary", "details", "usage", "fromHook"}),
    "compaction": frozenset({"type", "summary", "firstKeptEntryId", "tokensBefore", "details", "usage", "fromHook",
                             "systemMessage"}),
}
"""The fields each rule reads; any other field of an entry object is kept unchanged after them."""
APPENDABLE_TYPES = tuple(_FIELDS)
"""The entry types an append takes (every type a typed append writes)."""

PLACE_KEYS = ("id", "parentId", "timestamp")
"""The keys of an entry object that place it (given or filled by the store), not its content."""


def entry_fields(entry: Any, *, where: str = "") -> Json:
    """The fields the store writes for the pi v3 entry object ``entry`` (``type`` first, then the type's
    fields in the typed append's order, then any unknown fields unchanged; ``id``, ``parentId`` and
    ``timestamp`` left to the caller). Raises ``InvalidInputError`` for a non-object, a header, an
    unknown type, or what the type's typed append refuses before reading the session."""
    if not isinstance(entry, Mapping):
        raise InvalidInputError(f"an entry must be an object, got {type(entry).__name__}")
    kind = entry.get("type")
    rule = _FIELDS.get(kind) if isinstance(kind, str) else None
    if rule is None or not isinstance(kind, str):
        raise InvalidInputError(f"an entry's 'type' must be one of {', '.join(APPENDABLE_TYPES)}; got {kind!r}")
    fields = rule(entry, where)
    known = _KNOWN[kind]
    for key, value in entry.items():
        if key not in known and key not in PLACE_KEYS:
            fields[key] = plain_json(value, f"{where}{key}")
    return fields


def check_in_transaction(view: AppendView, entry: Json) -> None:
    """The rules of ``entry`` that read the session, run inside the append's transaction (may complete
    the entry: a context edit's string content becomes a text block for assistant/toolResult targets)."""
    kind = entry.get("type")
    if kind == "label":
        check_label(view, entry)
    elif kind == "context_edit":
        check_context_edit(view, entry)
    elif kind == "compaction":
        check_first_kept(view, entry)


def check_label(view: AppendView, entry: Json) -> None:
    """pi refuses to label an id the session does not have (on any branch)."""
    target = entry.get("targetId")
    if not isinstance(target, str) or view.facts(target) is None:
        raise EntryNotFoundError(view.head.id, str(target))


def check_context_edit(view: AppendView, entry: Json) -> None:
    """The target exists, is on the branch the edit extends, and contributes editable model content
    (a ``custom_message`` or a user, assistant or toolResult ``message``); pi's error texts."""
    target_id = entry.get("targetId")
    if not isinstance(target_id, str) or view.facts(target_id) is None:
        raise EntryNotFoundError(view.head.id, str(target_id))
    target = view.entry_on_path(target_id)
    if target is None:
        raise InvalidInputError(f"Entry {target_id} is not on the active branch")
    message = target.get("message")
    role = message.get("role") if target.get("type") == "message" and isinstance(message, dict) else None
    if target.get("type") != "custom_message" and role not in EDITABLE_ROLES:
        raise InvalidInputError(f"Entry {target_id} does not contribute editable model content")
    replacement = entry.get("replacement")
    content = replacement.get("content") if isinstance(replacement, dict) else None
    if isinstance(replacement, dict) and role in ("assistant", "toolResult") and isinstance(content, str):
        entry["replacement"] = {**replacement, "content": [{"type": "text", "text": replacement["content"]}]}


def check_first_kept(view: AppendView, entry: Json) -> None:
    """A compaction's ``firstKeptEntryId`` is on the path before it and is not a toolResult."""
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


__all__ = ["APPENDABLE_TYPES", "check_in_transaction", "entry_fields", "message_to_wire", "plain_json"]

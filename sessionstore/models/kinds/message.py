"""``message``: one message of the conversation, of any role (pi 1.6's ``SessionMessageEntry``)."""

from collections.abc import Mapping
from typing import Any, Literal, cast

from pydantic import ValidationError, field_validator

from sessionstore.errors import InvalidInputError
from sessionstore.models.content import WireModel
from sessionstore.models.js import json_type
from sessionstore.models.kinds.base import EntryBase, EntryBaseDict, EntryKind
from sessionstore.models.problems import format_validation_error
from sessionstore.models.wire import AgentMessageDict
from sessionstore.models.wire import JsonObject as Json
from sessionstore.models.wire_shape import MESSAGE_FIELDS


class MessageEntryDict(EntryBaseDict):
    type: Literal["message"]
    message: AgentMessageDict


class MessageEntry(EntryBase):
    type: Literal["message"] = "message"
    message: dict[str, Any]

    @field_validator("message")
    @classmethod
    def _has_role(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(value.get("role"), str):
            raise ValueError("message needs a string 'role'")
        return value


def message_to_wire(message: WireModel | AgentMessageDict | Mapping[str, Any]) -> AgentMessageDict:
    """Wire data of a message: a model's ``to_wire()``, or a mapping whose known role must have the
    right shape (unknown roles are kept as opaque data; role ``system`` is pi 1.6's). Checked once,
    here; whether it is JSON data (finite numbers, string keys, not too deep) is proven by the one
    encoding of the entry that holds it, when it is stored."""
    from sessionstore.models.messages import parse_agent_message

    if isinstance(message, WireModel):
        return cast(AgentMessageDict, message.to_wire())
    if not isinstance(message, Mapping):
        raise InvalidInputError(f"a message must be a mapping or a message model, got {type(message).__name__}")
    data: Json = dict(message)
    if not isinstance(data.get("role"), str):
        raise InvalidInputError("a message needs a string 'role'")
    try:
        parse_agent_message(data)
    except ValidationError as exc:
        raise InvalidInputError(f"bad {data['role']!r} message: {format_validation_error(exc)}") from None
    except RecursionError:
        raise InvalidInputError("a message that holds itself") from None
    return cast(AgentMessageDict, data)


def build(entry: Mapping[str, Any], where: str) -> Json:
    if "message" not in entry:
        raise InvalidInputError("a message entry needs a 'message'")
    return {"type": "message", "message": message_to_wire(entry["message"])}


_PYTHON_TYPES = {"string": str, "array": list, "object": dict, "number": float, "boolean": bool}
_CONTENT: dict[str, tuple[type, ...]] = {
    role: tuple(_PYTHON_TYPES[t] for t in sorted(field.kind.types) if t in _PYTHON_TYPES)
    for role, fields in MESSAGE_FIELDS.items() for field in fields if field.key == "content" and field.required
}
"""Role -> what its TypedDict says its ``content`` holds (the context conversion reads it; pi 1.6
normalises missing content): the roles that have one."""


def problems(entry: Mapping[str, Any]) -> list[str]:
    """What a file's message lacks of its role's shape beyond being an object: its role, its content, and a
    bash execution's command and output."""
    message = entry.get("message")
    if not isinstance(message, dict):
        return []  # (the field table says what it is)
    role = message.get("role")
    if not isinstance(role, str):
        return [f"message.role is {'missing' if 'role' not in message else json_type(role)}"]
    found: list[str] = []
    accepted = _CONTENT.get(role)
    if accepted is not None and not isinstance(message.get("content"), accepted):
        got = "missing" if "content" not in message else json_type(message["content"])
        found.append(f"message.content ({role}) is {got}")
    if role == "bashExecution":
        for name in ("command", "output"):
            if not isinstance(message.get(name), str):
                got = "missing" if name not in message else json_type(message[name])
                found.append(f"message.{name} is {got}")
    return found


KIND = EntryKind("message", MessageEntryDict, MessageEntry, build, problems=problems)

"""The shape rules compiled for plain JSON data: a message made of exact ``dict``, ``list``, ``str``,
``int``, finite ``float``, ``bool`` and ``None`` values (what a session's decoded entries are) is
checked by one predicate per role, built once from the same TypedDicts the full rules read.

The predicate answers only "valid, nothing to report": it returns ``False`` for anything it does
not accept plainly (a problem, a mapping that is not a ``dict``, a tuple, a misplaced tool call),
and the full rules of :mod:`sessionstore.validate._shape` then read the message and report what
they find. So a message the predicate accepts is one the full rules accept
(``tests/test_message_shape_agreement.py`` holds the full rules to the models; its valid messages
pass here, its invalid ones fall through).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final

from sessionstore.models.wire_shape import MESSAGE_FIELDS, WireField, WireKind
from sessionstore.validate._json_object import find_json_object_problem

Calls = list[tuple[int, str, str]]
"""The tool calls of a message the predicate accepted: (block index, id, name)."""
Check = Callable[[Any], bool]

_JSON_TYPE: Final[Mapping[type, str]] = {
    str: "string", bool: "boolean", int: "number", float: "number", type(None): "null", dict: "object",
    list: "array",
}
_ABSENT: Final = object()


def _compile(kind: WireKind) -> Check:
    """A predicate for values of ``kind`` (the variants of a block list are compiled by the caller)."""
    if not kind.types:
        return lambda value: True
    allowed = kind.types
    literals = kind.literals
    fields = _compile_fields(kind.fields) if kind.fields else None
    values = _compile(kind.values) if kind.values is not None else None
    items = _compile(kind.items) if kind.items is not None else None
    if kind.variants:
        blocks = _compile_blocks(kind.variants)
        return lambda value: type(value) is list and blocks(value, None)
    if allowed == {"object"} and fields is not None and values is None:
        object_fields = fields  # (usage and its cost: the one test this kind needs)
        return lambda value: type(value) is dict and object_fields(value)

    def check(value: Any) -> bool:
        kind_name = _JSON_TYPE.get(type(value))
        if kind_name is None or kind_name not in allowed:
            return False
        if kind_name == "number" and type(value) is float and not math.isfinite(value):
            return False
        if literals and kind_name == "string" and value not in literals:
            return False
        if kind_name == "object":
            if fields is not None and not fields(value):
                return False
            if values is not None and not all(values(v) for v in value.values()):
                return False
        elif kind_name == "array" and items is not None:
            return all(items(v) for v in value)
        return True

    return check


_PYTHON_TYPES: Final[Mapping[str, tuple[type, ...]]] = {
    "string": (str,), "number": (int, float), "boolean": (bool,), "null": (type(None),),
}


def _scalar_types(kind: WireKind) -> frozenset[type] | None:
    """The exact Python types of a kind that is only scalars (no literals), checked inline; else ``None``."""
    if not kind.types or kind.literals or not kind.types <= _PYTHON_TYPES.keys():
        return None
    return frozenset(t for name in kind.types for t in _PYTHON_TYPES[name])


def _compile_fields(declared: tuple[WireField, ...], *, skip: frozenset[str] = frozenset()) -> Check:
    checks = [(f.key, f.required, _scalar_types(f.kind), _compile(f.kind))
              for f in declared if not f.opaque and f.key not in skip]
    isfinite = math.isfinite

    def check(value: dict[str, Any]) -> bool:
        get = value.get
        for key, required, scalars, field_check in checks:
            item = get(key, _ABSENT)
            if item is _ABSENT:
                if required:
                    return False
            elif scalars is not None:
                kind = type(item)
                if kind not in scalars or (kind is float and not isfinite(item)):
                    return False
            elif not field_check(item):
                return False
        return True

    return check


_PLAIN_CONTAINERS: Final = 10_000
"""Containers :func:`_plain_json_object` looks at before it leaves a value to the full check."""


def _plain_json_object(value: Any) -> bool:
    """Whether ``value`` is plainly a JSON object: an exact ``dict`` of string keys whose values are exact
    ``dict``/``list``/``str``/``int``/``bool``/``None`` and finite ``float`` (a decoded payload's tool
    arguments). ``False`` decides nothing: ``find_json_object_problem`` then reads the value (also a
    cycle, which shows here as more than ``_PLAIN_CONTAINERS`` containers)."""
    if type(value) is not dict:
        return False
    isfinite = math.isfinite
    stack: list[Any] = [value]
    budget = _PLAIN_CONTAINERS
    while stack:
        container = stack.pop()
        if type(container) is dict:
            for key in container:
                if type(key) is not str:
                    return False
            children: Any = container.values()
        else:
            children = container
        for child in children:
            kind = type(child)
            if kind is str or kind is int or kind is bool or child is None:
                continue
            if kind is float:
                if not isfinite(child):
                    return False
                continue
            if kind is not dict and kind is not list:
                return False
            budget -= 1
            if budget < 0:
                return False
            stack.append(child)
    return True


BlockCheck = Callable[[list[Any], "Calls | None"], bool]


def _compile_blocks(variants: Mapping[str, tuple[WireField, ...]]) -> BlockCheck:
    by_tag = {
        tag: _compile_fields(declared, skip=frozenset({"type", "id", "name", "arguments"}) if tag == "toolCall"
                             else frozenset({"type"}))
        for tag, declared in variants.items()
    }

    def check(blocks: list[Any], calls: Calls | None) -> bool:
        for block_index, block in enumerate(blocks):
            if type(block) is not dict:
                return False
            tag = block.get("type")
            block_check = by_tag.get(tag) if type(tag) is str else None
            if block_check is None or not block_check(block):
                return False
            if tag == "toolCall":
                call_id, name = block.get("id"), block.get("name")
                if type(call_id) is not str or not call_id or type(name) is not str or "arguments" not in block:
                    return False
                arguments = block["arguments"]
                if not _plain_json_object(arguments) and find_json_object_problem(arguments) is not None:
                    return False
                if calls is None:  # (a tool call outside assistant content is reported by the full rules)
                    return False
                calls.append((block_index, call_id, name))
        return True

    return check


def _compile_message(declared: tuple[WireField, ...]) -> Callable[[dict[str, Any], Calls], bool]:
    content = next((f for f in declared if f.key == "content"), None)
    rest = _compile_fields(tuple(f for f in declared if f.key not in ("role", "content")))
    string_content = content is not None and "string" in content.kind.types
    blocks = _compile_blocks(content.kind.variants) if content is not None and content.kind.variants else None

    def check(message: dict[str, Any], calls: Calls) -> bool:
        if content is not None:
            value = message.get("content", _ABSENT)
            if value is _ABSENT:
                return False
            plain_string = string_content and type(value) is str
            if not plain_string and (type(value) is not list or blocks is None or not blocks(value, calls)):
                return False
        return rest(message)

    return check


_MESSAGE_CHECKS: Final = {role: _compile_message(declared) for role, declared in MESSAGE_FIELDS.items()}
_CALLS_ALLOWED: Final = frozenset({"assistant"})


def plain_calls(message: object) -> Calls | None:
    """The tool calls of ``message`` when it is a plain ``dict`` of a built-in role with nothing to
    report (``[]`` when it has none), else ``None``. Never raises: what raises when read (a key whose
    equality raises) is left to the full rules, which report it."""
    if type(message) is not dict:
        return None
    found: Calls = []
    try:
        role = message.get("role")
        check = _MESSAGE_CHECKS.get(role) if type(role) is str else None
        if check is None or not check(message, found):
            return None
    except Exception:
        return None
    if found and role not in _CALLS_ALLOWED:
        return None
    return found


def plainly_valid(message: object, calls: Calls) -> bool:
    """Whether ``message`` is a plain ``dict`` of a built-in role with nothing to report; its tool calls
    are appended to ``calls`` (only when it is accepted). Never raises (see :func:`plain_calls`)."""
    found = plain_calls(message)
    if found is None:
        return False
    calls.extend(found)
    return True

"""Plain JSON data: validated deep copies, read-only freezing, and thawing back.

``snapshot_json`` is the trust boundary for values the adapter did not build itself. It accepts
only *plain JSON data* and returns a fresh deep copy that shares nothing with its input:

- ``None``, ``bool``, ``int``, finite ``float`` and ``str`` of exactly those types (no subclasses,
  so ``True`` stays a bool and is never mistaken for ``1``, and an ``IntEnum`` is rejected);
- ``list`` and ``dict`` of exactly those types, dict keys being exact ``str``.

Everything else is rejected with :class:`NotPlainJsonError` and never with another exception:
tuples, sets, generators, mappings that are not ``dict``, subclasses of ``dict``/``list``/``str``
(whose overridden accessors could raise or lie), custom classes, ``NaN``/``inf``, cycles, and
nesting deeper than :data:`MAX_DEPTH`. Inputs are inspected through the exact built-in types only,
so no user-defined code (property, ``__getitem__``, ``__iter__``, ``__eq__``) ever runs. The same
value reached twice without a cycle (a shared sub-list) is fine and copied twice.

``freeze_json`` turns validated data into read-only data (``tuple`` for arrays, a
``MappingProxyType`` over a private ``dict`` for objects); ``thaw_json`` builds plain mutable
copies again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import TypeAlias, cast

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
JsonObject: TypeAlias = dict[str, JsonValue]
FrozenJson: TypeAlias = bool | int | float | str | tuple["FrozenJson", ...] | Mapping[str, "FrozenJson"] | None
FrozenJsonObject: TypeAlias = Mapping[str, FrozenJson]

MAX_DEPTH = 256
"""Deepest nesting of arrays/objects accepted; deeper data is rejected instead of exhausting the stack."""


class NotPlainJsonError(ValueError):
    """A value is not plain JSON data. ``path`` locates it (``$.records[2].arguments``)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def snapshot_json(value: object, *, path: str = "$") -> JsonValue:
    """Return a deep copy of ``value`` if it is plain JSON data, else raise :class:`NotPlainJsonError`."""
    return _copy(value, path, 0, set())


def _copy(value: object, path: str, depth: int, open_containers: set[int]) -> JsonValue:
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str:
        return cast("bool | int | str | None", value)
    if kind is float:
        number = cast(float, value)
        if not math.isfinite(number):
            raise NotPlainJsonError(path, f"{number!r} is not a finite number")
        return number
    if kind is not list and kind is not dict:
        raise NotPlainJsonError(path, f"{type_name(value)} is not plain JSON data")
    if depth >= MAX_DEPTH:
        raise NotPlainJsonError(path, f"nested deeper than {MAX_DEPTH} levels")
    marker = id(value)
    if marker in open_containers:
        raise NotPlainJsonError(path, "contains itself (a cycle)")
    open_containers.add(marker)
    try:
        if kind is list:
            items = cast("list[object]", value)
            return [_copy(item, f"{path}[{index}]", depth + 1, open_containers) for index, item in enumerate(items)]
        fields = cast("dict[object, object]", value)
        copied: JsonObject = {}
        for key, item in fields.items():
            if type(key) is not str:
                raise NotPlainJsonError(path, f"object key of type {type_name(key)} is not a string")
            copied[key] = _copy(item, _member_path(path, key), depth + 1, open_containers)
        return copied
    finally:
        open_containers.discard(marker)


def _member_path(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"


def type_name(value: object) -> str:
    """The name of ``value``'s type, read without running any code of that type or its metaclass."""
    name: object = type.__dict__["__name__"].__get__(type(value))
    return name if type(name) is str else "object"


def freeze_json(value: JsonValue) -> FrozenJson:
    """Return a read-only deep copy of validated JSON data (arrays -> tuples, objects -> mapping proxies)."""
    if isinstance(value, list):
        return tuple(freeze_json(item) for item in value)
    if isinstance(value, dict):
        return freeze_object(value)
    return value


def freeze_object(value: JsonObject) -> FrozenJsonObject:
    """Return a read-only deep copy of a validated JSON object."""
    return MappingProxyType({key: freeze_json(item) for key, item in value.items()})


def thaw_json(value: FrozenJson) -> JsonValue:
    """Return a plain, mutable deep copy (``list``/``dict``) of frozen JSON data."""
    if isinstance(value, tuple):
        return [thaw_json(item) for item in value]
    if isinstance(value, Mapping):
        return thaw_object(value)
    return value


def thaw_object(value: FrozenJsonObject) -> JsonObject:
    """Return a plain, mutable deep copy of a frozen JSON object."""
    return {key: thaw_json(item) for key, item in value.items()}

"""A strict check of a JSON value against an SDK's request TypedDicts (the ``anthropic`` and ``openai``
packages' ``*CreateParams*`` types).

pydantic's ``TypeAdapter`` is no check for these types: their lists are ``Iterable[...]``, which pydantic
validates lazily (only when iterated), and TypedDicts let unknown keys through, so even a message of
role ``"bogus"`` passes. This walk reads the same annotations eagerly: required keys present, every
value of the annotated type, ``Literal`` values exact, a union matched by one of its members, and
every key a TypedDict does not declare reported (callers decide which provider extensions to allow).
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any, Literal, Required, Union, get_args, get_origin, get_type_hints

import typing_extensions

_REQUIRED = (Required, typing_extensions.Required)
_NOT_REQUIRED = (typing.NotRequired, typing_extensions.NotRequired)
_LITERAL = (Literal, typing_extensions.Literal)


class Mismatch(Exception):
    pass


def _is_typeddict(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, dict) and hasattr(kind, "__required_keys__")


def check(value: Any, kind: Any, path: str = "$") -> list[str]:
    """Raises ``Mismatch`` where ``value`` is not of ``kind``; returns the paths of undeclared keys."""
    origin = get_origin(kind)
    if kind is Any or kind is object:
        return []
    if origin in _REQUIRED or origin in _NOT_REQUIRED or origin is typing_extensions.Annotated or (
            origin is typing.Annotated):
        return check(value, get_args(kind)[0], path)
    if origin in _LITERAL:
        if value not in get_args(kind) or isinstance(value, bool) != any(isinstance(a, bool) for a in get_args(kind)):
            raise Mismatch(f"{path}: {value!r} is none of {get_args(kind)}")
        return []
    if origin is Union or origin is types.UnionType:
        failures, matches = [], []
        for member in get_args(kind):
            try:
                extras = check(value, member, path)
            except Mismatch as exc:
                failures.append(str(exc))
                continue
            if not extras:
                return extras
            matches.append(extras)
        if matches:  # the member that declares the most of the value's keys
            return min(matches, key=len)
        raise Mismatch(f"{path}: matches no member of the union:\n  " + "\n  ".join(failures[:6]))
    if kind is type(None):
        if value is not None:
            raise Mismatch(f"{path}: {value!r} is not null")
        return []
    if _is_typeddict(kind):
        return _check_typeddict(value, kind, path)
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence, typing.Iterable, typing.List):  # noqa: UP006
        if not isinstance(value, list):
            raise Mismatch(f"{path}: {type(value).__name__} is not a list")
        (item,) = get_args(kind) or (Any,)
        return [extra for index, element in enumerate(value) for extra in check(element, item, f"{path}[{index}]")]
    if origin in (dict, collections.abc.Mapping, typing.Dict):  # noqa: UP006
        if not isinstance(value, dict):
            raise Mismatch(f"{path}: {type(value).__name__} is not an object")
        return []
    if kind is str and not isinstance(value, str):
        raise Mismatch(f"{path}: {value!r} is not a string")
    if kind is bool and not isinstance(value, bool):
        raise Mismatch(f"{path}: {value!r} is not a boolean")
    if kind in (int, float) and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise Mismatch(f"{path}: {value!r} is not a number")
    return []


def _check_typeddict(value: Any, kind: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        raise Mismatch(f"{path}: {type(value).__name__} is not an object ({kind.__name__})")
    hints = get_type_hints(kind, include_extras=True)
    missing = [key for key in kind.__required_keys__ if key not in value]
    if missing:
        raise Mismatch(f"{path}: {kind.__name__} needs {missing}")
    extras = [f"{path}.{key}" for key in value if key not in hints]
    for key, element in value.items():
        if key in hints:
            extras.extend(check(element, hints[key], f"{path}.{key}"))
    return extras

"""Immutable JSON snapshots (SPEC 8).

``freeze_json`` reads a value once, checks that it is plain JSON data and returns an
immutable copy: dicts become :class:`FrozenDict`, lists become tuples. ``thaw`` turns a
snapshot back into plain ``dict``/``list`` values for the wire.

Rejected, with the path of the bad value in the message (``arguments.nested[2]``):
non-str keys, NaN and infinities, cycles, sets, bytes, tuples of the caller's making are
accepted as lists, anything else (custom objects, generators) is refused.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn


class FrozenDict(Mapping[str, Any]):
    """A read-only, hashable mapping with JSON values. Keys like ``__proto__`` are ordinary keys."""

    __slots__ = ("_data", "_hash")
    _data: dict[str, Any]
    _hash: int | None

    def __init__(self, data: dict[str, Any]) -> None:
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_hash", None)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError("FrozenDict is immutable")

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(tuple(self._data.items())))
        return self._hash  # type: ignore[return-value]  # set just above

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenDict):
            return self._data == other._data
        if isinstance(other, Mapping):
            return dict(self._data) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenDict({self._data!r})"


def _fail(path: str, reason: str, exc: type[Exception] = TypeError) -> NoReturn:
    raise exc(f"{path}: {reason}")


MAX_JSON_DEPTH = 200
"""Deepest nesting of arrays and objects the store takes (a real session entry is about 10 deep)."""


def freeze_json(value: Any, path: str = "value") -> Any:
    """Return an immutable deep copy of ``value`` or raise ``TypeError``/``ValueError`` naming the path."""
    return _freeze(value, path, set())


def _freeze(value: Any, path: str, active: set[int]) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            _fail(path, f"{value!r} is not a finite number", ValueError)
        return float(value)
    if isinstance(value, (dict, FrozenDict, list, tuple)) and len(active) >= MAX_JSON_DEPTH:
        _fail(path if len(path) < 80 else path[:60] + "...", f"nested deeper than {MAX_JSON_DEPTH} levels", ValueError)
    if isinstance(value, (dict, FrozenDict)):
        marker = id(value)
        if marker in active:
            _fail(path, "cycle: the value contains itself", ValueError)
        active.add(marker)
        try:
            items = list(value.items())
            out: dict[str, Any] = {}
            for key, item in items:
                if not isinstance(key, str):
                    _fail(f"{path}[{key!r}]", f"keys must be str, got {type(key).__name__}")
                out[key] = _freeze(item, f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]", active)
        finally:
            active.discard(marker)
        return FrozenDict(out)
    if isinstance(value, (list, tuple)):
        marker = id(value)
        if marker in active:
            _fail(path, "cycle: the value contains itself", ValueError)
        active.add(marker)
        try:
            items_l = list(value)
            return tuple(_freeze(item, f"{path}[{i}]", active) for i, item in enumerate(items_l))
        finally:
            active.discard(marker)
    _fail(path, f"{type(value).__name__} is not JSON data")


def thaw(value: Any) -> Any:
    """Plain ``dict``/``list`` copy of a frozen (or plain) JSON value."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value

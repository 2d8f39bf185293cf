"""Guarded reads of untrusted values.

Every function here accepts any object and returns instead of raising: a read either yields the
value or an ``Unreadable`` describing the exception it raised. Type tests use ``type(value)`` and
``issubclass`` rather than ``isinstance`` (which consults a possibly hostile ``__class__``). Exact
``dict``, ``list`` and ``tuple`` values are read through their C fast paths; anything else through
its public protocol (``__len__``, ``__getitem__``, ``__iter__``), each call guarded.

Only ``Exception`` is caught: ``KeyboardInterrupt`` and ``SystemExit`` raised by a getter propagate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple, final

_TEXT_LIKE: Final = (str, bytes, bytearray, memoryview)
_MAX_TEXT: Final = 200


class _Missing:
    """The type of ``MISSING``: a field absent from its mapping."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


@final
@dataclass(frozen=True, slots=True)
class Unreadable:
    """A read that raised; ``reason`` is ``"ExceptionType: text"``."""

    reason: str

    def explain(self) -> str:
        """Prose for a diagnostic: ``reading the value raised ValueError: boom``."""
        return f"reading the value raised {self.reason}"


@final
@dataclass(frozen=True, slots=True)
class NotAMapping:
    """A value that is neither a mapping nor dumps to one; ``got`` describes it."""

    got: str


class SequenceRead(NamedTuple):
    """The items of a sequence, read once in order.

    ``failure`` is set when reading item ``len(items)`` raised; reading stopped there.
    """

    items: tuple[object, ...]
    failure: Unreadable | None


def exact_str(value: object) -> str | None:
    """``value`` as an exact ``str`` when it is a ``str`` (or subclass), else ``None``.

    A subclass is copied through ``str.__str__`` so its overridden ``__eq__``/``__hash__`` never run.
    """
    if type(value) is str:
        return value
    try:
        if issubclass(type(value), str):
            copied = str.__str__(value)
            return copied if type(copied) is str else None
    except Exception:
        return None
    return None


def shorten(text: str, limit: int = _MAX_TEXT) -> str:
    """``text`` cut to ``limit`` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[:limit] + "…"


def quote(text: str, limit: int = 80) -> str:
    """A short quoted rendering of a string for diagnostics."""
    return repr(shorten(text, limit))


def type_name(value: object) -> str:
    """The name of ``value``'s type, or ``"object"`` when even that cannot be read; a float that is not
    finite by its JavaScript name (``Infinity``: a number beyond the double range reads as one, and
    ``JSON.stringify`` writes it as ``null``)."""
    try:
        if type(value) is float and not math.isfinite(value):
            return f"{'NaN' if math.isnan(value) else 'Infinity' if value > 0 else '-Infinity'} (written as null)"
        name = exact_str(type(value).__name__)
    except Exception:
        return "object"
    return name if name else "object"


def describe_exception(exc: BaseException) -> str:
    """``"ExceptionType: text"`` for an exception, even one whose ``__str__`` raises."""
    kind = type_name(exc)
    try:
        text = exact_str(str(exc)) or ""
    except Exception:
        text = ""
    return f"{kind}: {shorten(text)}" if text else kind


def unreadable(exc: BaseException) -> Unreadable:
    """The ``Unreadable`` for an exception raised by a read."""
    return Unreadable(describe_exception(exc))


def is_bool(value: object) -> bool:
    """Whether ``value`` is ``True`` or ``False`` (``bool`` cannot be subclassed)."""
    return type(value) is bool


def is_sequence(value: object) -> bool | Unreadable:
    """Whether ``value`` is a non-text sequence (list, tuple, ``Sequence``; not str/bytes)."""
    kind = type(value)
    if kind is list or kind is tuple:
        return True
    try:
        return issubclass(kind, Sequence) and not issubclass(kind, _TEXT_LIKE)
    except Exception as exc:
        return unreadable(exc)


def read_sequence(value: object) -> SequenceRead | Unreadable | None:
    """The items of a non-text sequence, each read once; ``None`` when ``value`` is not one.

    The length is read once before the items; reading stops at the first item that raises.
    """
    if type(value) is list or type(value) is tuple:
        return SequenceRead(tuple(value), None)
    sequence = is_sequence(value)
    if type(sequence) is Unreadable:
        return sequence
    if not sequence:
        return None
    seq: Any = value
    try:
        length = len(seq)
    except Exception as exc:
        return unreadable(exc)
    items: list[object] = []
    for index in range(length):
        try:
            items.append(seq[index])
        except Exception as exc:
            return SequenceRead(tuple(items), unreadable(exc))
    return SequenceRead(tuple(items), None)


def is_mapping(value: object) -> bool | Unreadable:
    """Whether ``value`` is a ``Mapping`` (by its real type)."""
    if type(value) is dict:
        return True
    try:
        return issubclass(type(value), Mapping)
    except Exception as exc:
        return unreadable(exc)


def as_mapping(value: object) -> Mapping[Any, Any] | Unreadable | NotAMapping:
    """``value`` as a mapping to read fields from.

    A ``Mapping`` is used as is. An object whose type has ``model_dump`` (a pydantic model) is
    dumped once with ``model_dump(by_alias=True)``, giving the camelCase wire names. Anything else
    is ``NotAMapping``.
    """
    mapping = is_mapping(value)
    if type(mapping) is Unreadable:
        return mapping
    if mapping:
        return value  # type: ignore[return-value]
    try:
        has_dump = getattr(type(value), "model_dump", None) is not None
    except Exception as exc:
        return unreadable(exc)
    if not has_dump:
        return NotAMapping(type_name(value))
    try:
        dumped: object = value.model_dump(by_alias=True)  # type: ignore[attr-defined]
    except Exception as exc:
        return Unreadable(f"{describe_exception(exc)} (in model_dump)")
    dumped_mapping = is_mapping(dumped)
    if type(dumped_mapping) is Unreadable:
        return dumped_mapping
    if dumped_mapping:
        return dumped  # type: ignore[return-value]
    return NotAMapping(f"{type_name(value)} whose model_dump() returned {type_name(dumped)}")


def read_field(mapping: Mapping[Any, Any], key: str) -> object:
    """``mapping[key]`` read once: the value, ``MISSING`` (``KeyError``), or ``Unreadable``."""
    try:
        if type(mapping) is dict:
            return mapping.get(key, MISSING)
        return mapping[key]
    except KeyError:
        return MISSING
    except Exception as exc:
        return unreadable(exc)

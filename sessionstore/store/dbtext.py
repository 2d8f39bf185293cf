"""Text columns that hold any JSON string, on every backend.

A JSON string may hold ``\\u0000`` and lone surrogates (``\\ud800``); pi reads both. PostgreSQL
``text`` cannot hold NUL, and no UTF-8 encoder (psycopg's, sqlite3's) takes a lone surrogate. Ids,
cwd, names, first messages and timestamps therefore go into their columns through
:func:`to_db` and come out through :func:`from_db`: each of those characters, and the escape
character itself, becomes a two- or six-character escape led by U+FDD0 (a noncharacter, which no
real text holds). Every other string is stored as it is, so the escape costs one scan per value,
and it works per character: a prefix of a stored id is the stored form of a prefix of the id.
Payload and header columns hold JSON text, where these characters are escaped already.

A row type (``store.backend``'s NamedTuples) names its text columns once, by typing them
:data:`DbText`; :func:`stored` and :func:`loaded` convert those fields of a row, and nothing else
converts a row's text field by field.
"""

from __future__ import annotations

import re
import types
from functools import cache
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin, get_type_hints, overload

from sessionstore.errors import InvalidInputError

ESCAPE = "\ufdd0"
_NEEDS_ESCAPE = re.compile("[\x00\ud800-\udfff\ufdd0]")
_ESCAPED = re.compile("\ufdd0(?:0|e|s[0-9a-f]{4})")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\x00":
        return ESCAPE + "0"
    if char == ESCAPE:
        return ESCAPE + "e"
    return f"{ESCAPE}s{ord(char):04x}"


def _unescape(match: re.Match[str]) -> str:
    code = match.group()[1:]
    if code == "0":
        return "\x00"
    if code == "e":
        return ESCAPE
    return chr(int(code[1:], 16))


@overload
def to_db(value: str) -> str: ...
@overload
def to_db(value: None) -> None: ...
def to_db(value: str | None) -> str | None:
    """The stored form of ``value`` (``None`` stays ``None``); :class:`InvalidInputError` for what is
    not a string (an id, a cwd or a name handed to the store must be one)."""
    if value is None:
        return value
    if not isinstance(value, str):
        raise InvalidInputError(f"expected a string, got {type(value).__name__} {value!r:.60}")
    if (value.isascii() and "\x00" not in value) or _NEEDS_ESCAPE.search(value) is None:
        return value
    return _NEEDS_ESCAPE.sub(_escape, value)


@overload
def from_db(value: str) -> str: ...
@overload
def from_db(value: None) -> None: ...
def from_db(value: str | None) -> str | None:
    """The string whose stored form is ``value``."""
    if value is None or ESCAPE not in value:
        return value
    return _ESCAPED.sub(_unescape, value)


class _StoredText:
    __slots__ = ()

    def __repr__(self) -> str:
        return "StoredText"


_STORED_TEXT = _StoredText()
DbText = Annotated[str, _STORED_TEXT]
"""A row field holding a string in its stored form (:func:`to_db`); ``DbText | None`` may be null."""

Row = TypeVar("Row", bound=tuple[Any, ...])


def _is_db_text(hint: Any) -> bool:
    if get_origin(hint) is Annotated:
        return _STORED_TEXT in hint.__metadata__
    if get_origin(hint) in (Union, types.UnionType):
        return any(_is_db_text(arg) for arg in get_args(hint))
    return False


@cache
def _text_places(row_type: type[tuple[Any, ...]]) -> tuple[int, ...]:
    """The positions of ``row_type``'s :data:`DbText` fields."""
    hints = get_type_hints(row_type, include_extras=True)
    fields: tuple[str, ...] = row_type._fields  # type: ignore[attr-defined]
    return tuple(i for i, name in enumerate(fields) if _is_db_text(hints.get(name)))


def _converted(row: Row, convert: Any) -> Row:
    places = _text_places(type(row))
    if not places:
        return row
    values = list(row)
    for i in places:
        values[i] = convert(values[i])
    return tuple.__new__(type(row), values)


def stored(row: Row) -> Row:
    """``row`` with its :data:`DbText` fields in their stored form (:func:`to_db`)."""
    return _converted(row, to_db)


@overload
def loaded(row: None) -> None: ...
@overload
def loaded(row: Row) -> Row: ...
def loaded(row: Row | None) -> Row | None:
    """``row`` (as a query gave it; ``None`` stays ``None``) with its :data:`DbText` fields read back
    (:func:`from_db`)."""
    return None if row is None else _converted(row, from_db)

"""Text columns that hold any JSON string, on every backend.

A JSON string may hold ``\\u0000`` and lone surrogates (``\\ud800``); pi reads both. PostgreSQL
``text`` cannot hold NUL, and no UTF-8 encoder (psycopg's, sqlite3's) takes a lone surrogate. Ids,
cwd, names, first messages and timestamps therefore go into their columns through
:func:`to_db` and come out through :func:`from_db`: each of those characters, and the escape
character itself, becomes a two- or six-character escape led by U+FDD0 (a noncharacter, which no
real text holds). Every other string is stored as it is, so the escape costs one scan per value,
and it works per character: a prefix of a stored id is the stored form of a prefix of the id.
Payload and header columns hold JSON text, where these characters are escaped already.
"""

from __future__ import annotations

import re
from typing import overload

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

"""JavaScript string semantics the picker's search relies on: ``\\s``, ``trim()``, ``toLowerCase()``
and UTF-16 code units.

A JavaScript string is a sequence of UTF-16 code units; a Python ``str`` is a sequence of code
points. :func:`utf16_units` turns a ``str`` into a ``str`` of code units (each astral character
becomes its two surrogates), so that indexing, lengths and substring searches on the result agree
with JavaScript's on the original.
"""

from __future__ import annotations

import re
from functools import cache

JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""The characters of JavaScript's ``\\s`` (WhiteSpace and LineTerminator), which are also exactly the
characters ``String.prototype.trim`` removes. Python's ``str.isspace`` differs: it includes
``\\x1c``-``\\x1f`` and ``\\x85`` and excludes ``\\ufeff``."""

_WS_RUN = re.compile(f"[{re.escape(JS_WHITESPACE)}]+")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")

# Node 20.20 (ICU 78, Unicode 17) lowercases these characters; Python 3.11 (Unicode 14) does not
# know them. Every one maps to a single character and Python leaves every one unchanged.
_NEW_LOWER: dict[int, int] = {
    0x1C89: 0x1C8A, 0xA7CB: 0x0264, 0xA7CC: 0xA7CD, 0xA7CE: 0xA7CF, 0xA7D2: 0xA7D3,
    0xA7D4: 0xA7D5, 0xA7DA: 0xA7DB, 0xA7DC: 0x019B,
    **{cp: cp + 0x20 for cp in range(0x10D50, 0x10D66)},
    **{cp: cp + 0x1B for cp in range(0x16EA0, 0x16EB9)},
}
_NEW_UPPER: dict[int, int] = {lower: upper for upper, lower in _NEW_LOWER.items()}
_NEW_CASED_CHARS = tuple(chr(cp) for pair in _NEW_LOWER.items() for cp in pair)
"""The letters Unicode 15-17 gave a case pair (and their partners): cased letters for the final-sigma rule."""
_NEW_CASED = re.compile("[" + "".join(_NEW_CASED_CHARS) + "]")
_PY_NOT_JS_WHITESPACE = ("\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\ufeff")
"""Where ``str.split()``'s whitespace and JavaScript's ``\\s`` differ: Python's only, then JavaScript's only."""


def js_string(text: str) -> str:
    """``text`` with any surrogate pair held as two separate characters joined into its code point,
    so that it is the same JavaScript string as before but Python's case mapping sees the character.
    Lone surrogates stay."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def js_lower(text: str) -> str:
    """``text.toLowerCase()`` as Node 20 computes it.

    Python's ``str.lower`` applies the same full Unicode mapping (``İ`` → ``i̇``, final sigma
    ``ΑΣ`` → ``ας``); it differs only on the 55 characters Unicode 15-17 gave a lowercase form,
    which are mapped here as ICU 78 maps them, and on a ``Σ`` next to one of those letters, which
    Python does not know to be cased (handled too). Still Python's (Unicode 14's): whether a
    combining mark newer than Unicode 14 between a letter and a ``Σ`` is case-ignorable.
    """
    if text.isascii():
        return text.lower()
    text = js_string(text)
    if not any(char in text for char in _NEW_CASED_CHARS):  # (a substring test each: faster than a class)
        return text.lower()
    if "\u03a3" not in text:
        return _lower_new(text)
    stand_in = _NEW_CASED.sub("A", text).replace("\u03c3", "a").replace("\u03c2", "a")
    sigmas = [char for char in stand_in.lower() if char in "\u03c3\u03c2"]
    pieces = text.split("\u03a3")
    lowered = [_lower_new(pieces[0])]
    for sigma, piece in zip(sigmas, pieces[1:], strict=True):
        lowered += [sigma, _lower_new(piece)]
    return "".join(lowered)


def _lower_new(text: str) -> str:
    """Lowercasing without a final-sigma context to get right."""
    return text.lower().translate(_NEW_LOWER)


def js_upper_char(char: str) -> str:
    """``char.toUpperCase()`` for one code point, as Node 20 computes it (full mapping: ``ß`` → ``SS``)."""
    new = _NEW_UPPER.get(ord(char))
    return chr(new) if new is not None else char.upper()


def js_trim(text: str) -> str:
    """``text.trim()``: strips exactly :data:`JS_WHITESPACE` from both ends."""
    return text.strip(JS_WHITESPACE)


def is_js_whitespace(char: str) -> bool:
    """Whether ``/\\s/.test(char)`` holds for one character."""
    return len(char) == 1 and char in JS_WHITESPACE


def split_js_whitespace(text: str) -> list[str]:
    """``text.split(/\\s+/)`` (empty strings kept where JavaScript keeps them)."""
    return _WS_RUN.split(text)


def normalize_whitespace_lower(text: str) -> str:
    """pi's ``normalizeWhitespaceLower``: ``text.toLowerCase().replace(/\\s+/g, " ").trim()``."""
    lowered = js_lower(text)
    if not any(char in lowered for char in _PY_NOT_JS_WHITESPACE):  # (the two whitespaces agree: split is faster)
        return " ".join(lowered.split())
    return js_trim(_WS_RUN.sub(" ", lowered))


def utf16_units(text: str) -> str:
    """``text`` as its UTF-16 code units, one ``str`` character per unit: astral characters become
    their surrogate pairs, everything else stays. Lengths, indices and ``in``/``find`` on the result
    are JavaScript's ``length``, indices and ``includes``/``indexOf`` on ``text``."""
    if text.isascii() or _ASTRAL.search(text) is None:
        return text
    return _ASTRAL.sub(_surrogate_pair, text)


def _surrogate_pair(match: re.Match[str]) -> str:
    offset = ord(match.group()) - 0x10000
    return chr(0xD800 + (offset >> 10)) + chr(0xDC00 + (offset & 0x3FF))


def js_includes(haystack: str, needle: str) -> bool:
    """``haystack.includes(needle)``, compared on code units (so a lone surrogate can match half of a
    pair, as in JavaScript)."""
    return to_units(needle) in to_units(haystack)


def to_units(text: str) -> str:
    """:func:`utf16_units` of :func:`js_string`: the canonical code-unit form of a JavaScript string."""
    return utf16_units(js_string(text))


@cache
def ignore_case_classes() -> dict[int, tuple[int, ...]]:
    """For each BMP code unit whose case-insensitive class (in a JavaScript regex with the ``i`` flag
    and without ``u``) has more than one member: the members, ascending.

    Two units are equivalent when their ``Canonicalize`` values (ECMA-262 22.2.2.7.3, non-Unicode
    mode) are equal: the unit's ``toUpperCase()`` if that is one code unit and does not map a
    non-ASCII unit to ASCII, else the unit itself.
    """
    groups: dict[int, list[int]] = {}
    for unit in range(0x10000):
        groups.setdefault(_canonicalize(unit), []).append(unit)
    classes: dict[int, tuple[int, ...]] = {}
    for members in groups.values():
        if len(members) > 1:
            for unit in members:
                classes[unit] = tuple(members)
    return classes


def _canonicalize(unit: int) -> int:
    if 0xD800 <= unit <= 0xDFFF:
        return unit
    upper = js_upper_char(chr(unit))
    if len(upper) != 1 or ord(upper) > 0xFFFF:
        return unit
    if unit >= 128 and ord(upper) < 128:
        return unit
    return ord(upper)

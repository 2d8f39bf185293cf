"""``new RegExp(pattern, "i")`` for Python: a JavaScript regex (non-Unicode mode, with the Annex B
web-compatibility grammar V8 accepts) translated to an equivalent Python ``re`` pattern.

What holds for a pattern :func:`compile_js_regex` accepts: ``JsRegex.test(s)`` equals JavaScript's
``new RegExp(pattern, "i").test(s)`` (no ``g``/``y`` flag, so ``test`` is a plain search). This is
achieved by matching on UTF-16 code units (``.`` matches one unit, as in JavaScript), expanding every
character and class into the explicit set of units JavaScript's ``i`` flag makes it match (its
``Canonicalize`` rule, not Python's case folding, which would also equate ``k`` and ``K`` (Kelvin)
or ``s`` and the long s U+017F), and spelling out JavaScript's meaning of ``.``, ``^``, ``$``, ``\\s``, ``\\d``,
``\\w`` and ``\\b``.

A pattern JavaScript rejects raises :class:`JsRegexSyntaxError` with V8's message. A valid pattern
this translation cannot reproduce exactly raises :class:`JsRegexUnsupported` naming the construct:
backreferences (``\\1``, ``\\k<name>``: JavaScript compares them by its own case rule and lets a
reference to an unset group match the empty string), lookbehinds Python cannot compile (not of fixed
width), and quantifier minimums of 2**31 - 1 or more.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import lru_cache

from sessionstore.models.js_text import JS_WHITESPACE, ignore_case_classes, js_string, to_units

MAX_UNIT = 0xFFFF
V8_INFINITY = 2**31 - 1
"""V8 reads a quantifier bound of this size or more as infinity."""

Ranges = list[tuple[int, int]]
"""A set of code units: sorted, disjoint, non-adjacent inclusive ranges."""


class JsRegexSyntaxError(ValueError):
    """The pattern is not a valid JavaScript regex; the message is V8's."""


class JsRegexUnsupported(ValueError):
    """The pattern is valid JavaScript but this translation cannot match it exactly as V8 does."""


@dataclass(frozen=True)
class JsRegex:
    """A compiled ``new RegExp(source, "i")``."""

    source: str
    python: re.Pattern[str] = field(compare=False)

    def test(self, text: str) -> bool:
        """``regex.test(text)``: whether the regex matches anywhere in ``text``."""
        return self.test_units(to_units(text))

    def test_units(self, units: str) -> bool:
        """:meth:`test` on a text already in code units (``js_text.to_units``)."""
        return self.python.search(units) is not None


def compile_js_regex(source: str) -> JsRegex:
    """``new RegExp(source, "i")``; raises :class:`JsRegexSyntaxError` or :class:`JsRegexUnsupported`."""
    try:
        translated = _Parser(source).translate()
    except RecursionError:
        raise JsRegexUnsupported("Regex not supported: nested too deeply") from None
    try:
        return JsRegex(source, re.compile(translated, re.ASCII))
    except re.error as error:
        if "look-behind" in str(error):
            raise JsRegexUnsupported(
                "Regex not supported: a lookbehind whose alternatives are not all of one fixed length"
            ) from None
        raise JsRegexUnsupported(f"Regex not supported: {error}") from None
    except (OverflowError, RecursionError) as error:
        raise JsRegexUnsupported(f"Regex not supported: {error}") from None


# --- character sets -----------------------------------------------------------------------------

def _normalize(ranges: Ranges) -> Ranges:
    merged: Ranges = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def _complement(ranges: Ranges) -> Ranges:
    result: Ranges = []
    start = 0
    for low, high in _normalize(ranges):
        if low > start:
            result.append((start, low - 1))
        start = high + 1
    if start <= MAX_UNIT:
        result.append((start, MAX_UNIT))
    return result


def _case_closure(ranges: Ranges) -> Ranges:
    """Every unit that matches a member of ``ranges`` under the ``i`` flag."""
    return list(_closure(tuple(_normalize(ranges))))


@lru_cache(maxsize=1024)
def _closure(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    classes = ignore_case_classes()
    cased = _cased_units()
    extra: Ranges = []
    for low, high in ranges:
        for unit in cased[bisect_left(cased, low):bisect_right(cased, high)]:
            extra.extend((member, member) for member in classes[unit])
    return tuple(_normalize([*ranges, *extra]))


_CASED: list[list[int]] = []


def _cased_units() -> list[int]:
    if not _CASED:
        _CASED.append(sorted(ignore_case_classes()))
    return _CASED[0]


def _chars(text: str) -> Ranges:
    return _normalize([(ord(c), ord(c)) for c in text])


DIGITS: Ranges = [(0x30, 0x39)]
WORD: Ranges = _normalize([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
SPACE: Ranges = _chars(JS_WHITESPACE)
LINE_TERMINATORS: Ranges = _chars("\n\r\u2028\u2029")
CLASS_ESCAPES: dict[str, Ranges] = {
    "d": DIGITS, "D": _complement(DIGITS), "w": WORD, "W": _complement(WORD),
    "s": SPACE, "S": _complement(SPACE),
}
CONTROL_ESCAPES = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}


def _emit_set(ranges: Ranges) -> str:
    """A single Python atom matching exactly the units of ``ranges`` after case closure."""
    return _emit_closed(tuple(_normalize(ranges)))


@lru_cache(maxsize=1024)
def _emit_closed(ranges: tuple[tuple[int, int], ...]) -> str:
    closed = _closure(ranges)
    if not closed:
        return f"[^\\x00-\\u{MAX_UNIT:04x}]"
    if len(closed) == 1 and closed[0][0] == closed[0][1]:
        return _escape(closed[0][0])
    body = "".join(_escape(low) if low == high else f"{_escape(low)}-{_escape(high)}" for low, high in closed)
    return f"[{body}]"


def _escape(unit: int) -> str:
    return f"\\u{unit:04x}"


# --- the parser ---------------------------------------------------------------------------------

@dataclass
class _Quantifier:
    text: str
    minimum: int


class _Parser:
    """Recursive descent over the pattern's code units, emitting Python syntax as it goes."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.units = to_units(source)
        self.pos = 0
        self.capture_count, self.has_names = _prescan(self.units)
        self.names: set[str] = set()

    # errors
    def syntax(self, reason: str) -> JsRegexSyntaxError:
        return JsRegexSyntaxError(f"Invalid regular expression: /{self.source}/i: {reason}")

    # cursor
    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.units[index] if index < len(self.units) else ""

    def at_end(self) -> bool:
        return self.pos >= len(self.units)

    def translate(self) -> str:
        body = self.disjunction()
        if not self.at_end():  # only a ')' stops a top-level disjunction
            raise self.syntax("Unmatched ')'")
        return body

    def disjunction(self) -> str:
        alternatives = [self.alternative()]
        while self.peek() == "|":
            self.pos += 1
            alternatives.append(self.alternative())
        return "|".join(alternatives)

    def alternative(self) -> str:
        terms: list[str] = []
        while not self.at_end() and self.peek() not in "|)":
            terms.append(self.term())
        return "".join(terms)

    def term(self) -> str:
        char = self.peek()
        if char in ("*", "+", "?") or (char == "{" and self.braced_quantifier_at(self.pos) is not None):
            raise self.syntax("Nothing to repeat")
        assertion = self.assertion()
        if assertion is not None:
            if self.quantifier_follows():
                raise self.syntax("Nothing to repeat")
            return assertion
        if self.units.startswith("(?<=", self.pos) or self.units.startswith("(?<!", self.pos):
            lookbehind = self.group()
            if self.quantifier_follows():
                raise self.syntax("Invalid quantifier")
            return lookbehind
        if self.units.startswith("(?=", self.pos) or self.units.startswith("(?!", self.pos):
            return self.quantified_lookahead(self.group())
        atom = self.group() if char == "(" else self.atom()
        quantifier = self.quantifier()
        if quantifier is None:
            return atom
        return f"(?:{atom}){quantifier.text}"

    def assertion(self) -> str | None:
        char = self.peek()
        if char == "^":
            self.pos += 1
            return "\\A"
        if char == "$":
            self.pos += 1
            return "\\Z"
        if char == "\\" and self.peek(1) == "b":
            self.pos += 2
            return "\\b"
        if char == "\\" and self.peek(1) == "B":
            self.pos += 2
            return "(?:\\B|\\A\\Z)"  # Python's \B (before 3.14) never matches in an empty string
        return None

    def quantified_lookahead(self, lookahead: str) -> str:
        """Annex B lets a lookahead take a quantifier: every iteration matches the empty string, so
        JavaScript's empty-iteration check makes a minimum of 0 match empty and any other minimum
        the lookahead once."""
        quantifier = self.quantifier()
        if quantifier is None or quantifier.minimum > 0:
            return lookahead
        return "(?:)"

    def quantifier_follows(self) -> bool:
        char = self.peek()
        return char in ("*", "+", "?") or (char == "{" and self.braced_quantifier_at(self.pos) is not None)

    def quantifier(self) -> _Quantifier | None:
        char = self.peek()
        if char == "" or char not in "*+?{":
            return None
        if char == "{":
            braced = self.braced_quantifier_at(self.pos)
            if braced is None:
                return None
            minimum, maximum, end = braced
            self.pos = end
            if maximum is not None and maximum < minimum:
                raise self.syntax("numbers out of order in {} quantifier")
            if minimum >= V8_INFINITY:
                raise JsRegexUnsupported("Regex not supported: a quantifier minimum of 2**31 - 1 or more")
            unbounded = maximum is None or maximum >= V8_INFINITY
            text = f"{{{minimum},}}" if unbounded else f"{{{minimum},{maximum}}}"
        else:
            self.pos += 1
            minimum = 1 if char == "+" else 0
            text = char
        if self.peek() == "?":
            self.pos += 1
            text += "?"
        return _Quantifier(text, minimum)

    def braced_quantifier_at(self, start: int) -> tuple[int, int | None, int] | None:
        """``{n}``, ``{n,}`` or ``{n,m}`` at ``start``: (min, max or None, end), else None."""
        match = _BRACED.match(self.units, start)
        if match is None:
            return None
        minimum = int(match.group(1))
        if match.group(2) is None:
            return minimum, minimum, match.end()
        maximum = int(match.group(3)) if match.group(3) else None
        return minimum, maximum, match.end()

    # groups
    def group(self) -> str:
        self.pos += 1  # "("
        opener, name = ("(", None) if self.peek() != "?" else self.group_opener()
        body = self.disjunction()
        if self.peek() != ")":
            raise self.syntax("Unterminated group")
        self.pos += 1
        if name is not None:  # V8 checks names as their groups close
            if name in self.names:
                raise self.syntax("Duplicate capture group name")
            self.names.add(name)
        return f"{opener}{body})"

    def group_opener(self) -> tuple[str, str | None]:
        """The Python opener of the group after ``(?``, and the capture name if it has one."""
        for js, python in (("?:", "(?:"), ("?=", "(?="), ("?!", "(?!"), ("?<=", "(?<="), ("?<!", "(?<!")):
            if self.units.startswith(js, self.pos):
                self.pos += len(js)
                return python, None
        if self.units.startswith("?<", self.pos):
            self.pos += 2
            return "(", self.group_name()  # names only matter to backreferences, which are refused
        raise self.syntax("Invalid group")

    def group_name(self) -> str:
        """A ``RegExpIdentifierName`` up to ``>``; the position ends after the ``>``."""
        end = self.units.find(">", self.pos)
        name = self.units[self.pos:end] if end != -1 else ""
        if "\\" in name:
            raise JsRegexUnsupported("Regex not supported: an escape in a capture group name")
        if not _valid_group_name(js_string(name)):
            raise self.syntax("Invalid capture group name")
        self.pos = end + 1
        return name

    # atoms
    def atom(self) -> str:
        char = self.peek()
        if char == "[":
            return self.character_class()
        if char == ".":
            self.pos += 1
            return _emit_set(_complement(LINE_TERMINATORS))
        if char == "\\":
            return self.atom_escape()
        self.pos += 1
        return _emit_set([(ord(char), ord(char))])

    def atom_escape(self) -> str:
        self.pos += 1  # "\\"
        char = self.peek()
        if char == "":
            raise self.syntax("\\ at end of pattern")
        if "1" <= char <= "9":
            digits = _DECIMAL.match(self.units, self.pos)
            assert digits is not None
            if int(digits.group()) <= self.capture_count:
                raise JsRegexUnsupported(f"Regex not supported: the backreference \\{digits.group()}")
        if char == "k" and self.has_names:
            self.named_reference()
        if char == "c" and not _is_ascii_letter(self.peek(1)):
            return _emit_set([(0x5C, 0x5C)])  # a lone backslash; the "c" is the next atom
        return _emit_set(self.character_escape(in_class=False))

    def named_reference(self) -> None:
        if self.peek(1) != "<":
            raise self.syntax("Invalid named reference")
        self.pos += 2
        name = self.group_name()
        if name not in _prescan_names(self.units):
            raise self.syntax("Invalid named capture referenced")
        raise JsRegexUnsupported(f"Regex not supported: the backreference \\k<{name}>")

    def character_escape(self, *, in_class: bool) -> Ranges:
        """The units of an escape whose backslash is consumed (class escapes included)."""
        char = self.peek()
        self.pos += 1
        if char in CLASS_ESCAPES:
            return CLASS_ESCAPES[char]
        if char in CONTROL_ESCAPES:
            return _unit(CONTROL_ESCAPES[char])
        if char == "c":
            letter = self.peek()
            if _is_ascii_letter(letter) or (in_class and letter != "" and letter in _CLASS_CONTROL):
                self.pos += 1
                return _unit(ord(letter) % 32)
            self.pos -= 1  # in a class: a backslash, then "c" as the next class atom
            return _unit(0x5C)
        if char in "01234567":
            return _unit(self.legacy_octal(char))
        if char == "x" or char == "u":
            return _unit(self.hex_escape(char))
        if char == "k" and self.has_names:
            raise self.syntax("Invalid escape")
        return _unit(ord(char))  # identity escape (non-Unicode mode: any other unit, "8" and "9" too)

    def legacy_octal(self, first: str) -> int:
        """``\\0`` or a legacy octal escape (up to three digits, at most 0o377)."""
        value = int(first)
        limit = 3 if first <= "3" else 2
        length = 1
        while length < limit and self.peek() != "" and self.peek() in _OCTAL:
            value = value * 8 + int(self.peek())
            self.pos += 1
            length += 1
        return value

    def hex_escape(self, letter: str) -> int:
        """``\\xHH`` / ``\\uHHHH``; without the full digits it is the letter itself (non-Unicode mode)."""
        width = 2 if letter == "x" else 4
        digits = self.units[self.pos:self.pos + width]
        if len(digits) == width and all(d in _HEX for d in digits):
            self.pos += width
            return int(digits, 16)
        return ord(letter)

    def character_class(self) -> str:
        self.pos += 1  # "["
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        ranges: Ranges = []
        while self.peek() != "]":
            if self.at_end():
                raise self.syntax("Unterminated character class")
            ranges.extend(self.class_ranges())
        self.pos += 1
        closed = _case_closure(ranges)
        return _emit_set(_complement(closed) if negated else closed)

    def class_ranges(self) -> Ranges:
        first, first_is_set = self.class_atom()
        if self.peek() != "-" or self.peek(1) in ("]", ""):
            return first
        self.pos += 1  # "-"
        second, second_is_set = self.class_atom()
        if first_is_set or second_is_set:  # Annex B: [\d-z] is \d, "-" and "z"
            return [*first, (0x2D, 0x2D), *second]
        low, high = first[0][0], second[0][0]
        if low > high:
            raise self.syntax("Range out of order in character class")
        return [(low, high)]

    def class_atom(self) -> tuple[Ranges, bool]:
        """The units of one class atom, and whether it is a class escape (a set, not one unit)."""
        char = self.peek()
        if char != "\\":
            self.pos += 1
            return _unit(ord(char)), False
        self.pos += 1
        escaped = self.peek()
        if escaped == "":
            raise self.syntax("\\ at end of pattern")
        if escaped == "b":
            self.pos += 1
            return _unit(0x08), False
        if escaped in "89":
            self.pos += 1
            return _unit(ord(escaped)), False
        return self.character_escape(in_class=True), escaped in CLASS_ESCAPES


def _unit(value: int) -> Ranges:
    return [(value, value)]


def _is_ascii_letter(char: str) -> bool:
    return len(char) == 1 and char.isascii() and char.isalpha()


_BRACED = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")
_DECIMAL = re.compile(r"[0-9]+")
_OCTAL = "01234567"
_CLASS_CONTROL = "0123456789_"
_HEX = "0123456789abcdefABCDEF"
_GROUP_START = re.compile(r"\((?!\?)|\(\?<(?![=!])")


def _prescan(units: str) -> tuple[int, bool]:
    """(number of capturing groups, whether any is named), as V8 counts them before parsing."""
    count = 0
    named = False
    for start in _group_starts(units):
        count += 1
        named = named or units.startswith("(?<", start)
    return count, named


def _prescan_names(units: str) -> set[str]:
    names = set()
    for start in _group_starts(units):
        if units.startswith("(?<", start):
            end = units.find(">", start)
            names.add(units[start + 3:end])
    return names


def _group_starts(units: str) -> list[int]:
    """Positions of the capturing ``(`` outside classes and escapes."""
    starts: list[int] = []
    index = 0
    in_class = False
    while index < len(units):
        char = units[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif _GROUP_START.match(units, index):
            starts.append(index)
        index += 1
    return starts


def _valid_group_name(name: str) -> bool:
    """A ``RegExpIdentifierName`` without escapes: ID_Start / ``$`` / ``_``, then ID_Continue /
    ``$`` / ZWNJ / ZWJ (Python's identifier rules, which follow XID_Start / XID_Continue)."""
    if not name:
        return False
    first, rest = name[0], name[1:]
    if not (first in "$_" or first.isidentifier()):
        return False
    return all(c in "$\u200c\u200d" or ("a" + c).isidentifier() for c in rest)

"""The one JSON codec: pi's lines read as ``JSON.parse`` reads them and written as ``JSON.stringify``
writes them, and stored payloads decoded. orjson first everywhere; the standard library only for
what orjson refuses that JSON allows (integers beyond 64 bits, lone surrogates)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from sessionstore.models.frozen import MAX_JSON_DEPTH
from sessionstore.models.js import js_number
from sessionstore.wire.jsjson import js_dumpb


class LineRefused(ValueError):
    """A line cannot be read as pi's JSON; ``str()`` is the reason."""


def _refuse_constant(name: str) -> Any:
    raise LineRefused(f"{name} is not JSON (JSON.parse refuses it)")


def within_json_depth(value: Any) -> bool:
    """Whether ``value`` nests arrays and objects at most :data:`MAX_JSON_DEPTH` deep."""
    return _depth_at_most(value, MAX_JSON_DEPTH)


def _depth_at_most(value: Any, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects at most ``limit`` deep (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values() if isinstance(child, dict | list | tuple))
        elif isinstance(item, list | tuple):
            stack.extend((child, depth + 1) for child in item if isinstance(child, dict | list | tuple))
    return True


def parse_line(raw: bytes) -> Any:
    """The JSON value of one line, as ``JSON.parse`` reads it; raises :class:`LineRefused`.

    orjson reads almost every line; what it refuses is read again strictly: the bytes must be UTF-8
    (no byte order mark), ``NaN``/``Infinity`` are refused, and lone surrogate escapes are accepted as
    JSON allows them, an integer beyond 64 bits as the double ``JSON.parse`` reads (:func:`js_integer`;
    ``1`` and 309 zeros is an infinity, written back as ``null``, as ``JSON.stringify`` writes it)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        value = _parse_strictly(raw, exc)
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and not _depth_at_most(value, MAX_JSON_DEPTH):
        raise LineRefused(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def _parse_strictly(raw: bytes, orjson_error: orjson.JSONDecodeError) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LineRefused(f"invalid UTF-8 at byte {exc.start + 1} of the line") from None
    if text.startswith("\ufeff"):
        raise LineRefused("a UTF-8 byte order mark starts the line (JSON.parse refuses it)")
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_int=js_integer)
    except LineRefused:
        raise
    except RecursionError:
        raise LineRefused(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError:
        raise LineRefused(f"invalid JSON: {orjson_error}") from None

def js_integer(text: str) -> int | float:
    """A JSON integer as the store holds it: exact while orjson can hold it (64 bits), beyond that the
    double ``JSON.parse`` reads (the nearest one, or an infinity past the largest), so every reader of
    the value sees what pi sees. ``float()`` reads any number of digits; ``int()`` is never asked for
    more than 20 (the interpreter's limit on digits, process-global, stays out of the reading)."""
    if len(text) <= 20:
        value = int(text)
        if -(2**63) <= value < 2**64:
            return value
    return float(text)


def json_loads(value: str | bytes) -> Any:
    """A stored payload (written by :func:`dump_line` or kept from a file line that
    :func:`parse_line` read): orjson, or the standard library for what orjson refuses, its numbers
    read as :func:`parse_line` reads them."""
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return json.loads(value, parse_int=js_integer)


def decode_payloads(texts: list[str] | list[bytes]) -> list[Any]:
    """Decode many stored payloads."""
    return [json_loads(text) for text in texts]


def json_dumps(value: Any) -> str:
    """JSON text of a value as pi writes it (SQLAlchemy's serializer of the schema's JSON columns)."""
    return dump_line(value)[:-1].decode("utf-8")


# Floats whose shortest form JavaScript writes differently: "5.0" (JS: 5) and exponents (JS uses fixed
# notation for 1e-6 <= |x| < 1e21 and writes "1e-7"/"1e+21" otherwise). A cheap search finds the
# places that may hold one; only the number token around each is looked at, skipping those inside
# strings (a regex over every number of a long line costs ~20 us per KB).
_MAYBE_JS_DIFF = re.compile(rb"\d\.0[,}\]]|\d[eE][+-]?\d")
_NUMBER_TOKEN = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_NUMBER_BYTES = frozenset(b"0123456789.eE+-")

def _to_js_numbers(out: bytes) -> bytes:
    # Same-length copy without escaped quotes: a position is inside a string when an odd number
    # of quotes precede it.
    plain = out.replace(b"\\\\", b"__").replace(b'\\"', b"__")
    parts: list[bytes] = []
    last = 0
    quotes = 0  # quotes before `counted`
    counted = 0
    for hint in _MAYBE_JS_DIFF.finditer(out):
        start = hint.start()
        if start < last:
            continue
        while start > 0 and out[start - 1] in _NUMBER_BYTES:
            start -= 1
        token = _NUMBER_TOKEN.match(out, start)
        if token is None or token.end() < hint.start() + 2 or start == 0 or out[start - 1] not in b":,[":
            continue
        end = token.end()
        text = token.group()
        if out[end : end + 1] not in (b",", b"}", b"]") or not (b"e" in text or b"E" in text or text.endswith(b".0")):
            continue
        quotes += plain.count(b'"', counted, start)
        counted = start
        if quotes % 2:
            continue
        parts.append(out[last:start])
        parts.append(js_number(text))
        last = end
    if not parts:
        return out
    parts.append(out[last:])
    return b"".join(parts)


def _js_float(value: float) -> orjson.Fragment | float:
    """``value``, or its text as JavaScript writes it where that differs from orjson's."""
    # orjson and JavaScript write a non-integral float with 1e-5 <= |x| alike (such a float is below
    # 2**53, so neither uses an exponent); only the others need their text looked at.
    if not value.is_integer() and abs(value) >= 1e-5:
        return value
    token = orjson.dumps(value)
    if token.endswith(b".0") or b"e" in token:
        return orjson.Fragment(js_number(token))
    return value


def _has_js_diff(value: Any, finite_only: bool = False) -> bool:
    """Whether ``value`` holds a float that orjson writes differently from JavaScript (an explicit
    stack and exact type tests: this runs on every appended entry). ``finite_only``: raise
    ``ValueError`` for NaN and infinities instead of letting them become ``null``."""
    stack = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is dict:
            push(item.values())
        elif kind is list:
            push(item)
        elif isinstance(item, float):
            if finite_only and not math.isfinite(item):
                raise ValueError(f"{item!r} is not JSON (JSON.stringify would write null)")
            if _js_float(float(item)) is not item:
                return True
        elif isinstance(item, dict):
            push(item.values())
        elif isinstance(item, list | tuple):
            push(item)
    return False


def _with_js_floats(value: Any) -> Any:
    """A copy of ``value`` whose floats are written as JavaScript writes them (``orjson.Fragment``)."""
    if isinstance(value, float):
        return _js_float(float(value))
    if isinstance(value, dict):
        return {k: _with_js_floats(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_with_js_floats(v) for v in value]
    return value


def _check_keys(value: Any) -> None:
    """Raise ``TypeError`` for an object key that is not a string (``json`` would turn 1 into "1")."""
    stack = [value]
    seen = 0
    while stack and seen < 1_000_000:
        item = stack.pop()
        seen += 1
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    raise TypeError(f"object keys must be strings, got {type(key).__name__} {key!r:.40}")
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def dump_line(obj: Any, *, finite_only: bool = False) -> bytes:
    """One JSONL line as pi writes it (``JSON.stringify``: compact, UTF-8, no ASCII escaping, JS numbers).

    Floats that JavaScript writes differently ("5.0" -> 5, "9e-6" -> 0.000009) are found by walking the
    containers, not by scanning the text (long tool results hold no numbers; a text scan cost ~20 us per
    KB), and written as JavaScript does with ``orjson.Fragment``. What orjson refuses (integers beyond
    64 bits, lone surrogates) is written by :func:`~sessionstore.wire.jsjson.js_dumpb`: an integer as
    the double pi reads (``10**30`` is ``1e+30``, one beyond the double range ``null``). NaN and
    infinities are written as ``null``, as JavaScript writes them, unless ``finite_only`` (then
    ``ValueError``)."""
    try:
        out = orjson.dumps(obj)  # first: it refuses cycles and nesting past its limit before any walk
        if _has_js_diff(obj, finite_only):
            out = orjson.dumps(_with_js_floats(obj))
    except TypeError:
        _check_keys(obj)
        if finite_only:
            _has_js_diff(obj, finite_only)
        out = js_dumpb(obj)  # JSON.stringify's text: no str() of an integer, whatever its digits
    return out + b"\n"

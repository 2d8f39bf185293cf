"""JSON text exactly as JavaScript's ``JSON.stringify(value, null, indent)`` writes it.

The value is taken as pi would have read it: an integer beyond 2**53 is the nearest double (a JSON
reader in JavaScript rounds it), a float prints as ``Number#toString`` prints it (``100.0`` -> ``100``,
``3e-06`` -> ``0.000003``, ``1e21`` -> ``1e+21``), NaN and infinities are ``null``; strings are escaped as
``JSON.stringify`` escapes them (lone surrogates as ``\\udxxx``, a surrogate pair held as two code points
as the one character it encodes, everything else beyond the C0 controls raw); key order is kept.

orjson writes the same text for plain data, so it does the work (C speed) whenever it can: the value
is walked for the few numbers it writes differently from JavaScript (integral floats such as ``5.0``,
exponents), and only the containers on the way to one are copied with its JavaScript text (a walk of
the values costs far less than a search of the text, which long strings make long). What orjson
refuses (lone surrogates, integers beyond 2**53, non-string keys, nesting deeper than 254) is written
by an iterative writer here, which hands each of the first few levels' containers back to orjson when
it can take them.

Nothing here recurses: a value nested 100,000 deep is written like any other.
"""

from __future__ import annotations

import gc
import math
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from json.encoder import encode_basestring  # C speed: escapes as JSON.stringify does, surrogates aside
from typing import Any

import orjson

from sessionstore.models.js import js_number

__all__ = [
    "JsonPieces", "escape_surrogates", "gc_paused", "js_dumpb", "js_dumpb_nested", "js_dumps", "js_item",
    "js_number_text", "js_string", "newline_at",
]

MAX_SAFE = 2**53
"""Integers up to this magnitude are exact in a double; beyond it JavaScript reads the nearest one."""
HANDOFF_DEPTH = 3
"""The iterative writer offers containers down to this depth to orjson (each offer that fails costs
up to the container's size in C; bounded depth bounds that to a few passes over the value)."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR_OR_LONE = re.compile("([\ud800-\udbff][\udc00-\udfff])|[\ud800-\udfff]")
_INDENT_2 = re.compile(rb"\n((?:  )*)")
_CONTAINERS = (dict, list, tuple)


# -- scalars --------------------------------------------------------------------------------------
def _surrogate(match: re.Match[str]) -> str:
    pair = match.group(1)
    if pair is not None:
        return chr(0x10000 + ((ord(pair[0]) - 0xD800) << 10) + (ord(pair[1]) - 0xDC00))
    return f"\\u{ord(match.group()):04x}"


def escape_surrogates(text: str) -> str:
    """JSON text (or a string's literal) with lone surrogates as ``\\udxxx`` escapes and surrogate pairs
    held as two code points joined into the character they encode: what ``JSON.stringify`` writes,
    and text that UTF-8 can hold."""
    return _PAIR_OR_LONE.sub(_surrogate, text) if _SURROGATE.search(text) else text


def js_string(text: str) -> str:
    """The JSON string literal ``JSON.stringify`` writes for ``text`` (quotes included)."""
    out: str = encode_basestring(text)
    if _SURROGATE.search(out):
        out = _PAIR_OR_LONE.sub(_surrogate, out)
    return out


def _float_text(value: float) -> str:
    if not math.isfinite(value):
        return "null"
    if not value.is_integer() and abs(value) >= 1e-4:
        return float.__repr__(value)  # shortest round-trip digits in fixed notation, as JavaScript
    return js_number(float.__repr__(value).encode()).decode()


def js_number_text(value: int | float) -> str:
    """How ``JSON.stringify`` writes ``value`` as pi read it (``null`` for what is not finite)."""
    if isinstance(value, int):  # bool excluded by the callers
        if -MAX_SAFE <= value <= MAX_SAFE:
            return str(int(value))
        try:
            return _float_text(float(value))
        except OverflowError:  # beyond the largest double: JavaScript reads Infinity
            return "null"
    return _float_text(float(value))


def _key_text(key: Any) -> str:
    """An object key: a string; other keys as JavaScript's ``String()`` of the value would spell them."""
    if isinstance(key, str):
        return js_string(key)
    if key is True or key is False:
        return '"true"' if key else '"false"'
    if key is None:
        return '"null"'
    if isinstance(key, int | float):
        text = js_number_text(key)
        if text == "null":
            number = float(key) if isinstance(key, float) else math.inf if key > 0 else -math.inf
            text = "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"
        return f'"{text}"'
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


# -- the orjson path --------------------------------------------------------------------------------
def _has_odd_numbers(value: Any) -> bool:
    """Whether ``value`` holds a number orjson writes differently from JavaScript (explicit stack)."""
    stack = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is dict:
            push(item.values())
        elif kind is list or kind is tuple:
            push(item)
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if not -MAX_SAFE <= item <= MAX_SAFE:
                return True
        elif isinstance(item, float):
            if _orjson_float_differs(float(item)):
                return True
        elif isinstance(item, dict):
            push(item.values())
        elif isinstance(item, list | tuple):
            push(item)
    return False


def _orjson_float_differs(value: float) -> bool:
    if not math.isfinite(value) or (not value.is_integer() and abs(value) >= 1e-5):
        return False  # both write null, or both write the shortest digits in fixed notation
    if value.is_integer():
        return True  # orjson writes "5.0" or "1e16", JavaScript "5" and "10000000000000000"
    return orjson.dumps(value).decode() != _float_text(value)


class _Unusual(Exception):
    """A value :func:`_patched_numbers` leaves to :func:`_with_js_numbers` (not plain dicts and lists)."""


def _patched_numbers(value: Any) -> Any:
    """``value`` itself when orjson writes its numbers as JavaScript does, else :func:`_with_js_numbers`
    of it, for a value orjson wrote (so no cycle, nesting within its limit). Plain dicts, lists and
    scalars are walked once, and only the containers on the way to a number that changes are copied (a
    message with a float in its usage copies the usage, not its content)."""
    try:
        return _patch(value)
    except _Unusual:
        return _with_js_numbers(value) if _has_odd_numbers(value) else value


_FLOAT_TEXTS: dict[float, Any] = {}
"""Floats of the forms orjson and JavaScript write differently, met by :func:`_patch`: the value or its
``orjson.Fragment`` (usage costs repeat; cleared when large)."""


def _js_float(value: float) -> Any:
    """``value`` (a finite float, integral or below 1e-5) or the ``orjson.Fragment`` of its JavaScript text."""
    if value == 0.0:  # 0.0 and -0.0 are one key
        return _fixed_number(value)
    fixed = _FLOAT_TEXTS.get(value)
    if fixed is None:
        if len(_FLOAT_TEXTS) >= 4096:
            _FLOAT_TEXTS.clear()
        fixed = _FLOAT_TEXTS[value] = _fixed_number(value)
    return fixed


def _patch(value: Any) -> Any:
    kind = type(value)
    items: Any
    if kind is dict:
        items = value.items()
    elif kind is list:
        items = enumerate(value)
    elif kind is float:
        return _fixed_number(value)
    elif kind is str or kind is bool or value is None or kind is int:
        return value
    else:
        raise _Unusual
    copy: Any = None
    for key, item in items:
        kinds = type(item)
        if kinds is str or kinds is int or kinds is bool or item is None:
            continue
        if kinds is float:
            # only integral floats and those below 1e-5 may be written differently (not NaN, infinities)
            if not (item.is_integer() or -1e-5 < item < 1e-5):
                continue
            fixed = _js_float(item)
        else:
            fixed = _patch(item)
        if fixed is not item:
            if copy is None:
                copy = dict(value) if kind is dict else list(value)
            copy[key] = fixed
    return value if copy is None else copy


def _fixed_number(item: Any) -> Any:
    """``item`` itself, or an ``orjson.Fragment`` / ``None`` with the text JavaScript writes."""
    if isinstance(item, bool) or not isinstance(item, int | float):
        return item
    if isinstance(item, int):
        if -MAX_SAFE <= item <= MAX_SAFE:
            return item
    elif not _orjson_float_differs(float(item)):
        return item
    text = js_number_text(item)
    return None if text == "null" else orjson.Fragment(text.encode())


def _with_js_numbers(value: Any) -> Any:
    """A copy of ``value`` whose numbers orjson would write differently are ``orjson.Fragment`` s
    (containers are copied once each: shared ones stay shared and a cycle stays a cycle)."""
    if not isinstance(value, _CONTAINERS):
        return _fixed_number(value)
    copies: dict[int, Any] = {}

    def copy_of(container: Any) -> tuple[Any, bool]:
        """The copy of ``container`` and whether it is new (to be filled)."""
        known = copies.get(id(container))
        if known is not None:
            return known, False
        fresh: Any = {} if isinstance(container, dict) else []
        copies[id(container)] = fresh
        return fresh, True

    root, _ = copy_of(value)
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:  # ids stay unique: the originals live on in ``value`` meanwhile
        source, target = stack.pop()
        items: Iterator[tuple[Any, Any]] = iter(source.items()) if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, _CONTAINERS):
                copy, new = copy_of(item)
                if new:
                    stack.append((item, copy))
                item = copy
            else:
                item = _fixed_number(item)
            if isinstance(target, dict):
                target[key] = item
            else:
                target.append(item)
    return root


def _orjson(value: Any, indented: bool) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_STRICT_INTEGER if indented
                        else orjson.OPT_STRICT_INTEGER)


def _reindent(out: bytes, unit: str, depth: int) -> bytes:
    """orjson's two-space indentation as ``unit`` per level, shifted ``depth`` levels (a raw newline
    in orjson's output is always formatting: newlines in strings are escaped)."""
    if unit == "  ":
        return out if depth == 0 else out.replace(b"\n", b"\n" + b"  " * depth)
    step, base = unit.encode(), unit.encode() * depth
    return _INDENT_2.sub(lambda m: b"\n" + base + step * (len(m.group(1)) // 2), out)


# -- the iterative writer -----------------------------------------------------------------------------
_END = object()


def _write_slowly(value: Any, unit: str | None) -> str:
    """JSON text of ``value`` (numbers already fixed or not) without recursion."""
    parts: list[str] = []
    put = parts.append
    newlines = ["\n"]

    def newline(depth: int) -> str:
        assert unit is not None
        while len(newlines) <= depth:
            newlines.append(newlines[-1] + unit)
        return newlines[depth]

    colon = ":" if unit is None else ": "
    # frames: [iterator, is_dict, id, first]
    stack: list[list[Any]] = []
    open_ids: set[int] = set()
    pending = value
    while True:
        item = pending
        kind = type(item)
        depth = len(stack)
        if kind is str:
            put(js_string(item))
        elif item is None:
            put("null")
        elif item is True:
            put("true")
        elif item is False:
            put("false")
        elif kind is orjson.Fragment:
            put(orjson.dumps(item).decode())
        elif isinstance(item, dict | list | tuple):
            if not item:
                put("{}" if isinstance(item, dict) else "[]")
            else:
                handed = None
                if 0 < depth <= HANDOFF_DEPTH:
                    try:
                        handed = _orjson(item, unit is not None)
                    except TypeError:
                        handed = None
                if handed is not None:
                    put(_reindent(handed, unit, depth).decode() if unit is not None else handed.decode())
                else:
                    key = id(item)
                    if key in open_ids:
                        raise ValueError("circular reference: the value contains itself")
                    open_ids.add(key)
                    if isinstance(item, dict):
                        put("{")
                        stack.append([iter(item.items()), True, key, True])
                    else:
                        put("[")
                        stack.append([iter(item), False, key, True])
        elif isinstance(item, str):
            put(js_string(str.__str__(item)))
        elif isinstance(item, int | float):
            put(js_number_text(item))
        else:
            raise TypeError(f"Object of type {kind.__name__} is not JSON serializable")
        # the next value to write, closing the containers that are done
        while stack:
            frame = stack[-1]
            nxt: Any = next(frame[0], _END)
            if nxt is _END:
                stack.pop()
                open_ids.discard(frame[2])
                if unit is not None:
                    put(newline(len(stack)))
                put("}" if frame[1] else "]")
                continue
            if frame[3]:
                frame[3] = False
            else:
                put(",")
            if unit is not None:
                put(newline(len(stack)))
            if frame[1]:
                put(_key_text(nxt[0]))
                put(colon)
                pending = nxt[1]
            else:
                pending = nxt
            break
        else:
            return "".join(parts)


# -- entry points --------------------------------------------------------------------------------------
def _unit(indent: int | None) -> str | None:
    if indent is None or indent < 1:
        return None
    return " " * min(indent, 10)  # JSON.stringify clamps the indent to 10 spaces


def js_dumpb(value: Any, *, indent: int | None = None) -> bytes:
    """:func:`js_dumps` as UTF-8 bytes (what a writer to a file or pipe wants)."""
    unit = _unit(indent)
    indented = unit is not None
    try:
        out = _orjson(value, indented)
    except TypeError:
        pass
    else:
        fixed = _patched_numbers(value)
        if fixed is not value:
            out = _orjson(fixed, indented)
        return out if unit is None else _reindent(out, unit, 0)
    fixed = _with_js_numbers(value)
    try:
        out = _orjson(fixed, indented)
    except TypeError:
        return _write_slowly(fixed, unit).encode()
    return out if unit is None else _reindent(out, unit, 0)


def js_dumps(value: Any, *, indent: int | None = None) -> str:
    """``JSON.stringify(value, null, indent)`` as JavaScript writes it for the data pi would have read."""
    return js_dumpb(value, indent=indent).decode()


def js_dumpb_nested(value: Any, depth: int) -> bytes:
    """``js_dumpb(value, indent=2)`` as it reads inside a larger value written with ``indent=2``, where
    ``value`` is ``depth`` levels deep: the same text, each line after the first indented ``depth``
    levels more (JSON.stringify writes a nested value the way it writes it alone). What a writer of
    a large value, one part at a time, puts between the parts."""
    out = js_dumpb(value, indent=2)
    return _reindent(out, "  ", depth) if depth else out


def newline_at(depth: int) -> bytes:
    """A newline and the indentation of ``depth`` levels of ``indent=2``."""
    return b"\n" + b"  " * depth


def _wrapped(value: Any, depth: int) -> Any:
    """``value`` as the second item of a list ``depth`` levels deep (the first: ``0``)."""
    wrapped: Any = [0, value]
    for _ in range(depth - 1):
        wrapped = [wrapped]
    return wrapped


def _item_bounds(depth: int) -> tuple[int, int]:
    """Where the second item's comma is, and how many bytes follow that item, in orjson's indented
    text of a value wrapped by :func:`_wrapped`."""
    out = _orjson(_wrapped(1, depth), True)
    at = out.index(b"1")
    return at - len(newline_at(depth)) - 1, len(out) - at - 1


_ITEM_BOUNDS = {depth: _item_bounds(depth) for depth in (1, 2, 3)}


def js_item(value: Any, depth: int) -> bytes | memoryview:
    """``b"," + newline_at(depth) + js_dumpb_nested(value, depth)``: an item that follows another in an
    array ``depth`` levels deep of a value written with ``indent=2``, its comma and newline first (the
    first item of an array is ``[`` and the rest of it). orjson writes it in place, the value the
    second item of a list nested ``depth`` deep, so that its lines come indented as they read there
    (no second pass over the text), and the item is a view of that text; the value's numbers are
    looked at before (:func:`_patch`), so it is written once."""
    bounds = _ITEM_BOUNDS.get(depth)
    if bounds is not None:
        try:
            fixed = _patch(value)
        except (_Unusual, RecursionError):  # not plain data, or deep (or a cycle): as js_dumpb does it
            pass
        else:
            try:
                out = _orjson(_wrapped(fixed, depth), True)
            except TypeError:
                pass
            else:
                start, tail = bounds
                return memoryview(out)[start : len(out) - tail]
    return b"," + newline_at(depth) + js_dumpb_nested(value, depth)


_pause_lock = threading.Lock()
_pauses = 0
_enable_after = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a loop that makes many containers, back on after: a streamed
    writer's loop, or a resume decoding a long path (its objects are trees without cycles, freed by
    reference counting). With the collector on, its passes over them and over what the caller holds
    cost a third of a large session's ``context --json`` and half of a 100,000-entry resume. A cycle
    made meanwhile is collected after.

    Re-entrant and shared by threads: the first pause to start records whether collection was on and
    turns it off, the last to end turns it back on only if it was on then (``finally``: also when the
    body raises); a caller that had collection off keeps it off. (Collection turned off by other code
    while a pause is on is turned back on when the last pause ends: ``gc`` has no owner to ask.)

    What the pause allocated and kept (a resume's messages: ~500,000 containers for 100,000 messages)
    would be scanned by the first young collection after it, and again by the next middle one (0.1 s
    each at that size): when more than :data:`PROMOTE_AFTER` containers were kept, the last pause to
    end moves them to the oldest generation unscanned instead (``gc.freeze()`` then ``gc.unfreeze()``,
    which is that move and nothing else), where only a full collection looks at them. Not when the
    process has frozen objects of its own (``gc.get_freeze_count()``): those stay frozen."""
    global _pauses, _enable_after
    with _pause_lock:
        if _pauses == 0:
            _enable_after = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0:
                if gc.get_count()[0] > PROMOTE_AFTER and gc.get_freeze_count() == 0:
                    gc.freeze()
                    gc.unfreeze()
                if _enable_after:
                    gc.enable()


PROMOTE_AFTER = 100_000
"""Containers a pause must have kept before :func:`gc_paused` promotes them unscanned."""


class JsonPieces:
    """Bytes written to ``fp`` in pieces of about ``size`` (a streamed writer's many small parts, few
    writes)."""

    __slots__ = ("_fp", "_parts", "_pending", "_size")

    def __init__(self, fp: Any, size: int = 1 << 20) -> None:
        self._fp = fp
        self._parts: list[bytes | memoryview] = []
        self._pending = 0
        self._size = size

    def put(self, data: bytes | memoryview) -> None:
        self._parts.append(data)
        self._pending += len(data)
        if self._pending >= self._size:
            self.flush()

    def flush(self) -> None:
        if self._parts:
            self._fp.write(b"".join(self._parts))
            self._parts.clear()
            self._pending = 0


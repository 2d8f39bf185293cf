"""Version upgrades of pi session entries (SPEC 9), one entry at a time, in file order.

v1 -> v2: entries get ``id``/``parentId`` chained in file order and ``firstKeptEntryIndex`` becomes
``firstKeptEntryId``. Unlike pi (random ids), the id of the entry at position ``n`` of the file's
parsed objects (header = 0) is ``f"{n:08x}"``, so importing a file twice gives the same ids.
v2 -> v3: message role ``hookMessage`` is renamed ``custom``.
Keys are added the way pi's in-place mutation adds them (appended at the end, or set in place when
present). pi then rewrites the whole file with ``JSON.stringify``: :func:`pi_rewritten` is that text
for an upgraded header or entry, so an upgraded file is stored and exported as pi's rewrite of it.
"""

from __future__ import annotations

import re
from typing import Any

from sessionstore.wire.jsjson import js_dumpb

CURRENT_VERSION = 3
"""The session file version pi 1.6 writes, the one every entry is upgraded to."""

_MAX_ARRAY_INDEX = 2**32 - 2
_DIGITS_KEY = re.compile(rb'"(?:[0-9]|\\u003[0-9])+"\s*:')
"""A key of digits only (raw or escaped) in a line's text: where none is, no key is an array index."""
DIGITS_KEY_TEXT = re.compile(_DIGITS_KEY.pattern.decode())
"""The same, in a ``str``."""


def v1_entry_id(index: int) -> str:
    """Deterministic id of the v1 entry at ``index`` among the file's parsed objects (header = 0)."""
    return f"{index:08x}"


def _is_array_index(key: str) -> bool:
    """Whether a JavaScript object orders ``key`` as an array index (``"0"`` ... ``"4294967294"``,
    canonical: no sign, no leading zero)."""
    return (key.isascii() and key.isdigit() and (key == "0" or key[0] != "0")
            and len(key) <= 10 and int(key) <= _MAX_ARRAY_INDEX)


def in_js_key_order(value: Any) -> Any:
    """``value`` with each object's keys in the order a JavaScript object holds them: array-index keys
    first, ascending, then the others in the order they were first set (objects reordered in place;
    walked without recursion). A key that ``JSON.parse`` met twice keeps its first place and its last
    value, as the Python parsers give it already."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if any(key[:1].isdigit() for key in item) and any(_is_array_index(key) for key in item):
                indexes = sorted((key for key in item if _is_array_index(key)), key=int)
                others = [key for key in item if not _is_array_index(key)]
                pairs = [(key, item[key]) for key in indexes + others]
                item.clear()
                item.update(pairs)
            stack.extend(child for child in item.values() if isinstance(child, dict | list))
        elif isinstance(item, list):
            stack.extend(child for child in item if isinstance(child, dict | list))
    return value


def pi_rewritten(value: Any, line: bytes | None = None) -> bytes:
    """``JSON.stringify`` of ``value`` as ``JSON.parse`` read it (no newline): the line pi's rewrite of
    an upgraded file holds for it. Keys in a JavaScript object's order (:func:`in_js_key_order`, in
    place; only when ``line``, the text ``value`` was read from, holds a key of digits), numbers as
    JavaScript writes the double it read (``1e3`` -> ``1000``, ``-0`` -> ``0``, ``1e308`` -> ``1e+308``,
    digits beyond 2**53 rounded), strings escaped as ``JSON.stringify`` escapes them (``\\u00e9`` ->
    ``é``, ``\\/`` -> ``/``, a lone surrogate as ``\\udxxx``)."""
    return js_dumpb(in_js_key_order(value) if line is None or _DIGITS_KEY.search(line) else value)


class Upgrader:
    """Upgrades the entries of one file from ``version`` to 3, statefully (v1 ids chain in order)."""

    def __init__(self, version: int) -> None:
        self.version = version
        self._prev_id: str | None = None
        self._last_kept: str | None = None

    def accepted(self, entry_id: str) -> None:
        """The entry just upgraded was kept: the next v1 entry chains to it."""
        self._last_kept = entry_id

    def skipped(self) -> None:
        """The entry just upgraded was refused (lenient reading): chain the next v1 entry to the
        last kept one instead, so one bad line does not cut the linear session in two."""
        self._prev_id = self._last_kept

    def upgrade_header(self, header: dict[str, Any]) -> None:
        if self.version < 3:
            header["version"] = 3

    def upgrade(self, entry: dict[str, Any], index: int) -> None:
        """Upgrade ``entry`` in place; ``index`` is its position among the file's parsed objects."""
        if self.version < 2:
            entry_id = v1_entry_id(index)
            entry["id"] = entry_id
            entry["parentId"] = self._prev_id
            self._prev_id = entry_id
            target = entry.get("firstKeptEntryIndex")
            if entry.get("type") == "compaction" and isinstance(target, (int, float)) and not isinstance(target, bool):
                # pi: entries[index] must exist, not be the header, and already carry an id; pi deletes
                # the index only when it is a number (Infinity and fractions name no entry).
                if (isinstance(target, int) or target.is_integer()) and 0 < target <= index:
                    entry["firstKeptEntryId"] = v1_entry_id(int(target))
                del entry["firstKeptEntryIndex"]
        if self.version < 3 and entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"

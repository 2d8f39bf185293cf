"""pi-ai's small text rules that every request builder shares: surrogate stripping, its short hash,
id sanitising on UTF-16 code units, and the rendering of system messages (``utils/text``,
``utils/hash``, ``utils/sanitize-unicode``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sessionstore.context.system import content_text
from sessionstore.models.js_text import utf16_units

_UNPAIRED_SURROGATE = re.compile("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")
_NOT_ID_CHARACTER = re.compile("[^a-zA-Z0-9_-]")
_MASK = 0xFFFFFFFF


def sanitize_surrogates(text: str) -> str:
    """pi-ai's ``sanitizeSurrogates``: ``text`` without unpaired surrogates (pairs and astral characters stay)."""
    return _UNPAIRED_SURROGATE.sub("", text)


def _imul(a: int, b: int) -> int:
    return ((a & _MASK) * (b & _MASK)) & _MASK


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, digit = divmod(value, 36)
        out = digits[digit] + out
        if value == 0:
            return out


def short_hash(text: str) -> str:
    """pi-ai's ``shortHash``: two 32-bit ``Math.imul`` mixes over the UTF-16 code units, in base 36."""
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    for unit in utf16_units(text):
        ch = ord(unit)
        h1 = _imul(h1 ^ ch, 2654435761)
        h2 = _imul(h2 ^ ch, 1597334677)
    h1 = _imul(h1 ^ (h1 >> 16), 2246822507) ^ _imul(h2 ^ (h2 >> 13), 3266489909)
    h2 = _imul(h2 ^ (h2 >> 16), 2246822507) ^ _imul(h1 ^ (h1 >> 13), 3266489909)
    return _base36(h2 & _MASK) + _base36(h1 & _MASK)


def sanitize_id(text: str) -> str:
    """``text.replace(/[^a-zA-Z0-9_-]/g, "_")``: one ``_`` per UTF-16 code unit (two for an astral character)."""
    return _NOT_ID_CHARACTER.sub("_", utf16_units(text))


def js_length(text: str) -> int:
    """``text.length``: UTF-16 code units."""
    return len(utf16_units(text))


def js_slice(text: str, end: int) -> str:
    """``text.slice(0, end)`` on UTF-16 code units (a pair cut in half leaves a lone surrogate, as in JavaScript)."""
    units = utf16_units(text)
    if len(units) <= end:
        return text
    return units[:end].encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _sections(message: Mapping[str, Any]) -> Mapping[str, Any]:
    sections = message.get("sections")
    return sections if isinstance(sections, Mapping) else {}


def system_message_text(message: Mapping[str, Any]) -> str:
    """pi-ai's ``getSystemMessageText``: the content, then each section's text, the non-empty parts
    joined by a blank line."""
    parts = [content_text(message.get("content")), *(v for v in _sections(message).values() if v is not None)]
    return "\n\n".join(part for part in parts if len(part) > 0)


def render_system_message_update(message: Mapping[str, Any]) -> str:
    """pi-ai's ``renderSystemMessageUpdate``: a later system message, its section changes framed by name."""
    parts = []
    text = content_text(message.get("content"))
    if len(text) > 0:
        parts.append(text)
    for name, value in _sections(message).items():
        parts.append(
            f'Removed system prompt section "{name}".'
            if value is None
            else f'Updated system prompt section "{name}":\n\n{value}'
        )
    return "\n\n".join(parts)

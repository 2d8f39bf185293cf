"""Paths naming a value inside a transcript: ``messages[3].content[1].arguments.nested[2]``."""

from __future__ import annotations

import json
from typing import Final

_KEEP_HEAD: Final = 12
_KEEP_TAIL: Final = 12

PathNode = tuple["PathNode | None", str]
"""A path as a linked list of segments, innermost last: ``(parent, segment)``; cheap to extend."""


def message_path(index: int) -> str:
    """The path of the message at ``index``."""
    return f"messages[{index}]"


def key_segment(key: str) -> str:
    """The segment for a mapping key: ``.name`` for identifiers, ``["odd key"]`` otherwise."""
    if key.isidentifier():
        return "." + key
    return "[" + json.dumps(key, ensure_ascii=False) + "]"


def index_segment(index: int) -> str:
    """The segment for a sequence index: ``[index]``."""
    return f"[{index}]"


def render(base: str, node: PathNode | None) -> str:
    """``base`` followed by the segments of ``node``; very deep paths keep only their ends."""
    segments: list[str] = []
    while node is not None:
        node, segment = node
        segments.append(segment)
    segments.reverse()
    if len(segments) > _KEEP_HEAD + _KEEP_TAIL:
        hidden = len(segments) - _KEEP_HEAD - _KEEP_TAIL
        segments = [*segments[:_KEEP_HEAD], f"…({hidden} more)…", *segments[-_KEEP_TAIL:]]
    return base + "".join(segments)

"""pi 1.6's rules about entries, each in one place: what sets the model and the thinking level, where
a context starts, a message's text. Used by the store's facts (appends and bulk imports alike) and by
context building, so that the facts stored for an entry and the context built from a path agree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def sets_model(entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` selects the model (pi's ``buildSessionContext``): a ``model_change``, or a
    ``message`` entry holding an assistant message."""
    kind = entry.get("type")
    if kind == "model_change":
        return True
    if kind == "message":
        message = entry.get("message")
        return isinstance(message, dict) and message.get("role") == "assistant"
    return False


def sets_thinking_level(entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` sets the thinking level: a ``thinking_level_change``."""
    return entry.get("type") == "thinking_level_change"


def is_compaction(entry: Mapping[str, Any]) -> bool:
    return entry.get("type") == "compaction"


def context_start_depth(compaction_depth: int, kept_depth: int | None) -> int:
    """Where the context of a path whose newest compaction is at ``compaction_depth`` starts: at the
    compaction's first kept entry (its depth ``kept_depth``) when that entry is on the path before the
    compaction, else at the compaction itself (pi then keeps nothing before it). Without a compaction
    the context starts at the root (depth 0)."""
    return kept_depth if kept_depth is not None else compaction_depth


def message_text(message: Mapping[str, Any]) -> str:
    """pi's ``extractTextContent``: a string content, or its text blocks joined by spaces."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                        and isinstance(b.get("text"), str))
    return ""

"""pi 1.6's rules about entries, each in one place: what sets the model and the thinking level, where
a context starts, a message's text. Used by the store's facts (appends and bulk imports alike) and by
context building, so that the facts stored for an entry and the context built from a path agree."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlparse

from sessionstore.models import js


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
    """pi's ``extractTextContent``: a string content, or the ``text`` of its text blocks joined by
    spaces as JavaScript joins them (a missing or null text is empty, another value its ``String()``).
    Content of any other kind has no text (pi's listing fails on the file; the store lists it)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (b.get("text", js.MISSING) for b in content if isinstance(b, dict) and b.get("type") == "text")
        return " ".join("" if js.nullish(text) else js.to_string(text) for text in texts)
    return ""


def listing_activity_ms(entry: Mapping[str, Any]) -> int | float | None:
    """pi's ``getMessageActivityTime``: when a ``message`` entry counts as activity for the session list
    (a user or assistant message with content: its numeric ``timestamp``, else the entry's date)."""
    message = entry.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("role"), str) or "content" not in message:
        return None
    if message["role"] not in ("user", "assistant"):
        return None
    stamp = message.get("timestamp")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return stamp
    return js.date_ms(entry.get("timestamp", js.MISSING))


ACTIVITY_PAST_DATES = 8_640_000_000_000_001
"""The last activity as the store keeps it when pi's is past the last date (8.64e15 ms: a message
timestamp of ``1e16`` or ``Infinity``): pi takes the latest of the raw numbers, so its ``modified`` is
then an Invalid Date, whatever comes later."""


def later_listing_activity(modified_ms: int | None, activity: int | float | None) -> int | None:
    """pi's ``lastActivityTime = Math.max(lastActivityTime ?? 0, activity)``, kept as the store keeps it:
    a date's milliseconds (pi's ``Date`` of the result), or :data:`ACTIVITY_PAST_DATES`."""
    if activity is None or not activity > (modified_ms or 0):
        return modified_ms
    clipped = js.date_ms(activity)
    return ACTIVITY_PAST_DATES if clipped is None else clipped


def listing_modified_ms(last_activity_ms: int | None, header_timestamp: Any) -> int | None:
    """pi's ``modified`` of a listed session: its last activity when there is one after 1970 (``None``,
    an Invalid Date, when it is past the last date), else the header's time (``None`` when that is not
    a date either; pi then takes the file's mtime)."""
    if last_activity_ms is not None and last_activity_ms > 0:
        return None if last_activity_ms >= ACTIVITY_PAST_DATES else last_activity_ms
    return js.date_ms(header_timestamp)


def resolve_path(path: str, base: str) -> str:
    """pi's ``resolvePath`` on POSIX: ``~`` and ``~/...`` expanded to ``$HOME``, a ``file://`` URL read as
    its path, then made absolute against ``base`` and normalised (``.``, ``..``, repeated and trailing
    slashes), without touching the filesystem. Session directories match by this form."""
    if path == "~" or path.startswith("~/"):
        path = os.path.join(os.path.expanduser("~"), path[2:]) if path != "~" else os.path.expanduser("~")
    elif path.startswith("file://"):
        path = unquote(urlparse(path).path)
    joined = path if path.startswith("/") else os.path.join(base, path)
    normal = posixpath.normpath(joined)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


def cwd_matches(cwd: Any, resolved: str, base: str) -> bool:
    """pi's ``sessionCwdMatches``: a session's non-empty ``cwd`` names the resolved directory."""
    return isinstance(cwd, str) and cwd != "" and resolve_path(cwd, base) == resolved

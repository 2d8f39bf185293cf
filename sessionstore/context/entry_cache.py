"""A store's memory of the stored entries it decoded and checked: what resuming the same session again
need not prove again.

Validation on load stays: every message of a context is checked when it is read. What a check of a
stored entry found is a function of the entry's stored JSON text alone (the compiled shape rules of
:mod:`sessionstore.validate._fast` read nothing else), so the cache maps the text itself to the
verdict (:data:`~sessionstore.validate._shape.Verdict`: the message had nothing to report, and these
are its tool records). A resume still reads every entry's text from the database and decodes it; an
entry whose text is in the cache, byte for byte, skips only the shape check that this text passed
before. Nothing is keyed by session, key or seq, so nothing can go stale: a session deleted, replaced
(``import --replace``, possibly under the same key), or changed by raw SQL or by another process is
read as it now is, and a text never seen is checked. The cache holds no object a caller gets (texts
and tuples of strings and ints, all immutable; the decoded entries handed out are new each time), so
a caller cannot corrupt it.

Memory: bounded by ``max_bytes`` (the texts' sizes plus a per-entry overhead), least recently used
texts dropped first; ``max_bytes=0`` turns the cache off.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final

from sessionstore.validate._shape import Verdict
from sessionstore.wire.codec import json_loads

DEFAULT_ENTRY_CACHE_BYTES: Final = 128 << 20
"""The default bound of a store's cache: the texts of a 100,000-message session of ~700 B entries fit."""
_ENTRY_OVERHEAD: Final = 160
"""Bytes counted per cached text beyond its length (the dict slot, the verdict tuples)."""

Text = str | bytes


class DecodedPath:
    """A path's entries decoded from their stored texts, with what the cache knew of each:
    ``known[id(message)]`` is the verdict of the message object of an entry whose text was checked
    before; ``unknown[id(message)]`` the text of one that was not (to remember its verdict by). Keyed
    by the identity of the message objects, valid while ``entries`` holds them: a message the context
    building copies or rewrites (an edit, missing content) is a new object, found in neither."""

    __slots__ = ("entries", "known", "unknown")

    def __init__(self, entries: list[Any], known: dict[int, Verdict], unknown: dict[int, Text]) -> None:
        self.entries = entries
        self.known = known
        self.unknown = unknown


class EntryCache:
    """Stored entry text -> the verdict of its message's check (thread-safe; see the module docstring)."""

    def __init__(self, max_bytes: int = DEFAULT_ENTRY_CACHE_BYTES) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes must be a non-negative int, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self._verdicts: OrderedDict[Text, Verdict] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._verdicts)

    @property
    def bytes(self) -> int:
        """The bytes counted against ``max_bytes``."""
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._verdicts.clear()
            self._bytes = 0

    def decode(self, texts: Sequence[Text]) -> DecodedPath:
        """Every text decoded (a new object each time), with the verdicts known of their messages."""
        entries = [json_loads(text) for text in texts]
        known: dict[int, Verdict] = {}
        unknown: dict[int, Text] = {}
        if not self.max_bytes:
            return DecodedPath(entries, known, unknown)
        with self._lock:
            verdicts = self._verdicts
            get, touch = verdicts.get, verdicts.move_to_end
            for text, entry in zip(texts, entries, strict=True):
                if type(entry) is not dict:
                    continue
                message = entry.get("message")
                if type(message) is not dict:
                    continue
                verdict = get(text)
                if verdict is None:
                    unknown[id(message)] = text
                else:
                    known[id(message)] = verdict
                    touch(text)
        return DecodedPath(entries, known, unknown)

    def learn(self, decoded: DecodedPath, messages: Sequence[Any], verdicts: Sequence[Verdict | None]) -> None:
        """Remember the verdicts found for ``messages`` (checked in that order) whose objects came from
        an entry of ``decoded`` not known before."""
        unknown = decoded.unknown
        if not unknown or not self.max_bytes:
            return
        learnt = [(text, verdict) for message, verdict in zip(messages, verdicts, strict=True)
                  if verdict is not None and (text := unknown.get(id(message))) is not None]
        if not learnt:
            return
        with self._lock:
            stored = self._verdicts
            size = self._bytes
            for text, verdict in learnt:
                if text not in stored:
                    stored[text] = verdict
                    size += len(text) + _ENTRY_OVERHEAD
            while size > self.max_bytes and stored:
                text, _verdict = stored.popitem(last=False)
                size -= len(text) + _ENTRY_OVERHEAD
            self._bytes = size

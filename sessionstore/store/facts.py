"""Immutable facts about an entry's ancestry, computed once when it is appended (see ``schema``)."""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from sessionstore.models.timestamps import iso_to_ms
from sessionstore.store.dbtext import to_db


class NodeFacts(NamedTuple):
    """(A tuple: built for every appended or imported entry, three times cheaper than a frozen dataclass.)"""

    seq: int
    depth: int
    ctx_depth: int
    compaction_seq: int | None
    model_seq: int | None
    thinking_seq: int | None


def sets_model(entry: dict[str, Any]) -> bool:
    kind = entry.get("type")
    if kind == "model_change":
        return True
    if kind == "message":
        message = entry.get("message")
        return isinstance(message, dict) and message.get("role") == "assistant"
    return False


def facts_for(entry: dict[str, Any], seq: int, parent: NodeFacts | None, kept_depth: int | None) -> NodeFacts:
    """Facts of ``entry`` appended as ``seq`` under ``parent``.

    ``kept_depth``: for a compaction, the depth of its first kept entry when that entry is on the path
    before it (else ``None``: the context starts at the compaction itself).
    """
    depth = 0 if parent is None else parent.depth + 1
    kind = entry.get("type")
    if kind == "compaction":
        ctx_depth = kept_depth if kept_depth is not None else depth
        compaction_seq: int | None = seq
    else:
        ctx_depth = 0 if parent is None else parent.ctx_depth
        compaction_seq = None if parent is None else parent.compaction_seq
    return NodeFacts(
        seq=seq,
        depth=depth,
        ctx_depth=ctx_depth,
        compaction_seq=compaction_seq,
        model_seq=seq if sets_model(entry) else (None if parent is None else parent.model_seq),
        thinking_seq=seq
        if kind == "thinking_level_change"
        else (None if parent is None else parent.thinking_seq),
    )


ENTRY_COLUMNS = (
    "session_id", "seq", "entry_id", "parent_id", "parent_seq", "depth", "type", "role", "timestamp", "payload",
    "ctx_depth", "compaction_seq", "model_seq", "thinking_seq",
)
"""The ``entries`` columns in the order of :func:`entry_values`."""


def entry_values(
    session_id: str, entry: dict[str, Any], facts: NodeFacts, parent_seq: int | None, payload: str
) -> tuple[Any, ...]:
    """An ``entries`` row (columns as :data:`ENTRY_COLUMNS`); ``payload`` is the entry's stored JSON text.

    ``session_id`` is already in its stored form (:func:`~sessionstore.store.dbtext.to_db`); the
    ``parent_id`` column names the parent the tree uses (``None`` for a root, also when the entry's
    ``parentId`` names no entry: the payload keeps what the file said)."""
    kind = entry.get("type")
    role = None
    if kind == "message":
        message = entry.get("message")
        role = message.get("role") if isinstance(message, dict) else None
    timestamp = entry.get("timestamp")
    return (
        session_id,
        facts.seq,
        to_db(entry["id"]),
        None if parent_seq is None else to_db(entry["parentId"]),
        parent_seq,
        facts.depth,
        to_db(kind) if isinstance(kind, str) else orjson.dumps(kind).decode(),
        to_db(role) if isinstance(role, str) else None,
        to_db(timestamp) if isinstance(timestamp, str) else "",
        payload,
        facts.ctx_depth,
        facts.compaction_seq,
        facts.model_seq,
        facts.thinking_seq,
    )


def message_text(message: dict[str, Any]) -> str:
    """pi's ``extractTextContent``: a string content, or its text blocks joined by spaces."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                        and isinstance(b.get("text"), str))
    return ""


_MAX_TIME_MS = 8_640_000_000_000_000
"""The largest time JavaScript's Date holds (ms); larger message timestamps do not fit the column either."""


@dataclass(slots=True)
class SessionStats:
    """The listing columns of a session, folded over its entries in append order."""

    entry_count: int = 0
    message_count: int = 0
    name: str | None = None
    first_message: str | None = None
    modified_ms: int | None = None

    def add(self, entry: dict[str, Any]) -> None:
        self.entry_count += 1
        kind = entry.get("type")
        if kind == "session_info":
            name = entry.get("name")
            self.name = name.strip() or None if isinstance(name, str) else None
            return
        if kind != "message":
            return
        message = entry.get("message")
        if not isinstance(message, dict):
            return
        self.message_count += 1
        role = message.get("role")
        if role not in ("user", "assistant") or "content" not in message:
            return
        if role == "user" and self.first_message is None:
            self.first_message = message_text(message)
        stamp = message.get("timestamp")
        valid_ms = isinstance(stamp, int) and not isinstance(stamp, bool) and abs(stamp) <= _MAX_TIME_MS
        when = stamp if valid_ms else iso_to_ms(entry.get("timestamp"))
        if when is not None:
            self.modified_ms = max(self.modified_ms or 0, when)

    def columns(self) -> dict[str, Any]:
        return {
            "entry_count": self.entry_count,
            "message_count": self.message_count,
            "name": to_db(self.name),
            "first_message": to_db(self.first_message),
            "modified_ms": self.modified_ms,
        }


_NONE = -1
"""A TreeIndex cell that names no entry."""
_WIDTH = 6
"""TreeIndex cells per entry: parent seq, depth, context depth, compaction, model and thinking seqs."""


def _node_facts(seq: int, depth: int, ctx_depth: int, compaction: int, model: int, thinking: int) -> NodeFacts:
    """An entry's facts from its TreeIndex cells."""
    return NodeFacts(
        seq,
        depth,
        ctx_depth,
        None if compaction == _NONE else compaction,
        None if model == _NONE else model,
        None if thinking == _NONE else thinking,
    )


class TreeIndex:
    """The ancestry facts of a session being bulk-inserted, kept compact (a few machine words per
    entry) so that importing a very large file does not hold its entries in memory."""

    def __init__(self, seq_of: dict[str, int] | None = None) -> None:
        # ``seq_of`` may be shared with the JSONL reader, which records each id as it yields it.
        self.seq_of: dict[str, int] = {} if seq_of is None else seq_of
        # One array of 32-bit cells, ``_WIDTH`` per entry: 24 bytes per entry (a 1 GB import has about
        # a million entries); a session of more than 2**31 - 1 entries cannot be imported.
        self._cells = array("i")
        self._count = 0
        self._awaited: set[str] = set()  # parent ids named before any entry had them (roots so far)

    def __len__(self) -> int:
        return self._count

    def __contains__(self, entry_id: object) -> bool:
        """Whether ``entry_id`` is already indexed (not merely announced by a sharing reader)."""
        seq = self.seq_of.get(entry_id) if isinstance(entry_id, str) else None
        return seq is not None and seq < self._count

    def facts(self, seq: int) -> NodeFacts:
        _parent, *cells = self._cells[seq * _WIDTH : (seq + 1) * _WIDTH]
        return _node_facts(seq, *cells)

    def kept_depth(self, first_kept: Any, parent_seq: int | None) -> int | None:
        """Depth of ``first_kept`` when it is on the path ending at ``parent_seq``, else ``None``."""
        target = self.seq_of.get(first_kept) if isinstance(first_kept, str) else None
        if target is None or target >= self._count or parent_seq is None:
            # (a shared seq_of may already hold the entry being added: a compaction naming itself)
            return None
        cells = self._cells
        depth = cells[target * _WIDTH + 1]
        node = parent_seq
        while node != _NONE and cells[node * _WIDTH + 1] > depth:
            node = cells[node * _WIDTH]
        return depth if node == target else None

    def add(self, entry: dict[str, Any]) -> tuple[NodeFacts, int | None]:
        """Index ``entry``; returns its facts and its parent's seq. A ``parentId`` that names no
        indexed entry makes the entry a root, as pi reads it. Raises ``ValueError`` when the id is
        already indexed, when the entry is its own parent, or when an earlier entry named it as its
        parent (parents precede their children: the tree is stored in that order).

        The same facts as :func:`facts_for`, computed on the cells (this runs once per entry of an
        import)."""
        entry_id = entry["id"]
        parent_id = entry.get("parentId")
        seq_of = self.seq_of
        seq = self._count
        taken = seq_of.get(entry_id) if isinstance(entry_id, str) else None
        if taken is not None and taken < seq:
            raise ValueError(f"duplicate id {entry_id!r}")
        if parent_id == entry_id:
            raise ValueError("it is its own parent")
        if self._awaited and entry_id in self._awaited:
            raise ValueError("an earlier entry names it as its parent: parents must precede their children")
        parent_seq = seq_of.get(parent_id) if isinstance(parent_id, str) and parent_id else None
        if parent_seq is not None and parent_seq >= seq:
            parent_seq = None  # (a shared seq_of may already hold the entry being added)
        if parent_seq is None:
            if isinstance(parent_id, str) and parent_id:
                self._awaited.add(parent_id)
            depth = ctx_depth = 0
            compaction = model = thinking = _NONE
        else:
            _grand, depth, ctx_depth, compaction, model, thinking = self._cells[
                parent_seq * _WIDTH : (parent_seq + 1) * _WIDTH
            ]
            depth += 1
        kind = entry.get("type")
        if kind == "compaction":
            kept = self.kept_depth(entry.get("firstKeptEntryId"), parent_seq)
            ctx_depth = kept if kept is not None else depth
            compaction = seq
        elif kind == "thinking_level_change":
            thinking = seq
        if sets_model(entry):
            model = seq
        seq_of[entry_id] = seq
        self._cells.extend((_NONE if parent_seq is None else parent_seq, depth, ctx_depth, compaction, model, thinking))
        self._count = seq + 1
        return _node_facts(seq, depth, ctx_depth, compaction, model, thinking), parent_seq

"""Immutable facts about an entry's ancestry, computed once when it is appended (see ``schema``)."""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

from sessionstore.models.timestamps import iso_to_ms


@dataclass(frozen=True, slots=True)
class NodeFacts:
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
    """An ``entries`` row (columns as :data:`ENTRY_COLUMNS`); ``payload`` is the entry's stored JSON text."""
    kind = entry.get("type")
    role = None
    if kind == "message":
        message = entry.get("message")
        role = message.get("role") if isinstance(message, dict) else None
    timestamp = entry.get("timestamp")
    return (
        session_id,
        facts.seq,
        entry["id"],
        entry.get("parentId"),
        parent_seq,
        facts.depth,
        str(kind),
        role if isinstance(role, str) else None,
        timestamp if isinstance(timestamp, str) else "",
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
        when = stamp if isinstance(stamp, int) and not isinstance(stamp, bool) else iso_to_ms(entry.get("timestamp"))
        if when is not None:
            self.modified_ms = max(self.modified_ms or 0, when)

    def columns(self) -> dict[str, Any]:
        return {
            "entry_count": self.entry_count,
            "message_count": self.message_count,
            "name": self.name,
            "first_message": self.first_message,
            "modified_ms": self.modified_ms,
        }


class TreeIndex:
    """The ancestry facts of a session being bulk-inserted, kept compact (a few machine words per
    entry) so that importing a very large file does not hold its entries in memory."""

    NONE = -1

    def __init__(self, seq_of: dict[str, int] | None = None) -> None:
        # ``seq_of`` may be shared with the JSONL reader, which records each id as it yields it.
        self.seq_of: dict[str, int] = {} if seq_of is None else seq_of
        # 32-bit cells: 24 bytes per entry (a 1 GB import has about a million entries); a session of
        # more than 2**31 - 1 entries cannot be imported.
        self._parent = array("i")
        self._depth = array("i")
        self._ctx_depth = array("i")
        self._compaction = array("i")
        self._model = array("i")
        self._thinking = array("i")

    def __len__(self) -> int:
        return len(self._parent)

    def __contains__(self, entry_id: object) -> bool:
        """Whether ``entry_id`` is already indexed (not merely announced by a sharing reader)."""
        seq = self.seq_of.get(entry_id) if isinstance(entry_id, str) else None
        return seq is not None and seq < len(self._parent)

    def facts(self, seq: int) -> NodeFacts:
        def opt(value: int) -> int | None:
            return None if value == self.NONE else value

        return NodeFacts(
            seq,
            self._depth[seq],
            self._ctx_depth[seq],
            opt(self._compaction[seq]),
            opt(self._model[seq]),
            opt(self._thinking[seq]),
        )

    def kept_depth(self, first_kept: Any, parent_seq: int | None) -> int | None:
        """Depth of ``first_kept`` when it is on the path ending at ``parent_seq``, else ``None``."""
        target = self.seq_of.get(first_kept) if isinstance(first_kept, str) else None
        if target is None or target >= len(self._parent) or parent_seq is None:
            # (a shared seq_of may already hold the entry being added: a compaction naming itself)
            return None
        depth = self._depth[target]
        node = parent_seq
        while node != self.NONE and self._depth[node] > depth:
            node = self._parent[node]
        return depth if node == target else None

    def add(self, entry: dict[str, Any]) -> tuple[NodeFacts, int | None]:
        """Index ``entry`` (its parent already indexed); returns its facts and its parent's seq.

        The same facts as :func:`facts_for`, computed on the arrays (no intermediate objects: this
        runs once per entry of an import)."""
        parent_id = entry["parentId"]
        none = self.NONE
        seq = len(self._parent)
        kind = entry["type"]
        if parent_id is None:
            parent_seq = None
            depth = ctx_depth = 0
            compaction = model = thinking = none
        else:
            parent_seq = self.seq_of[parent_id]
            depth = self._depth[parent_seq] + 1
            ctx_depth = self._ctx_depth[parent_seq]
            compaction = self._compaction[parent_seq]
            model = self._model[parent_seq]
            thinking = self._thinking[parent_seq]
        if kind == "compaction":
            kept = self.kept_depth(entry.get("firstKeptEntryId"), parent_seq)
            ctx_depth = kept if kept is not None else depth
            compaction = seq
        elif kind == "thinking_level_change":
            thinking = seq
        if sets_model(entry):
            model = seq
        self.seq_of[entry["id"]] = seq
        self._parent.append(none if parent_seq is None else parent_seq)
        self._depth.append(depth)
        self._ctx_depth.append(ctx_depth)
        self._compaction.append(compaction)
        self._model.append(model)
        self._thinking.append(thinking)
        return NodeFacts(
            seq,
            depth,
            ctx_depth,
            None if compaction == none else compaction,
            None if model == none else model,
            None if thinking == none else thinking,
        ), parent_seq

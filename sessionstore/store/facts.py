"""Immutable facts about an entry's ancestry, computed once when it is appended (see ``schema``)."""

from __future__ import annotations

import re
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Protocol

from sessionstore.models import js
from sessionstore.models.entry_catalog import Usage, day_of, tool_calls_of
from sessionstore.models.rules import (
    ACTIVITY_PAST_DATES,
    context_start_depth,
    is_compaction,
    later_listing_activity,
    listing_activity_ms,
    message_text,
    sets_model,
    sets_thinking_level,
)
from sessionstore.models.timestamps import iso_to_ms
from sessionstore.store.dbtext import to_db


class NodeFacts(NamedTuple):
    """An entry's ancestry facts (the ``sessionstore_entries`` columns of the same names)."""

    seq: int
    run_start: int
    depth: int
    ctx_depth: int
    compaction_seq: int | None
    model_seq: int | None
    thinking_seq: int | None


def facts_for(entry: Mapping[str, Any], seq: int, parent: NodeFacts | None, kept_depth: int | None) -> NodeFacts:
    """Facts of ``entry`` appended as ``seq`` under ``parent``.

    ``kept_depth``: for a compaction, the depth of its first kept entry when that entry is on the path
    before it (else ``None``: the context starts at the compaction itself).
    """
    depth = 0 if parent is None else parent.depth + 1
    if is_compaction(entry):
        ctx_depth = context_start_depth(depth, kept_depth)
        compaction_seq: int | None = seq
    else:
        ctx_depth = 0 if parent is None else parent.ctx_depth
        compaction_seq = None if parent is None else parent.compaction_seq
    return NodeFacts(
        seq=seq,
        run_start=parent.run_start if parent is not None and parent.seq == seq - 1 else seq,
        depth=depth,
        ctx_depth=ctx_depth,
        compaction_seq=compaction_seq,
        model_seq=seq if sets_model(entry) else (None if parent is None else parent.model_seq),
        thinking_seq=seq if sets_thinking_level(entry) else (None if parent is None else parent.thinking_seq),
    )


@dataclass(slots=True)
class SessionStats:
    """The listing columns of a session, folded over its entries in append order as pi 1.6's
    ``buildSessionInfo`` folds a file: ``message_count`` counts every ``message`` entry, ``name`` is the
    latest ``session_info`` name (trimmed; empty clears it), ``first_message`` the first non-empty user
    text, ``modified_ms`` the latest activity (see :func:`~sessionstore.models.rules.listing_activity_ms`;
    listings fall back to the header's time when there is none). ``active_ms``: the session's activity
    time (see :func:`later_activity`), read with :meth:`activity_ms`."""

    entry_count: int = 0
    message_count: int = 0
    name: str | None = None
    first_message: str | None = None
    modified_ms: int | None = None
    user_messages: int = 0
    assistant_messages: int = 0
    tool_results: int = 0
    tool_calls: int = 0
    active_ms: int = 0
    _latest_stamp: str | None = None
    """The latest entry timestamp in pi's ``toISOString`` form not yet folded into ``active_ms`` (such
    strings order as their times do: an import compares text and parses one, not one per entry)."""

    COLUMNS: ClassVar[tuple[str, ...]] = ("entry_count", "message_count", "name", "first_message", "modified_ms",
                                          "user_messages", "assistant_messages", "tool_results", "tool_calls",
                                          "active_ms")
    """The session row's columns these are (the same names in ``HeadRow``, ``HeadUpdate`` and
    ``SessionRow``): copied by name, never by position."""

    def columns(self) -> dict[str, Any]:
        """The :attr:`COLUMNS` (``active_ms`` with every entry folded)."""
        self.activity_ms()
        return {column: getattr(self, column) for column in self.COLUMNS}

    def touch(self, moment_ms: int | None) -> None:
        """Fold a time into ``active_ms`` (the rule: :func:`later_activity`)."""
        self.active_ms = later_activity(self.active_ms, moment_ms)

    def activity_ms(self) -> int:
        """``active_ms`` with every entry folded so far."""
        if self._latest_stamp is not None:
            self.touch(iso_to_ms(self._latest_stamp))
            self._latest_stamp = None
        return self.active_ms

    def add(self, entry: Mapping[str, Any]) -> None:
        self.entry_count += 1
        stamp = entry.get("timestamp", js.MISSING)
        if isinstance(stamp, str) and _ISO_MS.fullmatch(stamp):
            if self._latest_stamp is None or stamp > self._latest_stamp:
                self._latest_stamp = stamp
        else:
            self.touch(js.date_ms(stamp))
        kind = entry.get("type")
        if kind == "session_info":
            name = entry.get("name")
            self.name = name.strip() or None if isinstance(name, str) else None
            return
        if kind != "message":
            return
        self.message_count += 1
        self._count_role(entry.get("message"))
        modified = later_listing_activity(self.modified_ms, listing_activity_ms(entry))
        if modified != self.modified_ms:
            self.modified_ms = modified
            if modified is not None and modified < ACTIVITY_PAST_DATES:
                self.touch(modified)
        message = entry.get("message")
        if self.first_message is None and isinstance(message, dict) and message.get("role") == "user" \
                and "content" in message:
            text = message_text(message)
            if text:
                self.first_message = text

    def _count_role(self, message: Any) -> None:
        """pi's ``getSessionStats`` counts by role (and tool-call blocks of assistant messages)."""
        role = message.get("role") if isinstance(message, dict) else None
        if role == "user":
            self.user_messages += 1
        elif role == "assistant":
            self.assistant_messages += 1
            self.tool_calls += tool_calls_of(message)
        elif role == "toolResult":
            self.tool_results += 1


_ISO_MS = re.compile(r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z")
"""pi's entry timestamps (``new Date().toISOString()``), whose text orders as their times do (a day past
the month's end, which ``Date.parse`` rolls over, aside: no pi writes one)."""


def later_activity(active_ms: int, moment_ms: int | None) -> int:
    """The one rule of a session's activity time (``sessionstore_sessions.active_ms``, what ``ls``
    orders by): the latest of the times that its writes brought, in epoch ms, never going back.

    The times: the header's (its creation), every entry's own ``timestamp`` and pi's message activity
    (``modified_ms``), folded by :class:`SessionStats` for imports, syncs and appends alike; and for a
    write through the API (a new session, a fork, an append, a leaf move), the time of the write. An
    import or a sync brings only the file's own times, so old files list by when they were active, not
    by when they were imported. A time that is not a date (``None``) changes nothing."""
    if moment_ms is not None and moment_ms > active_ms:
        return moment_ms
    return active_ms


class UsageRow(NamedTuple):
    """A ``sessionstore_usage`` row: a session's usage sums under one key on one day."""

    session_key: int
    model_key: str
    day: str
    entries: int
    input: float
    output: float
    cache_read: float
    cache_write: float
    cost: float


class UsageBuckets:
    """Usage of entries summed per breakdown key and day, as written to ``sessionstore_usage``."""

    def __init__(self) -> None:
        self._sums: dict[tuple[str, str], list[float]] = {}

    def add(self, entry: Mapping[str, Any], usage: Usage | None) -> None:
        if usage is None:
            return
        sums = self._sums.setdefault((usage.key, day_of(entry)), [0, 0.0, 0.0, 0.0, 0.0, 0.0])
        sums[0] += 1
        for i, value in enumerate(usage[1:], start=1):
            sums[i] += value

    def rows(self, session_key: int) -> list[UsageRow]:
        return [UsageRow(session_key, to_db(key), day, int(s[0]), *s[1:]) for (key, day), s in self._sums.items()]


_NONE = -1
"""A TreeIndex cell that names no entry."""
_WIDTH = 7
"""TreeIndex cells per entry: parent seq, run start, depth, context depth, compaction, model and thinking seqs."""
_DEPTH = 2
"""The depth's cell among an entry's TreeIndex cells."""


def _node_facts(
    seq: int, run_start: int, depth: int, ctx_depth: int, compaction: int, model: int, thinking: int
) -> NodeFacts:
    """An entry's facts from its TreeIndex cells."""
    return NodeFacts(
        seq,
        run_start,
        depth,
        ctx_depth,
        None if compaction == _NONE else compaction,
        None if model == _NONE else model,
        None if thinking == _NONE else thinking,
    )


class StoredEntries(Protocol):
    """The entries a session already has, for a :class:`TreeIndex` that continues it (an incremental
    sync): their facts by id, and whether one is on the path ending at a stored entry."""

    def facts(self, entry_id: str) -> NodeFacts | None: ...

    def on_path(self, leaf_seq: int, target: NodeFacts) -> bool: ...


class TreeIndex:
    """The ancestry facts of a session being bulk-inserted, kept compact (a few machine words per
    entry) so that importing a very large file does not hold its entries in memory.

    ``base`` and ``stored``: the index continues a session that has ``base`` entries already (the first
    indexed entry gets seq ``base``); a parent or first kept entry not indexed is looked up in ``stored``
    (one indexed lookup per id, so the cost follows the new entries, not the session's size)."""

    def __init__(self, seq_of: dict[str, int] | None = None, *, base: int = 0,
                 stored: StoredEntries | None = None) -> None:
        # ``seq_of`` may be shared with the JSONL reader, which records each id as it yields it
        # (ids -> position among the indexed entries: seq - base).
        self.seq_of: dict[str, int] = {} if seq_of is None else seq_of
        # One array of 32-bit cells, ``_WIDTH`` per entry: 28 bytes per entry (a 1 GB import has about
        # a million entries); a session of more than 2**31 - 1 entries cannot be imported.
        self._cells = array("i")
        self._count = 0
        self._base = base
        self._stored = stored
        self._awaited: set[str] = set()  # parent ids named before any entry had them (roots so far)

    def __len__(self) -> int:
        return self._count

    def __contains__(self, entry_id: object) -> bool:
        """Whether ``entry_id`` is already indexed (not merely announced by a sharing reader)."""
        seq = self.seq_of.get(entry_id) if isinstance(entry_id, str) else None
        return seq is not None and seq < self._count

    def facts(self, position: int) -> NodeFacts:
        """The facts of the indexed entry at ``position`` (its seq less ``base``)."""
        _parent, *cells = self._cells[position * _WIDTH : (position + 1) * _WIDTH]
        return _node_facts(self._base + position, *cells)

    def kept_depth(self, first_kept: Any, parent_seq: int | None) -> int | None:
        """Depth of ``first_kept`` when it is on the path ending at ``parent_seq``, else ``None``."""
        if parent_seq is None:
            return None
        base = self._base
        position = self.seq_of.get(first_kept) if isinstance(first_kept, str) else None
        if position is not None and position < self._count:
            target_seq = base + position
            depth = self._cells[position * _WIDTH + _DEPTH]
            stored_target = None
        else:
            # (a shared seq_of may already hold the entry being added: a compaction naming itself)
            stored_target = None
            if self._stored is not None and isinstance(first_kept, str) and first_kept not in self.seq_of:
                stored_target = self._stored.facts(first_kept)
            if stored_target is None:
                return None
            target_seq, depth = stored_target.seq, stored_target.depth
        cells = self._cells
        node = parent_seq
        while node >= base and cells[(node - base) * _WIDTH + _DEPTH] > depth:
            node = cells[(node - base) * _WIDTH]
        if node < base and node != _NONE and stored_target is not None and self._stored is not None:
            return depth if self._stored.on_path(node, stored_target) else None
        return depth if node == target_seq else None

    def add(self, entry: dict[str, Any]) -> tuple[NodeFacts, int | None]:
        """Index ``entry``; returns its facts and its parent's seq. A ``parentId`` that names no
        indexed (or stored) entry makes the entry a root, as pi reads it. Raises ``ValueError`` when
        the id is already indexed, when the entry is its own parent, or when an earlier entry named it
        as its parent (parents precede their children: the tree is stored in that order).

        The same facts as :func:`facts_for`, computed on the cells (this runs once per entry of an
        import)."""
        entry_id = entry["id"]
        parent_id = entry.get("parentId")
        seq_of = self.seq_of
        position = self._count
        base = self._base
        seq = base + position
        taken = seq_of.get(entry_id) if isinstance(entry_id, str) else None
        if taken is not None and taken < position:
            raise ValueError(f"duplicate id {entry_id!r}")
        if parent_id == entry_id:
            raise ValueError("it is its own parent")
        if self._awaited and entry_id in self._awaited:
            raise ValueError("an earlier entry names it as its parent: parents must precede their children")
        parent_position = seq_of.get(parent_id) if isinstance(parent_id, str) and parent_id else None
        if parent_position is not None and parent_position >= position:
            parent_position = None  # (a shared seq_of may already hold the entry being added)
        stored_parent = None
        if parent_position is None and self._stored is not None and isinstance(parent_id, str) and parent_id \
                and parent_id not in seq_of:
            stored_parent = self._stored.facts(parent_id)
        if parent_position is not None:
            parent_seq: int | None = base + parent_position
            _grand, run_start, depth, ctx_depth, compaction, model, thinking = self._cells[
                parent_position * _WIDTH : (parent_position + 1) * _WIDTH
            ]
        elif stored_parent is not None:
            parent_seq = stored_parent.seq
            run_start, depth, ctx_depth = stored_parent.run_start, stored_parent.depth, stored_parent.ctx_depth
            compaction, model, thinking = (_NONE if value is None else value for value in (
                stored_parent.compaction_seq, stored_parent.model_seq, stored_parent.thinking_seq))
        else:
            parent_seq = None
        if parent_seq is None:
            if isinstance(parent_id, str) and parent_id:
                self._awaited.add(parent_id)
            depth = ctx_depth = 0
            run_start = seq
            compaction = model = thinking = _NONE
        else:
            depth += 1
            if parent_seq != seq - 1:
                run_start = seq
        if is_compaction(entry):
            kept = self.kept_depth(entry.get("firstKeptEntryId"), parent_seq)
            ctx_depth = context_start_depth(depth, kept)
            compaction = seq
        elif sets_thinking_level(entry):
            thinking = seq
        if sets_model(entry):
            model = seq
        seq_of[entry_id] = position
        self._cells.extend(
            (_NONE if parent_seq is None else parent_seq, run_start, depth, ctx_depth, compaction, model, thinking)
        )
        self._count = position + 1
        return _node_facts(seq, run_start, depth, ctx_depth, compaction, model, thinking), parent_seq

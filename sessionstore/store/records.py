"""What the entry store gives back: the results of imports, listings and tree reads, pi's label
map, and the ``UNSET`` marker of an omitted leaf (``None`` is a leaf: before the first entry)."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Final, Literal

from sessionstore.models import js
from sessionstore.models.js import MISSING
from sessionstore.models.wire import JsonObject as Json
from sessionstore.wire.jsjson import JsonPieces, gc_paused, js_dumpb_nested, newline_at

if TYPE_CHECKING:
    from sessionstore.validate import Diagnostic
    from sessionstore.wire.jsonl import SkippedLine



class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()

ListOrder = Literal["activity", "modified"]
LIST_ORDERS: tuple[ListOrder, ...] = ("activity", "modified")
"""The orders of a session list: by the last activity of any kind (``ls``'s default), or pi's ``modified``."""


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One event of a session's feed (``SessionStore.events``, SPEC 17): ``entry`` (the stored entry and
    its ``seq``, its position in the session from 0), ``leaf`` (the leaf moved to ``leaf_id`` without an
    entry) or ``deleted`` (the session is gone; the last event)."""

    kind: Literal["entry", "leaf", "deleted"]
    seq: int | None = None
    entry: Json | None = None
    leaf_id: str | None = None


@dataclass(frozen=True, slots=True)
class ImportResult:
    """An imported file: its session, the entries stored, the lines skipped (lenient mode) and what
    was read tolerantly, as pi reads it (entry-code diagnostics, in file order)."""

    session_id: str
    entries: int
    skipped: tuple[SkippedLine, ...] = ()
    leaf_id: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()

    def to_json(self) -> Json:
        return {
            "sessionId": self.session_id,
            "entries": self.entries,
            "skipped": [s.to_json() for s in self.skipped],
            "leafId": self.leaf_id,
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    cwd: str
    created: str
    name: str | None
    parent_session: str | None
    leaf_id: str | None
    entry_count: int
    message_count: int
    first_message: str | None
    modified_ms: int | None
    source_path: str | None = None
    """The pi file the session is synced from (``sessionstore sync``), ``None`` when it is not synced."""
    active_ms: int | None = None
    """When the session was last active in any way (created, appended to, forked, its leaf moved; an
    imported file: its own latest time), epoch ms: what ``ls`` lists by. ``modified_ms`` is pi's."""

    def to_json(self) -> Json:
        return {
            "id": self.id,
            "cwd": self.cwd,
            "name": self.name,
            "created": self.created,
            "modified": None if self.modified_ms is None else js.iso_string(self.modified_ms),
            "active": None if self.active_ms is None else js.iso_string(self.active_ms),
            "parentSession": self.parent_session,
            "leafId": self.leaf_id,
            "entries": self.entry_count,
            "messageCount": self.message_count,
            "firstMessage": self.first_message,
            "sourcePath": self.source_path,
        }

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> SessionInfo:
        """The info an ``ls --json`` item (:meth:`to_json`) stands for: its inverse (times to epoch ms)."""
        from sessionstore.models.timestamps import iso_to_ms

        def ms(value: Any) -> int | None:
            return iso_to_ms(value) if isinstance(value, str) else None

        return cls(id=item["id"], cwd=item["cwd"], created=item["created"], name=item.get("name"),
                   parent_session=item.get("parentSession"), leaf_id=item.get("leafId"),
                   entry_count=item.get("entries", 0), message_count=item.get("messageCount", 0),
                   first_message=item.get("firstMessage"), modified_ms=ms(item.get("modified")),
                   source_path=item.get("sourcePath"), active_ms=ms(item.get("active")))


@dataclass(slots=True)
class TreeNode:
    entry: Json
    children: list[TreeNode] = field(default_factory=list)
    label: str | None = None
    on_active_path: bool = False

    def to_json(self) -> Json:
        """``{"entry", "onActivePath", "label"?, "children": [...]}``, built with an explicit stack (a
        session's tree is as deep as its longest branch: thousands of entries)."""

        def shell(node: TreeNode) -> Json:
            out: Json = {"entry": node.entry, "onActivePath": node.on_active_path}
            if node.label is not None:
                out["label"] = node.label
            out["children"] = []
            return out

        root = shell(self)
        stack: list[tuple[TreeNode, Json]] = [(self, root)]
        while stack:
            node, out = stack.pop()
            for child in node.children:
                child_out = shell(child)
                out["children"].append(child_out)
                stack.append((child, child_out))
        return root


def flat_tree_json(roots: Sequence[TreeNode]) -> list[Json]:
    """The tree as ``tree --json`` prints it: one object per entry, depth first (children in append
    order), ``{"entry", "onActivePath", "label"?, "depth", "children"}`` (``depth``: 0 for a root;
    ``children``: how many). Flat, unlike :meth:`TreeNode.to_json`: a session's tree is as deep as its
    longest branch, and JSON nested thousands of levels deep is more than most readers take (and,
    indented, grows with the square of the depth)."""
    out: list[Json] = []
    stack: list[tuple[TreeNode, int]] = [(root, 0) for root in reversed(roots)]
    while stack:
        node, depth = stack.pop()
        item: Json = {"entry": node.entry, "onActivePath": node.on_active_path}
        if node.label is not None:
            item["label"] = node.label
        item["depth"] = depth
        item["children"] = len(node.children)
        out.append(item)
        stack.extend((child, depth + 1) for child in reversed(node.children))
    return out


def write_tree_json(
    fp: IO[bytes],
    seqs: array[int],
    parents: array[int],
    leaf_seq: int | None,
    labels: LabelState,
    payloads: Callable[[Iterator[int]], Iterator[Json]],
) -> None:
    """``js_dumpb(flat_tree_json(roots), indent=2) + b"\\n"`` of the tree whose entries have the ascending
    ``seqs`` and, at the same positions, the parents' seqs ``parents`` (-1: a root), written one node at
    a time. ``payloads(order)`` gives the entries of the seqs ``order`` yields, in that order (depth
    first). Held at once: the links (a few integers per entry) and one page of payloads, whatever the
    tree's size or depth."""
    count = len(seqs)
    first_child = array("q", [-1]) * count
    last_child = array("q", [-1]) * count
    next_sibling = array("q", [-1]) * count
    child_count = array("q", [0]) * count
    first_root = last_root = -1
    for position in range(count):
        parent_seq = parents[position]
        if parent_seq < 0:
            if first_root < 0:
                first_root = position
            else:
                next_sibling[last_root] = position
            last_root = position
            continue
        parent = bisect_left(seqs, parent_seq)
        child_count[parent] += 1
        if first_child[parent] < 0:
            first_child[parent] = position
        else:
            next_sibling[last_child[parent]] = position
        last_child[parent] = position
    del last_child
    active = bytearray(count)
    seq_on_path = leaf_seq
    while seq_on_path is not None and seq_on_path >= 0:
        position = bisect_left(seqs, seq_on_path)
        active[position] = 1
        seq_on_path = parents[position]
    walked: deque[tuple[int, int]] = deque()  # (position, depth) of the seqs handed out, not yet written

    def order() -> Iterator[int]:
        stack = [(first_root, 0)] if first_root >= 0 else []
        while stack:
            position, depth = stack.pop()
            walked.append((position, depth))
            yield seqs[position]
            if next_sibling[position] >= 0:
                stack.append((next_sibling[position], depth))
            if first_child[position] >= 0:
                stack.append((first_child[position], depth + 1))

    out = JsonPieces(fp)
    put = out.put
    with gc_paused():
        put(b"[")
        inner = newline_at(2)
        for written, entry in enumerate(payloads(order())):
            position, depth = walked.popleft()
            put((b"," if written else b"") + newline_at(1) + b"{" + inner + b'"entry": '
                + js_dumpb_nested(entry, 2) + b"," + inner
                + (b'"onActivePath": true' if active[position] else b'"onActivePath": false'))
            label = labels.current.get(entry["id"]) if isinstance(entry, dict) else None
            if label is not None and label[0] is not None:
                put(b"," + inner + b'"label": ' + js_dumpb_nested(label[0], 2))
            put(b"," + inner + b'"depth": ' + str(depth).encode() + b"," + inner + b'"children": '
                + str(child_count[position]).encode() + newline_at(1) + b"}")
        put(b"\n]\n" if first_root >= 0 else b"]\n")
    out.flush()


@dataclass(slots=True)
class LabelState:
    """Labels as pi 1.6 resolves them (``labelsById``/``labelTimestampsById``): label entries in file
    order; a truthy ``label`` sets the target's label (a target set again keeps its place in the
    map), any other clears it (a later set puts the target at the end)."""

    current: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """target id -> (label, timestamp of the entry that set it; MISSING when it has none)."""

    def add(self, entry: Json) -> None:
        if entry.get("type") != "label" or not isinstance(entry.get("targetId"), str):
            return
        label = entry.get("label", MISSING)
        if js.truthy(label):
            self.current[entry["targetId"]] = (label, entry.get("timestamp", MISSING))
        else:
            self.current.pop(entry["targetId"], None)


@dataclass(slots=True)
class ContextSlice:
    """What resuming at a leaf needs: the path tail and the entries that set thinking level/model."""

    leaf_id: str | None
    path: list[Json]
    thinking_entry: Json | None
    model_entry: Json | None


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What an append of a batch did: each entry's ``(id, parentId)`` in order, the session's leaf after
    it, and ``written`` (``False``: the batch was already stored, a retry, and nothing was written)."""

    entries: list[tuple[str, str | None]]
    leaf_id: str | None
    written: bool

    @property
    def ids(self) -> list[str]:
        return [entry_id for entry_id, _ in self.entries]

"""What the entry store gives back: the results of imports, listings and tree reads, pi's label
map, and the ``UNSET`` marker of an omitted leaf (``None`` is a leaf: before the first entry)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from sessionstore.models import js
from sessionstore.models.js import MISSING

if TYPE_CHECKING:
    from sessionstore.validate import Diagnostic
    from sessionstore.wire.jsonl import SkippedLine

Json = dict[str, Any]


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()

ListOrder = Literal["activity", "modified"]
LIST_ORDERS: tuple[ListOrder, ...] = ("activity", "modified")
"""The orders of a session list: by the last activity of any kind (``ls``'s default), or pi's ``modified``."""


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

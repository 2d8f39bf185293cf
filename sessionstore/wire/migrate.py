"""Version upgrades of pi session entries (SPEC 9), one entry at a time, in file order.

v1 -> v2: entries get ``id``/``parentId`` chained in file order and ``firstKeptEntryIndex`` becomes
``firstKeptEntryId``. Unlike pi (random ids), the id of the entry at position ``n`` of the file's
parsed objects (header = 0) is ``f"{n:08x}"``, so importing a file twice gives the same ids.
v2 -> v3: message role ``hookMessage`` is renamed ``custom``.
Keys are added the way pi's in-place mutation adds them (appended at the end), so an upgraded entry
serialises exactly as pi's upgraded file does.
"""

from __future__ import annotations

from typing import Any

CURRENT_VERSION = 3
"""The session file version pi 1.6 writes, the one every entry is upgraded to."""


def v1_entry_id(index: int) -> str:
    """Deterministic id of the v1 entry at ``index`` among the file's parsed objects (header = 0)."""
    return f"{index:08x}"


class Upgrader:
    """Upgrades the entries of one file from ``version`` to 3, statefully (v1 ids chain in order)."""

    def __init__(self, version: int) -> None:
        self.version = version
        self._prev_id: str | None = None
        self._last_kept: str | None = None

    def accepted(self, entry_id: str) -> None:
        """The entry just upgraded was kept: the next v1 entry chains to it."""
        self._last_kept = entry_id

    def skipped(self) -> None:
        """The entry just upgraded was refused (lenient reading): chain the next v1 entry to the
        last kept one instead, so one bad line does not cut the linear session in two."""
        self._prev_id = self._last_kept

    def upgrade_header(self, header: dict[str, Any]) -> None:
        if self.version < 3:
            header["version"] = 3

    def upgrade(self, entry: dict[str, Any], index: int) -> str:
        """Upgrade ``entry`` in place; ``index`` is its position among the file's parsed objects.

        Returns what changed: ``"none"``; ``"ids"`` when only ``id`` and ``parentId`` were added at
        the end (the line's text plus those two keys is what pi writes); ``"other"``."""
        change = "none"
        if self.version < 2:
            change = "ids" if "id" not in entry and "parentId" not in entry else "other"
            entry_id = v1_entry_id(index)
            entry["id"] = entry_id
            entry["parentId"] = self._prev_id
            self._prev_id = entry_id
            target = entry.get("firstKeptEntryIndex")
            if entry.get("type") == "compaction" and isinstance(target, (int, float)) and not isinstance(target, bool):
                # pi: entries[index] must exist, not be the header, and already carry an id; pi deletes
                # the index only when it is a number.
                if target == int(target) and 0 < target <= index:
                    entry["firstKeptEntryId"] = v1_entry_id(int(target))
                del entry["firstKeptEntryIndex"]
                change = "other"
        if self.version < 3 and entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
                change = "other"
        return change

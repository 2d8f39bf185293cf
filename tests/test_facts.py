"""The ancestry facts an import computes in bulk (``TreeIndex``) are those an append computes one by
one (``facts_for``), on random trees with compactions, model and thinking changes and branches."""

from __future__ import annotations

import random
from typing import Any

import pytest

from sessionstore.store.facts import NodeFacts, TreeIndex, facts_for

KINDS = ["user", "assistant", "toolResult", "model_change", "thinking_level_change", "compaction", "label", "custom"]


def _entry(rnd: random.Random, index: int, ids: list[str]) -> dict[str, Any]:
    kind = rnd.choice(KINDS)
    parent = None if not ids or rnd.random() < 0.02 else ids[-1] if rnd.random() < 0.8 else rnd.choice(ids)
    entry: dict[str, Any] = {"id": f"e{index}", "parentId": parent}
    if kind in ("user", "assistant", "toolResult"):
        entry.update(type="message", message={"role": kind, "content": "x"})
    elif kind == "compaction":
        entry.update(type="compaction", firstKeptEntryId=rnd.choice([*ids, "missing"]) if ids else "missing")
    else:
        entry["type"] = kind
    return entry


def _kept_depth(entry: dict[str, Any], parent: NodeFacts | None, facts: dict[str, NodeFacts],
                parents: dict[str, str | None]) -> int | None:
    """The first kept entry's depth when it is an ancestor of (or is) the parent: a plain walk up."""
    node = entry["parentId"]
    while node is not None:
        if node == entry.get("firstKeptEntryId"):
            return facts[node].depth
        node = parents[node]
    return None


@pytest.mark.parametrize("seed", range(20))
def test_tree_index_gives_the_facts_appends_give(seed: int) -> None:
    rnd = random.Random(seed)
    index = TreeIndex()
    facts: dict[str, NodeFacts] = {}
    parents: dict[str, str | None] = {}
    ids: list[str] = []
    for i in range(400):
        entry = _entry(rnd, i, ids)
        parent = None if entry["parentId"] is None else facts[entry["parentId"]]
        kept = _kept_depth(entry, parent, facts, parents) if entry["type"] == "compaction" else None
        expected = facts_for(entry, i, parent, kept)
        got, parent_seq = index.add(entry)
        assert got == expected and index.facts(i) == expected
        assert parent_seq == (None if parent is None else parent.seq)
        facts[entry["id"]] = expected
        parents[entry["id"]] = entry["parentId"]
        ids.append(entry["id"])


def test_a_compaction_that_keeps_from_itself_starts_its_context_at_itself() -> None:
    """The reader announces an entry's id before the index adds it (a shared dict): a compaction whose
    firstKeptEntryId is its own id must not be looked up as an earlier entry."""
    shared: dict[str, int] = {}
    index = TreeIndex(shared)
    shared["u"] = 0
    index.add({"type": "message", "id": "u", "parentId": None, "message": {"role": "user", "content": "x"}})
    shared["c"] = 1
    facts, _ = index.add({"type": "compaction", "id": "c", "parentId": "u", "firstKeptEntryId": "c"})
    assert facts == NodeFacts(1, 0, 1, 1, 1, None, None)

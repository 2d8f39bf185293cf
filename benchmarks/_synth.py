"""Synthetic pi v3 sessions for benchmarks: linear, branchy and compacted shapes.

Every generator is deterministic (seeded) and yields entries in append order (each parent before
its children), in pi's wire shape (see ``fixtures/pi/large-session.v3.jsonl``):

- turns of ``user -> (assistant toolCall -> toolResult) x k -> assistant text`` (2..8 entries);
- a ``model_change`` and a ``thinking_level_change`` near the start (so a compacted resume has to
  fetch the thinking level from before the kept point);
- ``custom`` entries (extension state, outside the context) only to hit an exact entry count.

``make_session(shape, n)`` returns ``(header, entries, leaf_id)``; ``leaf_id`` is the end of
the main path, which for ``branchy`` is usually *not* the last appended entry.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

Json = dict[str, Any]

SHAPES = ("linear", "branchy", "compacted")
COMPACT_EVERY = 500
"""Compactions are appended at the first turn end after entry ``250 + k * COMPACT_EVERY``, so for
sizes that are multiples of 500 the leaf sits ~250 entries after the last compaction at every size
(the context a resume needs is then the same size for 1k, 10k and 100k)."""
COMPACT_OFFSET = 250
BRANCH_EVERY = 10
BRANCH_MIN, BRANCH_MAX = 5, 20

_START = datetime(2025, 1, 1, tzinfo=UTC)
_PROSE = """
the session store reads only the path from the leaf to the kept point of the last compaction and
then builds the context exactly the way pi does it with settings and summaries while the rest of
the tree stays on disk untouched because resuming must not cost in proportion to the whole file
refactor parser module function test fixture branch commit diff review build lint type error
"""
_WORDS = _PROSE.split()
_TOOLS = ("read", "bash", "edit", "write", "grep")


_POOL = " ".join(random.Random(0).choice(_WORDS) for _ in range(20_000))


def _text(rng: random.Random, size: int) -> str:
    """``size`` characters of word salad (a random window of a fixed pool)."""
    start = rng.randrange(0, len(_POOL) - size)
    return _POOL[start : start + size]


@dataclass
class _Clock:
    ms: int = 0

    def tick(self, rng: random.Random) -> tuple[str, int]:
        self.ms += rng.randint(50, 4000)
        when = _START + timedelta(milliseconds=self.ms)
        iso = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
        return iso, int(when.timestamp() * 1000)


class _Builder:
    """Appends entries; ``parent`` is where the next entry hangs."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock = _Clock()
        self.out: list[Json] = []
        self.ids: set[str] = set()
        self.call_seq = 0

    def new_id(self) -> str:
        while True:
            candidate = f"{self.rng.getrandbits(32):08x}"
            if candidate not in self.ids:
                self.ids.add(candidate)
                return candidate

    def add(self, parent: str | None, kind: str, **fields: Any) -> Json:
        iso, _ms = self.clock.tick(self.rng)
        entry: Json = {"type": kind, "id": self.new_id(), "parentId": parent, "timestamp": iso}
        entry.update(fields)
        self.out.append(entry)
        return entry

    def message(self, parent: str | None, message: Json) -> Json:
        entry = self.add(parent, "message", message=message)
        message.setdefault("timestamp", self.clock.ms + int(_START.timestamp() * 1000))
        return entry

    # -- messages ----------------------------------------------------------------------------
    def user(self, parent: str | None) -> Json:
        return self.message(parent, {"role": "user", "content": [{"type": "text", "text": _text(self.rng, 200)}]})

    def _usage(self) -> Json:
        rng = self.rng
        inp, out, read = rng.randint(3, 4000), rng.randint(20, 1500), rng.randint(0, 90000)
        cost = {
            "input": inp * 3e-6,
            "output": out * 15e-6,
            "cacheRead": read * 3e-7,
            "cacheWrite": 0,
        }
        cost["total"] = sum(cost.values())
        return {"input": inp, "output": out, "cacheRead": read, "cacheWrite": 0, "cost": cost}

    def _assistant(self, content: list[Json], stop: str) -> Json:
        return {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": self._usage(),
            "stopReason": stop,
        }

    def assistant_call(self, parent: str | None) -> tuple[Json, Json]:
        self.call_seq += 1
        tool = self.rng.choice(_TOOLS)
        call = {
            "type": "toolCall",
            "id": f"toolu_{self.call_seq:024d}",
            "name": tool,
            "arguments": {"path": f"src/module_{self.rng.randint(0, 999)}.py", "command": _text(self.rng, 40)},
        }
        content: list[Json] = [{"type": "text", "text": _text(self.rng, 120)}, call]
        return self.message(parent, self._assistant(content, "toolUse")), call

    def tool_result(self, parent: str | None, call: Json) -> Json:
        return self.message(
            parent,
            {
                "role": "toolResult",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "content": [{"type": "text", "text": _text(self.rng, 500)}],
                "isError": False,
            },
        )

    def assistant_text(self, parent: str | None) -> Json:
        return self.message(parent, self._assistant([{"type": "text", "text": _text(self.rng, 300)}], "stop"))

    def turn(self, parent: str | None, size: int) -> tuple[str, list[Json]]:
        """A turn of exactly ``size`` entries (even, >= 2); returns the last id and the entries."""
        assert size >= 2 and size % 2 == 0, size
        made = [self.user(parent)]
        for _ in range((size - 2) // 2):
            entry, call = self.assistant_call(made[-1]["id"])
            made.append(entry)
            made.append(self.tool_result(entry["id"], call))
        made.append(self.assistant_text(made[-1]["id"]))
        return made[-1]["id"], made

    def fill(self, parent: str | None, count: int) -> str | None:
        """Exactly ``count`` entries in context-friendly order (turns, a ``custom`` entry if odd)."""
        if count % 2:
            parent = self.add(parent, "custom", customType="bench-state", data={"n": len(self.out)})["id"]
            count -= 1
        while count > 0:
            size = count if count <= 8 else self.rng.choice((4, 6, 6, 8))
            if count - size == 1:
                size -= 2
            parent, _made = self.turn(parent, size)
            count -= size
        return parent

    def preamble(self) -> str:
        first, _ = self.turn(None, 2)
        mc = self.add(first, "model_change", provider="anthropic", modelId="claude-sonnet-4-5")
        tl = self.add(mc["id"], "thinking_level_change", thinkingLevel="high")
        return str(tl["id"])


def _header(shape: str, n: int) -> Json:
    return {
        "type": "session",
        "version": 3,
        "id": f"bench-{shape}-{n}",
        "timestamp": "2025-01-01T00:00:00.000Z",
        "cwd": "/work/bench",
    }


def _linear(b: _Builder, n: int) -> str | None:
    leaf = b.preamble()
    return b.fill(leaf, n - len(b.out))


def _branchy(b: _Builder, n: int) -> str | None:
    """Main path of turns; after every ~10 main entries a side branch of 5-20 entries (starting
    with a user message, like a re-prompt) hangs off the current main entry. The last entries
    appended are a side branch off an earlier turn end, so the leaf (the main path's end) is not
    the last entry of the file."""
    leaf: str | None = b.preamble()
    turn_ends: list[str | None] = [leaf]
    since_branch = 0
    final_side = 12
    while True:
        remaining = n - len(b.out) - final_side
        if remaining <= 8:
            leaf = b.fill(leaf, remaining)
            b.fill(turn_ends[-2] if len(turn_ends) > 1 else turn_ends[-1], final_side)
            return leaf
        size = b.rng.choice((4, 6, 6, 8))
        leaf, _made = b.turn(leaf, size)
        turn_ends.append(leaf)
        since_branch += size
        if since_branch >= BRANCH_EVERY:
            since_branch = 0
            side = min(b.rng.randint(BRANCH_MIN, BRANCH_MAX), n - len(b.out) - final_side - 4)
            if side > 0:
                b.fill(leaf, side)  # abandoned branch: never on the main path


def _compacted(b: _Builder, n: int) -> str | None:
    """Linear, with a ``compaction`` at the first turn end after ``250 + k*500`` entries whose
    ``firstKeptEntryId`` is a user message 50-100 entries before it on the path."""
    leaf: str | None = b.preamble()
    path: list[Json] = list(b.out)  # linear: every entry is on the path
    next_at = COMPACT_OFFSET
    while True:
        remaining = n - len(b.out)
        if remaining <= 8:
            leaf = b.fill(leaf, remaining)
            return leaf
        if len(b.out) >= next_at and remaining > 9:
            next_at += COMPACT_EVERY
            end = len(path)
            candidates = [
                e["id"]
                for e in path[max(0, end - 100) : end - 50 + 1]
                if e["type"] == "message" and e["message"]["role"] == "user"
            ]
            kept = b.rng.choice(candidates)
            entry = b.add(
                leaf,
                "compaction",
                summary=_text(b.rng, 1500),
                firstKeptEntryId=kept,
                tokensBefore=b.rng.randint(100_000, 180_000),
            )
            path.append(entry)
            leaf = entry["id"]
            continue
        size = b.rng.choice((4, 6, 6, 8))
        leaf, made = b.turn(leaf, size)
        path.extend(made)


def make_session(shape: str, n: int, *, seed: int = 1) -> tuple[Json, list[Json], str | None]:
    """``(header, entries, leaf_id)`` of a synthetic session of exactly ``n`` entries."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; one of {SHAPES}")
    if n < 16:
        raise ValueError("n must be at least 16")
    b = _Builder(seed * 1_000_003 + n + SHAPES.index(shape))
    leaf = {"linear": _linear, "branchy": _branchy, "compacted": _compacted}[shape](b, n)
    assert len(b.out) == n, (shape, n, len(b.out))
    return _header(shape, n), b.out, leaf


def path_length(entries: list[Json], leaf: str | None) -> int:
    parent = {e["id"]: e["parentId"] for e in entries}
    count = 0
    node = leaf
    while node is not None:
        count += 1
        node = parent[node]
    return count

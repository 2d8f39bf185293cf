"""Comparing the store's contexts with pi's, as JSON values, with readable differences.

Both sides are compared as the JSON ``JSON.stringify`` would write: numbers are JavaScript numbers
(``100.0`` is ``100``, ``-0`` is ``0``, an integer beyond 2**53 is the nearest double), ``true`` is not
``1``, key order does not matter, and a key pi left ``undefined`` is absent on pi's side, so ours must
not hold it either.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from itertools import islice
from pathlib import Path
from typing import Any

from sessionstore.api import SessionStore
from sessionstore.errors import SessionStoreError

Json = dict[str, Any]
ABSENT = "<absent>"  # how a key missing on one side is shown
SHORT = 160
DETAILS_PER_PART = 6


def js_number(value: float) -> float:
    """``value`` as a JavaScript number (a double), as far as Python can say."""
    try:
        return float(value)
    except OverflowError:  # JSON.parse gives Infinity, which JSON.stringify writes as null
        return value


def _written_as_null(value: Any) -> bool:
    """Whether ``JSON.stringify`` writes the number ``value`` as ``null`` (NaN, an infinity)."""
    return isinstance(value, float) and not math.isfinite(value)


def canonical(value: Any) -> Any:
    """``value`` as plain JSON data, its numbers as JavaScript numbers, integral ones as integers."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        if _written_as_null(value):
            return None
        number = js_number(value)
        return int(number) if isinstance(number, float) and number.is_integer() else number
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [canonical(v) for v in value]
    raise TypeError(f"not JSON data: {type(value).__name__}")


def as_json(value: Any) -> str:
    return json.dumps(canonical(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def same(pi: Any, ours: Any) -> bool:
    """``as_json(pi) == as_json(ours)``, without writing the JSON."""
    pi, ours = (None if _written_as_null(v) else v for v in (pi, ours))
    if isinstance(pi, bool) or isinstance(ours, bool):
        return type(pi) is type(ours) and pi == ours
    if isinstance(pi, str) or isinstance(ours, str):
        return isinstance(pi, str) and isinstance(ours, str) and pi == ours
    if isinstance(pi, Mapping):
        return (
            isinstance(ours, Mapping)
            and len(pi) == len(ours)
            and all(key in ours and same(value, ours[key]) for key, value in pi.items())
        )
    if _is_list(pi):
        return _is_list(ours) and len(pi) == len(ours) and all(same(a, b) for a, b in zip(pi, ours, strict=True))
    if isinstance(pi, (int, float)) and isinstance(ours, (int, float)):
        return js_number(pi) == js_number(ours)
    return pi is None and ours is None


def short(value: Any) -> str:
    """Compact JSON for a report, in the value's own key order (pi's: ``role`` first)."""
    text = value if value is ABSENT else json.dumps(canonical(value), ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= SHORT else f"{text[: SHORT - 1]}…"


def differences(pi: Any, ours: Any, path: str) -> Iterator[str]:
    """One line per differing leaf value, named by its JSON path."""
    if isinstance(pi, Mapping) and isinstance(ours, Mapping):
        for key in [*pi, *(k for k in ours if k not in pi)]:
            here = f"{path}.{key}"
            if key not in ours:
                yield f"{here}: pi {short(pi[key])}, ours {ABSENT}"
            elif key not in pi:
                yield f"{here}: pi {ABSENT}, ours {short(ours[key])}"
            else:
                yield from differences(pi[key], ours[key], here)
    elif _is_list(pi) and _is_list(ours):
        for i in range(max(len(pi), len(ours))):
            here = f"{path}[{i}]"
            if i >= len(ours):
                yield f"{here}: pi {short(pi[i])}, ours {ABSENT}"
            elif i >= len(pi):
                yield f"{here}: pi {ABSENT}, ours {short(ours[i])}"
            else:
                yield from differences(pi[i], ours[i], here)
    elif not same(pi, ours):
        yield f"{path}: pi {short(pi)}, ours {short(ours)}"


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str)


def list_difference(
    name: str, pi: list[Any], ours: list[Any], sources: tuple[list[Any], list[Any]] | None = None
) -> str | None:
    """None when equal, else where the lists first differ: the messages ours lacks or has in excess
    (aligned as ``difflib`` aligns them), or a field-by-field diff of the first differing message.
    ``sources`` (pi's and our entry id per message) names the entry each shown message comes from."""
    if same(pi, ours):
        return None

    def source(side: int, index: int) -> str:
        return "" if sources is None or index >= len(sources[side]) else f" (entry {sources[side][index]})"

    matcher = SequenceMatcher(None, [as_json(m) for m in pi], [as_json(m) for m in ours], autojunk=False)
    runs = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    tag, i1, i2, j1, j2 = runs[0]
    lines = [f"{name}[{i}] of pi{source(0, i)}, missing from ours: {short(pi[i])}" for i in range(i1, i2)]
    lines += [f"{name}[{j}] of ours{source(1, j)}, not in pi's: {short(ours[j])}" for j in range(j1, j2)]
    if tag == "replace" and i2 - i1 == j2 - j1:
        lines = [f"pi's{source(0, i1)} vs ours{source(1, j1)}:"] if sources is not None else []
        lines += islice(differences(pi[i1], ours[j1], f"{name}[{i1}]"), DETAILS_PER_PART + 1)
        if i2 - i1 > 1:
            lines.append(f"(and the {i2 - i1 - 1} messages after it differ too)")
    if len(lines) > DETAILS_PER_PART + 1:
        lines[DETAILS_PER_PART + 1 :] = ["…"]
    more = f"; {len(runs) - 1} more differing run(s) after it" if len(runs) > 1 else ""
    head = f"{name} differ from pi's at [{i1}] ({len(pi)} from pi, {len(ours)} from us{more}):"
    return "\n".join([head, *(f"    {line}" for line in lines)])


@dataclass
class Mismatch:
    file: str
    leaf: str
    parts: list[str]

    def __str__(self) -> str:
        body = "\n".join(f"  {part}" for part in self.parts)
        return f"{self.file} @ {self.leaf}:\n{body}"


@dataclass
class Comparison:
    """Leaves compared so far; ``mismatches`` holds one item per differing leaf (or file, when a whole
    file cannot be compared)."""

    leaves: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)

    def report(self, *, first: int = 5) -> str:
        shown = "\n".join(str(m) for m in self.mismatches[:first])
        more = len(self.mismatches) - first
        tail = f"\n… and {more} more" if more > 0 else ""
        return f"{len(self.mismatches)} differences from pi over {self.leaves} leaves:\n{shown}{tail}"


def crash(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def leaf_name(leaf: Json) -> str:
    if leaf["leaf"] == "default":
        return f"pi's own leaf ({leaf['leafId']})"
    if leaf["leaf"] == "none":
        return "leaf none (reset before the first entry)"
    return f"entry {leaf['leafId']} (#{leaf['position']})"


def compare_file(store: SessionStore, path: Path, pi: Json, *, name: str, into: Comparison) -> None:
    """Import ``path`` into ``store`` and compare the context at every leaf pi evaluated."""
    if "error" in pi:
        try:
            store.import_jsonl(path)
        except SessionStoreError:  # pi refuses the file and so do we
            return
        except Exception as exc:
            text = f"pi refuses this file; our import crashed: {crash(exc)}"
        else:
            text = f"pi cannot load this file ({pi['error']}); we imported it"
        into.mismatches.append(Mismatch(name, "import", [text]))
        return
    leaves: list[Json] = pi["leaves"]
    into.leaves += len(leaves)
    try:
        sid = store.import_jsonl(path).session_id
    except Exception as exc:
        how = f"refused it: {exc}" if isinstance(exc, SessionStoreError) else f"crashed: {crash(exc)}"
        text = f"pi loads this file; our import {how} ({len(leaves)} leaves not compared)"
        into.mismatches.append(Mismatch(name, "import", [text]))
        return
    positions: list[str] | None = None
    if pi["idsRegenerated"]:  # pi gave the entries random ids: the same entry is found by position
        ours = [entry["id"] for entry in store.entries(sid)]
        if len(ours) == pi["entries"]:
            positions = ours
        else:
            into.mismatches.append(
                Mismatch(name, "entries", [f"pi holds {pi['entries']} entries, we hold {len(ours)}: leaves not mapped"])
            )
    for leaf in leaves:
        if leaf["leaf"] == "entry" and pi["idsRegenerated"]:
            if positions is None:
                continue
            leaf_id: str | None = positions[leaf["position"]]
        else:
            leaf_id = leaf["leafId"]
        parts = compare_leaf(store, sid, leaf, leaf_id, pi["pool"])
        if parts:
            into.mismatches.append(Mismatch(name, leaf_name(leaf), parts))


def compare_leaf(store: SessionStore, sid: str, leaf: Json, leaf_id: str | None, pool: list[Json]) -> list[str]:
    """What differs at one leaf (``pool``: the file's messages, which pi's leaf refers to by index)."""
    try:
        ours = store.context(sid) if leaf["leaf"] == "default" else store.context(sid, leaf_id=leaf_id)
    except Exception as exc:
        pi_side = f" (pi: {leaf['error']})" if "error" in leaf else ""
        return [f"our context raised {crash(exc)}{pi_side}"]
    if "error" in leaf:  # pi throws or never returns here: we must give a context and say what is wrong
        if ours.diagnostics:
            return []
        return [f"pi fails here ({leaf['error']}); we give a context without any diagnostic"]
    context = leaf["context"]
    parts = [
        list_difference(
            "messages", [pool[i] for i in context["messages"]], ours.messages, (leaf["sources"], ours.entry_ids)
        ),
        list_difference("llm", [pool[i] for i in leaf["llm"]], ours.llm),
    ]
    # pi's undefined (absent here) and null are both None in our ContextResult.
    for key, mine in (("thinkingLevel", ours.thinking_level), ("model", ours.model)):
        theirs = context.get(key)
        if not same(theirs, mine):
            parts.append(f"{key}: pi {short(theirs)}, ours {short(mine)}")
    return [part for part in parts if part is not None]

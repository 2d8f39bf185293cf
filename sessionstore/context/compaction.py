"""Compaction planning (SPEC 10): pi's token estimate and cut-point rules, over a root-to-leaf path.

Pure functions over wire dicts, mirroring pi's ``prepareCompaction``/``findCutPoint``. Lengths are
counted in UTF-16 code units, as JavaScript's ``String.length`` counts them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessionstore.context.build import entry_to_message

Json = dict[str, Any]
DEFAULT_KEEP_RECENT_TOKENS = 20_000
IMAGE_CHARS = 4_800  # pi: images count as 4,800 chars (1,200 tokens)


def js_len(text: str) -> int:
    """``String.length`` in JavaScript: UTF-16 code units."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _text_chars(content: Any, *, images: bool) -> int:
    if isinstance(content, str):
        return js_len(content)
    chars = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                chars += js_len(block["text"])
            elif images and block.get("type") == "image":
                chars += IMAGE_CHARS
    return chars


def estimate_tokens(message: Any) -> int:
    """pi's ``estimateTokens``: ceil(chars / 4) per message, images 1,200 tokens (results, custom);
    0 for what is not a message object (a file may hold one)."""
    if not isinstance(message, Mapping):
        return 0
    role = message.get("role")
    chars = 0
    if role == "user":
        chars = _text_chars(message.get("content"), images=False)
    elif role == "assistant":
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                chars += js_len(str(block.get("text", "")))
            elif kind == "thinking":
                chars += js_len(str(block.get("thinking", "")))
            elif kind == "toolCall":
                arguments = json.dumps(block.get("arguments"), ensure_ascii=False, separators=(",", ":"))
                chars += js_len(str(block.get("name", ""))) + js_len(arguments)
    elif role in ("custom", "toolResult"):
        chars = _text_chars(message.get("content"), images=True)
    elif role == "bashExecution":
        chars = js_len(str(message.get("command", ""))) + js_len(str(message.get("output", "")))
    elif role in ("branchSummary", "compactionSummary"):
        chars = js_len(str(message.get("summary", "")))
    else:
        return 0
    return math.ceil(chars / 4)


def _usage_tokens(message: Mapping[str, Any]) -> int | None:
    if message.get("role") != "assistant" or message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    total = usage.get("totalTokens")
    if total:
        return int(total)
    return int(sum(usage.get(k) or 0 for k in ("input", "output", "cacheRead", "cacheWrite")))


def _is_cut_point(entry: Mapping[str, Any]) -> bool:
    kind = entry.get("type")
    if kind in ("branch_summary", "custom_message"):
        return True
    if kind == "message":
        message = entry.get("message")
        role = message.get("role") if isinstance(message, dict) else None
        return role in ("bashExecution", "custom", "branchSummary", "compactionSummary", "user", "assistant")
    return False


def _is_turn_start(entry: Mapping[str, Any]) -> bool:
    kind = entry.get("type")
    if kind in ("branch_summary", "custom_message"):
        return True
    message = entry.get("message") if kind == "message" else None
    return isinstance(message, dict) and message.get("role") in ("user", "bashExecution")


def _message(entry: Mapping[str, Any]) -> Json | None:
    return entry.get("message") if entry.get("type") == "message" and isinstance(entry.get("message"), dict) else None


@dataclass(slots=True)
class CutPoint:
    first_kept_index: int
    turn_start_index: int
    is_split_turn: bool


def find_cut_point(path: Sequence[Mapping[str, Any]], start: int, end: int, keep_recent_tokens: int) -> CutPoint:
    """pi's ``findCutPoint`` over ``path[start:end]``."""
    cut_points = [i for i in range(start, end) if _is_cut_point(path[i])]
    if not cut_points:
        return CutPoint(start, -1, False)
    accumulated = 0
    cut_index = cut_points[0]
    for i in range(end - 1, start - 1, -1):
        message = _message(path[i])
        if message is None:
            continue
        accumulated += estimate_tokens(message)
        if accumulated >= keep_recent_tokens:
            cut_index = next((c for c in cut_points if c >= i), cut_index)
            break
    while cut_index > start:
        previous = path[cut_index - 1]
        if previous.get("type") in ("compaction", "message"):
            break
        cut_index -= 1
    cut_message = _message(path[cut_index])
    is_user = cut_message is not None and cut_message.get("role") == "user"
    turn_start = -1
    if not is_user:
        turn_start = next((i for i in range(cut_index, start - 1, -1) if _is_turn_start(path[i])), -1)
    return CutPoint(cut_index, turn_start, not is_user and turn_start != -1)


@dataclass(slots=True)
class CompactionPlan:
    """What a compaction at the end of the path would keep and summarise."""

    first_kept_entry_id: str
    is_split_turn: bool
    tokens_before: int
    estimated_tokens_before: int
    kept_tokens: int
    messages_to_summarize: list[Json] = field(default_factory=list)
    turn_prefix_messages: list[Json] = field(default_factory=list)
    previous_summary: str | None = None

    def to_json(self) -> Json:
        out: Json = {
            "firstKeptEntryId": self.first_kept_entry_id,
            "isSplitTurn": self.is_split_turn,
            "tokensBefore": self.tokens_before,
            "estimatedTokensBefore": self.estimated_tokens_before,
            "keptTokens": self.kept_tokens,
            "messagesToSummarize": self.messages_to_summarize,
            "turnPrefixMessages": self.turn_prefix_messages,
        }
        if self.previous_summary is not None:
            out["previousSummary"] = self.previous_summary
        return out


def plan_compaction(
    path: Sequence[Mapping[str, Any]], *, keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
) -> CompactionPlan | None:
    """pi's ``prepareCompaction``; ``None`` when there is nothing to compact (empty path, or the
    path already ends in a compaction). ``tokens_before`` is pi's figure (usage of the last
    completed assistant message); ``estimated_tokens_before`` sums the estimate over the context."""
    if not path or path[-1].get("type") == "compaction":
        return None
    previous = max((i for i, e in enumerate(path) if e.get("type") == "compaction"), default=-1)
    start, end = previous + 1, len(path)
    tokens_before = 0
    for entry in reversed(path):
        message = _message(entry)
        used = _usage_tokens(message) if message is not None else None
        if used is not None:
            tokens_before = used
            break
    cut = find_cut_point(path, start, end, keep_recent_tokens)
    first_kept = path[cut.first_kept_index]
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index

    def messages(lo: int, hi: int) -> list[Json]:
        out = []
        for entry in path[lo:hi]:
            message = entry_to_message(entry)
            if entry.get("type") == "branch_summary" and message is None:
                message = {"role": "branchSummary", "summary": entry.get("summary"), "fromId": entry.get("fromId")}
            if message is not None:
                out.append(message)
        return out

    from sessionstore.context.build import build_session_context

    estimated = sum(estimate_tokens(m) for m in build_session_context(path).messages)
    kept = sum(estimate_tokens(m) for e in path[cut.first_kept_index :] if (m := _message(e)) is not None)
    return CompactionPlan(
        first_kept_entry_id=str(first_kept.get("id")),
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        estimated_tokens_before=estimated,
        kept_tokens=kept,
        messages_to_summarize=messages(start, history_end),
        turn_prefix_messages=messages(cut.turn_start_index, cut.first_kept_index) if cut.is_split_turn else [],
        previous_summary=str(path[previous].get("summary")) if previous >= 0 else None,
    )

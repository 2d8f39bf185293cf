"""Compaction planning (SPEC 10, 12.10): pi 1.6's ``prepareCompaction`` over a root-to-leaf path.

Pure functions over wire dicts. Planning works on the path's projection (``project_entries``: context
entries with their edited messages), as pi 1.6 does: a previous compaction's kept range is summarised
again, a cut point is an entry whose projected messages include a user-like or assistant message, and
lengths are counted in UTF-16 code units, as JavaScript's ``String.length`` counts them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessionstore.context.build import ProjectedEntry, entry_messages, project_entries
from sessionstore.context.system import current_system_message
from sessionstore.models import js
from sessionstore.models.js import MISSING
from sessionstore.models.roles import CUT_POINT_ROLES, TURN_START_ROLES, role_of
from sessionstore.models.wire import JsonObject as Json
from sessionstore.validate import Diagnostic
from sessionstore.wire.jsjson import js_dumps

DEFAULT_KEEP_RECENT_TOKENS = 20_000
IMAGE_CHARS = 4_800  # pi: images count as 4,800 chars (1,200 tokens)


def js_len(text: str) -> int:
    """``String.length`` in JavaScript: UTF-16 code units."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _length(value: Any) -> int:
    """``value.length`` for the strings pi measures (0 for what is no string: pi's would be undefined)."""
    return js_len(value) if isinstance(value, str) else 0


def _text_and_image_chars(content: Any) -> int:
    if isinstance(content, str):
        return js_len(content)
    chars = 0
    for block in content if isinstance(content, list) else []:
        kind = js.get(block, "type")
        if kind == "text" and js.truthy(js.get(block, "text")):
            chars += _length(block["text"])
        elif kind == "image":
            chars += IMAGE_CHARS
    return chars


def estimate_tokens(message: Any) -> int:
    """pi 1.6's ``estimateTokens``: ceil(chars / 4); images 4,800 chars; a system message counts its
    content, sections and ``JSON.stringify(toolsAdded)``; 0 for what is not a message object."""
    role = role_of(message)
    chars = 0
    if role == "system":
        chars = _text_and_image_chars(message.get("content"))
        sections = message.get("sections")
        if isinstance(sections, dict):
            chars += sum(_length(text) for text in sections.values() if js.truthy(text))
        if js.truthy(message.get("toolsAdded", MISSING)):
            chars += js_len(js_dumps(message["toolsAdded"]))
    elif role in ("user", "custom", "toolResult"):
        chars = _text_and_image_chars(message.get("content"))
    elif role == "assistant":
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            kind = js.get(block, "type")
            if kind == "text":
                chars += _length(block.get("text"))
            elif kind == "thinking":
                chars += _length(block.get("thinking"))
            elif kind == "toolCall":
                chars += _length(block.get("name")) + js_len(js_dumps(block.get("arguments")))
    elif role == "bashExecution":
        chars = _length(message.get("command")) + _length(message.get("output"))
    elif role in ("branchSummary", "compactionSummary"):
        chars = _length(message.get("summary"))
    else:
        return 0
    return math.ceil(chars / 4)


def _usage_tokens(message: Any) -> int:
    """pi's ``calculateContextTokens`` of an assistant message's usable usage (0: none usable)."""
    if role_of(message) != "assistant" or "usage" not in message:
        return 0
    usage = message.get("usage")
    if message.get("stopReason") in ("aborted", "error") or not isinstance(usage, dict):
        return 0
    total = usage.get("totalTokens")
    if js.truthy(total) and isinstance(total, int | float):
        return int(total)
    parts = [usage.get(k) for k in ("input", "output", "cacheRead", "cacheWrite")]
    if all(isinstance(p, int | float) and not isinstance(p, bool) for p in parts):
        return int(sum(parts))  # type: ignore[arg-type]
    return 0


def estimate_context_tokens(
    projected: Sequence[ProjectedEntry], path: Sequence[Mapping[str, Any]]
) -> int:
    """pi 1.6's ``estimateProjectedContextTokens``: the last usable assistant usage plus estimates of
    the messages after it, when that usage comes after the latest context edit or compaction on the
    path; else estimates of the replayed system prompt and every non-system message."""
    messages = [m for entry in projected for m in entry.messages]
    last = next((i for i in range(len(messages) - 1, -1, -1) if _usage_tokens(messages[i]) > 0), None)
    if last is not None:
        position = 0
        usage_entry: Any = None
        for entry in projected:
            if last < position + len(entry.messages):
                usage_entry = entry.source.get("id")
                break
            position += len(entry.messages)
        usage_index = next((i for i, e in enumerate(path) if e.get("id") == usage_entry), -1)
        invalidating = next(
            (i for i in range(len(path) - 1, -1, -1) if path[i].get("type") in ("context_edit", "compaction")), -1
        )
        if usage_index > invalidating:
            return _usage_tokens(messages[last]) + sum(estimate_tokens(m) for m in messages[last + 1 :])
    system = current_system_message(messages)
    tokens = estimate_tokens(system) if system is not None else 0
    return tokens + sum(estimate_tokens(m) for m in messages if role_of(m) != "system")


def context_tokens(path: Sequence[Mapping[str, Any]]) -> int:
    """pi 1.6's ``tokensBefore`` of a compaction appended at the end of ``path``."""
    return estimate_context_tokens(project_entries(path, []), path)


def _is_cut_point(entry: ProjectedEntry) -> bool:
    return entry.source.get("type") != "compaction" and any(
        role_of(m) in CUT_POINT_ROLES for m in entry.messages
    )


def _is_turn_start(entry: ProjectedEntry) -> bool:
    return entry.source.get("type") != "compaction" and any(
        role_of(m) in TURN_START_ROLES for m in entry.messages
    )


@dataclass(slots=True)
class CutPoint:
    first_kept_index: int
    turn_start_index: int
    is_split_turn: bool


def find_cut_point(entries: Sequence[ProjectedEntry], start: int, end: int, keep_recent_tokens: int) -> CutPoint:
    """pi 1.6's ``findProjectedCutPoint`` over ``entries[start:end]``."""
    cut_points = [i for i in range(start, end) if _is_cut_point(entries[i])]
    if not cut_points:
        return CutPoint(start, -1, False)
    accumulated = 0
    exceeded = False
    cut_index = cut_points[0]
    for i in range(end - 1, start - 1, -1):
        tokens = sum(estimate_tokens(m) for m in entries[i].messages)
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            exceeded = True
            cut_index = next((c for c in cut_points if c >= i), cut_points[-1])
            break
    if exceeded and _recovery_omission(entries[cut_index + 1 : end]):
        cut_index += 1
    while cut_index > start:
        previous = entries[cut_index - 1]
        if previous.source.get("type") == "compaction" or previous.messages:
            break
        cut_index -= 1
    starts_turn = _is_turn_start(entries[cut_index]) if cut_index < len(entries) else False
    turn_start = -1
    if not starts_turn:
        turn_start = next((i for i in range(min(cut_index, len(entries) - 1), start - 1, -1)
                           if _is_turn_start(entries[i])), -1)
    return CutPoint(cut_index, turn_start, not starts_turn and turn_start != -1)


def _recovery_omission(suffix: Sequence[ProjectedEntry]) -> bool:
    """pi 1.6: the entries after the cut are all invisible or omitted by edits, one of them an omitted
    assistant message, none a compaction, and no edit after the cut replaces anything else: keep one
    entry fewer."""
    def visible(entry: ProjectedEntry) -> bool:
        return entry.source.get("type") != "context_edit" and bool(entry_messages(entry.source))

    def omitted(entry: ProjectedEntry) -> bool:
        return visible(entry) and not entry.messages

    omitted_ids = {entry.source.get("id") for entry in suffix if omitted(entry)}
    external = any(
        e.source.get("type") == "context_edit" and e.source.get("replacement", MISSING) is not None
        and e.source.get("targetId") not in omitted_ids
        for e in suffix
    )
    return (
        not external
        and any(e.source.get("type") == "message" and role_of(e.source.get("message")) == "assistant"
                and omitted(e) for e in suffix)
        and all(e.source.get("type") != "compaction" and (not visible(e) or omitted(e)) for e in suffix)
    )


@dataclass(slots=True)
class CompactionPlan:
    """What a compaction at the end of the path would keep and summarise (pi 1.6's preparation)."""

    first_kept_entry_id: str
    is_split_turn: bool
    tokens_before: int
    estimated_tokens_before: int
    kept_tokens: int
    messages_to_summarize: list[Any] = field(default_factory=list)
    turn_prefix_messages: list[Any] = field(default_factory=list)
    previous_summary: Any = None
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)

    def to_json(self) -> Json:
        out: Json = {
            "firstKeptEntryId": self.first_kept_entry_id,
            "isSplitTurn": self.is_split_turn,
            "tokensBefore": self.tokens_before,
            "estimatedTokensBefore": self.estimated_tokens_before,
            "keptTokens": self.kept_tokens,
            "messagesToSummarize": self.messages_to_summarize,
            "turnPrefixMessages": self.turn_prefix_messages,
            "readFiles": self.read_files,
            "modifiedFiles": self.modified_files,
        }
        if self.previous_summary is not None:
            out["previousSummary"] = self.previous_summary
        return out


def _summarised(entries: Sequence[ProjectedEntry]) -> list[Any]:
    """pi's ``getMessagesFromProjectedEntryForCompaction``: compactions give nothing, system messages dropped."""
    return [m for e in entries if e.source.get("type") != "compaction" for m in e.messages
            if role_of(m) != "system"]


def _file_ops(messages: Sequence[Any], previous: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    """pi's file operations: ``path`` of read/write/edit tool calls (and of a tool result's nested
    calls), plus the previous pi-made compaction's lists; read-only = read minus modified, sorted."""
    read: set[str] = set()
    modified: set[str] = set()
    details = previous.get("details") if previous is not None and not js.truthy(previous.get("fromHook")) else None
    if isinstance(details, dict):
        read.update(f for f in details.get("readFiles") or [] if isinstance(f, str))
        modified.update(f for f in details.get("modifiedFiles") or [] if isinstance(f, str))

    def add(name: Any, arguments: Any) -> None:
        path = js.get(arguments, "path")
        if isinstance(path, str) and path:
            if name == "read":
                read.add(path)
            elif name in ("write", "edit"):
                modified.add(path)

    for message in messages:
        role = role_of(message)
        if role == "toolResult":
            for call in js.get(js.get(message, "nestedCalls"), "calls") or []:
                add(js.get(call, "name"), js.get(call, "arguments"))
        elif role == "assistant" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if js.get(block, "type") == "toolCall":
                    add(js.get(block, "name"), js.get(block, "arguments"))
    return sorted(read - modified), sorted(modified)


def plan_compaction(
    path: Sequence[Mapping[str, Any]], *, keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
) -> CompactionPlan | None:
    """pi 1.6's ``prepareCompaction``; ``None`` when there is nothing to compact (an empty path, a path
    ending in a compaction, a cut entry without an id, or nothing to summarise: see
    :func:`plan_or_reason` for which). ``tokens_before`` is pi's figure; ``estimated_tokens_before``
    sums the estimate over every context message."""
    plan = plan_or_reason(path, keep_recent_tokens=keep_recent_tokens)
    return plan if isinstance(plan, CompactionPlan) else None


def plan_or_reason(
    path: Sequence[Mapping[str, Any]], *, keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
) -> CompactionPlan | str:
    """:func:`plan_compaction`'s plan, or, when there is nothing to compact, why (one line for people:
    no entries; the leaf is a compaction; everything since the last compaction fits in
    ``keep_recent_tokens``, with the estimate; ...)."""
    if not path:
        return "the session has no entries"
    if path[-1].get("type") == "compaction":
        return "the leaf is a compaction (nothing was added after it)"
    diagnostics: list[Diagnostic] = []
    projected = project_entries(path, diagnostics)
    previous_index = next(
        (i for i, e in enumerate(projected) if e.source.get("type") == "compaction" and e.messages), -1
    )
    start = previous_index + 1 if previous_index >= 0 else 0
    since = "since the last compaction" if previous_index >= 0 else "in the session"
    total = sum(estimate_tokens(m) for e in projected[start:] for m in e.messages)
    recent = f"about {total} token{'' if total == 1 else 's'}, estimated"
    cut = find_cut_point(projected, start, len(projected), keep_recent_tokens)
    if cut.first_kept_index >= len(projected):
        return f"no message {since} to keep or summarise"
    first_kept = projected[cut.first_kept_index].source.get("id")
    if not isinstance(first_kept, str) or not first_kept:
        return "the entry the cut would keep from has no id"
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    to_summarize = _summarised(projected[start:history_end])
    prefix = _summarised(projected[cut.turn_start_index : cut.first_kept_index]) if cut.is_split_turn else []
    if not to_summarize and not prefix:
        if total <= keep_recent_tokens:
            return f"everything {since} fits in keep_recent_tokens {keep_recent_tokens} ({recent})"
        return (f"the cut that keeps about {keep_recent_tokens} tokens leaves nothing {since} before it to"
                f" summarise ({recent}; no earlier turn starts where a cut may go)")
    previous = projected[previous_index].source if previous_index >= 0 else None
    read_files, modified_files = _file_ops([*to_summarize, *prefix], previous)
    messages = [m for e in projected for m in e.messages]
    return CompactionPlan(
        first_kept_entry_id=first_kept,
        is_split_turn=cut.is_split_turn,
        tokens_before=estimate_context_tokens(projected, path),
        estimated_tokens_before=sum(estimate_tokens(m) for m in messages),
        kept_tokens=sum(estimate_tokens(m) for e in projected[cut.first_kept_index :] for m in e.messages),
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        previous_summary=previous.get("summary") if previous is not None else None,
        read_files=read_files,
        modified_files=modified_files,
    )

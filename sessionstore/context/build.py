"""Context building (SPEC 5): a root-to-leaf path of entries -> the AgentMessage list, thinking level
and model, exactly as pi's ``buildSessionContext``.

Pure functions over wire dicts. The store may hand over only the tail of the path that the context
needs (from the last compaction's first kept entry on), together with the entries that last set the
thinking level and the model before that tail; the result is the same as for the whole path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessionstore.models.timestamps import iso_to_ms
from sessionstore.validate import Diagnostic

Json = dict[str, Any]


@dataclass(slots=True)
class SessionContext:
    """What a model call at ``leaf_id`` gets: ``messages`` (AgentMessage wire dicts) and settings.

    ``entry_ids[i]`` is the id of the entry message ``i`` came from.
    """

    messages: list[Json]
    entry_ids: list[str | None]
    thinking_level: str = "off"
    model: Json | None = None
    leaf_id: str | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def entry_to_message(entry: Mapping[str, Any]) -> Json | None:
    """The message an entry contributes to the context, or ``None`` (pi's ``appendMessage``)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return message if isinstance(message, dict) else None
    if kind == "custom_message":
        out: Json = {
            "role": "custom",
            "customType": entry.get("customType"),
            "content": entry.get("content"),
            "display": entry.get("display"),
        }
        if "details" in entry:
            out["details"] = entry["details"]
        out["timestamp"] = iso_to_ms(entry.get("timestamp"))
        return out
    if kind == "branch_summary" and entry.get("summary"):
        return {
            "role": "branchSummary",
            "summary": entry["summary"],
            "fromId": entry.get("fromId"),
            "timestamp": iso_to_ms(entry.get("timestamp")),
        }
    return None


def compaction_summary_message(entry: Mapping[str, Any]) -> Json:
    return {
        "role": "compactionSummary",
        "summary": entry.get("summary"),
        "tokensBefore": entry.get("tokensBefore"),
        "timestamp": iso_to_ms(entry.get("timestamp")),
    }


def model_of(entry: Mapping[str, Any]) -> Json | None:
    """The model an entry selects: a ``model_change`` or an assistant message; else ``None``."""
    kind = entry.get("type")
    if kind == "model_change":
        return _present({"provider": entry.get("provider"), "modelId": entry.get("modelId")})
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant":
            return _present({"provider": message.get("provider"), "modelId": message.get("model")})
    return None


def _present(value: Json) -> Json:
    return {k: v for k, v in value.items() if v is not None}


def build_session_context(
    path: Sequence[Mapping[str, Any]],
    *,
    thinking_entry: Mapping[str, Any] | None = None,
    model_entry: Mapping[str, Any] | None = None,
) -> SessionContext:
    """Context of the leaf at the end of ``path`` (root first). An empty path is the "none" leaf.

    ``thinking_entry``/``model_entry``: the entries that last set thinking level / model *before*
    ``path`` starts, when ``path`` is only the tail of the real path.
    """
    thinking_level = "off"
    model: Json | None = None
    if thinking_entry is not None:
        thinking_level = thinking_entry.get("thinkingLevel", "off")
    if model_entry is not None:
        model = model_of(model_entry)
    compaction_index = -1
    for index, entry in enumerate(path):
        kind = entry.get("type")
        if kind == "thinking_level_change":
            thinking_level = entry.get("thinkingLevel")  # type: ignore[assignment]
        elif kind == "compaction":
            compaction_index = index
        else:
            selected = model_of(entry)
            if selected is not None:
                model = selected

    context = SessionContext(messages=[], entry_ids=[], thinking_level=thinking_level, model=model)
    if path:
        context.leaf_id = path[-1].get("id")

    def emit(entry: Mapping[str, Any]) -> None:
        message = entry_to_message(entry)
        if message is not None:
            context.messages.append(message)
            context.entry_ids.append(entry.get("id"))

    if compaction_index < 0:
        for entry in path:
            emit(entry)
        return context

    compaction = path[compaction_index]
    context.messages.append(compaction_summary_message(compaction))
    context.entry_ids.append(compaction.get("id"))
    first_kept = compaction.get("firstKeptEntryId")
    found = False
    for entry in path[:compaction_index]:
        if entry.get("id") == first_kept:
            found = True
            _check_first_kept(entry, compaction, context)
        if found:
            emit(entry)
    if not found:
        context.diagnostics.append(
            Diagnostic(
                code="COMPACTION_FIRST_KEPT_NOT_ON_PATH",
                message_index=0,
                entry_id=compaction.get("id"),
                message=(
                    f"compaction {compaction.get('id')!r}: firstKeptEntryId {first_kept!r} is not on the path"
                    " before it, so no message before the compaction is kept"
                ),
            )
        )
    for entry in path[compaction_index + 1 :]:
        emit(entry)
    return context


def _check_first_kept(entry: Mapping[str, Any], compaction: Mapping[str, Any], context: SessionContext) -> None:
    message = entry.get("message") if entry.get("type") == "message" else None
    if isinstance(message, dict) and message.get("role") == "toolResult":
        context.diagnostics.append(
            Diagnostic(
                code="COMPACTION_FIRST_KEPT_IS_TOOL_RESULT",
                message_index=1,
                entry_id=compaction.get("id"),
                message=(
                    f"compaction {compaction.get('id')!r}: firstKeptEntryId {entry.get('id')!r} is a toolResult,"
                    " so the kept messages start with a result whose call was summarised away"
                ),
            )
        )

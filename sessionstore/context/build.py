"""Context building (SPEC 5, 12.5): a root-to-leaf path of entries -> the AgentMessage list, thinking
level and model, exactly as pi 1.6's ``buildSessionContext`` (``buildSessionProjection``) gives them.

Pure functions over wire dicts, which may be of any shape a session file holds: a missing field is
read as JavaScript reads it (``undefined``, left out of the result), missing content is normalised as
pi normalises it. The store may hand over only the tail of the path that the context needs (from the
last compaction's first kept entry on), together with the entries that last set the thinking level
and the model before that tail; the result is the same as for the whole path.

pi's steps, in order:
1. the context entries: without a compaction, the whole path; else the LAST compaction ``C``, then the
   path entries before ``C`` from the one whose id is ``C.firstKeptEntryId`` on (``system`` messages
   among them skipped), then every entry after ``C``;
2. edits: the latest ``context_edit`` among the context entries for each target wins;
3. each context entry's messages (only ``C`` of the compactions contributes: its ``systemMessage`` and
   summary), with its edit applied: ``replacement: null`` drops them, else ``content`` is replaced.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessionstore.models import js
from sessionstore.models.js import MISSING
from sessionstore.models.roles import BLOCK_TEXT_ROLES, EDITABLE_ROLES, role_of
from sessionstore.models.rules import sets_model
from sessionstore.models.wire import JsonObject as Json
from sessionstore.validate import Diagnostic


@dataclass(slots=True)
class SessionContext:
    """What a model call at ``leaf_id`` gets: ``messages`` (AgentMessage wire values) and settings.

    ``entry_ids[i]`` is the id of the entry message ``i`` came from. ``thinking_level`` and ``model``
    are ``None`` where pi's are ``undefined`` (an entry without the field set them).
    """

    messages: list[Any]
    entry_ids: list[str | None]
    thinking_level: str | None = "off"
    model: Json | None = None
    leaf_id: str | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _diagnostic(code: Any, entry: Mapping[str, Any], message: str, index: int | None = None) -> Diagnostic:
    return Diagnostic(code=code, message_index=index, entry_id=_id(entry), message=message)


def _id(entry: Mapping[str, Any]) -> str | None:
    value = entry.get("id")
    return value if isinstance(value, str) else None


def entry_messages(entry: Mapping[str, Any]) -> list[Any]:
    """The messages one entry contributes before edits (pi's ``sessionEntryToContextMessages``).

    A ``message`` entry without a message contributes nothing (pi fails on it; the caller reports it)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if type(message) is dict and message.get("content") is not None:  # the common case, at once
            return [message]
        if message is None:
            return []
        if isinstance(message, dict) and js.nullish(message.get("content", MISSING)):
            role = message.get("role")
            if role == "system":
                return [{**message, "content": ""}]
            if role in ("user", "assistant", "toolResult"):
                return [{**message, "content": []}]
        return [message]
    if kind == "custom_message":
        content = entry.get("content", MISSING)
        return [
            js.obj(
                ("role", "custom"),
                ("customType", entry.get("customType", MISSING)),
                ("content", [] if js.nullish(content) else content),
                ("display", entry.get("display", MISSING)),
                ("details", entry.get("details", MISSING)),
                ("timestamp", js.date_ms(entry.get("timestamp", MISSING))),
            )
        ]
    if kind == "branch_summary" and js.truthy(entry.get("summary", MISSING)):
        return [
            js.obj(
                ("role", "branchSummary"),
                ("summary", entry["summary"]),
                ("fromId", entry.get("fromId", MISSING)),
                ("timestamp", js.date_ms(entry.get("timestamp", MISSING))),
            )
        ]
    if kind == "compaction":
        summary = compaction_summary_message(entry)
        system = entry.get("systemMessage", MISSING)
        return [system, summary] if js.truthy(system) else [summary]
    return []


def compaction_summary_message(entry: Mapping[str, Any]) -> Json:
    return js.obj(
        ("role", "compactionSummary"),
        ("summary", entry.get("summary", MISSING)),
        ("tokensBefore", entry.get("tokensBefore", MISSING)),
        ("timestamp", js.date_ms(entry.get("timestamp", MISSING))),
    )


def entry_to_message(entry: Mapping[str, Any]) -> Any:
    """The one message a non-compaction entry contributes, or ``None``."""
    messages = entry_messages(entry)
    return messages[0] if messages and entry.get("type") != "compaction" else None


def model_of(entry: Mapping[str, Any]) -> Json | None:
    """The model an entry selects (a ``model_change`` or an assistant message), else ``None``; the
    fields are pi's (``{provider, modelId}``), absent where the entry has none."""
    if not sets_model(entry):
        return None
    if entry.get("type") == "model_change":
        return js.obj(("provider", entry.get("provider", MISSING)), ("modelId", entry.get("modelId", MISSING)))
    message = entry["message"]
    return js.obj(("provider", message.get("provider", MISSING)), ("modelId", message.get("model", MISSING)))


def thinking_level_of(entry: Mapping[str, Any]) -> Any:
    """The thinking level a ``thinking_level_change`` sets (``None`` when it has none, pi's undefined)."""
    return entry.get("thinkingLevel")


class ContextSelection:
    """pi's ``buildContextEntries`` one path entry at a time: which entries make the context.

    ``compaction``: the path's LAST compaction (``None``: there is none, every entry is a context entry).
    It comes first in the context; the path is then fed in order (``select``), the compaction itself
    included (``at_compaction``): before it, the entries from the one whose id is its
    ``firstKeptEntryId`` on, ``system`` messages skipped; after it, every entry. ``diagnostics`` (once
    the whole path was fed) says what had to be read tolerantly. Used by :func:`context_entries` and
    by the store's streamed context alike."""

    __slots__ = ("_after", "_first_kept", "_found", "compaction", "found_diagnostics")

    def __init__(self, compaction: Mapping[str, Any] | None) -> None:
        self.compaction = compaction
        self._first_kept = MISSING if compaction is None else compaction.get("firstKeptEntryId", MISSING)
        self._found = False
        self._after = compaction is None
        self.found_diagnostics: list[Diagnostic] = []

    def select(self, entry: Mapping[str, Any], at_compaction: bool = False) -> bool:
        """Whether ``entry`` (the next path entry) is a context entry after the compaction's place."""
        if self._after:
            return True
        if at_compaction:
            self._after = True
            return False
        if not self._found and entry.get("id", MISSING) == self._first_kept:
            self._found = True
            assert self.compaction is not None
            _check_first_kept(entry, self.compaction, self.found_diagnostics)
        return self._found and not _is_system_message(entry)

    def diagnostics(self) -> list[Diagnostic]:
        compaction = self.compaction
        if compaction is None or self._found or self._first_kept == compaction.get("id"):
            return list(self.found_diagnostics)
        return [
            *self.found_diagnostics,
            _diagnostic(
                "COMPACTION_FIRST_KEPT_NOT_ON_PATH",
                compaction,
                f"compaction {_id(compaction)!r}: firstKeptEntryId {js.to_string(self._first_kept)!r} is not on"
                " the path before it, so no message before the compaction is kept",
                0,
            ),
        ]


def last_compaction_index(path: Sequence[Mapping[str, Any]]) -> int:
    """The index of the path's last compaction (-1: none)."""
    compaction_index = -1
    for index, entry in enumerate(path):
        if entry.get("type") == "compaction":
            compaction_index = index
    return compaction_index


def context_entries(path: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], list[Diagnostic]]:
    """pi's ``buildContextEntries``: the entries whose messages make the context, first the latest
    compaction (when there is one)."""
    compaction_index = last_compaction_index(path)
    if compaction_index < 0:
        return list(path), []
    selection = ContextSelection(path[compaction_index])
    chosen: list[Mapping[str, Any]] = [path[compaction_index]]
    chosen.extend(entry for index, entry in enumerate(path) if selection.select(entry, index == compaction_index))
    return chosen, selection.diagnostics()


def _is_system_message(entry: Mapping[str, Any]) -> bool:
    message = entry.get("message")
    return entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "system"


def _check_first_kept(entry: Mapping[str, Any], compaction: Mapping[str, Any], out: list[Diagnostic]) -> None:
    message = entry.get("message") if entry.get("type") == "message" else None
    if isinstance(message, dict) and message.get("role") == "toolResult":
        out.append(
            _diagnostic(
                "COMPACTION_FIRST_KEPT_IS_TOOL_RESULT",
                compaction,
                f"compaction {_id(compaction)!r}: firstKeptEntryId {_id(entry)!r} is a toolResult, so the kept"
                " messages start with a result whose call was summarised away",
                1,
            )
        )


def is_context_edit(entry: Mapping[str, Any]) -> bool:
    return entry.get("type") == "context_edit"


def latest_edits(edit_entries: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """target id -> the latest of ``edit_entries`` (the ``context_edit`` context entries, in path order)
    for it: pi's map. A target that is not a context entry is never looked up, so not checked here."""
    return {target: entry for entry in edit_entries if isinstance(target := entry.get("targetId"), str)}


def edit_diagnostics(
    edit_entries: Sequence[Mapping[str, Any]], in_context: Container[str], out: list[Diagnostic]
) -> None:
    """What pi would make of each edit (in path order): one without a replacement; one whose target is
    not a context entry (``in_context``: the ids of the context entries, or at least of the targets
    among them)."""
    for entry in edit_entries:
        target = entry.get("targetId")
        if "replacement" not in entry:
            # It still replaces an earlier edit of the target, as in pi's map; applied, it changes nothing
            # (pi throws where the target has editable messages, and leaves the others as they are).
            out.append(_diagnostic("CONTEXT_EDIT_WITHOUT_REPLACEMENT", entry,
                                   f"context_edit {_id(entry)!r} has no replacement (pi throws on it); ignored"))
        if not isinstance(target, str) or target not in in_context:
            out.append(_diagnostic("CONTEXT_EDIT_TARGET_NOT_IN_CONTEXT", entry,
                                   f"context_edit {_id(entry)!r}: target {js.to_string(target)!r} is not part of"
                                   " this context; no effect"))


def _edits(entries: Sequence[Mapping[str, Any]], out: list[Diagnostic]) -> dict[str, Mapping[str, Any]]:
    """target id -> the latest ``context_edit`` for it among ``entries`` (by position)."""
    edit_entries = [entry for entry in entries if is_context_edit(entry)]
    if not edit_entries:
        return {}
    ids = {entry_id for entry in entries if (entry_id := _id(entry)) is not None}
    edit_diagnostics(edit_entries, ids, out)
    return latest_edits(edit_entries)


def apply_edit(messages: list[Any], edit: Mapping[str, Any]) -> list[Any]:
    """pi's ``projectContextEntry``: ``replacement: null`` drops the messages; otherwise the ``content``
    of each user/assistant/toolResult/custom message is replaced (shallow copies; a string becomes one
    text block for assistant and toolResult messages), other messages are left as they are."""
    if "replacement" not in edit:
        return messages
    replacement = edit.get("replacement")
    if replacement is None:
        return []
    content = js.get(replacement, "content")
    projected: list[Any] = []
    for message in messages:
        role = role_of(message)
        if role not in EDITABLE_ROLES:
            projected.append(message)
            continue
        new_content = [{"type": "text", "text": content}] if role in BLOCK_TEXT_ROLES and isinstance(
            content, str
        ) else content
        copy = {**message, "content": new_content}
        if new_content is MISSING:
            del copy["content"]
        projected.append(copy)
    return projected


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
    # One pass finds what the context needs to know first: the latest entry that sets each setting
    # (sets_thinking_level, sets_model), and whether a compaction or an edit changes the plain plan.
    thinking_source, model_source = thinking_entry, model_entry
    plain = True
    for entry in path:
        kind = entry.get("type")
        if kind == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                model_source = entry
        elif kind == "thinking_level_change":
            thinking_source = entry
        elif kind == "model_change":
            model_source = entry
        elif kind == "compaction" or kind == "context_edit":
            plain = False
    thinking_level, model = settings(thinking_source, model_source)
    context = SessionContext(messages=[], entry_ids=[], thinking_level=thinking_level, model=model)
    if not path:
        return context
    context.leaf_id = _id(path[-1])
    messages, entry_ids = context.messages, context.entry_ids
    if plain:  # no compaction, no edit: every entry is a context entry, as it is (context_entry_messages)
        add_message, add_id = messages.append, entry_ids.append
        for entry in path:
            if entry.get("type") == "message":
                message = entry.get("message")
                if type(message) is dict and message.get("content") is not None:
                    add_message(message)
                    entry_id = entry.get("id")
                    add_id(entry_id if isinstance(entry_id, str) else None)
                    continue
            projected = _entry_projection(entry, False, {}, context.diagnostics)
            if projected:
                entry_id = _id(entry)
                for message in projected:
                    add_message(message)
                    add_id(entry_id)
        return context
    chosen, edits = _context_plan(path, context.diagnostics)
    for index, entry in enumerate(chosen):
        projected = context_entry_messages(entry, index == 0, edits, context.diagnostics)
        if projected:
            entry_id = _id(entry)
            for message in projected:
                messages.append(message)
                entry_ids.append(entry_id)
    return context


def settings(
    thinking_source: Mapping[str, Any] | None, model_source: Mapping[str, Any] | None
) -> tuple[Any, Json | None]:
    """The thinking level and model of a context whose latest entries that set them are these (``None``:
    none on the path): pi's defaults ``"off"`` and undefined."""
    thinking_level: Any = "off" if thinking_source is None else thinking_level_of(thinking_source)
    return thinking_level, None if model_source is None else model_of(model_source)


def context_entry_messages(
    entry: Mapping[str, Any], first: bool, edits: Mapping[str, Mapping[str, Any]], diagnostics: list[Diagnostic]
) -> list[Any]:
    """The messages one context entry contributes, its edit applied (``first``: the entry opens the
    context, the one place where a compaction contributes); what had to be read tolerantly is appended
    to ``diagnostics``. The step that both :func:`build_session_context` and the store's streamed
    context take for each entry."""
    if not edits and entry.get("type") == "message":
        # The common entry (what _entry_projection gives it, without the calls): one message.
        message = entry.get("message")
        if type(message) is dict and message.get("content") is not None:
            return [message]
    return _entry_projection(entry, first, edits, diagnostics)


@dataclass(frozen=True, slots=True)
class ProjectedEntry:
    """One context entry and the messages it contributes, edits applied (pi's ``{sourceEntry, messages}``)."""

    source: Mapping[str, Any]
    messages: list[Any]


def project_entries(path: Sequence[Mapping[str, Any]], diagnostics: list[Diagnostic]) -> list[ProjectedEntry]:
    """pi 1.6's ``buildSessionProjection(...).entries`` for the path (root first): the context entries,
    each with its messages; what had to be read tolerantly is appended to ``diagnostics``."""
    chosen, edits = _context_plan(path, diagnostics)
    return [ProjectedEntry(entry, _entry_projection(entry, index == 0, edits, diagnostics))
            for index, entry in enumerate(chosen)]


def _context_plan(
    path: Sequence[Mapping[str, Any]], diagnostics: list[Diagnostic]
) -> tuple[list[Mapping[str, Any]], dict[str, Mapping[str, Any]]]:
    """The context entries of ``path`` and the edit in force for each edited target."""
    chosen, found = context_entries(path)
    diagnostics.extend(found)
    return chosen, _edits(chosen, diagnostics)


def _entry_projection(
    entry: Mapping[str, Any], first: bool, edits: Mapping[str, Mapping[str, Any]], diagnostics: list[Diagnostic]
) -> list[Any]:
    """The messages a context entry contributes (``first``: it opens the context), its edit applied."""
    kind = entry.get("type")
    if kind == "message" and entry.get("message") is None:
        diagnostics.append(
            _diagnostic("MESSAGE_ENTRY_WITHOUT_MESSAGE", entry,
                        f"message entry {_id(entry)!r} has no message; it contributes nothing")
        )
        return []
    if kind == "compaction" and not first:
        return []  # only the latest compaction contributes (pi 1.6)
    messages = entry_messages(entry)
    edit = edits.get(_id(entry) or "") if edits else None
    if edit is not None:
        if "replacement" in edit and edit["replacement"] is not None and not any(
            role_of(m) in EDITABLE_ROLES for m in messages
        ):
            diagnostics.append(
                _diagnostic("CONTEXT_EDIT_NO_EFFECT", edit,
                            f"context_edit {_id(edit)!r} replaces the content of {_id(entry)!r}, whose messages"
                            " cannot be edited; no effect")
            )
        messages = apply_edit(messages, edit)
    return messages

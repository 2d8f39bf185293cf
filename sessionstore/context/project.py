"""Projection to provider messages (SPEC 6, 12.6): pi 1.6's ``convertToLlm``, the optional
``transform_context`` hook and the provider-safe repairs pi's provider layer makes before a call.

The source messages are never modified: unchanged roles are passed through as the same objects,
projected roles are new dicts.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessionstore.models import js
from sessionstore.models.js import MISSING
from sessionstore.models.roles import PROVIDER_ROLES, registered_role, role_of
from sessionstore.models.wire import JsonObject as Json
from sessionstore.validate import Diagnostic

TransformContext = Callable[[list[Json]], Any]

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"
NO_RESULT_TEXT = "No result provided"


def bash_execution_to_text(message: Json) -> str:
    """pi's ``bashExecutionToText``, byte for byte (fields read as JavaScript reads them)."""
    text = f"Ran `{js.to_string(message.get('command', MISSING))}`\n"
    output = message.get("output", MISSING)
    text += f"```\n{js.to_string(output)}\n```" if js.truthy(output) else "(no output)"
    exit_code = message.get("exitCode", MISSING)
    if js.truthy(message.get("cancelled", MISSING)):
        text += "\n\n(command cancelled)"
    elif not js.nullish(exit_code) and not _is_zero(exit_code):
        text += f"\n\nCommand exited with code {js.to_string(exit_code)}"
    if js.truthy(message.get("truncated", MISSING)) and js.truthy(message.get("fullOutputPath", MISSING)):
        text += f"\n\n[Output truncated. Full output: {js.to_string(message['fullOutputPath'])}]"
    return text


def _is_zero(value: Any) -> bool:
    """``value === 0`` (``-0`` included, ``false`` and ``"0"`` not)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def _user_text(text: str, timestamp: Any) -> Json:
    return js.obj(("role", "user"), ("content", [{"type": "text", "text": text}]), ("timestamp", timestamp))


def convert_message(message: Any) -> list[Any]:
    """Provider messages for one AgentMessage ([] when it is not sent): pi 1.6's ``convertToLlm``."""
    role = role_of(message)
    if role in PROVIDER_ROLES:
        return [message]
    if role == "bashExecution":
        if js.truthy(message.get("excludeFromContext", MISSING)):
            return []
        return [_user_text(bash_execution_to_text(message), message.get("timestamp", MISSING))]
    if role == "custom":
        content = message.get("content", MISSING)
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        return [js.obj(("role", "user"), ("content", content), ("timestamp", message.get("timestamp", MISSING)))]
    if role == "branchSummary":
        text = BRANCH_SUMMARY_PREFIX + js.to_string(message.get("summary", MISSING)) + BRANCH_SUMMARY_SUFFIX
        return [_user_text(text, message.get("timestamp", MISSING))]
    if role == "compactionSummary":
        text = COMPACTION_SUMMARY_PREFIX + js.to_string(message.get("summary", MISSING)) + COMPACTION_SUMMARY_SUFFIX
        return [_user_text(text, message.get("timestamp", MISSING))]
    registered = registered_role(role) if isinstance(role, str) else None
    if registered is not None and registered.project is not None:
        return list(registered.project(message))
    return []


def convert_to_llm(messages: Sequence[Any]) -> list[Any]:
    """pi 1.6's ``convertToLlm``: AgentMessages -> ``system``/``user``/``assistant``/``toolResult`` messages."""
    out: list[Any] = []
    for message in messages:
        out.extend(convert_message(message))
    return out


@dataclass(slots=True)
class Projection:
    llm: list[Json]
    diagnostics: list[Diagnostic] = field(default_factory=list)


def apply_transform(
    messages: list[Json], transform_context: TransformContext | None, diagnostics: list[Diagnostic]
) -> list[Json]:
    """Run the hook (sync or async); if it raises or returns a non-list, keep ``messages`` and report it."""
    if transform_context is None:
        return messages
    try:
        result = transform_context(list(messages))
        if inspect.isawaitable(result):
            result = _await(result)
        if not isinstance(result, list):
            raise TypeError(f"transform_context returned {type(result).__name__}, expected a list")
        return result
    except Exception as exc:
        diagnostics.append(
            Diagnostic(
                code="TRANSFORM_CONTEXT_FAILED",
                message_index=None,
                entry_id=None,
                message=f"transform_context raised {type(exc).__name__}: {exc}; the original messages were used",
            )
        )
        return messages


def _await(awaitable: Any) -> Any:
    import asyncio  # (only an async hook needs the event loop machinery)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        async def run() -> Any:
            return await awaitable

        return asyncio.run(run())
    if inspect.iscoroutine(awaitable):
        awaitable.close()
    raise RuntimeError("an async transform_context needs the async API when an event loop is running")


class ProviderSafe:
    """pi-ai's ``transformMessages`` one projected message at a time (see :func:`provider_safe`): ``add``
    returns the messages that can be sent so far, ``close`` the rest at the end; ``diagnostics`` says
    what was repaired. Used by :func:`provider_safe` and by the store's streamed context alike."""

    __slots__ = ("_answered", "_held", "_pending", "diagnostics")

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self._pending: list[tuple[Json, Json, int, str | None]] = []
        self._answered: set[Any] = set()
        self._held: list[Json] = []

    def _close_pending(self, out: list[Json]) -> None:
        for call, owner, source, entry_id in self._pending:
            if js.set_key(call.get("id")) in self._answered:
                continue
            out.append(
                {
                    "role": "toolResult",
                    "toolCallId": call.get("id"),
                    "toolName": call.get("name"),
                    "content": [{"type": "text", "text": NO_RESULT_TEXT}],
                    "isError": True,
                    "timestamp": owner.get("timestamp"),
                }
            )
            self.diagnostics.append(
                Diagnostic(
                    code="PROVIDER_SAFE_SYNTHETIC_RESULT",
                    message_index=source,
                    entry_id=entry_id,
                    message=f"tool call {call.get('id')!r} ({call.get('name')}) had no result before the next"
                    " turn; a synthetic error result was inserted",
                )
            )
        self._pending.clear()
        self._answered.clear()
        out.extend(self._held)
        self._held.clear()

    def add(self, message: Json, source: int, entry_id: str | None) -> list[Json]:
        """The messages to send now, given the next projected ``message`` (from AgentMessage ``source``
        of entry ``entry_id``)."""
        out: list[Json] = []
        if js.nullish(message.get("content", MISSING)):
            message = {**message, "content": []}
        role = message.get("role")
        if role == "assistant":
            self._close_pending(out)
            if message.get("stopReason") in ("error", "aborted"):
                self.diagnostics.append(
                    Diagnostic(
                        code="PROVIDER_SAFE_DROPPED_ASSISTANT",
                        message_index=source,
                        entry_id=entry_id,
                        message=f"assistant message with stopReason {message.get('stopReason')!r} is not sent",
                    )
                )
                return out
            content = message.get("content")
            blocks = content if isinstance(content, list) else []
            calls = [b for b in blocks if isinstance(b, dict) and b.get("type") == "toolCall"]
            if calls:
                self._pending[:] = [(call, message, source, entry_id) for call in calls]
                self._answered.clear()
            out.append(message)
        elif role == "toolResult":
            self._answered.add(js.set_key(message.get("toolCallId")))  # pi-ai's Set of result ids
            out.append(message)
        elif role == "system" and self._pending:
            self._held.append(message)
        else:
            if role == "user":
                self._close_pending(out)
            out.append(message)
        return out

    def close(self) -> list[Json]:
        out: list[Json] = []
        self._close_pending(out)
        return out


def provider_safe(
    llm: Sequence[Json], sources: Sequence[int], entry_ids: Sequence[str | None]
) -> tuple[list[Json], list[Diagnostic]]:
    """The model-independent part of what pi-ai does before a call (``transformMessages``, 1.6): a
    message with null content gets ``[]``; assistant messages that ended in ``error``/``aborted`` are
    dropped; every tool call left without a result before the next assistant or user message, or at
    the end, gets a synthetic ``isError`` result (``No result provided``), and a ``system`` message met
    while calls are pending follows those results.

    ``sources[i]`` is the AgentMessage index projected message ``i`` came from (for diagnostics);
    a synthetic result carries the timestamp of the message that made the call (pi uses the clock).
    """
    repairs = ProviderSafe()
    out: list[Json] = []
    for message, source in zip(llm, sources, strict=True):
        entry_id = entry_ids[source] if 0 <= source < len(entry_ids) else None
        out.extend(repairs.add(message, source, entry_id))
    out.extend(repairs.close())
    return out, repairs.diagnostics


def project(
    messages: list[Json],
    entry_ids: Sequence[str | None],
    *,
    transform_context: TransformContext | None = None,
    provider_safe_repairs: bool = False,
) -> Projection:
    """``convert_to_llm`` of ``messages`` (after the optional hook), optionally made provider-safe."""
    diagnostics: list[Diagnostic] = []
    transformed = apply_transform(messages, transform_context, diagnostics)
    if transformed is not messages:
        by_identity = {id(m): i for i, m in enumerate(messages)}
        origin = [by_identity.get(id(m), -1) for m in transformed]
    else:
        origin = list(range(len(messages)))
    llm: list[Json] = []
    if transformed is messages and not provider_safe_repairs:
        # (convert_message without the calls: a provider role's message is itself, the common case)
        add = llm.append
        for message in messages:
            role = message.get("role") if type(message) is dict else None
            if type(role) is str and role in PROVIDER_ROLES:
                add(message)
            else:
                llm.extend(convert_message(message))
        return Projection(llm=llm, diagnostics=diagnostics)
    sources: list[int] = []
    for index, message in enumerate(transformed):
        for projected in convert_message(message):
            llm.append(projected)
            sources.append(origin[index])
    if provider_safe_repairs:
        llm, repairs = provider_safe(llm, sources, entry_ids)
        diagnostics.extend(repairs)
    return Projection(llm=llm, diagnostics=diagnostics)

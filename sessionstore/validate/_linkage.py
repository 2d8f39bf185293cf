"""Tool-round linkage: do the tool calls and tool results of a transcript pair up?

A valid tool round is a tool call with a unique id and exactly one later, well-formed toolResult
with the same ``toolCallId`` and ``toolName``. Malformed records (already reported as shape
problems) whose id was readable are remembered so they cause no cascaded findings: a malformed call
or a duplicated call id silences every linkage finding for that id except the duplicate itself, and
a malformed result silences ``MISSING_TOOL_RESULT`` for its call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from sessionstore.validate._finding import Finding
from sessionstore.validate._path import message_path
from sessionstore.validate._read import quote
from sessionstore.validate.codes import LinkageCode


class ToolCallRecord(NamedTuple):
    """A toolCall block whose id could be read; ``well_formed`` is false when it had shape problems (a
    named tuple: one is made for every tool call of a transcript, in a third of a frozen dataclass's
    time)."""

    message_index: int
    block_index: int
    call_id: str
    name: str | None
    well_formed: bool

    @property
    def path(self) -> str:
        return f"{message_path(self.message_index)}.content[{self.block_index}]"


class ToolResultRecord(NamedTuple):
    """A toolResult whose toolCallId could be read; ``well_formed`` is false when it had shape problems."""

    message_index: int
    call_id: str
    tool_name: str | None
    well_formed: bool

    @property
    def path(self) -> str:
        return message_path(self.message_index)


def link_tool_rounds(calls: Sequence[ToolCallRecord], results: Sequence[ToolResultRecord]) -> list[Finding]:
    """The linkage findings for calls and results given in transcript order, sorted by message index."""
    if _every_round_complete(calls, results):
        return []
    ordered: list[tuple[int, int, int, Finding]] = []

    def add(message_index: int, block_index: int, code: LinkageCode, message: str) -> None:
        ordered.append((message_index, block_index, len(ordered), Finding(message_index, code, message)))

    calls_by_id: dict[str, list[ToolCallRecord]] = {}
    for record in calls:
        calls_by_id.setdefault(record.call_id, []).append(record)

    ambiguous: set[str] = {call.call_id for call in calls if not call.well_formed}
    for call_id, group in calls_by_id.items():
        if len(group) > 1:
            ambiguous.add(call_id)
            for later in group[1:]:
                add(
                    later.message_index,
                    later.block_index,
                    "DUPLICATE_TOOL_CALL_ID",
                    f"{later.path}.id: tool call id {quote(call_id)} is already used by {group[0].path}",
                )

    rounds = {call_id: group[0] for call_id, group in calls_by_id.items() if call_id not in ambiguous}
    answered: dict[str, ToolResultRecord] = {}
    answered_early: set[str] = set()
    for result in results:
        if not result.well_formed or result.call_id in ambiguous:
            continue
        call_id = result.call_id
        call = rounds.get(call_id)
        if call is None:
            add(
                result.message_index,
                0,
                "ORPHAN_TOOL_RESULT",
                f"{result.path}.toolCallId: no tool call has id {quote(call_id)}",
            )
        elif result.message_index < call.message_index:
            answered_early.add(call_id)
            add(
                result.message_index,
                0,
                "TOOL_RESULT_BEFORE_CALL",
                f"{result.path}.toolCallId: result for tool call {quote(call_id)} appears before its call "
                f"at {call.path}",
            )
        elif call_id in answered:
            add(
                result.message_index,
                0,
                "DUPLICATE_TOOL_RESULT",
                f"{result.path}.toolCallId: tool call {quote(call_id)} at {call.path} already has its "
                f"result at {answered[call_id].path}",
            )
        else:
            answered[call_id] = result
            if result.tool_name != call.name:
                add(
                    result.message_index,
                    0,
                    "TOOL_NAME_MISMATCH",
                    f"{result.path}.toolName: result names tool {quote(result.tool_name or '')} but tool "
                    f"call {quote(call_id)} at {call.path} is {quote(call.name or '')}",
                )

    answered_by_malformed = {result.call_id for result in results if not result.well_formed}
    for call_id, call in rounds.items():
        if call_id in answered or call_id in answered_early or call_id in answered_by_malformed:
            continue
        add(
            call.message_index,
            call.block_index,
            "MISSING_TOOL_RESULT",
            f"{call.path}: tool call {quote(call_id)} ({quote(call.name or '')}) has no later toolResult",
        )

    ordered.sort(key=lambda item: item[:3])
    return [finding for *_, finding in ordered]


def _every_round_complete(calls: Sequence[ToolCallRecord], results: Sequence[ToolResultRecord]) -> bool:
    """Whether every record is well formed, every call id unique and answered by exactly one later result
    naming the same tool: the common transcript, of which :func:`link_tool_rounds` finds nothing (one
    pass over each list, no findings to sort)."""
    calls_by_id: dict[str, tuple[int, str | None]] = {}
    for call in calls:
        if not call.well_formed:
            return False
        calls_by_id[call.call_id] = (call.message_index, call.name)
    if len(calls_by_id) != len(calls) or len(results) != len(calls):
        return False
    answered: set[str] = set()
    for result in results:
        call_id = result.call_id
        found = calls_by_id.get(call_id)
        if (not result.well_formed or found is None or found[0] > result.message_index
                or found[1] != result.tool_name or call_id in answered):
            return False
        answered.add(call_id)
    return True

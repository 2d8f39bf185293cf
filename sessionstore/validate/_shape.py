"""Shape rules: does each message have pi's wire shape (SPEC 1, 2)?

Only the fields a role requires are checked; everything else (usage, timestamps, signatures,
``partialJson``, ``details``, unknown fields) is opaque data and never reported. The scan also
records every tool call and tool result whose id could be read, for the linkage pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sessionstore.validate._finding import Finding
from sessionstore.validate._json_object import find_json_object_problem
from sessionstore.validate._linkage import ToolCallRecord, ToolResultRecord
from sessionstore.validate._path import message_path, render
from sessionstore.validate._read import (
    MISSING,
    NotAMapping,
    SequenceRead,
    Unreadable,
    as_mapping,
    exact_str,
    is_bool,
    quote,
    read_field,
    read_sequence,
    type_name,
)
from sessionstore.validate.codes import ShapeCode

BUILTIN_ROLES: Final = frozenset(
    {"system", "user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)
"""Roles with built-in shape rules: pi 1.6's four provider roles and its coding-agent app roles."""

_BLOCK_TYPES: Final = frozenset({"text", "thinking", "image", "toolCall"})
_MEDIA_BLOCKS: Final = ("image", "text")
_TEXT_BLOCKS: Final = ("text",)
_ASSISTANT_BLOCKS: Final = ("text", "thinking", "toolCall")

_Fields = Mapping[Any, Any]


@dataclass(slots=True)
class ShapeScan:
    """What the shape pass found: findings in message order, and the tool records for linkage."""

    known_roles: frozenset[str]
    findings: list[Finding] = field(default_factory=list)
    calls: list[ToolCallRecord] = field(default_factory=list)
    results: list[ToolResultRecord] = field(default_factory=list)

    def report(self, index: int | None, code: ShapeCode, message: str) -> None:
        self.findings.append(Finding(index, code, message))


def scan_transcript(scan: ShapeScan, value: object) -> None:
    """Check the shape of every message of ``value`` into ``scan``; never raises for any input.

    Findings are appended as they are made, so ``scan`` holds every finding up to a failure.
    """
    read = read_sequence(value)
    if read is None:
        scan.report(
            None, "TRANSCRIPT_NOT_A_LIST", f"messages: expected a list of messages, got {type_name(value)}"
        )
        return
    if type(read) is Unreadable:
        scan.report(None, "UNREADABLE_VALUE", f"messages: {read.explain()}")
        return
    for index, message in enumerate(read.items):
        _scan_message(scan, index, message)
    if read.failure is not None:
        index = len(read.items)
        scan.report(index, "UNREADABLE_VALUE", f"{message_path(index)}: {read.failure.explain()}")


def _scan_message(scan: ShapeScan, index: int, raw: object) -> None:
    path = message_path(index)
    fields = as_mapping(raw)
    if type(fields) is Unreadable:
        scan.report(index, "UNREADABLE_VALUE", f"{path}: {fields.explain()}")
        return
    if type(fields) is NotAMapping:
        scan.report(index, "MESSAGE_NOT_A_MAPPING", f"{path}: expected a message mapping, got {fields.got}")
        return
    role = _read_str(scan, index, path, fields, "role", "INVALID_MESSAGE")
    if role is None:
        return
    rule = _ROLE_RULES.get(role)
    if rule is not None:
        rule(scan, index, path, fields)
    elif role not in scan.known_roles:
        scan.report(
            index,
            "UNKNOWN_ROLE",
            f"{path}.role: unknown role {quote(role)} (neither built in nor registered)",
        )


# ---------------------------------------------------------------------------------------------------
# Field readers: read once, report a problem, return the value or None.


def _present(scan: ShapeScan, index: int, path: str, value: object, code: ShapeCode) -> bool:
    """Report ``value`` when it is missing or unreadable; whether it can be checked further."""
    if value is MISSING:
        scan.report(index, code, f"{path}: required field is missing")
        return False
    if type(value) is Unreadable:
        scan.report(index, "UNREADABLE_VALUE", f"{path}: {value.explain()}")
        return False
    return True


def _read_str(
    scan: ShapeScan, index: int, path: str, fields: _Fields, key: str, code: ShapeCode
) -> str | None:
    value = read_field(fields, key)
    if not _present(scan, index, f"{path}.{key}", value, code):
        return None
    text = exact_str(value)
    if text is None:
        scan.report(index, code, f"{path}.{key}: expected a string, got {type_name(value)}")
    return text


def _read_bool(scan: ShapeScan, index: int, path: str, fields: _Fields, key: str, code: ShapeCode) -> bool:
    """Whether ``fields[key]`` is a bool (problems reported)."""
    value = read_field(fields, key)
    if not _present(scan, index, f"{path}.{key}", value, code):
        return False
    if not is_bool(value):
        scan.report(index, code, f"{path}.{key}: expected a boolean, got {type_name(value)}")
        return False
    return True


def _check_content(
    scan: ShapeScan,
    index: int,
    path: str,
    fields: _Fields,
    *,
    blocks: tuple[str, ...],
    text_allowed: bool,
    code: ShapeCode,
    owner: str,
) -> bool:
    """Check ``content``: a string (when allowed) or a list of blocks of the ``blocks`` types."""
    content_path = f"{path}.content"
    value = read_field(fields, "content")
    if not _present(scan, index, content_path, value, code):
        return False
    if text_allowed and exact_str(value) is not None:
        return True
    read = read_sequence(value)
    if type(read) is Unreadable:
        scan.report(index, "UNREADABLE_VALUE", f"{content_path}: {read.explain()}")
        return False
    if read is None:
        expected = "a string or a list of content blocks" if text_allowed else "a list of content blocks"
        scan.report(index, code, f"{content_path}: expected {expected}, got {type_name(value)}")
        return False
    return _check_blocks(scan, index, content_path, read, blocks, owner)


def _check_blocks(
    scan: ShapeScan, index: int, path: str, read: SequenceRead, allowed: tuple[str, ...], owner: str
) -> bool:
    ok = True
    for block_index, raw in enumerate(read.items):
        ok = _check_block(scan, index, path, block_index, raw, allowed, owner) and ok
    if read.failure is not None:
        scan.report(index, "UNREADABLE_VALUE", f"{path}[{len(read.items)}]: {read.failure.explain()}")
        ok = False
    return ok


def _check_block(
    scan: ShapeScan,
    index: int,
    content_path: str,
    block_index: int,
    raw: object,
    allowed: tuple[str, ...],
    owner: str,
) -> bool:
    path = f"{content_path}[{block_index}]"
    fields = as_mapping(raw)
    if type(fields) is Unreadable:
        scan.report(index, "UNREADABLE_VALUE", f"{path}: {fields.explain()}")
        return False
    if type(fields) is NotAMapping:
        scan.report(
            index, "INVALID_CONTENT_BLOCK", f"{path}: expected a content block mapping, got {fields.got}"
        )
        return False
    kind = _read_str(scan, index, path, fields, "type", "INVALID_CONTENT_BLOCK")
    if kind is None:
        return False
    if kind not in allowed:
        what = f"is not allowed in {owner} content" if kind in _BLOCK_TYPES else "is not a content block type"
        scan.report(
            index,
            "INVALID_CONTENT_BLOCK",
            f"{path}.type: {quote(kind)} {what} (allowed: {', '.join(allowed)})",
        )
        if kind == "toolCall":
            _remember_misplaced_call(scan, index, block_index, fields)
        return False
    if kind == "toolCall":
        return _check_tool_call(scan, index, path, block_index, fields)
    if kind == "image":
        data = _read_str(scan, index, path, fields, "data", "INVALID_CONTENT_BLOCK")
        mime_type = _read_str(scan, index, path, fields, "mimeType", "INVALID_CONTENT_BLOCK")
        return data is not None and mime_type is not None
    return _read_str(scan, index, path, fields, kind, "INVALID_CONTENT_BLOCK") is not None  # text, thinking


def _remember_misplaced_call(scan: ShapeScan, index: int, block_index: int, fields: _Fields) -> None:
    """A toolCall outside assistant content: remember its id (if readable) to avoid cascades."""
    call_id = exact_str(read_field(fields, "id"))
    if call_id is not None:
        scan.calls.append(ToolCallRecord(index, block_index, call_id, None, well_formed=False))


def _check_tool_call(scan: ShapeScan, index: int, path: str, block_index: int, fields: _Fields) -> bool:
    call_id = _read_str(scan, index, path, fields, "id", "INVALID_TOOL_CALL")
    ok = bool(call_id)
    if call_id == "":
        scan.report(index, "INVALID_TOOL_CALL", f"{path}.id: expected a non-empty string, got ''")
    name = _read_str(scan, index, path, fields, "name", "INVALID_TOOL_CALL")
    ok = name is not None and ok
    arguments_path = f"{path}.arguments"
    arguments = read_field(fields, "arguments")
    if not _present(scan, index, arguments_path, arguments, "INVALID_TOOL_CALL"):
        ok = False
    else:
        problem = find_json_object_problem(arguments)
        if problem is not None:
            code: ShapeCode = "UNREADABLE_VALUE" if problem.unreadable else "TOOL_ARGUMENTS_NOT_OBJECT"
            scan.report(index, code, f"{render(arguments_path, problem.node)}: {problem.reason}")
            ok = False
    if call_id is not None:
        scan.calls.append(ToolCallRecord(index, block_index, call_id, name, well_formed=ok))
    return ok


# ---------------------------------------------------------------------------------------------------
# Role rules.


def _system(scan: ShapeScan, index: int, path: str, fields: _Fields) -> None:
    _check_content(
        scan,
        index,
        path,
        fields,
        blocks=_TEXT_BLOCKS,
        text_allowed=True,
        code="INVALID_MESSAGE",
        owner="system",
    )
    sections = read_field(fields, "sections")
    if sections is not MISSING and sections is not None:
        mapping = as_mapping(sections)
        if type(mapping) is Unreadable:
            scan.report(index, "UNREADABLE_VALUE", f"{path}.sections: {mapping.explain()}")
        elif type(mapping) is NotAMapping:
            scan.report(index, "INVALID_MESSAGE", f"{path}.sections: expected an object, got {mapping.got}")
        else:
            for name, text in list(mapping.items()):
                if text is not None and exact_str(text) is None:
                    scan.report(index, "INVALID_MESSAGE", f"{path}.sections[{quote(str(name))}]: expected a"
                                f" string or null, got {type_name(text)}")
    for key in ("toolsAdded", "toolsRemoved"):
        tools = read_field(fields, key)
        if tools is MISSING or tools is None:
            continue
        read = read_sequence(tools)
        if type(read) is Unreadable:
            scan.report(index, "UNREADABLE_VALUE", f"{path}.{key}: {read.explain()}")
            continue
        if read is None:
            scan.report(index, "INVALID_MESSAGE", f"{path}.{key}: expected a list of tools, got {type_name(tools)}")
            continue
        for tool_index, tool in enumerate(read.items):
            tool_fields = as_mapping(tool)
            if type(tool_fields) is Unreadable or type(tool_fields) is NotAMapping:
                scan.report(index, "INVALID_MESSAGE", f"{path}.{key}[{tool_index}]: expected a tool object")
                continue
            _read_str(scan, index, f"{path}.{key}[{tool_index}]", tool_fields, "name", "INVALID_MESSAGE")


def _user(scan: ShapeScan, index: int, path: str, fields: _Fields) -> None:
    _check_content(
        scan,
        index,
        path,
        fields,
        blocks=_MEDIA_BLOCKS,
        text_allowed=True,
        code="INVALID_MESSAGE",
        owner="user",
    )


def _assistant(scan: ShapeScan, index: int, path: str, fields: _Fields) -> None:
    _check_content(
        scan,
        index,
        path,
        fields,
        blocks=_ASSISTANT_BLOCKS,
        text_allowed=False,
        code="INVALID_MESSAGE",
        owner="assistant",
    )


def _tool_result(scan: ShapeScan, index: int, path: str, fields: _Fields) -> None:
    call_id = _read_str(scan, index, path, fields, "toolCallId", "INVALID_TOOL_RESULT")
    tool_name = _read_str(scan, index, path, fields, "toolName", "INVALID_TOOL_RESULT")
    content_ok = _check_content(
        scan,
        index,
        path,
        fields,
        blocks=_MEDIA_BLOCKS,
        text_allowed=False,
        code="INVALID_TOOL_RESULT",
        owner="toolResult",
    )
    is_error_ok = _read_bool(scan, index, path, fields, "isError", "INVALID_TOOL_RESULT")
    if call_id is not None:
        well_formed = tool_name is not None and content_ok and is_error_ok
        scan.results.append(ToolResultRecord(index, call_id, tool_name, well_formed))


def _bash_execution(scan: ShapeScan, index: int, path: str, fields: _Fields) -> None:
    _read_str(scan, index, path, fields, "command", "INVALID_MESSAGE")
    _read_str(scan, index, path, fields, "output", "INVALID_MESSAGE")


def _custom(scan: ShapeScan, index: int, path: str, fields: _Fields) -> None:
    _read_str(scan, index, path, fields, "customType", "INVALID_MESSAGE")
    _check_content(
        scan,
        index,
        path,
        fields,
        blocks=_MEDIA_BLOCKS,
        text_allowed=True,
        code="INVALID_MESSAGE",
        owner="custom",
    )


def _summary(scan: ShapeScan, index: int, path: str, fields: _Fields) -> None:
    _read_str(scan, index, path, fields, "summary", "INVALID_MESSAGE")


_ROLE_RULES: Final[dict[str, Callable[[ShapeScan, int, str, _Fields], None]]] = {
    "system": _system,
    "user": _user,
    "assistant": _assistant,
    "toolResult": _tool_result,
    "bashExecution": _bash_execution,
    "custom": _custom,
    "branchSummary": _summary,
    "compactionSummary": _summary,
}
assert frozenset(_ROLE_RULES) == BUILTIN_ROLES

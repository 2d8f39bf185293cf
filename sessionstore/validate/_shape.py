"""Shape rules: does each message have pi 1.6's wire shape (SPEC 1, 2, 12.2)?

The rules are the TypedDicts of :mod:`sessionstore.models.wire`, read as data
(:data:`~sessionstore.models.wire_shape.MESSAGE_FIELDS`): every key a role's TypedDict declares
must be present when required and hold its JSON type when present; the pydantic models follow the
same declarations, so a message is reported here exactly when ``parse_agent_message`` refuses it
(``tests/test_message_shape_agreement.py``). Opaque keys (signatures, ``responseId``, pi 1.6's
optional provider fields), ``details``, ``partialJson`` and unknown keys are never reported. The
scan also records every tool call and tool result whose id could be read, for the linkage pass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sessionstore.models.roles import BUILTIN_ROLES
from sessionstore.models.wire import ContentBlockDict
from sessionstore.models.wire_shape import MESSAGE_FIELDS, WireField, WireKind, kind_of
from sessionstore.validate._fast import plain_calls
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
    is_mapping,
    is_sequence,
    quote,
    read_field,
    read_sequence,
    type_name,
    unreadable,
)
from sessionstore.validate.codes import ShapeCode

assert frozenset(MESSAGE_FIELDS) == BUILTIN_ROLES  # (roles with built-in shape rules: models.roles.BUILTIN)

_BLOCK_TYPES: Final = frozenset(kind_of(list[ContentBlockDict]).variants)
_TOOL_CALL_KEYS: Final = frozenset({"type", "id", "name", "arguments"})

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
    if not scan_plain_message(scan, index, raw):
        scan_message_fully(scan, index, raw)


def scan_plain_message(scan: ShapeScan, index: int, raw: object) -> bool:
    """The compiled rules' answer for a message of plain JSON data with nothing to report: its tool
    records are recorded and ``True`` returned; ``False`` (nothing recorded) leaves the message to
    :func:`scan_message_fully`. Never raises."""
    calls = plain_calls(raw)
    if calls is None:
        return False
    for block_index, call_id, name in calls:
        scan.calls.append(ToolCallRecord(index, block_index, call_id, name, True))
    if raw["role"] == "toolResult":  # type: ignore[index]
        scan.results.append(ToolResultRecord(index, raw["toolCallId"], raw["toolName"], True))  # type: ignore[index]
    return True


Verdict = tuple[tuple[tuple[int, str, str], ...], tuple[str, str] | None]
"""What checking a message found when the compiled rules accepted it (nothing to report): its tool calls
as (block index, id, name) and, for a toolResult, its (toolCallId, toolName): the records it adds to
the linkage pass, all that its validation contributes."""


def plain_verdict(raw: object) -> Verdict | None:
    """The :data:`Verdict` of a message the compiled rules accept; ``None`` leaves it to
    :func:`scan_message_fully`. Never raises."""
    calls = plain_calls(raw)
    if calls is None:
        return None
    if raw["role"] == "toolResult":  # type: ignore[index]
        return tuple(calls), (raw["toolCallId"], raw["toolName"])  # type: ignore[index]
    return tuple(calls), None


def scan_message_fully(scan: ShapeScan, index: int, raw: object) -> None:
    """The full rules for one message: every problem reported, the readable tool records recorded."""
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
    rule = MESSAGE_FIELDS.get(role)
    if rule is not None:
        _check_message(scan, index, path, fields, role, rule)
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


def _json_type(value: object) -> str | Unreadable | None:
    """The JSON type of ``value`` (``None``: not JSON, e.g. NaN or a set), read by its real type."""
    if value is None:
        return "null"
    if is_bool(value):
        return "boolean"
    if exact_str(value) is not None:
        return "string"
    try:
        kind = type(value)
        if issubclass(kind, int):
            return "number"
        if issubclass(kind, float):
            return "number" if math.isfinite(float.__float__(value)) else None  # type: ignore[arg-type]
    except Exception as exc:
        return unreadable(exc)
    mapping = is_mapping(value)
    if type(mapping) is Unreadable:
        return mapping
    if mapping or (type(value) is not list and type(value) is not tuple and _has_model_dump(value)):
        return "object"
    sequence = is_sequence(value)
    if type(sequence) is Unreadable:
        return sequence
    return "array" if sequence else None


def _has_model_dump(value: object) -> bool:
    try:
        return getattr(type(value), "model_dump", None) is not None
    except Exception:
        return False


# ---------------------------------------------------------------------------------------------------
# The rules: a value against the kind its TypedDict declares.


def _check_fields(
    scan: ShapeScan,
    index: int,
    path: str,
    fields: _Fields,
    declared: tuple[WireField, ...],
    code: ShapeCode,
    *,
    skip: frozenset[str] = frozenset(),
) -> bool:
    """Check every declared, non-opaque key of ``fields`` (those in ``skip`` are checked elsewhere)."""
    ok = True
    for wire_field in declared:
        if not wire_field.opaque and wire_field.key not in skip:
            ok = _check_field(scan, index, path, fields, wire_field, code)[0] and ok
    return ok


def _check_field(
    scan: ShapeScan, index: int, path: str, fields: _Fields, wire_field: WireField, code: ShapeCode
) -> tuple[bool, object]:
    """Whether ``fields[key]`` has its declared shape, and the value read (once)."""
    field_path = f"{path}.{wire_field.key}"
    value = read_field(fields, wire_field.key)
    if value is MISSING and not wire_field.required:
        return True, value
    if not _present(scan, index, field_path, value, code):
        return False, value
    return _check_value(scan, index, field_path, value, wire_field.kind, code), value


def _check_value(scan: ShapeScan, index: int, path: str, value: object, kind: WireKind, code: ShapeCode) -> bool:
    if not kind.types:
        return True
    found = _json_type(value)
    if type(found) is Unreadable:
        scan.report(index, "UNREADABLE_VALUE", f"{path}: {found.explain()}")
        return False
    if found not in kind.types:
        scan.report(index, code, f"{path}: expected {kind.describe()}, got {type_name(value)}")
        return False
    if found == "string" and kind.literals and exact_str(value) not in kind.literals:
        allowed = ", ".join(quote(v) for v in sorted(kind.literals))
        scan.report(index, code, f"{path}: expected one of {allowed}, got {quote(exact_str(value) or '')}")
        return False
    if found == "object" and (kind.fields or kind.values is not None):
        return _check_object(scan, index, path, value, kind, code)
    if found == "array" and (kind.items is not None or kind.variants):
        read = read_sequence(value)
        if type(read) is Unreadable:
            scan.report(index, "UNREADABLE_VALUE", f"{path}: {read.explain()}")
            return False
        if read is None:  # pragma: no cover - _json_type said it is a sequence
            return False
        if kind.variants:
            return _check_blocks(scan, index, path, read, kind.variants, path.rsplit(".", 1)[0])
        assert kind.items is not None
        ok = True
        for item_index, item in enumerate(read.items):
            ok = _check_value(scan, index, f"{path}[{item_index}]", item, kind.items, code) and ok
        if read.failure is not None:
            scan.report(index, "UNREADABLE_VALUE", f"{path}[{len(read.items)}]: {read.failure.explain()}")
            ok = False
        return ok
    return True


def _check_object(scan: ShapeScan, index: int, path: str, value: object, kind: WireKind, code: ShapeCode) -> bool:
    mapping = as_mapping(value)
    if type(mapping) is Unreadable:
        scan.report(index, "UNREADABLE_VALUE", f"{path}: {mapping.explain()}")
        return False
    if type(mapping) is NotAMapping:
        scan.report(index, code, f"{path}: expected an object, got {mapping.got}")
        return False
    ok = _check_fields(scan, index, path, mapping, kind.fields, code) if kind.fields else True
    if kind.values is not None:
        try:
            items = list(mapping.items())
        except Exception as exc:
            scan.report(index, "UNREADABLE_VALUE", f"{path}: {unreadable(exc).explain()}")
            return False
        for name, item in items:
            item_path = f"{path}[{quote(exact_str(name) or type_name(name))}]"
            ok = _check_value(scan, index, item_path, item, kind.values, code) and ok
    return ok


def _check_message(
    scan: ShapeScan, index: int, path: str, fields: _Fields, role: str, declared: tuple[WireField, ...]
) -> None:
    """Check every declared key in declaration order; a toolResult is also recorded for linkage."""
    code: ShapeCode = "INVALID_TOOL_RESULT" if role == "toolResult" else "INVALID_MESSAGE"
    checked: dict[str, tuple[bool, object]] = {}
    for wire_field in declared:
        if wire_field.key == "role" or wire_field.opaque:
            continue
        if wire_field.key == "content":
            checked["content"] = (_check_content(scan, index, path, fields, wire_field.kind, code, role), None)
        else:
            checked[wire_field.key] = _check_field(scan, index, path, fields, wire_field, code)
    if role == "toolResult":
        call_ok, call_id = checked["toolCallId"]
        name_ok, tool_name = checked["toolName"]
        call_id_text = exact_str(call_id) if call_ok else None
        if call_id_text is not None:
            well_formed = name_ok and checked["content"][0] and checked["isError"][0]
            name = exact_str(tool_name) if name_ok else None
            scan.results.append(ToolResultRecord(index, call_id_text, name, well_formed))


def _check_content(
    scan: ShapeScan, index: int, path: str, fields: _Fields, kind: WireKind, code: ShapeCode, owner: str
) -> bool:
    """Check ``content``: a string (when allowed) or a list of blocks of the allowed types."""
    content_path = f"{path}.content"
    value = read_field(fields, "content")
    if not _present(scan, index, content_path, value, code):
        return False
    if "string" in kind.types and exact_str(value) is not None:
        return True
    read = read_sequence(value)
    if type(read) is Unreadable:
        scan.report(index, "UNREADABLE_VALUE", f"{content_path}: {read.explain()}")
        return False
    if read is None:
        scan.report(index, code, f"{content_path}: expected {kind.describe()}, got {type_name(value)}")
        return False
    return _check_blocks(scan, index, content_path, read, kind.variants, owner)


def _check_blocks(
    scan: ShapeScan,
    index: int,
    path: str,
    read: SequenceRead,
    allowed: Mapping[str, tuple[WireField, ...]],
    owner: str,
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
    allowed: Mapping[str, tuple[WireField, ...]],
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
    declared = allowed.get(kind)
    if declared is None:
        what = f"is not allowed in {owner} content" if kind in _BLOCK_TYPES else "is not a content block type"
        scan.report(
            index,
            "INVALID_CONTENT_BLOCK",
            f"{path}.type: {quote(kind)} {what} (allowed: {', '.join(sorted(allowed))})",
        )
        if kind == "toolCall":
            _remember_misplaced_call(scan, index, block_index, fields)
        return False
    if kind == "toolCall":
        return _check_tool_call(scan, index, path, block_index, fields, declared)
    return _check_fields(scan, index, path, fields, declared, "INVALID_CONTENT_BLOCK", skip=frozenset({"type"}))


def _remember_misplaced_call(scan: ShapeScan, index: int, block_index: int, fields: _Fields) -> None:
    """A toolCall outside assistant content: remember its id (if readable) to avoid cascades."""
    call_id = exact_str(read_field(fields, "id"))
    if call_id is not None:
        scan.calls.append(ToolCallRecord(index, block_index, call_id, None, well_formed=False))


def _check_tool_call(
    scan: ShapeScan, index: int, path: str, block_index: int, fields: _Fields, declared: tuple[WireField, ...]
) -> bool:
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
    ok = _check_fields(scan, index, path, fields, declared, "INVALID_TOOL_CALL", skip=_TOOL_CALL_KEYS) and ok
    if call_id is not None:
        scan.calls.append(ToolCallRecord(index, block_index, call_id, name, well_formed=ok))
    return ok

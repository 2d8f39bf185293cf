"""Parsing one transport record (untrusted) into a typed record of the transport vocabulary.

Transport records are JSON objects discriminated by ``type``::

    response_start  {responseId: non-empty str, role: "assistant"}
    text_delta      {text: str}
    tool_call       {id: non-empty str, name: non-empty str, arguments: JSON object}
    response_end    {responseId: non-empty str, stopReason: "stop" | "tool_call" | "length",
                     usage: {inputTokens | input_tokens: int >= 0, outputTokens | output_tokens: int >= 0}}
    transport_error {code: non-empty str, message: str}

:func:`parse_record` checks one record's own shape only (ordering is the assembler's job):

- a value that is not plain JSON data, not an object, or without a string ``type``
  -> ``PROVIDER_MALFORMED_RECORD``;
- an unknown ``type`` -> ``PROVIDER_UNKNOWN_RECORD``;
- a known ``type`` with a missing or ill-typed field -> ``PROVIDER_MALFORMED_RECORD``.

Fields not listed above are ignored. Stop reasons are normalized here (``tool_call`` ->
``toolCall``) and usage aliases are resolved here, so nothing past this module sees a transport name.
Usage counts are read per count: each must be given by exactly one of its two aliases (both present
is malformed even if one is ``null``), as an ``int`` (not ``bool``) in ``0 .. 2**53 - 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, TypeAlias

from sessionstore.provider.errors import FixtureProviderError, ProviderErrorCode
from sessionstore.provider.protocol import StopReason, ToolCall, Usage
from sessionstore.provider.snapshot import JsonObject, NotPlainJsonError, freeze_object, snapshot_json

MAX_TOKEN_COUNT: Final = 2**53 - 1
"""Largest usage count accepted (the largest integer every JSON reader represents exactly)."""

_STOP_REASONS: Final[dict[str, StopReason]] = {"stop": "stop", "tool_call": "toolCall", "length": "length"}


@dataclass(frozen=True, slots=True)
class ResponseStartRecord:
    response_id: str


@dataclass(frozen=True, slots=True)
class TextDeltaRecord:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    call: ToolCall


@dataclass(frozen=True, slots=True)
class ResponseEndRecord:
    response_id: str
    stop_reason: StopReason
    usage: Usage


@dataclass(frozen=True, slots=True)
class TransportErrorRecord:
    code: str
    message: str


TransportRecord: TypeAlias = (
    ResponseStartRecord | TextDeltaRecord | ToolCallRecord | ResponseEndRecord | TransportErrorRecord
)


def parse_record(raw: object, *, index: int) -> TransportRecord:
    """Validate one untrusted record; ``index`` is its 0-based position, used in errors."""
    fields = _Fields(_snapshot_record(raw, index), index)
    kind = fields.record.get("type")
    if not isinstance(kind, str):
        raise fields.malformed("a record needs a string `type`")
    if kind == "response_start":
        if fields.record.get("role") != "assistant":
            raise fields.malformed("response_start.role must be 'assistant'")
        return ResponseStartRecord(response_id=fields.non_empty_str("responseId"))
    if kind == "text_delta":
        text = fields.record.get("text")
        if not isinstance(text, str):
            raise fields.malformed("text_delta.text must be a string")
        return TextDeltaRecord(text=text)
    if kind == "tool_call":
        call_id = fields.non_empty_str("id")
        name = fields.non_empty_str("name")
        arguments = fields.record.get("arguments")
        if not isinstance(arguments, dict):
            raise fields.malformed("tool_call.arguments must be a JSON object")
        return ToolCallRecord(ToolCall(id=call_id, name=name, arguments=freeze_object(arguments)))
    if kind == "response_end":
        response_id = fields.non_empty_str("responseId")
        transport_reason = fields.record.get("stopReason")
        stop_reason = _STOP_REASONS.get(transport_reason) if isinstance(transport_reason, str) else None
        if stop_reason is None:
            raise fields.malformed(f"response_end.stopReason must be one of {sorted(_STOP_REASONS)}")
        return ResponseEndRecord(response_id=response_id, stop_reason=stop_reason, usage=fields.usage())
    if kind == "transport_error":
        code = fields.non_empty_str("code")
        message = fields.record.get("message")
        if not isinstance(message, str):
            raise fields.malformed("transport_error.message must be a string")
        return TransportErrorRecord(code=code, message=message)
    raise FixtureProviderError("PROVIDER_UNKNOWN_RECORD", f"unknown record type {kind!r}", record_index=index)


def _snapshot_record(raw: object, index: int) -> JsonObject:
    try:
        record = snapshot_json(raw, path="$")
    except NotPlainJsonError as exc:
        raise _error("PROVIDER_MALFORMED_RECORD", f"not plain JSON data: {exc}", index) from None
    if not isinstance(record, dict):
        raise _error("PROVIDER_MALFORMED_RECORD", "a record must be a JSON object", index)
    return record


class _Fields:
    """Typed reads of one snapshotted record, raising ``PROVIDER_MALFORMED_RECORD``."""

    def __init__(self, record: JsonObject, index: int) -> None:
        self.record = record
        self.index = index

    def malformed(self, message: str) -> FixtureProviderError:
        return _error("PROVIDER_MALFORMED_RECORD", message, self.index)

    def non_empty_str(self, key: str) -> str:
        value = self.record.get(key)
        if not isinstance(value, str) or not value:
            raise self.malformed(f"{self.record['type']}.{key} must be a non-empty string")
        return value

    def usage(self) -> Usage:
        usage = self.record.get("usage")
        if not isinstance(usage, dict):
            raise self.malformed("response_end.usage must be a JSON object")
        return Usage(
            input_tokens=self._count(usage, "inputTokens", "input_tokens"),
            output_tokens=self._count(usage, "outputTokens", "output_tokens"),
        )

    def _count(self, usage: JsonObject, camel: str, snake: str) -> int:
        # Presence is judged separately from value: {camel: null, snake: 1} names the count twice.
        present = [alias for alias in (camel, snake) if alias in usage]
        if len(present) == 2:
            raise self.malformed(f"usage gives both {camel} and {snake}")
        if not present:
            raise self.malformed(f"usage needs {camel} or {snake}")
        value = usage[present[0]]
        if type(value) is not int or not 0 <= value <= MAX_TOKEN_COUNT:
            raise self.malformed(f"usage.{present[0]} must be an integer in 0..{MAX_TOKEN_COUNT}")
        return value


def _error(code: ProviderErrorCode, message: str, index: int) -> FixtureProviderError:
    return FixtureProviderError(code, message, record_index=index)

"""The per-response state machine: ordered transport records in, chunks and one final response out.

Rules, checked as each record arrives (so chunks before a bad record are still delivered):

- ``transport_error`` (before the end) fails the response with ``PROVIDER_TRANSPORT_ERROR``;
- ``response_start`` comes exactly once (``PROVIDER_DUPLICATE_START``), before any text, tool or end
  record (``PROVIDER_MISSING_START``);
- each ``text_delta`` appends its own text block and emits a ``textDelta`` chunk;
- each ``tool_call`` appends a tool-call block and emits a ``toolCall`` chunk; a tool-call id may not
  repeat within a response (``PROVIDER_MALFORMED_RECORD``);
- ``response_end`` names the start's ``responseId`` (``PROVIDER_RESPONSE_ID_MISMATCH``) and a stop
  reason that agrees with the tool calls: ``toolCall`` needs at least one, ``stop`` allows none
  (``PROVIDER_STOP_REASON_MISMATCH``); ``length`` allows either;
- after ``response_end``, another ``response_end`` is ``PROVIDER_DUPLICATE_TERMINAL`` and any other
  record is ``PROVIDER_INVALID_TERMINAL``;
- :meth:`ResponseAssembler.finish` without a ``response_end`` is ``PROVIDER_MISSING_TERMINAL``.
"""

from __future__ import annotations

from typing import assert_never

from sessionstore.provider.errors import FixtureProviderError, ProviderErrorCode
from sessionstore.provider.protocol import (
    AssistantResponse,
    ContentBlock,
    ProviderChunk,
    TextBlock,
    TextDelta,
)
from sessionstore.provider.records import (
    ResponseEndRecord,
    ResponseStartRecord,
    TextDeltaRecord,
    ToolCallRecord,
    TransportErrorRecord,
    TransportRecord,
)


class ResponseAssembler:
    """Accumulates one response. Not reusable: one instance per call."""

    def __init__(self) -> None:
        self._response_id: str | None = None
        self._content: list[ContentBlock] = []
        self._tool_call_ids: set[str] = set()
        self._end: ResponseEndRecord | None = None

    def feed(self, record: TransportRecord, *, index: int) -> ProviderChunk | None:
        """Apply one record; return the chunk it emits, if any, or raise ``FixtureProviderError``."""
        if self._end is not None:
            if isinstance(record, ResponseEndRecord):
                raise _error("PROVIDER_DUPLICATE_TERMINAL", "a second response_end arrived", index)
            raise _error("PROVIDER_INVALID_TERMINAL", "a record arrived after response_end", index)
        match record:
            case TransportErrorRecord(code=provider_code, message=message):
                raise FixtureProviderError(
                    "PROVIDER_TRANSPORT_ERROR", message, provider_code=provider_code, record_index=index
                )
            case ResponseStartRecord(response_id=response_id):
                if self._response_id is not None:
                    raise _error("PROVIDER_DUPLICATE_START", "a second response_start arrived", index)
                self._response_id = response_id
                return None
            case TextDeltaRecord(text=text):
                self._require_start(index)
                self._content.append(TextBlock(text))
                return TextDelta(text)
            case ToolCallRecord(call=call):
                self._require_start(index)
                if call.id in self._tool_call_ids:
                    raise _error("PROVIDER_MALFORMED_RECORD", f"tool-call id {call.id!r} repeats", index)
                self._tool_call_ids.add(call.id)
                self._content.append(call)
                return call
            case ResponseEndRecord():
                self._check_end(record, self._require_start(index), index)
                self._end = record
                return None
            case _:
                assert_never(record)

    def _require_start(self, index: int) -> str:
        if self._response_id is None:
            raise _error("PROVIDER_MISSING_START", "a record arrived before response_start", index)
        return self._response_id

    def _check_end(self, end: ResponseEndRecord, response_id: str, index: int) -> None:
        if end.response_id != response_id:
            raise _error(
                "PROVIDER_RESPONSE_ID_MISMATCH",
                f"response_end names {end.response_id!r} but response_start named {response_id!r}",
                index,
            )
        if end.stop_reason == "toolCall" and not self._tool_call_ids:
            raise _error("PROVIDER_STOP_REASON_MISMATCH", "stop reason tool_call without a tool call", index)
        if end.stop_reason == "stop" and self._tool_call_ids:
            raise _error("PROVIDER_STOP_REASON_MISMATCH", "stop reason stop after tool calls", index)

    def finish(self) -> AssistantResponse:
        """Return the final response after the last record (``PROVIDER_MISSING_TERMINAL`` if unended)."""
        if self._end is None or self._response_id is None:
            raise FixtureProviderError("PROVIDER_MISSING_TERMINAL", "the records ended without response_end")
        return AssistantResponse(
            id=f"message-{self._response_id}",
            content=tuple(self._content),
            stop_reason=self._end.stop_reason,
            usage=self._end.usage,
            response_id=self._response_id,
        )


def _error(code: ProviderErrorCode, message: str, index: int) -> FixtureProviderError:
    return FixtureProviderError(code, message, record_index=index)

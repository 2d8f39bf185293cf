"""The one error type of the fixture provider adapter and its stable codes.

Every failure the adapter reports is a :class:`FixtureProviderError` whose ``code`` is one of
:data:`ProviderErrorCode`. Codes are a public contract: they are never renamed or reused, and
each one is documented in :data:`PROVIDER_ERROR_CODES` (a test keeps the two in step).
"""

from __future__ import annotations

from typing import Any, Literal

from sessionstore.errors import SessionStoreError

ProviderErrorCode = Literal[
    "PROVIDER_INVALID_FIXTURE",
    "PROVIDER_EXHAUSTED",
    "PROVIDER_ABORTED",
    "PROVIDER_UNKNOWN_RECORD",
    "PROVIDER_MALFORMED_RECORD",
    "PROVIDER_MISSING_START",
    "PROVIDER_DUPLICATE_START",
    "PROVIDER_TRANSPORT_ERROR",
    "PROVIDER_RESPONSE_ID_MISMATCH",
    "PROVIDER_STOP_REASON_MISMATCH",
    "PROVIDER_MISSING_TERMINAL",
    "PROVIDER_DUPLICATE_TERMINAL",
    "PROVIDER_INVALID_TERMINAL",
]

PROVIDER_ERROR_CODES: dict[ProviderErrorCode, str] = {
    "PROVIDER_INVALID_FIXTURE": (
        "The fixture is not schemaVersion 1 plain JSON data, or an async record source failed, was reused, or raised."
    ),
    "PROVIDER_EXHAUSTED": "The call found the finite response queue empty.",
    "PROVIDER_ABORTED": "The abort signal was set before or during the call (or its consumer was cancelled).",
    "PROVIDER_UNKNOWN_RECORD": "A transport record has a `type` the adapter does not know.",
    "PROVIDER_MALFORMED_RECORD": "A transport record of a known type has missing or ill-typed fields.",
    "PROVIDER_MISSING_START": "A text, tool or end record arrived before `response_start`.",
    "PROVIDER_DUPLICATE_START": "A second `response_start` arrived in one response.",
    "PROVIDER_TRANSPORT_ERROR": "The fixture replayed a `transport_error` record.",
    "PROVIDER_RESPONSE_ID_MISMATCH": "`response_end.responseId` differs from the `response_start` one.",
    "PROVIDER_STOP_REASON_MISMATCH": (
        "The stop reason disagrees with the tool calls (`tool_call` without calls, `stop` with calls)."
    ),
    "PROVIDER_MISSING_TERMINAL": "The records ended without a `response_end`.",
    "PROVIDER_DUPLICATE_TERMINAL": "A second `response_end` arrived after the first.",
    "PROVIDER_INVALID_TERMINAL": "A non-terminal record arrived after `response_end`.",
}


class FixtureProviderError(SessionStoreError):
    """A typed failure of the fixture provider adapter (a :class:`~sessionstore.errors.SessionStoreError`).

    ``code`` is always a documented :data:`ProviderErrorCode`; ``message`` is prose for people and
    may change. ``provider_code`` carries the transport's own code for ``PROVIDER_TRANSPORT_ERROR``
    (``None`` otherwise); ``record_index`` is the 0-based index of the offending record within its
    response when one record is to blame.
    """

    code: ProviderErrorCode
    message: str
    provider_code: str | None
    record_index: int | None

    def __init__(
        self,
        code: ProviderErrorCode,
        message: str,
        *,
        provider_code: str | None = None,
        record_index: int | None = None,
    ) -> None:
        if code not in PROVIDER_ERROR_CODES:
            raise ValueError(f"undocumented provider error code: {code!r}")
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.provider_code = provider_code
        self.record_index = record_index

    def __str__(self) -> str:
        where = "" if self.record_index is None else f" (record {self.record_index})"
        return f"{self.code}{where}: {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only fields do not survive Exception's default pickling (which replays ``args``).
        return (
            _rebuild_error,
            (self.code, self.message, self.provider_code, self.record_index),
        )


def _rebuild_error(
    code: ProviderErrorCode, message: str, provider_code: str | None, record_index: int | None
) -> FixtureProviderError:
    return FixtureProviderError(code, message, provider_code=provider_code, record_index=record_index)

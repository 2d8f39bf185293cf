"""``FixtureProviderAdapter``: replays a versioned fixture as a model provider, with no network."""

from __future__ import annotations

from collections import deque
from typing import assert_never

from sessionstore.provider.errors import FixtureProviderError, ProviderErrorCode
from sessionstore.provider.fixture import AsyncRecords, ResponseScript, SnapshotRecords, parse_fixture
from sessionstore.provider.sources import AbortSignal, ArrayRecordSource, RecordSource, open_async_source
from sessionstore.provider.stream import ProviderStream


class FixtureProviderAdapter:
    """A provider that answers each call with the next response of a fixture.

    Construction validates and snapshots the fixture (see :mod:`sessionstore.provider.fixture`);
    a bad fixture raises ``FixtureProviderError("PROVIDER_INVALID_FIXTURE")`` right away.

    :meth:`stream` never raises: problems reach the consumers of the returned
    :class:`ProviderStream`. Every call is recorded in :attr:`request_ids` (and so counted in
    :attr:`call_count`), including calls that fail. Responses are taken from the queue in order,
    one per call, when the call is made:

    - abort signal already set: ``PROVIDER_ABORTED`` and the response stays queued for the next call;
    - queue empty: ``PROVIDER_EXHAUSTED``;
    - otherwise the call owns that response (a failure later on does not put it back).

    The request id only labels the call: a fixture does not look at the transcript to choose a response.
    """

    def __init__(self, fixture: object) -> None:
        self._queue: deque[ResponseScript] = deque(parse_fixture(fixture))
        self._request_ids: list[str] = []

    @property
    def request_ids(self) -> list[str]:
        """Request ids of every call so far, in call order (a copy)."""
        return list(self._request_ids)

    @property
    def call_count(self) -> int:
        """Number of calls so far, failed and aborted ones included."""
        return len(self._request_ids)

    @property
    def pending_response_count(self) -> int:
        """Responses still queued."""
        return len(self._queue)

    def stream(self, request_id: str, *, abort: AbortSignal | None = None) -> ProviderStream:
        """Start a call; the result is an async iterator of chunks and awaitable for the final response."""
        self._request_ids.append(request_id)
        if abort is not None and abort.is_set():
            return _failed(request_id, "PROVIDER_ABORTED", "aborted before the call; its response stays queued")
        if not self._queue:
            return _failed(request_id, "PROVIDER_EXHAUSTED", f"no response left for call {len(self._request_ids)}")
        script = self._queue.popleft()
        try:
            source = _open(script)
        except FixtureProviderError as error:
            return ProviderStream(request_id, failure=error)
        return ProviderStream(request_id, source=source, abort=abort)


def _open(script: ResponseScript) -> RecordSource:
    match script:
        case SnapshotRecords(records=records):
            return ArrayRecordSource(records)
        case AsyncRecords(iterable=iterable):
            return open_async_source(iterable)
        case _:
            assert_never(script)


def _failed(request_id: str, code: ProviderErrorCode, message: str) -> ProviderStream:
    return ProviderStream(request_id, failure=FixtureProviderError(code, message))

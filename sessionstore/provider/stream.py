"""One call's result: an async iterator of chunks that is also awaitable for the final response.

The records of a response are consumed once, on demand, by whichever consumer needs more: iterating
pulls records until the next chunk, awaiting pulls them all. Both consumers share that single
consumption (under a lock), so in any order and any number of times:

- iteration yields every chunk once, in record order, then ends, or raises the stream's error after
  the chunks that preceded it (iterating after awaiting replays the buffered chunks);
- awaiting returns the same :class:`AssistantResponse`, or raises the same ``FixtureProviderError``.

The abort signal is checked before every record, and a pending async record is raced against it.
Once the outcome is settled, the signal no longer matters. When a consumer task is cancelled while
the stream is pulling, the stream settles as ``PROVIDER_ABORTED`` (for every consumer) and the
cancellation propagates, as cancelling the awaiter of a future cancels the future. On every early
stop the record source is closed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

from sessionstore.provider.assembler import ResponseAssembler
from sessionstore.provider.errors import FixtureProviderError
from sessionstore.provider.protocol import AssistantResponse, ProviderChunk
from sessionstore.provider.records import parse_record
from sessionstore.provider.sources import NO_MORE_RECORDS, AbortSignal, RecordSource


class ProviderStream:
    """The value returned by ``FixtureProviderAdapter.stream``; see the module docstring for its contract."""

    def __init__(
        self,
        request_id: str,
        *,
        source: RecordSource | None = None,
        abort: AbortSignal | None = None,
        failure: FixtureProviderError | None = None,
    ) -> None:
        if (source is None) == (failure is None):
            raise ValueError("a stream needs exactly one of `source` and `failure`")
        self._request_id = request_id
        self._source = source
        self._abort = abort
        self._assembler = ResponseAssembler()
        self._next_index = 0
        self._chunks: list[ProviderChunk] = []
        self._cursor = 0
        self._response: AssistantResponse | None = None
        self._error = failure
        self._lock = asyncio.Lock()

    @property
    def request_id(self) -> str:
        return self._request_id

    @property
    def done(self) -> bool:
        """Whether the outcome (final response or error) is settled."""
        return self._response is not None or self._error is not None

    def __aiter__(self) -> ProviderStream:
        return self

    async def __anext__(self) -> ProviderChunk:
        if self._cursor >= len(self._chunks):
            await self._pull(until_chunk=self._cursor)
        if self._cursor < len(self._chunks):
            chunk = self._chunks[self._cursor]
            self._cursor += 1
            return chunk
        if self._error is not None:
            raise self._error
        raise StopAsyncIteration

    def __await__(self) -> Generator[Any, None, AssistantResponse]:
        return self.result().__await__()

    async def result(self) -> AssistantResponse:
        """The final response (``await stream`` is the same); raises the stream's error instead."""
        await self._pull(until_chunk=None)
        if self._error is not None:
            raise self._error
        assert self._response is not None
        return self._response

    async def _pull(self, *, until_chunk: int | None) -> None:
        """Consume records until chunk ``until_chunk`` exists (``None``: all) or the outcome settles."""
        async with self._lock:
            try:
                while not self.done and (until_chunk is None or len(self._chunks) <= until_chunk):
                    await self._consume_one()
            except FixtureProviderError as error:
                await self._fail(error)
            except asyncio.CancelledError:
                await self._fail(FixtureProviderError("PROVIDER_ABORTED", "the consuming task was cancelled"))
                raise

    async def _consume_one(self) -> None:
        assert self._source is not None  # a stream without a source is settled from the start
        if self._abort is not None and self._abort.is_set():
            raise FixtureProviderError("PROVIDER_ABORTED", "aborted during the stream")
        raw = await self._source.next_record(self._abort)
        if raw is NO_MORE_RECORDS:
            self._response = self._assembler.finish()
            return
        index = self._next_index
        self._next_index += 1
        chunk = self._assembler.feed(parse_record(raw, index=index), index=index)
        if chunk is not None:
            self._chunks.append(chunk)

    async def _fail(self, error: FixtureProviderError) -> None:
        self._error = error
        if self._source is not None:
            await self._source.aclose()

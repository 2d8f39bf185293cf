"""Where one response's records come from: a snapshotted array, or an async iterator taken as-is.

A source hands out untrusted records one at a time (:meth:`next_record` returns
:data:`NO_MORE_RECORDS` once exhausted) and is closed with :meth:`aclose` when the stream stops
early. Contracts of :class:`AsyncRecordSource`, the one that touches foreign code:

- the iterator is claimed once (:func:`open_async_source`); an iterator already claimed by another
  response, of this or any adapter, is ``PROVIDER_INVALID_FIXTURE`` (for iterators that can be
  weakly referenced, which includes every async generator);
- each ``__anext__`` runs in its own task raced against the abort signal's ``wait()``
  (``asyncio.wait(..., FIRST_COMPLETED)``); the loser is cancelled and awaited, so no task or
  coroutine is left behind. If the abort wins, whatever the source produces meanwhile is ignored and
  ``PROVIDER_ABORTED`` is raised. A source that refuses to be cancelled delays the abort;
- anything the source raises, including a ``FixtureProviderError`` of its own, becomes
  ``PROVIDER_INVALID_FIXTURE`` (with the original as ``__cause__``); a ``StopAsyncIteration`` ends
  the records and its payload, if any, is ignored;
- :meth:`AsyncRecordSource.aclose` calls the iterator's ``aclose()`` at most once and only if it was
  not exhausted; errors from that cleanup are suppressed so they never mask the failure that stopped
  the stream.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterable, AsyncIterator, Awaitable
from contextlib import suppress
from typing import Any, Final, Protocol

from sessionstore.provider.errors import FixtureProviderError
from sessionstore.provider.snapshot import JsonValue

NO_MORE_RECORDS: Final = object()
"""Returned by ``next_record`` when the source is exhausted."""


class AbortSignal(Protocol):
    """What ``abort=`` accepts: an :class:`asyncio.Event`, or any object with ``is_set()`` and ``wait()``."""

    def is_set(self) -> bool: ...

    def wait(self) -> Awaitable[object]: ...


class RecordSource(Protocol):
    async def next_record(self, abort: AbortSignal | None) -> object:
        """Return the next untrusted record, or :data:`NO_MORE_RECORDS`."""
        ...

    async def aclose(self) -> None:
        """Release the source after an early stop; a no-op once exhausted or closed."""
        ...


class ArrayRecordSource:
    """Records snapshotted at construction; delivered synchronously, in order."""

    def __init__(self, records: tuple[JsonValue, ...]) -> None:
        self._records = records
        self._position = 0

    async def next_record(self, abort: AbortSignal | None) -> object:
        if self._position >= len(self._records):
            return NO_MORE_RECORDS
        record = self._records[self._position]
        self._position += 1
        return record

    async def aclose(self) -> None:
        self._position = len(self._records)


_claimed_iterators: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def open_async_source(records: AsyncIterable[object]) -> AsyncRecordSource:
    """Take ownership of ``records``' iterator, or raise ``PROVIDER_INVALID_FIXTURE``."""
    try:
        iterator = aiter(records)
    except Exception as exc:
        raise FixtureProviderError("PROVIDER_INVALID_FIXTURE", "the async record source could not be opened") from exc
    if _claimed_iterators.get(id(iterator)) is iterator:
        raise FixtureProviderError(
            "PROVIDER_INVALID_FIXTURE", "the async record iterator was already claimed by another response"
        )
    with suppress(TypeError):  # not weakly referenceable: cannot be tracked, so it is simply taken
        _claimed_iterators[id(iterator)] = iterator
    return AsyncRecordSource(iterator)


class AsyncRecordSource:
    """An async iterator of untrusted records, consumed once, each step raced against the abort."""

    def __init__(self, iterator: AsyncIterator[object]) -> None:
        self._iterator = iterator
        self._finished = False

    async def next_record(self, abort: AbortSignal | None) -> object:
        if self._finished:
            return NO_MORE_RECORDS
        pull = asyncio.create_task(_pull(self._iterator))
        contenders = {pull}
        aborted: asyncio.Task[None] | None = None
        if abort is not None:
            aborted = asyncio.create_task(_wait_for(abort))
            contenders.add(aborted)
        try:
            finished, _ = await asyncio.wait(contenders, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # Runs on cancellation of the consumer too: nothing is left pending.
            await _cancel_and_settle(contenders)
        if aborted in finished:
            raise FixtureProviderError("PROVIDER_ABORTED", "aborted while waiting for the next record")
        if pull.cancelled():
            raise FixtureProviderError("PROVIDER_INVALID_FIXTURE", "the async record source was cancelled")
        failure = pull.exception()
        if isinstance(failure, StopAsyncIteration):
            self._finished = True
            return NO_MORE_RECORDS
        if failure is not None:
            raise FixtureProviderError("PROVIDER_INVALID_FIXTURE", "the async record source failed") from failure
        return pull.result()

    async def aclose(self) -> None:
        if self._finished:
            return
        self._finished = True
        with suppress(Exception):
            close = getattr(self._iterator, "aclose", None)
            if close is not None:
                await close()


async def _pull(iterator: AsyncIterator[object]) -> object:
    return await anext(iterator)


async def _wait_for(abort: AbortSignal) -> None:
    await abort.wait()


async def _cancel_and_settle(tasks: set[asyncio.Task[Any]]) -> None:
    """Cancel the unfinished tasks, wait for all of them, and mark every outcome as retrieved."""
    for task in tasks:
        if not task.done():
            task.cancel()
    await asyncio.wait(tasks)
    for task in tasks:
        if not task.cancelled():
            task.exception()

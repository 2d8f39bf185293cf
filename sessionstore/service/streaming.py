"""A response body written by a blocking writer (the store's ``write_*``/``export_*`` into a binary file)
and sent while it is written.

The writer runs in a worker thread and writes into a :class:`Pipe`: its bytes go out in chunks of
:data:`CHUNK` through a buffer of :data:`BUFFERED` chunks, and a write blocks while that buffer is full, so
memory stays bounded whatever the client's speed and a slow client slows the writer (which holds its read
transaction, one snapshot, until the body ends). The response waits for the first chunk, or the writer's
end, before it sends its status: an error raised before the first byte (a missing session) is still the
route's problem response. A client that goes away makes the writer's next write raise :class:`ClientGone`,
so it stops and its transaction ends. An error after the first byte ends the connection without the final
chunk: the client sees a cut body, never one that looks complete.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import IO, cast

import anyio
from anyio import to_thread
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from sessionstore.service import memory

log = logging.getLogger("sessionstore.service")

CHUNK = 64 * 1024
"""Bytes of one body chunk (a larger write is split, smaller ones are gathered)."""
BUFFERED = 4
"""Chunks waiting between the writer and the socket before the writer blocks."""
WRITERS = 8
"""Bodies written at once (each holds a worker thread and a database connection while its client reads;
below the engine's pool of connections, so slow readers never starve the other routes); more wait."""

TRIM_AFTER_BYTES = 1 << 20
"""A body this large or larger gives the memory its writer freed back to the system when it ends
(:func:`sessionstore.service.memory.give_back`)."""

_writers: anyio.CapacityLimiter | None = None


def _limiter() -> anyio.CapacityLimiter:
    global _writers
    if _writers is None:  # (made on the event loop: a limiter belongs to the loop that made it)
        _writers = anyio.CapacityLimiter(WRITERS)
    return _writers


class ClientGone(Exception):
    """Raised by :meth:`Pipe.write` once the client is gone: the writer unwinds and ends its transaction."""


class Chunks:
    """The chunks between the writer's thread and the event loop: at most :data:`BUFFERED` wait, and
    :meth:`put` blocks the writer while they do. A put into a buffer with room returns at once (it does not
    wait for the loop to take the chunk); the loop is woken only when the buffer turns non-empty or the
    writer ends. After :meth:`close` (the client is gone) a put raises :class:`ClientGone`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, buffered: int = BUFFERED) -> None:
        self._loop = loop
        self._buffered = buffered
        self._lock = threading.Condition()
        self._items: deque[bytes] = deque()
        self._ended = False
        self._closed = False
        self._ready = asyncio.Event()

    # the writer's side (its thread)
    def put(self, chunk: bytes) -> None:
        with self._lock:
            while len(self._items) >= self._buffered and not self._closed:
                self._lock.wait()
            if self._closed:
                raise ClientGone("the client is gone")
            self._items.append(chunk)
            wake = len(self._items) == 1
        if wake:
            self._wake()

    def end(self) -> None:
        """No more chunks (the writer returned or failed); from either side."""
        with self._lock:
            self._ended = True
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(RuntimeError):  # (the loop is closed: nobody is reading)
            self._loop.call_soon_threadsafe(self._ready.set)

    # the loop's side
    async def get(self) -> bytes | None:
        """The next chunk, or None once the writer has ended and every chunk was taken."""
        while True:
            with self._lock:
                if self._items:
                    chunk = self._items.popleft()
                    self._lock.notify()
                    return chunk
                if self._ended:
                    return None
                self._ready.clear()  # (under the lock: a put after this sets it again)
            await self._ready.wait()

    def close(self) -> None:
        """The reader is gone: a blocked or later put raises :class:`ClientGone`."""
        with self._lock:
            self._closed = True
            self._items.clear()
            self._lock.notify_all()


class Pipe:
    """The binary file the writer thread writes; ``headers`` set before the first write go on the response."""

    def __init__(self, chunks: Chunks) -> None:
        self.headers: dict[str, str] = {}
        self.written = 0
        self._chunks = chunks
        self._buffer = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:
        # Whole chunks go out straight from ``data`` (a store writer's page can be megabytes: it is not
        # copied whole again); only the tail waits in the buffer for the next write.
        rest = memoryview(data).cast("B")
        size = len(rest)
        self.written += size
        if self._buffer:
            taken = CHUNK - len(self._buffer)
            self._buffer += rest[:taken]
            rest = rest[taken:]
            if len(self._buffer) < CHUNK:
                return size
            self._chunks.put(bytes(self._buffer))
            self._buffer.clear()
        while len(rest) >= CHUNK:
            self._chunks.put(bytes(rest[:CHUNK]))
            rest = rest[CHUNK:]
        self._buffer += rest
        return size

    def flush(self) -> None:
        """Nothing to do: the bytes go out a chunk at a time, the rest when the writer returns."""

    def close_out(self) -> None:
        """Send what is left (the writer has returned)."""
        if self._buffer:
            self._chunks.put(bytes(self._buffer))
            self._buffer.clear()


class PipedResponse(Response):
    """``write(pipe)`` run in a worker thread, its bytes streamed (chunked) as they are written."""

    def __init__(self, write: Callable[[Pipe], object], *, media_type: str,
                 headers: dict[str, str] | None = None) -> None:
        self.status_code = 200
        self.media_type = media_type
        self.background = None
        self.init_headers(headers)  # (no body yet: no Content-Length, the body goes chunked)
        self._write = write
        self._failed: Exception | None = None
        self._started = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks = Chunks(asyncio.get_running_loop())
        pipe = Pipe(chunks)
        async with anyio.create_task_group() as group:
            group.start_soon(self._run_writer, pipe, chunks)
            try:
                async with anyio.create_task_group() as body:
                    body.start_soon(_until_disconnect, receive, body.cancel_scope)
                    await self._send_body(chunks, pipe, send)
                    body.cancel_scope.cancel()  # (the disconnect listener)
            finally:
                chunks.close()  # (a writer still writing gets ClientGone and ends)
        if self._failed is not None and not self._started:
            raise self._failed  # (the route's error: its problem response)
        if self._failed is not None:
            # The response was started and is not finished: the ASGI server closes the connection without
            # the final chunk, so the client cannot take the cut body for a whole one.
            log.error("a streamed body failed after its first byte: %s", type(self._failed).__name__,
                      exc_info=self._failed)

    async def _run_writer(self, pipe: Pipe, chunks: Chunks) -> None:
        def run() -> None:
            try:
                self._write(pipe)
                pipe.close_out()
            finally:
                if pipe.written >= TRIM_AFTER_BYTES:
                    memory.give_back()

        try:
            await to_thread.run_sync(run, limiter=_limiter())
        except ClientGone:
            pass
        except Exception as exc:  # (raised by __call__ once the body's task group is done)
            self._failed = exc
        finally:
            chunks.end()  # (after _failed is set: the body sees the failure with the end)

    async def _send_body(self, chunks: Chunks, pipe: Pipe, send: Send) -> None:
        """The status and headers once the first chunk is there (nothing, if the writer failed first),
        then the chunks, then the end of the body unless the writer failed; returns when the client is
        gone too (a send that raises ``OSError``, as ASGI 2.4 servers do)."""
        chunk = await chunks.get()
        if chunk is None and self._failed is not None:
            return
        self.headers.update(pipe.headers)
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            self._started = True
            while chunk is not None:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                chunk = await chunks.get()
            if self._failed is None:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            return


async def _until_disconnect(receive: Receive, body: anyio.CancelScope) -> None:
    """Cancel ``body`` (the sending) when the client disconnects."""
    while True:
        try:
            message = await receive()
        except Exception:  # (a limit's error on a body nobody reads: no disconnect seen)
            return
        if message["type"] == "http.disconnect":
            body.cancel()
            return


def piped(write: Callable[[IO[bytes]], object], media_type: str,
          headers: dict[str, str] | None = None) -> PipedResponse:
    """The response that streams what ``write(fp)`` writes (see :class:`PipedResponse`)."""
    return PipedResponse(lambda pipe: write(cast(IO[bytes], pipe)), media_type=media_type, headers=headers)

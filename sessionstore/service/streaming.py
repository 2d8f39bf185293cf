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

import logging
from collections.abc import Callable
from typing import IO, cast

import anyio
from anyio import from_thread, to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

log = logging.getLogger("sessionstore.service")

CHUNK = 64 * 1024
"""Bytes of one body chunk (a larger write is split, smaller ones are gathered)."""
BUFFERED = 4
"""Chunks waiting between the writer and the socket before the writer blocks."""
WRITERS = 8
"""Bodies written at once (each holds a worker thread and a database connection while its client reads;
below the engine's pool of connections, so slow readers never starve the other routes); more wait."""

_writers: anyio.CapacityLimiter | None = None


def _limiter() -> anyio.CapacityLimiter:
    global _writers
    if _writers is None:  # (made on the event loop: a limiter belongs to the loop that made it)
        _writers = anyio.CapacityLimiter(WRITERS)
    return _writers


class ClientGone(Exception):
    """Raised by :meth:`Pipe.write` once the client is gone: the writer unwinds and ends its transaction."""


class Pipe:
    """The binary file the writer thread writes; ``headers`` set before the first write go on the response."""

    def __init__(self, chunks: MemoryObjectSendStream[bytes]) -> None:
        self.headers: dict[str, str] = {}
        self._chunks = chunks
        self._buffer = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:
        # Whole chunks go out straight from ``data`` (a store writer's page can be megabytes: it is not
        # copied whole again); only the tail waits in the buffer for the next write.
        rest = memoryview(data).cast("B")
        size = len(rest)
        if self._buffer:
            taken = CHUNK - len(self._buffer)
            self._buffer += rest[:taken]
            rest = rest[taken:]
            if len(self._buffer) < CHUNK:
                return size
            self._send(bytes(self._buffer))
            self._buffer.clear()
        while len(rest) >= CHUNK:
            self._send(bytes(rest[:CHUNK]))
            rest = rest[CHUNK:]
        self._buffer += rest
        return size

    def flush(self) -> None:
        """Nothing to do: the bytes go out a chunk at a time, the rest when the writer returns."""

    def close_out(self) -> None:
        """Send what is left (the writer has returned)."""
        if self._buffer:
            self._send(bytes(self._buffer))
            self._buffer.clear()

    def _send(self, chunk: bytes) -> None:
        try:
            from_thread.run(self._chunks.send, chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise ClientGone("the client is gone") from None


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
        sending, chunks = anyio.create_memory_object_stream[bytes](BUFFERED)
        pipe = Pipe(sending)
        async with anyio.create_task_group() as group:
            group.start_soon(self._run_writer, pipe, sending)
            with chunks:  # (closed on the way out: a writer still writing gets ClientGone and ends)
                async with anyio.create_task_group() as body:
                    body.start_soon(_until_disconnect, receive, body.cancel_scope)
                    await self._send_body(chunks, pipe, send)
                    body.cancel_scope.cancel()  # (the disconnect listener)
        if self._failed is not None and not self._started:
            raise self._failed  # (the route's error: its problem response)
        if self._failed is not None:
            # The response was started and is not finished: the ASGI server closes the connection without
            # the final chunk, so the client cannot take the cut body for a whole one.
            log.error("a streamed body failed after its first byte: %s", type(self._failed).__name__,
                      exc_info=self._failed)

    async def _run_writer(self, pipe: Pipe, sending: MemoryObjectSendStream[bytes]) -> None:
        def run() -> None:
            self._write(pipe)
            pipe.close_out()

        try:
            await to_thread.run_sync(run, limiter=_limiter())
        except ClientGone:
            pass
        except Exception as exc:  # (raised by __call__ once the body's task group is done)
            self._failed = exc
        finally:
            await sending.aclose()

    async def _send_body(self, chunks: MemoryObjectReceiveStream[bytes], pipe: Pipe, send: Send) -> None:
        """The status and headers once the first chunk is there (nothing, if the writer failed first),
        then the chunks, then the end of the body unless the writer failed; returns when the client is
        gone too (a send that raises ``OSError``, as ASGI 2.4 servers do)."""
        chunk = await _next(chunks)
        if chunk is None and self._failed is not None:
            return
        self.headers.update(pipe.headers)
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            self._started = True
            while chunk is not None:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                chunk = await _next(chunks)
            if self._failed is None:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            return


async def _next(chunks: MemoryObjectReceiveStream[bytes]) -> bytes | None:
    try:
        return await chunks.receive()
    except anyio.EndOfStream:
        return None


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

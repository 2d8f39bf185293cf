"""The live feeds over HTTP (SPEC 17): Server-Sent Events of one session (``/v1/sessions/{id}/events``)
and of a tenant's session list (``/v1/events``). The worker's :class:`~sessionstore.service.feeds.Feeds`
does the following; this module frames its events and streams them.

A session stream sends ``id: <seq>``, ``event: entry`` and the stored JSONL line as ``data:`` for each
entry; ``event: leaf`` ``{"leafId"}`` for a leaf moved without an entry; ``event: deleted`` ``{"id"}``
and the end when the session is deleted. A subscriber cut off for falling behind gets ``event: resume``
``{"after": <last seq sent>}`` and the end (when it still reads): it reconnects with ``Last-Event-ID``.
A comment (``: keep-alive``) goes out when nothing else did for ``feed_heartbeat`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from sessionstore import views
from sessionstore.api import session_feed
from sessionstore.errors import SessionNotFoundError
from sessionstore.service import bodies as _bodies  # noqa: F401 (registers the {name:id} convertor)
from sessionstore.service import ops
from sessionstore.service.deps import ReaderStore
from sessionstore.service.feeds import Feeds, Subscriber, TenantSubscriber
from sessionstore.service.problems import ProblemError
from sessionstore.store.changes import Cursor, FeedEvent
from sessionstore.wire.jsjson import js_dumpb

router = APIRouter(prefix="/v1", tags=["events"])
log = logging.getLogger("sessionstore.service.feeds")

EVENT_STREAM = "text/event-stream"
HEARTBEAT = b": keep-alive\n\n"
STREAM_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-store"),
                  (b"x-accel-buffering", b"no"), (b"x-content-type-options", b"nosniff")]


def frame(event: str, data: bytes, *, event_id: int | None = None) -> bytes:
    """One SSE event. A stored line holds no newline, but JSON may have a carriage return between two
    tokens, which SSE reads as a line end: each line of ``data`` is its own ``data:`` field (a reader
    joins them with newlines, which JSON reads as the same whitespace)."""
    head = b"" if event_id is None else b"id: %d\n" % event_id
    lines = data.splitlines() or [b""]
    return head + b"event: " + event.encode() + b"\n" + b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"


def feeds_of(request: Request) -> Feeds:
    """The worker's feeds (made with the first stream)."""
    found: Feeds | None = getattr(request.app.state, "feeds", None)
    if found is None:
        found = Feeds(request.app.state.store, request.app.state.config.limits)
        request.app.state.feeds = found
    return found


SHUTDOWN_EVENT = b'event: shutdown\ndata: {}\n\n'
"""A feed's last event when its worker stops (SIGTERM): the stream then ends, and the subscriber resumes
from its last id on another worker or after the restart (an ``EventSource`` does by itself)."""


class EventStream(Response):
    """A ``text/event-stream`` response of ``chunks`` (``None``: a heartbeat). It ends when the chunks
    end, the client goes, or the worker shuts down (a last ``shutdown`` event). A subscriber that leaves a chunk
    untaken for ``grace`` seconds, or that was cut off for falling behind (``cut()`` true) and does not
    take its last event within ``grace`` seconds, has its connection closed."""

    def __init__(self, chunks: AsyncIterator[bytes | None], *, cut: Any, grace: float, feed: ops.Feed) -> None:
        super().__init__(media_type=EVENT_STREAM)
        self.chunks = chunks
        self.cut = cut
        self.grace = grace
        self.feed = feed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": STREAM_HEADERS})

        async def pump() -> None:
            async for chunk in self.chunks:
                try:
                    await asyncio.wait_for(send({"type": "http.response.body", "more_body": True,
                                                 "body": HEARTBEAT if chunk is None else chunk}), self.grace)
                except TimeoutError:  # (it does not read: cut off, its connection closed; it may resume)
                    log.info("a %s feed's subscriber took nothing for %g s: cut off", self.feed, self.grace)
                    return
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        async def gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        async def stuck() -> None:
            while not self.cut():
                await asyncio.sleep(min(self.grace, 1.0))
            await asyncio.sleep(self.grace)

        with ops.open_feed(self.feed):
            tasks = [asyncio.ensure_future(job()) for job in (pump, gone, stuck)]
            draining = asyncio.ensure_future(ops.until_draining())
            try:
                done, _pending = await asyncio.wait([*tasks, draining], return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (*tasks, draining):
                    task.cancel()
                for task in (*tasks, draining):
                    with contextlib.suppress(BaseException):
                        await task
                with contextlib.suppress(BaseException):
                    await self.chunks.aclose()  # type: ignore[attr-defined]
            failed = [t for t in done if t is not draining and not t.cancelled() and t.exception() is not None]
            for task in failed:  # (the database went away mid-stream: the client resumes from its last id)
                log.warning("a %s feed ended early: %s", self.feed, type(task.exception()).__name__)
            if draining in done or failed:  # (a last event or comment, then the end, if the client still reads)
                last = SHUTDOWN_EVENT if draining in done else b": reconnect\n\n"
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(send({"type": "http.response.body", "body": last, "more_body": False}),
                                           self.grace)


def _after(last_event_id: str | None, after: int | None) -> int:
    """Where a stream starts: after ``Last-Event-ID`` (a reconnecting EventSource sends it, and keeps
    the URL's ``after``), else after ``after``, else from the first entry."""
    if last_event_id is not None and last_event_id.strip():
        text = last_event_id.strip()
        if not text.lstrip("-").isdigit() or int(text) < -1:
            raise ProblemError(422, "INVALID_INPUT", "Last-Event-ID: not an entry seq (an integer from -1)")
        return int(text)
    return -1 if after is None else after


@router.get("/sessions/{session_id:id}/events", response_class=Response,
            responses={200: {"description": "Server-Sent Events: entry (id: seq), leaf, deleted, resume, shutdown",
                             "content": {EVENT_STREAM: {}}}})
async def session_events(
    session_id: str, request: Request, store: ReaderStore,
    after: Annotated[int | None, Query(ge=-1, description="start after the entry of this seq (from 0)")] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> Any:
    """The session's entries after ``after`` (or ``Last-Event-ID``), then each new one as any writer
    stores it, as Server-Sent Events."""
    start = _after(last_event_id, after)
    feeds = feeds_of(request)
    key = await run_in_threadpool(session_feed(store, session_id).key)
    if key is None:
        raise SessionNotFoundError(session_id)
    subscriber = Subscriber(Cursor(after=start, key=key), feeds.limits)
    last = {"seq": start}

    async def chunks() -> AsyncIterator[bytes | None]:
        async for event in feeds.session_events(store, session_id, key, start, subscriber):
            if event is None:
                yield None
                continue
            if event.kind == "entry" and event.seq is not None:
                last["seq"] = event.seq
            yield _framed(event, session_id)
        if subscriber.cut:
            yield frame("resume", _json({"after": last["seq"]}))

    return EventStream(chunks(), cut=lambda: subscriber.cut, grace=feeds.limits.feed_cut_grace, feed="session")


def _framed(event: FeedEvent, session_id: str) -> bytes:
    if event.kind == "entry":
        return frame("entry", event.line or b"", event_id=event.seq)
    if event.kind == "leaf":
        return frame("leaf", _json({"leafId": event.leaf_id}))
    return frame("deleted", _json({"id": session_id}))


def _json(value: Any) -> bytes:
    return js_dumpb(value)


@router.get("/events", response_class=Response,
            responses={200: {"description": "Server-Sent Events: session (the ls --json item), deleted, shutdown",
                             "content": {EVENT_STREAM: {}}}})
async def tenant_events(request: Request, store: ReaderStore) -> Any:
    """The caller's tenant's session changes as Server-Sent Events: ``event: session`` with the
    session's ``ls --json`` item when one is created, appended to, moved or renamed; ``event: deleted``
    ``{"id"}`` when one is deleted."""
    feeds = feeds_of(request)
    topic = await feeds.tenant_topic(store.tenant)
    subscriber = TenantSubscriber(feeds.limits)
    topic.subscribers.add(subscriber)

    async def chunks() -> AsyncIterator[bytes | None]:
        try:
            while not subscriber.cut:
                if subscriber.everything:
                    subscriber.everything = False
                    infos = await run_in_threadpool(store.list_sessions)
                    for info in infos:
                        yield frame("session", _json(views.session_item(store, info)))
                while subscriber.pending:
                    _key, change = subscriber.pending.popitem()
                    if change is None or change.session_id is None:
                        continue
                    if change.kind == "deleted":
                        yield frame("deleted", _json({"id": change.session_id}))
                        continue
                    try:
                        info = await run_in_threadpool(store.session, change.session_id)
                    except SessionNotFoundError:
                        yield frame("deleted", _json({"id": change.session_id}))
                        continue
                    yield frame("session", _json(views.session_item(store, info)))
                subscriber.wake.clear()
                if subscriber.pending or subscriber.everything or subscriber.cut:
                    continue
                try:
                    await asyncio.wait_for(subscriber.wake.wait(), feeds.limits.feed_heartbeat)
                except TimeoutError:
                    yield None
            yield frame("resume", _json({}))
        finally:
            topic.subscribers.discard(subscriber)
            if not topic.subscribers:
                topic.close()

    return EventStream(chunks(), cut=lambda: subscriber.cut, grace=feeds.limits.feed_cut_grace, feed="tenant")

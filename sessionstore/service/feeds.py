"""The live feeds of one worker (SPEC 17): one change hub (:mod:`sessionstore.store.changes`), one
*topic* per followed session and one per tenant with a ``/v1/events`` open, and the subscribers.

A session's topic reads what changed once, when the hub says the session changed, and hands the events
to every subscriber that is *in step* (its position equals the topic's before the read). A subscriber
that is not (it just connected with ``after=``, it was cut short, the topic moved while it read) reads
from the database itself, from its own position, in pages, until it is in step: so a subscriber gets
every stored entry once and in order, whether pushed or read, and a resumed one (``Last-Event-ID``)
reads exactly what it missed. Each subscriber's queue is bounded (:class:`~sessionstore.service.config.Limits`
``feed_queue`` events, ``feed_queue_bytes`` bytes): a subscriber that falls further behind (it does not
read) is cut off, its queue dropped, and it may resume from its last id.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from fastapi.concurrency import run_in_threadpool

from sessionstore.api import SessionStore, session_feed, watch_changes
from sessionstore.service.config import Limits
from sessionstore.store.changes import Change, ChangeHub, Cursor, FeedEvent, SessionFeed, Watch

log = logging.getLogger("sessionstore.service.feeds")

RETRY_READ = 1.0
"""Seconds before a topic reads again after its read failed (the database is away)."""


@dataclass(eq=False)
class Subscriber:
    """One open stream's place: its position, the events pushed to it and not yet sent, and whether it
    is in step with its topic (pushed to) or reading for itself."""

    cursor: Cursor
    limits: Limits
    queue: deque[FeedEvent] = field(default_factory=deque)
    queued_bytes: int = 0
    in_step: bool = False
    cut: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def push(self, events: list[FeedEvent]) -> None:
        size = sum(len(e.line or b"") for e in events)
        if len(self.queue) + len(events) > self.limits.feed_queue \
                or self.queued_bytes + size > self.limits.feed_queue_bytes:
            self.in_step = False  # (a burst larger than the queue: it reads for itself, a page at a time)
            if self.queue:  # (it had not sent what it had: it is behind, never held beyond the bound)
                self.queue.clear()
                self.queued_bytes = 0
                self.cut = True
        else:
            self.queue.extend(events)
            self.queued_bytes += size
        self.wake.set()

    def pop(self) -> FeedEvent:
        event = self.queue.popleft()
        self.queued_bytes -= len(event.line or b"")
        return event


class SessionTopic:
    """The subscribers of one session in this worker, and the topic's own position (the newest it read)."""

    def __init__(self, feeds: Feeds, feed: SessionFeed, tenant: str, key: int) -> None:
        self.feeds = feeds
        self.feed = feed
        self.tenant = tenant
        self.key = key
        self.cursor: Cursor | None = None
        self.subscribers: set[Subscriber] = set()
        self.dirty = True
        self.task: asyncio.Task[None] | None = None
        self.watch: Watch | None = None

    def poke(self) -> None:
        """The session changed (on the event loop)."""
        self.dirty = True
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while self.dirty and self.subscribers:
            self.dirty = False
            before = self.cursor
            moved = Cursor(key=self.key) if before is None else before.copy()
            try:  # (on a copy: the subscribers compare themselves with self.cursor meanwhile)
                if before is None:
                    events: list[FeedEvent] = []
                    await run_in_threadpool(self.feed.to_newest, moved)
                else:
                    events, caught_up = await run_in_threadpool(self.feed.advance, moved)
                    self.dirty = self.dirty or not caught_up
            except Exception as exc:  # (the database is away: read again a little later)
                log.warning("a feed's read failed: %s", type(exc).__name__)
                self.dirty = True
                await asyncio.sleep(RETRY_READ)
                continue
            self.cursor = moved
            for sub in list(self.subscribers):
                if sub.in_step and before is not None and sub.cursor.same(before):
                    if events:
                        sub.push(events)
                        if sub.in_step:
                            sub.cursor = moved.copy()
                else:
                    sub.in_step = False
                    sub.wake.set()  # (it reads for itself, and steps in when it reaches the topic)
            if moved.done:
                self.close()
                return

    def step_in(self, sub: Subscriber) -> bool:
        """Whether ``sub`` (caught up by its own reads) is where the topic is: then it is pushed to."""
        if self.cursor is not None and sub.cursor.same(self.cursor):
            sub.in_step = True
        return sub.in_step

    def ahead_of(self, sub: Subscriber) -> bool:
        """Whether the topic has read beyond ``sub`` (which must then read again at once)."""
        return self.cursor is not None and self.cursor.after > sub.cursor.after

    def close(self) -> None:
        self.feeds._topics.pop((self.tenant, self.key), None)
        if self.watch is not None:
            self.watch.close()
            self.watch = None
        for sub in self.subscribers:
            sub.wake.set()


class TenantTopic:
    """The ``/v1/events`` subscribers of one tenant in this worker: each change of one of the tenant's
    sessions is queued to each of them (by session: a session changed twice is told once)."""

    def __init__(self, feeds: Feeds, tenant: str) -> None:
        self.feeds = feeds
        self.tenant = tenant
        self.subscribers: set[TenantSubscriber] = set()
        self.watch: Watch | None = None

    def changed(self, change: Change | None) -> None:
        for sub in self.subscribers:
            sub.add(change)

    def close(self) -> None:
        self.feeds._tenants.pop(self.tenant, None)
        if self.watch is not None:
            self.watch.close()
            self.watch = None


@dataclass(eq=False)
class TenantSubscriber:
    """A ``/v1/events`` stream: the sessions changed since it last sent (``None``: any may have)."""

    limits: Limits
    pending: dict[int, Change | None] = field(default_factory=dict)
    everything: bool = False
    cut: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, change: Change | None) -> None:
        if change is None:
            self.everything = True
        elif change.key not in self.pending and len(self.pending) >= self.limits.feed_queue:
            self.pending.clear()
            self.cut = True
        else:
            self.pending[change.key] = change
        self.wake.set()


class Feeds:
    """The feeds of one worker on ``store``'s database: the change hub (opened with the first feed),
    the topics, and the subscribers' bounds (``limits``)."""

    def __init__(self, store: SessionStore, limits: Limits) -> None:
        self.store = store
        self.limits = limits
        self._hub: ChangeHub | None = None
        self._hub_lock = asyncio.Lock()
        self._topics: dict[tuple[str, int], SessionTopic] = {}
        self._tenants: dict[str, TenantTopic] = {}

    async def hub(self) -> ChangeHub:
        async with self._hub_lock:
            if self._hub is None:
                self._hub = await run_in_threadpool(watch_changes, self.store)
            return self._hub

    def _on_loop(self, act: Callable[[], None]) -> Callable[[Change | None], None]:
        loop = asyncio.get_running_loop()

        def deliver(_change: Change | None) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(act)

        return deliver

    async def session_topic(self, store: SessionStore, session_id: str, key: int) -> SessionTopic:
        found = self._topics.get((store.tenant, key))
        if found is not None:
            return found
        hub = await self.hub()
        found = self._topics.get((store.tenant, key))  # (another request made it meanwhile)
        if found is not None:
            return found
        topic = SessionTopic(self, session_feed(store, session_id), store.tenant, key)
        self._topics[store.tenant, key] = topic
        topic.watch = hub.watch(self._on_loop(topic.poke), tenant=store.tenant, key=key)
        return topic

    async def tenant_topic(self, tenant: str) -> TenantTopic:
        found = self._tenants.get(tenant)
        if found is not None:
            return found
        hub = await self.hub()
        found = self._tenants.get(tenant)
        if found is not None:
            return found
        topic = TenantTopic(self, tenant)
        self._tenants[tenant] = topic
        loop = asyncio.get_running_loop()

        def deliver(change: Change | None) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(topic.changed, change)

        topic.watch = hub.watch(deliver, tenant=tenant)
        return topic

    def close(self) -> None:
        for topic in list(self._topics.values()):
            topic.close()
        for tenant in list(self._tenants.values()):
            tenant.close()
        if self._hub is not None:
            self._hub.close()
            self._hub = None

    # -- a session's events -------------------------------------------------------------------
    async def session_events(self, store: SessionStore, session_id: str, key: int, after: int,
                             subscriber: Subscriber) -> AsyncIterator[FeedEvent | None]:
        """The events of the session after ``after`` for one stream, then as they come: ``None`` when
        nothing came for a heartbeat's time. Ends after ``deleted``; a cut-off subscriber's iterator
        ends (``subscriber.cut``)."""
        topic = await self.session_topic(store, session_id, key)
        topic.subscribers.add(subscriber)
        topic.poke()
        feed = session_feed(store, session_id)
        last_sent = after
        try:
            while True:
                if subscriber.cut:
                    return
                if not subscriber.in_step:
                    moved = subscriber.cursor.copy()
                    events, caught_up = await run_in_threadpool(feed.advance, moved)
                    subscriber.cursor = moved
                    for event in events:
                        if event.kind == "entry" and event.seq is not None:
                            if event.seq <= last_sent:
                                continue
                            last_sent = event.seq
                        yield event
                        if event.kind == "deleted":
                            return
                    if not caught_up or topic.ahead_of(subscriber):
                        continue
                    if topic.step_in(subscriber):
                        continue
                else:
                    while subscriber.queue:
                        event = subscriber.pop()
                        if event.kind == "entry" and event.seq is not None:
                            if event.seq <= last_sent:
                                continue
                            last_sent = event.seq
                        yield event
                        if event.kind == "deleted":
                            return
                    if subscriber.cut or not subscriber.in_step:
                        continue
                subscriber.wake.clear()
                if subscriber.queue or subscriber.cut:
                    continue
                try:
                    await asyncio.wait_for(subscriber.wake.wait(), self.limits.feed_heartbeat)
                except TimeoutError:
                    yield None
        finally:
            topic.subscribers.discard(subscriber)
            if not topic.subscribers:
                topic.close()

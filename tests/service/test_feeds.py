"""The live feeds (issue 24 points 1-2, SPEC 17), over TCP against real ``sessionstore serve`` processes
on both backends: every writer (the API, the library in another process, the CLI, a sync of a pi file
growing on disk) reaches an open feed; resuming skips and repeats nothing, across a server restart too;
leaf, deleted and heartbeat events; a subscriber that does not read is cut off while the others keep
receiving and the server's memory stays bounded. Latency is checked only as a generous bound."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import Server, StartServer, free_port, launch, sessionstore_command

HEARTBEAT = "0.3"
WITHIN = 3.0
"""Seconds an event may take to arrive (a generous bound; the benchmark measures the real figures)."""


@dataclass
class Event:
    kind: str
    data: str
    id: int | None
    at: float

    def json(self) -> dict[str, object]:
        return dict(json.loads(self.data))


class Feed:
    """An event stream read in a thread of its own: its events (and heartbeats, as kind ``:``) queue up."""

    def __init__(self, server: Server, path: str, token: str | None, headers: dict[str, str] | None = None) -> None:
        self.events: queue.Queue[Event | None] = queue.Queue()
        sent = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(base_url=server.base_url, headers=sent, timeout=httpx.Timeout(10.0, read=30.0))
        self.response = self.client.send(self.client.build_request("GET", path, headers=headers), stream=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        if self.response.status_code == 200:
            self.thread.start()

    def _read(self) -> None:
        kind, data, event_id = "message", [], None
        try:
            for line in self.response.iter_lines():
                if line.startswith(":"):
                    self.events.put(Event(":", line, None, time.monotonic()))
                elif line == "":
                    if data or kind != "message":  # (the blank line after a comment ends nothing)
                        self.events.put(Event(kind, "\n".join(data), event_id, time.monotonic()))
                    kind, data, event_id = "message", [], None
                else:
                    name, _, value = line.partition(": ")
                    if name == "event":
                        kind = value
                    elif name == "data":
                        data.append(value)
                    elif name == "id":
                        event_id = int(value)
        except httpx.HTTPError:
            pass
        self.events.put(None)  # (the end of the stream)

    def next(self, timeout: float = WITHIN, *, heartbeats: bool = False) -> Event | None:
        """The next event (``None``: the stream ended); heartbeats are skipped unless asked for."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no event in time")
            event = self.events.get(timeout=left)
            if event is None or heartbeats or event.kind != ":":
                return event

    def entries(self, count: int, timeout: float = WITHIN) -> list[Event]:
        got = []
        while len(got) < count:
            event = self.next(timeout)
            assert event is not None, f"the stream ended after {got}"
            if event.kind == "entry":
                got.append(event)
        return got

    def close(self) -> None:
        self.response.close()
        self.client.close()


@pytest.fixture(scope="module")
def feed_server(service_db_url: str, start_server: StartServer) -> Server:
    return start_server(service_db_url, "--feed-heartbeat", HEARTBEAT, "--feed-queue", "40",
                        "--feed-queue-bytes", "400000", "--feed-cut-grace", "1")


@pytest.fixture(scope="module")
def token(feed_server: Server) -> str:
    return feed_server.token("default", "write")


@pytest.fixture
def api(feed_server: Server, token: str) -> Iterator[httpx.Client]:
    with feed_server.client(token) as client:
        yield client


@pytest.fixture
def session(api: httpx.Client) -> str:
    sid = f"feed-{uuid.uuid4().hex[:10]}"
    made = api.post("/v1/sessions", json={"id": sid, "cwd": "/feeds"})
    assert made.status_code == 201, made.text
    return sid


@pytest.fixture
def open_feed(feed_server: Server, token: str) -> Iterator[object]:
    opened: list[Feed] = []

    def start(path: str, headers: dict[str, str] | None = None, as_token: str | None = None) -> Feed:
        feed = Feed(feed_server, path, as_token or token, headers)
        opened.append(feed)
        return feed

    yield start
    for feed in opened:
        feed.close()


def custom(n: int, size: int = 0) -> dict[str, object]:
    return {"type": "custom", "customType": "tick", "data": {"n": n, "pad": "x" * size}}


def append(api: httpx.Client, sid: str, *entries: dict[str, object]) -> list[str]:
    made = api.post(f"/v1/sessions/{sid}/entries", json=list(entries))
    assert made.status_code == 201, made.text
    return [e["id"] for e in made.json()["entries"]]


def stored_lines(api: httpx.Client, sid: str) -> list[str]:
    return api.get(f"/v1/sessions/{sid}/entries").text.splitlines()


def test_every_stored_entry_comes_once_in_order_with_its_seq_and_line(api: httpx.Client, session: str,
                                                                      open_feed: object) -> None:
    append(api, session, custom(0), custom(1))
    feed = open_feed(f"/v1/sessions/{session}/events")  # type: ignore[operator]
    assert feed.response.headers["content-type"].startswith("text/event-stream")
    first = feed.entries(2)
    sent = time.monotonic()
    append(api, session, custom(2))
    append(api, session, custom(3), custom(4))
    later = feed.entries(3)
    assert later[-1].at - sent < WITHIN
    events = first + later
    assert [e.id for e in events] == [0, 1, 2, 3, 4]
    assert [e.data for e in events] == stored_lines(api, session)
    assert feed.next(1.0, heartbeats=True).kind == ":"  # (nothing else came: no repeat)


def test_an_append_by_the_library_in_another_process_reaches_the_feed(
        feed_server: Server, api: httpx.Client, session: str, open_feed: object) -> None:
    feed = open_feed(f"/v1/sessions/{session}/events")  # type: ignore[operator]
    code = ("import sys; from sessionstore.api import SessionStore\n"
            "s = SessionStore(sys.argv[1]); s.append_custom(sys.argv[2], 'lib', {'by': 'library'}); s.close()")
    subprocess.run([sys.executable, "-c", code, feed_server.url, session], check=True, timeout=60)
    (event,) = feed.entries(1)
    assert event.json()["data"] == {"by": "library"} and event.id == 0


def test_a_cli_append_reaches_the_feed(feed_server: Server, api: httpx.Client, session: str,
                                       open_feed: object) -> None:
    feed = open_feed(f"/v1/sessions/{session}/events")  # type: ignore[operator]
    message = json.dumps({"role": "user", "content": "from the CLI", "timestamp": 1_700_000_000_000})
    done = subprocess.run([*sessionstore_command(), "--db", feed_server.url, "append", session], input=message,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (event,) = feed.entries(1)
    assert event.json()["id"] == done.stdout.strip()


def _pi_line(entry_id: str, parent: str | None, text: str) -> str:
    return json.dumps({"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
                       "message": {"role": "user", "content": text, "timestamp": 1_767_225_600_000}}) + "\n"


def test_a_sync_of_a_pi_file_growing_on_disk_reaches_the_feed(
        feed_server: Server, api: httpx.Client, open_feed: object, tmp_path: Path) -> None:
    sid = f"synced-{uuid.uuid4().hex[:8]}"
    folder = tmp_path / "sessions" / "--feeds--"
    folder.mkdir(parents=True)
    path = folder / f"2026-01-01T00-00-00-000Z_{sid}.jsonl"
    header = {"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/feeds"}
    path.write_text(json.dumps(header) + "\n" + _pi_line("aaaa0001", None, "one"))

    def sync() -> None:
        done = subprocess.run([*sessionstore_command(), "--db", feed_server.url, "sync", str(tmp_path / "sessions")],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr

    sync()
    feed = open_feed(f"/v1/sessions/{sid}/events")  # type: ignore[operator]
    assert feed.entries(1)[0].json()["id"] == "aaaa0001"
    with path.open("a") as fp:  # (pi appends to its file as the session goes on)
        fp.write(_pi_line("aaaa0002", "aaaa0001", "two") + _pi_line("aaaa0003", "aaaa0002", "three"))
    sync()
    assert [(e.id, e.json()["id"]) for e in feed.entries(2)] == [(1, "aaaa0002"), (2, "aaaa0003")]


def test_resume_with_after_or_last_event_id_skips_and_repeats_nothing(api: httpx.Client, session: str,
                                                                      open_feed: object) -> None:
    append(api, session, *(custom(n) for n in range(6)))
    lines = stored_lines(api, session)
    by_query = open_feed(f"/v1/sessions/{session}/events?after=2")  # type: ignore[operator]
    assert [(e.id, e.data) for e in by_query.entries(3)] == [(3, lines[3]), (4, lines[4]), (5, lines[5])]
    # A reconnecting EventSource keeps its URL and sends the last id it saw: the header wins.
    by_header = open_feed(f"/v1/sessions/{session}/events?after=0",  # type: ignore[operator]
                          headers={"Last-Event-ID": "4"})
    assert [e.id for e in by_header.entries(1)] == [5]
    append(api, session, custom(6))
    assert [e.id for e in by_query.entries(1)] == [6] and [e.id for e in by_header.entries(1)] == [6]
    bad = api.get(f"/v1/sessions/{session}/events", headers={"Last-Event-ID": "x"})
    assert bad.status_code == 422 and bad.json()["code"] == "INVALID_INPUT"


def test_a_leaf_move_without_an_entry_and_a_deletion_are_events(api: httpx.Client, session: str,
                                                                 open_feed: object) -> None:
    first, _second = append(api, session, custom(0), custom(1))
    feed = open_feed(f"/v1/sessions/{session}/events")  # type: ignore[operator]
    feed.entries(2)
    assert api.put(f"/v1/sessions/{session}/leaf", json={"leafId": first}).status_code == 200
    leaf = feed.next()
    assert leaf is not None and (leaf.kind, leaf.json(), leaf.id) == ("leaf", {"leafId": first}, None)
    append(api, session, custom(2))
    (branched,) = feed.entries(1)  # an append on the moved leaf: an entry, no leaf event of its own
    assert branched.json()["parentId"] == first
    assert api.delete(f"/v1/sessions/{session}").status_code == 204
    gone = feed.next()
    assert gone is not None and (gone.kind, gone.json()) == ("deleted", {"id": session})
    assert feed.next() is None  # the end of the stream
    assert api.get(f"/v1/sessions/{session}/events").status_code == 404


def test_a_new_subscriber_is_told_of_a_leaf_that_is_not_the_last_entry(api: httpx.Client, session: str,
                                                                          open_feed: object) -> None:
    first, _second = append(api, session, custom(0), custom(1))
    assert api.put(f"/v1/sessions/{session}/leaf", json={"leafId": first}).status_code == 200
    feed = open_feed(f"/v1/sessions/{session}/events")  # type: ignore[operator]
    feed.entries(2)
    leaf = feed.next()
    assert leaf is not None and leaf.kind == "leaf" and leaf.json() == {"leafId": first}


def test_a_quiet_feed_sends_heartbeat_comments(session: str, open_feed: object) -> None:
    feed = open_feed(f"/v1/sessions/{session}/events")  # type: ignore[operator]
    beats = [feed.next(heartbeats=True) for _ in range(2)]
    assert all(b is not None and b.kind == ":" for b in beats), beats


def test_a_missing_session_is_404_before_any_stream(api: httpx.Client) -> None:
    response = api.get("/v1/sessions/no-such-session/events")
    assert response.status_code == 404 and response.headers["content-type"].startswith("application/problem+json")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_subscriber_that_does_not_read_is_cut_off_and_others_keep_receiving(
        feed_server: Server, token: str, api: httpx.Client, session: str, open_feed: object) -> None:
    reader = open_feed(f"/v1/sessions/{session}/events")  # type: ignore[operator]
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # (a small window: the server's side fills)
    host, port = feed_server.base_url.removeprefix("http://").split(":")
    stalled.connect((host, int(port)))
    stalled.sendall(f"GET /v1/sessions/{session}/events HTTP/1.1\r\nHost: {host}\r\n"
                    f"Authorization: Bearer {token}\r\n\r\n".encode())
    time.sleep(0.5)
    cut_before = feed_server.log().count("cut off")
    before = _rss_kib(feed_server.process.pid)
    total = 400  # (6.4 MB: more than the kernel's socket buffers take before the server's send waits)
    for start in range(0, total, 20):
        append(api, session, *(custom(n, size=16_000) for n in range(start, start + 20)))
    assert [e.id for e in reader.entries(total, timeout=30)] == list(range(total))
    grown = _rss_kib(feed_server.process.pid) - before
    assert grown < 64 * 1024, f"the server grew by {grown} KiB"
    # The stalled subscriber's connection is closed: reading now, it gets what was in flight, then the end.
    deadline = time.monotonic() + 20
    while feed_server.log().count("cut off") == cut_before and time.monotonic() < deadline:
        time.sleep(0.1)
    stalled.settimeout(20)
    received = b""
    while chunk := stalled.recv(65536):
        received += chunk
    stalled.close()
    ids = [int(line[4:]) for line in received.decode().splitlines() if line.startswith("id: ")]
    assert ids == list(range(len(ids))) and len(ids) < total
    # It resumes from the last id it got, and gets exactly the rest.
    resumed = open_feed(f"/v1/sessions/{session}/events",  # type: ignore[operator]
                        headers={"Last-Event-ID": str(ids[-1] if ids else -1)})
    rest = resumed.entries(total - len(ids), timeout=20)
    assert [e.id for e in rest] == list(range(len(ids), total))


def test_the_tenant_feed_carries_its_sessions_changes(api: httpx.Client, open_feed: object) -> None:
    feed = open_feed("/v1/events")  # type: ignore[operator]
    time.sleep(0.5)  # (the feed is listening)
    sid = f"listed-{uuid.uuid4().hex[:8]}"
    assert api.post("/v1/sessions", json={"id": sid, "cwd": "/feeds"}).status_code == 201
    append(api, sid, custom(0))

    def next_session() -> Event:
        while True:
            event = feed.next()
            assert event is not None
            if event.kind in ("session", "deleted") and event.json().get("id") == sid:
                return event

    seen = next_session()
    while seen.json().get("entries") != 1:
        seen = next_session()
    assert seen.kind == "session" and seen.json()["leafId"] is not None
    assert set(seen.json()) >= {"id", "cwd", "entries", "leafId", "active"}
    assert api.delete(f"/v1/sessions/{sid}").status_code == 204
    assert next_session().kind == "deleted"


def test_a_feed_resumes_where_it_was_after_the_server_restarts(
        service_db_url: str, tmp_path: Path, feed_server: Server, token: str) -> None:
    """A server restarted on the same database, down for longer than the client's request retries last:
    the client reconnects with Last-Event-ID by itself and gets the entries appended meanwhile (by the
    library, with no server up), none twice."""
    from sessionstore.api import SessionStore
    from sessionstore.client import RemoteSessionStore
    from sessionstore.store.records import SessionEvent

    port = free_port()
    first = launch(service_db_url, tmp_path / "one.log", port=port)
    remote = RemoteSessionStore(first.base_url, token, tenant="default", retries=2)
    sid = remote.create_session(cwd="/restart")
    remote.append_custom(sid, "tick", {"n": 0})
    events = remote.events(sid)
    got = [next(events)]
    arrived: queue.Queue[object] = queue.Queue()

    def read_on() -> None:  # (the follower is reading, so reconnecting, all through the restart)
        try:
            for event in events:
                arrived.put(event)
        except Exception as exc:
            arrived.put(exc)

    reader = threading.Thread(target=read_on, daemon=True)
    reader.start()
    first.stop()
    with SessionStore(service_db_url) as local:
        for n in (1, 2):
            local.append_custom(sid, "tick", {"n": n})
    time.sleep(4.0)  # (longer than 2 request retries' backoff: the follower goes on by time, not by count)
    second = launch(service_db_url, tmp_path / "two.log", port=port)
    try:
        got += [arrived.get(timeout=30), arrived.get(timeout=30)]
        remote.append_custom(sid, "tick", {"n": 3})
        got.append(arrived.get(timeout=30))
        assert all(isinstance(e, SessionEvent) for e in got), got
        assert [(e.kind, e.seq, e.entry["data"]["n"]) for e in got if isinstance(e, SessionEvent) and e.entry] == \
            [("entry", n, {"n": n}["n"]) for n in range(4)]
    finally:
        remote.close()
        second.stop()


def test_the_clients_follow_the_feed_sync_and_async(feed_server: Server, token: str, api: httpx.Client,
                                                   session: str) -> None:
    import asyncio

    from sessionstore.client import AsyncRemoteSessionStore, RemoteSessionStore

    ids = append(api, session, custom(0), custom(1))
    with RemoteSessionStore(feed_server.base_url, token, tenant="default") as remote:
        events = remote.events(session, after=0)
        first = next(events)
        assert (first.kind, first.seq, first.entry and first.entry["id"]) == ("entry", 1, ids[1])
        (later,) = append(api, session, custom(2))
        assert next(events).entry == remote.entry(session, later)
        events.close()

    async def follow() -> list[tuple[str, int | None]]:
        async with AsyncRemoteSessionStore(feed_server.base_url, token, tenant="default") as remote:
            got = []
            async for event in remote.events(session):
                got.append((event.kind, event.seq))
                if event.seq == 2:
                    await asyncio.to_thread(api.delete, f"/v1/sessions/{session}")
            return got

    assert asyncio.run(asyncio.wait_for(follow(), 30)) == [("entry", 0), ("entry", 1), ("entry", 2), ("deleted", None)]

"""Faults survived, over TCP against real ``sessionstore serve`` processes (SPEC 17; issue 24):

* the real PostgreSQL server stopped (``pg_ctl stop -m fast``, and ``-m immediate``: a crash) and started
  again on the same port and data directory, while 16 clients append and 50 feeds are open: while it is
  down every request is 503 ``SERVICE_UNAVAILABLE`` with ``Retry-After`` (no traceback, nothing hangs),
  ``/readyz`` is 503 and ``/healthz`` 200; afterwards appends succeed without restarting the server, each
  feed, reconnecting with ``Last-Event-ID`` as a client does, has every entry of its session once and in
  order, and every acknowledged append is stored exactly once;
* a worker killed with SIGKILL while appends are in flight (SQLite and PostgreSQL): nothing acknowledged is
  lost or stored twice, no entry is torn, the session validates (and the SQLite file passes
  ``PRAGMA integrity_check``).

The clients choose their entries' ids, so a retry of an append that did commit writes nothing, and
exactly-once can be checked. The server under test has its own PostgreSQL server (a private cluster,
made as ``.ci/pg-cluster.sh`` makes one): the shared one of ``SESSIONSTORE_TEST_PG_URL`` is never stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from starlette.requests import Request
from starlette.responses import Response

from sessionstore.api import SessionStore
from sessionstore.service.deps import Caller
from sessionstore.service.problems import unavailable as problem_for_unavailable
from sessionstore.service.routes_write import idempotent
from sessionstore.store import migrate
from sessionstore.store.changes import PostgresListener, follow
from sessionstore.store.engine import make_engine
from tests.conftest import BACKENDS, drop_pg_database, fresh_pg_database
from tests.requirements import POSTGRES, POSTGRES_SERVER, pg_bindir, require
from tests.service.conftest import Server, free_port, launch, mint_token
from tests.service.test_ops import Proxy

pytestmark = pytest.mark.slow

SESSIONS = 4
APPENDERS = 16
FEEDS = 50
DOWN_FOR = 3.0
"""Seconds the PostgreSQL server stays down."""
BOUND = 10.0
"""Longest a request may take, at any time (a longer one hangs)."""


def entry(entry_id: str) -> dict[str, object]:
    return {"type": "message", "id": entry_id, "message": {"role": "user", "content": entry_id, "timestamp": 1}}


def client(server: Server, token: str, timeout: float | httpx.Timeout = BOUND) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)


def retry_after(response: httpx.Response) -> float:
    return min(float(response.headers.get("retry-after", "1")), 1.0)


def unavailable(response: httpx.Response) -> str | None:
    """What is wrong with ``response`` as the answer of a request while the database is away; ``None``."""
    if response.status_code != 503:
        return f"{response.request.method} {response.request.url.path}: {response.status_code} {response.text[:200]}"
    if not response.headers.get("retry-after", "").isdigit():
        return f"{response.request.method} {response.request.url.path}: 503 without Retry-After"
    if response.headers.get("content-type") != "application/problem+json" or "Traceback" in response.text:
        return f"{response.request.method} {response.request.url.path}: 503 body {response.text[:200]!r}"
    if response.json().get("code") != "SERVICE_UNAVAILABLE":
        return f"{response.request.method} {response.request.url.path}: 503 {response.text[:200]}"
    return None


# -- a PostgreSQL server of the tests' own ----------------------------------------------------------------
class Cluster:
    """A private PostgreSQL server (``initdb`` and ``pg_ctl`` as ``.ci/pg-cluster.sh`` runs them: as the
    ``postgres`` user when we are root), on 127.0.0.1 and a port of its own, that a test may stop and
    start again on the same port and data directory."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="sessionstore-pg-faults-"))
        self.port = free_port()
        root = os.geteuid() == 0
        # (initdb refuses root; runuser is in /usr/sbin, which a minimal PATH may leave out)
        runuser = shutil.which("runuser", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))
        assert runuser or not root, "running as root needs runuser (util-linux) to start PostgreSQL as 'postgres'"
        self.run_as = [str(runuser), "-u", "postgres", "--"] if root else []
        self.dir.chmod(0o755)
        if root:
            shutil.chown(self.dir, "postgres")
        self._run("initdb", "-D", str(self.dir / "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--no-sync")

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run([*self.run_as, str(self.bindir / program), *args], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60, check=False)
        assert done.returncode == 0, f"{program} {' '.join(args)}: {done.stderr.decode(errors='replace')}"

    def start(self) -> None:
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200"
                   " -c fsync=off")  # (fsync guards against the machine failing, not the server: nothing is lost)
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-l", str(self.dir / "log"), "-w", "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", mode, "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self, name: str) -> str:
        """A new database of the current schema: its URL."""
        admin = create_engine(self.url().replace("postgresql://", "postgresql+psycopg://", 1),
                              isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            admin.dispose()
        engine = make_engine(self.url(name))
        migrate.upgrade(engine)
        engine.dispose()
        return self.url(name)

    def remove(self) -> None:
        with contextlib.suppress(Exception):
            self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    require(POSTGRES_SERVER)
    bindir = pg_bindir()
    assert bindir is not None
    made = Cluster(bindir)
    try:
        made.start()
        yield made
    finally:
        made.remove()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """``serve(url, *flags)``: a server stopped at the end of the test."""
    started: list[Server] = []

    def start(url: str, *flags: str) -> Server:
        server = launch(url, tmp_path / f"server-{len(started)}.log", *flags)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


# -- the clients ----------------------------------------------------------------------------------------
@dataclass
class Tally:
    """What the clients saw: acknowledged appends, statuses, dropped connections, and anything wrong."""

    acknowledged: list[tuple[str, str]] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    drops: int = 0
    slowest: float = 0.0
    bad: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def took(self, started: float) -> None:
        with self.lock:
            self.slowest = max(self.slowest, time.monotonic() - started)

    def wrong(self, what: str) -> None:
        with self.lock:
            self.bad.append(what)


class Appender(threading.Thread):
    """Appends entries ``{name}-0``, ``{name}-1``, ... to ``session`` one at a time, until ``stop``; an
    entry is sent again (the same id) until it is answered 201: after a 503 (waiting ``Retry-After``)
    and after a dropped connection. ``unavailable_ok``: whether a 503 is expected now. ``keyed``: each
    entry is sent with an ``Idempotency-Key`` of its own (the same on every retry), as the client does."""

    def __init__(self, server: Server, token: str, session: str, name: str, tally: Tally,
                 stop: threading.Event, unavailable_ok: Callable[[], bool], *, keyed: bool = False) -> None:
        super().__init__(daemon=True)
        self.server, self.token, self.session, self.name = server, token, session, name
        self.tally, self.stop, self.unavailable_ok, self.keyed = tally, stop, unavailable_ok, keyed
        self.acked = 0

    def run(self) -> None:
        number = 0
        path = f"/v1/sessions/{self.session}/entries"
        with client(self.server, self.token) as http:
            while not self.stop.is_set():
                entry_id = f"{self.name}-{number}"
                started = time.monotonic()
                try:
                    response = http.post(path, json=entry(entry_id),
                                         headers={"Idempotency-Key": f"key-{entry_id}"} if self.keyed else None)
                except httpx.TimeoutException:
                    self.tally.wrong(f"{entry_id}: no answer in {BOUND} s")
                    continue
                except httpx.TransportError:  # (a dropped connection: send it again)
                    with self.tally.lock:
                        self.tally.drops += 1
                    time.sleep(0.05)
                    continue
                finally:
                    self.tally.took(started)
                with self.tally.lock:
                    self.tally.statuses[response.status_code] += 1
                if response.status_code == 201:
                    with self.tally.lock:
                        self.tally.acknowledged.append((self.session, entry_id))
                    self.acked += 1
                    number += 1
                elif response.status_code == 503:
                    if (wrong := unavailable(response)) is not None or not self.unavailable_ok():
                        self.tally.wrong(wrong or f"{entry_id}: 503 while the database is up: {response.text[:200]}")
                    time.sleep(retry_after(response))
                else:
                    self.tally.wrong(f"{entry_id}: {response.status_code} {response.text[:200]}")
                    time.sleep(0.1)


class Follower(threading.Thread):
    """One feed of ``session`` (``GET /v1/sessions/{id}/events``, SSE) as a client reads it: every entry's
    seq and id, in the order they came; a stream that ends or breaks is opened again with
    ``Last-Event-ID`` (after ``Retry-After`` when it was refused with 503). ``hop``: once it is set, the
    follower closes its stream and opens another, as a client whose connection broke. It ends once it
    has seq ``until[session]``, or at ``stop``."""

    def __init__(self, server: Server, token: str, session: str, until: dict[str, int], tally: Tally,
                 stop: threading.Event, hop: threading.Event | None = None) -> None:
        super().__init__(daemon=True)
        self.server, self.token, self.session, self.until = server, token, session, until
        self.tally, self.stop, self.hop = tally, stop, hop
        self.hopped = False
        self.seqs: list[int] = []
        self.ids: list[str] = []
        self.connected = threading.Event()
        self.opened = 0
        self.refused = 0
        self.broken = 0

    def done(self) -> bool:
        target = self.until.get(self.session)
        return self.stop.is_set() or (target is not None and bool(self.seqs) and self.seqs[-1] >= target)

    def run(self) -> None:
        timeout = httpx.Timeout(BOUND, read=BOUND)  # (the heartbeat comes every second: silence is a hang)
        with client(self.server, self.token, timeout) as http:
            while not self.done():
                headers = {"Accept": "text/event-stream"}
                if self.seqs:
                    headers["Last-Event-ID"] = str(self.seqs[-1])
                try:
                    with http.stream("GET", f"/v1/sessions/{self.session}/events", headers=headers) as response:
                        if response.status_code != 200:
                            response.read()
                            if (wrong := unavailable(response)) is not None:
                                self.tally.wrong(f"feed of {self.session}: {wrong}")
                            self.refused += 1
                            time.sleep(retry_after(response))
                            continue
                        self.opened += 1
                        self.connected.set()
                        self._read(response)
                except httpx.TimeoutException:
                    self.tally.wrong(f"feed of {self.session}: silent for {BOUND} s (opened {self.opened} times, at"
                                     f" seq {self.seqs[-1] if self.seqs else None}, {time.strftime('%X')})")
                except httpx.TransportError:
                    self.broken += 1
                    time.sleep(0.05)

    def _read(self, response: httpx.Response) -> None:
        kind, event_id = "message", None
        data: list[str] = []
        for line in response.iter_lines():
            if line == "":
                if kind == "entry" and event_id is not None:
                    self.seqs.append(int(event_id))
                    self.ids.append(str(json.loads("\n".join(data))["id"]))
                kind, data, event_id = "message", [], None
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "event":
                    kind = value
                elif name == "data":
                    data.append(value)
                elif name == "id":
                    event_id = value
            if self.done():
                return
            if self.hop is not None and self.hop.is_set() and not self.hopped:
                self.hopped = True
                return


def stored_ids(url: str, session: str) -> list[str]:
    with SessionStore(url) as store:
        return [str(e["id"]) for e in store.entries(session)]


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def appends_go_on(appenders: list[Appender], more: int = 3, timeout: float = 30) -> bool:
    """Whether each appender has ``more`` appends acknowledged, from now, within ``timeout`` seconds."""
    before = [a.acked for a in appenders]
    return wait_until(lambda: all(a.acked >= b + more for a, b in zip(appenders, before, strict=True)), timeout)


# -- 1. the PostgreSQL server stopped and started again -------------------------------------------------
PROBES: list[tuple[str, str, object]] = [
    ("GET", "/v1/sessions", None), ("GET", "/v1/sessions/s0", None), ("GET", "/v1/sessions/s0/entries", None),
    ("GET", "/v1/sessions/s0/export", None), ("GET", "/v1/search?q=a0", None), ("GET", "/readyz", None),
    ("POST", "/v1/sessions", {"id": "during"}), ("POST", "/v1/sessions/s0/entries", entry("probe")),
    ("GET", "/v1/sessions/s0/events", None),
]
"""Requests sent while the database is down, each of which must be 503."""


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_the_postgresql_server_stopped_and_started_again_while_clients_append_and_feeds_follow(
        cluster: Cluster, serve: Callable[..., Server], mode: str) -> None:
    url = cluster.new_database(f"outage_{mode}")
    token = mint_token(url)
    server = serve(url, "--workers", "2", "--feed-heartbeat", "1")
    sessions = [f"s{n}" for n in range(SESSIONS)]
    with server.client(token) as setup:
        for sid in sessions:
            assert setup.post("/v1/sessions", json={"id": sid, "cwd": "/w"}).status_code == 201

    tally = Tally()
    down = threading.Event()  # (from just before the stop until the server is up again)
    stop_appending = threading.Event()
    stop_following = threading.Event()
    hop = threading.Event()  # (set once the database is down)
    until: dict[str, int] = {}
    followers = [Follower(server, token, sessions[n % SESSIONS], until, tally, stop_following,
                          hop if n % 5 == 0 else None)  # (a fifth of them reconnect while it is down)
                 for n in range(FEEDS)]
    appenders = [Appender(server, token, sessions[n % SESSIONS], f"a{n}", tally, stop_appending, down.is_set,
                          keyed=n % 2 == 1) for n in range(APPENDERS)]
    try:
        for follower in followers:
            follower.start()
        assert all(f.connected.wait(20) for f in followers), "a feed did not open"
        for appender in appenders:
            appender.start()
        assert wait_until(lambda: min(a.acked for a in appenders) >= 3, 20), "the appends did not start"

        down.set()
        cluster.stop(mode)
        went_down = time.monotonic()
        hop.set()
        answered: Counter[str] = Counter()
        with client(server, token) as probe:
            while time.monotonic() - went_down < DOWN_FOR:
                for method, path, body in PROBES:
                    started = time.monotonic()
                    response = probe.request(method, path, json=body) if body is not None \
                        else probe.request(method, path)
                    tally.took(started)
                    if (wrong := unavailable(response)) is not None:
                        tally.wrong(f"probe: {wrong}")
                    answered[path] += 1
                    health = probe.get("/healthz")
                    assert health.status_code == 200 and health.json() == {"status": "ok"}
                time.sleep(0.1)
        during = dict(tally.statuses)
        cluster.start()
        assert appends_go_on(appenders), "the appends did not resume"
        down.clear()
        with server.client(token) as http:  # (the server was not restarted: every worker serves again)
            for _ in range(6):
                assert http.get("/readyz").status_code == 200
    finally:
        stop_appending.set()
        for appender in appenders:
            appender.join(BOUND + 5)
    assert not [a for a in appenders if a.is_alive()], "an appending client hung"

    stored = {sid: stored_ids(url, sid) for sid in sessions}
    until.update({sid: len(ids) - 1 for sid, ids in stored.items()})
    try:
        wait_until(lambda: not [f for f in followers if f.is_alive()], 30)
    finally:
        stop_following.set()
        for follower in followers:
            follower.join(BOUND + 5)
    assert not [f for f in followers if f.is_alive()], "a feed hung"

    assert not tally.bad, tally.bad[:10]
    assert tally.slowest < BOUND
    assert during.get(503, 0) > 0 and min(answered.values()) >= 1, (during, answered)
    counts = Counter((sid, i) for sid, ids in stored.items() for i in ids)
    assert [item for item in tally.acknowledged if counts[item] != 1] == [], "an acknowledged append is lost"
    assert max(counts.values()) == 1, "an entry is stored twice"
    for follower in followers:
        expected = stored[follower.session]
        assert follower.seqs == list(range(len(expected))) and follower.ids == expected, (
            f"a feed of {follower.session} (opened {follower.opened}, refused {follower.refused},"
            f" broken {follower.broken}): {len(follower.seqs)} of {len(expected)} entries,"
            f" first wrong at {next((n for n, s in enumerate(follower.seqs) if s != n), len(follower.seqs))}")
    hoppers = [f for f in followers if f.hop is not None]
    assert min(f.opened for f in hoppers) >= 2 and min(f.refused for f in hoppers) >= 1, \
        [(f.opened, f.refused) for f in hoppers]  # (refused while it was down, then resumed)
    assert "Traceback" not in server.log()


# -- 2. a worker killed with SIGKILL mid-append ------------------------------------------------------------
def worker_pids(server: Server) -> list[int]:
    """The pids of the server's worker processes (children of the supervisor running the multiprocessing
    spawn, not its resource tracker)."""
    found = []
    for task in Path(f"/proc/{server.process.pid}/task").iterdir():
        with contextlib.suppress(OSError):
            for pid in (task / "children").read_text().split():
                with contextlib.suppress(OSError):
                    command = Path(f"/proc/{pid}/cmdline").read_bytes()
                    if b"spawn_main" in command:
                        found.append(int(pid))
    return found


@pytest.fixture(params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'sessions.db'}"
        return
    name, url = fresh_pg_database(request.getfixturevalue("pg_template"))
    yield url
    drop_pg_database(name)


def test_a_worker_killed_mid_append_loses_nothing_acknowledged(database: str, serve: Callable[..., Server]) -> None:
    if database.startswith("sqlite"):
        with SessionStore(database):
            pass  # (the file and its schema, before the token is made in it)
    token = mint_token(database)
    server = serve(database, "--workers", "2")
    clients = 8
    sessions = [f"k{n}" for n in range(clients // 2)]
    with server.client(token) as setup:
        for sid in sessions:
            assert setup.post("/v1/sessions", json={"id": sid, "cwd": "/w"}).status_code == 201
    tally = Tally()
    stop = threading.Event()
    appenders = [Appender(server, token, sessions[n % len(sessions)], f"w{n}", tally, stop, lambda: False)
                 for n in range(clients)]
    killed: list[int] = []
    try:
        for appender in appenders:
            appender.start()
        assert wait_until(lambda: len(worker_pids(server)) == 2 and min(a.acked for a in appenders) >= 3, 20)
        for _ in range(5):  # (until a kill cut requests in flight; nearly always the first)
            victim = worker_pids(server)[0]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)
            assert wait_until(lambda: len(set(worker_pids(server)) - set(killed)) == 2, 20), "no worker came back"
            assert appends_go_on(appenders), "the appends did not go on"
            if tally.drops:
                break
    finally:
        stop.set()
        for appender in appenders:
            appender.join(BOUND + 5)
    assert not [a for a in appenders if a.is_alive()], "an appending client hung"
    assert tally.drops > 0, "no kill cut a request in flight"
    assert not tally.bad, tally.bad[:10]

    counts: Counter[tuple[str, str]] = Counter()
    with SessionStore(database) as store:
        for sid in sessions:
            entries = store.entries(sid)
            for one in entries:
                assert one["type"] == "message" and one["message"]["content"] == one["id"]  # type: ignore[typeddict-item]
                counts[sid, str(one["id"])] += 1
            assert store.validate(sid) == []
    assert [item for item in tally.acknowledged if counts[item] != 1] == [], "an acknowledged append is lost"
    assert max(counts.values()) == 1, "an entry is stored twice"
    if database.startswith("sqlite"):
        with contextlib.closing(sqlite3.connect(database.removeprefix("sqlite:///"))) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert "Traceback" not in server.log()


def test_a_worker_killed_while_the_database_is_down_serves_again_once_it_is_back(
        cluster: Cluster, serve: Callable[..., Server]) -> None:
    """The worker started in place of a killed one cannot open its store while the database is down: it
    waits for it (uvicorn's supervisor would stop the whole server for a worker that fails to start)."""
    url = cluster.new_database("killed_while_down")
    token = mint_token(url)
    server = serve(url, "--workers", "2")
    with client(server, token) as http:
        assert http.post("/v1/sessions", json={"id": "d", "cwd": "/w"}).status_code == 201
        assert wait_until(lambda: len(worker_pids(server)) == 2, 20)
        before = set(worker_pids(server))
        victim = min(before)
        cluster.stop("fast")
        try:
            os.kill(victim, signal.SIGKILL)
            assert wait_until(lambda: len(set(worker_pids(server)) - {victim}) == 2, 20), "no worker came back"
            (new,) = set(worker_pids(server)) - before
            assert wait_until(lambda: "the database cannot be reached" in server.log()
                              or "startup failed" in server.log(), 30), "the new worker did not start"
            time.sleep(1.5)  # (it tries to open its store again, and must not give up)
            assert server.process.poll() is None, f"the server stopped:\n{server.log()[-3000:]}"
            for _ in range(4):
                assert unavailable(http.post("/v1/sessions/d/entries", json=entry("down"))) is None
                assert http.get("/healthz").status_code == 200
        finally:
            cluster.start()
        assert wait_until(lambda: http.get("/readyz").status_code == 200, 20)
    served_by_new = False
    deadline = time.monotonic() + 20
    number = 0
    while not served_by_new and time.monotonic() < deadline:  # (new connections reach either worker)
        with client(server, token) as fresh:
            response = fresh.post("/v1/sessions/d/entries", json=entry(f"after-{number}"))
            assert response.status_code == 201, response.text
            number += 1
        served_by_new = any(f'"pid": {new}' in line for line in server.log().splitlines() if line.startswith("{"))
    assert served_by_new, "the worker started while the database was down never served"
    assert server.process.poll() is None and "Traceback" not in server.log()


# -- 3. an entry written while the change listener reconnects ----------------------------------------------
@pytest.mark.requires(POSTGRES)
def test_an_entry_written_while_the_change_listener_is_away_reaches_the_feed(pg_url: str) -> None:
    """The notification of an entry written while the LISTEN connection is lost is lost with it; the
    listener, once it is back, tells every watch to look (``None``), and the feed reads the entry. The
    listener alone goes through a proxy, so the entry is surely written while it cannot listen."""
    real = make_url(pg_url)
    proxy = Proxy((real.host or "127.0.0.1", real.port or 5432))
    proxy.start()
    proxied = real.set(drivername="postgresql", host="127.0.0.1", port=proxy.port)
    listener = PostgresListener(proxied.render_as_string(hide_password=False))
    got: list[str] = []
    stop = threading.Event()
    with SessionStore(pg_url) as store:
        store.create_session(cwd="/w", session_id="r")

        def read() -> None:
            for event in follow(store._entries, "r", hub=listener, idle=0.05, stop=stop.is_set):
                if event.kind == "entry" and event.line is not None:
                    got.append(json.loads(event.line)["id"])

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            store.append_entries_detailed("r", [entry("before")])
            assert wait_until(lambda: got == ["before"], 10)
            proxy.stop()  # (the listener's connection is cut, and it cannot connect again)
            time.sleep(0.5)
            store.append_entries_detailed("r", [entry("while away")])
            time.sleep(1.0)
            assert got == ["before"]  # (no notification reached the feed)
            proxy.start()  # (the same port: the listener's next try connects)
            assert wait_until(lambda: got == ["before", "while away"], 10), got
            store.append_entries_detailed("r", [entry("after")])
            assert wait_until(lambda: got == ["before", "while away", "after"], 10), got
        finally:
            stop.set()
            reader.join(5)
            listener.close()
            proxy.stop()


# -- 4. an Idempotency-Key claimed when the database went away ------------------------------------------
@pytest.mark.requires(POSTGRES)
@pytest.mark.parametrize("status", [201, 503])
def test_a_claim_the_database_went_away_under_is_ended_once_it_is_back(pg_url: str, status: int) -> None:
    """A request claims its key, then the database goes away before the claim's end is written: the
    answer goes out anyway (201: the request was served; 503: it was not), and the worker writes the
    end once the database answers again, so a retry with the key gets the recorded 201, or runs again
    after a 503, instead of 409 IDEMPOTENCY_KEY_IN_USE until the claim is abandoned (10 minutes)."""
    real = make_url(pg_url)
    proxy = Proxy((real.host or "127.0.0.1", real.port or 5432))
    proxy.start()
    proxied = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    runs: list[int] = []
    with SessionStore(proxied) as store:
        app = SimpleNamespace(state=SimpleNamespace(store=store))
        scope = {"type": "http", "method": "POST", "path": "/v1/sessions", "app": app,
                 "headers": [(b"idempotency-key", b"claimed-then-away")]}
        who = Caller(tenant="default", scope="write", token_id=None)

        async def run_and_lose_the_database() -> Response:
            runs.append(len(runs))
            if len(runs) == 1:
                proxy.stop()  # (after the claim, before its end)
            return Response(b"first", status_code=status if len(runs) == 1 else 201)

        def request() -> Response:
            return asyncio.run(idempotent(Request(scope), who, "fingerprint", run_and_lose_the_database))

        first = request()
        assert (first.status_code, first.body) == (status, b"first")
        with pytest.raises(Exception) as away:  # (still away: the service answers it with 503)
            request()
        assert problem_for_unavailable(away.value) is not None
        proxy.start()
        retry = request()
        if status == 201:
            assert (retry.status_code, retry.body, retry.headers["idempotent-replayed"]) == (201, b"first", "true")
            assert runs == [0]
        else:
            assert retry.status_code == 201 and runs == [0, 1]  # (not served the first time: it runs again)
        assert not app.state.unsettled_claims
    proxy.stop()

"""Operations over TCP against real ``sessionstore serve`` processes (SPEC 17): /healthz, /readyz,
/metrics (by route template, across workers, behind an admin token), the JSON access log, the graceful
stop on SIGTERM, and the PostgreSQL server going away: a closed idle connection, and an outage during
which every request is 503 with Retry-After and after which nothing acknowledged is missing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from sessionstore.api import SessionStore
from sessionstore.service import ops
from tests.conftest import drop_pg_database, fresh_pg_database
from tests.requirements import POSTGRES
from tests.service.conftest import Server, StartServer, launch, mint_token

JSONL = {"Content-Type": "application/jsonl"}


def message(text_: str) -> dict[str, object]:
    return {"type": "message", "message": {"role": "user", "content": text_, "timestamp": 1}}


def samples(body: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The samples of a Prometheus text page: (name, sorted labels) -> value."""
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


def requests_of(page: dict[tuple[str, tuple[tuple[str, str], ...]], float], method: str, route: str,
                status: str) -> float:
    key = ("sessionstore_http_requests_total", (("method", method), ("route", route), ("status", status)))
    return page.get(key, 0.0)


def log_records(server: Server) -> list[dict[str, object]]:
    """The access log's JSON lines (uvicorn's own lines are not JSON)."""
    records = []
    for line in server.log().splitlines():
        if line.startswith("{"):
            records.append(json.loads(line))
    return records


@pytest.fixture(scope="module")
def admin(server: Server) -> Iterator[httpx.Client]:
    with server.client(server.token("ops", "admin")) as client:
        yield client


# -- health ----------------------------------------------------------------------------------------
def test_healthz_and_readyz_answer_without_a_token(server: Server) -> None:
    with server.client() as anonymous:
        health = anonymous.get("/healthz")
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        ready = anonymous.get("/readyz")
        assert ready.status_code == 200 and ready.json() == {"status": "ready"}


def test_readyz_is_503_while_the_schema_is_not_current(server: Server) -> None:
    engine = create_engine(server.url)
    try:
        with engine.begin() as conn:
            conn.execute(text("UPDATE sessionstore_alembic_version SET version_num = '0013'"))
        with server.client() as anonymous:
            response = anonymous.get("/readyz")
        assert response.status_code == 503 and response.headers["retry-after"].isdigit()
        assert response.headers["content-type"] == "application/problem+json"
        body = response.json()
        assert body["code"] == "SERVICE_UNAVAILABLE" and body["storeCode"] == "SCHEMA_OUTDATED"
        assert "db upgrade" in body["detail"]
    finally:
        from sessionstore.store.revision import SCHEMA_REVISION

        with engine.begin() as conn:
            conn.execute(text("UPDATE sessionstore_alembic_version SET version_num = :v"), {"v": SCHEMA_REVISION})
        engine.dispose()
    with server.client() as anonymous:
        assert anonymous.get("/readyz").status_code == 200


# -- metrics ---------------------------------------------------------------------------------------
def test_metrics_need_an_admin_token(server: Server) -> None:
    with server.client() as anonymous:
        assert anonymous.get("/metrics").status_code == 401
    with server.client(server.token("ops", "write")) as writer:
        refused = writer.get("/metrics")
        assert refused.status_code == 403 and refused.json()["code"] == "FORBIDDEN"


def test_metrics_count_requests_by_route_template_and_status(server: Server, admin: httpx.Client) -> None:
    before = samples(admin.get("/metrics").text)
    assert admin.post("/v1/sessions", json={"id": "metered-1", "cwd": "/w"}).status_code == 201
    url = "/v1/sessions/metered-1/entries"
    assert admin.post(url, json=[message("one"), message("two")]).status_code == 201
    assert admin.post(url, json=message("three")).status_code == 201
    assert admin.get("/v1/sessions/no-such-session").status_code == 404
    response = admin.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    after = samples(response.text)
    template = "/v1/sessions/{session_id}/entries"
    assert requests_of(after, "POST", template, "201") - requests_of(before, "POST", template, "201") == 2
    assert requests_of(after, "GET", "/v1/sessions/{session_id}", "404") >= 1
    appended = ("sessionstore_appended_entries_total", ())
    assert after[appended] - before.get(appended, 0.0) == 3
    count = ("sessionstore_http_request_duration_seconds_count", (("method", "POST"), ("route", template)))
    assert after[count] - before.get(count, 0.0) == 2
    assert any(name == "sessionstore_http_request_duration_seconds_bucket" and dict(labels).get("route") == template
               for name, labels in after)
    routes = {dict(labels).get("route") for _, labels in after}
    assert not [route for route in routes if route and ("metered-1" in route or "no-such-session" in route)]
    if server.url.startswith("postgresql"):
        assert after[("sessionstore_db_pool_size", ())] >= 1
        assert ("sessionstore_db_pool_checked_out", ()) in after
    assert after[("sessionstore_open_feeds", (("feed", "session"),))] == 0
    assert after[("sessionstore_open_feeds", (("feed", "tenant"),))] == 0


def test_the_open_feeds_gauge_follows_open_feed() -> None:
    def value() -> float:
        return REGISTRY.get_sample_value("sessionstore_open_feeds", {"feed": "tenant"}) or 0.0

    start = value()
    with ops.open_feed("tenant"):
        assert value() == start + 1
        ops.feed_opened("tenant")
        ops.feed_closed("tenant")
    assert value() == start


def test_a_stop_signal_sets_draining_before_the_handler_in_place_runs() -> None:
    got: list[int] = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
    interrupt = signal.getsignal(signal.SIGINT)
    try:
        ops.watch_for_shutdown()
        ops.watch_for_shutdown()  # (once is enough: a second call wraps nothing again)
        assert not ops.draining()
        signal.raise_signal(signal.SIGTERM)
        assert ops.draining() and got == [signal.SIGTERM]

        async def wait() -> None:
            await asyncio.wait_for(ops.until_draining(), 1)

        asyncio.run(wait())
    finally:
        signal.signal(signal.SIGTERM, before)
        signal.signal(signal.SIGINT, interrupt)
        ops._draining.clear()


@pytest.mark.slow
def test_metrics_add_up_across_workers_and_the_directory_goes_with_the_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # (where serve makes its metrics directory)
    url = f"sqlite:///{tmp_path / 'workers.db'}"
    server = launch(url, tmp_path / "server.log", "--workers", "2", "--metrics-public", "--no-auth")
    try:
        assert [p.name for p in scratch.iterdir() if p.name.startswith("sessionstore-metrics-")]
        for _ in range(3):  # (new connections: the kernel hands them to either worker)
            with server.client() as client:
                for _ in range(10):
                    assert client.get("/healthz").status_code == 200
        seen: set[str] = set()
        total = 0.0
        for _ in range(20):
            with server.client() as client:
                page = client.get("/metrics")
                assert page.status_code == 200
                total = requests_of(samples(page.text), "GET", "/healthz", "200")
                seen.add(page.text.split("\n", 1)[0])
        assert total == 30  # every worker's count, whichever worker answered the scrape
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=30) == 0
    finally:
        server.stop()
    assert not [p for p in scratch.iterdir() if p.name.startswith("sessionstore-metrics-")]


# -- the access log ---------------------------------------------------------------------------------
def test_one_json_log_line_per_request_with_route_request_id_and_tenant_never_a_token(server: Server) -> None:
    token = server.token("acme", "write")
    with server.client(token) as client:
        assert client.post("/v1/sessions", json={"id": "logged-1"}).status_code == 201
        client.get("/v1/sessions/logged-1", headers={"X-Request-Id": "ops-log-1"})
        client.get("/v1/sessions/logged-1/entries", headers={"X-Request-Id": "ops-log-2",
                                                             "Authorization": "Bearer ss_bad_secretvalue"})
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        records = {str(r.get("requestId")): r for r in log_records(server)}
        if "ops-log-1" in records and "ops-log-2" in records:
            break
        time.sleep(0.05)
    one, two = records["ops-log-1"], records["ops-log-2"]
    assert one["method"] == "GET" and one["route"] == "/v1/sessions/{session_id}" and one["status"] == 200
    assert one["tenant"] == "acme" and one["path"] == "/v1/sessions/logged-1"
    assert isinstance(one["durationMs"], float | int) and str(one["ts"]).endswith("Z")
    assert two["status"] == 401 and two["tenant"] is None
    assert set(one) == {"ts", "method", "route", "path", "status", "durationMs", "requestId", "tenant", "pid"}
    log = server.log()
    assert token.rsplit("_", 1)[1] not in log and "secretvalue" not in log and "Bearer" not in log


# -- graceful stop ----------------------------------------------------------------------------------
def _connect_refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except OSError:
        return True


@pytest.mark.slow
def test_sigterm_lets_the_request_in_flight_finish_refuses_new_ones_and_exits_0(
        tmp_path: Path, start_server: StartServer) -> None:
    url = f"sqlite:///{tmp_path / 'graceful.db'}"
    server = start_server(url, "--no-auth", "--graceful-timeout", "20")
    port = int(server.base_url.rsplit(":", 1)[1])
    header = {"type": "session", "version": 3, "id": "in-flight", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}
    lines = [json.dumps(header)] + [
        json.dumps({"type": "message", "id": f"e{n}", "parentId": f"e{n - 1}" if n else None,
                    "timestamp": "2026-01-01T00:00:01.000Z", "message": {"role": "user", "content": f"m{n}",
                                                                         "timestamp": 1}})
        for n in range(200)]
    started = threading.Event()
    stopped = threading.Event()

    def body() -> Iterator[bytes]:
        for index, line in enumerate(lines):
            yield (line + "\n").encode()
            if index == 0:
                started.set()
                stopped.wait(10)  # (the rest goes after SIGTERM)
                time.sleep(0.3)

    result: dict[str, httpx.Response] = {}

    def post() -> None:
        with server.client() as client:
            result["import"] = client.post("/v1/imports", content=body(), headers=JSONL)

    poster = threading.Thread(target=post)
    poster.start()
    assert started.wait(10)
    time.sleep(0.2)  # (the request is in the server's hands)
    server.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 5
    while not _connect_refused(port) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _connect_refused(port), "the server still accepts connections after SIGTERM"
    stopped.set()
    poster.join(30)
    assert result["import"].status_code == 201, result["import"].text
    assert result["import"].json()["entries"] == 200
    assert server.process.wait(timeout=20) == 0
    assert "Traceback" not in server.log()
    with SessionStore(url) as store:
        assert len(store.entries("in-flight")) == 200


@pytest.mark.slow
def test_sigterm_gives_open_feeds_a_last_shutdown_event_then_ends_them(tmp_path: Path,
                                                                       start_server: StartServer) -> None:
    """Both feeds, the session's and the tenant's: a ``shutdown`` event, then the end of the stream (not a
    cut connection), and the server exits 0; the subscriber resumes from its last id elsewhere."""
    url = f"sqlite:///{tmp_path / 'feeds.db'}"
    server = start_server(url, "--no-auth", "--graceful-timeout", "10", "--feed-heartbeat", "0.2")
    with server.client() as client:
        sid = client.post("/v1/sessions", json={"cwd": "/"}).json()["id"]
        client.post(f"/v1/sessions/{sid}/entries", json={"type": "custom", "customType": "t", "data": 1})
    streams: dict[str, list[str]] = {}
    opened = threading.Barrier(3)

    def follow(name: str, path: str) -> None:
        lines: list[str] = []
        streams[name] = lines
        with httpx.Client(base_url=server.base_url, timeout=30) as client, \
                client.stream("GET", path, headers={"Accept": "text/event-stream"}) as response:
            assert response.status_code == 200
            opened.wait(10)
            for line in response.iter_lines():  # (ends cleanly: a cut would raise RemoteProtocolError)
                lines.append(line)
            lines.append("<end>")

    readers = [threading.Thread(target=follow, args=("session", f"/v1/sessions/{sid}/events")),
               threading.Thread(target=follow, args=("tenant", "/v1/events"))]
    for reader in readers:
        reader.start()
    opened.wait(10)
    time.sleep(0.5)  # (both streams are being served)
    server.process.send_signal(signal.SIGTERM)
    for reader in readers:
        reader.join(20)
        assert not reader.is_alive()
    assert server.process.wait(timeout=20) == 0
    for name, lines in streams.items():
        assert lines[-4:] == ["event: shutdown", "data: {}", "", "<end>"], (name, lines[-6:])
    assert "id: 0" in streams["session"]  # (the entry came first)
    assert "Traceback" not in server.log()


# -- the database going away (PostgreSQL) ---------------------------------------------------------------
class Proxy:
    """A TCP forwarder on 127.0.0.1 to the PostgreSQL server: :meth:`stop` makes the database
    unreachable (connections cut, new ones refused) without touching the shared server."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self.listener: socket.socket | None = None
        self.links: set[socket.socket] = set()
        self.lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        listener, self.listener = self.listener, None
        if listener is not None:
            listener.close()
        with self.lock:
            links, self.links = self.links, set()
        for link in links:
            with contextlib.suppress(OSError):
                link.shutdown(socket.SHUT_RDWR)
            link.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                if self.listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self.links |= {client, upstream}
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def pg_database(pg_template: str) -> Iterator[str]:
    name, url = fresh_pg_database(pg_template)
    yield url
    drop_pg_database(name)


def _terminate_connections(url: str) -> int:
    database = make_url(url).database
    admin = create_engine(make_url(url).set(drivername="postgresql+psycopg", database="postgres"),
                          isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            return len(conn.execute(text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = :db AND pid <> pg_backend_pid()"), {"db": database}).all())
    finally:
        admin.dispose()


@pytest.mark.slow
@pytest.mark.requires(POSTGRES)
def test_an_idle_connection_the_database_closed_is_not_an_error(pg_database: str,
                                                                 start_server: StartServer) -> None:
    server = start_server(pg_database, "--no-auth")
    with server.client() as client:
        assert client.post("/v1/sessions", json={"id": "idle"}).status_code == 201
        for n in range(3):
            assert client.post("/v1/sessions/idle/entries", json=message(f"before {n}")).status_code == 201
        assert _terminate_connections(pg_database) >= 1
        assert client.post("/v1/sessions/idle/entries", json=message("after")).status_code == 201
        assert client.get("/v1/sessions/idle").status_code == 200
        assert client.get("/readyz").status_code == 200
        assert client.get("/v1/sessions/idle").json()["entries"] == 4
    assert "Traceback" not in server.log()


def _assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, (response.request.url, response.text)
    assert response.headers["retry-after"].isdigit()
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "SERVICE_UNAVAILABLE" and "Traceback" not in response.text


@pytest.mark.slow
@pytest.mark.requires(POSTGRES)
def test_a_database_outage_is_503_with_retry_after_and_loses_no_acknowledged_append(
        pg_database: str, start_server: StartServer) -> None:
    real = make_url(pg_database)
    proxy = Proxy((real.host or "127.0.0.1", real.port or 5432))
    proxy.start()
    proxied = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    token = mint_token(pg_database, tenant="default", scope="write")
    server = start_server(proxied)
    clients = 16
    with server.client(token) as setup:
        for n in range(clients):
            assert setup.post("/v1/sessions", json={"id": f"c{n}"}).status_code == 201

    acknowledged: list[tuple[str, str]] = []
    statuses: Counter[int] = Counter()
    bad: list[str] = []
    after_restart = [0] * clients
    lock = threading.Lock()
    done = threading.Event()
    restarted = threading.Event()

    def append(n: int) -> None:
        with server.client(token) as client:
            attempt = 0
            while not done.is_set():
                attempt += 1
                content = f"c{n}-{attempt}"
                try:
                    response = client.post(f"/v1/sessions/c{n}/entries", json=message(content))
                except httpx.TransportError as exc:  # (must not happen: the server stays up)
                    with lock:
                        bad.append(f"{content}: {type(exc).__name__}")
                    continue
                with lock:
                    statuses[response.status_code] += 1
                    if response.status_code == 201:
                        acknowledged.append((f"c{n}", content))
                        if restarted.is_set():
                            after_restart[n] += 1
                    elif response.status_code == 503:
                        if not response.headers.get("retry-after", "").isdigit() or "Traceback" in response.text:
                            bad.append(f"{content}: 503 without Retry-After or with a traceback")
                    else:
                        bad.append(f"{content}: {response.status_code} {response.text[:200]}")
                if response.status_code == 503:
                    time.sleep(0.05)

    workers = [threading.Thread(target=append, args=(n,)) for n in range(clients)]
    for worker in workers:
        worker.start()
    time.sleep(0.8)
    proxy.stop()
    time.sleep(1.0)
    with server.client(token) as probe:
        for call in (lambda: probe.get("/v1/sessions"), lambda: probe.get("/v1/sessions/c0"),
                     lambda: probe.get("/v1/sessions/c0/entries"), lambda: probe.get("/readyz"),
                     lambda: probe.post("/v1/sessions", json={"id": "during"}),
                     lambda: probe.post("/v1/sessions/c0/entries", json=message("probe"))):
            _assert_unavailable(call())
        assert probe.get("/healthz").status_code == 200
    proxy.start()
    restarted.set()
    deadline = time.monotonic() + 20
    while min(after_restart) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    done.set()
    for worker in workers:
        worker.join(30)
        assert not worker.is_alive(), "a client hung"
    assert not bad, bad[:5]
    assert statuses[503] > 0 and min(after_restart) >= 2, (statuses, after_restart)
    with server.client(token) as client:
        assert client.get("/readyz").status_code == 200
    proxy.stop()

    stored: Counter[tuple[str, str]] = Counter()
    with SessionStore(pg_database) as store:
        for n in range(clients):
            for entry in store.entries(f"c{n}"):
                stored[f"c{n}", entry["message"]["content"]] += 1  # type: ignore[typeddict-item]
    assert [item for item in acknowledged if stored[item] != 1] == []
    assert max(stored.values()) == 1  # (an append answered 503 may have committed, but never twice)
    assert "Traceback" not in server.log()

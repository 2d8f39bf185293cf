"""The HTTP service against the in-process store, measured in the same run (issue 23).

1. **One client on loopback**: ``POST /v1/sessions/{id}/entries`` (one 1 KB user message, ``If-Match``)
   and ``GET .../context`` p50/p99 over HTTP (one keep-alive connection), against ``append_message`` and
   ``write_context_json`` on a ``SessionStore`` in this process, on a database of the same backend.
   Target: append p50 over HTTP <= in-process p50 + 1.5 ms on SQLite.
2. **32 concurrent clients** for ``--seconds`` (60): each on its own session, 80% appends of 1 KB
   messages with ``If-Match`` (the ETag it last saw; a 412 makes it read the session and go on), 15%
   context reads, 5% list or search; the server runs ``serve --workers 2``. Printed: requests/s, p50/p99
   per route, answers by status. Floor: 32 threads appending the same messages to a ``SessionStore`` in
   this process for the same time. Target: HTTP appends/s >= 0.6x the floor's; no error but 412s;
   every acknowledged append stored exactly once afterwards (checked by ``export``).

The clients run as threads of this process (httpx): on a 2-core machine they share the CPU with the
server's workers, which the ratio includes. ``--quick``: a smoke run of a few seconds.
"""

from __future__ import annotations

import argparse
import io
import json
import socket
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import httpx
from _common import (
    PgDatabases,
    add_common_args,
    log,
    met,
    percentile,
    pg_url_or_note,
    print_table,
    work_dir,
)

from sessionstore.api import SessionStore

TEXT = ("lorem ipsum dolor sit amet " * 40)[:1000]
APPEND_TARGET_MS = 1.5
THROUGHPUT_TARGET = 0.6


def message(n: int) -> dict[str, Any]:
    return {"role": "user", "content": f"{n} {TEXT}", "timestamp": 1_700_000_000_000 + n}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def connect(base_url: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


class Server:
    """``sessionstore --db URL serve --port P [--workers N]`` in a subprocess, and a token of its own."""

    def __init__(self, url: str, workers: int, log_path: Path) -> None:
        script = str(Path(sys.executable).parent / "sessionstore")
        made = subprocess.run([script, "--db", url, "token", "create", "--tenant", "bench", "--json"],
                              capture_output=True, text=True, timeout=120, check=True)
        self.token = json.loads(made.stdout)["token"]
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._log = log_path.open("ab")
        args = [script, "--db", url, "serve", "--port", str(self.port)]
        if workers > 1:
            args += ["--workers", str(workers)]
        self.process = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited with {self.process.returncode}: {log_path.read_text()}")
            try:
                httpx.get(self.base_url + "/openapi.json", timeout=1.0)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError("serve did not answer in 60 s")

    def client(self) -> httpx.Client:
        return connect(self.base_url, self.token)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._log.close()


def ms(samples: list[float], q: float) -> str:
    return f"{percentile(sorted(samples), q) * 1000:.2f}"


# -- 1. one client -----------------------------------------------------------------------------
def one_client(url_http: str, url_local: str, count: int, workdir: Path, label: str) -> list[list[Any]]:
    server = Server(url_http, 1, workdir / f"serve-{label}-1.log")
    try:
        with server.client() as client:
            sid = client.post("/v1/sessions", json={"cwd": "/bench"}).json()["id"]
            etag = '"root"'
            http_append: list[float] = []
            for n in range(count):
                started = time.perf_counter()
                answer = client.post(f"/v1/sessions/{sid}/entries", headers={"If-Match": etag},
                                     json={"type": "message", "message": message(n)})
                http_append.append(time.perf_counter() - started)
                if answer.status_code != 201:
                    raise RuntimeError(f"append answered {answer.status_code}: {answer.text}")
                etag = answer.headers["etag"]
            http_context: list[float] = []
            for _ in range(max(20, count // 20)):
                started = time.perf_counter()
                answer = client.get(f"/v1/sessions/{sid}/context")
                http_context.append(time.perf_counter() - started)
                if answer.status_code != 200:
                    raise RuntimeError(f"context answered {answer.status_code}: {answer.text[:200]}")
    finally:
        server.stop()
    store = SessionStore(url_local)
    try:
        sid = store.create_session(cwd="/bench")
        local_append: list[float] = []
        leaf: str | None = None
        for n in range(count):
            started = time.perf_counter()
            leaf = store.append_message(sid, message(n), expected_leaf=leaf)
            local_append.append(time.perf_counter() - started)
        local_context: list[float] = []
        for _ in range(max(20, count // 20)):
            started = time.perf_counter()
            store.write_context_json(sid, io.BytesIO())
            local_context.append(time.perf_counter() - started)
    finally:
        store.close()
    gap = (percentile(sorted(http_append), 50) - percentile(sorted(local_append), 50)) * 1000
    context_gap = (percentile(sorted(http_context), 50) - percentile(sorted(local_context), 50)) * 1000
    return [
        [f"{label} append", ms(http_append, 50), ms(http_append, 99), ms(local_append, 50), ms(local_append, 99),
         f"+{gap:.2f} ms", met(gap <= APPEND_TARGET_MS) if label == "sqlite" else "-"],
        [f"{label} context", ms(http_context, 50), ms(http_context, 99), ms(local_context, 50),
         ms(local_context, 99), f"+{context_gap:.2f} ms", "-"],
    ]


# -- 2. 32 clients: the load (the workers sweep and the soak run it too) --------------------------
MIXES = {"mixed": (0.80, 0.95, 0.975), "appends": (1.0, 1.0, 1.0), "context": (0.80, 1.0, 1.0),
         "lookups": (0.80, 0.80, 0.90)}
"""What a client does, by a uniform pick in [0, 1): below the first bound an append, then a context
read, a list, a search. ``mixed``: issue 23's 80% appends / 15% context / 2.5% list / 2.5% search;
``appends`` only; ``context``: 80% appends / 20% context; ``lookups``: 80% appends / 10% list / 10%
search (the last three tell apart what a figure of the mix comes from)."""


class Mix:
    """What the clients did: latencies per route, answers by status, and the ids acknowledged."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.statuses: Counter[tuple[str, int]] = Counter()
        self.acked: dict[str, list[str]] = defaultdict(list)
        self.failures: list[str] = []
        self.current: dict[int, str] = {}
        """The session each client (by number) appends to now (in this process)."""

    def note(self, route: str, status: int, seconds: float) -> None:
        with self.lock:
            self.latency[route].append(seconds)
            self.statuses[route, status] += 1

    def requests(self) -> int:
        with self.lock:
            return sum(self.statuses.values())

    def data(self) -> dict[str, Any]:
        """The record as plain data (what a client process sends back)."""
        return {"latency": dict(self.latency), "statuses": list(self.statuses.items()),
                "acked": dict(self.acked), "failures": self.failures}

    def add(self, data: dict[str, Any]) -> None:
        with self.lock:
            for route, samples in data["latency"].items():
                self.latency[route] += samples
            for (route, status), count in data["statuses"]:
                self.statuses[route, status] += count
            for sid, ids in data["acked"].items():
                self.acked[sid] += ids
            self.failures += data["failures"]

    def appended(self) -> int:
        """Appends acknowledged (201)."""
        return sum(c for (route, status), c in self.statuses.items() if route == "append" and status == 201)

    def errors(self) -> dict[str, int]:
        """Answers of 400 and over, but the 412s that the appends' If-Match expects now and then."""
        return {f"{route} {status}": c for (route, status), c in sorted(self.statuses.items())
                if status >= 400 and not (route == "append" and status == 412)}


def make_sessions(server: Server, clients: int) -> list[str]:
    """One session per client, made before the clock starts."""
    with server.client() as client:
        return [client.post("/v1/sessions", json={"cwd": f"/bench/{n % 4}"}).json()["id"] for n in range(clients)]


def client_loop(client: httpx.Client, mix: Mix, number: int, sid: str, stop_at: float, kind: str = "mixed",
                rotate: int = 0) -> None:
    """One client until ``stop_at``: ``kind``'s mix on session ``sid``; with ``rotate``, on a new session
    of its own after each ``rotate`` appends (as an agent starts a new session: the sessions read stay
    that size, where otherwise they grow all along)."""
    import random

    rng = random.Random(number)
    appends, contexts, lists = MIXES[kind]
    etag = client.get(f"/v1/sessions/{sid}").headers["etag"]
    with mix.lock:
        mix.current[number] = sid
    n = on_this = 0
    while time.monotonic() < stop_at:
        pick = rng.random()
        started = time.perf_counter()
        try:
            if pick < appends:
                n += 1
                answer = client.post(f"/v1/sessions/{sid}/entries", headers={"If-Match": etag},
                                     json={"type": "message", "message": message(number * 1_000_000 + n)})
                mix.note("append", answer.status_code, time.perf_counter() - started)
                if answer.status_code == 201:
                    etag = answer.headers["etag"]
                    with mix.lock:
                        mix.acked[sid] += [e["id"] for e in answer.json()["entries"]]
                    on_this += 1
                    if rotate and on_this >= rotate:
                        started = time.perf_counter()
                        made = client.post("/v1/sessions", json={"cwd": f"/bench/{number % 4}"})
                        mix.note("create", made.status_code, time.perf_counter() - started)
                        if made.is_success:
                            sid, etag, on_this = made.json()["id"], '"root"', 0
                            with mix.lock:
                                mix.current[number] = sid
                elif answer.status_code == 412:
                    etag = client.get(f"/v1/sessions/{sid}").headers["etag"]
            elif pick < contexts:
                answer = client.get(f"/v1/sessions/{sid}/context")
                mix.note("context", answer.status_code, time.perf_counter() - started)
            elif pick < lists:
                answer = client.get("/v1/sessions?limit=20")
                mix.note("list", answer.status_code, time.perf_counter() - started)
            else:
                answer = client.get("/v1/search?q=lorem&limit=5")
                mix.note("search", answer.status_code, time.perf_counter() - started)
        except httpx.HTTPError as exc:
            with mix.lock:
                mix.failures.append(f"{type(exc).__name__}: {exc}")


def run_threads(server_url: str, token: str, mix: Mix, clients: list[tuple[int, str]], seconds: float,
                kind: str, rotate: int = 0) -> None:
    """A thread per (client number, session) for ``seconds`` from now."""
    stop_at = time.monotonic() + seconds

    def one(number: int, sid: str) -> None:
        with connect(server_url, token) as client:
            client_loop(client, mix, number, sid, stop_at, kind, rotate)

    threads = [threading.Thread(target=one, args=client) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _client_process(server_url: str, token: str, clients: list[tuple[int, str]], seconds: float, kind: str,
                    rotate: int, ready: Any, go: Any, results: Any) -> None:
    """A client process: its share of the client threads, started when ``go`` is set; sends back its
    record and its CPU seconds."""
    mix = Mix()
    ready.release()
    go.wait()
    cpu = time.process_time()
    run_threads(server_url, token, mix, clients, seconds, kind, rotate)
    results.put({"mix": mix.data(), "cpu": time.process_time() - cpu})


class Load:
    """One run of the clients: the record, its wall seconds and the clients' CPU seconds."""

    def __init__(self, mix: Mix, elapsed: float, client_cpu: float) -> None:
        self.mix, self.elapsed, self.client_cpu = mix, elapsed, client_cpu


def run_load(server: Server, sessions: list[str], seconds: float, *, kind: str = "mixed", processes: int = 0,
             rotate: int = 0, mix: Mix | None = None, on_start: Callable[[], None] | None = None) -> Load:
    """One client per session for ``seconds``: threads of this process (``processes`` 0), or spread
    over ``processes`` processes so that the clients' GIL is not the limit. ``on_start`` runs when the
    clients start (the processes started and imported). The client CPU is this process's (threads; the
    caller's other threads count too) or the client processes' (processes)."""
    mix = mix or Mix()
    if processes <= 0:
        if on_start is not None:
            on_start()
        cpu, started = time.process_time(), time.monotonic()
        run_threads(server.base_url, server.token, mix, list(enumerate(sessions)), seconds, kind, rotate)
        return Load(mix, time.monotonic() - started, time.process_time() - cpu)
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    ready, go, results = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    clients = list(enumerate(sessions))  # (the same client numbers, so the same picks, as with threads)
    procs = [ctx.Process(target=_client_process, args=(server.base_url, server.token, clients[p::processes],
                                                       seconds, kind, rotate, ready, go, results))
             for p in range(processes)]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.acquire()
    if on_start is not None:
        on_start()
    started = time.monotonic()
    go.set()
    client_cpu = 0.0
    for _ in procs:
        got = results.get()
        mix.add(got["mix"])
        client_cpu += got["cpu"]
    elapsed = time.monotonic() - started
    for proc in procs:
        proc.join()
    return Load(mix, elapsed, client_cpu)


def floor_appends(url: str, clients: int, seconds: float) -> float:
    """Appends/s of ``clients`` threads appending to their own sessions of one in-process store."""
    store = SessionStore(url)
    count = [0] * clients
    stop_at = time.monotonic() + seconds

    def loop(number: int) -> None:
        sid = store.create_session(cwd="/bench")
        while time.monotonic() < stop_at:
            store.append_message(sid, message(count[number]))
            count[number] += 1

    started = time.monotonic()
    threads = [threading.Thread(target=loop, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    store.close()
    return sum(count) / elapsed


def check_exactly_once(server: Server, mix: Mix) -> tuple[int, int]:
    """(acknowledged appends, how many of them are not stored exactly once)."""
    wrong = 0
    with server.client() as client:
        for sid, acked in mix.acked.items():
            stored = Counter(json.loads(line)["id"] for line in client.get(
                f"/v1/sessions/{sid}/export?format=jsonl").text.splitlines()[1:] if line)
            wrong += sum(1 for entry_id in acked if stored[entry_id] != 1)
            wrong += sum(count - 1 for count in stored.values() if count > 1)
    return sum(len(a) for a in mix.acked.values()), wrong


def route_rows(mix: Mix, elapsed: float, label: str) -> list[list[Any]]:
    """Per route: requests/s, p50/p99 ms, answers by status."""
    rows = []
    for route in ("append", "context", "list", "search", "create")[:None if mix.latency.get("create") else 4]:
        samples = mix.latency.get(route, [])
        by_status = ", ".join(f"{s}: {c}" for (r, s), c in sorted(mix.statuses.items()) if r == route)
        rows.append([f"{label} {route}", f"{len(samples) / elapsed:.0f}", ms(samples, 50) if samples else "-",
                     ms(samples, 99) if samples else "-", by_status or "-"])
    return rows


def error_line(label: str, mix: Mix) -> str:
    errors = mix.errors()
    return (f"{label}: errors other than the mix's 412s: {sum(errors.values())} {errors or ''}"
            f"{'; transport failures: ' + str(len(mix.failures)) if mix.failures else ''} "
            f"({met(not errors and not mix.failures)})")


def many_clients(url_http: str, url_floor: str, clients: int, seconds: float, workers: int, workdir: Path,
                 label: str) -> tuple[list[list[Any]], list[str]]:
    server = Server(url_http, workers, workdir / f"serve-{label}-{workers}.log")
    try:
        load = run_load(server, make_sessions(server, clients), seconds)
        acked, wrong = check_exactly_once(server, load.mix)
    finally:
        server.stop()
    floor = floor_appends(url_floor, clients, seconds)
    rate = load.mix.appended() / load.elapsed
    lines = [
        f"{label}: HTTP appends {rate:.0f}/s vs {floor:.0f}/s in process with {clients} threads: "
        f"{rate / floor:.2f}x (target >= {THROUGHPUT_TARGET}x: {met(rate / floor >= THROUGHPUT_TARGET)})",
        error_line(label, load.mix),
        f"{label}: {acked} acknowledged appends, {wrong} not stored exactly once ({met(wrong == 0)})",
    ]
    return route_rows(load.mix, load.elapsed, label), lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(parser)
    parser.add_argument("--appends", type=int, default=1000, help="appends of the one-client run (default 1000)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the concurrent run (default 60)")
    parser.add_argument("--workers", type=int, default=2, help="serve --workers of the concurrent run (default 2)")
    args = parser.parse_args()
    if args.quick:
        args.appends, args.clients, args.seconds = 60, 4, 2.0
    pg_url = pg_url_or_note(args)
    with work_dir(args.keep, "sessionstore-bench-service-") as workdir:
        backends: list[tuple[str, Callable[[str], str]]] = [
            ("sqlite", lambda tag: f"sqlite:///{workdir / (tag + '.db')}")]
        dbs = PgDatabases(pg_url, "service") if pg_url else None
        if dbs is not None:
            backends.append(("postgres", lambda tag: dbs.create(tag, migrated=True)))
        try:
            single: list[list[Any]] = []
            concurrent: list[list[Any]] = []
            verdicts: list[str] = []
            for label, make in backends:
                log(f"{label}: one client, {args.appends} appends")
                single += one_client(make("http1"), make("local1"), args.appends, workdir, label)
                log(f"{label}: {args.clients} clients for {args.seconds:.0f} s, serve --workers {args.workers}")
                rows, lines = many_clients(make("http32"), make("local32"), args.clients, args.seconds,
                                           args.workers, workdir, label)
                concurrent += rows
                verdicts += lines
        finally:
            if dbs is not None:
                dbs.drop_all()
    print("One client on loopback (ms): HTTP vs the same call in process")
    print_table(["call", "http p50", "http p99", "local p50", "local p99", "p50 gap", f"<= +{APPEND_TARGET_MS} ms"],
                single)
    print()
    print(f"{args.clients} clients, 80% appends with If-Match / 15% context / 5% list+search, "
          f"serve --workers {args.workers}, {args.seconds:.0f} s")
    print_table(["route", "req/s", "p50 ms", "p99 ms", "answers by status"], concurrent)
    for line in verdicts:
        print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()

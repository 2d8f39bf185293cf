"""Live feeds (issue 24): ``--feeds`` (1,000) open event streams of one session on one worker, and the
delivery latency of an append to all of them, on SQLite and PostgreSQL.

A ``sessionstore serve`` (one worker) runs in a subprocess; this process opens the feeds as plain
asyncio connections (``GET /v1/sessions/{id}/events``) and appends ``--appends`` entries through the API,
one every ``--gap`` seconds. Each delivery's latency is the time from the append's request to the
arrival of its ``id:`` line on a feed. Printed: p50/p99/max over every (feed, append) delivery, the
server's RSS before the feeds and with them open, and the targets (p99 under 1 s, RSS under 300 MB).
The feeds share the 2-core machine with the server, which the figures include. ``--quick``: 20 feeds.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import PgDatabases, add_common_args, log, met, percentile, pg_url_or_note, print_table, work_dir
from _procs import rss_mb
from service import Server

P99_TARGET_MS = 1000.0
RSS_TARGET_MB = 300.0


def server_rss_mb(pid: int) -> float:
    found = rss_mb(pid)
    return float("nan") if found is None else found


async def open_stream(port: int, path: str, token: str, last_event_id: int | None = None,
                      ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, int]:
    """A feed's connection once its response head is read: (reader, writer, status)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    resume = "" if last_event_id is None else f"Last-Event-ID: {last_event_id}\r\n"
    writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n{resume}\r\n".encode())
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    while (await reader.readline()) not in (b"\r\n", b""):
        pass  # (the rest of the response head)
    return reader, writer, status


async def event_ids(reader: asyncio.StreamReader) -> AsyncIterator[int]:
    """The ``id:`` of each event, as it arrives, until the stream ends."""
    while line := await reader.readline():
        if line.startswith(b"id: "):  # (chunked framing puts sizes on lines of their own: not ids)
            yield int(line[4:])


async def open_feed(port: int, path: str, token: str, arrivals: dict[int, list[float]],
                    ready: asyncio.Event, count: list[int], total: int) -> None:
    reader, writer, _status = await open_stream(port, path, token)
    count[0] += 1
    if count[0] == total:
        ready.set()
    try:
        async for seq in event_ids(reader):
            arrivals.setdefault(seq, []).append(time.perf_counter())
    finally:
        writer.close()


async def run_feeds(server: Server, session: str, feeds: int, appends: int, gap: float) -> dict[str, Any]:
    arrivals: dict[int, list[float]] = {}
    ready = asyncio.Event()
    count = [0]
    path = f"/v1/sessions/{session}/events?after=0"
    idle_rss = server_rss_mb(server.process.pid)
    tasks = []
    for _ in range(feeds):  # (opened in steps: a burst of a thousand connects would fill the backlog)
        tasks.append(asyncio.create_task(open_feed(server.port, path, server.token, arrivals, ready, count, feeds)))
        if len(tasks) % 50 == 0:
            await asyncio.sleep(0.05)
    await asyncio.wait_for(ready.wait(), 120)
    await asyncio.sleep(1.0)
    open_rss = server_rss_mb(server.process.pid)
    sent: dict[int, float] = {}
    with server.client() as http:
        for n in range(1, appends + 1):
            started = time.perf_counter()
            made = await asyncio.to_thread(http.post, f"/v1/sessions/{session}/entries",
                                           json={"type": "custom", "customType": "bench", "data": {"n": n}})
            made.raise_for_status()
            sent[n] = started
            await asyncio.sleep(gap)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(len(arrivals.get(n, ())) < feeds for n in sent):
        await asyncio.sleep(0.1)
    peak_rss = server_rss_mb(server.process.pid)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    latencies = sorted((at - sent[n]) * 1000 for n in sent for at in arrivals.get(n, ()))
    missing = feeds * len(sent) - len(latencies)
    return {"idle_rss": idle_rss, "open_rss": open_rss, "peak_rss": peak_rss, "latencies": latencies,
            "missing": missing}


def measure(url: str, label: str, args: argparse.Namespace, workdir: Path) -> list[Any]:
    server = Server(url, 1, workdir / f"serve-feeds-{label}.log")
    try:
        with server.client() as http:
            made = http.post("/v1/sessions", json={"cwd": "/bench"})
            made.raise_for_status()
            session = made.json()["id"]
            http.post(f"/v1/sessions/{session}/entries", json={"type": "custom", "customType": "bench"})
        log(f"{label}: {args.feeds} feeds, {args.appends} appends")
        got = asyncio.run(run_feeds(server, session, args.feeds, args.appends, args.gap))
    finally:
        server.stop()
    lat = got["latencies"]
    p50, p99 = (percentile(lat, 50), percentile(lat, 99)) if lat else (float("nan"), float("nan"))
    return [label, args.feeds, len(lat), got["missing"], f"{p50:.1f}", f"{p99:.1f}",
            f"{lat[-1] if lat else float('nan'):.1f}", f"{got['idle_rss']:.0f}", f"{got['open_rss']:.0f}",
            f"{got['peak_rss']:.0f}", met(p99 < P99_TARGET_MS and got["missing"] == 0),
            met(got["peak_rss"] < RSS_TARGET_MB)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--feeds", type=int, default=1000, help="open feeds (default 1000)")
    parser.add_argument("--appends", type=int, default=20, help="appends measured (default 20)")
    parser.add_argument("--gap", type=float, default=0.5, help="seconds between two appends (default 0.5)")
    args = parser.parse_args()
    if args.quick:
        args.feeds, args.appends, args.gap = 20, 5, 0.2
    pg_url = pg_url_or_note(args)
    rows: list[list[Any]] = []
    with work_dir(args.keep, "sessionstore-bench-feeds-") as workdir:
        rows.append(measure(f"sqlite:///{workdir / 'feeds.db'}", "sqlite", args, workdir))
        if pg_url:
            dbs = PgDatabases(pg_url, "feeds")
            try:
                rows.append(measure(dbs.create("feeds", migrated=True), "postgres", args, workdir))
            finally:
                dbs.drop_all()
    print(f"{args.feeds} feeds of one session on one worker, {args.appends} appends {args.gap:g} s apart:"
          " delivery latency of each append to each feed (ms), server RSS (MB)")
    print_table(["backend", "feeds", "deliveries", "missing", "p50 ms", "p99 ms", "max ms", "RSS idle",
                 "RSS feeds open", "RSS peak", f"p99 < {P99_TARGET_MS:.0f} ms", f"RSS < {RSS_TARGET_MB:.0f} MB"],
                rows)
    sys.stdout.flush()


if __name__ == "__main__":
    main()

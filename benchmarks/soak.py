"""A soak (issue 24): ``--minutes`` (10) of issue 23's mixed load on ``serve --workers 2`` with feeds
open, the memory of each worker sampled every ``--every`` seconds (10): no growth beyond noise.

The load is ``service.py``'s: ``--clients`` (32) clients, each on its own session, 80% appends of 1 KB
messages with ``If-Match``, 15% context reads, 5% list or search. ``--feeds`` (50) Server-Sent Events
subscribers follow the clients' sessions (feed i the session of client i mod 32) and read all along,
resuming with ``Last-Event-ID`` when a stream ends; each checks that it sees every entry once, in order.

Every sample prints a row: seconds since the start, the 1-minute load average, requests/s and feed
events/s since the last row, and the RSS (``VmRSS``) of each worker and of the supervisor. At the end,
per process: first, min, max and last RSS, the medians of the first minute, of the minute from the half
and of the last minute, and over the second half (the first is warm-up) the growth (last minute's
median minus the half minute's) and the slope of a least-squares line (MB/min). Verdict, per worker:
no growth beyond noise when that growth is under 5% and the slope under 1 MB/min. Then: requests by
route and status, latencies, and whether every acknowledged append is stored exactly once and reached
every feed of its session.

With one session per client, as issue 23's load has it, the sessions grow all along (the clients
append to them for the whole run), and so does what a context read of one costs: ``--session-entries
N`` moves each client to a new session every N appends (its feeds follow) so that the sessions read
keep a steady size; ``--load`` runs a part of the mix (``appends``, ``context``, ``lookups``).

SQLite by default; PostgreSQL with ``--pg-url`` (or ``--backend postgres``). The clients and feeds run
in this process (``--client-procs P``: the clients in P processes) on the same cores as the server.
``--quick``: 6 seconds (``--minutes 0.1``), 4 clients, 6 feeds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _procs
from _common import PgDatabases, add_common_args, log, met, pg_url_or_note, print_table, work_dir
from feeds import event_ids, open_stream
from service import MIXES, Load, Mix, Server, check_exactly_once, error_line, make_sessions, route_rows, run_load

GROWTH_SHARE = 0.05
SLOPE_MB_PER_MIN = 1.0


class Feed:
    """One subscriber of client ``client``'s session, and its record: the last seq seen, events, gaps and
    repeats, streams opened, refusals. When the client moves to a new session (``--session-entries``),
    the feed takes the rest of the old one, then follows the new one from its start."""

    def __init__(self, session: str, client: int, mix: Mix) -> None:
        self.session = session
        self.client = client
        self.mix = mix
        self.last = -1
        self.events = 0
        self.gaps = 0
        self.repeats = 0
        self.opened = 0
        self.refused: Counter[int] = Counter()
        self.failures = 0
        self.sessions = 1
        self.left_short = 0
        """Sessions left before their last acknowledged entry arrived."""

    def _moved(self) -> bool:
        return self.mix.current.get(self.client, self.session) != self.session

    def _acked(self) -> int:
        return len(self.mix.acked.get(self.session, ()))

    async def _close_when_moved(self, writer: asyncio.StreamWriter) -> None:
        while not self._moved():
            await asyncio.sleep(0.5)
        deadline = time.monotonic() + 10
        while self.last + 1 < self._acked() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        writer.close()

    async def follow(self, port: int, token: str) -> None:
        while True:
            if self._moved():
                self.left_short += self.last + 1 != self._acked()
                self.session, self.last = self.mix.current[self.client], -1
                self.sessions += 1
            try:
                reader, writer, status = await open_stream(port, f"/v1/sessions/{self.session}/events", token,
                                                           self.last)
            except OSError:
                self.failures += 1
                await asyncio.sleep(0.5)
                continue
            leaving = asyncio.ensure_future(self._close_when_moved(writer))
            try:
                if status != 200:
                    self.refused[status] += 1
                    await asyncio.sleep(0.5)
                    continue
                self.opened += 1
                async for seq in event_ids(reader):
                    if seq <= self.last:
                        self.repeats += 1
                        continue
                    self.gaps += seq - self.last - 1
                    self.events += 1
                    self.last = seq
            except (OSError, ValueError, IndexError):
                self.failures += 1
            finally:
                leaving.cancel()
                writer.close()


class Feeds:
    """The subscribers, on an asyncio loop in a thread of their own."""

    def __init__(self, server: Server, sessions: list[str], count: int, mix: Mix) -> None:
        self.server = server
        self.feeds = [Feed(sessions[i % len(sessions)], i % len(sessions), mix) for i in range(count)]
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="feeds", daemon=True)
        self.tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self.thread.start()

        async def open_all() -> None:
            for feed in self.feeds:
                self.tasks.append(asyncio.ensure_future(feed.follow(self.server.port, self.server.token)))
                await asyncio.sleep(0.01)

        asyncio.run_coroutine_threadsafe(open_all(), self.loop).result(60)

    def events(self) -> int:
        return sum(f.events for f in self.feeds)

    def stop(self) -> None:
        async def cancel() -> None:
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(cancel(), self.loop).result(60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


def stored_counts(server: Server, sessions: list[str]) -> dict[str, int]:
    """Entries stored in each session (its export's lines after the header)."""
    with server.client() as client:
        return {sid: sum(1 for line in client.get(f"/v1/sessions/{sid}/export?format=jsonl").text.splitlines()[1:]
                         if line) for sid in sessions}


def slope_mb_per_min(points: list[tuple[float, float]]) -> float:
    """The slope of the least-squares line through (seconds, MB), in MB per minute."""
    if len(points) < 2:
        return float("nan")
    mean_t = statistics.fmean(t for t, _ in points)
    mean_v = statistics.fmean(v for _, v in points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    return 60 * sum((t - mean_t) * (v - mean_v) for t, v in points) / spread if spread else float("nan")


def growth_row(name: str, points: list[tuple[float, float]], duration: float) -> tuple[list[Any], bool]:
    """The row of one process's RSS samples (seconds, MB), and whether it passes the verdict's rule:
    over the second half (the first is warm-up: a worker's memory rises until the sessions it reads
    reach their size), the last minute's median exceeds the median of the minute from the half by less
    than GROWTH_SHARE of it, and the least-squares slope is under SLOPE_MB_PER_MIN."""
    values = [v for _, v in points]
    window = 60.0 if duration >= 180 else duration / 3  # (a minute; a third of a short run)
    start, half, end = points[0][0], points[0][0] + duration / 2, points[-1][0]
    first = statistics.median([v for t, v in points if t <= start + window] or values[:1])
    middle = statistics.median([v for t, v in points if half <= t <= half + window] or values[-1:])
    last = statistics.median([v for t, v in points if t >= end - window] or values[-1:])
    slope = slope_mb_per_min([(t, v) for t, v in points if t >= half])
    ok = last - middle < GROWTH_SHARE * middle and not slope >= SLOPE_MB_PER_MIN
    return [name, len(points), f"{values[0]:.1f}", f"{min(values):.1f}", f"{max(values):.1f}", f"{values[-1]:.1f}",
            f"{first:.1f}", f"{middle:.1f}", f"{last:.1f}", f"{last - middle:+.1f} ({(last - middle) / middle:+.1%})",
            f"{slope:+.2f}", met(ok)], ok


def soak(url: str, label: str, args: argparse.Namespace, workdir: Path) -> None:
    seconds = args.minutes * 60
    server = Server(url, args.workers, workdir / f"serve-soak-{label}.log")
    try:
        sessions = make_sessions(server, args.clients)
        mix = Mix()
        feeds = Feeds(server, sessions, args.feeds, mix)
        feeds.start()
        loaded: list[Load] = []
        began = [0.0]

        def load() -> None:
            loaded.append(run_load(server, sessions, seconds, kind=args.load, processes=args.client_procs,
                                   rotate=args.session_entries, mix=mix,
                                   on_start=lambda: began.__setitem__(0, time.monotonic())))

        runner = threading.Thread(target=load, name="load")
        runner.start()
        while not began[0] and runner.is_alive():
            time.sleep(0.05)
        series: dict[str, list[tuple[float, float]]] = {}
        names: dict[int, str] = {}
        rotation = f", a new session every {args.session_entries} appends" if args.session_entries else ""
        print(f"{label}: serve --workers {args.workers}, {args.clients} clients ({args.load}{rotation}), "
              f"{args.feeds} feeds, "
              f"{args.minutes:g} min, RSS (MB) every {args.every:g} s", flush=True)
        print(f"{'t s':>6} {'load1':>6} {'req/s':>7} {'feed ev/s':>9}  RSS of each worker, supervisor", flush=True)
        last = (0.0, 0, 0)
        tick = 0
        while True:
            now = time.monotonic() - began[0]
            workers = _procs.serve_workers(server.process.pid)
            for pid in workers:
                names.setdefault(pid, f"worker {len(names) + 1} (pid {pid})")
            readings = [(names[pid], _procs.rss_mb(pid)) for pid in workers]
            if args.workers > 1:
                readings.append((f"supervisor (pid {server.process.pid})", _procs.rss_mb(server.process.pid)))
            for name, value in readings:
                if value is not None:
                    series.setdefault(name, []).append((now, value))
            requests, events = mix.requests(), feeds.events()
            span = max(now - last[0], 1e-9)
            print(f"{now:6.0f} {_procs.loadavg().split()[0]:>6} {(requests - last[1]) / span:7.0f} "
                  f"{(events - last[2]) / span:9.0f}  "
                  + "  ".join(f"{value:.1f}" if value is not None else "-" for _, value in readings), flush=True)
            last = (now, requests, events)
            if not runner.is_alive():
                break
            tick += 1
            runner.join(max(0.0, began[0] + tick * args.every - time.monotonic()))
        runner.join()
        result = loaded[0]
        log(f"{label}: load done; waiting for the feeds to catch up")
        final = {f.client: mix.current.get(f.client, f.session) for f in feeds.feeds}  # (the clients' last sessions)
        stored = stored_counts(server, sorted(set(final.values())))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(f.session != final[f.client] or f.last + 1 < stored[f.session]
                                                  for f in feeds.feeds):
            time.sleep(0.2)
        feeds.stop()
        acked, wrong = check_exactly_once(server, mix)
    finally:
        server.stop()
    print()
    print(f"{label}: RSS per process (MB): first/min/max/last sample, medians of the first minute, of the minute"
          f" from the half and of the last minute; growth over the second half (last minute - half minute) and"
          f" the least-squares slope over it; no growth beyond noise: growth < {GROWTH_SHARE:.0%} and slope <"
          f" {SLOPE_MB_PER_MIN:g} MB/min")
    rows, verdicts = [], []
    for name, points in series.items():
        row, ok = growth_row(name, points, result.elapsed)
        rows.append(row)
        if name.startswith("worker"):
            verdicts.append(ok)
    print_table(["process", "samples", "first", "min", "max", "last", "1st min", "half min", "last min",
                 "growth 2nd half", "MB/min 2nd half", "no growth"], rows)
    print(f"{label}: every worker without growth beyond noise: {met(all(verdicts) and bool(verdicts))}")
    print()
    print(f"{label}: {mix.requests()} requests in {result.elapsed:.0f} s ({mix.requests() / result.elapsed:.0f}/s), "
          f"client CPU {result.client_cpu / result.elapsed:.2f} cores")
    print_table(["route", "req/s", "p50 ms", "p99 ms", "answers by status"], route_rows(mix, result.elapsed, label))
    print(error_line(label, mix))
    print(f"{label}: {acked} acknowledged appends, {wrong} not stored exactly once ({met(wrong == 0)})")
    behind = sum(1 for f in feeds.feeds if f.last + 1 != stored.get(f.session)) + sum(f.left_short for f in feeds.feeds)
    gaps, repeats = sum(f.gaps for f in feeds.feeds), sum(f.repeats for f in feeds.feeds)
    refused = sum((f.refused for f in feeds.feeds), Counter())
    print(f"{label}: feeds: {feeds.events()} events to {len(feeds.feeds)} feeds over "
          f"{sum(f.sessions for f in feeds.feeds)} sessions followed, {gaps} skipped, {repeats} repeated, "
          f"{behind} sessions left before their last entry arrived; streams opened "
          f"{sum(f.opened for f in feeds.feeds)} (resumed {sum(f.opened - f.sessions for f in feeds.feeds)}),"
          f" refused {dict(refused) or 0}, broken {sum(f.failures for f in feeds.feeds)} "
          f"({met(not gaps and not repeats and not behind)})")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(parser)
    parser.add_argument("--minutes", type=float, default=10.0, help="length of the load (default 10)")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between two samples (default 10)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--feeds", type=int, default=50, help="open feeds on the clients' sessions (default 50)")
    parser.add_argument("--workers", type=int, default=2, help="serve --workers (default 2)")
    parser.add_argument("--client-procs", type=int, default=0, metavar="P",
                        help="run the clients in P processes (default 0: threads of this process)")
    parser.add_argument("--load", choices=sorted(MIXES), default="mixed",
                        help="issue 23's mix (default), or a part of it to tell what grows (see service.MIXES)")
    parser.add_argument("--session-entries", type=int, default=0, metavar="N",
                        help="each client moves to a new session after N appends (default 0: one session each,"
                             " growing all along)")
    parser.add_argument("--backend", choices=("auto", "sqlite", "postgres"), default="auto",
                        help="auto (default): PostgreSQL with --pg-url, else SQLite")
    args = parser.parse_args()
    if args.quick:
        args.minutes, args.every, args.clients, args.feeds = 0.1, 1.0, 4, 6
    args.every = min(args.every, max(1.0, args.minutes * 60 / 5))
    backend = args.backend
    if backend == "auto":
        backend = "postgres" if args.pg_url else "sqlite"
    with work_dir(args.keep, "sessionstore-bench-soak-") as workdir:
        if backend == "sqlite":
            soak(f"sqlite:///{workdir / 'soak.db'}", "sqlite", args, workdir)
            return
        pg_url = pg_url_or_note(args)
        if pg_url is None:
            raise SystemExit("--backend postgres needs --pg-url")
        dbs = PgDatabases(pg_url, "soak")
        try:
            soak(dbs.create("soak", migrated=True), "postgres", args, workdir)
        finally:
            dbs.drop_all()


if __name__ == "__main__":
    main()

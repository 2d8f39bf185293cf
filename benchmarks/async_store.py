"""Async store benchmark: ``AsyncSessionStore`` appends and resumes from many asyncio tasks.

On PostgreSQL the async store runs each call on the caller's event loop on psycopg's async
connections (``loop``). It is measured in the same run against two sides on the same server, each on
a database of its own:

- ``threads``: the same calls as ``asyncio.to_thread`` over one sync ``SessionStore`` with 4 worker
  threads (how the async store ran before, and what an agent author would write by hand);
- ``sync``: the sync store called one call after the other (no concurrency), the baseline.

After ``WARM_UP`` appends, each side runs ``--tasks`` tasks (default 8), each appending ``--appends``
real messages (default 200) to a session of its own, then resuming it (``context``) three times. A
ticker task measures how long the loop is kept from running other tasks (the largest gap between its
wake-ups). Printed: appends/s, resumes/s and the largest loop stall per side, and each side's rate
over the ``sync`` baseline.

On SQLite (always run) the async store's calls run on its worker thread: the same table, without
the ``threads`` side (it would be the same thing).

    python benchmarks/async_store.py [--tasks 8] [--appends 200] [--pg-url URL]
    python benchmarks/async_store.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PgDatabases, add_common_args, log, pg_url_or_note, print_table, real_messages, work_dir

Json = dict[str, Any]
WARM_UP = 20
"""Appends to a session of its own before the timing starts, on each side."""


class Ticker:
    """The largest gap between wake-ups of a task that sleeps 1 ms at a time: how long the loop was busy."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._last = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            self.worst = max(self.worst, now - self._last)
            self._last = now

    async def __aenter__(self) -> Ticker:
        self._last = time.perf_counter()
        self._task = asyncio.ensure_future(self._run())
        await asyncio.sleep(0)  # the ticker is running
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self.worst = max(self.worst, time.perf_counter() - self._last)  # a loop that never let it run again
        self._task.cancel()


async def run_side(side: str, url: str, tasks: int, messages: list[Json]) -> tuple[float, float, float]:
    """(appends/s, resumes/s, largest loop stall in seconds) of one side."""
    from sessionstore.aio import AsyncSessionStore
    from sessionstore.api import SessionStore

    call: Any
    if side == "loop":
        store: Any = AsyncSessionStore(url)
        await store.open()

        def call(name: str, *args: Any, **kwargs: Any) -> Any:
            return getattr(store, name)(*args, **kwargs)
    else:
        store = SessionStore(url)
        pool = ThreadPoolExecutor(4)

        async def call(name: str, *args: Any, **kwargs: Any) -> Any:
            method = getattr(store, name)
            if side == "sync":
                return method(*args, **kwargs)
            return await asyncio.get_running_loop().run_in_executor(pool, lambda: method(*args, **kwargs))

    try:
        warm = await call("create_session", cwd="/bench/warm-up")
        for message in messages[:WARM_UP]:
            await call("append_message", warm, message)
        sids = [await call("create_session", cwd=f"/bench/{n}") for n in range(tasks)]

        async def appender(sid: str) -> None:
            for message in messages:
                await call("append_message", sid, message)

        async def resumer(sid: str) -> None:
            await call("context", sid)

        async with Ticker() as ticker:
            started = time.perf_counter()
            if side == "sync":
                for sid in sids:
                    await appender(sid)
            else:
                await asyncio.gather(*(appender(sid) for sid in sids))
            appended = time.perf_counter() - started
            started = time.perf_counter()
            for _ in range(3):
                if side == "sync":
                    for sid in sids:
                        await resumer(sid)
                else:
                    await asyncio.gather(*(resumer(sid) for sid in sids))
            resumed = time.perf_counter() - started
        return tasks * len(messages) / appended, 3 * tasks / resumed, ticker.worst
    finally:
        if side == "loop":
            await store.close()
        else:
            store.close()
            pool.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    parser.add_argument("--tasks", type=int, default=8, help="concurrent tasks, one session each (default 8)")
    parser.add_argument("--appends", type=int, default=200, help="appends per task (default 200)")
    args = parser.parse_args()
    tasks, appends = (2, 10) if args.quick else (args.tasks, args.appends)
    pool = real_messages()
    messages = [pool[n % len(pool)] for n in range(appends)]
    rows: list[list[Any]] = []

    def add(backend: str, results: dict[str, tuple[float, float, float]]) -> None:
        base = results["sync"]
        for side, (rate, resumes, stall) in results.items():
            rows.append([f"{backend} {side}", f"{rate:,.0f}", f"{rate / base[0]:.2f}x", f"{resumes:,.1f}",
                         f"{resumes / base[1]:.2f}x", f"{stall * 1000:.1f} ms"])

    with work_dir(args.keep, "async") as tmp:
        log(f"sqlite: {tasks} tasks x {appends} appends")
        add("sqlite", {
            "sync": asyncio.run(run_side("sync", f"sqlite:///{tmp / 'sync.db'}", tasks, messages)),
            "loop": asyncio.run(run_side("loop", f"sqlite:///{tmp / 'loop.db'}", tasks, messages)),
        })
    pg_url = pg_url_or_note(args)
    if pg_url:
        dbs = PgDatabases(pg_url, "async")
        try:
            results: dict[str, tuple[float, float, float]] = {}
            for side in ("sync", "threads", "loop"):
                log(f"postgresql {side}: {tasks} tasks x {appends} appends")
                results[side] = asyncio.run(run_side(side, dbs.create(side, migrated=True), tasks, messages))
            add("postgresql", results)
        finally:
            dbs.drop_all()
    print(f"{tasks} tasks, {appends} appends each, then 3 resumes each; 'loop' is AsyncSessionStore"
          " (PostgreSQL: psycopg's async connections on the loop; SQLite: its worker thread)")
    print_table(["side", "appends/s", "vs sync", "resumes/s", "vs sync", "largest loop stall"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

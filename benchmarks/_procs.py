"""Other processes' CPU and memory, read from Linux's /proc: a ``serve``'s workers, a PostgreSQL
cluster's processes, the whole machine. Elsewhere (no /proc) every reading is ``None`` and the tables
print "-".

The groups that the service benchmarks tell apart:

* a ``serve``'s **workers**: with ``--workers N`` (N > 1) the children that uvicorn's supervisor
  spawned (``multiprocessing.spawn`` in their command line; not its resource tracker), else the
  ``serve`` process itself;
* a PostgreSQL cluster's **backends of one database** (the postmaster's children whose process title,
  ``postgres: USER DATABASE HOST(PORT) STATE``, names that database) and **the rest of the cluster**
  (the postmaster, its WAL writer, checkpointer and background writer, and the backends of every other
  database: on a shared server, other people's work too);
* the **machine**: busy time of all CPUs from /proc/stat.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

PROC = Path("/proc")
try:
    TICKS = os.sysconf("SC_CLK_TCK")
except (AttributeError, ValueError, OSError):
    TICKS = 100


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (which may hold spaces): [0] is the state,
    [1] the parent pid, [11] utime, [12] stime (in clock ticks)."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2:].split()


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time the process has used so far (its threads included, its children not)."""
    fields = _stat_fields(pid)
    return None if fields is None else (int(fields[11]) + int(fields[12])) / TICKS


def parent(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[1])


def cmdline(pid: int) -> str:
    """The command line (for a PostgreSQL process: its process title), arguments joined by spaces."""
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def rss_mb(pid: int) -> float | None:
    """The process's resident set size now (``VmRSS``), in MB (MiB)."""
    try:
        with (PROC / str(pid) / "status").open() as fp:
            for line in fp:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (a scan of /proc)."""
    found = []
    for entry in PROC.iterdir() if PROC.is_dir() else ():
        if entry.name.isdigit() and parent(int(entry.name)) == pid:
            found.append(int(entry.name))
    return sorted(found)


def serve_workers(serve_pid: int) -> list[int]:
    """The processes that answer requests for the ``serve`` process ``serve_pid`` (see the module)."""
    spawned = [pid for pid in children(serve_pid) if "multiprocessing.spawn" in cmdline(pid)]
    return spawned or [serve_pid]


def postmaster_of(backend_pid: int) -> int | None:
    """The postmaster of a backend (``SELECT pg_backend_pid()``), if that backend runs on this host."""
    if not cmdline(backend_pid).startswith("postgres"):
        return None
    return parent(backend_pid)


def pg_backends(postmaster: int, database: str) -> list[int]:
    """The postmaster's children that serve ``database`` (by their process title)."""
    return [pid for pid in children(postmaster) if f" {database} " in f" {cmdline(pid)} "]


def pg_rest(postmaster: int, database: str) -> list[int]:
    """The postmaster and its children other than ``database``'s backends."""
    return [postmaster] + [pid for pid in children(postmaster) if f" {database} " not in f" {cmdline(pid)} "]


def machine_busy_seconds() -> float | None:
    """CPU seconds that all CPUs have spent busy since boot (everything but idle and iowait)."""
    try:
        fields = [int(v) for v in (PROC / "stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICKS


def loadavg() -> str:
    """The three load averages of /proc/loadavg ("-" elsewhere)."""
    try:
        return " ".join((PROC / "loadavg").read_text().split()[:3])
    except OSError:
        return "-"


class CpuMeter:
    """CPU used by groups of processes over a window, sampled every ``every`` seconds by a thread.

    ``groups`` maps a name to a function that lists the group's pids now (called at every sample: a
    process that appears later counts from zero, one that ends counts up to its last sample). ``cores``
    after ``stop()``: each group's CPU seconds divided by the wall seconds of the window, i.e. the cores
    it kept busy on average; ``"machine"`` is every CPU's busy time. The sampling thread's own CPU counts
    in this process's."""

    def __init__(self, groups: dict[str, Callable[[], Iterable[int]]], every: float = 0.5) -> None:
        self.groups = groups
        self.every = every
        self._first: dict[str, dict[int, float]] = {name: {} for name in groups}
        self._last: dict[str, dict[int, float]] = {name: {} for name in groups}
        self._started = 0.0
        self._elapsed = 0.0
        self._machine: list[float | None] = [None, None]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-meter", daemon=True)

    def _sample(self, first: bool) -> None:
        for name, pids in self.groups.items():
            for pid in pids():
                used = cpu_seconds(pid)
                if used is None:
                    continue
                self._first[name].setdefault(pid, used if first else 0.0)
                self._last[name][pid] = used

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._sample(False)

    def start(self) -> CpuMeter:
        self._machine[0] = machine_busy_seconds()
        self._started = time.monotonic()
        self._sample(True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, float | None]:
        self._stop.set()
        self._thread.join()
        self._sample(False)
        self._elapsed = time.monotonic() - self._started
        self._machine[1] = machine_busy_seconds()
        return self.cores()

    def cores(self) -> dict[str, float | None]:
        got: dict[str, float | None] = {}
        for name in self.groups:
            last = self._last[name]
            got[name] = (sum(last[pid] - self._first[name][pid] for pid in last) / self._elapsed) if last else None
        start, end = self._machine
        got["machine"] = None if start is None or end is None else (end - start) / self._elapsed
        return got


def fmt_cores(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"

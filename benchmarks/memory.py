"""Memory benchmark: peak RSS and wall time of ``context --json``, ``export`` and ``tree --json`` on one
big session, each run as its own ``sessionstore`` process with stdout to ``/dev/null``.

The session (default about 200 MB of JSONL): the real entries of the pi fixtures repeated in file order
with fresh entry ids and fresh tool call ids (``_common.synth_entries``; the call ids are renamed per
repetition so that the transcript is as valid as the real one, not a stream of duplicate-id
diagnostics), chained linearly, so the whole session is the context. Modes:

- ``linear``: that chain;
- ``compacted``: the same chain with a ``compaction`` entry at 10% of it whose ``firstKeptEntryId`` is
  the entry at 5%: the context is the summary and 95% of the entries (the store reads from the kept
  entry on, and ``context_edit`` entries, one near the end editing an early kept message, are applied).

The file is written streamed, then imported with ``sessionstore import`` (not timed as a target;
reused with ``--keep DIR`` when the database there already holds the session). Each command runs as
``python -c <cli runner> --db URL <command>`` in a fresh process, which reports its peak RSS
(``VmHWM`` at exit: exec resets it, so it is the command's own, not the benchmark's); wall time is
the best of ``--repeat`` runs, from spawn to exit (start-up included, as a user sees it). ``startup``
is ``sessionstore --version``: the fixed cost in every row.

Targets: peak RSS < 300 MB for each command (issue 14 item 2); ``context --json`` time <= 3x ``export``'s (issue 25,
which moved issue 14's 2x to 3x; pi 1.6's node on the same file is the other bound: ``benchmarks/pi_read.mjs``).

    python benchmarks/memory.py [--mb 200] [--modes linear,compacted] [--repeat 2] [--keep DIR] [--pg-url URL]
    python benchmarks/memory.py --quick
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    PgDatabases,
    add_common_args,
    dump_line,
    exit_on_sigterm,
    log,
    met,
    pg_url_or_note,
    print_table,
    remove_sqlite,
    synth_entries,
    synth_header,
    work_dir,
)

Json = dict[str, Any]

TARGET_RSS_MB = 300.0
TARGET_CONTEXT_RATIO = 3.0
RSS_MARK = "BENCH-PEAK-RSS-KB "
_RUNNER = f"""
import atexit, os, sys

def _report():
    with open("/proc/self/status") as fp:
        for line in fp:
            if line.startswith("VmHWM:"):
                os.write(2, ("\\n{RSS_MARK}" + line.split()[1] + "\\n").encode())

atexit.register(_report)
sys.argv[0] = "sessionstore"
from sessionstore.cli import main
main()
"""
COMMANDS = ("startup", "context --json", "export", "tree --json")


# -- the session --------------------------------------------------------------------------------------
def _renamed_calls(entry: Json, suffix: str) -> Json:
    """``entry`` with its tool call ids (assistant calls, tool results) given ``suffix`` (copies, the
    pool's payloads untouched)."""
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict):
        return entry
    role = message.get("role")
    if role == "toolResult" and isinstance(message.get("toolCallId"), str):
        return {**entry, "message": {**message, "toolCallId": message["toolCallId"] + suffix}}
    content = message.get("content")
    if role == "assistant" and isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "toolCall" for b in content
    ):
        blocks = [
            {**b, "id": f"{b.get('id')}{suffix}"} if isinstance(b, dict) and b.get("type") == "toolCall" else b
            for b in content
        ]
        return {**entry, "message": {**message, "content": blocks}}
    return entry


def session_entries(min_bytes: int, mode: str) -> Iterator[Json]:
    """Entries of about ``min_bytes`` of JSONL (see the module doc), streamed."""
    size = 0
    n = 0
    # about 1.7 KB per entry: where the compaction goes and what it keeps
    expected = max(100, min_bytes // 1700)
    compact_at, kept_at = expected // 10, expected // 20
    kept_id: str | None = None
    edit_target: str | None = None
    last: str | None = None
    for entry in synth_entries(None):
        if entry.get("type") == "compaction":
            continue  # the pool's own compactions: the modes decide where the context starts
        entry = _renamed_calls(entry, f"_{n // 1000}")
        if mode == "compacted":
            if n == kept_at:
                # the kept part starts at a user message (as pi's cut does); an edit targets it later
                message = entry.get("message")
                if not (isinstance(message, dict) and message.get("role") == "user"):
                    kept_at += 1
                else:
                    kept_id = edit_target = entry["id"]
            if n == compact_at and kept_id is not None:
                compaction = {
                    "type": "compaction", "id": f"c{n:07x}", "parentId": last,
                    "timestamp": "2025-12-09T00:00:00.000Z", "summary": "The session so far: " + "work " * 2000,
                    "firstKeptEntryId": kept_id, "tokensBefore": 150_000,
                }
                yield compaction
                size += len(dump_line(compaction))
                last = compaction["id"]
                entry = {**entry, "parentId": last}
        else:
            entry = dict(entry)
        entry["parentId"] = last if n else None
        line = dump_line(entry)
        size += len(line)
        yield entry
        last = entry["id"]
        n += 1
        if size >= min_bytes:
            break
    if mode == "compacted" and edit_target is not None:
        yield {
            "type": "context_edit", "id": "e0000001", "parentId": last, "timestamp": "2025-12-10T00:00:00.000Z",
            "targetId": edit_target, "replacement": {"content": "an edited first kept message"},
        }


def write_session(path: Path, min_bytes: int, mode: str) -> tuple[str, int, int]:
    """The session file; returns ``(session id, entries, bytes)``."""
    header = synth_header(f"memory-{mode}-{min_bytes}")
    count = 0
    with path.open("wb", buffering=1 << 20) as fp:
        fp.write(dump_line(header))
        for entry in session_entries(min_bytes, mode):
            fp.write(dump_line(entry))
            count += 1
    return header["id"], count, path.stat().st_size


# -- running the commands --------------------------------------------------------------------------
@dataclass
class Run:
    seconds: float
    peak_rss_mb: float
    out_bytes: int
    capped: bool = False


def _hwm_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as fp:
            for line in fp:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def run_cli(url: str, args: list[str], *, count_output: bool = False, cap_s: float | None = None) -> Run:
    """One ``sessionstore --db URL ARGS`` process, stdout to /dev/null (or counted through a pipe).

    Peak RSS: the process's own report at exit, else (stopped at ``cap_s``) the last ``VmHWM`` polled."""
    argv = [sys.executable, "-c", _RUNNER, "--db", url, *args]
    stopped = threading.Event()
    polled = [0]
    began = time.perf_counter()
    with open(os.devnull, "wb") as devnull, tempfile.TemporaryFile() as err_file:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE if count_output else devnull, stderr=err_file)

        def poll() -> None:
            while not stopped.wait(0.02):
                hwm = _hwm_kb(proc.pid)
                if hwm is not None:
                    polled[0] = max(polled[0], hwm)

        watcher = threading.Thread(target=poll, daemon=True)
        watcher.start()
        timer = threading.Timer(cap_s, proc.kill) if cap_s is not None else None
        if timer is not None:
            timer.start()
        out = 0
        capped = False
        try:
            if count_output:
                assert proc.stdout is not None
                while chunk := proc.stdout.read(1 << 20):
                    out += len(chunk)
            proc.wait()
            capped = cap_s is not None and time.perf_counter() - began >= cap_s and proc.returncode != 0
        finally:
            if timer is not None:
                timer.cancel()
            stopped.set()
            watcher.join()
            if proc.stdout is not None:
                proc.stdout.close()
        seconds = time.perf_counter() - began
        err_file.seek(0)
        text = err_file.read().decode("utf-8", "replace")
    if proc.returncode != 0 and not capped:
        tail = "\n".join(text.strip().splitlines()[-15:])
        raise RuntimeError(f"sessionstore {' '.join(args)} failed (exit {proc.returncode}):\n{tail}")
    peak_kb = polled[0]
    for line in text.splitlines():
        if line.startswith(RSS_MARK):
            peak_kb = max(peak_kb, int(line[len(RSS_MARK):]))
    return Run(seconds, peak_kb / 1024, out, capped)


def command_args(command: str, session_id: str) -> list[str]:
    if command == "startup":
        return ["--version"]
    name, *flags = command.split()
    return [name, session_id, *flags]


@dataclass
class Row:
    mode: str
    backend: str
    command: str
    runs: list[Run]

    @property
    def best_s(self) -> float:
        return min(r.seconds for r in self.runs)

    @property
    def peak_mb(self) -> float:
        return max(r.peak_rss_mb for r in self.runs)


def measure(mode: str, backend: str, url: str, session_id: str, repeat: int, cap_s: float,
            commands: list[str]) -> list[Row]:
    """Every command ``repeat`` times, output counted through a pipe; a run stopped at ``cap_s`` (only
    ``tree --json``, whose indented output grows with the square of the tree's depth) is not repeated."""
    rows = []
    for command in commands:
        args = command_args(command, session_id)
        runs: list[Run] = []
        for _ in range(repeat):
            runs.append(run_cli(url, args, count_output=True, cap_s=cap_s if command == "tree --json" else None))
            if runs[-1].capped:
                break
        rows.append(Row(mode, backend, command, runs))
        r = rows[-1]
        log(f"  {backend} {mode}: {command}: best {r.best_s:.2f}s, peak {r.peak_mb:.0f} MB,"
            f" output {r.runs[0].out_bytes / 1e6:.1f} MB{' (stopped)' if r.runs[0].capped else ''}")
    return rows


def prepare(workdir: Path, url: str, backend: str, mode: str, min_bytes: int, *, reuse: bool) -> tuple[str, int, int]:
    """The session in the database at ``url`` (imported from a file written in ``workdir``)."""
    jsonl = workdir / f"memory-{mode}-{min_bytes // 1_000_000}mb.jsonl"
    session_id = synth_header(f"memory-{mode}-{min_bytes}")["id"]
    if reuse and jsonl.exists():
        listed = subprocess.run([sys.executable, "-c", _RUNNER, "--db", url, "ls", "--json"], capture_output=True,
                                check=False)
        if listed.returncode == 0 and session_id.encode() in listed.stdout:
            log(f"  {backend} {mode}: reusing the session in {url}")
            entries = sum(1 for raw in jsonl.open("rb") if raw.strip()) - 1
            return session_id, entries, jsonl.stat().st_size
    if not (reuse and jsonl.exists()):
        began = time.perf_counter()
        session_id, entries, size = write_session(jsonl, min_bytes, mode)
        log(f"  wrote {jsonl.name}: {entries:,} entries, {size / 1e6:.1f} MB in {time.perf_counter() - began:.1f}s")
    else:
        entries = sum(1 for raw in jsonl.open("rb") if raw.strip()) - 1
        size = jsonl.stat().st_size
    run = run_cli(url, ["--durability", "normal", "import", "--replace", "--silent", str(jsonl)])
    log(f"  {backend} {mode}: imported in {run.seconds:.1f}s (peak RSS {run.peak_rss_mb:.0f} MB)")
    return session_id, entries, size


# -- output -------------------------------------------------------------------------------------------
def print_report(rows: list[Row], sizes: dict[tuple[str, str], tuple[int, int]], repeat: int) -> None:
    print("memory: each command a fresh `sessionstore --db URL ...` process, stdout to /dev/null;"
          f" time = best of {repeat} runs, spawn to exit; peak RSS = the process's VmHWM (max over the runs)")
    for (backend, mode), (entries, size) in sizes.items():
        print(f"session {backend}/{mode}: {entries:,} entries, {size / 1e6:.1f} MB of JSONL")
    headers = ["command", "mode", "backend", "time s", "peak RSS MB", "output MB", "output MB/s", "x export time",
               "RSS target"]
    table = []
    for r in rows:
        export = next((x for x in rows if x.mode == r.mode and x.backend == r.backend and x.command == "export"), r)
        first = r.runs[0]
        stopped = f"stopped at {first.seconds:.0f}s: " if first.capped else ""
        table.append([
            r.command, r.mode, r.backend, f"{r.best_s:.2f}", f"{r.peak_mb:.0f}",
            f"{stopped}{first.out_bytes / 1e6:.1f}", f"{first.out_bytes / 1e6 / first.seconds:.0f}",
            "-" if first.capped else f"{r.best_s / export.best_s:.2f}x",
            met(r.peak_mb < TARGET_RSS_MB),
        ])
    print_table(headers, table)
    if any(r.runs[0].capped for r in rows):
        print("(a stopped run: its output so far and the peak RSS polled until then; tree --json writes pi's nested"
              " tree indented, so a linear session's output grows with the square of its length)")
    print()


def print_targets(rows: list[Row]) -> None:
    measured = [r for r in rows if r.command != "startup"]
    if not measured:
        return
    worst = max(measured, key=lambda r: r.peak_mb)
    print(f"target: peak RSS < {TARGET_RSS_MB:.0f} MB for context --json, export, tree --json: worst"
          f" {worst.peak_mb:.0f} MB ({worst.command}, {worst.mode}, {worst.backend})"
          f" -> {met(worst.peak_mb < TARGET_RSS_MB)}")
    for r in rows:
        if r.command != "context --json":
            continue
        export = next((x for x in rows if x.mode == r.mode and x.backend == r.backend and x.command == "export"), None)
        if export is None:
            continue
        ratio = r.best_s / export.best_s
        print(f"target: {r.backend}/{r.mode} context --json <= {TARGET_CONTEXT_RATIO:.0f}x export time:"
              f" {r.best_s:.2f}s / {export.best_s:.2f}s = {ratio:.2f}x -> {met(ratio <= TARGET_CONTEXT_RATIO)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=None, help="session size in MB of JSONL (default 200)")
    parser.add_argument("--modes", default="linear,compacted", help="linear, compacted or both (default both)")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per command (default 2)")
    parser.add_argument("--commands", default=",".join(COMMANDS),
                        help=f"comma-separated (default {','.join(COMMANDS)}; ratios need export)")
    parser.add_argument("--tree-cap", type=float, default=60.0, metavar="S",
                        help="stop tree --json after S seconds (default 60)")
    add_common_args(parser)
    args = parser.parse_args(argv)
    exit_on_sigterm()
    min_bytes = int((args.mb or (10 if args.quick else 200)) * 1_000_000)
    repeat = args.repeat or (1 if args.quick else 2)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for mode in modes:
        if mode not in ("linear", "compacted"):
            parser.error(f"unknown mode {mode!r}")
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    for command in commands:
        if command not in COMMANDS:
            parser.error(f"unknown command {command!r}")
    pg_url = pg_url_or_note(args)
    started = time.perf_counter()
    rows: list[Row] = []
    sizes: dict[tuple[str, str], tuple[int, int]] = {}
    with work_dir(args.keep, "sessionstore-memory-") as workdir:
        db = workdir / "memory.db"
        if not args.keep:
            remove_sqlite(db)
        try:
            for mode in modes:
                sid, entries, size = prepare(workdir, f"sqlite:///{db}", "sqlite", mode, min_bytes,
                                             reuse=bool(args.keep))
                sizes["sqlite", mode] = (entries, size)
                rows.extend(measure(mode, "sqlite", f"sqlite:///{db}", sid, repeat, args.tree_cap, commands))
        finally:
            if not args.keep:
                remove_sqlite(db)
        if pg_url:
            dbs = PgDatabases(pg_url, "memory")
            try:
                url = dbs.create("store", migrated=True, primed=False)
                for mode in modes:
                    sid, entries, size = prepare(workdir, url, "postgresql", mode, min_bytes, reuse=False)
                    sizes["postgresql", mode] = (entries, size)
                    rows.extend(measure(mode, "postgresql", url, sid, repeat, args.tree_cap, commands))
            finally:
                dbs.drop_all()
    print_report(rows, sizes, repeat)
    print_targets(rows)
    print(f"total {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

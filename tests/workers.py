"""Writer processes for the concurrency and crash-safety tests, and the parent-side handle on them.

Run from the repository root as ``python -m tests.workers MODE ...`` (or ``python tests/workers.py``).
Every worker opens its store, prints ``{"event": "ready"}`` and then waits for one byte on stdin (the
barrier: the parent releases all workers at once; EOF without a byte means "do not start"). Workers
report on stdout, one JSON object per line, each written with a single ``write`` and flushed:

- ``append``: ``--count`` appends to ``--session`` (with ``--expected-leaf``: read the leaf, append
  with ``expected_leaf=`` it, retry on :class:`LeafConflictError` until ``--count`` appends landed),
  then one ``{"event": "result", ...}`` line (ids landed, conflicts, attempts, errors);
- ``stream``: appends to ``--session`` until killed; prints ``{"ack": id}`` right after each
  ``append_message`` returns, so every line the parent reads names an acknowledged append;
- ``read``: reads the path and the context of ``--session`` until ``--stop-file`` exists, checking that
  every read is whole, then one ``result`` line (reads, violations, errors);
- ``import``: ``import_jsonl(--file)``; prints ``{"event": "progress", "bytes": n}`` from the progress
  callback (inside the import's transaction) and ``{"event": "result", ...}`` once it returned.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

if __package__ in (None, ""):  # run as a script: make `tests` and `sessionstore` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

Json = dict[str, Any]
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TIMEOUT = 300.0
"""Generous: a worker that has not answered in this many seconds is hung, not slow."""


# -- worker side -------------------------------------------------------------------------------
def _emit(out: IO[str], payload: Json) -> None:
    out.write(json.dumps(payload, separators=(",", ":")) + "\n")
    out.flush()


def _describe(exc: BaseException) -> str:
    """``Type: message (at file:line in function)`` for the innermost frame of the error."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return f"{type(exc).__name__}: {exc}"[:400] + where


def _barrier(out: IO[str]) -> bool:
    _emit(out, {"event": "ready", "pid": os.getpid()})
    return sys.stdin.buffer.read(1) != b""


def _append(args: argparse.Namespace, out: IO[str]) -> int:
    from sessionstore.api import SessionStore
    from sessionstore.errors import LeafConflictError
    from tests.builders import user

    ok: list[str] = []
    conflicts = 0
    attempts = 0
    errors: list[str] = []
    with SessionStore(args.url) as store:
        if not _barrier(out):
            return 3
        while len(ok) < args.count and len(errors) < 20:
            message = user(f"{args.tag} {len(ok)}")
            attempts += 1
            try:
                if args.expected_leaf:
                    leaf = store.leaf(args.session)
                    ok.append(store.append_message(args.session, message, expected_leaf=leaf))
                else:
                    ok.append(store.append_message(args.session, message))
            except LeafConflictError:
                conflicts += 1
            except Exception as exc:  # reported, not raised: the parent asserts there is none
                errors.append(_describe(exc))
    _emit(out, {"event": "result", "tag": args.tag, "ids": ok, "conflicts": conflicts, "attempts": attempts,
                "errors": errors})
    return 0 if not errors else 1


def _stream(args: argparse.Namespace, out: IO[str]) -> int:
    from sessionstore.api import SessionStore
    from tests.builders import user

    with SessionStore(args.url) as store:
        if not _barrier(out):
            return 3
        n = 0
        while True:
            entry_id = store.append_message(args.session, user(f"{args.tag} {n}"))
            _emit(out, {"ack": entry_id})
            n += 1


def _read(args: argparse.Namespace, out: IO[str]) -> int:
    """Read the session's path and context while others append, until ``--stop-file`` exists; each read
    must be whole: the path a chain from a root, never shorter than an earlier one, the context's
    entries exactly the path to its leaf."""
    from sessionstore.api import SessionStore

    reads = 0
    longest = 0
    violations: list[str] = []
    errors: list[str] = []
    stop = Path(args.stop_file)
    with SessionStore(args.url) as store:
        if not _barrier(out):
            return 3
        while len(violations) + len(errors) < 20:
            done = stop.exists()  # one more read after the writers are done
            try:
                path = [e["id"] for e in store.path(args.session)]
                parents = [e["parentId"] for e in store.path(args.session, leaf_id=path[-1])] if path else []
                if parents != [None, *path[:-1]][: len(path)]:
                    violations.append(f"read {reads}: path of {len(path)} entries is not a chain from a root")
                if len(path) < longest:
                    violations.append(f"read {reads}: path of {len(path)} entries after one of {longest}")
                longest = max(longest, len(path))
                ctx = store.context(args.session)
                expected = [e["id"] for e in store.path(args.session, leaf_id=ctx.leaf_id)] if ctx.leaf_id else []
                if ctx.entry_ids != expected or len(ctx.messages) != len(expected):
                    violations.append(
                        f"read {reads}: context at {ctx.leaf_id} has {len(ctx.entry_ids)} entries"
                        f" ({len(ctx.messages)} messages), the path to it {len(expected)}"
                    )
                reads += 1
            except Exception as exc:
                errors.append(_describe(exc))
            if done:
                break
    _emit(out, {"event": "result", "tag": args.tag, "reads": reads, "longest": longest, "violations": violations,
                "errors": errors})
    return 0 if not violations and not errors else 1


def _import(args: argparse.Namespace, out: IO[str]) -> int:
    from sessionstore.api import SessionStore

    with SessionStore(args.url) as store:
        if not _barrier(out):
            return 3
        result = store.import_jsonl(args.file, progress=lambda n: _emit(out, {"event": "progress", "bytes": n}))
    _emit(out, {"event": "result", **result.to_json()})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.workers")
    sub = parser.add_subparsers(dest="mode", required=True)
    for mode in ("append", "stream"):
        p = sub.add_parser(mode)
        p.add_argument("--url", required=True)
        p.add_argument("--session", required=True)
        p.add_argument("--tag", default=mode)
        if mode == "append":
            p.add_argument("--count", type=int, required=True)
            p.add_argument("--expected-leaf", action="store_true")
    p = sub.add_parser("read")
    p.add_argument("--url", required=True)
    p.add_argument("--session", required=True)
    p.add_argument("--stop-file", required=True)
    p.add_argument("--tag", default="read")
    p = sub.add_parser("import")
    p.add_argument("--url", required=True)
    p.add_argument("--file", required=True)
    args = parser.parse_args(argv)
    out = sys.stdout
    try:
        return {"append": _append, "stream": _stream, "read": _read, "import": _import}[args.mode](args, out)
    except BaseException:
        traceback.print_exc()
        return 2


# -- parent side -------------------------------------------------------------------------------
class Worker:
    """A worker process: JSON lines from its stdout arrive through a reader thread; stderr goes to a
    file (shown in failures). Always end it with :meth:`kill` or :meth:`finish` (``workers()`` does)."""

    def __init__(self, mode: str, *args: str, log_dir: Path, name: str) -> None:
        self.name = name
        self.stderr_path = log_dir / f"{name}.stderr"
        self._stderr = self.stderr_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.workers", mode, *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self.lines: list[Json] = []
        """Every complete line read so far (a line cut by a kill, without its newline, is dropped)."""
        self._queue: queue.Queue[Json | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            if not raw.endswith(b"\n"):
                break
            line = json.loads(raw)
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, predicate: Callable[[Json], bool], timeout: float = DEFAULT_TIMEOUT) -> Json:
        """The next line that satisfies ``predicate`` (earlier lines are skipped, but kept in ``lines``)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{self.name}: no expected line within {timeout}s{self.diagnostics()}")
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                self._queue.put(None)
                raise AssertionError(f"{self.name}: stdout closed before the expected line{self.diagnostics()}")
            if predicate(line):
                return line

    def poll(self, predicate: Callable[[Json], bool], timeout: float) -> Json | None:
        """Like :meth:`wait_for`, but ``None`` when no such line came within ``timeout`` or stdout closed."""
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                return None
            if line is None:
                self._queue.put(None)  # keep the end visible to later calls
                return None
            if predicate(line):
                return line
        return None

    def wait_ready(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.wait_for(lambda line: line.get("event") == "ready", timeout)

    def go(self) -> None:
        """Release the barrier (one byte, then EOF)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"g")
        self.proc.stdin.close()

    def kill(self, timeout: float = DEFAULT_TIMEOUT) -> list[Json]:
        """SIGKILL, reap, and drain stdout; returns every complete line the worker wrote.
        :attr:`killed` tells whether the kill ended it (else it had exited by itself before)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        return self._reap(timeout)

    @property
    def killed(self) -> bool:
        return self.proc.returncode == -signal.SIGKILL

    def finish(self, timeout: float = DEFAULT_TIMEOUT) -> list[Json]:
        """Wait for the worker to exit and return its lines (the exit status is :attr:`returncode`)."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name}: still running after {timeout}s{self.diagnostics()}") from None
        return self._reap(timeout)

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def result(self) -> Json:
        """The worker's ``{"event": "result"}`` line (after :meth:`finish`); a worker without one failed."""
        found = [line for line in self.lines if line.get("event") == "result"]
        if len(found) != 1:
            raise AssertionError(f"{self.name}: exit status {self.returncode}, no result line{self.diagnostics()}")
        return found[0]

    def _reap(self, timeout: float) -> list[Json]:
        self.proc.wait(timeout)
        self._reader.join(timeout)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                with suppress(BrokenPipeError):
                    stream.close()
        if not self._stderr.closed:
            self._stderr.close()
        return self.lines

    def diagnostics(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        err = self.stderr_path.read_text(errors="replace")[-4000:]
        return f"\n--- {self.name} stderr ---\n{err}" if err else ""


@contextmanager
def workers() -> Iterator[list[Worker]]:
    """A list to put started workers in; whatever is still running at the end is killed and reaped."""
    started: list[Worker] = []
    try:
        yield started
    finally:
        for worker in started:
            worker.kill()


def release(started: list[Worker]) -> None:
    """Wait until every worker is ready, then release them together."""
    for worker in started:
        worker.wait_ready()
    for worker in started:
        worker.go()


if __name__ == "__main__":
    raise SystemExit(main())

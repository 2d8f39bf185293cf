"""Shared helpers of the append, import and export benchmarks.

- the real pi files (``fixtures/pi``) and their entries, the pool that synthetic data is built from;
- synthetic v3 session files: the real entries repeated in file order with fresh ids, chained
  linearly (each entry's parent is the previous one), real payloads kept, so sizes stay realistic
  (about 1.7 KB per entry on average, the mix of the two real files); written streamed;
- PostgreSQL databases for a run (created on the server given by ``--pg-url`` or
  ``$SESSIONSTORE_BENCH_PG_URL``, always dropped afterwards);
- child processes that report their peak RSS (``VmHWM``), so measurements do not pollute each other;
- statistics and plain-text tables.

Only the standard library and orjson are imported at module level: child processes that run a
floor import this module without loading sessionstore.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import IO, Any

import orjson

Json = dict[str, Any]

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
PI_DIR = ROOT / "fixtures" / "pi"
REAL_FILES = (PI_DIR / "large-session.jsonl", PI_DIR / "before-compaction.jsonl")
"""The two real pi session files as pi wrote them (version 1: importing them upgrades every entry)."""
REAL_V3_FILES = (PI_DIR / "large-session.v3.jsonl", PI_DIR / "before-compaction.v3.jsonl")
"""The same sessions upgraded by pi to version 3: the pool of entries for synthetic data."""
PG_ENV = "SESSIONSTORE_BENCH_PG_URL"
SYNTH_CWD = "/work/bench"


def log(message: str) -> None:
    """Progress goes to stderr; stdout carries only the tables and target lines."""
    print(message, file=sys.stderr, flush=True)


# -- command line ----------------------------------------------------------------------------------
def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pg-url",
        default=os.environ.get(PG_ENV),
        help=f"PostgreSQL server URL (default ${PG_ENV}); the benchmark creates and drops its own databases",
    )
    parser.add_argument("--keep", metavar="DIR", help="write files and SQLite databases to DIR and keep them")
    parser.add_argument("--quick", action="store_true", help="a small smoke run (seconds, not minutes)")


def pg_url_or_note(args: argparse.Namespace) -> str | None:
    url: str | None = args.pg_url or None
    if url is None:
        print(f"note: PostgreSQL skipped (no --pg-url and ${PG_ENV} is not set)")
    return url


@contextlib.contextmanager
def work_dir(keep: str | None, prefix: str) -> Iterator[Path]:
    """``keep`` (created if needed, kept) or a temporary directory (removed afterwards)."""
    if keep:
        path = Path(keep)
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def remove_sqlite(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def sqlite_pragmas(conn: Any, durability: str) -> None:
    """The pragmas the store sets on every SQLite connection (see ``sessionstore.store.engine``)."""
    conn.execute("PRAGMA busy_timeout = 60000")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {'FULL' if durability == 'full' else 'NORMAL'}")


# -- real and synthetic entries --------------------------------------------------------------------
@cache
def real_pool() -> tuple[tuple[Json, ...], ...]:
    """The entries (no header) of each real v3 file, in file order."""
    files = []
    for path in REAL_V3_FILES:
        with path.open("rb") as fp:
            lines = [orjson.loads(raw) for raw in fp if raw.strip()]
        files.append(tuple(lines[1:]))
    return tuple(files)


def real_messages() -> list[Json]:
    """Every message of the real files (user, assistant, toolResult, bashExecution), in file order."""
    return [e["message"] for entries in real_pool() for e in entries if e.get("type") == "message"]


def synth_id(n: int) -> str:
    """8 hex characters like pi's ids; distinct for every n < 2**32 (multiplication by an odd constant)."""
    return f"{(n * 2654435761) & 0xFFFFFFFF:08x}"


def synth_header(tag: str) -> Json:
    return {
        "type": "session",
        "version": 3,
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"sessionstore-bench/{tag}")),
        "timestamp": "2025-12-01T00:00:00.000Z",
        "cwd": SYNTH_CWD,
    }


SYNTH_SOURCES = {"both": (0, 1), "large-session": (0,)}
"""Which real files synthetic entries cycle through: ``both`` (about 1.7 KB per entry, the default) or
``large-session`` only (about 1 KB per entry: the issue's "100,000 entries, about 100 MB"; more
entries per GB, so the harder case for memory that grows with the entry count)."""


def synth_entries(
    count: int | None, *, first: int = 0, parent: str | None = None, source: str = "both"
) -> Iterator[Json]:
    """``count`` entries (``None``: endless) cycling through the real files' entries in file order, with
    fresh ids (``synth_id(first)``, ``synth_id(first + 1)``, ...) chained linearly from ``parent``.
    A compaction's ``firstKeptEntryId`` is mapped to the copy of that entry in the same pass (so it
    stays on the path). Each entry is a new top-level dict; nested payloads are shared with the pool."""
    files = real_pool()
    pool = [e for i in SYNTH_SOURCES[source] for e in files[i]]
    n = first
    made = 0
    while count is None or made < count:
        renamed: dict[str, str] = {}
        for source in pool:
            if count is not None and made >= count:
                return
            entry = dict(source)
            new_id = synth_id(n)
            renamed[source["id"]] = new_id
            entry["id"] = new_id
            entry["parentId"] = parent
            kept = entry.get("firstKeptEntryId")
            if isinstance(kept, str) and kept in renamed:
                entry["firstKeptEntryId"] = renamed[kept]
            yield entry
            parent = new_id
            n += 1
            made += 1


def dump_line(value: Any) -> bytes:
    """A JSONL line as pi writes it (the library's writer: compact, JS number forms)."""
    from sessionstore.wire.codec import dump_line as library_dump_line

    return library_dump_line(value)


def write_synth_file(
    path: Path,
    *,
    entries: int | None = None,
    min_bytes: int | None = None,
    tag: str | None = None,
    source: str = "both",
) -> tuple[int, int]:
    """Write a synthetic v3 file of ``entries`` entries, or of as many as reach ``min_bytes``, streamed
    (one entry in memory at a time). Returns ``(entries, bytes)``."""
    if (entries is None) == (min_bytes is None):
        raise ValueError("give entries or min_bytes")
    written = 0
    size = 0
    with path.open("wb", buffering=1 << 20) as fp:
        line = dump_line(synth_header(tag or path.stem))
        fp.write(line)
        size += len(line)
        for entry in synth_entries(entries, source=source):
            line = dump_line(entry)
            fp.write(line)
            size += len(line)
            written += 1
            if min_bytes is not None and size >= min_bytes:
                break
    return written, size


def ensure_synth_file(path: Path, entries: int) -> int:
    """The synthetic file of ``entries`` entries at ``path`` (reused when ``--keep`` left one there)."""
    if path.exists():
        with path.open("rb") as fp:
            if sum(1 for raw in fp if raw.strip()) == entries + 1:
                log(f"  reusing {path.name}")
                return path.stat().st_size
    began = time.perf_counter()
    _n, size = write_synth_file(path, entries=entries)
    log(f"  wrote {path.name}: {entries:,} entries, {size / 1e6:.1f} MB in {time.perf_counter() - began:.1f}s")
    return size


def count_entries(path: Path) -> int:
    with path.open("rb") as fp:
        return sum(1 for raw in fp if raw.strip()) - 1


# -- PostgreSQL ------------------------------------------------------------------------------------
def pg_libpq_url(url: str, database: str | None = None) -> str:
    """``url`` (SQLAlchemy or libpq form) as a libpq URL for psycopg, optionally for ``database``."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url).set(drivername="postgresql")
    if database is not None:
        parsed = parsed.set(database=database)
    return parsed.render_as_string(hide_password=False)


def pg_admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(pg_libpq_url(url), autocommit=True) as conn:
        conn.execute(sql)


PRIME_ENTRIES = 1_000


class PgDatabases:
    """Databases created for one benchmark run on the server at ``url``; ``drop_all`` removes them.

    ``create(migrated=True)`` clones a migrated template. A *primed* template (the default) also holds
    one unrelated session of ``PRIME_ENTRIES`` entries and has been ANALYZEd: in a database whose
    ``entries`` table has never had statistics, PostgreSQL plans the lookups by (session_id, entry_id)
    (``_ENTRY_EXISTS`` and the parent foreign key check) on ``ix_entries_parent`` with a filter on
    entry_id, i.e. a scan of the whole session per inserted entry, and caches that plan for the
    connection: a bulk import into an empty database is quadratic and appends slow down as the session
    grows (see the benchmarks' reports). Priming gives the database the statistics a database in use
    has, so that the benchmarks measure the steady state."""

    def __init__(self, url: str, purpose: str) -> None:
        self.url = url
        self.prefix = f"ssbench_{purpose}_{uuid.uuid4().hex[:6]}"
        self.names: list[str] = []
        self._templates: dict[bool, str] = {}

    def create(self, label: str, *, migrated: bool = False, primed: bool = True) -> str:
        """A new database (a copy of a migrated, optionally primed, template when ``migrated``);
        returns its URL."""
        name = f"{self.prefix}_{label}_{len(self.names)}"
        template = f' TEMPLATE "{self.template(primed)}"' if migrated else ""
        pg_admin(self.url, f'CREATE DATABASE "{name}"{template}')
        self.names.append(name)
        return pg_libpq_url(self.url, name)

    def template(self, primed: bool) -> str:
        if primed not in self._templates:
            from sessionstore.api import SessionStore

            name = f"{self.prefix}_tpl{'_primed' if primed else ''}"
            pg_admin(self.url, f'CREATE DATABASE "{name}"')
            self.names.append(name)
            store = SessionStore(pg_libpq_url(self.url, name), upgrade=True)
            try:
                if primed:
                    store.import_entries(synth_header("pg-prime"), synth_entries(PRIME_ENTRIES))
            finally:
                store.close()
            if primed:
                import psycopg

                with psycopg.connect(pg_libpq_url(self.url, name), autocommit=True) as conn:
                    conn.execute("VACUUM ANALYZE")
            self._templates[primed] = name
        return self._templates[primed]

    def drop(self, db_url: str) -> None:
        from sqlalchemy.engine import make_url

        name = make_url(db_url).database
        pg_admin(self.url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in self.names:
            self.names.remove(name)

    def drop_all(self) -> None:
        for name in reversed(self.names):
            with contextlib.suppress(Exception):
                pg_admin(self.url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.names.clear()


def pg_analyze(db_url: str) -> None:
    import psycopg

    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def exit_on_sigterm() -> None:
    """Turn SIGTERM into ``SystemExit`` so that ``finally`` blocks drop databases and remove files."""
    signal.signal(signal.SIGTERM, lambda _sig, _frame: sys.exit(143))


# -- child processes and memory ---------------------------------------------------------------------
CHILD_MARK = "BENCH-RESULT "
_CHILD_CODE = f"""
import importlib, json, sys
sys.path.insert(0, {str(BENCH_DIR)!r})
import _common
result = getattr(importlib.import_module(sys.argv[1]), sys.argv[2])(**json.loads(sys.argv[3]))
result["peak_rss_mb"] = _common.peak_rss_mb()
print({CHILD_MARK!r} + json.dumps(result), flush=True)
"""


class ChildError(RuntimeError):
    pass


def run_child(module: str, function: str, **kwargs: Any) -> Json:
    """``module.function(**kwargs)`` in a fresh Python process (a module of ``benchmarks/``; it returns
    a JSON-able dict); the result gains ``peak_rss_mb``, the child's peak resident set size."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD_CODE, module, function, json.dumps(kwargs)],
        capture_output=True,
        text=True,
        check=False,
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(CHILD_MARK):
            result: Json = json.loads(line[len(CHILD_MARK) :])
            return result
    tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
    raise ChildError(f"{module}.{function} failed (exit {proc.returncode}):\n{tail}")


def _proc_status_mb(field: str) -> float | None:
    try:
        with open("/proc/self/status") as fp:
            for line in fp:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mb() -> float:
    """Peak RSS of this process in MB: ``VmHWM`` (reset by exec, unlike ``ru_maxrss`` on Linux, which
    keeps the high-water mark of the process that forked us), else ``ru_maxrss``."""
    hwm = _proc_status_mb("VmHWM")
    if hwm is not None:
        return hwm
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss / (1024 * 1024) if sys.platform == "darwin" else maxrss / 1024


def rss_mb() -> float:
    current = _proc_status_mb("VmRSS")
    return current if current is not None else peak_rss_mb()


# -- statistics and output -------------------------------------------------------------------------
def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of already sorted values."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def met(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], out: IO[str] | None = None) -> None:
    """A plain-text table: the first column left-aligned, the others right-aligned."""
    out = out or sys.stdout
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        padded = (v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True)))
        return "  ".join(padded)

    print(line(headers), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in cells:
        print(line(row), file=out)
    out.flush()


def fmt_mb(size: float) -> str:
    return f"{size / 1e6:.1f}"

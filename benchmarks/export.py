"""Export benchmark: ``SessionStore.export_jsonl`` against writing the same lines with orjson.

Files: the two real pi files (``fixtures/pi/large-session.jsonl``, ``before-compaction.jsonl``) and
synthetic v3 files of 10,000 and 100,000 entries built from their entries (see ``_common``), each
imported (not timed) into one store per backend: SQLite (WAL) and PostgreSQL when a URL is given.

- store: ``store.export_jsonl(session_id, fp)`` into a new file (open to close timed): reads the
  session row and streams the entries' payloads in append order, writing pi's JSONL lines;
- floor: the exported file's lines already parsed (``orjson.loads``) and held in memory, written to a
  new file as ``orjson.dumps(entry) + b"\\n"`` (open to close timed).

Times are the best of ``--repeat`` runs (files over 50 MB: 2 runs); MB/s = bytes written / time
(MB = 10^6 bytes); ratio = store MB/s / floor MB/s. ``same bytes`` says whether the floor's file is
byte-identical to the store's (the store writes numbers the way JavaScript does; orjson may not).

Target (from the issue): ratio >= 0.5.

    python benchmarks/export.py [--pg-url URL] [--repeat 3] [--keep DIR]
    python benchmarks/export.py --quick
"""

from __future__ import annotations

import argparse
import filecmp
import gc
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    REAL_FILES,
    PgDatabases,
    add_common_args,
    ensure_synth_file,
    exit_on_sigterm,
    fmt_mb,
    log,
    met,
    pg_url_or_note,
    print_table,
    remove_sqlite,
    work_dir,
)

from sessionstore.api import SessionStore

Json = dict[str, Any]

TARGET_RATIO = 0.5
REPEAT_BELOW = 50_000_000
BIG_RUNS = 2


@dataclass
class Result:
    file: str
    backend: str
    entries: int
    size: int
    runs: int
    store_s: float
    floor_s: float
    floor_size: int
    same_bytes: bool

    @property
    def store_mb_s(self) -> float:
        return self.size / 1e6 / self.store_s

    @property
    def floor_mb_s(self) -> float:
        return self.floor_size / 1e6 / self.floor_s

    @property
    def ratio(self) -> float:
        return self.store_mb_s / self.floor_mb_s


def best_of(runs: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        began = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - began)
    return best


def export_store(store: SessionStore, session_id: str, out: Path) -> None:
    with out.open("wb") as fp:
        store.export_jsonl(session_id, fp)


def export_floor(parsed: list[Json], out: Path) -> None:
    dumps = orjson.dumps
    with out.open("wb") as fp:
        for entry in parsed:
            fp.write(dumps(entry) + b"\n")


def run_backend(
    backend: str, url: str, files: list[tuple[str, Path]], workdir: Path, repeat: int
) -> list[Result]:
    results: list[Result] = []
    store = SessionStore(url, durability="normal")
    try:
        imported: list[tuple[str, str, int]] = []
        for label, path in files:
            began = time.perf_counter()
            res = store.import_jsonl(path)
            log(f"  {backend}: imported {label} ({res.entries:,} entries) in {time.perf_counter() - began:.1f}s")
            imported.append((label, res.session_id, res.entries))
        for label, sid, entries in imported:
            out_store = workdir / f"export-{backend}-{sid}.store.jsonl"
            out_floor = workdir / f"export-{backend}-{sid}.floor.jsonl"
            try:
                export_store(store, sid, out_store)  # warm-up (page cache, statement cache)
                size = out_store.stat().st_size
                runs = repeat if size < REPEAT_BELOW else min(repeat, BIG_RUNS)
                store_s = best_of(runs, partial(export_store, store, sid, out_store))
                with out_store.open("rb") as fp:
                    parsed = [orjson.loads(raw) for raw in fp if raw.strip()]
                floor_s = best_of(runs, partial(export_floor, parsed, out_floor))
                del parsed
                floor_size = out_floor.stat().st_size
                same = filecmp.cmp(out_store, out_floor, shallow=False)
                results.append(Result(label, backend, entries, size, runs, store_s, floor_s, floor_size, same))
                log(f"  {backend}: {label}: store {store_s:.3f}s, floor {floor_s:.3f}s")
            finally:
                out_store.unlink(missing_ok=True)
                out_floor.unlink(missing_ok=True)
    finally:
        store.close()
    return results


def print_report(results: list[Result], repeat: int) -> None:
    print(
        "export: store = SessionStore.export_jsonl to a file; floor = orjson.dumps(entry) + b'\\n' of the same"
        " entries, already parsed and in memory, to a file"
    )
    print(
        f"times: best of {repeat} runs after a warm-up export (files over {REPEAT_BELOW // 1_000_000} MB:"
        f" {BIG_RUNS} runs), open to close; MB = 10^6 bytes; ratio = store MB/s / floor MB/s"
    )
    headers = [
        "file", "backend", "entries", "MB", "runs", "store s", "store MB/s", "store entries/s",
        "floor s", "floor MB/s", "ratio", "same bytes",
    ]
    rows = [
        [
            r.file, r.backend, f"{r.entries:,}", fmt_mb(r.size), str(r.runs), f"{r.store_s:.3f}",
            f"{r.store_mb_s:.1f}", f"{r.entries / r.store_s:,.0f}", f"{r.floor_s:.3f}", f"{r.floor_mb_s:.1f}",
            f"{r.ratio:.2f}x", "yes" if r.same_bytes else "no",
        ]
        for r in results
    ]
    print_table(headers, rows)
    print()


def print_targets(results: list[Result]) -> None:
    for backend in dict.fromkeys(r.backend for r in results):
        group = [r for r in results if r.backend == backend]
        detail = ", ".join(f"{r.file}: {r.ratio:.2f}x" for r in group)
        ok = all(r.ratio >= TARGET_RATIO for r in group)
        print(f"target: {backend} export >= {TARGET_RATIO}x the orjson floor's MB/s: {detail} -> {met(ok)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=None, help="synthetic file sizes in entries (default 10000,100000)")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per file (default 3)")
    add_common_args(parser)
    args = parser.parse_args(argv)
    exit_on_sigterm()
    repeat = args.repeat or (1 if args.quick else 3)
    sizes_arg = args.sizes or ("2000" if args.quick else "10000,100000")
    sizes = [int(s.replace("_", "")) for s in sizes_arg.split(",") if s.strip()]
    pg_url = pg_url_or_note(args)
    started = time.perf_counter()
    results: list[Result] = []
    with work_dir(args.keep, "sessionstore-export-") as workdir:
        files: list[tuple[str, Path]] = [(p.name, p) for p in REAL_FILES]
        for size in sizes:
            path = workdir / f"synth-{size}.jsonl"
            ensure_synth_file(path, size)
            files.append((f"synthetic {size:,}", path))
        db = workdir / "export-store.db"
        remove_sqlite(db)
        try:
            results.extend(run_backend("sqlite", f"sqlite:///{db}", files, workdir, repeat))
        finally:
            remove_sqlite(db)
        if pg_url:
            dbs = PgDatabases(pg_url, "export")
            try:
                results.extend(run_backend("postgresql", dbs.create("store", migrated=True), files, workdir, repeat))
            finally:
                dbs.drop_all()
    print_report(results, repeat)
    print_targets(results)
    print(f"total {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

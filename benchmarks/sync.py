"""Sync benchmark: ``SessionStore.sync`` of a pi session directory against a full re-import of the same
files, measured in the same run.

A directory in pi's layout (``--{cwd}--/{timestamp}_{id}.jsonl``) of ``--files`` session files (default
1,000, spread over ``--projects`` project directories), each ``--entries`` real pi entries (default 40,
about 1.7 KB each: the entries of the pi fixtures repeated with fresh ids, see ``_common.synth_entries``).
Per backend (SQLite with ``synchronous`` FULL; PostgreSQL when a server URL is given):

- first sync: every file imported (the import path, plus the source rows);
- no-change sync: nothing changed, best of ``--repeat`` runs: a directory scan (one ``stat`` per file)
  and one query of the source rows; target <= 0.3 s for 1,000 files;
- incremental syncs: ``--lines`` new lines appended to each of ``--grown`` files (default 10 lines to
  100 files), then 10 times as many lines, each synced once; against the baseline, a full re-import
  (``import_jsonl(replace=True)``) of the same grown files. The ratio incremental / re-import should be
  about new bytes / file bytes, and the two incremental syncs should cost about in proportion to their
  new bytes (the fixed part is the scan of the whole directory, the no-change time).

    python benchmarks/sync.py [--files 1000] [--entries 40] [--grown 100] [--lines 10] [--pg-url URL]
    python benchmarks/sync.py --quick
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    PgDatabases,
    add_common_args,
    dump_line,
    log,
    met,
    pg_url_or_note,
    print_table,
    remove_sqlite,
    synth_entries,
    synth_header,
    work_dir,
)

NO_CHANGE_TARGET_S = 0.3
NO_CHANGE_TARGET_FILES = 1_000


def write_tree(root: Path, files: int, projects: int, entries: int) -> list[tuple[Path, str, int]]:
    """The session files: ``(path, last entry id, entries)`` each."""
    made = []
    for i in range(files):
        directory = root / f"--work-project-{i % projects:03d}--"
        directory.mkdir(parents=True, exist_ok=True)
        header = synth_header(f"sync-{i}")
        path = directory / f"2025-12-01T00-00-{i // 1000:02d}-{i % 1000:03d}Z_{header['id']}.jsonl"
        last = None
        with path.open("wb") as fp:
            fp.write(dump_line(header))
            for entry in synth_entries(entries, first=i * 7):
                fp.write(dump_line(entry))
                last = entry["id"]
        made.append((path, str(last), entries))
    return made


def grow(files: list[tuple[Path, str, int]], lines: int, first: int) -> tuple[list[tuple[Path, str, int]], int]:
    """Append ``lines`` entries to each file (chained from its last entry); returns the files and the bytes added."""
    grown = []
    added = 0
    for path, last, count in files:
        data = b"".join(dump_line(e) for e in synth_entries(lines, first=first + count, parent=last))
        with path.open("ab") as fp:
            fp.write(data)
        added += len(data)
        new_last = [e["id"] for e in synth_entries(lines, first=first + count, parent=last)][-1]
        grown.append((path, new_last, count + lines))
    return grown, added


def timed(action: Any) -> tuple[float, Any]:
    began = time.perf_counter()
    value = action()
    return time.perf_counter() - began, value


def run_backend(name: str, url: str, root: Path, tree: list[tuple[Path, str, int]], args: argparse.Namespace
                ) -> list[list[Any]]:
    from sessionstore.api import SessionStore

    rows: list[list[Any]] = []
    total_bytes = sum(path.stat().st_size for path, _l, _c in tree)
    with SessionStore(url) as store:
        log(f"[{name}] first sync of {len(tree):,} files ({total_bytes / 1e6:.1f} MB)")
        seconds, result = timed(lambda: store.sync(root))
        assert result.imported == len(tree) and not result.failures, result.summary()
        rows.append([name, f"first sync ({len(tree):,} files imported)", f"{seconds * 1000:.0f}", "", ""])
        best = min(timed(lambda: store.sync(root))[0] for _ in range(args.repeat))
        result = store.sync(root)
        assert result.unchanged == len(tree), result.summary()
        target = NO_CHANGE_TARGET_S * len(tree) / NO_CHANGE_TARGET_FILES
        rows.append([name, f"no-change sync ({len(tree):,} files)", f"{best * 1000:.1f}", "",
                     f"<= {target * 1000:.0f} ms: {met(best <= target)}"])
        no_change = best
        chosen = tree[: args.grown]
        rest = tree[args.grown :]
        incremental = []
        for step, lines in enumerate((args.lines, args.lines * 10)):
            chosen, added = grow(chosen, lines, first=10_000_000 * (step + 1))
            seconds, result = timed(lambda: store.sync(root))
            assert result.appended == len(chosen) and not result.failures, result.summary()
            incremental.append((seconds, added))
            grown_bytes = sum(path.stat().st_size for path, _l, _c in chosen)
            rows.append([name, f"incremental sync: +{lines} lines x {len(chosen)} files ({added / 1e3:.0f} KB new)",
                         f"{seconds * 1000:.1f}", f"{(seconds - no_change) / added * 1e9:.0f}", ""])
        tree = chosen + rest
        seconds_full, _ = timed(lambda: [store.import_jsonl(path, replace=True) for path, _l, _c in chosen])
        rows.append([name, f"baseline: full re-import of the {len(chosen)} grown files ({grown_bytes / 1e6:.1f} MB)",
                     f"{seconds_full * 1000:.1f}", f"{seconds_full / grown_bytes * 1e9:.0f}", ""])
        (small_s, small_b), (large_s, large_b) = incremental
        rows.append([name, "ratio incremental (+10x lines) / full re-import", f"{large_s / seconds_full:.3f}", "",
                     f"new bytes / file bytes {large_b / grown_bytes:.3f}"])
        rows.append([name, "ratio incremental (+10x lines) / incremental", f"{large_s / small_s:.1f}", "",
                     f"new bytes ratio {large_b / small_b:.1f}; less the scan: "
                     f"{(large_s - no_change) / max(small_s - no_change, 1e-9):.1f}"])
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1_000)
    parser.add_argument("--projects", type=int, default=25)
    parser.add_argument("--entries", type=int, default=40, help="entries per file")
    parser.add_argument("--grown", type=int, default=100, help="files that grow in the incremental syncs")
    parser.add_argument("--lines", type=int, default=10, help="lines appended to each grown file (then 10x)")
    parser.add_argument("--repeat", type=int, default=5, help="no-change syncs timed (the best is shown)")
    add_common_args(parser)
    args = parser.parse_args()
    if args.quick:
        args.files, args.projects, args.entries, args.grown, args.lines, args.repeat = 60, 4, 10, 10, 2, 2
    pg_url = pg_url_or_note(args)
    started = time.perf_counter()
    rows: list[list[Any]] = []
    backends: list[str] = ["sqlite", *(["postgresql"] if pg_url else [])]
    for backend in backends:
        with work_dir(args.keep, "ssbench-sync-") as workdir:
            root = workdir / f"sessions-{backend}"
            log(f"[{backend}] writing {args.files:,} files of {args.entries} entries")
            tree = write_tree(root, args.files, args.projects, args.entries)
            if backend == "sqlite":
                db = workdir / "sync-store.db"
                remove_sqlite(db)
                try:
                    rows.extend(run_backend("sqlite", f"sqlite:///{db}", root, tree, args))
                finally:
                    remove_sqlite(db)
            else:
                assert pg_url is not None
                dbs = PgDatabases(pg_url, "sync")
                try:
                    rows.extend(run_backend("postgresql", dbs.create("store", migrated=True), root, tree, args))
                finally:
                    dbs.drop_all()
    print_table(["backend", "run", "ms", "ns per new byte", "target / note"], rows)
    print(f"total {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

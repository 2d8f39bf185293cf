"""Retention benchmark (issue 26): archive and restore throughput against ``export`` and ``import`` of the
same sessions in the same run, and the SQLite file's size before and after archiving the older half
(each size after ``VACUUM``).

The database holds copies of ``fixtures/pi/before-compaction.jsonl`` (a real pi session, 1,002 entries),
each with its own session id, until it reaches ``--size-mb`` of file (default 200; ``--size-mb 1000``
for the issue's 1 GB). Then, over the older half of the sessions:

- export: ``export_jsonl`` of each into a file; archive: ``archive_session`` of each (export into gzip,
  checksum, fsync, rename, delete the entries);
- restore: ``restore_session`` of each; import: ``import_jsonl`` of the exported files into a new
  database of their own.

MB/s = the sessions' exported bytes / time (MB = 10^6 bytes); ratio = archive / export, restore / import.

    python benchmarks/retention.py [--size-mb 200] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from sessionstore.api import SessionStore
from sessionstore.store import archive

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "fixtures" / "pi" / "before-compaction.jsonl"


def _copies(directory: Path, count: int) -> list[Path]:
    """``count`` copies of the source file, each with a session id of its own (the header line's id)."""
    header, rest = SOURCE.read_bytes().split(b"\n", 1)
    old = b"ffae836b-9420-4060-ac13-7745215f90ff"
    files = []
    for n in range(count):
        path = directory / f"s{n:05d}.jsonl"
        path.write_bytes(header.replace(old, f"{n:08d}-0000-4000-8000-000000000000".encode()) + b"\n" + rest)
        files.append(path)
    return files


def _size(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
    return db.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=200.0)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="retention-bench-", dir=args.dir))
    try:
        (work / "src").mkdir()
        db = work / "sessions.db"
        store = SessionStore(f"sqlite:///{db}")
        t0 = time.perf_counter()
        (first,) = _copies(work / "src", 1)
        store.import_jsonl(first)
        first.unlink()
        per_session = db.stat().st_size + (work / "sessions.db-wal").stat().st_size
        want = max(2, int(args.size_mb * 1e6 / per_session))
        for path in _copies(work / "src", want)[1:]:
            store.import_jsonl(path)
            path.unlink()
        print(f"built {want} sessions in {time.perf_counter() - t0:.1f} s")
        entries = store._entries
        sessions = sorted(store.list_sessions(), key=lambda s: s.id)
        older = [s.id for s in sessions[: len(sessions) // 2]]
        before = _size(db)
        out = work / "export"
        out.mkdir()
        t = time.perf_counter()
        total = 0
        for sid in older:
            with open(out / f"{sid}.jsonl", "wb") as fp:
                store.export_jsonl(sid, fp)
                total += fp.tell()
        export_s = time.perf_counter() - t
        t = time.perf_counter()
        for sid in older:
            archive.archive_session(entries, sid, archive_dir=work / "archive")
        archive_s = time.perf_counter() - t
        after = _size(db)
        archived = sum(p.stat().st_size for p in (work / "archive").rglob("*.gz"))
        t = time.perf_counter()
        for sid in older:
            archive.restore_session(entries, sid)
        restore_s = time.perf_counter() - t
        store.close()
        other = SessionStore(f"sqlite:///{work / 'imported.db'}")
        t = time.perf_counter()
        for sid in older:
            other.import_jsonl(out / f"{sid}.jsonl")
        import_s = time.perf_counter() - t
        other.close()
        mb = total / 1e6
        print(f"{len(older)} sessions archived and restored ({mb:.1f} MB exported; {archived / 1e6:.1f} MB of"
              f" archive files, {total / archived:.1f}x smaller)")
        print(f"{'':10} {'s':>8} {'MB/s':>8}")
        for name, seconds in (("export", export_s), ("archive", archive_s), ("import", import_s),
                              ("restore", restore_s)):
            print(f"{name:10} {seconds:8.2f} {mb / seconds:8.1f}")
        print(f"archive / export: {export_s / archive_s:.2f}x   restore / import: {import_s / restore_s:.2f}x")
        print(f"database after VACUUM: {before / 1e6:.1f} MB before, {after / 1e6:.1f} MB with the older half"
              f" archived ({after / before:.2f}x)")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
        os.sync()


if __name__ == "__main__":
    main()

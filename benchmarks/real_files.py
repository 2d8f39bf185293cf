"""Import and resume times for the two real pi sessions in fixtures/pi (SQLite, fresh database).

    python benchmarks/real_files.py [--repeat N] [--durability full|normal]

Import: ``SessionStore.import_jsonl`` of the v1 file (upgrade, validation of every entry, integrity
checks, one transaction). Resume: ``SessionStore.context`` at the leaf in a freshly opened store
(path query, context building, validation, projection). Best and median of N runs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sessionstore.api import SessionStore

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "fixtures" / "pi" / "large-session.jsonl", ROOT / "fixtures" / "pi" / "before-compaction.jsonl"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--durability", choices=["full", "normal"], default="full")
    args = parser.parse_args()
    print(f"{'file':26} {'MB':>5} {'entries':>8} {'import ms':>16} {'MB/s':>6} {'ctx msgs':>9} {'resume ms':>16}")
    with tempfile.TemporaryDirectory() as tmp:
        for path in FILES:
            imports, resumes = [], []
            for i in range(args.repeat):
                url = f"sqlite:///{Path(tmp) / f'{path.stem}-{i}.db'}"
                with SessionStore(url, durability=args.durability) as store:
                    start = time.perf_counter()
                    result = store.import_jsonl(path)
                    imports.append(time.perf_counter() - start)
                with SessionStore(url, durability=args.durability) as store:
                    start = time.perf_counter()
                    context = store.context(result.session_id)
                    resumes.append(time.perf_counter() - start)
            megabytes = path.stat().st_size / 1e6
            print(
                f"{path.name:26} {megabytes:5.2f} {result.entries:8,} "
                f"{min(imports) * 1e3:7.1f} ({statistics.median(imports) * 1e3:6.1f}) {megabytes / min(imports):6.1f} "
                f"{len(context.messages):9,} {min(resumes) * 1e3:7.1f} ({statistics.median(resumes) * 1e3:6.1f})"
            )
    print("times: best (median) of", args.repeat, "runs; resume = first context() in a freshly opened store")


if __name__ == "__main__":
    main()

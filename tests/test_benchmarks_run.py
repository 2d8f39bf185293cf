"""The benchmark scripts keep working (smoke runs; they time nothing here and assert no speed)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.paths import ROOT
from tests.requirements import module

RUNS = {
    "append.py": ["--quick"],
    "async_store.py": ["--quick"],
    "import.py": ["--quick", "--repeat", "2"],  # two rounds: floor and store children alternate
    "export.py": ["--quick"],
    "sync.py": ["--quick"],
    "resume.py": ["--sizes", "200", "--repeat", "1"],
    "real_files.py": ["--repeat", "1"],
    "peers.py": ["--sizes", "100", "--rounds", "2", "--resume-size", "400", "--resume-repeat", "1"],
    "search.py": ["--quick"],
    "cli.py": ["--quick"],
    "memory.py": ["--quick", "--mb", "2", "--repeat", "1", "--tree-cap", "30"],
    "service.py": ["--quick"],
    "service_memory.py": ["--quick"],
    "feeds.py": ["--quick"],
    "workers.py": ["--quick"],  # SQLite (no PostgreSQL here); 1 and 2 workers, client threads and 2 processes
    "soak.py": ["--quick"],  # 6 s, a sample a second
    "retention.py": ["--size-mb", "12"],  # two sessions
}
NEEDS = {"peers.py": "agents"}
"""A script's benchmark-only extra (``.[bench]``), by the module it imports."""


@pytest.mark.parametrize("script", sorted(RUNS))
def test_benchmark_script_runs_and_prints_its_table(script: str) -> None:
    needed = NEEDS.get(script)
    if needed is not None:
        module(needed, install="pip install -e '.[bench]'")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *RUNS[script]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)},
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]  # resume.py exits 1 when a target is missed
    assert "ms" in done.stdout or "MB/s" in done.stdout, done.stdout[-2000:]


def test_peers_without_the_extra_exits_with_a_message_not_a_traceback() -> None:
    """``agents`` made unimportable (a ``None`` entry in ``sys.modules``), then the script run as ``__main__``."""
    code = (
        "import runpy, sys; sys.modules['agents'] = None;"
        f" sys.argv = ['peers.py', '--quick']; runpy.run_path({str(ROOT / 'benchmarks' / 'peers.py')!r},"
        " run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)},
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "pip install -e '.[bench]'" in done.stderr
    assert "Traceback" not in done.stderr

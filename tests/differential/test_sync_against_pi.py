"""Sync against pi 1.6 writing the files: pi's own SessionManager appends to a synced file (one
``appendFileSync`` per entry) or migrates a v1 file on load (a rewrite), the store syncs, and the
session's contexts are pi's at every leaf pi evaluates (``pi_oracle.mjs eval``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from sessionstore.api import SessionStore
from tests.differential.compare import compare_leaf, leaf_name
from tests.differential.oracle import Oracle
from tests.paths import FIXTURES

PI_SYNC = Path(__file__).with_name("pi_sync.mjs")


def pi_appends(oracle: Oracle, path: Path, turns: int) -> dict[str, object]:
    env = {**os.environ, "SESSIONSTORE_PI_DIR": str(oracle.pi_dir), "PI_CODING_AGENT_DIR": str(oracle.agent_dir)}
    done = subprocess.run([oracle.node, str(PI_SYNC), "append", str(path), str(turns)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout)
    return result


def assert_contexts_are_pis(store: SessionStore, oracle: Oracle, path: Path, session_id: str) -> None:
    (pi,) = oracle.evaluate([path]).values()
    assert not pi["idsRegenerated"]
    mismatches = []
    for leaf in pi["leaves"]:
        parts = compare_leaf(store, session_id, leaf, leaf["leafId"], pi["pool"])
        if parts:
            mismatches.append(f"{leaf_name(leaf)}: {parts}")
    assert mismatches == []
    assert [e["id"] for e in store.entries(session_id)] == [
        json.loads(line)["id"] for line in path.read_bytes().splitlines()[1:] if line.strip()]


def test_what_pi_appends_to_a_synced_file_is_appended(store: SessionStore, oracle: Oracle, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "--work-p--").mkdir(parents=True)
    path = root / "--work-p--" / "2025-12-09T00-00-00-000Z_ffae.jsonl"
    shutil.copy(FIXTURES / "pi" / "before-compaction.v3.jsonl", path)
    assert store.sync(root).imported == 1
    sid = json.loads(path.read_bytes().splitlines()[0])["id"]
    written = pi_appends(oracle, path, 3)
    result = store.sync(root)
    assert (result.appended, result.rewritten, result.entries) == (1, 0, 6)
    assert store.leaf(sid) == written["leafId"]
    assert_contexts_are_pis(store, oracle, path, sid)


def test_a_v1_file_pi_migrates_on_load_is_seen_as_rewritten(store: SessionStore, oracle: Oracle,
                                                             tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "--work-demo--").mkdir(parents=True)
    path = root / "--work-demo--" / "2024-11-01T08-00-00-000Z_legacy.jsonl"
    shutil.copy(FIXTURES / "legacy" / "compaction-v1.jsonl", path)
    assert store.sync(root).imported == 1
    written = pi_appends(oracle, path, 1)  # pi rewrites the file as v3 (new random ids), then appends
    result = store.sync(root)
    assert (result.rewritten, result.appended, result.failed) == (1, 0, 0)
    assert store.leaf("legacy-v1-compaction") == written["leafId"]
    assert_contexts_are_pis(store, oracle, path, "legacy-v1-compaction")
    pi_appends(oracle, path, 2)  # now a v3 file: pi only appends
    assert store.sync(root).appended == 1
    assert_contexts_are_pis(store, oracle, path, "legacy-v1-compaction")

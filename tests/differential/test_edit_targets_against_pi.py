"""Which entries a context edit may target, against pi 1.6's own ``appendContextEdit``: a message of
each role (the roles' ``edit_target``, ``models/roles.py``), a ``custom_message``, every other entry
kind, an entry off the active branch and a missing id. The store refuses exactly what pi refuses, with
pi's text, and stores the rest."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sessionstore.api import SessionStore
from sessionstore.errors import SessionStoreError
from tests.differential.oracle import ORACLE_TIMEOUT_S, Oracle

EDIT_ORACLE = Path(__file__).with_name("pi_edit_targets.mjs")
T = "2026-01-01T00:00:00.000Z"
MESSAGES: dict[str, dict[str, Any]] = {
    "user": {"role": "user", "content": "hi", "timestamp": 1},
    "assistant": {"role": "assistant", "content": [{"type": "text", "text": "a"}], "api": "x", "provider": "p",
                  "model": "m", "usage": {}, "stopReason": "stop", "timestamp": 2},
    "toolResult": {"role": "toolResult", "toolCallId": "c", "toolName": "t", "content": [], "isError": False,
                   "timestamp": 3},
    "system": {"role": "system", "content": "be brief", "timestamp": 4},
    "bashExecution": {"role": "bashExecution", "command": "ls", "output": "", "exitCode": 0, "cancelled": False,
                      "truncated": False, "timestamp": 5},
    "custom": {"role": "custom", "customType": "x", "content": "c", "display": True, "timestamp": 6},
    "branchSummary": {"role": "branchSummary", "summary": "s", "fromId": "root", "timestamp": 7},
    "compactionSummary": {"role": "compactionSummary", "summary": "s", "tokensBefore": 1, "timestamp": 8},
    "someAppRole": {"role": "someAppRole", "x": 1, "timestamp": 9},
}
OTHERS: list[dict[str, Any]] = [
    {"type": "custom_message", "customType": "x", "content": "c", "display": True},
    {"type": "custom", "customType": "x"},
    {"type": "model_change", "provider": "p", "modelId": "m"},
    {"type": "thinking_level_change", "thinkingLevel": "high"},
    {"type": "session_info", "name": "n"},
    {"type": "usage", "kind": "cache_warm", "provider": "p", "model": "m", "usage": {}},
]


def _session_file(path: Path) -> tuple[list[str], str]:
    """A session holding one entry of each kind and role on the active branch, and one entry off it."""
    lines: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": "edits", "timestamp": T, "cwd": "/w"}]
    parent = None
    entries = [{"type": "message", "message": m} for m in MESSAGES.values()] + OTHERS
    ids = []
    for n, entry in enumerate(entries):
        ids.append(f"e{n:02d}")
        lines.append({**entry, "id": ids[-1], "parentId": parent, "timestamp": T})
        parent = ids[-1]
    lines.append({"type": "message", "id": "off", "parentId": "e00", "timestamp": T, "message": MESSAGES["user"]})
    lines.append({"type": "label", "id": "zz", "parentId": parent, "timestamp": T, "targetId": "e00"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return [*ids, "zz"], "zz"


def pi_answers(oracle: Oracle, path: Path, targets: list[str]) -> dict[str, str | None]:
    env = {**os.environ, "SESSIONSTORE_PI_DIR": str(oracle.pi_dir), "PI_CODING_AGENT_DIR": str(oracle.agent_dir)}
    done = subprocess.run([oracle.node, str(EDIT_ORACLE), str(path), *targets], env=env, capture_output=True,
                          text=True, timeout=ORACLE_TIMEOUT_S, check=False)
    if done.returncode != 0:
        pytest.fail(f"pi_edit_targets.mjs exited with {done.returncode}:\n{done.stderr[-4000:]}")
    return {row["target"]: row["error"] for row in map(json.loads, done.stdout.splitlines())}


def test_a_context_edit_targets_what_pi_lets_it_target(oracle: Oracle, tmp_path: Path) -> None:
    path = tmp_path / "edits.jsonl"
    targets, leaf = _session_file(path)
    targets += ["off", "missing"]
    pi = pi_answers(oracle, path, targets)
    assert any(error is None for error in pi.values()) and any(error for error in pi.values())
    ours: dict[str, str | None] = {}
    with SessionStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        for target in targets:
            store.import_jsonl(path, replace=True)
            try:
                store.append_context_edit("edits", target, None, expected_leaf=leaf)
                ours[target] = None
            except SessionStoreError as exc:
                ours[target] = str(exc)
    for target in targets:
        if pi[target] is None:
            assert ours[target] is None, (target, ours[target])
        else:
            assert ours[target] is not None, (target, pi[target])
            if "not found" not in pi[target]:  # (a missing id: the store's own not-found error)
                assert ours[target] == pi[target], (target, ours[target], pi[target])

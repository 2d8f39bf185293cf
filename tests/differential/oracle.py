"""Running ``pi_oracle.mjs``: pi 1.6's own SessionManager and convertToLlm under Node.js.

Where pi is looked for: ``$SESSIONSTORE_PI_DIR`` (a ``node_modules`` directory holding
``@earendil-works/pi-coding-agent``), else the directory ``.ci/install-pi.sh`` installs into.
Without ``node`` or pi the differential tests skip naming ``.ci/install-pi.sh``, except under CI, where
they fail (the rule of ``tests/requirements.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.requirements import PI, PI_PACKAGE, PI_VERSION, in_ci, pi_dir, require

__all__ = ["PI_PACKAGE", "PI_VERSION", "Oracle", "find_oracle", "in_ci", "list_dirs"]

ORACLE = Path(__file__).with_name("pi_oracle.mjs")
ORACLE_TIMEOUT_S = 300

Json = dict[str, Any]


@dataclass(frozen=True)
class Oracle:
    node: str
    pi_dir: Path
    agent_dir: Path  # pi's agent directory, kept away from the user's ~/.pi

    def run(self, *args: str) -> str:
        env = {**os.environ, "SESSIONSTORE_PI_DIR": str(self.pi_dir), "PI_CODING_AGENT_DIR": str(self.agent_dir)}
        done = subprocess.run(
            [self.node, str(ORACLE), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=ORACLE_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(f"pi_oracle.mjs {args[0]} exited with {done.returncode}:\n{done.stderr[-4000:]}")
        return done.stdout

    def generate(self, out: Path, *, seed: int, sessions: int) -> Json:
        """Writes ``sessions`` groups of session files into ``out``; returns the manifest."""
        self.run("generate", "--seed", str(seed), "--sessions", str(sessions), "--out", str(out))
        manifest: Json = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        return manifest

    def evaluate(self, files: list[Path], *, max_leaves: int = 60) -> dict[Path, Json]:
        """pi's contexts at (at most ``max_leaves``) leaves of each file (see the header of ``pi_oracle.mjs``)."""
        if not files:
            return {}
        lines = self.run("eval", "--max-leaves", str(max_leaves), *(str(f) for f in files)).rstrip("\n").split("\n")
        if len(lines) != len(files):
            pytest.fail(f"pi_oracle.mjs eval printed {len(lines)} lines for {len(files)} files")
        return {file: json.loads(line) for file, line in zip(files, lines, strict=True)}


def upgrade_files(oracle: Oracle, files: list[Path]) -> dict[Path, Json]:
    """Each file as pi's ``SessionManager.open`` leaves it (``{"file", "text"}``: a v1/v2 file migrated
    and rewritten, its ids counted instead of random; or ``{"file", "error"}``); see ``pi_oracle.mjs``."""
    if not files:
        return {}
    lines = oracle.run("upgrade", *(str(f) for f in files)).rstrip("\n").split("\n")
    if len(lines) != len(files):
        pytest.fail(f"pi_oracle.mjs upgrade printed {len(lines)} lines for {len(files)} files")
    return {file: json.loads(line) for file, line in zip(files, lines, strict=True)}


def list_dirs(oracle: Oracle, dirs: list[Path]) -> dict[Path, list[Json]]:
    """pi's ``SessionManager.listAll(dir)`` of each directory: its SessionInfo rows in pi's order."""
    lines = oracle.run("list", *(str(d) for d in dirs)).rstrip("\n").split("\n")
    if len(lines) != len(dirs):
        pytest.fail(f"pi_oracle.mjs list printed {len(lines)} lines for {len(dirs)} directories")
    return {d: json.loads(line) for d, line in zip(dirs, lines, strict=True)}


def find_oracle(agent_dir: Path) -> Oracle:
    """The oracle, or a skip/failure that says what is missing (the rule of ``tests/requirements.py``)."""
    require(PI)
    node = shutil.which("node")
    assert node is not None  # PI requires it
    return Oracle(node=node, pi_dir=pi_dir(), agent_dir=agent_dir)

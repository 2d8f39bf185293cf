"""The oracle's output, made once per test run: generated sessions and pi's contexts for them and for
the repository's session files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.differential.oracle import Oracle, find_oracle
from tests.paths import FIXTURES

Json = dict[str, Any]

SEED = 1606
SESSIONS = 32
GROUPS = [f"s{i:03d}" for i in range(SESSIONS)]  # the oracle's directory names, one per generated session
FIXTURE_DIRS = ("pi", "legacy", "valid", "tolerant")
FIXTURE_MAX_LEAVES = 24
FIXTURE_FILES = sorted(path for name in FIXTURE_DIRS for path in (FIXTURES / name).glob("*.jsonl"))


@dataclass(frozen=True)
class Generated:
    """Session files pi wrote (group = one session and the forks made from it) and pi's contexts."""

    root: Path
    manifest: Json
    pi: dict[Path, Json]

    def group(self, name: str) -> Json:
        return next(g for g in self.manifest["groups"] if g["name"] == name)

    def files(self, name: str) -> list[Path]:
        return [self.root / name / file for file in self.group(name)["files"]]


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Oracle:
    return find_oracle(tmp_path_factory.mktemp("pi-agent-dir"))


@pytest.fixture(scope="session")
def generated(oracle: Oracle, tmp_path_factory: pytest.TempPathFactory) -> Generated:
    root = tmp_path_factory.mktemp("pi-sessions")
    manifest = oracle.generate(root, seed=SEED, sessions=SESSIONS)
    names = [g["name"] for g in manifest["groups"]]
    assert names == GROUPS, "the oracle names its groups s000, s001, …"
    files = [root / g["name"] / file for g in manifest["groups"] for file in g["files"]]
    return Generated(root, manifest, oracle.evaluate(files))


@pytest.fixture(scope="session")
def pi_on_fixtures(oracle: Oracle) -> dict[Path, Json]:
    # Fewer leaves than for generated sessions: contexts of pi's real files hold up to 900 messages,
    # and building them (in the store, not in pi) would take most of this suite's time.
    return oracle.evaluate(FIXTURE_FILES, max_leaves=FIXTURE_MAX_LEAVES)

"""A pi session file whose last line lost its newline (a torn write; pi reads the line, and its next
load adds the newline): once the file has settled, a sync mirrors it as pi lists it and counts it
(``SessionManager.listAll``'s message count, first message and modified time; ``/session``'s stats),
and the newline pi adds later reads nothing twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessionstore.api import SessionStore
from tests.differential.oracle import Oracle, list_dirs
from tests.differential.test_listing_against_pi import facts, pi_facts
from tests.differential.test_stats_against_pi import differences, run_stats_oracle
from tests.paths import FIXTURES

REAL = sorted((FIXTURES / "pi").glob("*.v3.jsonl"))


def compare(store: SessionStore, oracle: Oracle, path: Path, session_id: str) -> list[str]:
    (row,) = list_dirs(oracle, [path.parent])[path.parent]
    problems = []
    if facts(store.session(session_id)) != pi_facts(row):
        problems.append(f"list: pi {pi_facts(row)}, ours {facts(store.session(session_id))}")
    (pi,) = [json.loads(line) for line in run_stats_oracle(oracle, "stats", str(path)).splitlines()]
    return problems + differences(store.stats(session_id), pi)


@pytest.mark.parametrize("fixture", REAL, ids=[f.name for f in REAL])
def test_a_settled_file_without_its_last_newline_is_mirrored_as_pi_reads_it(
    store: SessionStore, oracle: Oracle, tmp_path: Path, fixture: Path
) -> None:
    root = tmp_path / "sessions"
    (root / "--work-p--").mkdir(parents=True)
    path = root / "--work-p--" / fixture.name
    data = fixture.read_bytes()
    assert data.endswith(b"\n")
    path.write_bytes(data[:-1])
    session_id = json.loads(data.splitlines()[0])["id"]
    store.sync(root)  # the line may be being written: left
    result = store.sync(root)  # unchanged since: read
    assert (result.appended, result.entries, result.failed) == (1, 1, 0)
    assert compare(store, oracle, path, session_id) == []
    with path.open("ab") as fp:  # what pi's loader does to such a file
        fp.write(b"\n")
    again = store.sync(root)
    assert (again.entries, again.rewritten, again.failed) == (0, 0, 0)
    assert compare(store, oracle, path, session_id) == []
    assert len(store.entries(session_id)) == sum(1 for line in data.splitlines()[1:] if line.strip())

"""``stats`` equals pi 1.6's ``/session``: for every session file pi wrote (the generated sessions and
their forks, the sessions ``pi_stats.mjs build`` writes to hold every kind of usage pi counts) and
every fixture file, the store that imported the file gives pi's message counts, tokens, cost,
breakdown, selected model and text. pi runs live (``pi_stats.mjs stats``: a port of
``getSessionStats``'s loop, which does not load on Node 20, over pi's own ``SessionManager``,
``addUsageToTotals`` and ``getUsageCostBreakdown``).

Costs are compared with a relative tolerance of 1e-12, tokens exactly when pi's are whole numbers: pi
adds the usages entry by entry into one total, the store adds them entry by entry into one sum per
key and UTC day when they are written, then adds those (``math.fsum``). Whole token counts are exact
in either order; a sum of costs (or of fractional tokens) taken in another order may differ in its
last bits. Breakdown keys of equal cost are compared in the store's order (by key): pi keeps their
order of first appearance, which the usage rows do not record.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sessionstore.api import SessionStore
from sessionstore.catalog.stats import SessionStatsReport, format_tokens, js_fixed, js_locale
from sessionstore.errors import SessionStoreError
from tests.differential.conftest import FIXTURE_FILES, Generated
from tests.differential.oracle import ORACLE_TIMEOUT_S, Oracle

Json = dict[str, Any]

STATS_ORACLE = Path(__file__).with_name("pi_stats.mjs")
BUILT = ["every-kind", "zero-cost", "single-selected", "single-other", "fractions", "no-usage"]
REL_TOL = 1e-12


def run_stats_oracle(oracle: Oracle, *args: str) -> str:
    env = {**os.environ, "SESSIONSTORE_PI_DIR": str(oracle.pi_dir), "PI_CODING_AGENT_DIR": str(oracle.agent_dir)}
    done = subprocess.run([oracle.node, str(STATS_ORACLE), *args], env=env, capture_output=True, text=True,
                          timeout=ORACLE_TIMEOUT_S, check=False)
    if done.returncode != 0:
        pytest.fail(f"pi_stats.mjs {args[0]} exited with {done.returncode}:\n{done.stderr[-4000:]}")
    return done.stdout


@pytest.fixture(scope="module")
def built(oracle: Oracle, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("pi-stats-sessions")
    files = [Path(f) for f in json.loads(run_stats_oracle(oracle, "build", "--out", str(out)))]
    assert sorted(f.parent.name for f in files) == sorted(BUILT)
    return files


@pytest.fixture(scope="module")
def pi_stats(oracle: Oracle, generated: Generated, built: list[Path]) -> dict[Path, Json]:
    files = [*(f for g in generated.manifest["groups"] for f in generated.files(g["name"])), *built, *FIXTURE_FILES]
    lines = run_stats_oracle(oracle, "stats", *map(str, files)).rstrip("\n").split("\n")
    assert len(lines) == len(files)
    return {f: json.loads(line) for f, line in zip(files, lines, strict=True)}


def close(ours: float, theirs: float) -> bool:
    if isinstance(theirs, int) or (isinstance(theirs, float) and theirs.is_integer() and abs(theirs) < 2**53):
        return ours == theirs
    return math.isclose(ours, theirs, rel_tol=REL_TOL, abs_tol=1e-300)


def differences(report: SessionStatsReport, pi: Json) -> list[str]:
    problems: list[str] = []
    ours = report.to_json()
    theirs = pi["stats"]
    for key in ("userMessages", "assistantMessages", "toolCalls", "toolResults", "totalMessages"):
        if ours[key] != theirs[key]:
            problems.append(f"{key}: pi {theirs[key]}, ours {ours[key]}")
    for key, value in theirs["tokens"].items():
        if not close(ours["tokens"][key], value):
            problems.append(f"tokens.{key}: pi {value}, ours {ours['tokens'][key]}")
    if not close(ours["cost"], theirs["cost"]):
        problems.append(f"cost: pi {theirs['cost']!r}, ours {ours['cost']!r}")
    pi_breakdown = sorted(pi["breakdown"], key=lambda i: (-i["cost"], i["key"]))
    if [i["key"] for i in ours["breakdown"]] != [i["key"] for i in pi_breakdown]:
        keys = ([i["key"] for i in pi_breakdown], [i["key"] for i in ours["breakdown"]])
        problems.append(f"breakdown keys: pi {keys[0]}, ours {keys[1]}")
    else:
        for mine, their in zip(ours["breakdown"], pi_breakdown, strict=True):
            if not (close(mine["cost"], their["cost"]) and close(mine["tokens"], their["tokens"])):
                problems.append(f"breakdown {their['key']}: pi {their}, ours {mine}")
    if (ours["sessionId"], report.name, report.selected_model) != (pi["sessionId"], pi["name"], pi["selectedModel"]):
        problems.append(f"id/name/model: pi {(pi['sessionId'], pi['name'], pi['selectedModel'])},"
                        f" ours {(ours['sessionId'], report.name, report.selected_model)}")
    text = report.render(location="In database")
    if not problems and text != pi["text"]:
        problems.append(f"text:\n--- pi\n{pi['text']}\n--- ours\n{text}")
    return problems


def import_file(store: SessionStore, file: Path) -> str | None:
    """The session id of ``file`` imported strictly, ``None`` when the store refuses it."""
    try:
        return store.import_jsonl(file, replace=True).session_id
    except SessionStoreError:
        return None


def test_stats_equal_pis_for_every_session_file_pi_wrote_and_every_fixture(
    pi_stats: dict[Path, Json], built: list[Path], store: SessionStore
) -> None:
    problems: list[str] = []
    compared = refused = pi_failed = 0
    kinds: set[str] = set()
    for file, pi in pi_stats.items():
        session_id = import_file(store, file)
        if session_id is None:
            refused += 1
            continue
        report = store.stats(session_id)  # the store answers where pi throws, too
        if "error" in pi:
            pi_failed += 1
            continue
        compared += 1
        kinds |= {item["key"] for item in pi["breakdown"]}
        problems += [f"{file.name}: {p}" for p in differences(report, pi)]
    assert problems == [], "\n".join(problems[:20])
    assert compared >= 80 and refused + pi_failed <= 10, (compared, refused, pi_failed)
    assert "Tools/summaries" in kinds and "openrouter/anthropic/claude-opus-4-5" in kinds
    assert all(pi_stats[f].get("error") is None for f in built)


def test_stats_all_sums_what_pi_shows_of_each_session(
    pi_stats: dict[Path, Json], generated: Generated, built: list[Path], store: SessionStore
) -> None:
    """``stats --all`` over the generated and built sessions: pi's per-session stats summed, and its
    breakdowns merged per key (``--by model``)."""
    files = [f for f in pi_stats if f not in FIXTURE_FILES and "error" not in pi_stats[f]]
    for file in files:
        assert import_file(store, file) is not None
    theirs = [pi_stats[f] for f in files]
    total = store.stats_all()
    assert total.sessions == len(files)
    ours = total.to_json()
    for key in ("userMessages", "assistantMessages", "toolCalls", "toolResults", "totalMessages"):
        assert ours[key] == sum(t["stats"][key] for t in theirs), key
    for key in ("input", "output", "cacheRead", "cacheWrite", "total"):
        assert math.isclose(ours["tokens"][key], math.fsum(t["stats"]["tokens"][key] for t in theirs), rel_tol=REL_TOL)
    assert math.isclose(ours["cost"], math.fsum(t["stats"]["cost"] for t in theirs), rel_tol=REL_TOL)
    merged: dict[str, list[Json]] = {}
    for t in theirs:
        for item in t["breakdown"]:
            merged.setdefault(item["key"], []).append(item)
    by_model = store.stats_all(by="model")
    groups = {g.value: g.usage for g in by_model.groups if g.usage.cost > 0 or g.usage.tokens.total > 0}
    assert set(groups) == set(merged) == {item.key for item in total.usage.breakdown}
    for key, items in merged.items():
        assert math.isclose(groups[key].cost, math.fsum(i["cost"] for i in items), rel_tol=REL_TOL), key
        assert math.isclose(groups[key].tokens.total, math.fsum(i["tokens"] for i in items), rel_tol=REL_TOL), key
    by_day = store.stats_all(by="day")
    assert len(by_day.groups) >= 3  # the built sessions span days
    assert math.isclose(math.fsum(g.usage.cost for g in by_day.groups), total.cost, rel_tol=REL_TOL)
    assert by_day.usage == total.usage == by_model.usage


def test_the_number_formats_are_javascripts(oracle: Oracle) -> None:
    """``toFixed``, en-US ``toLocaleString`` and pi's ``formatTokens``, run by Node on the same numbers:
    the edges of each format and rounding ties, and random token counts and costs."""
    rng = random.Random(13)
    values: list[float] = [0, 0.5, 0.0625, 0.0005, 1.0005, 2.5, 8.0005, 1234.5675, 999, 999.5, 1000, 9949, 9950,
                           9999, 10000, 999499, 999500, 999999, 1e6, 9.95e6, 9999999, 1e7, 12345678, 2**53, 1e21,
                           1.5e21, 97.04999, 0.1 + 0.2, 123456.789e3]
    values += [rng.randint(0, 10**rng.randint(1, 10)) for _ in range(200)]
    values += [rng.random() * 10**rng.randint(-4, 4) for _ in range(200)]
    values += [round(rng.random() * 100, 4) for _ in range(100)]
    theirs = json.loads(run_stats_oracle(oracle, "formats", json.dumps(values)))
    ours = [[js_fixed(v, 3), js_fixed(v, 1), js_locale(v), format_tokens(v)] for v in values]
    wrong = [(v, t, o) for v, t, o in zip(values, theirs, ours, strict=True) if t != o]
    assert wrong == []

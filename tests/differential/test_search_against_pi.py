"""``SessionStore.search`` equals pi 1.6's session picker, end to end: the sessions pi wrote (the
generated groups and the repository's real pi files) are imported into the store (SQLite and
PostgreSQL), pi's own ``SessionManager.listAll`` gives their ``SessionInfo`` (with
``allMessagesText``), and for each query pi's ``filterAndSortSessions`` ("relevance" and "recent")
over that list gives the sessions, order and scores that the store's search (the index narrowing,
pi's rules deciding) must give. pi runs live (``pi_oracle.mjs list`` and ``pi_search.mjs``)."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sessionstore.api import SessionStore
from tests.differential.conftest import Generated
from tests.differential.oracle import Oracle, list_dirs
from tests.paths import FIXTURES

Json = dict[str, Any]
SCRIPT = Path(__file__).with_name("pi_search.mjs")
SEED = 1313


def pi_sessions(oracle: Oracle, generated: Generated) -> tuple[list[Path], list[Json]]:
    """pi's listed sessions of the generated groups and the fixture pi files (one file per id, with
    a valid time: the store cannot know the file mtime pi falls back to) and their files."""
    dirs = [generated.root / group["name"] for group in generated.manifest["groups"]] + [FIXTURES / "pi"]
    rows: dict[str, Json] = {}
    for listing in list_dirs(oracle, dirs).values():
        for row in listing:
            if row["modified"] is not None:
                rows.setdefault(row["id"], row)
    return [Path(r["path"]) for r in rows.values()], list(rows.values())


def queries(rows: list[Json]) -> list[str]:
    """Words and pieces of the sessions' own texts, names, ids and cwds, in the forms pi's syntax has."""
    rng = random.Random(SEED)
    words = sorted({w for r in rows for w in r["allMessagesText"].split() if w.isprintable()})
    picked: list[str] = []
    for _ in range(60):
        word = rng.choice(words)
        cut = rng.randint(1, max(1, len(word)))
        picked.append(word[:cut])
    for _ in range(25):
        text = rng.choice(rows)["allMessagesText"].split()
        if len(text) > 3:
            at = rng.randrange(len(text) - 2)
            picked.append('"' + " ".join(text[at : at + rng.randint(2, 3)]) + '"')
    for _ in range(20):
        a, b = rng.choice(words), rng.choice(words)
        picked.append(f"{a[:4]} {b[:3].upper()}")
    for row in rng.sample(rows, min(10, len(rows))):
        picked += [row["id"][:6], row["cwd"].rsplit("/", 1)[-1][:5], (row["name"] or "")[:4]]
    picked += ["re:\\btest\\w*", "re:fil(e|es)\\b", "re:^", "re:[", "re:", "zzqxv", "tst", "a", "the",
               '"unclosed phrase', "HeLLo", "src/", "mdl", '"  "', "file.ts", "é", "fix bug"]
    return [q for q in picked if q.strip() or q == '"  "']


def run_pi(oracle: Oracle, rows: list[Json], qs: list[str]) -> Json:
    payload = {"sessions": [{k: r[k] for k in ("id", "name", "cwd", "allMessagesText", "modified")} for r in rows],
               "queries": qs, "fuzzy": [], "lower": [], "regex": [], "caseClasses": None}
    done = subprocess.run(
        [oracle.node, str(SCRIPT)], input=json.dumps(payload), capture_output=True, text=True, check=False,
        env={**os.environ, "SESSIONSTORE_PI_DIR": str(oracle.pi_dir)}, timeout=300,
    )
    if done.returncode != 0:
        pytest.fail(f"pi_search.mjs exited with {done.returncode}:\n{done.stderr[-4000:]}")
    result: Json = json.loads(done.stdout)
    return result


def test_the_store_finds_what_pis_session_picker_finds(
    oracle: Oracle, generated: Generated, store: SessionStore
) -> None:
    files, rows = pi_sessions(oracle, generated)
    for file in files:
        store.import_jsonl(file, replace=True)
    # pi's picker searches its list in list order; the store's list with sort="modified" is pi's order
    # (test_listing_against_pi).
    order = {info.id: n for n, info in enumerate(store.list_sessions(sort="modified"))}
    rows.sort(key=lambda r: order[r["id"]])
    qs = queries(rows)
    pi = run_pi(oracle, rows, qs)
    index = {r["id"]: n for n, r in enumerate(rows)}
    problems: list[str] = []
    compared = 0
    for n, query in enumerate(qs):
        if pi["parsed"][n]["error"] is not None:
            with pytest.raises(Exception, match="bad query"):
                store.search(query)
            continue
        for sort in ("relevance", "recent"):
            found = store.search(query, sort=sort, hits=0)
            ours = [r.session.id for r in found]
            if ours != pi["sorted"][n][sort]:
                problems.append(f"{query!r} {sort}: pi {pi['sorted'][n][sort][:8]}, ours {ours[:8]}")
            for result in found:
                theirs = pi["scores"][n][index[result.session.id]]
                if theirs is None or result.score != theirs:
                    problems.append(f"{query!r}: {result.session.id} scores {result.score}, pi {theirs}")
            compared += len(found)
    assert len(rows) >= 50 and compared >= 500
    assert problems == [], "\n".join(problems[:20])


def test_every_hit_holds_the_query(oracle: Oracle, generated: Generated, store: SessionStore) -> None:
    files, _rows = pi_sessions(oracle, generated)
    for file in files[:20]:
        store.import_jsonl(file, replace=True)
    word = "the"
    results = store.search(word, hits=5)
    assert results, "the generated sessions speak English"
    for result in results:
        for hit in result.hits:
            assert word in hit.snippet.lower()
            assert store.entry(result.session.id, hit.entry_id)["type"] == "message"
            assert hit.role in ("user", "assistant")

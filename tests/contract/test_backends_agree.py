"""One contract, every backend: the same operations give the same results on SQLite and PostgreSQL."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessionstore.api import SessionStore
from tests.builders import assistant, result, user
from tests.conftest import drop_pg_database, fresh_pg_database
from tests.paths import PI_FILES
from tests.requirements import POSTGRES

needs_pg = pytest.mark.requires(POSTGRES)


@pytest.fixture
def both(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[SessionStore, SessionStore]]:
    name, url = fresh_pg_database(request.getfixturevalue("pg_template"))
    try:
        with SessionStore(f"sqlite:///{tmp_path / 'a.db'}") as lite, SessionStore(url) as pg:
            yield lite, pg
    finally:
        drop_pg_database(name)


def script(store: SessionStore) -> dict[str, Any]:
    """A fixed sequence of every operation; returns what can be compared across backends."""
    sid = store.create_session(cwd="/w", session_id="contract")
    ids = {}
    ids["u"] = store.append_message(sid, user("question"), entry_id="e-u")
    ids["a"] = store.append_message(sid, assistant("", ("c1", "ls", {"path": "/"})), entry_id="e-a")
    ids["r"] = store.append_message(sid, result("c1", "ls", "a\nb"), entry_id="e-r")
    store.append_thinking_level_change(sid, "high")
    store.append_label(sid, "e-u", "start")
    store.branch_with_summary(sid, "e-u", "abandoned the listing")
    store.append_custom_message(sid, "note", "remember", display=False, details={"k": [1, 2.5]})
    store.compact(sid, summary="so far", first_kept_entry_id="e-u", tokens_before=10)
    store.append_session_info(sid, "contract")
    fork = store.fork(sid, leaf_id="e-r", new_session_id="contract-fork")
    context = store.context(sid)
    out = io.BytesIO()
    store.export_jsonl(sid, out)
    names = {e["id"]: f"#{i}" for i, e in enumerate(store.entries(sid))}
    names |= {e["id"]: f"#{i}" for i, e in enumerate(store.entries(fork))}
    return canonical(names, {
        "context": context.to_json() | {"diagnostics": [d.to_json() for d in context.diagnostics]},
        "fork": store.context(fork).to_json(),
        "path": [{k: v for k, v in e.items() if k != "timestamp"} for e in store.path(sid)],
        "labels": store.labels(sid),
        "listing": {k: v for k, v in store.session(sid).to_json().items() if k not in ("modified", "created")},
        "export": [json.loads(line) for line in out.getvalue().splitlines()][1:],
        "plan": store.plan_compaction(fork, keep_recent_tokens=1),
    })


def canonical(names: dict[str, str], value: Any) -> Any:
    """``value`` with generated entry ids replaced by their append position."""
    if isinstance(value, dict):
        return {names.get(k, k): canonical(names, v) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical(names, v) for v in value]
    if isinstance(value, str):
        return names.get(value, value)
    if hasattr(value, "to_json"):
        return canonical(names, value.to_json())
    return value


def strip_times(value: Any) -> Any:
    if isinstance(value, dict):
        # (the times of the writes)
        return {k: strip_times(v) for k, v in value.items() if k not in ("timestamp", "active")}
    if isinstance(value, list):
        return [strip_times(v) for v in value]
    return value


@needs_pg
def test_every_operation_gives_the_same_result_on_both_backends(both: tuple[SessionStore, SessionStore]) -> None:
    lite, pg = both
    a, b = script(lite), script(pg)
    for key in a:
        assert strip_times(a[key]) == strip_times(b[key]), key


@needs_pg
@pytest.mark.parametrize("name", sorted(PI_FILES))
def test_real_files_give_the_same_context_and_export_on_both_backends(
    both: tuple[SessionStore, SessionStore], name: str
) -> None:
    lite, pg = both
    sid = lite.import_jsonl(PI_FILES[name]).session_id
    pg.import_jsonl(PI_FILES[name])
    assert lite.context(sid).to_json() == pg.context(sid).to_json()
    exports = []
    for store in (lite, pg):
        out = io.BytesIO()
        store.export_jsonl(sid, out)
        exports.append([json.loads(line) for line in out.getvalue().splitlines()])
    assert exports[0] == exports[1]

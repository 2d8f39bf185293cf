"""Crash safety: a writer process is SIGKILLed in the middle of (a) a large import and (b) a stream of
appends, then the database is reopened and checked.

- It opens and is consistent: SQLite's ``PRAGMA integrity_check`` says ``ok`` (and ``foreign_key_check``
  finds nothing); on both backends every session's ``entry_count`` is its number of entries, every
  entry's parent and every session's leaf exist, no entry is left without its session.
- (a) The imported session is there whole (every entry, the leaf, the full path) or not at all (not
  its session row, not one of its entries).
- (b) Every append whose ``append_message`` returned before the kill (the worker prints its id right
  after the call returns) is in the session; the session is still one chain; at most the one append
  in flight per killed worker landed unacknowledged.

The kill moments come from a seeded random schedule (the same on every run); what they hit depends on
the machine's speed, and the checks hold whatever they hit. On PostgreSQL the checks wait until the
killed worker's server backends are gone (a COMMIT already sent could otherwise still land afterwards).
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from sessionstore.api import SessionStore
from sessionstore.errors import SessionNotFoundError
from sessionstore.store.entry_store import EntryStore
from tests.builders import assistant, result, user
from tests.workers import Worker, release, workers

Json = dict[str, Any]

IMPORT_ENTRIES = 30_000
IMPORT_KILLS = 10
STREAM_ROUNDS = 6
STREAM_WRITERS = 2
"""Each stream round kills both of its writers (at different moments): 12 kills per backend."""
MAX_IMPORT_DELAY = 1.6
"""Import kills land at up to this many seconds after the release (on SQLite a 30,000-entry import
takes about a second here, so some kills land after the commit and the session must then be whole)."""
BACKEND_GONE_TIMEOUT = 120.0


# -- the generated session file ------------------------------------------------------------------
@pytest.fixture(scope="module")
def big_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A pi v3 file of ``IMPORT_ENTRIES`` entries in one chain (turns of user, assistant tool call,
    tool result, assistant text; a model and a thinking-level change); its body (everything but the
    header) and the entry ids in order."""
    rng = random.Random(1234)
    lines: list[str] = []
    ids: list[str] = []
    parent: str | None = None

    def add(kind: str, **fields: Any) -> None:
        nonlocal parent
        entry_id = f"{len(ids):08x}"
        ts = f"2025-01-01T00:{len(ids) // 60000 % 60:02d}:{len(ids) // 1000 % 60:02d}.{len(ids) % 1000:03d}Z"
        lines.append(json.dumps({"type": kind, "id": entry_id, "parentId": parent, "timestamp": ts, **fields}))
        ids.append(entry_id)
        parent = entry_id

    add("thinking_level_change", thinkingLevel="high")
    add("model_change", provider="anthropic", modelId="claude-sonnet-4-5")
    turn = 0
    while len(ids) < IMPORT_ENTRIES:
        left = IMPORT_ENTRIES - len(ids)
        words = " ".join(rng.choice(("read", "the", "file", "and", "fix", "tests", "parser")) for _ in range(30))
        if left < 4:
            add("message", message=user(f"turn {turn}: {words}"))
        else:
            call = f"call_{turn}"
            add("message", message=user(f"turn {turn}: {words}"))
            add("message", message=assistant("", (call, "read", {"path": f"src/{turn}.py"})))
            add("message", message=result(call, "read", words * 3))
            add("message", message=assistant(f"done with turn {turn}: {words}"))
        turn += 1
    path = tmp_path_factory.mktemp("import") / "body.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, ids


def session_file(body: Path, directory: Path, session_id: str) -> Path:
    """The generated entries under a header naming ``session_id`` (each import gets its own id)."""
    header = {"type": "session", "version": 3, "id": session_id, "timestamp": "2025-01-01T00:00:00.000Z",
              "cwd": "/work/crash"}
    path = directory / f"{session_id}.jsonl"
    with path.open("wb") as out:
        out.write((json.dumps(header) + "\n").encode())
        out.write(body.read_bytes())
    return path


# -- checks -----------------------------------------------------------------------------------------
def worker_url(db_url: str, name: str) -> str:
    """``db_url`` with the PostgreSQL connections of a worker named (application_name) so that the
    checks can wait for its server backends to end."""
    url = make_url(db_url)
    if url.get_backend_name() != "postgresql":
        return db_url
    return url.update_query_dict({"application_name": name}).render_as_string(hide_password=False)


def wait_backends_gone(db_url: str, name: str) -> None:
    """PostgreSQL: wait until no server backend of the killed worker ``name`` is left (it rolls back
    whatever transaction it had open when it notices the closed socket)."""
    url = make_url(db_url)
    if url.get_backend_name() != "postgresql":
        return
    engine = create_engine(url.set(drivername="postgresql+psycopg"))
    try:
        deadline = time.monotonic() + BACKEND_GONE_TIMEOUT
        while True:
            with engine.connect() as conn:
                left = conn.execute(
                    text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name"), {"name": name}
                ).scalar_one()
            if left == 0:
                return
            assert time.monotonic() < deadline, f"{left} backend(s) of the killed worker {name} are still there"
            time.sleep(0.05)
    finally:
        engine.dispose()


def check_database(store: SessionStore) -> None:
    """The whole database is consistent (see the module docstring)."""
    with EntryStore(store.url) as below, below.engine.connect() as conn:  # the rows, on the same database
        if below.backend.name == "sqlite":
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalars().all() == ["ok"]
            assert conn.exec_driver_sql("PRAGMA foreign_key_check").all() == []
        counts = conn.execute(
            text(
                "SELECT s.id, s.entry_count, (SELECT count(*) FROM sessionstore_entries e WHERE e.session_key = s.key)"
                " FROM sessionstore_sessions s"
            )
        ).all()
        assert [(sid, stored) for sid, stored, _ in counts] == [(sid, real) for sid, _, real in counts]
        orphans = conn.execute(
            text(
                "SELECT count(*) FROM sessionstore_entries e WHERE e.parent_seq IS NOT NULL AND NOT EXISTS"
                " (SELECT 1 FROM sessionstore_entries p WHERE p.session_key = e.session_key AND p.seq = e.parent_seq)"
            )
        ).scalar_one()
        assert orphans == 0, "entries whose parent is missing"
        wrong_runs = conn.execute(
            text(
                "SELECT count(*) FROM sessionstore_entries e WHERE e.run_start IS DISTINCT FROM CASE"
                " WHEN e.parent_seq IS NULL OR e.parent_seq <> e.seq - 1 THEN e.seq"
                " ELSE (SELECT p.run_start FROM sessionstore_entries p"
                " WHERE p.session_key = e.session_key AND p.seq = e.parent_seq) END"
            )
        ).scalar_one()
        assert wrong_runs == 0, "entries whose run_start is not their run's first seq"
        homeless = conn.execute(
            text("SELECT count(*) FROM sessionstore_entries e"
                 " WHERE NOT EXISTS (SELECT 1 FROM sessionstore_sessions s WHERE s.key = e.session_key)")
        ).scalar_one()
        assert homeless == 0, "entries without their session"
        lost_leaves = conn.execute(
            text(
                "SELECT count(*) FROM sessionstore_sessions s WHERE s.leaf_id IS NOT NULL AND NOT EXISTS"
                " (SELECT 1 FROM sessionstore_entries e WHERE e.session_key = s.key AND e.entry_id = s.leaf_id"
                " AND e.seq = s.leaf_seq AND e.run_start = s.leaf_run_start)"
            )
        ).scalar_one()
        assert lost_leaves == 0, "sessions whose leaf is missing"
    listed = {info.id: info.entry_count for info in store.list_sessions()}
    assert listed == {sid: stored for sid, stored, _ in counts}


def imported_state(store: SessionStore, sid: str, ids: list[str]) -> str:
    """``"whole"`` or ``"none"`` (anything in between fails)."""
    with EntryStore(store.url) as below:  # the rows, on the same database
        with below.engine.connect() as conn:
            rows = conn.execute(text("SELECT count(*) FROM sessionstore_entries e JOIN sessionstore_sessions s"
                                     " ON s.key = e.session_key WHERE s.id = :sid"), {"sid": sid}).scalar_one()
        try:
            info = store.session(sid)
        except SessionNotFoundError:
            assert rows == 0, f"{rows} entries of a session that is not there"
            return "none"
        assert info.entry_count == rows == below.count_entries(sid) == len(ids)
    assert info.leaf_id == ids[-1]
    path = store.path(sid)
    assert [e["id"] for e in path] == ids
    assert [e["parentId"] for e in path] == [None, *ids[:-1]]
    return "whole"


def chain_by_tag(store: SessionStore, sid: str) -> tuple[list[str], dict[str, list[tuple[int, str]]]]:
    """The session as one chain: its ids in append order (each the parent of the next, the leaf the
    last, the path the whole session), and per writer tag the (n, id) of its appends in chain order."""
    listed = store.entries(sid)
    ids = [e["id"] for e in listed]
    assert len(set(ids)) == len(ids)
    assert [e["parentId"] for e in listed] == [None, *ids[:-1]][: len(ids)]  # (none, when no append got in)
    assert store.leaf(sid) == (ids[-1] if ids else None)
    assert [e["id"] for e in store.path(sid)] == ids
    with EntryStore(store.url) as below, below.engine.connect() as conn:
        assert store.session(sid).entry_count == len(ids) == below.count_entries(sid)
        seqs = conn.execute(text("SELECT seq FROM sessionstore_entries WHERE session_key ="
                                 " (SELECT key FROM sessionstore_sessions WHERE id = :sid) ORDER BY seq"), {"sid": sid})
        assert seqs.scalars().all() == list(range(len(ids)))
    by_tag: dict[str, list[tuple[int, str]]] = {}
    for entry in listed:
        tag, n = entry["message"]["content"][0]["text"].rsplit(" ", 1)
        by_tag.setdefault(tag, []).append((int(n), entry["id"]))
    return ids, by_tag


def backend_name(db_url: str) -> str:
    return make_url(db_url).get_backend_name()


# -- (a) imports ------------------------------------------------------------------------------------
def test_killed_imports_leave_the_whole_session_or_nothing(
    db_url: str, tmp_path: Path, big_session: tuple[Path, list[str]]
) -> None:
    body, ids = big_session
    rng = random.Random(20251130)
    # Most kills at a random time after the release; every third one right after the import's last
    # progress report (all entries inserted, the commit under way) when it gets there in time.
    schedule = [("commit" if k % 3 == 2 else "time", rng.uniform(0.0, MAX_IMPORT_DELAY)) for k in range(IMPORT_KILLS)]
    with SessionStore(db_url) as store:
        check_database(store)  # creates (SQLite) and checks the empty database
    outcomes: list[str] = []
    started_at = time.monotonic()

    def start(k: int) -> tuple[Worker, str]:
        sid = f"import-{k:02d}"
        path = session_file(body, tmp_path, sid)
        name = f"crash-import-{k}"
        return Worker("import", "--url", worker_url(db_url, name), "--file", str(path), log_dir=tmp_path,
                      name=name), sid

    with workers() as started:
        upcoming = start(0)
        started.append(upcoming[0])
        for k, (how, delay) in enumerate(schedule):
            worker, sid = upcoming
            size = (tmp_path / f"{sid}.jsonl").stat().st_size  # the last progress report reads the whole file
            release([worker])
            if k + 1 < len(schedule):  # the next worker starts up while this one runs and is checked
                upcoming = start(k + 1)
                started.append(upcoming[0])
            if how == "commit":
                worker.poll(lambda line, end=size: line.get("event") == "result" or line.get("bytes", 0) >= end,
                            delay * 4)
            else:
                worker.poll(lambda line: line.get("event") == "result", delay)
            lines = worker.kill()
            wait_backends_gone(db_url, worker.name)
            reported_done = any(line.get("event") == "result" for line in lines)
            all_inserted = any(line.get("bytes", 0) >= size for line in lines)
            # killed, or it had finished the import (status 0, result reported) before the kill
            assert worker.killed or (worker.returncode == 0 and reported_done), (
                f"{worker.name} failed by itself: status {worker.returncode}{worker.diagnostics()}"
            )

            with SessionStore(db_url) as store:
                check_database(store)
                outcome = imported_state(store, sid, ids)
            if reported_done:
                assert outcome == "whole", "the import returned, but its session is not there"
                (returned,) = [line for line in lines if line.get("event") == "result"]
                assert (returned["sessionId"], returned["entries"], returned["leafId"]) == (sid, len(ids), ids[-1])
            outcomes.append(f"{outcome}/{'returned' if reported_done else 'all-inserted' if all_inserted else 'mid'}")
            (tmp_path / f"{sid}.jsonl").unlink()
    print(
        f"\n[{backend_name(db_url)}] {len(outcomes)} imports of {IMPORT_ENTRIES} entries killed (outcome/when):"
        f" {dict(Counter(outcomes))}; {time.monotonic() - started_at:.1f}s"
    )
    assert len(outcomes) == IMPORT_KILLS


# -- (b) appends ------------------------------------------------------------------------------------
def test_killed_appenders_lose_no_acknowledged_append(db_url: str, tmp_path: Path) -> None:
    rng = random.Random(4242)
    schedule = [sorted(rng.uniform(0.05, 1.2) for _ in range(STREAM_WRITERS)) for _ in range(STREAM_ROUNDS)]
    with SessionStore(db_url) as store:
        sid = store.create_session(cwd="/work/stream")
    acked: dict[str, list[str]] = {}
    unacked = 0
    started_at = time.monotonic()

    def start(k: int) -> list[Worker]:
        batch = []
        for w in range(STREAM_WRITERS):
            name = f"crash-stream-{k}-{w}"
            batch.append(Worker("stream", "--url", worker_url(db_url, name), "--session", sid, "--tag", name,
                                log_dir=tmp_path, name=name))
        return batch

    with workers() as started:
        upcoming = start(0)
        started.extend(upcoming)
        for k, moments in enumerate(schedule):
            batch = upcoming
            release(batch)
            released = time.monotonic()
            if k + 1 < len(schedule):
                upcoming = start(k + 1)
                started.extend(upcoming)
            for worker, moment in zip(batch, moments, strict=True):
                time.sleep(max(0.0, moment - (time.monotonic() - released)))
                acked[worker.name] = [line["ack"] for line in worker.kill() if "ack" in line]
                assert worker.killed, f"{worker.name} died before the kill: status {worker.returncode}" + (
                    worker.diagnostics()
                )
            for worker in batch:
                wait_backends_gone(db_url, worker.name)

            with SessionStore(db_url) as store:
                check_database(store)
                ids, by_tag = chain_by_tag(store, sid)
            present = set(ids)
            for name, names_acked in acked.items():
                missing = [i for i in names_acked if i not in present]
                assert not missing, f"{name}: acknowledged appends lost: {missing}"
                landed = by_tag.get(name, [])
                # the worker's appends are in the chain in its order: the acknowledged ones, then at
                # most the one that was in flight when it was killed
                assert [n for n, _ in landed] == list(range(len(landed)))
                assert [i for _, i in landed[: len(names_acked)]] == names_acked
                assert len(names_acked) <= len(landed) <= len(names_acked) + 1
            assert set(by_tag) <= set(acked)
            unacked = len(ids) - sum(len(v) for v in acked.values())
    print(
        f"\n[{backend_name(db_url)}] {STREAM_ROUNDS * STREAM_WRITERS} appenders killed:"
        f" {sum(len(v) for v in acked.values())} acknowledged appends all kept, {unacked} in-flight appends"
        f" landed unacknowledged; {time.monotonic() - started_at:.1f}s"
    )


"""Concurrent writers in separate OS processes (SPEC: appends are serialised per session).

SQLite serialises writers with ``BEGIN IMMEDIATE`` in WAL mode and a busy timeout; PostgreSQL with a
row lock (``FOR UPDATE``) on the session row; the primary key ``(session_key, seq)`` backs both. A last test
reads (path, context) while others append. Each test starts its workers behind a barrier (they open
their store, report ready, and all start on one byte from stdin) so that they really overlap, and the
workers report what landed (or what they read) as JSON on stdout.
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from sessionstore.api import SessionStore
from sessionstore.store.entry_store import EntryStore
from tests.workers import Worker, release, workers

WORKERS = 4
APPENDS = 500
READ_TEST_APPENDS = 200
"""Appends per writer while readers run (fewer: on PostgreSQL every read locks the session row)."""

Json = dict[str, Any]


def check_single_chain(store: SessionStore, sid: str) -> list[Json]:
    """The session is one chain in append order: seq 0..n-1 without gaps or duplicates, each entry's
    parent the entry with the previous seq, the path from the leaf holding every entry. Returns the entries."""
    listed = store.entries(sid)
    n = len(listed)
    ids = [e["id"] for e in listed]
    assert len(set(ids)) == n, "duplicate entry ids"
    assert store.session(sid).entry_count == n
    with EntryStore(store.url) as below:  # the rows themselves, on the same database
        assert below.count_entries(sid) == n
        with below.engine.connect() as conn:
            rows = conn.execute(
                text("SELECT seq, entry_id, parent_seq, run_start FROM sessionstore_entries"
                     " WHERE session_key = (SELECT key FROM sessionstore_sessions WHERE id = :sid) ORDER BY seq"),
                {"sid": sid},
            ).all()
    assert [r.seq for r in rows] == list(range(n)), "seq has gaps or duplicates"
    assert [r.entry_id for r in rows] == ids
    assert [r.parent_seq for r in rows] == [None, *range(n - 1)]
    assert [r.run_start for r in rows] == [0] * n  # one chain: one run
    assert [e["parentId"] for e in listed] == [None, *ids[:-1]]
    assert store.leaf(sid) == (ids[-1] if ids else None)
    assert [e["id"] for e in store.path(sid)] == ids
    return listed


def texts_by_tag(listed: list[Json]) -> dict[str, list[int]]:
    """For message entries whose text is ``"<tag> <n>"``: tag -> the n's in chain order."""
    out: dict[str, list[int]] = {}
    for entry in listed:
        tag, n = entry["message"]["content"][0]["text"].rsplit(" ", 1)
        out.setdefault(tag, []).append(int(n))
    return out


def run_appenders(url: str, sessions: list[str], tmp_path: Path, *, expected_leaf: bool) -> list[Json]:
    """One ``append`` worker per entry of ``sessions``, released together; their result lines."""
    with workers() as started:
        for i, sid in enumerate(sessions):
            args = ["--url", url, "--session", sid, "--count", str(APPENDS), "--tag", f"w{i}"]
            if expected_leaf:
                args.append("--expected-leaf")
            started.append(Worker("append", *args, log_dir=tmp_path, name=f"w{i}"))
        release(started)
        for worker in started:
            worker.finish()
        results = [worker.result() for worker in started]
        # a worker's exit status is 1 when it reported errors; the tests assert on those messages
        assert [w.returncode for w in started] == [0 if not r["errors"] else 1 for r in results]
    return results


def test_four_processes_append_to_one_session_in_one_chain(db_url: str, tmp_path: Path) -> None:
    with SessionStore(db_url) as store:
        sid = store.create_session(cwd="/work")
    results = run_appenders(db_url, [sid] * WORKERS, tmp_path, expected_leaf=False)

    assert [r["errors"] for r in results] == [[]] * WORKERS
    assert [len(r["ids"]) for r in results] == [APPENDS] * WORKERS
    assert [r["attempts"] for r in results] == [APPENDS] * WORKERS
    with SessionStore(db_url) as store:
        listed = check_single_chain(store, sid)
    assert len(listed) == WORKERS * APPENDS
    assert sorted(e["id"] for e in listed) == sorted(i for r in results for i in r["ids"])
    # each worker's appends are in the chain in the order the worker made them
    assert texts_by_tag(listed) == {f"w{i}": list(range(APPENDS)) for i in range(WORKERS)}
    # how much the workers interleaved (reported, not asserted: scheduling is not the library's business)
    runs = 1 + sum(a["message"]["content"][0]["text"].split()[0] != b["message"]["content"][0]["text"].split()[0]
                   for a, b in pairwise(listed))
    print(f"\n[{db_url.split(':')[0]}] 4x{APPENDS} appends to one session: {len(listed)} entries, {runs} runs")


def test_expected_leaf_appends_land_or_conflict(db_url: str, tmp_path: Path) -> None:
    with SessionStore(db_url) as store:
        sid = store.create_session(cwd="/work")
    results = run_appenders(db_url, [sid] * WORKERS, tmp_path, expected_leaf=True)

    assert [r["errors"] for r in results] == [[]] * WORKERS
    # each worker retried on LeafConflictError until its 500 appends landed; nothing else happened
    for r in results:
        assert len(r["ids"]) == APPENDS
        assert r["attempts"] == len(r["ids"]) + r["conflicts"]
    with SessionStore(db_url) as store:
        listed = check_single_chain(store, sid)
    reported = [i for r in results for i in r["ids"]]
    assert len(listed) == len(reported) == WORKERS * APPENDS
    assert Counter(e["id"] for e in listed) == Counter(reported)
    assert texts_by_tag(listed) == {f"w{i}": list(range(APPENDS)) for i in range(WORKERS)}
    conflicts = sum(r["conflicts"] for r in results)
    print(f"\n[{db_url.split(':')[0]}] expected_leaf: {len(listed)} landed, {conflicts} LeafConflictError, "
          f"{sum(r['attempts'] for r in results)} attempts")


def test_four_processes_on_four_sessions(db_url: str, tmp_path: Path) -> None:
    with SessionStore(db_url) as store:
        sids = [store.create_session(cwd=f"/work/{i}") for i in range(WORKERS)]
    results = run_appenders(db_url, sids, tmp_path, expected_leaf=False)

    assert [r["errors"] for r in results] == [[]] * WORKERS
    with SessionStore(db_url) as store:
        for i, (sid, r) in enumerate(zip(sids, results, strict=True)):
            listed = check_single_chain(store, sid)
            assert len(listed) == APPENDS
            assert [e["id"] for e in listed] == r["ids"]
            assert texts_by_tag(listed) == {f"w{i}": list(range(APPENDS))}
        assert sorted(s.id for s in store.list_sessions()) == sorted(sids)
        assert [s.entry_count for s in store.list_sessions()] == [APPENDS] * WORKERS


def test_readers_during_appends_see_whole_paths_and_contexts(db_url: str, tmp_path: Path) -> None:
    """Two processes append while two others read the path and the context (a resume): every read
    is a whole chain from a root, and the context holds exactly the path to its leaf."""
    with SessionStore(db_url) as store:
        sid = store.create_session(cwd="/work")
    stop = tmp_path / "stop"
    with workers() as started:
        appenders = [
            Worker("append", "--url", db_url, "--session", sid, "--count", str(READ_TEST_APPENDS), "--tag", f"w{i}",
                   log_dir=tmp_path, name=f"w{i}")
            for i in range(2)
        ]
        readers = [
            Worker("read", "--url", db_url, "--session", sid, "--stop-file", str(stop), "--tag", f"r{i}",
                   log_dir=tmp_path, name=f"r{i}")
            for i in range(2)
        ]
        started.extend(appenders + readers)
        release(started)
        for worker in appenders:
            worker.finish()
        stop.touch()
        for worker in readers:
            worker.finish()
        written = [w.result() for w in appenders]
        read = [w.result() for w in readers]

    problems = {
        "append errors": [e for r in written for e in r["errors"]],
        "read errors": [e for r in read for e in r["errors"]],
        "reads not whole": [v for r in read for v in r["violations"]],
    }
    assert problems == {"append errors": [], "read errors": [], "reads not whole": []}
    assert all(r["reads"] > 0 for r in read)
    with SessionStore(db_url) as store:
        assert len(check_single_chain(store, sid)) == 2 * READ_TEST_APPENDS
    print(f"\n[{db_url.split(':')[0]}] readers during appends: {[r['reads'] for r in read]} whole reads")


def test_a_write_from_inside_an_import_on_sqlite_is_refused_at_once_not_after_the_busy_timeout(
    sqlite_url: str,
) -> None:
    """SQLite has one writer: a write started from the entries an import is reading (same thread)
    would wait for the import's own lock; it is refused at once instead."""
    import time

    from sessionstore.errors import StoreError

    with SessionStore(sqlite_url) as store:
        other = store.create_session(cwd="/w")

        def entries() -> Any:
            store.append_message(other, {"role": "user", "content": "from inside", "timestamp": 1})
            yield {"type": "message", "id": "a", "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z",
                   "message": {"role": "user", "content": "x", "timestamp": 1}}

        began = time.monotonic()
        with pytest.raises(StoreError, match="inside another write"):
            store.import_entries({"type": "session", "version": 3, "id": "inner", "timestamp": "t", "cwd": "/w"},
                                 entries())
        assert time.monotonic() - began < 5
        assert [e["type"] for e in store.entries(other)] == []
        store.append_message(other, {"role": "user", "content": "after", "timestamp": 1})  # the store goes on


def test_a_forked_child_appends_on_a_connection_of_its_own(sqlite_url: str) -> None:
    import os

    with SessionStore(sqlite_url) as store:
        sid = store.create_session(cwd="/w")
        store.append_message(sid, {"role": "user", "content": "parent", "timestamp": 1})
        pid = os.fork()
        if pid == 0:  # the child: append, close, and report through the exit status
            code = 1
            try:
                store.append_message(sid, {"role": "user", "content": "child", "timestamp": 2})
                store.close()
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0
        store.append_message(sid, {"role": "user", "content": "parent again", "timestamp": 3})
        assert [e["message"]["content"] for e in store.entries(sid)] == ["parent", "child", "parent again"]

"""The search index is derived data (issue 25, revision 0017): an append writes no search row, a search
indexes what lags first and reads what is still unindexed itself, so that a search finds every entry
committed before it started, on both backends, with concurrent writers; the index can be turned off
(searches give the same results, reading the entries) and on again; a database at 0015 keeps its index."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, text

from sessionstore.api import SessionStore
from sessionstore.catalog import search as search_module
from sessionstore.cli import cli
from sessionstore.store import migrate
from sessionstore.store.revision import SCHEMA_REVISION

Json = dict[str, Any]


def user(store: SessionStore, sid: str, content: str) -> str:
    return store.append_message(sid, {"role": "user", "content": content, "timestamp": 1_700_000_000_000})


def search_rows(engine: Engine) -> list[tuple[int, str]]:
    with engine.connect() as conn:
        return [(int(seq), str(t)) for seq, t in conn.execute(text("SELECT seq, text FROM sessionstore_search"
                                                                   " ORDER BY session_key, seq"))]


def marks(engine: Engine) -> list[int]:
    with engine.connect() as conn:
        return [int(n) for (n,) in conn.execute(text("SELECT next_seq FROM sessionstore_search_marks"
                                                     " ORDER BY session_key"))]


def test_an_append_writes_no_search_row_and_the_next_search_finds_it_and_indexes_it(
        store: SessionStore, db_engine: Engine) -> None:
    sid = store.create_session(cwd="/w")
    entry_id = user(store, sid, "the Needle in a haystack")
    assert search_rows(db_engine) == []
    [found] = store.search("needle")
    assert (found.session.id, [h.entry_id for h in found.hits]) == (sid, [entry_id])
    assert search_rows(db_engine) == [(0, "the needle in a haystack")]
    assert marks(db_engine) == [1]
    user(store, sid, "another needle")
    assert [len(r.hits) for r in store.search("needle")] == [2]
    assert marks(db_engine) == [2]


def test_an_import_indexes_its_own_entries_and_a_sync_append_after_unindexed_ones_leaves_them_to_the_search(
        store: SessionStore, db_engine: Engine) -> None:
    header = {"type": "session", "version": 3, "id": "imp", "cwd": "/w", "timestamp": "2025-01-01T00:00:00.000Z"}
    entries = [{"type": "message", "id": f"e{i}", "parentId": f"e{i - 1}" if i else None,
                "timestamp": "2025-01-01T00:00:01.000Z",
                "message": {"role": "user", "content": f"imported text {i}", "timestamp": 1}} for i in range(3)]
    store.import_entries(header, entries)
    assert [seq for seq, _t in search_rows(db_engine)] == [0, 1, 2]
    assert marks(db_engine) == [3]
    assert [r.session.id for r in store.search("imported")] == ["imp"]


def test_a_search_finds_what_the_catch_up_could_not_index(store: SessionStore, db_engine: Engine,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """With no catch-up at all (a read-only file, a lock held too long) the search reads the entries past
    the mark itself: the same sessions, hits and phrases across entries."""
    a = store.create_session(cwd="/w")
    b = store.create_session(cwd="/w")
    first = user(store, a, "connection pool")
    store.search("connection")  # indexes a's first entry
    monkeypatch.setattr(search_module, "catch_up", lambda _store: 0)
    second = user(store, a, "pool size grows")
    other = user(store, b, "the POOL of b")
    assert search_rows(db_engine) == [(0, "connection pool")]
    results = {r.session.id: [h.entry_id for h in r.hits] for r in store.search("pool")}
    assert results == {a: [first, second], b: [other]}
    assert [r.session.id for r in store.search('"pool pool size"')] == [a]  # across the indexed and the rest
    assert [r.session.id for r in store.search("grows")] == [a]
    assert [r.session.id for r in store.search("of")] == [b]  # two letters: a scan of both parts


def test_turning_the_index_off_drops_it_and_searches_answer_the_same(store: SessionStore, db_engine: Engine) -> None:
    a = store.create_session(cwd="/w")
    b = store.create_session(cwd="/w")
    for n in range(5):
        user(store, a, f"alpha entry {n} about sqlite")
        user(store, b, f"beta entry {n} about postgres")
    queries = ["sqlite", "entry", '"entry 3"', "about", "re:ENTRY [24]", "al"]
    before = [[(r.session.id, r.score, r.hits) for r in store.search(q)] for q in queries]
    assert store.search_index_on()
    assert search_rows(db_engine)
    store.set_search_index(False)
    assert not store.search_index_on()
    assert search_rows(db_engine) == [] and marks(db_engine) == []
    assert [[(r.session.id, r.score, r.hits) for r in store.search(q)] for q in queries] == before
    user(store, a, "gamma")
    header = {"type": "session", "version": 3, "id": "imp", "cwd": "/w", "timestamp": "2025-01-01T00:00:00.000Z"}
    store.import_entries(header, [{"type": "message", "id": "e0", "parentId": None, "timestamp": "2025-01-01T00:00:01Z",
                                   "message": {"role": "user", "content": "gamma too", "timestamp": 1}}])
    assert sorted(r.session.id for r in store.search("gamma")) == sorted([a, "imp"])
    assert search_rows(db_engine) == []  # (nothing indexed while off)
    assert store.set_search_index(True) == 12
    assert len(search_rows(db_engine)) == 12
    assert [[(r.session.id, r.score, r.hits) for r in store.search(q)] for q in queries] == before


def test_the_cli_turns_the_index_off_and_on(db_url: str, store: SessionStore) -> None:
    sid = store.create_session(cwd="/w")
    user(store, sid, "hello index")
    runner = CliRunner()
    result = runner.invoke(cli, ["--db", db_url, "db", "search-index"])
    assert (result.exit_code, result.output) == (0, "search index: on\n")
    result = runner.invoke(cli, ["--db", db_url, "db", "search-index", "off"])
    assert (result.exit_code, result.output) == (0, "search index: off (searches read every entry)\n")
    result = runner.invoke(cli, ["--db", db_url, "search", "hello", "--json"])
    assert result.exit_code == 0 and sid in result.output
    result = runner.invoke(cli, ["--db", db_url, "db", "search-index", "on"])
    assert (result.exit_code, result.output) == (0, "search index: on (1 entries indexed)\n")


def test_a_deleted_session_is_not_indexed_again(store: SessionStore, db_engine: Engine) -> None:
    sid = store.create_session(cwd="/w")
    user(store, sid, "gone soon")
    keep = store.create_session(cwd="/w")
    user(store, keep, "stays")
    store.delete_session(sid)
    assert store.search("gone") == []
    assert [r.session.id for r in store.search("stays")] == [keep]
    assert search_rows(db_engine) == [(0, "stays")] and marks(db_engine) == [1]


def test_concurrent_catch_ups_index_each_entry_once(store: SessionStore, db_engine: Engine, db_url: str) -> None:
    sid = store.create_session(cwd="/w")
    for n in range(50):
        user(store, sid, f"word{n} shared")
    stores = [SessionStore(db_url) for _ in range(4)]
    try:
        threads = [threading.Thread(target=s.search, args=("shared",)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for s in stores:
            s.close()
    assert [seq for seq, _t in search_rows(db_engine)] == list(range(50))
    assert marks(db_engine) == [50]


def test_every_search_finds_every_entry_appended_before_it_started_with_concurrent_writers(
        db_url: str, store: SessionStore) -> None:
    """Writers append (each to a session of its own and to one they share) while searchers search; each
    search must hold every entry whose append had returned when the search started."""
    shared = store.create_session(cwd="/w")
    writers, appends, searchers = 3, 25, 2
    sessions = [store.create_session(cwd="/w") for _ in range(writers)]
    done: list[set[str]] = [set() for _ in range(writers)]  # entry ids whose append returned
    lock = threading.Lock()
    failures: list[str] = []
    stop = threading.Event()

    def write(n: int) -> None:
        with SessionStore(db_url) as mine:
            for i in range(appends):
                for sid in (sessions[n], shared):
                    entry_id = user(mine, sid, f"token{n}x{i} common")
                    with lock:
                        done[n].add(entry_id)

    def search() -> None:
        with SessionStore(db_url) as mine:
            while not stop.is_set():
                with lock:
                    before = set().union(*done)
                found = {h.entry_id for r in mine.search("common", hits=10_000) for h in r.hits}
                if missing := before - found:
                    failures.append(f"{len(missing)} entries missing")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    readers = [threading.Thread(target=search) for _ in range(searchers)]
    for t in threads + readers:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert failures == []
    assert sum(len(r.hits) for r in store.search("common", hits=10_000)) == 2 * writers * appends


def old_session(engine: Engine) -> int:
    """Session ``old`` written as a store before 0017 wrote it: one entry (``An old needle``) with its search
    row, in the same transaction; its key."""
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO sessionstore_sessions (tenant, id, version, cwd, created, header,"
                          " entry_count, message_count, deleting, active_ms)"
                          " VALUES ('default', 'old', 3, '/w', '2025-01-01T00:00:00.000Z', '{}', 1, 1, FALSE, 0)"))
        key = int(conn.execute(text("SELECT key FROM sessionstore_sessions")).scalar_one())
        payload = ('{"type":"message","id":"e0","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
                   '"message":{"role":"user","content":"An old needle","timestamp":1}}')
        conn.execute(text("INSERT INTO sessionstore_entries (session_key, seq, entry_id, parent_seq, run_start, depth,"
                          " ctx_depth, type, payload) VALUES (:key, 0, 'e0', NULL, 0, 0, 0, 'message', :payload)"),
                     {"key": key, "payload": payload})
        rowid = f"{key} * 4294967296" if engine.dialect.name == "sqlite" else "DEFAULT"
        conn.execute(text(f"INSERT INTO sessionstore_search (rowid, session_key, seq, role, text, extra)"
                          f" VALUES ({rowid}, :key, 0, 'user', 'an old needle', '')"), {"key": key})
    return key


def test_a_database_at_0015_keeps_its_index_through_0017_and_back(engine: Engine) -> None:
    """Search rows written at 0015 (with their appends) are complete: 0017 marks every session indexed to
    its end and rebuilds SQLite's FTS table; a downgrade indexes what lagged (0015's appends expect it)."""
    from alembic import command

    url = engine.url.render_as_string(hide_password=False)
    migrate.upgrade(engine, "0015")
    old_session(engine)
    assert migrate.upgrade(engine) == SCHEMA_REVISION  # (through 0018: SQLite's terms backfilled)
    assert marks(engine) == [1]
    with SessionStore(url) as store:
        assert [r.session.id for r in store.search("old needle")] == ["old"]
        user(store, "old", "a new needle")  # not indexed: a downgrade indexes it
    config = migrate.alembic_config()
    with engine.connect() as conn, migrate.foreign_keys_off(conn), conn.begin():
        config.attributes["connection"] = conn
        command.downgrade(config, "0015")
    assert search_rows(engine) == [(0, "an old needle"), (1, "a new needle")]
    if engine.dialect.name == "sqlite":
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM sessionstore_search_fts"
                                     " WHERE sessionstore_search_fts MATCH '\"new needle\"'")).scalar_one() == 1



def logged_frames(path: Any) -> int:
    """Pages in the WAL of the SQLite file ``path`` since it last started again from its beginning (what
    a passive checkpoint reports; it copies them, which changes nothing a test here looks at)."""
    import sqlite3

    connection = sqlite3.connect(path, isolation_level=None)
    try:
        return int(connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
    finally:
        connection.close()


def test_a_catch_up_copies_the_wal_it_wrote_into_the_database_so_that_the_next_append_does_not(
        tmp_path: Any) -> None:
    path = tmp_path / "s.db"
    with SessionStore(f"sqlite:///{path}") as store:
        sid = store.create_session(cwd="/w")
        for i in range(100):
            user(store, sid, f"message {i} " + "words " * 150)
        calls: list[int] = []
        checkpoint = store._entries.backend.checkpoint

        def counted() -> None:
            calls.append(1)
            checkpoint()

        store._entries.backend.checkpoint = counted  # type: ignore[method-assign]
        assert store.search("message 99") and calls == [1]
        assert store.search("message 99") and calls == [1]  # (nothing left to index: no checkpoint)
        user(store, sid, "the first append after the catch-up")
        # the append started the WAL again from its beginning: it holds that append's pages only
        assert logged_frames(path) <= 10

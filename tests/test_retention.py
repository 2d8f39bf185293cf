"""Retention (SPEC 18, issue 26): policies and holds, archive and restore (byte for byte), erasure
(every trace, the bytes too on SQLite), on both backends."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import Any

import pytest

from sessionstore import user_message
from sessionstore.api import SessionStore
from sessionstore.errors import ArchiveError, InvalidInputError, SessionNotFoundError
from sessionstore.store import archive, erasure, retention
from sessionstore.store.entry_store import EntryStore
from tests.paths import PI_FILES

DAY = retention.DAY_MS
SECRET = "PLANTED-zq9-unique-secret-7731"


def _exported(store: SessionStore, sid: str) -> bytes:
    out = io.BytesIO()
    store.export_jsonl(sid, out)
    return out.getvalue()


def _rows(entries: EntryStore, sid: str) -> list[Any]:
    with entries.backend.read() as tx:
        return [tuple(r) for r in tx.run((
            "SELECT seq, entry_id, parent_seq, run_start, depth, ctx_depth, compaction_seq, model_seq, thinking_seq,"
            " type FROM sessionstore_entries WHERE session_key = (SELECT key FROM sessionstore_sessions"
            " WHERE id = :sid) ORDER BY seq"), {"sid": sid}).fetchall()]


def _count(entries: EntryStore, table: str, sid: str) -> int:
    with entries.backend.read() as tx:
        return int(tx.run(f"SELECT count(*) FROM {table} WHERE session_key = (SELECT key FROM"
                                   " sessionstore_sessions WHERE id = :sid)", {"sid": sid}).fetchone()[0])


@pytest.fixture
def branched(store: SessionStore) -> str:
    sid = store.import_jsonl(PI_FILES["before-compaction"]).session_id
    store.branch(sid, store.entries(sid)[7]["id"])
    store.append_message(sid, user_message("on a branch"))
    store.branch(sid, store.entries(sid)[3]["id"])  # the leaf is not the last entry
    return sid


def test_an_archived_session_restores_byte_for_byte_with_its_ids_seqs_and_leaf(
        store: SessionStore, branched: str, tmp_path: Path) -> None:
    entries = store._entries
    before, rows, leaf = _exported(store, branched), _rows(entries, branched), store.leaf(branched)
    stats, listed = store.stats(branched).to_json(), store.session(branched)
    assert store.search('"one big mess"')  # (the index caught up: its mark at the session's end)
    info = archive.archive_session(entries, branched, archive_dir=tmp_path / "archive")
    assert Path(info.file).is_file() and info.entries == len(rows)
    assert _rows(entries, branched) == [] and _count(entries, "sessionstore_search", branched) == 0
    assert store.session(branched) == listed and store.stats(branched).to_json() == stats  # row and stats stay
    assert archive.archived_ids(entries) == {branched}
    with gzip.open(info.file, "rb") as fp:  # a pi v3 file
        assert fp.read() == before
    archive.restore_session(entries, branched)
    assert _exported(store, branched) == before and _rows(entries, branched) == rows
    assert store.leaf(branched) == leaf and store.stats(branched).to_json() == stats
    assert not Path(info.file).exists() and archive.archived_ids(entries) == set()
    for phrase in ('"on a branch"', '"one big mess"'):  # indexed again: found by its messages
        [found] = store.search(phrase)
        assert found.session.id == branched and found.hits


def test_context_export_append_and_fork_restore_an_archived_session_first(
        store: SessionStore, branched: str, tmp_path: Path) -> None:
    before = _exported(store, branched)
    context = store.context(branched).to_json()
    first = store.entries(branched)[0]["id"]
    at_first = store.context(branched, leaf_id=first).to_json()
    for use in ("context", "context at an entry", "export", "append", "fork"):
        archive.archive_session(store._entries, branched, archive_dir=tmp_path)
        if use == "context":
            assert store.context(branched).to_json() == context
        elif use == "context at an entry":
            assert store.context(branched, leaf_id=first).to_json() == at_first
        elif use == "export":
            assert _exported(store, branched) == before
        elif use == "append":
            store.append_message(branched, user_message("after the archive"))
        else:
            store.fork(branched)
        assert not archive.is_archived(store._entries, branched)
    assert "after the archive" in str(store.path(branched)[-1]["message"]["content"])


def test_a_damaged_archive_is_refused_by_its_checksum_and_nothing_is_restored(
        store: SessionStore, branched: str, tmp_path: Path) -> None:
    info = archive.archive_session(store._entries, branched, archive_dir=tmp_path)
    data = bytearray(Path(info.file).read_bytes())
    data[len(data) // 2] ^= 0xFF
    Path(info.file).write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match="damaged"):
        store.export_jsonl(branched, io.BytesIO())
    assert _rows(store._entries, branched) == [] and archive.is_archived(store._entries, branched)
    Path(info.file).unlink()
    with pytest.raises(ArchiveError, match="cannot be read"):
        archive.restore_session(store._entries, branched)


def test_the_database_refuses_to_unarchive_a_session_whose_entries_are_not_back(
        store: SessionStore, branched: str, tmp_path: Path) -> None:
    archive.archive_session(store._entries, branched, archive_dir=tmp_path)
    with pytest.raises(Exception, match="entries are all back"), store._entries.backend.write() as tx:
        tx.run("DELETE FROM sessionstore_archives")
    sid = store.create_session(cwd="/w")
    store.append_message(sid, user_message("a"))
    with pytest.raises(Exception, match="append-only"), store._entries.backend.write() as tx:
        tx.run("DELETE FROM sessionstore_entries WHERE session_key = (SELECT key FROM"
                        " sessionstore_sessions WHERE id = :sid)", {"sid": sid})


def test_reconcile_removes_orphans_and_reports_missing_files(
        store: SessionStore, branched: str, tmp_path: Path) -> None:
    other = store.create_session(cwd="/w")
    store.append_message(other, user_message("x"))
    info = archive.archive_session(store._entries, branched, archive_dir=tmp_path)
    orphan = archive.archive_location(tmp_path, "default", other, 999)
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(b"left by a crash")
    temp = orphan.with_name(orphan.name + ".tmp-999999999")
    temp.write_bytes(b"x")
    found = archive.reconcile(store._entries, tmp_path)
    assert found.orphans == [str(orphan)] and found.temporary == [str(temp)] and found.missing == []
    assert Path(info.file).exists()
    Path(info.file).unlink()
    assert archive.reconcile(store._entries, tmp_path).missing == [branched]


def _aged(entries: EntryStore, sid: str, active_ms: int) -> None:
    with entries.backend.write() as tx:
        tx.run("UPDATE sessionstore_sessions SET active_ms = :ms WHERE id = :sid",
                        {"ms": active_ms, "sid": sid})


def test_a_policy_archives_and_deletes_by_last_activity_and_holds_exempt(store: SessionStore, tmp_path: Path) -> None:
    entries = store._entries
    now = 1_900_000_000_000
    ages = {"fresh": 1, "old": 40, "older": 100, "held": 100}
    ids = {}
    for name, days in ages.items():
        ids[name] = sid = store.create_session(cwd="/w", session_id=name)
        store.append_message(sid, user_message(name))
        _aged(entries, sid, now - days * DAY)
    retention.hold(entries, "held")
    with pytest.raises(InvalidInputError):
        retention.set_policy(entries)
    policy = retention.set_policy(entries, archive_after_days=30, delete_after_days=90)
    assert retention.get_policy(entries) == policy
    dry = retention.run(entries, archive_dir=tmp_path, dry_run=True, now=now)
    assert (dry.archived, dry.deleted, [p.session_id for p in dry.held]) == (["old"], ["older"], ["held"])
    assert {s.id for s in store.list_sessions()} == set(ids)  # nothing done
    done = retention.run(entries, archive_dir=tmp_path, now=now)
    assert (done.archived, done.deleted, done.failures) == (["old"], ["older"], [])
    assert {s.id for s in store.list_sessions()} == {"fresh", "old", "held"}
    assert archive.archived_ids(entries) == {"old"} and retention.held(entries).keys() == {"held"}
    again = retention.run(entries, archive_dir=tmp_path, now=now)  # archived already: nothing to do
    assert (again.archived, again.deleted) == ([], [])
    later = retention.run(entries, archive_dir=tmp_path, now=now + 60 * DAY)
    assert (later.archived, later.deleted) == (["fresh"], ["old"])
    assert [p.name for p in tmp_path.rglob("*.gz")] == ["fresh.1.jsonl.gz"]  # old's archive went with it
    first, second = retention.unhold(entries, "held"), retention.unhold(entries, "held")
    assert (first, second) == (True, False), retention.held(entries)
    assert retention.clear_policy(entries) and retention.get_policy(entries) is None
    assert retention.run(entries, archive_dir=tmp_path, now=now).policy is None
    with pytest.raises(SessionNotFoundError):
        retention.hold(entries, "nope")


def test_policies_are_per_tenant(store: SessionStore, tmp_path: Path) -> None:
    acme = store.for_tenant("acme")
    for each in (store, acme):
        sid = each.create_session(cwd="/w", session_id="same")
        each.append_message(sid, user_message("x"))
        _aged(each._entries, sid, 0)
    retention.set_policy(acme._entries, delete_after_days=1)
    assert retention.run(store._entries, archive_dir=tmp_path).policy is None
    assert retention.run(acme._entries, archive_dir=tmp_path).deleted == ["same"]
    assert [s.id for s in store.list_sessions()] == ["same"] and acme.list_sessions() == []


def test_one_holder_at_a_time_takes_a_lease_until_it_expires(store: SessionStore) -> None:
    entries = store._entries
    assert retention.take_lease(entries, "retention", "a", ttl_ms=1000, now=0)
    assert not retention.take_lease(entries, "retention", "b", ttl_ms=1000, now=500)
    assert retention.take_lease(entries, "retention", "a", ttl_ms=1000, now=600)  # renewed
    assert retention.take_lease(entries, "retention", "b", ttl_ms=1000, now=1601)
    retention.release_lease(entries, "retention", "b")
    assert retention.take_lease(entries, "retention", "c", ttl_ms=1000, now=1602)


def _plant(store: SessionStore) -> str:
    sid = store.create_session(cwd="/w")
    for i in range(40):
        store.append_message(sid, user_message(f"before {i} " + "x" * 300))
    store.append_message(sid, user_message(f"my secret is {SECRET}, keep it"))
    store.append_session_info(sid, f"named {SECRET}")
    for i in range(40):
        store.append_message(sid, user_message(f"after {i} " + "y" * 300))
    return sid


def _raw_hits(directory: Path) -> list[str]:
    hits = []
    for path in directory.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if path.name.endswith(".gz"):
            data += gzip.decompress(data)
        if SECRET.encode() in data:
            hits.append(path.name)
    return hits


@pytest.mark.parametrize("archived", [False, True], ids=["live", "archived"])
def test_erasure_leaves_no_trace_in_the_sqlite_file_its_wal_or_the_archive(
        tmp_path: Path, archived: bool) -> None:
    db = tmp_path / "db"
    db.mkdir()
    with SessionStore(f"sqlite:///{db / 'sessions.db'}") as store:
        kept = store.import_jsonl(PI_FILES["before-compaction"]).session_id
        sid = _plant(store)
        other = store.create_session(cwd="/w")
        for i in range(60):  # writes after the planted text, interleaved pages
            store.append_message(other, user_message(f"other {i} " + "z" * 300))
        if archived:
            archive.archive_session(store._entries, sid, archive_dir=db / "archive")
        assert _raw_hits(db)
        record = erasure.erase_session(store._entries, sid, by="token:abc")
        assert _raw_hits(db) == []
        assert record.erased_by == "token:abc" and record.entries == 82
        assert erasure.erasures(store._entries) == [record]
        with pytest.raises(SessionNotFoundError):
            store.session(sid)
        assert {s.id for s in store.list_sessions()} == {kept, other}
        assert store.search("other 5") and not store.search(SECRET)


def test_erasure_removes_every_row_of_the_session_on_both_backends(store: SessionStore, tmp_path: Path) -> None:
    entries = store._entries
    sid = _plant(store)
    retention.hold(entries, sid)
    with entries.backend.write() as tx:
        tx.run("INSERT INTO sessionstore_idempotency (tenant, key, fingerprint, status, headers, body,"
                        " created_ms) VALUES ('default', 'k1', 'f', 201, :h, :b, 0),"
                        " ('default', 'k2', 'f', 201, '{}', :other, 0)",
                        {"h": f'{{"location": "/v1/sessions/{sid}"}}', "b": f'{{"id": "{sid}"}}'.encode(),
                         "other": b'{"id": "another"}'})
    record = erasure.erase_session(entries, sid, vacuum=True)
    with entries.backend.read() as tx:
        for table in ("sessionstore_search", "sessionstore_usage", "sessionstore_entries", "sessionstore_holds",
                      "sessionstore_archives", "sessionstore_sources"):
            assert tx.run(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table
        assert tx.run("SELECT key FROM sessionstore_idempotency").fetchall() == [("k2",)]
        audit = tx.run("SELECT * FROM sessionstore_erasures").fetchall()
    assert SECRET not in repr(audit) and record.session_id == sid
    gone = _plant(store)
    retention.hold(entries, gone)
    assert [e.session_id for e in erasure.erase_tenant(entries, by="admin")] == [gone]
    assert store.list_sessions() == []

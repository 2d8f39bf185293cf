"""The backend contract (``sessionstore.store.backend``), held to by every backend.

The tests use only the ``Backend`` and ``Tx`` protocols, on backends made by the ``make_backend``
factory from a fresh, migrated database per test (``db_url``, parametrised over ``BACKENDS`` in
``tests/conftest.py``): a third backend gets the same tests by adding its database there and its
module to ``engine.open_backend`` (LangGraph's checkpoint conformance suite is the model)."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sessionstore.errors import EntryIdTakenError, StoreError
from sessionstore.store import migrate
from sessionstore.store.backend import EntryRow, HeadUpdate, NewSession, TenantBackend
from sessionstore.store.engine import make_engine, open_backend
from sessionstore.store.facts import NodeFacts, TreeIndex
from sessionstore.store.tenant import DEFAULT_TENANT

BackendFactory = Callable[[], TenantBackend]


@pytest.fixture
def make_backend(db_url: str) -> Iterator[BackendFactory]:
    """Backends on the test's fresh database (``db_url``: SQLite file or PostgreSQL clone), migrated."""
    opened: list[TenantBackend] = []

    def factory() -> TenantBackend:
        engine = make_engine(db_url)
        migrate.upgrade(engine)
        made = TenantBackend(open_backend(engine), DEFAULT_TENANT, owner=True)  # (as the entry store opens it)
        opened.append(made)
        return made

    yield factory
    for made in opened:
        made.close()


def new_session(tx: Any, session_id: str = "s") -> int:
    header = json.dumps({"type": "session", "version": 3, "id": session_id, "timestamp": "t", "cwd": "/w"})
    return int(tx.insert_session(NewSession(session_id, 3, "/w", "t", None, header)))


def tree_rows(key: int, shape: list[str | None]) -> list[tuple[EntryRow, NodeFacts]]:
    """Rows of a tree given as each entry's parent id (entries are ``e0``, ``e1``, ...), with the facts
    the store's own index computes for them."""
    index = TreeIndex()
    out = []
    for seq, parent in enumerate(shape):
        entry = {"type": "message", "id": f"e{seq}", "parentId": parent,
                 "message": {"role": "user", "content": f"m{seq}"}}
        facts, parent_seq = index.add(entry)
        row = EntryRow(key, seq, entry["id"], parent_seq, facts.run_start, facts.depth, facts.ctx_depth,
                       facts.compaction_seq, facts.model_seq, facts.thinking_seq, "message", json.dumps(entry))
        out.append((row, facts))
    return out


# e0 <- e1 <- e2 <- e3 ; e1 <- e4 <- e5 ; e5 <- e6 ; e2 <- e7 (branches start new runs)
SHAPE: list[str | None] = [None, "e0", "e1", "e2", "e1", "e4", "e5", "e2"]


def path_ids(shape: list[str | None], leaf: int) -> list[str]:
    ids, node = [], f"e{leaf}"
    parents = {f"e{i}": p for i, p in enumerate(shape)}
    while node is not None:
        ids.append(node)
        node = parents[node]  # type: ignore[assignment]
    return ids[::-1]


@pytest.fixture
def tree(make_backend: BackendFactory) -> tuple[TenantBackend, int, list[tuple[EntryRow, NodeFacts]]]:
    backend = make_backend()
    with backend.write() as tx:
        key = new_session(tx)
        rows = tree_rows(key, SHAPE)
        for row, _facts in rows:
            tx.insert_entry(row)
        last = rows[-1]
        tx.update_head(HeadUpdate(key, last[0].entry_id, last[1], len(rows), len(rows), None, "m0", 1),
                       texts_changed=True)
    return backend, key, rows


def test_a_new_session_gets_a_key_of_its_own_and_an_empty_head(make_backend: BackendFactory) -> None:
    backend = make_backend()
    with backend.write() as tx:
        first, second = new_session(tx, "a"), new_session(tx, "b")
    assert first != second
    with backend.read() as tx:
        head = tx.head("a", lock=False)
        assert head is not None and head.key == first and not head.deleting
        assert (head.entry_count, head.leaf_id, head.leaf_facts) == (0, None, None)
        assert tx.head("missing", lock=False) is None and tx.session("missing") is None
        assert sorted(r.id for r in tx.sessions()) == ["a", "b"]


def test_the_head_gives_back_the_leaf_facts_and_counts_written(
    tree: tuple[TenantBackend, int, list[tuple[EntryRow, NodeFacts]]],
) -> None:
    backend, key, rows = tree
    with backend.read() as tx:
        head = tx.head("s", lock=False)
        session = tx.session("s")
    assert head is not None and session is not None
    assert head.leaf_facts == rows[-1][1] and head.leaf_id == "e7"
    assert (head.entry_count, head.message_count, head.first_message, head.modified_ms) == (8, 8, "m0", 1)
    assert (session.key, session.leaf_id, session.first_message) == (key, "e7", "m0")
    assert json.loads(session.header)["id"] == "s"


@pytest.mark.parametrize("leaf", range(len(SHAPE)))
def test_the_path_of_every_leaf_comes_back_root_first_across_its_runs(
    tree: tuple[TenantBackend, int, list[tuple[EntryRow, NodeFacts]]], leaf: int
) -> None:
    backend, key, _rows = tree
    with backend.read() as tx:
        path = tx.path(key, leaf, from_depth=0)
        tail = tx.path(key, leaf, from_depth=2)
    expected = path_ids(SHAPE, leaf)
    assert [json.loads(p)["id"] for p in path.payloads] == expected
    assert path.first_seq == 0
    assert [json.loads(p)["id"] for p in tail.payloads] == expected[2:]
    assert tail.first_seq == (int(expected[2][1:]) if len(expected) > 2 else None)


def test_on_path_tells_ancestors_from_entries_of_other_branches(
    tree: tuple[TenantBackend, int, list[tuple[EntryRow, NodeFacts]]],
) -> None:
    backend, key, _rows = tree
    with backend.read() as tx:
        for leaf in range(len(SHAPE)):
            on = set(path_ids(SHAPE, leaf))
            for seq in range(len(SHAPE)):
                target = tx.facts(key, f"e{seq}")
                assert target is not None
                assert tx.on_path(key, leaf, target) == (f"e{seq}" in on), (leaf, seq)


def test_entries_read_by_id_seq_parent_and_type_in_append_order(
    tree: tuple[TenantBackend, int, list[tuple[EntryRow, NodeFacts]]],
) -> None:
    backend, key, rows = tree
    with backend.read() as tx:
        assert tx.facts(key, "e5") == tuple(rows[5][1]) and tx.facts(key, "nope") is None
        assert json.loads(tx.payload(key, "e3") or "")["id"] == "e3" and tx.payload(key, "nope") is None
        assert json.loads(tx.payload_at(key, 4) or "")["id"] == "e4" and tx.payload_at(key, 99) is None
        assert [json.loads(p)["id"] for p in tx.children(key, 1)] == ["e2", "e4"]
        assert [json.loads(p)["id"] for p in tx.children(key, None)] == ["e0"]
        assert [(r.seq, r.parent_seq) for r in tx.tree(key)] == [(r.seq, r.parent_seq) for r, _ in rows]
        assert len(tx.payloads_of_type(key, "message")) == 8 and tx.payloads_of_type(key, "label") == []
        assert [json.loads(p)["id"] for p in tx.payloads(key)] == [f"e{i}" for i in range(8)]
        assert tx.count_entries(key) == 8


def test_an_export_writes_every_payload_as_stored_with_its_header_and_last_id(
    tree: tuple[TenantBackend, int, list[tuple[EntryRow, NodeFacts]]],
) -> None:
    backend, key, rows = tree
    out = io.BytesIO()
    with backend.read() as tx:
        head = tx.export_head("s")
        assert head is not None and (head.key, head.leaf_id, head.last_entry_id) == (key, "e7", "e7")
        assert tx.write_payload_lines(key, out) == 8
    assert out.getvalue() == b"".join(r.payload.encode() + b"\n" for r, _ in rows)


def test_a_taken_entry_id_is_its_own_error_and_the_write_leaves_nothing(
    tree: tuple[TenantBackend, int, list[tuple[EntryRow, NodeFacts]]],
) -> None:
    backend, key, rows = tree
    again = rows[3][0]._replace(seq=8, parent_seq=7, run_start=7, depth=3)
    with pytest.raises(EntryIdTakenError), backend.write() as tx:
        tx.insert_entry(again)
    with backend.read() as tx:
        assert tx.count_entries(key) == 8


def test_any_other_refusal_of_the_database_is_a_store_error_with_the_driver_error_chained(
    tree: tuple[TenantBackend, int, list[tuple[EntryRow, NodeFacts]]],
) -> None:
    backend, _key, rows = tree
    orphan = rows[3][0]._replace(seq=8, entry_id="x", parent_seq=50, run_start=8, depth=1)
    with pytest.raises(StoreError) as caught, backend.write() as tx:
        tx.insert_entry(orphan)
    assert not isinstance(caught.value, EntryIdTakenError) and caught.value.__cause__ is not None


def test_a_write_that_raises_is_rolled_back_and_the_backend_goes_on(make_backend: BackendFactory) -> None:
    backend = make_backend()
    with pytest.raises(RuntimeError), backend.write() as tx:
        new_session(tx, "gone")
        raise RuntimeError("the caller changed its mind")
    with backend.write() as tx:
        new_session(tx, "kept")
    with backend.read() as tx:
        assert [r.id for r in tx.sessions()] == ["kept"]


def test_a_bulk_sink_stores_every_row_and_a_failed_bulk_write_none(make_backend: BackendFactory) -> None:
    backend = make_backend()
    shape: list[str | None] = [None] + [f"e{i}" for i in range(4_999)]
    with backend.write(bulk=True) as tx:
        key = new_session(tx)
        with tx.bulk_sink() as sink:
            for row, _facts in tree_rows(key, shape):
                sink.add(row)
    with pytest.raises(RuntimeError), backend.write(bulk=True) as tx:
        other = new_session(tx, "half")
        with tx.bulk_sink() as sink:
            for row, _facts in tree_rows(other, shape):
                sink.add(row)
                if row.seq == 4_500:
                    raise RuntimeError("the reader failed")
    with backend.read() as tx:
        assert tx.count_entries(key) == 5_000 and tx.head("half", lock=False) is None
        assert len(tx.path(key, 4_999, from_depth=0).payloads) == 5_000


def test_set_leaf_and_delete_session_change_only_their_session(
    tree: tuple[TenantBackend, int, list[tuple[EntryRow, NodeFacts]]],
) -> None:
    backend, key, rows = tree
    with backend.write() as tx:
        other = new_session(tx, "other")
        tx.set_leaf(key, "e3", rows[3][1])
    with backend.read() as tx:
        head = tx.head("s", lock=False)
        assert head is not None and head.leaf_id == "e3" and head.leaf_facts == rows[3][1]
    with backend.write() as tx:
        tx.delete_session(key)
    with backend.read() as tx:
        assert tx.head("s", lock=False) is None and tx.count_entries(key) == 0
        assert [r.key for r in tx.sessions()] == [other]


def test_a_read_sees_one_snapshot_while_another_backend_writes(make_backend: BackendFactory) -> None:
    reader, writer = make_backend(), make_backend()
    with writer.write() as tx:
        new_session(tx, "first")
    with reader.read() as tx:
        assert [r.id for r in tx.sessions()] == ["first"]
        done = threading.Event()

        def write_another() -> None:
            with writer.write() as wtx:
                new_session(wtx, "second")
            done.set()

        thread = threading.Thread(target=write_another)
        thread.start()
        thread.join(timeout=30)
        assert done.is_set()
        assert [r.id for r in tx.sessions()] == ["first"]
    with reader.read() as tx:
        assert sorted(r.id for r in tx.sessions()) == ["first", "second"]


def test_a_locked_head_makes_a_second_writer_wait_and_read_what_the_first_left(
    make_backend: BackendFactory,
) -> None:
    first, second = make_backend(), make_backend()
    with first.write() as tx:
        key = new_session(tx)
    seen: list[int] = []
    started = threading.Event()

    def later_writer() -> None:
        started.set()
        with second.write() as tx:
            head = tx.head("s", lock=True)
            assert head is not None
            seen.append(head.entry_count)

    with first.write() as tx:
        assert tx.head("s", lock=True) is not None
        thread = threading.Thread(target=later_writer)
        thread.start()
        started.wait()
        thread.join(timeout=0.3)
        assert thread.is_alive()  # waiting for the first writer
        tx.update_head(HeadUpdate(key, None, None, 5, 0, None, None, None), texts_changed=False)
    thread.join(timeout=30)
    assert seen == [5]


def test_an_entry_deeper_than_the_leaf_is_never_on_its_path(make_backend: BackendFactory) -> None:
    """A leaf high on a branch and a deeper entry of another branch below a common ancestor: the walk
    from the leaf down to the deeper entry's depth is empty, not a walk from some unrelated entry."""
    backend = make_backend()
    shape: list[str | None] = [None, "e0", "e1", "e2", "e3", "e0", "e4", "e6"]  # e5 = a branch at e0
    with backend.write() as tx:
        key = new_session(tx)
        for row, _facts in tree_rows(key, shape):
            tx.insert_entry(row)
    with backend.read() as tx:
        for seq in range(len(shape)):
            target = tx.facts(key, f"e{seq}")
            assert target is not None
            assert tx.on_path(key, 5, target) == (seq in (0, 5)), seq
        assert tx.path(key, 5, from_depth=3).payloads == []


def test_usage_rows_add_up_per_key_and_day_and_sums_cover_the_chosen_sessions_only(
    make_backend: BackendFactory,
) -> None:
    from sessionstore.store.facts import UsageRow

    backend = make_backend()
    with backend.write() as tx:
        a, b, c = new_session(tx, "a"), new_session(tx, "b"), new_session(tx, "c")
        tx.add_usage([UsageRow(a, "p/m", "2025-01-01", 1, 10, 1, 0, 0, 0.5),
                      UsageRow(a, "p/m", "2025-01-02", 1, 20, 2, 0, 0, 0.25)])
        tx.add_usage([UsageRow(a, "p/m", "2025-01-01", 2, 5, 0, 1, 1, 0.125)])  # adds to the same row
        tx.add_usage([UsageRow(b, "p/m", "2025-01-01", 1, 1, 1, 1, 1, 1.0), UsageRow(b, "q/n", "", 1, 0, 0, 0, 0, 0.0)])
        tx.add_usage([UsageRow(c, "p/m", "2025-01-01", 1, 100, 0, 0, 0, 8.0)])
    with backend.read() as tx:
        rows = sorted(tx.session_usage(a))
        assert rows == [UsageRow(a, "p/m", "2025-01-01", 3, 15, 1, 1, 1, 0.625),
                        UsageRow(a, "p/m", "2025-01-02", 1, 20, 2, 0, 0, 0.25)]
        assert tx.session_usage(9999) == []
        sums = sorted(tuple(s) for s in tx.usage_sums([a, b]))
        assert sums == [("p/m", "2025-01-01", 4, 16, 2, 2, 2, 1.625), ("p/m", "2025-01-02", 1, 20, 2, 0, 0, 0.25),
                        ("q/n", "", 1, 0, 0, 0, 0, 0.0)]
        assert tx.usage_sums([]) == []
        many = [*range(10**6, 10**6 + 40_000), c]  # past any limit on parameters: the keys are one parameter
        assert [s.cost for s in tx.usage_sums(many)] == [8.0]
    with backend.write() as tx:
        tx.update_head(HeadUpdate(a, None, None, 9, 7, None, None, None, 2, 3, 1, 4), texts_changed=False)
        tx.update_head(HeadUpdate(b, None, None, 1, 1, None, None, None, 1, 0, 0, 0), texts_changed=False)
    with backend.read() as tx:
        assert tuple(tx.counter_sums([a, b])) == (8, 3, 3, 4, 1)  # messages, user, assistant, calls, results
        assert tuple(tx.counter_sums([c])) == tuple(tx.counter_sums([])) == (0, 0, 0, 0, 0)
    with backend.write() as tx:
        tx.delete_session(a)
    with backend.read() as tx:
        assert tx.session_usage(a) == [] and {s.model_key for s in tx.usage_sums([a, b, c])} == {"p/m", "q/n"}

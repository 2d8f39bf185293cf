"""Live sessions (SPEC 4, 10): appends, leaf, branches, forks, labels, names, compaction, listing."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from sessionstore.api import SessionStore
from sessionstore.context import build_session_context
from sessionstore.errors import (
    EntryIdTakenError,
    EntryNotFoundError,
    InvalidCompactionError,
    InvalidInputError,
    LeafConflictError,
    SessionExistsError,
    SessionNotFoundError,
    StoreError,
)
from sessionstore.store.entry_store import EntryStore
from tests.builders import assistant, result, user
from tests.paths import PI_FILES


@pytest.fixture
def sid(store: SessionStore) -> str:
    return store.create_session(cwd="/work")


def test_appends_return_pi_style_ids_and_move_the_leaf(store: SessionStore, sid: str) -> None:
    ids = [
        store.append_thinking_level_change(sid, "high"),
        store.append_model_change(sid, provider="anthropic", model_id="opus"),
        store.append_message(sid, user("hi")),
        store.append_message(sid, assistant("hello")),
        store.append_custom(sid, "state", {"n": 1}),
        store.append_custom_message(sid, "note", "remember", display=False),
        store.append_session_info(sid, "my session"),
    ]
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids)
    assert len(set(ids)) == len(ids)
    assert store.leaf(sid) == ids[-1]
    path = store.path(sid)
    assert [e["id"] for e in path] == ids
    assert [e["parentId"] for e in path] == [None, *ids[:-1]]
    context = store.context(sid)
    assert [m["role"] for m in context.messages] == ["user", "assistant", "custom"]
    assert context.thinking_level == "high"
    assert context.model == {"provider": "p1", "modelId": "m1"}


def test_a_bad_message_is_refused_with_the_field_named(store: SessionStore, sid: str, entry_store: EntryStore) -> None:
    with pytest.raises(InvalidInputError, match="toolCallId"):
        store.append_message(sid, {"role": "toolResult", "toolName": "x", "content": [], "isError": False,
                                   "timestamp": 1})
    assert entry_store.count_entries(sid) == 0


def test_unknown_roles_are_stored_as_opaque_data(store: SessionStore, sid: str) -> None:
    store.append_message(sid, {"role": "telemetry", "payload": {"x": [1, 2]}})
    assert store.path(sid)[0]["message"] == {"role": "telemetry", "payload": {"x": [1, 2]}}
    assert [d.code for d in store.context(sid).diagnostics] == ["UNKNOWN_ROLE"]


def test_expected_leaf_conflict_writes_nothing(store: SessionStore, sid: str, entry_store: EntryStore) -> None:
    first = store.append_message(sid, user("a"))
    store.append_message(sid, user("b"), expected_leaf=first)
    with pytest.raises(LeafConflictError) as raised:
        store.append_message(sid, user("c"), expected_leaf=first)
    assert raised.value.expected == first
    assert entry_store.count_entries(sid) == 2


def test_two_stores_on_one_database_one_wins_one_conflicts(db_url: str, entry_store: EntryStore) -> None:
    with SessionStore(db_url) as one, SessionStore(db_url) as two:
        sid = one.create_session(cwd="/w")
        root = one.append_message(sid, user("root"))
        leaf_seen_by_both = two.leaf(sid)
        assert leaf_seen_by_both == root
        won = one.append_message(sid, user("from one"), expected_leaf=leaf_seen_by_both)
        with pytest.raises(LeafConflictError):
            two.append_message(sid, user("from two"), expected_leaf=leaf_seen_by_both)
        assert [e["id"] for e in two.path(sid)] == [root, won]
        assert entry_store.count_entries(sid) == 2


def test_branch_then_restart_then_append_lands_on_the_branch(db_url: str) -> None:
    with SessionStore(db_url) as store:
        sid = store.create_session(cwd="/w")
        a = store.append_message(sid, user("a"))
        store.append_message(sid, assistant("b"))
        store.branch(sid, a)
    with SessionStore(db_url) as reopened:
        assert reopened.leaf(sid) == a
        c = reopened.append_message(sid, assistant("c"))
        assert [e["id"] for e in reopened.path(sid)] == [a, c]
        assert len(reopened.children(sid, a)) == 2


def test_reset_leaf_makes_the_next_append_a_new_root(store: SessionStore, sid: str) -> None:
    store.append_message(sid, user("a"))
    store.reset_leaf(sid)
    assert store.leaf(sid) is None
    assert store.context(sid).messages == []
    b = store.append_message(sid, user("b"))
    assert store.entry(sid, b)["parentId"] is None
    assert [e["id"] for e in store.children(sid, None)][-1] == b


def test_branch_to_an_unknown_entry_is_refused(store: SessionStore, sid: str) -> None:
    with pytest.raises(EntryNotFoundError):
        store.branch(sid, "nope")


def test_branch_with_summary_records_the_abandoned_leaf(store: SessionStore, sid: str) -> None:
    a = store.append_message(sid, user("a"))
    abandoned = store.append_message(sid, assistant("b"))
    summary_id = store.branch_with_summary(sid, a, "we tried b", details={"files": ["x"]})
    summary = store.entry(sid, summary_id)
    assert summary["parentId"] == a
    assert summary["fromId"] == abandoned
    assert summary["details"] == {"files": ["x"]}
    assert store.leaf(sid) == summary_id
    assert [m["role"] for m in store.context(sid).messages] == ["user", "branchSummary"]


def test_labels_latest_wins_and_no_label_clears(store: SessionStore, sid: str) -> None:
    a = store.append_message(sid, user("a"))
    store.append_label(sid, a, "first")
    store.append_label(sid, a, "second")
    assert store.labels(sid) == {a: "second"}
    (root,) = store.tree(sid)
    assert root.label == "second"
    store.append_label(sid, a)
    assert store.labels(sid) == {}
    with pytest.raises(EntryNotFoundError):
        store.append_label(sid, "missing", "x")


def test_tree_orders_children_by_append_and_marks_the_active_path(store: SessionStore, sid: str) -> None:
    a = store.append_message(sid, user("a"))
    b1 = store.append_message(sid, assistant("b1"))
    store.branch(sid, a)
    b2 = store.append_message(sid, assistant("b2"))
    (root,) = store.tree(sid)
    assert root.entry["id"] == a and root.on_active_path
    assert [(c.entry["id"], c.on_active_path) for c in root.children] == [(b1, False), (b2, True)]


def test_fork_copies_the_path_and_labels_and_names_the_parent(store: SessionStore, sid: str) -> None:
    a = store.append_message(sid, user("a"))
    b = store.append_message(sid, assistant("b"))
    store.branch(sid, a)
    store.append_label(sid, b, "good one")
    store.append_message(sid, assistant("c"))
    forked = store.fork(sid, leaf_id=b)
    assert store.header(forked)["parentSession"] == sid
    ids = [e["id"] for e in store.path(forked)]
    assert ids[:2] == [a, b]
    assert store.labels(forked) == {b: "good one"}
    assert store.context(forked).messages == store.context(sid, leaf_id=b).messages


def test_fork_of_a_compacted_session_resumes_to_the_same_context(store: SessionStore) -> None:
    sid = store.import_jsonl(PI_FILES["before-compaction"]).session_id
    forked = store.fork(sid)
    original, copy = store.context(sid), store.context(forked)
    assert copy.messages == original.messages
    assert copy.llm == original.llm
    assert (copy.model, copy.thinking_level) == (original.model, original.thinking_level)


def test_list_sessions_gives_listing_fields_newest_first_and_filters_by_cwd(store: SessionStore) -> None:
    old = store.create_session(cwd="/a", timestamp="2025-01-01T00:00:00.000Z")
    store.append_message(old, user("first question", ts=1_000))
    store.append_message(old, assistant("answer"))
    store.append_session_info(old, "old one")
    new = store.create_session(cwd="/b", timestamp="2025-02-01T00:00:00.000Z")
    store.append_message(new, {**user("later", ts=2_000_000_000_000)})
    listed = store.list_sessions()
    assert [i.id for i in listed] == [new, old]
    info = listed[1]
    assert (info.name, info.cwd, info.message_count, info.first_message, info.entry_count) == (
        "old one", "/a", 2, "first question", 3)
    assert [i.id for i in store.list_sessions(cwd="/a")] == [old]


def test_listing_columns_follow_appends_that_change_them_and_keep_them_otherwise(store: SessionStore) -> None:
    """Appends rewrite the name and first-message columns only when they change (the others always)."""
    sid = store.create_session(cwd="/w")
    long_prompt = "first " + "x" * 20_000

    def listed() -> tuple[str | None, str | None, int, int]:
        info = store.session(sid)
        return info.name, info.first_message, info.message_count, info.entry_count

    store.append_message(sid, assistant("before any user message"))
    assert listed() == (None, None, 1, 1)
    store.append_message(sid, user(long_prompt))
    assert listed() == (None, long_prompt, 2, 2)
    store.append_session_info(sid, "  named  ")
    store.append_message(sid, user("second"))
    store.append_model_change(sid, provider="p", model_id="m")
    assert listed() == ("named", long_prompt, 3, 5)
    store.append_session_info(sid, "renamed")
    store.append_message(sid, assistant("reply"))
    assert listed() == ("renamed", long_prompt, 4, 7)
    store.append_session_info(sid, "   ")
    assert listed() == (None, long_prompt, 4, 8)


def test_delete_session_removes_everything_in_one_go(
    store: SessionStore, sid: str, db_engine: Engine, entry_store: EntryStore
) -> None:
    store.append_message(sid, user("a"))
    other = store.create_session(cwd="/w")
    store.append_message(other, user("kept"))
    store.delete_session(sid)
    with pytest.raises(SessionNotFoundError):
        store.context(sid)
    assert entry_store.count_entries(other) == 1
    with db_engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM sessionstore_sessions WHERE id = :s"), {"s": sid}).scalar() == 0
        left = conn.execute(text("SELECT count(*) FROM sessionstore_entries e JOIN sessionstore_sessions s"
                                 " ON s.key = e.session_key WHERE s.id <> :o"), {"o": other}).scalar()
        assert left == 0
        assert conn.execute(text("SELECT count(*) FROM sessionstore_entries")).scalar() == 1


@pytest.mark.parametrize("statement", [
    "UPDATE sessionstore_entries SET type = 'x'",
    "DELETE FROM sessionstore_entries",
    "UPDATE sessionstore_entries SET payload = '{}' WHERE seq = 0",
])
def test_the_database_refuses_raw_update_and_delete_of_entries(
    store: SessionStore, sid: str, statement: str, db_engine: Engine, entry_store: EntryStore
) -> None:
    store.append_message(sid, user("a"))
    with pytest.raises(Exception, match="append-only"), db_engine.begin() as conn:
        conn.execute(text(statement))
    assert entry_store.count_entries(sid) == 1


_RAW_ENTRY = (
    "INSERT INTO sessionstore_entries (session_key, seq, entry_id, parent_seq, run_start, depth, ctx_depth, type,"
    " payload) VALUES ((SELECT key FROM sessionstore_sessions WHERE id = :s), :seq, 'x', :ps, :seq, 1, 0,"
    " 'message', '{}')"
)


def test_the_database_refuses_a_parent_from_another_session(store: SessionStore, sid: str, db_engine: Engine) -> None:
    store.append_message(sid, user("a"))  # seq 0 of sid, none in other
    other = store.create_session(cwd="/w")
    # Refused by the parent foreign key, or first (SQLite) by revision 0011: seq 5 is not other's next.
    with pytest.raises(Exception, match=r"(?i)foreign key|append-only"), db_engine.begin() as conn:
        conn.execute(text(_RAW_ENTRY), {"s": other, "seq": 5, "ps": 0})


@pytest.mark.parametrize("parent_seq", [7, 8])
def test_the_database_refuses_a_row_whose_parent_is_not_before_it(
    store: SessionStore, sid: str, parent_seq: int, db_engine: Engine, entry_store: EntryStore
) -> None:
    for content in "abcdefg":  # seq 0..6
        store.append_message(sid, user(content))
    with (
        pytest.raises(Exception, match=r"(?i)check constraint|ck_sessionstore_entries_parent_link"),
        db_engine.begin() as conn,
    ):
        conn.execute(text(_RAW_ENTRY), {"s": sid, "seq": 7, "ps": parent_seq})
    assert entry_store.count_entries(sid) == 7


def test_creating_a_session_twice_is_refused(store: SessionStore) -> None:
    store.create_session(cwd="/w", session_id="s1")
    with pytest.raises(SessionExistsError):
        store.create_session(cwd="/w", session_id="s1")


def test_export_records_a_leaf_that_is_not_the_last_entry_and_import_restores_it(
    store: SessionStore, sid: str, tmp_path: Path
) -> None:
    a = store.append_message(sid, user("a"))
    store.append_message(sid, assistant("b"))
    store.branch(sid, a)
    out = io.BytesIO()
    store.export_jsonl(sid, out)
    assert b'"leafId":"' + a.encode() + b'"' in out.getvalue().splitlines()[0]
    with SessionStore(f"sqlite:///{tmp_path / 'other.db'}") as other:
        other.import_jsonl(io.BytesIO(out.getvalue()))
        assert other.leaf(sid) == a
        assert "leafId" not in other.header(sid)


def test_an_export_is_one_snapshot_even_when_an_append_lands_during_it(
    store: SessionStore, sid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The header's leafId and the entries come from the same moment (PostgreSQL reads run as
    REPEATABLE READ; SQLite's read transaction sees one WAL snapshot)."""
    import json

    from sessionstore.store import entry_store as store_module

    a = store.append_message(sid, user("a"))
    b = store.append_message(sid, assistant("b"))
    store.branch(sid, a)  # the leaf is not the last entry: the header names it
    other = SessionStore(store.url)
    original = store_module.export_header_line
    landed: list[str] = []
    armed = [True]

    def append_then_dump(header_text: str, **leaf: str | None) -> bytes:
        # export writes the header line after reading the session row and before reading the entries
        if armed.pop() if armed else False:
            landed.append(other.append_message(sid, user("c")))  # a child of the leaf: the new leaf and last
        return original(header_text, **leaf)

    monkeypatch.setattr(store_module, "export_header_line", append_then_dump)
    try:
        out = io.BytesIO()
        assert store.export_jsonl(sid, out) == 2
    finally:
        monkeypatch.undo()
        other.close()
    lines = out.getvalue().splitlines()
    assert json.loads(lines[0])["leafId"] == a
    assert [json.loads(line)["id"] for line in lines[1:]] == [a, b]
    assert landed and store.leaf(sid) == landed[0]


def test_a_file_whose_compaction_keeps_from_itself_imports_and_resumes_from_the_summary(store: SessionStore) -> None:
    lines = [
        b'{"type":"session","version":3,"id":"selfkept","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}',
        b'{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        b'"message":{"role":"user","content":"old","timestamp":1}}',
        b'{"type":"compaction","id":"c1","parentId":"u1","timestamp":"2025-01-01T00:00:02.000Z",'
        b'"summary":"the summary","firstKeptEntryId":"c1","tokensBefore":10}',
        b'{"type":"message","id":"u2","parentId":"c1","timestamp":"2025-01-01T00:00:03.000Z",'
        b'"message":{"role":"user","content":"new","timestamp":3}}',
    ]
    assert store.import_jsonl(io.BytesIO(b"\n".join(lines) + b"\n")).entries == 3
    context = store.context("selfkept")
    assert [m["role"] for m in context.messages] == ["compactionSummary", "user"]
    assert context.messages[1]["content"] == "new"
    assert context.messages == build_session_context(store.path("selfkept")).messages


def test_export_of_an_empty_session_is_its_header_line(store: SessionStore, sid: str) -> None:
    out = io.BytesIO()
    assert store.export_jsonl(sid, out) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith(b'{"type":"session","version":3,"id":"' + sid.encode())


def test_a_large_imported_session_exports_every_line_byte_for_byte(store: SessionStore) -> None:
    """Several MB (the PostgreSQL COPY stream is cut into many buffers), with escapes, non-ASCII text,
    JavaScript number forms and key orders that re-encoding would change."""
    lines = [b'{"type":"session","version":3,"id":"big","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}']
    parent = "null"
    for i in range(1500):
        text = f"line {i} \\n \\\" caf\u00e9 \u65e5\u672c {'x' * (i % 7 * 900)}"
        entry = (
            f'{{"type":"message","id":"{i:08x}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z",'
            f'"message":{{"role":"user","content":"{text}","timestamp":1e+21,"z":1,"a":[0.000001,1e-7]}}}}'
        )
        lines.append(entry.encode())
        parent = f'"{i:08x}"'
    data = b"\n".join(lines) + b"\n"
    assert store.import_jsonl(io.BytesIO(data)).entries == 1500
    out = io.BytesIO()
    assert store.export_jsonl("big", out) == 1500
    assert out.getvalue() == data


# -- compaction -----------------------------------------------------------------------------------
def long_session(store: SessionStore, turns: int = 30) -> str:
    sid = store.create_session(cwd="/w")
    for i in range(turns):
        store.append_message(sid, user(f"question {i} " + "x" * 400))
        store.append_message(sid, assistant("", (f"c{i}", "read", {"path": f"/f{i}"})))
        store.append_message(sid, result(f"c{i}", "read", "y" * 2000))
        store.append_message(sid, assistant(f"answer {i} " + "z" * 400))
    return sid


def test_compact_without_a_cut_plans_it_like_pi(store: SessionStore) -> None:
    sid = long_session(store)
    plan = store.plan_compaction(sid, keep_recent_tokens=2000)
    assert plan is not None
    compaction_id = store.compact(sid, summary="earlier work", keep_recent_tokens=2000)
    entry = store.entry(sid, compaction_id)
    assert entry["firstKeptEntryId"] == plan.first_kept_entry_id
    assert entry["tokensBefore"] == 15
    context = store.context(sid)
    assert context.messages[0] == {"role": "compactionSummary", "summary": "earlier work", "tokensBefore": 15,
                                   "timestamp": context.messages[0]["timestamp"]}
    assert context.entry_ids[1] == plan.first_kept_entry_id
    assert context.messages[1]["role"] != "toolResult"
    assert context.diagnostics == []


def test_compact_refuses_a_first_kept_entry_off_the_path(store: SessionStore, entry_store: EntryStore) -> None:
    sid = store.create_session(cwd="/w")
    a = store.append_message(sid, user("a"))
    side = store.append_message(sid, assistant("side"))
    store.branch(sid, a)
    store.append_message(sid, assistant("main"))
    with pytest.raises(InvalidCompactionError, match="not on the path"):
        store.compact(sid, summary="s", first_kept_entry_id=side, tokens_before=1)
    with pytest.raises(InvalidCompactionError, match="not on the path"):
        store.compact(sid, summary="s", first_kept_entry_id="nope", tokens_before=1)
    assert entry_store.count_entries(sid) == 3


def test_compact_refuses_a_first_kept_tool_result(store: SessionStore) -> None:
    sid = store.create_session(cwd="/w")
    store.append_message(sid, user("a"))
    store.append_message(sid, assistant("", ("c1", "ls", {})))
    tool_result = store.append_message(sid, result("c1", "ls"))
    with pytest.raises(InvalidCompactionError, match="toolResult"):
        store.compact(sid, summary="s", first_kept_entry_id=tool_result, tokens_before=1)


def test_compacting_twice_in_a_row_has_nothing_to_compact(store: SessionStore) -> None:
    sid = long_session(store, turns=3)
    store.compact(sid, summary="s", keep_recent_tokens=100)
    assert store.plan_compaction(sid) is None
    with pytest.raises(InvalidCompactionError, match="nothing to compact"):
        store.compact(sid, summary="again")


@pytest.mark.parametrize("name", sorted(PI_FILES))
def test_plan_on_the_real_files_keeps_about_keep_recent_tokens_never_from_a_tool_result(
    store: SessionStore, name: str
) -> None:
    sid = store.import_jsonl(PI_FILES[name]).session_id
    plan = store.plan_compaction(sid, keep_recent_tokens=20_000)
    assert plan is not None
    first_kept = store.entry(sid, plan.first_kept_entry_id)
    assert first_kept.get("message", {}).get("role") != "toolResult"
    assert 10_000 <= plan.kept_tokens < 40_000  # the cut moves to the nearest valid cut point after the budget
    assert plan.messages_to_summarize
    compaction = store.compact(sid, summary="summary")
    context = store.context(sid)
    assert context.entry_ids[0] == compaction
    assert context.entry_ids[1] == plan.first_kept_entry_id
    assert "COMPACTION_FIRST_KEPT_IS_TOOL_RESULT" not in {d.code for d in context.diagnostics}


# -- resume reads only what the context needs ---------------------------------------------------------
def test_resume_of_a_compacted_session_reads_only_the_kept_tail(store: SessionStore, entry_store: EntryStore) -> None:
    sid = store.import_jsonl(PI_FILES["before-compaction"]).session_id
    full_path = store.path(sid)
    part = entry_store.context_slice(sid)
    assert len(part.path) < len(full_path) / 2
    assert part.path[0]["id"] == "00000227"  # the second compaction's first kept entry
    assert part.path[-1]["id"] == full_path[-1]["id"]
    whole = build_session_context(full_path)
    resumed = store.context(sid)
    assert resumed.messages == whole.messages
    assert (resumed.model, resumed.thinking_level) == (whole.model, whole.thinking_level)


def test_resume_after_compaction_still_finds_model_and_thinking_set_before_the_cut(
    store: SessionStore, entry_store: EntryStore
) -> None:
    sid = store.create_session(cwd="/w")
    store.append_thinking_level_change(sid, "high")
    store.append_model_change(sid, provider="prov", model_id="early")
    for i in range(5):
        store.append_message(sid, user(f"u{i}"))
    kept = store.append_message(sid, user("kept"))
    store.compact(sid, summary="s", first_kept_entry_id=kept, tokens_before=1)
    part = entry_store.context_slice(sid)
    assert next(e["id"] for e in part.path) == kept
    context = store.context(sid)
    assert (context.thinking_level, context.model) == ("high", {"provider": "prov", "modelId": "early"})


@pytest.mark.parametrize("name", sorted(PI_FILES))
def test_context_at_any_leaf_equals_pi_over_the_whole_path(store: SessionStore, name: str) -> None:
    sid = store.import_jsonl(PI_FILES[name]).session_id
    entries = store.entries(sid)
    for leaf in entries[::97] + entries[-3:]:
        path = store.path(sid, leaf["id"])
        expected = build_session_context(path)
        got = store.context(sid, leaf_id=leaf["id"])
        assert got.messages == expected.messages
        assert (got.model, got.thinking_level) == (expected.model, expected.thinking_level)


def test_context_at_an_unknown_leaf_is_an_error(store: SessionStore, sid: str) -> None:
    with pytest.raises(EntryNotFoundError):
        store.context(sid, leaf_id="nope")


def test_a_store_error_names_the_database_problem(tmp_path: Path) -> None:
    (tmp_path / "not-a-db").write_text("garbage" * 1000)
    with pytest.raises(StoreError):
        SessionStore(f"sqlite:///{tmp_path / 'not-a-db'}")


class _RecordingCursor:
    """A driver cursor that notes the SQL of every statement it runs."""

    def __init__(self, cursor: object, statements: list[str]) -> None:
        self._cursor = cursor
        self._statements = statements

    def execute(self, sql: str, *args: object, **kwargs: object) -> object:
        self._statements.append(sql)
        return self._cursor.execute(sql, *args, **kwargs)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._cursor, name)


def test_list_sessions_reads_no_entry_rows(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessionstore.store.sqltx import StatementTx

    sid = store.import_jsonl(PI_FILES["large-session"]).session_id
    statements: list[str] = []
    real_init = StatementTx.__init__

    def recording_init(self: StatementTx, cursor: object, sql: object, tenant: str) -> None:
        real_init(self, _RecordingCursor(cursor, statements), sql, tenant)  # type: ignore[arg-type]

    monkeypatch.setattr(StatementTx, "__init__", recording_init)
    (info,) = store.list_sessions()
    monkeypatch.undo()
    assert info.id == sid and info.message_count == 914 and info.first_message == "/mode"
    assert statements and not [s for s in statements if "entries" in s]


def test_import_reports_progress_up_to_the_whole_file(store: SessionStore) -> None:
    seen: list[int] = []
    store.import_jsonl(PI_FILES["before-compaction"], progress=seen.append)
    assert seen == sorted(seen)
    assert seen[-1] == PI_FILES["before-compaction"].stat().st_size


def test_an_append_whose_generated_id_is_taken_draws_another_and_writes_once(
    store: SessionStore, sid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessionstore.store import entry_store as store_module

    first = store.append_message(sid, user("a"), entry_id="0000beef")
    draws = iter(["0000beef", "0000beef", "0000cafe"])
    monkeypatch.setattr(store_module, "random_entry_id", lambda: next(draws))
    second = store.append_message(sid, user("b"))
    assert second == "0000cafe"
    assert [e["id"] for e in store.entries(sid)] == [first, second]
    assert store.entry(sid, second)["parentId"] == first and store.leaf(sid) == second
    assert store.session(sid).entry_count == 2
    with pytest.raises(InvalidInputError, match="already has an entry '0000beef'"):
        store.append_message(sid, user("c"), entry_id="0000beef")
    assert store.session(sid).entry_count == 2 and store.leaf(sid) == second


def test_generated_ids_are_retried_while_taken() -> None:
    from sessionstore.models.ids import new_entry_id

    refusals = iter([True, True, True, False])
    assert re.fullmatch(r"[0-9a-f]{8}", new_entry_id(lambda _candidate: next(refusals)))
    assert len(new_entry_id(lambda _candidate: True)) == 36  # a full UUID after 100 collisions


@pytest.mark.parametrize("failure", ["leaf conflict", "taken id", "interrupt", "none"])
def test_after_an_append_the_pooled_connection_still_runs_atomic_transactions(
    entry_store: EntryStore, sid: str, failure: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL appends switch their connection to autocommit to send BEGIN and COMMIT inside one
    pipeline; whatever the append's outcome, an interrupt before its transaction began included, the
    connection goes back to the pool in its usual state, so that a later multi-statement write (here a
    failing import) still writes nothing at all."""

    def append(text: str, **options: str) -> str:
        return entry_store.append_entry(sid, {"type": "message", "message": user(text)}, **options)

    first = append("a", entry_id="0000beef")
    leaf = first
    if failure == "interrupt":  # Ctrl-C right after the switch to autocommit
        from sqlalchemy.pool.base import _ConnectionFairy

        from sessionstore.store.sqlite_file import DirectConnection, SqliteFile

        opener: Any = _ConnectionFairy  # what the backend asks for its cursor
        if entry_store.backend.name == "postgresql":
            import psycopg

            opener = psycopg.Connection
        elif isinstance(getattr(entry_store.backend.shared, "engine", None), SqliteFile):  # opened without SQLAlchemy
            opener = DirectConnection
        real_cursor = opener.cursor

        def interrupted(self: object, *args: object, **kwargs: object) -> object:
            monkeypatch.setattr(opener, "cursor", real_cursor)
            raise KeyboardInterrupt

        monkeypatch.setattr(opener, "cursor", interrupted)
        with pytest.raises(KeyboardInterrupt):
            append("b")
    elif failure == "leaf conflict":
        with pytest.raises(LeafConflictError):
            append("b", expected_leaf="elsewhere")
    elif failure == "taken id":
        with pytest.raises(EntryIdTakenError, match="already has an entry"):
            append("b", entry_id="0000beef")
    else:
        leaf = append("b")
    raw = entry_store.engine.raw_connection()  # the connection the append gave back to the pool
    try:
        driver = raw.driver_connection
        if entry_store.backend.name == "postgresql":
            from psycopg import pq

            assert driver is not None
            assert driver.autocommit is False and driver.isolation_level is None and driver.read_only is None
            assert driver.info.transaction_status == pq.TransactionStatus.IDLE
    finally:
        raw.close()
    bad = PI_FILES["before-compaction"].read_bytes().rstrip(b"\n") + b"\n{not json\n"
    with pytest.raises(Exception, match="invalid JSON"):
        entry_store.import_jsonl(io.BytesIO(bad))
    assert [s.id for s in entry_store.list_sessions()] == [sid]
    assert entry_store.leaf(sid) == leaf and entry_store.session(sid).entry_count == (1 if leaf == first else 2)


@pytest.mark.parametrize(
    ("second", "reason"),
    [
        ({"id": "a", "parentId": None}, "entry 'a': duplicate id 'a'"),
        ({"id": "b", "parentId": "later"}, "entry 'later': an earlier entry names it as its parent"),
        ({"id": "b", "parentId": "b"}, "entry 'b': it is its own parent"),
    ],
)
def test_insert_session_refuses_a_taken_id_or_a_parent_not_before_its_child_and_writes_nothing(
    store: SessionStore, second: dict[str, object], reason: str
) -> None:
    stamp = "2025-01-01T00:00:00.000Z"
    entries = [
        {"type": "message", "id": "a", "parentId": None, "timestamp": stamp,
         "message": {"role": "user", "content": "x", "timestamp": 1}},
        {"type": "label", "timestamp": stamp, "targetId": "a", "label": "l", **second},
        {"type": "label", "id": "later", "parentId": "a", "timestamp": stamp, "targetId": "a", "label": "m"},
    ]
    header = {"type": "session", "version": 3, "id": "s", "timestamp": stamp, "cwd": "/w"}
    with pytest.raises(InvalidInputError, match=re.escape(f"<entries>: {reason}")):
        store.import_entries(header, entries)
    assert store.list_sessions() == []

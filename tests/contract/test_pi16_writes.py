"""The live API writes what pi 1.6 writes: system messages, context edits, usage entries, branch
summaries with ``fromId`` and usage, forks that handle labels as ``createBranchedSession`` does, and
compactions that keep the prompt in force."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine

from sessionstore.api import SessionStore
from sessionstore.errors import EntryNotFoundError, InvalidCompactionError, InvalidInputError, SessionNotFoundError
from sessionstore.models.messages import system_message
from sessionstore.store.entry_store import EntryStore
from tests.builders import assistant, user

USAGE = {"input": 3, "output": 0, "cacheRead": 0, "cacheWrite": 3, "totalTokens": 6,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.01}}


def conversation(store: SessionStore) -> tuple[str, list[str]]:
    sid = store.create_session(cwd="/w")
    ids = [
        store.append_message(sid, system_message("You are pi.", sections={"env": "cwd /w"},
                                                 tools_added=[{"name": "ls", "description": "list",
                                                               "parameters": {"type": "object"}}])),
        store.append_message(sid, user("first")),
        store.append_message(sid, assistant("answer")),
        store.append_message(sid, user("second")),
    ]
    return sid, ids


def test_a_system_message_is_stored_and_sent_as_pi_1_6_sends_it(store: SessionStore) -> None:
    sid, ids = conversation(store)
    context = store.context(sid)
    assert [m["role"] for m in context.llm] == ["system", "user", "assistant", "user"]
    assert context.llm[0]["sections"] == {"env": "cwd /w"}
    assert context.llm[0]["toolsAdded"][0]["name"] == "ls"
    assert context.diagnostics == []
    assert store.entry(sid, ids[0])["message"]["content"] == "You are pi."


def test_a_system_message_keeps_unknown_fields(store: SessionStore) -> None:
    sid = store.create_session(cwd="/w")
    store.append_message(sid, {"role": "system", "content": [{"type": "text", "text": "x"}], "timestamp": 1,
                               "futureField": {"a": 1}})
    assert store.context(sid).llm[0]["futureField"] == {"a": 1}


def test_a_context_edit_replaces_the_content_of_a_user_message_in_the_context_only(store: SessionStore) -> None:
    sid, ids = conversation(store)
    store.append_context_edit(sid, ids[1], {"content": "edited"})
    context = store.context(sid)
    assert [m.get("content") for m in context.messages if m["role"] == "user"] == ["edited", user("second")["content"]]
    assert store.entry(sid, ids[1])["message"]["content"] == user("first")["content"]


def test_a_string_replacement_of_an_assistant_message_is_stored_as_one_text_block(store: SessionStore) -> None:
    sid, ids = conversation(store)
    edit = store.append_context_edit(sid, ids[2], {"content": "short"})
    assert store.entry(sid, edit)["replacement"] == {"content": [{"type": "text", "text": "short"}]}
    assert store.context(sid).messages[2]["content"] == [{"type": "text", "text": "short"}]


def test_a_null_context_edit_omits_the_target_and_a_later_edit_wins(store: SessionStore) -> None:
    sid, ids = conversation(store)
    store.append_context_edit(sid, ids[3], {"content": "changed"})
    store.append_context_edit(sid, ids[3], None)
    assert [m["role"] for m in store.context(sid).messages] == ["system", "user", "assistant"]


def test_a_context_edit_has_no_effect_on_another_branch(store: SessionStore) -> None:
    sid, ids = conversation(store)
    store.append_context_edit(sid, ids[1], None)
    store.branch(sid, ids[3])
    assert [m["role"] for m in store.context(sid).messages] == ["system", "user", "assistant", "user"]


@pytest.mark.parametrize(
    ("target", "replacement", "error"),
    [
        (1, {"content": 5}, "Context edit replacement must be null or contain string/array content"),
        (1, {"text": "x"}, "Context edit replacement must be null or contain string/array content"),
        (0, None, "does not contribute editable model content"),
    ],
)
def test_a_context_edit_pi_would_refuse_is_refused_and_writes_nothing(
    store: SessionStore, target: int, replacement: Any, error: str, entry_store: EntryStore
) -> None:
    sid, ids = conversation(store)
    with pytest.raises(InvalidInputError, match=error):
        store.append_context_edit(sid, ids[target], replacement)
    assert entry_store.count_entries(sid) == 4


def test_a_context_edit_of_an_entry_off_the_active_branch_or_unknown_is_refused(store: SessionStore) -> None:
    sid, ids = conversation(store)
    store.branch(sid, ids[1])
    with pytest.raises(InvalidInputError, match=f"Entry {ids[3]} is not on the active branch"):
        store.append_context_edit(sid, ids[3], None)
    with pytest.raises(EntryNotFoundError):
        store.append_context_edit(sid, "nope", None)


def test_a_usage_entry_is_stored_as_pi_writes_it_and_is_not_in_the_context(store: SessionStore) -> None:
    sid, _ids = conversation(store)
    before = store.context(sid).messages
    entry_id = store.append_usage(sid, kind="cache_warm", provider="anthropic", model="claude", usage=USAGE)
    entry = store.entry(sid, entry_id)
    assert list(entry) == ["type", "id", "parentId", "timestamp", "kind", "provider", "model", "usage"]
    assert store.context(sid).messages == before
    with_note = store.entry(sid, store.append_usage(sid, kind="k", provider="p", model="m", usage=USAGE, note="n"))
    assert with_note["note"] == "n"


def test_branch_with_summary_stores_the_abandoned_leaf_as_from_id_and_root_before_the_first_entry(
    store: SessionStore,
) -> None:
    sid, ids = conversation(store)
    summary = store.branch_with_summary(sid, ids[1], "tried something", usage=USAGE)
    entry = store.entry(sid, summary)
    assert (entry["fromId"], entry["parentId"], entry["usage"]) == (ids[3], ids[1], USAGE)
    assert list(entry) == ["type", "id", "parentId", "timestamp", "fromId", "summary", "usage"]
    store.reset_leaf(sid)
    assert store.entry(sid, store.branch_with_summary(sid, ids[2], "again"))["fromId"] == "root"


def test_a_session_name_is_written_as_pi_writes_it(store: SessionStore) -> None:
    sid, _ids = conversation(store)
    entry_id = store.append_session_info(sid, "  two\r\n\nlines \n")
    assert store.entry(sid, entry_id)["name"] == "two lines"
    assert store.session(sid).name == "two lines"


def test_a_fork_drops_path_labels_rechains_and_writes_current_labels_as_pi_does(store: SessionStore) -> None:
    sid, ids = conversation(store)
    first_label = store.append_label(sid, ids[1], "start")
    after = store.append_message(sid, assistant("after the label"))
    compaction = store.compact(sid, summary="s", first_kept_entry_id=ids[3], tokens_before=10)
    store.branch(sid, ids[2])
    store.append_label(sid, ids[2], "answer")  # set on another branch: it counts
    store.append_label(sid, ids[1], "")  # cleared...
    store.append_label(sid, ids[1], "start again")  # ...and set again: last in pi's map
    fork = store.fork(sid, leaf_id=compaction)
    entries = store.entries(fork)
    assert first_label not in [e["id"] for e in entries]
    kept = entries[: -2]
    assert [e["id"] for e in kept] == [*ids, after, compaction]
    assert [e["parentId"] for e in kept] == [None, *[e["id"] for e in kept[:-1]]]
    labels = entries[-2:]
    assert [(e["targetId"], e["label"]) for e in labels] == [(ids[2], "answer"), (ids[1], "start again")]
    assert labels[0]["parentId"] == compaction and labels[1]["parentId"] == labels[0]["id"]
    originals = {e["id"]: e for e in store.entries(sid) if e["type"] == "label"}
    set_by = {(e["targetId"], e["label"]): e["timestamp"] for e in originals.values()}
    assert [e["timestamp"] for e in labels] == [set_by[(ids[2], "answer")], set_by[(ids[1], "start again")]]
    assert store.header(fork)["parentSession"] == sid


def test_a_fork_moves_a_compaction_first_kept_label_to_the_next_kept_entry(store: SessionStore) -> None:
    sid, ids = conversation(store)
    label = store.append_label(sid, ids[1], "x")
    after = store.append_message(sid, user("after"))
    compaction = store.compact(sid, summary="s", first_kept_entry_id=label, tokens_before=10)
    fork = store.fork(sid)
    copied = next(e for e in store.entries(fork) if e["id"] == compaction)
    assert copied["firstKeptEntryId"] == after


def test_a_compaction_keeps_the_prompt_in_force_as_its_system_message(store: SessionStore) -> None:
    sid, ids = conversation(store)
    store.append_message(sid, system_message("Also be brief.", sections={"env": None}))
    store.append_message(sid, assistant("ok"))
    compaction = store.compact(sid, summary="earlier", first_kept_entry_id=ids[3], tokens_before=10)
    entry = store.entry(sid, compaction)
    assert entry["systemMessage"]["content"] == "You are pi.\n\nAlso be brief."
    assert "sections" not in entry["systemMessage"]
    assert entry["systemMessage"]["toolsAdded"][0]["name"] == "ls"
    assert list(entry)[-1] == "systemMessage"
    llm = store.context(sid).llm
    assert llm[0]["role"] == "system" and llm[0]["content"] == "You are pi.\n\nAlso be brief."
    assert [m["role"] for m in llm].count("system") == 1


def test_a_session_raw_sql_marked_deleting_can_be_deleted_and_its_id_imported_again(
    store: SessionStore, tmp_path: Any, db_engine: Engine
) -> None:
    from sqlalchemy import text

    sid, _ids = conversation(store)
    path = tmp_path / "s.jsonl"
    with path.open("wb") as fp:
        store.export_jsonl(sid, fp)
    with db_engine.begin() as conn:
        conn.execute(text("UPDATE sessionstore_sessions SET deleting = TRUE WHERE id = :sid"), {"sid": sid})
    assert [s.id for s in store.list_sessions()] == []
    assert store.import_jsonl(path).session_id == sid
    with db_engine.begin() as conn:
        conn.execute(text("UPDATE sessionstore_sessions SET deleting = TRUE WHERE id = :sid"), {"sid": sid})
    store.delete_session(sid)
    with pytest.raises(SessionNotFoundError):
        store.delete_session(sid)


def test_compact_refuses_a_first_kept_entry_deeper_on_another_branch(store: SessionStore) -> None:
    sid = store.create_session(cwd="/w")
    ids = [store.append_message(sid, {"role": "user", "content": f"m{i}", "timestamp": 1}) for i in range(5)]
    store.branch(sid, ids[0])
    side = store.append_message(sid, {"role": "user", "content": "side", "timestamp": 1})
    assert store.leaf(sid) == side
    with pytest.raises(InvalidCompactionError, match="not on the path"):
        store.compact(sid, summary="S", first_kept_entry_id=ids[3], tokens_before=1)

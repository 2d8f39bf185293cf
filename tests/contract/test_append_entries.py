"""``append_entries`` takes every pi v3 entry object a typed append writes, through the same rules: the
same stored line, the same refusals; given ids, parents and timestamps; retries by id; all or nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from sessionstore.api import SessionStore
from sessionstore.errors import (
    DuplicateIdError,
    EntryNotFoundError,
    InvalidCompactionError,
    InvalidInputError,
    LeafConflictError,
    SessionStoreError,
)
from sessionstore.models.messages import system_message
from tests.builders import assistant, user

USAGE = {"input": 3, "output": 0, "cacheRead": 0, "cacheWrite": 3, "totalTokens": 6,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.01}}


def conversation(store: SessionStore) -> tuple[str, list[str]]:
    sid = store.create_session(cwd="/w")
    ids = [store.append_message(sid, user("first")), store.append_message(sid, assistant("answer")),
           store.append_message(sid, user("second"))]
    return sid, ids


Typed = Callable[[SessionStore, str, list[str]], str]

TYPED: dict[str, Typed] = {
    "message": lambda s, sid, ids: s.append_message(sid, user("hi")),
    "system message": lambda s, sid, ids: s.append_message(sid, system_message("You are pi.")),
    "custom": lambda s, sid, ids: s.append_custom(sid, "ext", {"k": [1, 2]}),
    "custom_message": lambda s, sid, ids: s.append_custom_message(sid, "ext", "shown", display=False,
                                                                   details={"d": 1}),
    "label": lambda s, sid, ids: s.append_label(sid, ids[0], "start"),
    "label clear": lambda s, sid, ids: s.append_label(sid, ids[0]),
    "session_info": lambda s, sid, ids: s.append_session_info(sid, "  two\r\nlines \n"),
    "model_change": lambda s, sid, ids: s.append_model_change(sid, provider="anthropic", model_id="m"),
    "thinking_level_change": lambda s, sid, ids: s.append_thinking_level_change(sid, "high"),
    "usage": lambda s, sid, ids: s.append_usage(sid, kind="cache_warm", provider="p", model="m", usage=USAGE,
                                                note=""),
    "usage with note": lambda s, sid, ids: s.append_usage(sid, kind="k", provider="p", model="m", usage=USAGE,
                                                          note="why"),
    "context_edit": lambda s, sid, ids: s.append_context_edit(sid, ids[1], {"content": "shorter"}),
    "context_edit omit": lambda s, sid, ids: s.append_context_edit(sid, ids[0], None),
    "branch_summary": lambda s, sid, ids: s.branch_with_summary(sid, ids[2], "left", details={"x": 1},
                                                                usage=USAGE),
    "compaction": lambda s, sid, ids: s.compact(sid, summary="sum", first_kept_entry_id=ids[2],
                                                tokens_before=10),
}


@pytest.mark.parametrize("case", TYPED)
def test_each_typed_append_s_entry_is_a_retry_of_the_generic_append(store: SessionStore, case: str) -> None:
    """The generic path stores, for the typed append's own entry object, the very line the typed one stored
    (so giving it back is a retry that writes nothing)."""
    sid, ids = conversation(store)
    entry_id = TYPED[case](store, sid, ids)
    stored = store.entry(sid, entry_id)
    before = store.entries(sid)
    result = store.append_entries_detailed(sid, [stored])
    assert result.written is False and result.ids == [entry_id]
    assert store.entries(sid) == before


@pytest.mark.parametrize("case", TYPED)
def test_each_type_appended_generically_equals_its_typed_append(store: SessionStore, case: str) -> None:
    sid, ids = conversation(store)
    typed_id = TYPED[case](store, sid, ids)
    typed = store.entry(sid, typed_id)
    store.branch(sid, typed["parentId"])
    given = {k: v for k, v in typed.items() if k not in ("id", "parentId")}
    if typed["type"] == "context_edit" and typed["replacement"] is not None:
        given["replacement"] = {"content": "shorter"}  # (as the caller gave it; the rule makes it a block)
    [generic_id] = store.append_entries(sid, [given])
    generic = store.entry(sid, generic_id)
    assert {**generic, "id": typed_id} == typed


# Each typed refusal, and the same entry given to the generic path: (typed call, entry object, error class).
Refusal = tuple[Callable[[SessionStore, str, list[str]], Any], Callable[[list[str]], Any], type[Exception]]
REFUSED: dict[str, Refusal] = {
    "bad message": (lambda s, sid, ids: s.append_message(sid, {"role": "user"}),
                    lambda ids: {"type": "message", "message": {"role": "user"}}, InvalidInputError),
    "message without role": (lambda s, sid, ids: s.append_message(sid, {"content": "x"}),
                             lambda ids: {"type": "message", "message": {"content": "x"}}, InvalidInputError),
    "label of no entry": (lambda s, sid, ids: s.append_label(sid, "nope", "x"),
                          lambda ids: {"type": "label", "targetId": "nope", "label": "x"}, EntryNotFoundError),
    "name not a string": (lambda s, sid, ids: s.append_session_info(sid, 3),  # type: ignore[arg-type]
                          lambda ids: {"type": "session_info", "name": 3}, InvalidInputError),
    "edit of no entry": (lambda s, sid, ids: s.append_context_edit(sid, "nope", None),
                         lambda ids: {"type": "context_edit", "targetId": "nope", "replacement": None},
                         EntryNotFoundError),
    "edit bad replacement": (lambda s, sid, ids: s.append_context_edit(sid, ids[0], {"text": "x"}),
                             lambda ids: {"type": "context_edit", "targetId": ids[0], "replacement": {"text": "x"}},
                             InvalidInputError),
    "edit of a label": (lambda s, sid, ids: s.append_context_edit(sid, ids[-1], None),
                        lambda ids: {"type": "context_edit", "targetId": ids[-1], "replacement": None},
                        InvalidInputError),
    "compaction keeping a result": (
        lambda s, sid, ids: s.compact(sid, summary="s", first_kept_entry_id=ids[3], tokens_before=1),
        lambda ids: {"type": "compaction", "summary": "s", "firstKeptEntryId": ids[3], "tokensBefore": 1},
        InvalidCompactionError),
    "compaction keeping nothing on the path": (
        lambda s, sid, ids: s.compact(sid, summary="s", first_kept_entry_id="nope", tokens_before=1),
        lambda ids: {"type": "compaction", "summary": "s", "firstKeptEntryId": "nope", "tokensBefore": 1},
        InvalidCompactionError),
    "model change without model": (
        lambda s, sid, ids: s.append_model_change(sid, provider="p", model_id=None),  # type: ignore[arg-type]
        lambda ids: {"type": "model_change", "provider": "p"}, InvalidInputError),
    "custom data not JSON": (lambda s, sid, ids: s.append_custom(sid, "ext", {"x": {1, 2}}),
                             lambda ids: {"type": "custom", "customType": "ext", "data": {"x": {1, 2}}},
                             InvalidInputError),
}


def refusing_session(store: SessionStore) -> tuple[str, list[str]]:
    sid, ids = conversation(store)
    ids.append(store.append_tool_result(sid, tool_call_id="c1", tool_name="ls", content="out"))
    ids.append(store.append_label(sid, ids[0], "l"))
    return sid, ids


@pytest.mark.parametrize("case", REFUSED)
def test_what_a_typed_append_refuses_the_generic_path_refuses(store: SessionStore, case: str) -> None:
    typed, entry, error = REFUSED[case]
    sid, ids = refusing_session(store)
    before = store.entries(sid)
    with pytest.raises(error):
        typed(store, sid, ids)
    with pytest.raises(error, match=r"^entries\[1\]"):
        store.append_entries(sid, [{"type": "custom", "customType": "ok"}, entry(ids)])
    assert store.entries(sid) == before


@pytest.mark.parametrize("entry", [None, 3, "x", [], {"type": "session", "version": 3}, {"type": "nope"},
                                   {"custom": 1}, {"type": "custom", "customType": "c", "id": ""},
                                   {"type": "custom", "customType": "c", "id": 5},
                                   {"type": "custom", "customType": "c", "parentId": 5},
                                   {"type": "custom", "customType": "c", "timestamp": 5}])
def test_what_is_no_appendable_entry_object_is_refused_naming_its_place(store: SessionStore, entry: Any) -> None:
    sid, _ = conversation(store)
    with pytest.raises(InvalidInputError, match=r"^entries\[2\]"):
        store.append_entries(sid, [{"type": "custom", "customType": "a"}, {"type": "custom", "customType": "b"},
                                   entry])
    assert len(store.entries(sid)) == 3


def test_ids_parents_and_timestamps_given_are_stored(store: SessionStore) -> None:
    sid, ids = conversation(store)
    batch = [{"type": "custom", "customType": "a", "id": "my/id 1", "parentId": ids[-1],
              "timestamp": "2026-01-02T03:04:05.000Z"},
             {"type": "custom", "customType": "b", "id": "my-id-2", "parentId": "my/id 1"},
             {"type": "custom", "customType": "c"}]
    result = store.append_entries_detailed(sid, batch)
    assert result.written is True
    assert result.entries[:2] == [("my/id 1", ids[-1]), ("my-id-2", "my/id 1")]
    assert result.entries[2][1] == "my-id-2" and result.leaf_id == result.entries[2][0] == store.leaf(sid)
    assert store.entry(sid, "my/id 1")["timestamp"] == "2026-01-02T03:04:05.000Z"


@pytest.mark.parametrize("position", [0, 1])
def test_a_parent_that_is_not_the_leaf_is_a_leaf_conflict(store: SessionStore, position: int) -> None:
    sid, ids = conversation(store)
    batch: list[dict[str, Any]] = [{"type": "custom", "customType": "a", "id": "a1"},
                                   {"type": "custom", "customType": "b", "id": "b1"}]
    batch[position]["parentId"] = ids[0]
    with pytest.raises(LeafConflictError) as raised:
        store.append_entries(sid, batch)
    assert raised.value.actual == ids[-1] and len(store.entries(sid)) == 3


def test_a_retry_with_the_same_ids_writes_nothing(store: SessionStore) -> None:
    sid, ids = conversation(store)
    batch = [{"type": "message", "id": "r1", "parentId": ids[-1], "timestamp": "2026-01-02T03:04:05.000Z",
              "message": {"role": "user", "content": "again", "timestamp": 1}},
             {"type": "session_info", "id": "r2", "name": "x\ny"}]
    first = store.append_entries_detailed(sid, batch, expected_leaf=ids[-1])
    entries = store.entries(sid)
    again = store.append_entries_detailed(sid, batch, expected_leaf=ids[-1])  # the first call's If-Match
    assert again.written is False and again.entries == first.entries and again.leaf_id == "r2"
    assert store.entries(sid) == entries


def test_the_same_id_with_other_content_is_a_duplicate_id(store: SessionStore) -> None:
    sid, ids = conversation(store)
    store.append_entries(sid, [{"type": "custom", "customType": "a", "id": "d1", "timestamp": "2026-01-02T00:00:00Z"}])
    for other in ({"type": "custom", "customType": "b", "id": "d1"},
                  {"type": "custom", "customType": "a", "id": "d1", "timestamp": "2026-01-03T00:00:00Z"},
                  {"type": "custom", "customType": "a", "id": ids[0]}):
        with pytest.raises(DuplicateIdError) as raised:
            store.append_entries(sid, [other])
        assert raised.value.code == "DUPLICATE_ID"
    assert len(store.entries(sid)) == 4


def test_a_batch_of_held_and_new_ids_is_no_retry(store: SessionStore) -> None:
    sid, _ = conversation(store)
    held = {"type": "custom", "customType": "a", "id": "h1"}
    store.append_entries(sid, [held])
    for batch in ([held, {"type": "custom", "customType": "b", "id": "h2"}],
                  [held, {"type": "custom", "customType": "b"}]):
        with pytest.raises(DuplicateIdError):
            store.append_entries(sid, batch)
    assert len(store.entries(sid)) == 4


def test_an_invalid_fifth_entry_leaves_nothing(store: SessionStore) -> None:
    sid, ids = conversation(store)
    batch: list[Any] = [{"type": "custom", "customType": str(n)} for n in range(4)]
    batch.append({"type": "label", "targetId": "missing", "label": "x"})  # refused inside the transaction
    with pytest.raises(EntryNotFoundError, match=r"^entries\[4\]"):
        store.append_entries(sid, batch)
    assert len(store.entries(sid)) == 3 and store.leaf(sid) == ids[-1]


def test_a_label_may_name_an_earlier_entry_of_its_batch(store: SessionStore) -> None:
    sid, _ = conversation(store)
    store.append_entries(sid, [{"type": "message", "id": "m1", "message": {"role": "user", "content": "x",
                                                                           "timestamp": 1}},
                               {"type": "label", "targetId": "m1", "label": "here"},
                               {"type": "context_edit", "targetId": "m1", "replacement": None}])
    assert store.labels(sid) == {"m1": "here"}


def test_concurrent_retries_store_each_entry_once(store: SessionStore, db_url: str) -> None:
    sid, _ = conversation(store)
    batch = [{"type": "custom", "customType": "c", "id": f"c{n}", "timestamp": "2026-01-02T00:00:00Z"}
             for n in range(3)]
    errors: list[BaseException] = []

    def append() -> None:
        with SessionStore(db_url) as mine:
            try:
                for _ in range(5):
                    mine.append_entries(sid, batch)
            except SessionStoreError as exc:  # a retry after the first write is never an error
                errors.append(exc)

    threads = [threading.Thread(target=append) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [e["id"] for e in store.entries(sid)][3:] == ["c0", "c1", "c2"]

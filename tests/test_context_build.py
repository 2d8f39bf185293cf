"""Context building (SPEC 5) on small hand-made trees, as pi's buildSessionContext does it."""

from __future__ import annotations

from sessionstore.context import build_session_context
from sessionstore.context.build import SessionContext
from tests.builders import TS_MS, assistant, entry, msg, result, user


def roles(context: SessionContext) -> list[str]:
    return [m["role"] for m in context.messages]


def test_empty_path_is_the_none_leaf() -> None:
    context = build_session_context([])
    assert (context.messages, context.thinking_level, context.model) == ([], "off", None)


def test_messages_of_the_path_in_order_with_their_entry_ids() -> None:
    path = [msg("a", None, user("hi")), msg("b", "a", assistant("hello")), msg("c", "b", user("bye"))]
    context = build_session_context(path)
    assert roles(context) == ["user", "assistant", "user"]
    assert context.entry_ids == ["a", "b", "c"]
    assert context.messages[0] is path[0]["message"]


def test_thinking_level_and_model_follow_the_last_setting_on_the_path() -> None:
    path = [
        entry("a", None, "thinking_level_change", thinkingLevel="high"),
        entry("b", "a", "model_change", provider="anthropic", modelId="opus"),
        msg("c", "b", user("hi")),
        msg("d", "c", assistant("x", provider="openai", model="gpt")),
        entry("e", "d", "thinking_level_change", thinkingLevel="low"),
    ]
    context = build_session_context(path)
    assert context.thinking_level == "low"
    assert context.model == {"provider": "openai", "modelId": "gpt"}


def test_settings_before_a_path_tail_are_taken_from_the_given_entries() -> None:
    tail = [msg("c", "b", user("hi"))]
    context = build_session_context(
        tail,
        thinking_entry=entry("a", None, "thinking_level_change", thinkingLevel="medium"),
        model_entry=entry("b", "a", "model_change", provider="x", modelId="y"),
    )
    assert context.thinking_level == "medium"
    assert context.model == {"provider": "x", "modelId": "y"}


def test_custom_message_entry_becomes_a_custom_message_with_entry_time() -> None:
    path = [entry("a", None, "custom_message", customType="note", content="remember", display=False,
                  details={"k": 1})]
    (message,) = build_session_context(path).messages
    assert message == {"role": "custom", "customType": "note", "content": "remember", "display": False,
                       "details": {"k": 1}, "timestamp": TS_MS}
    assert list(message) == ["role", "customType", "content", "display", "details", "timestamp"]


def test_custom_message_without_details_has_no_details_key() -> None:
    path = [entry("a", None, "custom_message", customType="note", content="x", display=True)]
    assert "details" not in build_session_context(path).messages[0]


def test_branch_summary_with_text_becomes_a_message_and_empty_one_does_not() -> None:
    path = [
        msg("a", None, user("hi")),
        entry("b", "a", "branch_summary", fromId="z", summary="tried X"),
        entry("c", "b", "branch_summary", fromId="y", summary=""),
    ]
    context = build_session_context(path)
    assert context.messages[1] == {"role": "branchSummary", "summary": "tried X", "fromId": "z",
                                   "timestamp": TS_MS}
    assert len(context.messages) == 2


def test_custom_label_session_info_and_unknown_entries_contribute_nothing() -> None:
    path = [
        msg("a", None, user("hi")),
        entry("b", "a", "custom", customType="state", data={"x": 1}),
        entry("c", "b", "label", targetId="a", label="start"),
        entry("d", "c", "session_info", name="n"),
        entry("e", "d", "future_type", anything=[1, 2]),
    ]
    assert roles(build_session_context(path)) == ["user"]


def compacted_path(first_kept: str) -> list[dict]:
    return [
        msg("a", None, user("one")),
        msg("b", "a", assistant("two")),
        msg("c", "b", user("three")),
        msg("d", "c", assistant("four")),
        entry("k", "d", "compaction", summary="S", firstKeptEntryId=first_kept, tokensBefore=99),
        msg("e", "k", user("five")),
    ]


def test_compaction_keeps_entries_from_first_kept_id() -> None:
    context = build_session_context(compacted_path("c"))
    assert roles(context) == ["compactionSummary", "user", "assistant", "user"]
    assert context.messages[0] == {"role": "compactionSummary", "summary": "S", "tokensBefore": 99,
                                   "timestamp": TS_MS}
    assert context.entry_ids == ["k", "c", "d", "e"]
    assert context.diagnostics == []


def test_compaction_with_first_kept_off_the_path_keeps_nothing_before_it_and_says_so() -> None:
    context = build_session_context(compacted_path("elsewhere"))
    assert roles(context) == ["compactionSummary", "user"]
    assert [d.code for d in context.diagnostics] == ["COMPACTION_FIRST_KEPT_NOT_ON_PATH"]
    assert context.diagnostics[0].entry_id == "k"


def test_compaction_with_first_kept_after_it_is_not_on_the_path_before_it() -> None:
    context = build_session_context(compacted_path("e"))
    assert roles(context) == ["compactionSummary", "user"]
    assert [d.code for d in context.diagnostics] == ["COMPACTION_FIRST_KEPT_NOT_ON_PATH"]


def test_compaction_first_kept_at_a_tool_result_is_reported() -> None:
    path = [
        msg("a", None, user("go")),
        msg("b", "a", assistant("", ("c1", "ls", {}))),
        msg("c", "b", result("c1", "ls")),
        entry("k", "c", "compaction", summary="S", firstKeptEntryId="c", tokensBefore=1),
    ]
    context = build_session_context(path)
    assert roles(context) == ["compactionSummary", "toolResult"]
    assert [d.code for d in context.diagnostics] == ["COMPACTION_FIRST_KEPT_IS_TOOL_RESULT"]


def test_the_last_compaction_on_the_path_wins() -> None:
    path = [
        *compacted_path("c"),
        msg("f", "e", assistant("six")),
        entry("k2", "f", "compaction", summary="S2", firstKeptEntryId="e", tokensBefore=5),
        msg("g", "k2", user("seven")),
    ]
    context = build_session_context(path)
    assert context.messages[0]["summary"] == "S2"
    assert context.entry_ids == ["k2", "e", "f", "g"]


def test_unparseable_entry_timestamp_becomes_null_like_javascript_nan() -> None:
    path = [{"type": "branch_summary", "id": "a", "parentId": None, "timestamp": "yesterday",
             "fromId": "x", "summary": "s"}]
    assert build_session_context(path).messages[0]["timestamp"] is None

"""Projection to provider messages (SPEC 6): pi's convertToLlm byte for byte, the hook, provider-safe."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from sessionstore.context import bash_execution_to_text, convert_to_llm, project
from tests.builders import assistant, result, user


def bash(**fields: Any) -> dict[str, Any]:
    base = {"role": "bashExecution", "command": "ls", "output": "a\nb", "exitCode": 0, "cancelled": False,
            "truncated": False, "timestamp": 5}
    return {**base, **fields}


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({}, "Ran `ls`\n```\na\nb\n```"),
        ({"output": ""}, "Ran `ls`\n(no output)"),
        ({"exitCode": 2}, "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 2"),
        ({"exitCode": None}, "Ran `ls`\n```\na\nb\n```"),
        ({"cancelled": True, "exitCode": 1}, "Ran `ls`\n```\na\nb\n```\n\n(command cancelled)"),
        ({"truncated": True, "fullOutputPath": "/tmp/o"},
         "Ran `ls`\n```\na\nb\n```\n\n[Output truncated. Full output: /tmp/o]"),
        ({"truncated": True}, "Ran `ls`\n```\na\nb\n```"),
        ({"output": "", "exitCode": 127, "truncated": True, "fullOutputPath": "/f"},
         "Ran `ls`\n(no output)\n\nCommand exited with code 127\n\n[Output truncated. Full output: /f]"),
    ],
)
def test_bash_execution_text_matches_pi(fields: dict[str, Any], text: str) -> None:
    assert bash_execution_to_text(bash(**fields)) == text
    assert convert_to_llm([bash(**fields)]) == [
        {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 5}
    ]


def test_bash_execution_without_exit_code_field_prints_no_exit_line() -> None:
    message = bash()
    del message["exitCode"]
    assert bash_execution_to_text(message) == "Ran `ls`\n```\na\nb\n```"


def test_bash_execution_excluded_from_context_is_dropped() -> None:
    assert convert_to_llm([bash(excludeFromContext=True)]) == []


def test_provider_roles_pass_through_as_the_same_objects() -> None:
    messages = [user("a"), assistant("b"), result("c", "t")]
    projected = convert_to_llm(messages)
    assert all(p is m for p, m in zip(projected, messages, strict=True))


def test_custom_string_content_becomes_one_text_block_and_list_is_kept() -> None:
    blocks = [{"type": "text", "text": "x"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}]
    projected = convert_to_llm([
        {"role": "custom", "customType": "n", "content": "hello", "display": True, "timestamp": 1},
        {"role": "custom", "customType": "n", "content": blocks, "display": False, "timestamp": 2},
    ])
    assert projected == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": 1},
        {"role": "user", "content": blocks, "timestamp": 2},
    ]


def test_summaries_are_wrapped_exactly_as_pi_wraps_them() -> None:
    projected = convert_to_llm([
        {"role": "branchSummary", "summary": "B", "fromId": "x", "timestamp": 1},
        {"role": "compactionSummary", "summary": "C", "tokensBefore": 3, "timestamp": 2},
    ])
    assert projected[0]["content"][0]["text"] == (
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nB</summary>"
    )
    assert projected[1]["content"][0]["text"] == (
        "The conversation history before this point was compacted into the following summary:\n\n"
        "<summary>\nC\n</summary>"
    )
    assert [p["timestamp"] for p in projected] == [1, 2]


def test_unknown_roles_are_not_sent() -> None:
    assert convert_to_llm([{"role": "telemetry", "x": 1}, user("a")]) == [user("a")]


def test_projection_never_modifies_the_source_messages() -> None:
    messages = [bash(), {"role": "custom", "customType": "n", "content": "s", "display": True, "timestamp": 1},
                user("u"), assistant("", ("c1", "t", {"a": [1]}))]
    before = copy.deepcopy(messages)
    project(messages, [None] * 4, provider_safe_repairs=True)
    assert messages == before


def test_transform_context_hook_can_trim() -> None:
    projection = project([user("a"), user("b")], ["1", "2"], transform_context=lambda ms: ms[1:])
    assert projection.llm == [user("b")]
    assert projection.diagnostics == []


def test_async_transform_context_hook_is_awaited() -> None:
    async def hook(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [*messages, user("injected")]

    assert project([user("a")], ["1"], transform_context=hook).llm == [user("a"), user("injected")]


def test_a_raising_transform_context_hook_keeps_the_original_list_and_says_so() -> None:
    def hook(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        raise RuntimeError("boom")

    projection = project([user("a")], ["1"], transform_context=hook)
    assert projection.llm == [user("a")]
    assert [d.code for d in projection.diagnostics] == ["TRANSFORM_CONTEXT_FAILED"]
    assert "boom" in projection.diagnostics[0].message


def test_provider_safe_drops_error_and_aborted_assistant_messages() -> None:
    messages = [user("a"), assistant("x", stop="error"), assistant("y", stop="aborted"), assistant("z")]
    projection = project(messages, ["1", "2", "3", "4"], provider_safe_repairs=True)
    assert [m.get("stopReason") for m in projection.llm] == [None, "stop"]
    assert [(d.code, d.message_index, d.entry_id) for d in projection.diagnostics] == [
        ("PROVIDER_SAFE_DROPPED_ASSISTANT", 1, "2"),
        ("PROVIDER_SAFE_DROPPED_ASSISTANT", 2, "3"),
    ]


def test_provider_safe_answers_unanswered_calls_before_the_next_user_message() -> None:
    messages = [user("a"), assistant("", ("c1", "ls", {}), ("c2", "cat", {})), result("c1", "ls"), user("next")]
    projection = project(messages, ["u", "a", "r", "n"], provider_safe_repairs=True)
    assert [m["role"] for m in projection.llm] == ["user", "assistant", "toolResult", "toolResult", "user"]
    synthetic = projection.llm[3]
    assert synthetic == {"role": "toolResult", "toolCallId": "c2", "toolName": "cat",
                         "content": [{"type": "text", "text": "No result provided"}], "isError": True,
                         "timestamp": messages[1]["timestamp"]}
    assert [(d.code, d.message_index, d.entry_id) for d in projection.diagnostics] == [
        ("PROVIDER_SAFE_SYNTHETIC_RESULT", 1, "a")
    ]


def test_provider_safe_closes_trailing_calls_as_pi_1_6_does() -> None:
    messages = [user("a"), assistant("", ("c1", "ls", {}))]
    projection = project(messages, ["u", "a"], provider_safe_repairs=True)
    assert [m["role"] for m in projection.llm] == ["user", "assistant", "toolResult"]
    assert projection.llm[2]["toolCallId"] == "c1" and projection.llm[2]["isError"] is True
    assert [d.code for d in projection.diagnostics] == ["PROVIDER_SAFE_SYNTHETIC_RESULT"]


def test_provider_safe_holds_a_system_message_until_the_pending_results_and_fills_null_content() -> None:
    system = {"role": "system", "content": "be brief", "timestamp": 5}
    empty_user = {"role": "user", "content": None, "timestamp": 6}
    messages = [user("a"), assistant("", ("c1", "ls", {})), system, empty_user]
    projection = project(messages, ["u", "a", "s", "e"], provider_safe_repairs=True)
    assert [m["role"] for m in projection.llm] == ["user", "assistant", "toolResult", "system", "user"]
    assert projection.llm[2]["content"] == [{"type": "text", "text": "No result provided"}]
    assert projection.llm[4] == {"role": "user", "content": [], "timestamp": 6}
    assert empty_user["content"] is None


def test_a_registered_role_is_projected_by_its_own_function_and_not_reported(store: Any) -> None:
    from sessionstore.models.content import WireModel
    from sessionstore.models.messages import register_role, unregister_role

    class Reminder(WireModel):
        role: str = "reminder"
        text: str
        timestamp: int

    register_role("reminder", Reminder, project=lambda m: [user(f"Reminder: {m['text']}", ts=m["timestamp"])])
    try:
        sid = store.create_session(cwd="/w")
        store.append_message(sid, {"role": "reminder", "text": "run the tests", "timestamp": 7})
        with pytest.raises(Exception, match="text"):
            store.append_message(sid, {"role": "reminder", "timestamp": 7})
        context = store.context(sid)
        assert context.llm == [user("Reminder: run the tests", ts=7)]
        assert context.diagnostics == []
    finally:
        unregister_role("reminder")
    assert [d.code for d in store.context(sid).diagnostics] == ["UNKNOWN_ROLE"]
    assert store.context(sid).llm == []

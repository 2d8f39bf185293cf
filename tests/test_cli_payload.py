"""``sessionstore payload``: the request body of sessionstore.payloads for a context file, checked
before it is built (issue 15 item 1's command line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.errors import InvalidInputError
from sessionstore.payloads import build_payload
from tests.paths import PI_FILES

TARGETS = [("anthropic", "claude-opus-4-5"), ("openai", "gpt-5.2"), ("openrouter", "openai/gpt-4.1")]


def a_context(tmp_path: Path) -> dict[str, object]:
    with SessionStore(f"sqlite:///{tmp_path / 'sessions.db'}") as store:
        session_id = store.import_jsonl(PI_FILES["before-compaction"]).session_id
        return {"systemPrompt": "You are pi.", "messages": store.context(session_id).llm}


def test_the_payload_printed_is_the_one_the_library_builds(tmp_path: Path) -> None:
    context = a_context(tmp_path)
    path = tmp_path / "context.json"
    path.write_text(json.dumps(context))
    for provider, model in TARGETS:
        result = CliRunner().invoke(cli, ["payload", str(path), "--provider", provider, "--model", model])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout) == build_payload(context, provider=provider, model=model)


def test_the_context_is_read_from_stdin_by_default() -> None:
    given = json.dumps({"messages": [{"role": "user", "content": "hi", "timestamp": 1}]})
    result = CliRunner().invoke(cli, ["payload", "--provider", "anthropic", "--model", "claude-opus-4-5"], input=given)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["messages"][0]["role"] == "user"


def test_a_message_of_a_bad_shape_is_refused_in_one_line_naming_it() -> None:
    given = json.dumps({"messages": [{"role": "user", "content": "hi", "timestamp": 1}, {"role": "assistant"}]})
    result = CliRunner().invoke(cli, ["payload", "--provider", "openai", "--model", "gpt-5.2"], input=given)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: messages[1]: INVALID_MESSAGE") and result.stderr.count("\n") == 1


def test_an_unanswered_tool_call_is_not_refused_pi_ai_answers_it() -> None:
    call = {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls"}}
    given = json.dumps({"messages": [
        {"role": "user", "content": "list", "timestamp": 1},
        {"role": "assistant", "content": [call], "api": "openai-responses", "provider": "openai", "model": "gpt-5.2",
         "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                   "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
         "stopReason": "toolUse", "timestamp": 2},
    ]})
    result = CliRunner().invoke(cli, ["payload", "--provider", "anthropic", "--model", "claude-opus-4-5"], input=given)
    assert result.exit_code == 0, result.output
    assert "No result provided" in result.stdout


def test_bad_input_and_unknown_models_are_one_line_errors() -> None:
    cases = [
        ("[1]", "anthropic", "claude-opus-4-5", "the JSON must be an object"),
        ("{}", "anthropic", "claude-opus-4-5", "needs a 'messages' list"),
        ('{"messages": [], "tools": "x"}', "anthropic", "claude-opus-4-5", "tools must be a list, got str"),
        ('{"messages": [], "systemPrompt": 1}', "anthropic", "claude-opus-4-5", "the system prompt must be a string"),
        ('{"messages": []}', "nope", "x", "no provider 'nope'"),
        ("not json", "anthropic", "claude-opus-4-5", "invalid JSON input"),
    ]
    for given, provider, model, expected in cases:
        result = CliRunner().invoke(cli, ["payload", "--provider", provider, "--model", model], input=given)
        assert result.exit_code == 2 and expected in result.stderr and "Traceback" not in result.output, given


def test_context_payload_is_the_payload_of_the_sessions_context(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    with SessionStore(url) as store:
        session_id = store.import_jsonl(PI_FILES["before-compaction"]).session_id
        llm = store.context(session_id).llm
    for provider, model in TARGETS:
        result = CliRunner().invoke(cli, ["--db", url, "context", session_id, "--payload", "--provider", provider,
                                          "--model", model, "--system-prompt", "You are pi."])
        assert result.exit_code == 0, result.output
        expected = build_payload({"messages": llm, "systemPrompt": "You are pi."}, provider=provider, model=model)
        assert json.loads(result.stdout) == expected
    for args in (["--payload"], ["--payload", "--provider", "openai"], ["--model", "gpt-5.2"]):
        refused = CliRunner().invoke(cli, ["--db", url, "context", session_id, *args])
        assert refused.exit_code == 2 and "--payload" in refused.output


def test_context_json_piped_to_payload_gives_context_payloads_payload(tmp_path: Path) -> None:
    """``context --json | payload`` read the AgentMessages and dropped the compaction summary and the
    bash runs (436 messages against 440): context --json's output is read as it is, its 'llm' sent."""
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    with SessionStore(url) as store:
        session_id = store.import_jsonl(PI_FILES["before-compaction"]).session_id
    runner = CliRunner()
    for extra in ([], ["--provider-safe"]):
        context_json = runner.invoke(cli, ["--db", url, "context", session_id, "--json", *extra]).stdout
        for provider, model in TARGETS:
            piped = runner.invoke(cli, ["payload", "--provider", provider, "--model", model], input=context_json)
            assert piped.exit_code == 0, piped.stderr
            direct = runner.invoke(cli, ["--db", url, "context", session_id, *extra, "--payload",
                                         "--provider", provider, "--model", model])
            assert piped.stdout == direct.stdout, (provider, extra)
    anthropic = json.loads(runner.invoke(cli, ["payload", "--provider", "anthropic", "--model", "claude-opus-4-5"],
                                         input=context_json).stdout)
    assert len(anthropic["messages"]) == 440


def test_agent_messages_are_refused_naming_them_not_dropped(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    with SessionStore(url) as store:
        session_id = store.import_jsonl(PI_FILES["before-compaction"]).session_id
        agent_messages = store.context(session_id).messages
    given = json.dumps({"messages": agent_messages})
    done = CliRunner().invoke(cli, ["payload", "--provider", "anthropic", "--model", "claude-opus-4-5"], input=given)
    assert done.exit_code == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert done.stderr.startswith("error: messages[0]: role 'compactionSummary' is an AgentMessage role, not a"
                                  " provider message (system, user, assistant, toolResult)")
    assert "context --json's output as it is" in done.stderr
    bash = [{"role": "user", "content": "hi", "timestamp": 1},
            {"role": "bashExecution", "command": "ls", "output": "", "exitCode": 0, "cancelled": False,
             "truncated": False, "timestamp": 2}]
    done = CliRunner().invoke(cli, ["payload", "--provider", "openai", "--model", "gpt-5.2"],
                              input=json.dumps({"messages": bash}))
    assert done.exit_code == 2 and "messages[1]: role 'bashExecution'" in done.stderr


def test_the_library_reads_a_context_json_as_its_llm(tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'sessions.db'}") as store:
        result = store.context(store.import_jsonl(PI_FILES["before-compaction"]).session_id)
    for provider, model in TARGETS:
        assert build_payload(result.to_json(), provider=provider, model=model) == \
            build_payload({"messages": result.llm}, provider=provider, model=model)


def test_a_role_that_is_not_a_string_is_refused_naming_the_message_not_a_crash() -> None:
    for role in ({"a": 1}, ["user"], None):
        given = json.dumps({"messages": [{"role": role, "content": "x", "timestamp": 1}]})
        result = CliRunner().invoke(cli, ["payload", "--provider", "anthropic", "--model", "claude-opus-4-5"],
                                    input=given)
        assert result.exit_code != 0 and len(result.stderr.splitlines()) == 1, result.output
        assert result.stderr.startswith("error: messages[0]: role of type ") and "internal" not in result.stderr
    with pytest.raises(InvalidInputError, match=r"messages\[0\]: role of type object"):
        build_payload([{"role": {"a": 1}, "content": "x"}], provider="anthropic", model="claude-opus-4-5")


def test_a_context_with_both_llm_and_messages_that_is_not_context_json_is_refused_as_ambiguous() -> None:
    given = json.dumps({"llm": [], "messages": [{"role": "user", "content": "x", "timestamp": 1}]})
    result = CliRunner().invoke(cli, ["payload", "--provider", "anthropic", "--model", "claude-opus-4-5"], input=given)
    assert result.exit_code != 0 and result.stdout == "", result.output
    assert "'llm'" in result.stderr and "'messages'" in result.stderr and len(result.stderr.splitlines()) == 1
    odd = CliRunner().invoke(cli, ["payload", "--provider", "anthropic", "--model", "claude-opus-4-5"],
                             input=json.dumps({"llm": 5, "messages": []}))
    assert odd.exit_code != 0 and "'llm'" in odd.stderr

"""``sessionstore payload``: the request body of sessionstore.payloads for a context file, checked
before it is built (issue 15 item 1's command line)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sessionstore.api import SessionStore
from sessionstore.cli.main import cli
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
        ('{"messages": [], "tools": "x"}', "anthropic", "claude-opus-4-5", "'tools' must be a list"),
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

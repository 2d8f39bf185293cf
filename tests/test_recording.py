"""Recording provider responses into sessions, and the demo that strings every operation together."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.demo import bundled_fixture, run_demo
from sessionstore.models.messages import user_message
from sessionstore.provider import FixtureProviderAdapter, load_fixture
from sessionstore.recording import ModelInfo, append_tool_result, record_response
from sessionstore.store.entry_store import EntryStore
from sessionstore.validate import ERROR_CODES


def course() -> dict[str, Any]:
    return copy.deepcopy(load_fixture(bundled_fixture()))


def test_a_completed_tool_call_response_is_stored_as_pi_assistant_message(store: SessionStore) -> None:
    sid = store.create_session(cwd="/w")
    store.append_message(sid, user_message("add"))
    adapter = FixtureProviderAdapter(course())
    turn = asyncio.run(record_response(store, sid, adapter.stream("r1"), model=ModelInfo("api", "prov", "mod")))
    assert turn.completed and turn.entry_id == store.leaf(sid)
    stored = store.entry(sid, turn.entry_id)["message"]
    assert stored["stopReason"] == "toolUse"
    assert stored["content"] == [{"type": "toolCall", "id": "call-add-001", "name": "add",
                                  "arguments": {"left": 20, "right": 22}}]
    assert stored["usage"]["input"] == 12 and stored["usage"]["output"] == 8
    assert (stored["api"], stored["provider"], stored["model"]) == ("api", "prov", "mod")
    assert stored["responseId"] == "response-tool-001"


def test_a_full_tool_round_resumes_as_a_valid_transcript(store: SessionStore) -> None:
    sid = store.create_session(cwd="/w")
    store.append_message(sid, user_message("add"))
    adapter = FixtureProviderAdapter(course())

    async def converse() -> None:
        first = await record_response(store, sid, adapter.stream("r1"))
        assert first.response is not None
        (call,) = first.response.tool_calls
        append_tool_result(store, sid, tool_call_id=call.id, tool_name=call.name, content="42")
        second = await record_response(store, sid, adapter.stream("r2"))
        assert second.response is not None and second.response.text == "The sum is 42."

    asyncio.run(converse())
    with SessionStore(store.url) as resumed:
        context = resumed.context(sid)
    assert [m["role"] for m in context.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert context.messages[2]["toolCallId"] == "call-add-001"
    assert not [d for d in context.diagnostics if d.code in ERROR_CODES]
    assert adapter.request_ids == ["r1", "r2"]


def test_a_failed_response_appends_nothing(store: SessionStore, entry_store: EntryStore) -> None:
    fixture = course()
    del fixture["responses"][0]["records"][-1]  # no response_end
    sid = store.create_session(cwd="/w")
    leaf = store.append_message(sid, user_message("add"))
    seen: list[Any] = []
    turn = asyncio.run(record_response(store, sid, FixtureProviderAdapter(fixture).stream("r1"), on_chunk=seen.append))
    assert turn.error is not None and turn.error.code == "PROVIDER_MISSING_TERMINAL"
    assert len(seen) == 1  # the tool-call chunk was observed before the failure
    assert turn.entry_id is None and store.leaf(sid) == leaf and entry_store.count_entries(sid) == 1


def test_a_failed_response_can_be_recorded_as_an_error_message(store: SessionStore) -> None:
    fixture = course()
    fixture["responses"][0]["records"][-1]["responseId"] = "other"
    sid = store.create_session(cwd="/w")
    stream = FixtureProviderAdapter(fixture).stream("r1")
    turn = asyncio.run(record_response(store, sid, stream, record_failures=True))
    assert turn.entry_id is not None
    stored = store.entry(sid, turn.entry_id)["message"]
    assert stored["stopReason"] == "error" and stored["errorMessage"].startswith("PROVIDER_RESPONSE_ID_MISMATCH")


def test_an_aborted_response_can_be_recorded_as_aborted(store: SessionStore) -> None:
    sid = store.create_session(cwd="/w")
    abort = asyncio.Event()
    abort.set()

    async def run() -> Any:
        return await record_response(store, sid, FixtureProviderAdapter(course()).stream("r1", abort=abort),
                                     record_failures=True)

    turn = asyncio.run(run())
    assert turn.error is not None and turn.error.code == "PROVIDER_ABORTED"
    assert store.entry(sid, turn.entry_id)["message"]["stopReason"] == "aborted"


def test_the_demo_records_branches_forks_compacts_exports_and_resumes(db_url: str, tmp_path: Path) -> None:
    lines: list[str] = []
    result = run_demo(db_url, export_dir=tmp_path, say=lines.append)
    context = result.context
    assert [m["role"] for m in context.messages] == ["compactionSummary", "user", "assistant", "toolResult",
                                                     "assistant"]
    assert context.messages[-1]["content"][0]["text"] == "The sum is 42."
    assert context.diagnostics == []
    with SessionStore(db_url) as store:
        assert store.header(result.fork_id)["parentSession"] == result.session_id
        summary = store.entry(result.session_id, result.summary_entry)
        assert summary["parentId"] == result.user_entry and summary["type"] == "branch_summary"
        assert store.leaf(result.session_id) == result.summary_entry
        assert store.labels(result.fork_id) == {result.answer_entry: "answer"}
    exported = [json.loads(line) for line in result.export_path.read_text().splitlines()]
    assert exported[0]["id"] == result.fork_id and len(exported) == result.exported_entries + 1


def test_the_demo_command_prints_context_tree_and_validation(db_url: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", db_url, "demo", "--export-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "== tree of session" in out and "[answer]" in out
    assert "The sum is 42." in out and "→ add(" in out
    assert out.count(": valid;") == 2


def test_the_demo_can_run_again_in_the_same_database(db_url: str, tmp_path: Path) -> None:
    first = run_demo(db_url, export_dir=tmp_path, say=lambda _line: None)
    second = run_demo(db_url, export_dir=tmp_path, say=lambda _line: None)
    assert first.session_id != second.session_id

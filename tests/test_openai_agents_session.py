"""SessionStoreSession (sessionstore/openai_agents.py) against the OpenAI Agents SDK's own behaviour:
the same operations on an ``agents.SQLiteSession`` give the same items; ``pop_item`` is a branch; and
``Runner.run`` and ``Runner.run_streamed`` with a canned model (no network) persist two turns that export
as a valid pi file."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sessionstore import AsyncSessionStore, SessionStore
from sessionstore.openai_agents import CUSTOM_TYPE, ITEM_FIELD, SessionStoreSession
from tests.requirements import INSTALL_AGENTS, missing

try:
    import agents
except ImportError:  # pragma: no cover - .ci/run installs the agents extra
    missing("openai-agents is not installed", INSTALL_AGENTS)

from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

NO_TRACING = agents.RunConfig(tracing_disabled=True)
MIXED: list[Any] = [
    {"role": "user", "content": "What is 2+2?"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "add them"}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "add", "arguments": '{"a": 2, "b": 2}'},
    {"type": "function_call_output", "call_id": "call_1", "output": "4"},
    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "It is 4.", "annotations": []}]},
    {"role": "system", "content": "Be brief."},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "x"}},
    {"role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
    {"role": "assistant", "content": "You're welcome."},
]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def both(store: SessionStore, tmp_path: Path, session_id: str = "s1") -> tuple[Any, SessionStoreSession]:
    return agents.SQLiteSession(session_id, str(tmp_path / "sdk.db")), SessionStoreSession(session_id, store, cwd="/w")


def test_it_is_the_sdk_session_protocol(store: SessionStore) -> None:
    from agents.memory.session import Session

    assert isinstance(SessionStoreSession("s", store), Session)


def test_the_same_operations_give_what_sqlite_session_gives(store: SessionStore, tmp_path: Path) -> None:
    sdk, ours = both(store, tmp_path)

    async def script(session: Any) -> list[Any]:
        seen: list[Any] = [await session.get_items(), await session.pop_item()]
        await session.add_items(MIXED[:4])
        await session.add_items([])
        await session.add_items(MIXED[4:])
        seen += [await session.get_items()]
        seen += [await session.get_items(limit=n) for n in (1, 3, len(MIXED), len(MIXED) + 5, 0, -1)]
        seen += [await session.pop_item(), await session.pop_item(), await session.get_items()]
        await session.add_items([{"role": "user", "content": "again"}])
        seen += [await session.get_items(limit=2)]
        await session.clear_session()
        seen += [await session.get_items(), await session.pop_item()]
        await session.add_items([{"role": "user", "content": "fresh"}])
        seen += [await session.get_items()]
        return seen

    expected, got = run(script(sdk)), run(script(ours))
    sdk.close()
    assert got == expected
    assert got[2] == MIXED


def test_session_settings_limit_is_the_default(store: SessionStore) -> None:
    from agents.memory import SessionSettings

    session = SessionStoreSession("s", store, session_settings=SessionSettings(limit=2))
    run(session.add_items(MIXED))
    assert run(session.get_items()) == MIXED[-2:]
    assert run(session.get_items(limit=3)) == MIXED[-3:]


def test_items_map_to_pi_entries(store: SessionStore) -> None:
    session = SessionStoreSession("s", store, cwd="/w", model="gpt-4.1")
    run(session.add_items(MIXED))
    entries = store.entries("s")
    assert [e["type"] for e in entries] == ["message"] * 5 + ["custom"] * 2 + ["message"] * 2
    messages = [e["message"] for e in entries if e["type"] == "message"]
    assert [m["role"] for m in messages] == ["user", "assistant", "assistant", "toolResult", "assistant", "user",
                                             "assistant"]
    assert [m[ITEM_FIELD] for m in messages] == [MIXED[i] for i in (0, 1, 2, 3, 4, 7, 8)]
    thinking, call, result, text = messages[1], messages[2], messages[3], messages[4]
    assert thinking["content"][0]["type"] == "thinking" and thinking["content"][0]["thinking"] == "add them"
    assert call["content"] == [{"type": "toolCall", "id": "call_1|fc_1", "name": "add", "arguments": {"a": 2, "b": 2}}]
    assert call["stopReason"] == "toolUse" and call["api"] == "openai-responses" and call["model"] == "gpt-4.1"
    assert (result["toolCallId"], result["toolName"], result["content"]) == (
        "call_1|fc_1", "add", [{"type": "text", "text": "4"}])
    assert text["content"][0]["text"] == "It is 4." and text["stopReason"] == "stop"
    assert [e["data"] for e in entries if e["type"] == "custom"] == MIXED[5:7]
    assert all(e["customType"] == CUSTOM_TYPE for e in entries if e["type"] == "custom")
    assert store.validate("s") == []
    assert store.session("s").cwd == "/w"


def test_a_tool_result_added_later_answers_the_call_already_stored(store: SessionStore) -> None:
    session = SessionStoreSession("s", store)
    run(session.add_items(MIXED[:3]))
    run(session.add_items([MIXED[3]]))
    assert store.path("s")[-1]["message"]["toolCallId"] == "call_1|fc_1"


def test_pop_item_is_a_branch_to_the_parent(store: SessionStore) -> None:
    session = SessionStoreSession("s", store)
    run(session.add_items(MIXED[:3]))
    ids = [e["id"] for e in store.entries("s")]
    assert run(session.pop_item()) == MIXED[2]
    assert [e["id"] for e in store.entries("s")] == ids  # nothing deleted
    assert store.leaf("s") == ids[1]
    run(session.add_items([{"role": "user", "content": "other"}]))
    assert len(store.children("s", ids[1])) == 2  # the new item is a sibling branch
    assert run(session.pop_item()) == {"role": "user", "content": "other"}
    store.branch("s", ids[2])  # the store's branch is the session's history
    assert run(session.get_items()) == MIXED[:3]
    run(session.pop_item()), run(session.pop_item())
    assert run(session.pop_item()) == MIXED[0]
    assert store.leaf("s") is None and run(session.pop_item()) is None


def test_clear_session_keeps_the_tree(store: SessionStore) -> None:
    session = SessionStoreSession("s", store)
    run(session.add_items(MIXED))
    run(session.clear_session())
    assert run(session.get_items()) == [] and store.leaf("s") is None
    assert len(store.entries("s")) == len(MIXED)


def test_a_compaction_made_with_the_store_is_what_the_session_sees(store: SessionStore) -> None:
    session = SessionStoreSession("s", store)
    run(session.add_items(MIXED))
    kept = store.entries("s")[-2]["id"]
    store.compact("s", summary="They added 2 and 2.", first_kept_entry_id=kept)
    items = run(session.get_items())
    assert items[1:] == MIXED[-2:]
    assert items[0]["role"] == "user" and "They added 2 and 2." in items[0]["content"]
    run(session.add_items([{"role": "user", "content": "more"}]))
    assert run(session.get_items(limit=1)) == [{"role": "user", "content": "more"}]


class CannedModel(Model):
    """A model answering with canned outputs, recording the input of each call (the SDK's tests use a
    FakeModel like it, which the wheel does not ship)."""

    def __init__(self, outputs: list[list[Any]]) -> None:
        self.outputs = outputs
        self.inputs: list[Any] = []
        self.asked: list[str] = []
        """Which method each call asked: ``get_response`` or ``stream_response``."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(input)
        self.asked.append("get_response")
        return ModelResponse(output=self.outputs.pop(0), usage=Usage(), response_id=None)

    async def stream_response(self, system_instructions: Any, input: Any, *args: Any,
                              **kwargs: Any) -> AsyncIterator[Any]:
        """The next canned output as a stream: its items one by one, then ``response.completed``."""
        from openai.types.responses import (
            Response,
            ResponseCompletedEvent,
            ResponseOutputItemAddedEvent,
            ResponseOutputItemDoneEvent,
        )

        self.inputs.append(input)
        self.asked.append("stream_response")
        output = self.outputs.pop(0)
        for index, item in enumerate(output):
            yield ResponseOutputItemAddedEvent(type="response.output_item.added", item=item, output_index=index,
                                               sequence_number=2 * index)
            yield ResponseOutputItemDoneEvent(type="response.output_item.done", item=item, output_index=index,
                                              sequence_number=2 * index + 1)
        response = Response(id=f"resp_{len(self.inputs)}", created_at=0, model="canned", object="response",
                            output=output, parallel_tool_calls=False, tool_choice="auto", tools=[])
        yield ResponseCompletedEvent(type="response.completed", response=response, sequence_number=2 * len(output))


def _text(text: str, item_id: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id=item_id, type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["SessionStore", "AsyncSessionStore"])
def test_runner_run_persists_two_turns_that_export_as_a_pi_file(db_url: str, tmp_path: Path,
                                                                asynchronous: bool, streamed: bool) -> None:
    @agents.function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = CannedModel([
        [ResponseFunctionToolCall(id="fc_1", call_id="call_1", type="function_call", name="add",
                                  arguments='{"a": 2, "b": 2}')],
        [_text("It is 4.", "msg_1")],
        [_text("You asked about 2+2.", "msg_2")],
    ])
    agent = agents.Agent(name="calc", instructions="Be brief.", model=model, tools=[add])

    async def turn(session: SessionStoreSession, text: str) -> Any:
        if not streamed:
            return (await agents.Runner.run(agent, text, session=session, run_config=NO_TRACING)).final_output
        result = agents.Runner.run_streamed(agent, text, session=session, run_config=NO_TRACING)
        async for _event in result.stream_events():
            pass
        return result.final_output

    async def turns(store: Any) -> tuple[str, str]:
        session = SessionStoreSession("run", store, cwd="/w")
        return await turn(session, "What is 2+2?"), await turn(session, "What did I ask?")

    if asynchronous:
        async def with_async_store() -> tuple[str, str]:
            async with AsyncSessionStore(db_url) as astore:
                return await turns(astore)
        outputs = run(with_async_store())
    else:
        with SessionStore(db_url) as sync_store:
            outputs = run(turns(sync_store))
    assert outputs == ("It is 4.", "You asked about 2+2.")
    assert model.asked == ["stream_response" if streamed else "get_response"] * 3
    third_input = model.inputs[2]
    assert [i.get("type") or i.get("role") for i in third_input] == [
        "user", "function_call", "function_call_output", "message", "user"]
    assert third_input[0]["content"] == "What is 2+2?" and third_input[-1]["content"] == "What did I ask?"

    with SessionStore(db_url) as store:
        roles = [e["message"]["role"] for e in store.path("run")]
        assert roles == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]
        assert store.validate("run") == []
        out = io.BytesIO()
        store.export_jsonl("run", out)
        copy = tmp_path / "run.jsonl"
        copy.write_bytes(out.getvalue())
        with SessionStore(f"sqlite:///{tmp_path / 'again.db'}") as again:
            imported = again.import_jsonl(copy).session_id
            assert again.entries(imported) == store.entries("run")
            assert run(SessionStoreSession(imported, again).get_items()) == run(
                SessionStoreSession("run", store).get_items())

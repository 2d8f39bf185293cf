"""SessionStoreSession (sessionstore/openai_agents.py) against the OpenAI Agents SDK's own behaviour:
the same operations on an ``agents.SQLiteSession`` give the same items; ``pop_item`` is a branch; and
``Runner.run`` and ``Runner.run_streamed`` with a canned model (no network) persist two turns that export
as a valid pi file."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import json
import multiprocessing
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


# -- concurrency, atomicity, settings and numbers (issue 22) ------------------------------------------
def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _opened(db_url: str, asynchronous: bool) -> Any:
    """A store on ``db_url`` for one event loop's use: the async store, or the sync one."""
    return AsyncSessionStore(db_url) if asynchronous else SessionStore(db_url)


async def _closed(store: Any) -> None:
    await store.aclose() if isinstance(store, AsyncSessionStore) else store.close()


async def _all(*calls: Any) -> list[Any]:
    """The results of the calls run as concurrent tasks; the first error once every call has ended (a
    store closed under a call still running would break that call, not the test)."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def test_concurrent_first_uses_from_threads_all_land(store: SessionStore) -> None:
    def first_use(n: int) -> None:
        run(SessionStoreSession("fresh", store, cwd="/w").add_items([_user(f"m{n}")]))

    with concurrent.futures.ThreadPoolExecutor(25) as pool:
        list(pool.map(first_use, range(25)))  # (list: an exception of any call is raised here)
    got = run(SessionStoreSession("fresh", store).get_items())
    assert sorted(item["content"] for item in got) == sorted(f"m{n}" for n in range(25))
    assert [s.id for s in store.list_sessions()] == ["fresh"] and store.session("fresh").cwd == "/w"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["SessionStore", "AsyncSessionStore"])
def test_concurrent_first_uses_from_tasks_all_land(db_url: str, asynchronous: bool) -> None:
    async def main() -> list[Any]:
        opened = _opened(db_url, asynchronous)
        try:
            await _all(*(SessionStoreSession("fresh", opened).add_items([_user(f"m{n}")]) for n in range(25)))
            return await SessionStoreSession("fresh", opened).get_items()
        finally:
            await _closed(opened)

    assert sorted(item["content"] for item in run(main())) == sorted(f"m{n}" for n in range(25))


def _first_use_in_a_process(db_url: str, n: int, barrier: Any) -> None:
    with SessionStore(db_url) as opened:
        barrier.wait()
        asyncio.run(SessionStoreSession("fresh", opened).add_items([_user(f"p{n}"), _user(f"p{n}.2")]))


@pytest.mark.slow
def test_concurrent_first_uses_from_processes_all_land(store: SessionStore, db_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    workers = [context.Process(target=_first_use_in_a_process, args=(db_url, n, barrier)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [worker.exitcode for worker in workers] == [0] * 4
    contents = [item["content"] for item in run(SessionStoreSession("fresh", store).get_items())]
    assert sorted(contents) == sorted(f"p{n}{s}" for n in range(4) for s in ("", ".2"))
    assert all(contents.index(f"p{n}") + 1 == contents.index(f"p{n}.2") for n in range(4))  # each batch whole


@pytest.mark.parametrize("asynchronous", [False, True], ids=["SessionStore", "AsyncSessionStore"])
def test_concurrent_pops_each_take_a_different_item_once(db_url: str, asynchronous: bool) -> None:
    items = [_user(f"m{n}") for n in range(12)]

    async def main() -> tuple[list[Any], list[Any]]:
        opened = _opened(db_url, asynchronous)
        try:
            await SessionStoreSession("s", opened).add_items(items)
            popped = await _all(*(SessionStoreSession("s", opened).pop_item() for _ in range(16)))
            return list(popped), await SessionStoreSession("s", opened).get_items()
        finally:
            await _closed(opened)

    popped, left = run(main())
    assert left == [] and popped.count(None) == 4
    assert sorted(item["content"] for item in popped if item is not None) == sorted(i["content"] for i in items)


def test_concurrent_pops_from_threads_each_take_a_different_item_once(store: SessionStore) -> None:
    items = [_user(f"m{n}") for n in range(12)]
    run(SessionStoreSession("s", store).add_items(items))
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        popped = list(pool.map(lambda _n: run(SessionStoreSession("s", store).pop_item()), range(12)))
    assert sorted(item["content"] for item in popped) == sorted(i["content"] for i in items)
    assert store.leaf("s") is None


def test_session_settings_given_as_a_dict_are_the_sdks_settings(store: SessionStore) -> None:
    from agents.memory import SessionSettings

    session = SessionStoreSession("s", store, session_settings={"limit": 2})
    assert session.session_settings == SessionSettings(limit=2)
    run(session.add_items(MIXED))
    assert run(session.get_items()) == MIXED[-2:]
    assert SessionStoreSession("s", store).session_settings == SessionSettings()  # as SQLiteSession's default
    with pytest.raises(TypeError, match="Unknown session settings: bogus"):
        SessionStoreSession("s", store, session_settings={"limit": 2, "bogus": 1})
    with pytest.raises(TypeError):
        SessionStoreSession("s", store, session_settings=5)


def test_runner_run_uses_session_settings_given_as_a_dict(store: SessionStore) -> None:
    model = CannedModel([[_text("one", "msg_1")], [_text("two", "msg_2")]])
    agent = agents.Agent(name="a", model=model)
    session = SessionStoreSession("s", store, session_settings={"limit": 1})

    async def turns() -> None:
        await agents.Runner.run(agent, "first", session=session, run_config=NO_TRACING)
        await agents.Runner.run(agent, "second", session=session, run_config=NO_TRACING)

    run(turns())
    assert [i.get("content") for i in model.inputs[1]][-1] == "second"
    assert len(model.inputs[1]) == 2  # the one item of history the limit lets through, and the new input


def test_add_items_with_an_unserialisable_item_stores_nothing(store: SessionStore, tmp_path: Path) -> None:
    sdk, ours = both(store, tmp_path)
    batch = [_user("good"), {"role": "user", "content": "bad", "extra": object()}]
    for session in (sdk, ours):
        with pytest.raises(TypeError):
            run(session.add_items(batch))
        assert run(session.get_items()) == []
    run(ours.add_items([_user("first")]))
    with pytest.raises(TypeError):
        run(ours.add_items([_user("good"), {"type": "web_search_call", "id": "ws", "x": {1, 2}}]))
    assert run(ours.get_items()) == [_user("first")] and len(store.entries("s1")) == 1
    sdk.close()


@pytest.mark.parametrize("asynchronous", [False, True], ids=["SessionStore", "AsyncSessionStore"])
def test_a_cancelled_add_items_lands_whole_or_not_at_all(db_url: str, asynchronous: bool) -> None:
    items = [_user(f"m{n}" + "x" * 2000) for n in range(200)]

    async def main() -> tuple[int, int]:
        opened = _opened(db_url, asynchronous)
        try:
            await SessionStoreSession("s", opened).add_items([_user("before")])
            task = asyncio.create_task(SessionStoreSession("s", opened).add_items(items))
            await asyncio.sleep(0.05)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await asyncio.sleep(1.0)  # (a started write runs to its end in its thread)
            stored = await SessionStoreSession("s", opened).get_items()
            return len(stored), len(await opened.entries("s") if asynchronous else opened.entries("s"))
        finally:
            await _closed(opened)

    items_seen, entries = run(main())
    assert items_seen == entries and entries in (1, 201)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["SessionStore", "AsyncSessionStore"])
def test_batches_of_interleaved_tasks_stay_contiguous(db_url: str, asynchronous: bool) -> None:
    async def main() -> list[Any]:
        opened = _opened(db_url, asynchronous)
        try:
            await SessionStoreSession("s", opened).add_items([_user("first")])  # (not a first use)
            await _all(*(SessionStoreSession("s", opened).add_items([_user(f"{b}.{n}") for n in range(15)])
                         for b in range(8)))
            return (await SessionStoreSession("s", opened).get_items())[1:]
        finally:
            await _closed(opened)

    contents = [item["content"] for item in run(main())]
    assert len(contents) == 120
    batches = [contents[i:i + 15] for i in range(0, 120, 15)]
    assert sorted(batch[0].split(".")[0] for batch in batches) == [str(b) for b in range(8)]
    assert all(batch == [f"{batch[0].split('.')[0]}.{n}" for n in range(15)] for batch in batches)


NUMBERS: list[Any] = [
    {"role": "user", "content": "numbers", "big": 10**30, "huge": -(2**70), "whole": 1.0, "zero": -0.0,
     "nan": float("nan"), "inf": float("inf"), "keys": {"1": 2}, "pair": (1, 2), "exact": 2**53 + 1},
    {"type": "function_call_output", "call_id": "c", "output": "x", "n": 10**25},
    {"type": "web_search_call", "id": "ws", "status": "completed", "n": 10**40, "f": 2.0},
    {"role": "user", "content": "plain", "n": 3, "f": 0.5},
]


def test_items_round_trip_as_sqlite_session_round_trips_them(store: SessionStore, tmp_path: Path) -> None:
    sdk, ours = both(store, tmp_path)

    async def script(session: Any) -> list[Any]:
        await session.add_items(NUMBERS)
        return list(await session.get_items())

    expected, got = run(script(sdk)), run(script(ours))
    sdk.close()
    assert json.dumps(got) == json.dumps(expected)  # types too: 10**30 an int, 1.0 a float, -0.0 signed
    assert got[0]["big"] == 10**30 and isinstance(got[0]["whole"], float)
    assert json.dumps(run(SessionStoreSession("s1", store).get_items())) == json.dumps(expected)  # a new session
    stored = [e["message"][ITEM_FIELD] if e["type"] == "message" else e["data"] for e in store.entries("s1")]
    assert [type(value) for value in stored] == [str, str, str, dict]  # text only where pi's JSON would change it


# -- the store's primitives the adapter writes through ----------------------------------------------
def test_append_entries_writes_all_or_nothing(store: SessionStore) -> None:
    from sessionstore.errors import InvalidInputError

    sid = store.create_session(cwd="/w")
    good = {"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}}
    custom = {"type": "custom", "customType": "x", "data": {"n": 1}}
    for bad in ({"type": "message", "message": {"role": "user", "content": 5}}, {"type": "label"},
                {"type": "custom", "customType": "x", "data": object()}):
        with pytest.raises(InvalidInputError):
            store.append_entries(sid, [good, custom, bad])
        assert store.entries(sid) == []
    ids = store.append_entries(sid, [good, custom, good])
    entries = store.entries(sid)
    assert [e["id"] for e in entries] == ids and store.leaf(sid) == ids[-1]
    assert [e["parentId"] for e in entries] == [None, ids[0], ids[1]]
    assert store.append_entries(sid, []) == [] and store.validate(sid) == []


def test_concurrent_creates_of_one_id_are_one_create_and_session_exists_errors(store: SessionStore) -> None:
    from sessionstore.errors import SessionExistsError

    def create(exist_ok: bool) -> str:
        try:
            return store.create_session(cwd="/w", session_id=f"one-{exist_ok}", exist_ok=exist_ok)
        except SessionExistsError:
            return "exists"

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        strict = list(pool.map(create, [False] * 12))
        lenient = list(pool.map(create, [True] * 12))
    assert sorted(strict) == ["exists"] * 11 + ["one-False"]  # (a StoreError on PostgreSQL before)
    assert lenient == ["one-True"] * 12

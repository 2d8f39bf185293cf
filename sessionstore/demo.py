"""The demo behind ``sessionstore demo``: a scripted agent conversation recorded into a session
from the offline provider fixture, then branched, forked, compacted, exported and resumed.

Every step goes through the public API; nothing here is special-cased for the demo.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

from sessionstore.api import ContextResult, SessionStore
from sessionstore.models.messages import user_message
from sessionstore.provider import FixtureProviderAdapter, ProviderChunk, TextDelta, load_fixture
from sessionstore.recording import ModelInfo, append_tool_result, record_response
from sessionstore.store.tenant import DEFAULT_TENANT

FIXTURE_NAME = "provider-tool-roundtrip.json"
MODEL = ModelInfo(api="fixture-replay", provider="fixture", model="course-tool-roundtrip")
TOOLS: dict[str, Callable[..., Any]] = {"add": lambda left, right: left + right}


def bundled_fixture() -> Path:
    """The course fixture shipped with the package (``fixtures/provider-tool-roundtrip.json``)."""
    return Path(str(import_module("sessionstore._fixtures").__file__)).parent / FIXTURE_NAME


@dataclass(slots=True)
class DemoResult:
    session_id: str
    fork_id: str
    user_entry: str
    answer_entry: str
    summary_entry: str
    compaction_entry: str
    export_path: Path
    exported_entries: int
    context: ContextResult


async def _conversation(store: SessionStore, sid: str, fixture: Path, say: Callable[[str], None]) -> tuple[str, str]:
    adapter = FixtureProviderAdapter(load_fixture(fixture))
    question = "What is 20 + 22? Use the add tool."
    user_entry = store.append_message(sid, user_message(question))
    say(f"user: {question}")

    def show(chunk: ProviderChunk) -> None:
        if isinstance(chunk, TextDelta):
            say(f"  model streams text: {chunk.text!r}")
        else:
            say(f"  model streams tool call {chunk.id}: {chunk.name}({dict(chunk.arguments)})")

    request = 1
    while True:
        turn = await record_response(store, sid, adapter.stream(f"demo-{request}"), model=MODEL, on_chunk=show)
        request += 1
        if turn.error is not None:
            raise turn.error
        assert turn.response is not None and turn.entry_id is not None
        say(f"assistant ({turn.response.stop_reason}) recorded as entry {turn.entry_id}")
        if not turn.response.tool_calls:
            return user_entry, turn.entry_id
        for call in turn.response.tool_calls:
            value = TOOLS[call.name](**dict(call.arguments))
            entry = append_tool_result(store, sid, tool_call_id=call.id, tool_name=call.name, content=str(value))
            say(f"tool {call.name} ran: {value} (result entry {entry}, call id {call.id} kept)")


def run_demo(
    url: str | None = None,
    *,
    fixture: Path | None = None,
    export_dir: Path | None = None,
    say: Callable[[str], None] = print,
    tenant: str = DEFAULT_TENANT,
) -> DemoResult:
    """Record, branch, fork, compact, export, then resume in a fresh store and return the context
    (``tenant``'s sessions)."""
    fixture = fixture or bundled_fixture()
    with SessionStore(url, tenant=tenant) as store:
        say(f"database: {store.database}")
        sid = store.create_session(cwd=str(Path.cwd()))
        store.append_session_info(sid, "sessionstore demo")
        store.append_model_change(sid, provider=MODEL.provider, model_id=MODEL.model)
        say(f"session {sid}")
        user_entry, answer_entry = asyncio.run(_conversation(store, sid, fixture, say))
        store.append_label(sid, answer_entry, "answer")

        summary_entry = store.branch_with_summary(
            sid, user_entry, "Asked the model for 20 + 22; it called add and answered 42."
        )
        say(f"branched from the user message with a summary (entry {summary_entry}); the leaf is now there")

        fork_id = store.fork(sid, leaf_id=answer_entry)
        say(f"forked the answered branch into session {fork_id}")
        compaction_entry = store.compact(
            fork_id, summary="The user asked for 20 + 22; the add tool returned 42.", first_kept_entry_id=user_entry
        )
        say(f"compacted the fork (entry {compaction_entry}, keeps from {user_entry})")

        target = (export_dir or Path(tempfile.gettempdir())) / f"sessionstore-demo-{fork_id}.jsonl"
        partial = target.with_name(target.name + ".partial")
        with open(partial, "wb") as fp:
            exported = store.export_jsonl(fork_id, fp)
        partial.replace(target)
        say(f"exported the fork to {target} ({exported} entries)")

    with SessionStore(url, tenant=tenant) as resumed:  # a fresh store, as a new process would open it
        context = resumed.context(fork_id)
        say(f"resumed {fork_id} from the database: {len(context.messages)} messages")
    return DemoResult(sid, fork_id, user_entry, answer_entry, summary_entry, compaction_entry, target, exported,
                      context)

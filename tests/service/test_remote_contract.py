"""The live-session contract suite (tests/contract/test_live_sessions.py) run UNCHANGED with its
``store`` a :class:`RemoteSessionStore` on a real ``sessionstore serve`` (``--no-auth``), both backends.

Each test of that module runs here unless it is in :data:`EXCLUDED`, with the reason it cannot (it looks
at the database's rows or the engine's internals, which a client of the API cannot and should not)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sessionstore.client import RemoteSessionStore
from tests.contract import test_live_sessions as live
from tests.service.conftest import Server

ROWS = "reads or writes the database's rows itself (entry_store / db_engine)"
INTERNALS = "patches the library's internals (monkeypatch), which run in the server's process"
IMPORT_ENTRIES = ("import_entries has no route (SPEC 15 has none): the client sends the entries as a file to"
                  " /v1/imports, whose refusal is the import's JsonlError, not insert_session's InvalidInputError")
LOCAL = "opens SessionStore(db_url) itself: a second local store, not the remote one"

EXCLUDED: dict[str, str] = {
    "test_a_bad_message_is_refused_with_the_field_named": ROWS,
    "test_expected_leaf_conflict_writes_nothing": ROWS,
    "test_two_stores_on_one_database_one_wins_one_conflicts": LOCAL,
    "test_branch_then_restart_then_append_lands_on_the_branch": LOCAL,
    "test_delete_session_removes_everything_in_one_go": ROWS,
    "test_the_database_refuses_raw_update_and_delete_of_entries": ROWS,
    "test_the_database_refuses_a_parent_from_another_session": ROWS,
    "test_the_database_refuses_a_row_whose_parent_is_not_before_it": ROWS,
    "test_an_export_is_one_snapshot_even_when_an_append_lands_during_it": INTERNALS,
    "test_compact_refuses_a_first_kept_entry_off_the_path": ROWS,
    "test_resume_of_a_compacted_session_reads_only_the_kept_tail": ROWS,
    "test_resume_after_compaction_still_finds_model_and_thinking_set_before_the_cut": ROWS,
    "test_a_store_error_names_the_database_problem": "opens a broken local database: no server involved",
    "test_list_sessions_reads_no_entry_rows": INTERNALS,
    "test_import_reports_progress_up_to_the_whole_file": "progress counts bytes the server reads, not the client",
    "test_an_append_whose_generated_id_is_taken_draws_another_and_writes_once": INTERNALS,
    "test_generated_ids_are_retried_while_taken": "a pure function of the library: no store involved",
    "test_after_an_append_the_pooled_connection_still_runs_atomic_transactions": ROWS,
    "test_insert_session_refuses_a_taken_id_or_a_parent_not_before_its_child_and_writes_nothing": IMPORT_ENTRIES,
}
"""The tests of test_live_sessions.py not run here, each with its reason."""

sid = live.sid
globals().update({name: value for name, value in vars(live).items()
                  if name.startswith("test_") and name not in EXCLUDED})


@pytest.fixture
def store(no_auth_server: Server) -> Iterator[Any]:
    """The contract's ``store``: the remote client on a server whose database is emptied first (each
    contract test expects a store of its own)."""
    from sessionstore.api import SessionStore

    with SessionStore(no_auth_server.url) as local:
        for info in local.list_sessions():
            local.delete_session(info.id)
    with RemoteSessionStore(no_auth_server.base_url) as remote:
        yield remote


def test_every_exclusion_names_a_test_of_the_suite() -> None:
    assert set(EXCLUDED) <= {name for name in vars(live) if name.startswith("test_")}


@pytest.mark.parametrize("twin", ["sync", "async"])
def test_the_openai_agents_session_keeps_its_items_on_the_remote_store(no_auth_server: Server, twin: str) -> None:
    import asyncio

    from sessionstore.client import AsyncRemoteSessionStore
    from sessionstore.openai_agents import SessionStoreSession

    items = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]

    async def run() -> list[Any]:
        store: Any = (RemoteSessionStore(no_auth_server.base_url) if twin == "sync"
                      else AsyncRemoteSessionStore(no_auth_server.base_url))
        try:
            session = SessionStoreSession(f"agents-{twin}", store, cwd="/agents")
            await session.add_items(items)
            got = await session.get_items()
            popped = await session.pop_item()
            rest = await session.get_items()
        finally:  # (closed here, in the loop: an unclosed client's sockets are a ResourceWarning)
            if twin == "sync":
                store.close()
            else:
                await store.close()
        return [got, popped, rest]

    got, popped, rest = asyncio.run(run())
    assert [i["content"] for i in got] == ["hi", "hello"]
    assert popped["content"] == "hello" and [i["content"] for i in rest] == ["hi"]

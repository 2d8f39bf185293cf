"""The SDK's session tests that do not apply to ``SessionStoreSession``, each with its reason: the one list
of what ``tests/agents_sdk`` leaves out (``conftest.py`` deselects them; nothing is skipped).

Each entry: the copied module, the test's name, the parts of its parametrisation id it applies to
(``None``: every run; ``conftest.py`` runs each test as ``sqlite-SessionStore``,
``sqlite-AsyncSessionStore``, ``postgresql-SessionStore`` and ``postgresql-AsyncSessionStore``), and why
it does not apply."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Exclusion:
    module: str
    test: str
    reason: str
    when: tuple[str, ...] | None = None
    """Parametrisation ids (parts of the test's id in brackets) that must all be present; ``None``: any."""

    def matches(self, item: pytest.Item) -> bool:
        name = getattr(item, "originalname", item.name)
        if item.module.__name__.rsplit(".", 1)[-1] != self.module or name != self.test:  # type: ignore[attr-defined]
            return False
        ids = item.name.partition("[")[2].rstrip("]").split("-")
        return self.when is None or all(part in ids for part in self.when)


CORRUPT_ROWS = ("writes rows of invalid JSON into the SDK's own table with raw SQL; the store refuses an entry that "
                "is not JSON, so there is no corrupt row to skip")
RAW_SQL = "reads or writes the SDK's own tables with raw SQL (sqlite3 on its db_path, or its SQLAlchemy session)"
CONNECTIONS = ("tests the SDK session's private connection handling (its per-thread sqlite3 connections, their "
               "reaping, quarantine and rollback), which SessionStore has in its backend and tests itself")
LOCKS = "tests the SDK session's private locks (its process-wide file locks, its table-creation locks)"
INIT = ("tests the SDK session's private schema initialisation (its WAL setup and candidate connections); the "
        "store's schema is made when it opens")
CLOSE = ("tests the SDK session's close(): SessionStoreSession has none, the store it is given is the caller's to "
         "close (SessionStore.close, AsyncSessionStore.aclose)")
FAILURE = ("makes a write fail by dropping or replacing the SDK's table with raw SQL; that a failed or cancelled "
           "write leaves nothing is test_openai_agents_session.py's test_add_items_with_an_unserialisable_item_"
           "stores_nothing and test_a_cancelled_add_items_lands_whole_or_not_at_all")
ENGINE = ("builds an SQLAlchemy async engine of its own on aiosqlite, the SDK's driver (not installed, not used "
          "by sessionstore), or reads the session's engine; concurrent pops and first writes on one database are "
          "test_openai_agents_session.py's test_concurrent_pops_* and test_concurrent_first_uses_*")
TIES = ("forces equal created_at timestamps on the SDK's rows with raw SQL; the store orders entries by their "
        "append order, which no timestamp changes")
ASCII = "reads the JSON text the SDK stores (ensure_ascii) with raw SQL; the store keeps pi's JSON"

OTHER_LOOPS = ("runs the session on event loops of its own (Runner.run_sync, threads running asyncio.run); a "
               "PostgreSQL AsyncSessionStore works on the loop that first used it (psycopg's async connections) and "
               "says so ('open one per loop'); the test runs on the three other substitutions")
ASYNC_PG = ("postgresql", "AsyncSessionStore")

_S, _L, _SA, _AS = "test_session", "test_session_limit", "test_sqlalchemy_session", "test_async_sqlite_session"

EXCLUSIONS: tuple[Exclusion, ...] = (
    *(Exclusion(_S, name, OTHER_LOOPS, when=(*ASYNC_PG, "run_sync")) for name in (
        "test_session_memory_basic_functionality_parametrized",
        "test_session_memory_with_explicit_instance_parametrized",
        "test_session_memory_different_sessions_parametrized",
        "test_session_memory_appends_list_input_by_default",
        "test_session_callback_prepared_input",
        "test_session_callback_repeating_history_does_not_grow_session")),
    Exclusion(_S, "test_sqlite_session_concurrent_access", OTHER_LOOPS, when=ASYNC_PG),
    *(Exclusion(_L, name, OTHER_LOOPS, when=(*ASYNC_PG, "run_sync")) for name in (
        "test_session_limit_parameter",
        "test_session_limit_drops_unmatched_history_function_call_output",
        "test_session_limit_zero",
        "test_session_limit_none_gets_all_history",
        "test_session_limit_larger_than_history")),
    *(Exclusion(_SA, name, OTHER_LOOPS, when=ASYNC_PG) for name in (
        "test_add_items_concurrent_first_access_across_from_url_sessions_cross_loop",
        "test_add_items_concurrent_first_access_with_shared_session_cross_loop")),
    *(Exclusion(_S, name, CONNECTIONS) for name in (
        "test_sqlite_session_close_closes_worker_thread_connections",
        "test_sqlite_session_reaps_connections_from_exited_worker_threads",
        "test_sqlite_session_closes_retired_connections_before_the_next_allocation",
        "test_sqlite_session_keeps_connections_of_live_worker_threads",
        "test_sqlite_session_rollback_failure_evicts_connection",
        "test_sqlite_session_close_retries_quarantined_connection",
        "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome")),
    Exclusion(_S, "test_sqlite_session_closed_rejects_empty_add_items", CLOSE),
    *(Exclusion(_S, name, CORRUPT_ROWS) for name in (
        "test_sqlite_session_pop_item_skips_corrupt_most_recent",
        "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows",
        "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows",
        "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows")),
    Exclusion(_S, "test_sqlite_session_file_lock_is_shared_across_instances", LOCKS),
    *(Exclusion(_S, name, FAILURE) for name in (
        "test_sqlite_session_failed_add_items_releases_write_lock",
        "test_sqlite_session_failed_clear_session_rolls_back",
        "test_sqlite_session_failed_pop_item_releases_write_lock")),
    *(Exclusion(_SA, name, ASCII) for name in (
        "test_sqlalchemy_session_defaults_to_escaped_non_ascii_storage",
        "test_sqlalchemy_session_can_store_non_ascii_without_escaping")),
    *(Exclusion(_SA, name, ENGINE) for name in (
        "test_concurrent_pop_item_returns_each_row_once",
        "test_sqlite_fallback_reserves_writer_before_tail_claim",
        "test_add_items_concurrent_first_access_across_sessions_with_shared_engine",
        "test_add_items_waits_for_transient_sqlite_write_lock",
        "test_engine_property_from_url",
        "test_engine_property_from_external_engine",
        "test_engine_property_is_read_only",
        "test_sqlite_configuration_registry_releases_collected_engines",
        "test_sqlite_configuration_registry_does_not_grow_unbounded")),
    *(Exclusion(_SA, name, RAW_SQL) for name in (
        "test_pop_item_supports_unknown_delete_rowcount",
        "test_pop_item_retries_returning_claim_lost_to_concurrent_delete",
        "test_mutation_cancellation_waits_for_transaction_exit")),
    *(Exclusion(_SA, name, CORRUPT_ROWS) for name in (
        "test_pop_item_skips_corrupt_most_recent",
        "test_get_items_limit_skips_corrupt_newest_rows",
        "test_pop_item_returns_none_after_dropping_only_corrupt_rows")),
    *(Exclusion(_SA, name, LOCKS) for name in (
        "test_add_items_cancelled_waiter_does_not_strand_table_init_lock",
        "test_create_tables_false_does_not_allocate_shared_init_lock")),
    *(Exclusion(_SA, name, TIES) for name in (
        "test_get_items_same_timestamp_consistent_order",
        "test_pop_item_same_timestamp_returns_latest",
        "test_get_items_orders_by_id_for_ties")),
    *(Exclusion(_AS, name, CORRUPT_ROWS) for name in (
        "test_async_sqlite_session_pop_item_skips_corrupt_most_recent",
        "test_async_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows",
        "test_async_sqlite_session_get_items_limit_skips_corrupt_newest_rows")),
    *(Exclusion(_AS, name, TIES) for name in (
        "test_async_sqlite_session_get_items_same_timestamp_consistent_order",
        "test_async_sqlite_session_pop_item_same_timestamp_returns_latest")),
    *(Exclusion(_AS, name, CLOSE) for name in (
        "test_async_sqlite_session_closed_operations_raise_runtime_error",
        "test_async_sqlite_session_closed_rejects_empty_add_items",
        "test_async_sqlite_session_close_before_use_is_terminal",
        "test_async_sqlite_session_close_is_idempotent",
        "test_cancelled_close_finishes_cleanup_and_propagates_cancellation")),
    *(Exclusion(_AS, name, CONNECTIONS) for name in (
        "test_post_commit_cancellation_propagates_after_known_mutation_outcome",
        "test_cancelled_add_items_rolls_back_write_transaction",
        "test_operation_failure_then_cancellation_during_rollback",
        "test_rollback_failure_closes_and_evicts_connection",
        "test_close_retries_connection_quarantined_after_rollback_failure",
        "test_cancelled_connect_closes_eventually_acquired_connection")),
    *(Exclusion(_AS, name, FAILURE) for name in (
        "test_failed_add_items_rolls_back_and_reuses_connection",
        "test_failed_clear_session_rolls_back",
        "test_failed_pop_item_releases_write_lock")),
    *(Exclusion(_AS, name, INIT) for name in (
        "test_failed_initialization_closes_candidate_connection",
        "test_initialization_retries_transient_wal_lock",
        "test_initialization_releases_wal_cursor_before_schema_write",
        "test_initialization_does_not_retry_unrecoverable_wal_errors",
        "test_cancelled_wal_retry_closes_startup_connection",
        "test_close_retries_quarantined_failed_initialization_candidate",
        "test_cancelled_initialization_finishes_candidate_close",
        "test_initialization_failure_then_cancellation_during_candidate_close")),
)


def excluded(items: Sequence[pytest.Item]) -> list[pytest.Item]:
    """The collected items that an exclusion names."""
    return [item for item in items if any(rule.matches(item) for rule in EXCLUSIONS)]

"""A worker's store: one per worker process, serving every tenant, its entry cache bounded below the
library's default (the worker's memory target)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sessionstore.context.entry_cache import DEFAULT_ENTRY_CACHE_BYTES
from sessionstore.service.app import WORKER_ENTRY_CACHE_BYTES, _open_store


def test_a_worker_opens_its_store_with_the_smaller_entry_cache(tmp_path: Path) -> None:
    store = asyncio.run(_open_store(f"sqlite:///{tmp_path / 's.db'}"))
    try:
        cache = store._entry_cache
        assert cache.max_bytes == WORKER_ENTRY_CACHE_BYTES < DEFAULT_ENTRY_CACHE_BYTES
        assert store.for_tenant("acme")._entry_cache is cache  # (one per worker, whatever the tenant)
    finally:
        store.close()

"""The scheduled retention run of ``serve`` (SPEC 18): every ``--retention-interval`` seconds each
worker tries to take the ``retention`` lease (a row in ``sessionstore_leases``, so it works on SQLite and
PostgreSQL, across workers and hosts); the one that holds it applies every tenant's policy
(:func:`sessionstore.store.retention.run`, after reconciling the archive directory), renewing the lease
after each session, and on PostgreSQL runs the ``VACUUM`` that erasures over HTTP left to it
(:func:`sessionstore.store.erasure.vacuum_if_erased`). It keeps the lease for the interval: one worker
runs at a time, and another takes over when the holder stops renewing it (it died)."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from pathlib import Path

from starlette.concurrency import run_in_threadpool

from sessionstore.api import SessionStore

log = logging.getLogger("sessionstore.service")

LEASE = "retention"
FIRST_DELAY_S = 30.0


def holder_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def run_once(store: SessionStore, *, archive_dir: Path, holder: str, lease_ms: int) -> bool:
    """One scheduled run if this worker gets the lease; whether it ran."""
    from sessionstore.store import erasure, retention

    entries = store._entries
    if not retention.take_lease(entries, LEASE, holder, ttl_ms=lease_ms):
        return False

    def renew(_item: object) -> None:
        retention.take_lease(entries, LEASE, holder, ttl_ms=lease_ms)

    for policy in retention.all_policies(entries):
        report = retention.run(entries.for_tenant(policy.tenant), archive_dir=archive_dir, on_action=renew)
        if report.archived or report.deleted or report.failures:
            log.info("retention tenant=%s archived=%d deleted=%d held=%d failed=%d", policy.tenant,
                     len(report.archived), len(report.deleted), len(report.held), len(report.failures))
        for sid, error in report.failures:
            log.warning("retention tenant=%s session=%s failed: %s", policy.tenant, sid, error)
    erasure.vacuum_if_erased(entries)
    return True


async def schedule(store: SessionStore, *, archive_dir: Path, interval_s: float) -> None:
    """Run :func:`run_once` every ``interval_s`` seconds until cancelled (a failure is logged, not fatal)."""
    holder = holder_name()
    lease_ms = int(max(interval_s * 2, 60) * 1000)
    await asyncio.sleep(min(interval_s, FIRST_DELAY_S))  # (a worker starting up serves requests first)
    while True:
        try:
            await run_in_threadpool(run_once, store, archive_dir=archive_dir, holder=holder, lease_ms=lease_ms)
        except Exception as exc:  # (the database may be away: the next tick tries again)
            log.warning("retention run failed: %s", exc)
        await asyncio.sleep(interval_s)

"""SPEC 18 over the service: ``serve`` applies the retention policies on a schedule (one worker at a
time, by a lease row), and ``DELETE /v1/sessions/{id}?erase=true`` erases with an admin token only."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sessionstore import user_message
from sessionstore.api import SessionStore
from sessionstore.store import archive, erasure, retention
from tests.service.conftest import Server

pytestmark = pytest.mark.slow


def _until(check: Callable[[], bool], *, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


def test_serve_archives_on_its_schedule_with_one_lease_holder(
        service_db_url: str, start_server: Callable[..., Server], tmp_path: Path) -> None:
    directory = tmp_path / "archive"
    with SessionStore(service_db_url, tenant="sched") as store:
        sids = []
        for n in range(3):
            sid = store.create_session(cwd="/w")
            store.append_message(sid, user_message(f"m{n}"))
            sids.append(sid)
        retention.hold(store._entries, sids[2])
        retention.set_policy(store._entries, archive_after_days=0)
    server = start_server(service_db_url, "--workers", "2", "--retention-interval", "0.5",
                          "--archive-dir", str(directory))
    try:
        with SessionStore(service_db_url, tenant="sched") as store:
            _until(lambda: archive.archived_ids(store._entries) == set(sids[:2]))
            with store._entries.backend.read() as tx:
                holders = tx.run("SELECT holder FROM sessionstore_leases WHERE name = 'retention'"
                                          ).fetchall()
            assert len(holders) == 1
            retention.clear_policy(store._entries)
            with server.client(server.token("sched", "read")) as client:  # restored on access, over HTTP too
                assert client.get(f"/v1/sessions/{sids[0]}/export").text.count("\n") == 2
            assert not archive.is_archived(store._entries, sids[0])
    finally:
        server.stop()


def test_erase_over_http_needs_an_admin_token_and_is_audited(server: Server) -> None:
    with SessionStore(server.url, tenant="erasing") as store:
        sid = store.create_session(cwd="/w")
        store.append_message(sid, user_message("forget me"))
    with server.client(server.token("erasing", "write")) as client:
        refused = client.delete(f"/v1/sessions/{sid}", params={"erase": "true"})
        assert refused.status_code == 403 and refused.json()["code"] == "FORBIDDEN"
    admin = server.token("erasing", "admin")
    with server.client(admin) as client:
        assert client.delete(f"/v1/sessions/{sid}", params={"erase": "true"}).status_code == 204
        assert client.get(f"/v1/sessions/{sid}").status_code == 404
    with SessionStore(server.url, tenant="erasing") as store:
        (record,) = erasure.erasures(store._entries)
    assert record.session_id == sid and record.erased_by == f"token:{admin.split('_')[1]}"

"""Issue 26 point 4: over 1,000 sessions of mixed ages, holds and tenants, ``retention run`` archives and
deletes exactly the sessions the policy names, on both backends, and search, stats and ``ls`` stay
correct for the rest."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sessionstore.api import SessionStore
from sessionstore.store import archive, retention

pytestmark = pytest.mark.slow

NOW = 1_900_000_000_000
DAY = retention.DAY_MS


def _session(n: int, tenant: str) -> tuple[dict[str, object], list[dict[str, object]]]:
    sid = f"s{n:04d}"
    header = {"type": "session", "version": 3, "id": sid, "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    entries: list[dict[str, object]] = [
        {"type": "message", "id": f"{sid}-u", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": f"word{n}x in {tenant}", "timestamp": 1}},
        {"type": "message", "id": f"{sid}-a", "parentId": f"{sid}-u", "timestamp": "2025-01-01T00:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "api": "x",
                     "provider": "p", "model": "m", "usage": {"input": n, "output": 1, "cacheRead": 0,
                     "cacheWrite": 0, "totalTokens": n + 1, "cost": {"total": 0.5}},
                     "stopReason": "stop", "timestamp": 2}}]
    return header, entries


def test_a_run_over_1000_sessions_acts_on_exactly_the_sessions_the_policy_names(
        db_url: str, tmp_path: Path) -> None:
    rng = random.Random(26)
    tenants = ["default", "acme", "zeta"]
    expect: dict[str, dict[str, set[str]]] = {t: {"archive": set(), "delete": set(), "keep": set()} for t in tenants}
    policies = {"default": (30.0, 90.0), "acme": (None, 60.0), "zeta": None}
    with SessionStore(db_url) as root:
        stores = {t: root.for_tenant(t) for t in tenants}
        for n in range(1000):
            tenant = tenants[n % 3]
            store = stores[tenant]
            header, entries = _session(n, tenant)
            sid = store.import_entries(header, entries).session_id
            age = rng.choice([1, 10, 29, 31, 45, 61, 89, 91, 200])
            with store._entries.backend.write() as tx:
                tx.run("UPDATE sessionstore_sessions SET active_ms = :ms"
                                " WHERE tenant = :t AND id = :sid", {"ms": NOW - age * DAY, "t": tenant, "sid": sid})
            held = n % 7 == 0
            if held:
                retention.hold(store._entries, sid)
            policy = policies[tenant]
            action = "keep"
            if policy is not None and not held:
                archive_after, delete_after = policy
                if delete_after is not None and age >= delete_after:
                    action = "delete"
                elif archive_after is not None and age >= archive_after:
                    action = "archive"
            expect[tenant][action].add(sid)
        for tenant, policy in policies.items():
            if policy is not None:
                retention.set_policy(stores[tenant]._entries, archive_after_days=policy[0],
                                     delete_after_days=policy[1])
        before = {t: {s.id: s for s in stores[t].list_sessions()} for t in tenants}
        stats_before = {t: {sid: stores[t].stats(sid).to_json() for sid in before[t]} for t in tenants}
        for tenant in tenants:
            report = retention.run(stores[tenant]._entries, archive_dir=tmp_path, now=NOW)
            assert set(report.archived) == expect[tenant]["archive"], tenant
            assert set(report.deleted) == expect[tenant]["delete"], tenant
            assert report.failures == []
        for tenant in tenants:
            store = stores[tenant]
            listed = {s.id: s for s in store.list_sessions()}
            assert set(listed) == expect[tenant]["keep"] | expect[tenant]["archive"]
            assert archive.archived_ids(store._entries) == expect[tenant]["archive"]
            for sid, info in listed.items():
                assert info == before[tenant][sid]
                assert store.stats(sid).to_json() == stats_before[tenant][sid]
            assert store.stats_all().to_json()["totalMessages"] == 2 * len(listed)
            kept = sorted(expect[tenant]["keep"])[:5]
            for sid in kept:  # search finds the kept sessions, and no other tenant's
                n = int(sid[1:])
                assert [hit.session.id for hit in store.search(f"word{n}x")] == [sid]
            for sid in sorted(expect[tenant]["archive"])[:3]:  # not found while archived
                assert store.search(f"word{int(sid[1:])}x") == []
        assert len(list(tmp_path.rglob("*.gz"))) == sum(len(e["archive"]) for e in expect.values())

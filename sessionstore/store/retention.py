"""Retention policies (SPEC 18, issue 26): per tenant, the days of inactivity after which its sessions
are archived (:mod:`sessionstore.store.archive`) and deleted; holds that exempt a session; the run that
applies a policy; and leases, so that one worker at a time runs it on a schedule.

A session's age is its last activity (``active_ms``: creation, appends, forks, leaf moves; an imported
file's own latest time), what ``ls`` lists by. A run deletes a session whose age reaches
``delete_after_days`` (archived or not; an archived one's file goes too) and else archives one whose age
reaches ``archive_after_days``; a held session is left alone and listed as held. ``dry_run`` lists the
same actions and does nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sessionstore.errors import InvalidInputError, SessionNotFoundError, SessionStoreError
from sessionstore.models.timestamps import now_iso, now_ms
from sessionstore.store.archive import archive_session, reconcile
from sessionstore.store.dbtext import from_db, to_db

if TYPE_CHECKING:
    from sessionstore.store.entry_store import EntryStore

DAY_MS = 86_400_000
Action = Literal["archive", "delete"]

_GET = "SELECT tenant, archive_after_days, delete_after_days, updated_at FROM sessionstore_retention"
_UPSERT = ("INSERT INTO sessionstore_retention (tenant, archive_after_days, delete_after_days, updated_at)"
           " VALUES (:tenant, :archive, :delete, :at) ON CONFLICT (tenant) DO UPDATE SET"
           " archive_after_days = excluded.archive_after_days, delete_after_days = excluded.delete_after_days,"
           " updated_at = excluded.updated_at")
_CLEAR = "DELETE FROM sessionstore_retention WHERE tenant = :tenant"
_HOLD = ("INSERT INTO sessionstore_holds (session_key, tenant, held_at) VALUES (:key, :tenant, :at)"
         " ON CONFLICT (session_key) DO NOTHING")
_UNHOLD = "DELETE FROM sessionstore_holds WHERE session_key = :key"
_HELD = ("SELECT s.id, h.held_at FROM sessionstore_holds h JOIN sessionstore_sessions s ON s.key = h.session_key"
         " WHERE s.tenant = :tenant AND NOT s.deleting ORDER BY s.id")
_CANDIDATES = """SELECT s.id, s.active_ms, a.session_key IS NOT NULL, h.session_key IS NOT NULL
    FROM sessionstore_sessions s
    LEFT JOIN sessionstore_archives a ON a.session_key = s.key
    LEFT JOIN sessionstore_holds h ON h.session_key = s.key
    WHERE s.tenant = :tenant AND NOT s.deleting AND s.active_ms <= :cutoff
    ORDER BY s.active_ms, s.id"""
_LEASE = ("INSERT INTO sessionstore_leases (name, holder, expires_ms) VALUES (:name, :holder, :until)"
          " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_ms = excluded.expires_ms"
          " WHERE sessionstore_leases.expires_ms < :now OR sessionstore_leases.holder = excluded.holder")
_LEASE_HOLDER = "SELECT holder FROM sessionstore_leases WHERE name = :name"
_LEASE_RELEASE = "DELETE FROM sessionstore_leases WHERE name = :name AND holder = :holder"


@dataclass(frozen=True, slots=True)
class Policy:
    """A tenant's retention policy: archive after, delete after (days of inactivity; ``None``: never)."""

    tenant: str
    archive_after_days: float | None
    delete_after_days: float | None
    updated_at: str

    def to_json(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "archiveAfterDays": self.archive_after_days,
                "deleteAfterDays": self.delete_after_days, "updatedAt": self.updated_at}


def _days(value: float | None, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InvalidInputError(f"{name} must be a number of days >= 0, got {value!r}")
    return float(value)


def set_policy(store: EntryStore, *, archive_after_days: float | None = None,
               delete_after_days: float | None = None) -> Policy:
    """Set the tenant's policy (replacing the one it had); at least one of the two is needed."""
    archive, delete = _days(archive_after_days, "archive_after_days"), _days(delete_after_days, "delete_after_days")
    if archive is None and delete is None:
        raise InvalidInputError("a retention policy needs --archive-after or --delete-after"
                                " (retention clear removes it)")
    policy = Policy(store.tenant, archive, delete, now_iso())
    with store.backend.write() as tx:
        tx.run(_UPSERT, {"tenant": store.tenant, "archive": archive, "delete": delete, "at": policy.updated_at})
    return policy


def _policy(row: Any) -> Policy:
    return Policy(row[0], None if row[1] is None else float(row[1]), None if row[2] is None else float(row[2]), row[3])


def get_policy(store: EntryStore) -> Policy | None:
    with store.backend.read() as tx:
        row = tx.run(_GET + " WHERE tenant = :tenant", {"tenant": store.tenant}).fetchone()
    return None if row is None else _policy(row)


def all_policies(store: EntryStore) -> list[Policy]:
    """Every tenant's policy (the scheduled run applies each)."""
    with store.backend.read() as tx:
        return [_policy(r) for r in tx.run(_GET + " ORDER BY tenant").fetchall()]


def clear_policy(store: EntryStore) -> bool:
    """Remove the tenant's policy; whether it had one."""
    with store.backend.write(bulk=True) as tx:  # (not pipelined: the rowcount is read)
        return bool(tx.run(_CLEAR, {"tenant": store.tenant}).rowcount)


def hold(store: EntryStore, session_id: str) -> bool:
    """Exempt the session from the policy; whether it was not held before."""
    with store.backend.write(bulk=True) as tx:  # (not pipelined: the rowcount is read)
        head = tx.head(to_db(session_id), lock=True)
        if head is None or head.deleting:
            raise SessionNotFoundError(session_id)
        return bool(tx.run(_HOLD, {"key": head.key, "tenant": store.tenant, "at": now_iso()}).rowcount)


def unhold(store: EntryStore, session_id: str) -> bool:
    """Let the policy apply to the session again; whether it was held."""
    with store.backend.write(bulk=True) as tx:  # (not pipelined: the rowcount is read)
        head = tx.head(to_db(session_id), lock=True)
        if head is None or head.deleting:
            raise SessionNotFoundError(session_id)
        return bool(tx.run(_UNHOLD, {"key": head.key}).rowcount)


def held(store: EntryStore) -> dict[str, str]:
    """Session id -> when it was held, of the tenant's held sessions."""
    with store.backend.read() as tx:
        return {from_db(r[0]): r[1] for r in tx.run(_HELD, {"tenant": store.tenant}).fetchall()}


@dataclass(frozen=True, slots=True)
class Planned:
    """What the policy does to one session: ``archive`` or ``delete``; ``held`` when a hold prevents it."""

    session_id: str
    action: Action
    active_ms: int
    held: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "action": self.action, "activeMs": self.active_ms, "held": self.held}


@dataclass(slots=True)
class RunReport:
    """A run of the tenant's policy: what it did (or with ``dry_run`` would do), what holds kept, failures."""

    tenant: str
    dry_run: bool
    policy: Policy | None
    archived: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    held: list[Planned] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "dryRun": self.dry_run,
                "policy": None if self.policy is None else self.policy.to_json(),
                "archived": self.archived, "deleted": self.deleted,
                "held": [p.to_json() for p in self.held],
                "failures": [{"sessionId": sid, "error": error} for sid, error in self.failures]}


def plan(store: EntryStore, policy: Policy, *, now: int) -> list[Planned]:
    """The actions ``policy`` names at time ``now`` (epoch ms), oldest first; held sessions included,
    marked ``held``."""
    limits = [d for d in (policy.archive_after_days, policy.delete_after_days) if d is not None]
    if not limits:
        return []
    cutoff = now - min(limits) * DAY_MS
    planned: list[Planned] = []
    with store.backend.read() as tx:
        rows = tx.run(_CANDIDATES, {"tenant": store.tenant, "cutoff": math.floor(cutoff)}).fetchall()
    for sid, active_ms, archived, is_held in rows:
        age = now - int(active_ms)
        action: Action | None = None
        if policy.delete_after_days is not None and age >= policy.delete_after_days * DAY_MS:
            action = "delete"
        elif policy.archive_after_days is not None and age >= policy.archive_after_days * DAY_MS and not archived:
            action = "archive"
        if action is not None:
            planned.append(Planned(from_db(sid), action, int(active_ms), bool(is_held)))
    return planned


def run(store: EntryStore, *, archive_dir: Path, dry_run: bool = False, now: int | None = None,
        on_action: Callable[[Planned], None] | None = None) -> RunReport:
    """Apply the tenant's policy (see the module); a session that fails is reported and the run goes on.
    Before acting, the archive directory is reconciled (:func:`archive.reconcile`)."""
    policy = get_policy(store)
    report = RunReport(store.tenant, dry_run, policy)
    if policy is None:
        return report
    if not dry_run:
        reconcile(store, archive_dir)
    for item in plan(store, policy, now=now_ms() if now is None else now):
        if item.held:
            report.held.append(item)
            continue
        if dry_run:
            (report.archived if item.action == "archive" else report.deleted).append(item.session_id)
            continue
        try:
            if item.action == "archive":
                archive_session(store, item.session_id, archive_dir=archive_dir)
                report.archived.append(item.session_id)
            else:
                delete_with_archive(store, item.session_id)
                report.deleted.append(item.session_id)
        except SessionStoreError as exc:
            report.failures.append((item.session_id, str(exc)))
        if on_action is not None:
            on_action(item)
    return report


def delete_with_archive(store: EntryStore, session_id: str) -> None:
    """``delete_session``, and the session's archive file when it had one (after the commit; a crash in
    between leaves an orphan that :func:`archive.reconcile` removes)."""
    from sessionstore.store.archive import archive_info

    info = archive_info(store, session_id)
    store.delete_session(session_id)
    if info is not None:
        with suppress(FileNotFoundError):
            Path(info.file).unlink()


# -- leases: one worker at a time ------------------------------------------------------------------
def take_lease(store: EntryStore, name: str, holder: str, *, ttl_ms: int, now: int | None = None) -> bool:
    """Take (or renew) the lease ``name`` for ``holder`` until ``ttl_ms`` from now, unless another
    holder's has not expired; whether ``holder`` has it. One row, on every database: works across
    workers and hosts."""
    at = now_ms() if now is None else now
    with store.backend.write() as tx:
        tx.run(_LEASE, {"name": name, "holder": holder, "until": at + ttl_ms, "now": at})
        row = tx.run(_LEASE_HOLDER, {"name": name}).fetchone()
    return row is not None and row[0] == holder


def release_lease(store: EntryStore, name: str, holder: str) -> None:
    with store.backend.write() as tx:
        tx.run(_LEASE_RELEASE, {"name": name, "holder": holder})

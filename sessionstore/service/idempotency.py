"""Idempotency records (SPEC 15 "Retries are safe"): the first answer to a request sent with an
``Idempotency-Key``, kept per tenant and key for :data:`WINDOW_MS`, so that a retry gets that answer again
and writes nothing.

A record holds the request's fingerprint (the server's hash of method, path, query and body); the same
key with another fingerprint is :class:`KeyReused`. The server claims a key before it runs the request
(:meth:`IdempotencyRecords.begin` writes a *pending* record, one insert that the key's primary key makes
atomic across workers), then :meth:`~IdempotencyRecords.finish` stores the answer, or
:meth:`~IdempotencyRecords.release` drops the claim (an answer not to keep): a retry racing the first
request finds the claim (:class:`KeyInUse`) instead of running a second time. A claim older than
:data:`ABANDONED_MS` is taken to be a dead server's and may be claimed again. Records older than the window
are ignored, and removed whenever a key is claimed or recorded.

A claim whose end (:meth:`~IdempotencyRecords.finish` or :meth:`~IdempotencyRecords.release`) cannot be
written because the database went away while its request ran is kept by the worker (:class:`Unsettled`)
and written once the database answers again, before the worker's next claim: otherwise a retry of that
request, which ``Retry-After`` invites, would find the key in use for :data:`ABANDONED_MS`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from sessionstore.models.timestamps import now_ms
from sessionstore.service.tokens import _engine
from sessionstore.store import schema

log = logging.getLogger("sessionstore.service")

WINDOW_MS = 24 * 3600 * 1000
"""How long a key's first answer is replayed."""


ABANDONED_MS = 10 * 60 * 1000
"""How old a pending claim may grow before a request with its key may claim it again (its server died)."""

PENDING = 0
"""The status of a record whose request still runs (no HTTP status is 0)."""


class KeyReused(Exception):
    """The key was used (within the window) with a request of another fingerprint."""


class KeyInUse(Exception):
    """A request with the key (and this fingerprint) is running now: its answer is not known yet."""


@dataclass(frozen=True)
class Stored:
    """A recorded answer: its status, the headers to replay (name -> value) and its body."""

    status: int
    headers: dict[str, str]
    body: bytes


class IdempotencyRecords:
    """The records of a store's database (any tenant's store: the tenant is an argument)."""

    def __init__(self, store: Any) -> None:
        self._engine = _engine(store)

    def replay(self, tenant: str, key: str, fingerprint: str, *, now: int | None = None) -> Stored | None:
        """The answer recorded for ``key`` with this ``fingerprint``; ``None`` for a key not seen within
        the window; :class:`KeyReused` for a key seen with another fingerprint; :class:`KeyInUse` while
        its request runs."""
        table = schema.idempotency
        since = (now_ms() if now is None else now) - WINDOW_MS
        with self._engine.connect() as conn:
            row = conn.execute(select(table).where(
                table.c.tenant == tenant, table.c.key == key, table.c.created_ms > since)).first()
        if row is None:
            return None
        if row.fingerprint != fingerprint:
            raise KeyReused(key)
        if row.status == PENDING:
            raise KeyInUse(key)
        return Stored(status=row.status, headers=dict(json.loads(row.headers)), body=bytes(row.body))

    def remember(self, tenant: str, key: str, fingerprint: str, status: int, headers: Mapping[str, str],
                 body: bytes, *, now: int | None = None) -> bool:
        """Record the answer to ``key``'s first request; ``False`` when another request with that key
        was recorded first (that one stays). Records past the window are removed first."""
        table = schema.idempotency
        stamp = now_ms() if now is None else now
        try:
            with self._engine.begin() as conn:
                conn.execute(delete(table).where(table.c.created_ms <= stamp - WINDOW_MS))
                conn.execute(insert(table).values(
                    tenant=tenant, key=key, fingerprint=fingerprint, status=status,
                    headers=json.dumps(dict(headers)), body=bytes(body), created_ms=stamp))
        except IntegrityError:  # (another request with the key was recorded first)
            return False
        return True

    def begin(self, tenant: str, key: str, fingerprint: str, *, now: int | None = None) -> Stored | None:
        """Claim ``key`` for the request of ``fingerprint``: ``None`` when the caller now holds it (run the
        request, then :meth:`finish` or :meth:`release`); the recorded answer when there is one;
        :class:`KeyInUse` while another request holds it; :class:`KeyReused` for another fingerprint."""
        table = schema.idempotency
        stamp = now_ms() if now is None else now
        for _ in range(3):  # (a record removed between the insert and the read: try again)
            try:
                with self._engine.begin() as conn:
                    conn.execute(delete(table).where(table.c.created_ms <= stamp - WINDOW_MS))
                    conn.execute(insert(table).values(
                        tenant=tenant, key=key, fingerprint=fingerprint, status=PENDING, headers="{}", body=b"",
                        created_ms=stamp))
                return None
            except IntegrityError:
                pass
            with self._engine.begin() as conn:
                row = conn.execute(select(table).where(table.c.tenant == tenant, table.c.key == key)).first()
                if row is None:
                    continue
                if row.fingerprint != fingerprint:
                    raise KeyReused(key)
                if row.status != PENDING:
                    return Stored(status=row.status, headers=dict(json.loads(row.headers)), body=bytes(row.body))
                if row.created_ms > stamp - ABANDONED_MS:
                    raise KeyInUse(key)
                taken = conn.execute(update(table).where(
                    table.c.tenant == tenant, table.c.key == key, table.c.status == PENDING,
                    table.c.created_ms == row.created_ms).values(created_ms=stamp))
                if taken.rowcount == 1:
                    return None
                raise KeyInUse(key)
        raise KeyInUse(key)

    def finish(self, tenant: str, key: str, fingerprint: str, status: int, headers: Mapping[str, str],
               body: bytes) -> None:
        """Record the answer to the request that :meth:`begin` let run (its claim becomes the record)."""
        table = schema.idempotency
        with self._engine.begin() as conn:
            conn.execute(update(table).where(
                table.c.tenant == tenant, table.c.key == key, table.c.fingerprint == fingerprint,
                table.c.status == PENDING).values(status=status, headers=json.dumps(dict(headers)), body=bytes(body)))

    def release(self, tenant: str, key: str, fingerprint: str) -> None:
        """Drop the claim :meth:`begin` made, keeping no answer (a retry runs the request again)."""
        table = schema.idempotency
        with self._engine.begin() as conn:
            conn.execute(delete(table).where(
                table.c.tenant == tenant, table.c.key == key, table.c.fingerprint == fingerprint,
                table.c.status == PENDING))


UNSETTLED_MAX = 10_000
"""Most claim ends a worker keeps for later (one per request in flight when the database went away)."""


class Unsettled:
    """The ends of claims (a ``finish`` or a ``release``) that one worker could not write because the
    database was away, oldest first: :meth:`settle` writes them when it answers again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ends: list[Callable[[], None]] = []

    def __bool__(self) -> bool:
        return bool(self._ends)

    def add(self, end: Callable[[], None]) -> None:
        with self._lock:
            if len(self._ends) < UNSETTLED_MAX:  # (beyond: the claim is left to be abandoned)
                self._ends.append(end)

    def settle(self, is_unavailable: Callable[[BaseException], bool]) -> None:
        """Write the kept ends, oldest first; stop at the first that fails because the database is still
        away (``is_unavailable``), keeping it and the rest. Any other failure drops that end (logged)."""
        with self._lock:
            ends, self._ends = self._ends, []
        for index, end in enumerate(ends):
            try:
                end()
            except Exception as exc:
                if is_unavailable(exc):
                    with self._lock:
                        self._ends[:0] = ends[index:]
                    return
                log.warning("an Idempotency-Key's claim could not be ended: %s", type(exc).__name__)

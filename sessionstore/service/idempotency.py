"""Idempotency records (SPEC 15 "Retries are safe"): the first answer to a request sent with an
``Idempotency-Key``, kept per tenant and key for :data:`WINDOW_MS`, so that a retry gets that answer again
and writes nothing.

A record holds the request's fingerprint (the server's hash of method, path, query and body); the same
key with another fingerprint is :class:`KeyReused`. Before it runs the request the server claims its key
(:meth:`IdempotencyRecords.claim`): the claim is a record without an answer (status :data:`PENDING`), written
by one insert, so of two requests racing with one new key on any workers or hosts of the database
exactly one holds it and runs; the other waits for the answer and replays it. The holder then
remembers its answer (:meth:`~IdempotencyRecords.remember`) or releases the key (:meth:`~IdempotencyRecords.release`:
an answer not worth keeping: the next request with the key runs again). A claim older than
:data:`CLAIM_EXPIRES_MS` was left by a worker that died and is taken over. Records older than the window
are ignored, and removed whenever a record is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from sessionstore.models.timestamps import now_ms
from sessionstore.service.tokens import _engine
from sessionstore.store import schema

WINDOW_MS = 24 * 3600 * 1000
"""How long a key's first answer is replayed."""
PENDING = 0
"""The status of a claimed key's record until its answer is remembered."""
CLAIM_EXPIRES_MS = 10 * 60 * 1000
"""How long a claim without an answer holds its key (its request is taken to have died after that)."""


class KeyReused(Exception):
    """The key was used (within the window) with a request of another fingerprint."""


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
        the window; :class:`KeyReused` for a key seen with another fingerprint."""
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
            return None
        return Stored(status=row.status, headers=dict(json.loads(row.headers)), body=bytes(row.body))

    def claim(self, tenant: str, key: str, fingerprint: str, *, now: int | None = None) -> Stored | bool:
        """Take ``key`` for a request of this ``fingerprint``: ``True`` when the caller now holds it (it runs
        the request, then calls :meth:`remember` or :meth:`release`), ``False`` when another request holds
        it (claim again later), or the answer to replay. :class:`KeyReused` for another fingerprint."""
        table = schema.idempotency
        stamp = now_ms() if now is None else now
        try:
            with self._engine.begin() as conn:
                conn.execute(delete(table).where(table.c.created_ms <= stamp - WINDOW_MS))
                conn.execute(delete(table).where(
                    table.c.tenant == tenant, table.c.key == key, table.c.status == PENDING,
                    table.c.created_ms <= stamp - CLAIM_EXPIRES_MS))
                conn.execute(insert(table).values(
                    tenant=tenant, key=key, fingerprint=fingerprint, status=PENDING, headers="{}", body=b"",
                    created_ms=stamp))
            return True
        except IntegrityError:  # (the key has a record: an answer, or another request's claim)
            pass
        with self._engine.connect() as conn:
            row = conn.execute(select(table).where(table.c.tenant == tenant, table.c.key == key)).first()
        if row is None:  # (released in between)
            return False
        if row.fingerprint != fingerprint:
            raise KeyReused(key)
        if row.status == PENDING:
            return False
        return Stored(status=row.status, headers=dict(json.loads(row.headers)), body=bytes(row.body))

    def release(self, tenant: str, key: str, fingerprint: str) -> None:
        """Give up the claim of ``key`` (no answer is kept: the next request with the key runs)."""
        table = schema.idempotency
        with self._engine.begin() as conn:
            conn.execute(delete(table).where(table.c.tenant == tenant, table.c.key == key,
                                             table.c.fingerprint == fingerprint, table.c.status == PENDING))

    def remember(self, tenant: str, key: str, fingerprint: str, status: int, headers: Mapping[str, str],
                 body: bytes, *, now: int | None = None) -> bool:
        """Record the answer to ``key``'s first request (filling its claim); ``False`` when another
        request with that key was recorded first (that one stays). Records past the window are removed first."""
        table = schema.idempotency
        stamp = now_ms() if now is None else now
        with self._engine.begin() as conn:
            filled = conn.execute(update(table).where(
                table.c.tenant == tenant, table.c.key == key, table.c.fingerprint == fingerprint,
                table.c.status == PENDING).values(status=status, headers=json.dumps(dict(headers)), body=bytes(body)))
        if filled.rowcount:
            return True
        try:
            with self._engine.begin() as conn:
                conn.execute(delete(table).where(table.c.created_ms <= stamp - WINDOW_MS))
                conn.execute(insert(table).values(
                    tenant=tenant, key=key, fingerprint=fingerprint, status=status,
                    headers=json.dumps(dict(headers)), body=bytes(body), created_ms=stamp))
        except IntegrityError:  # (another request with the key was recorded first)
            return False
        return True

"""Idempotency records (SPEC 15 "Retries are safe"): the first answer to a request sent with an
``Idempotency-Key``, kept per tenant and key for :data:`WINDOW_MS`, so that a retry gets that answer again
and writes nothing.

A record holds the request's fingerprint (the server's hash of method, path, query and body); the same
key with another fingerprint is :class:`KeyReused`. Two requests racing with one new key both run (each
found no record); the first to :meth:`IdempotencyRecords.remember` is kept and the second's answer is not
recorded (no error): a later retry replays the first. Records older than the window are ignored, and
removed whenever a record is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.exc import IntegrityError

from sessionstore.models.timestamps import now_ms
from sessionstore.service.tokens import _engine
from sessionstore.store import schema

WINDOW_MS = 24 * 3600 * 1000
"""How long a key's first answer is replayed."""


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

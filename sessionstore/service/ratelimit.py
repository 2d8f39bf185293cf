"""Rate limits (SPEC 15 ``RATE_LIMITED``): at most ``requests`` authenticated requests per tenant in each
fixed window of ``window_s`` seconds, counted in the database (``sessionstore_rate_windows``), so that
the limit holds across every worker and every host on it. Off unless ``serve --rate-limit`` sets one.

A request is counted by one upsert (insert the tenant's row of the current window, or add one to it) that
returns the new count; over the limit the request is refused with :class:`RateLimited` (429 with
``Retry-After``, the seconds until the window ends) and still counted, so a client that keeps sending
stays refused until the window ends. A tenant's count never includes another tenant's requests. The
first request of a window removes the tenant's earlier windows. Windows are aligned to the epoch on each
host's clock (the hosts' clocks are assumed to agree to well under a window).
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import delete
from sqlalchemy.dialects import postgresql, sqlite

from sessionstore.errors import SessionStoreError
from sessionstore.models.timestamps import now_ms
from sessionstore.service.config import RateLimit
from sessionstore.service.tokens import _engine
from sessionstore.store import schema


class RateLimited(SessionStoreError):
    """The tenant used its requests of the current window: retry after ``retry_after`` seconds."""

    code = "RATE_LIMITED"

    def __init__(self, limit: RateLimit, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(f"over the rate limit of {limit} requests per tenant: retry in {retry_after} s")


class RateLimiter:
    """The counters of a store's database (any tenant's store: the tenant is an argument)."""

    def __init__(self, store: Any, limit: RateLimit) -> None:
        self._engine = _engine(store)
        self.limit = limit
        self._postgres = self._engine.dialect.name == "postgresql"
        dialect = postgresql if self._postgres else sqlite
        table = schema.rate_windows
        upsert = dialect.insert(table)
        self._count = upsert.on_conflict_do_update(
            index_elements=[table.c.tenant, table.c.window_ms], set_={"requests": table.c.requests + 1},
        ).returning(table.c.requests)

    def hit(self, tenant: str, *, now: int | None = None) -> int:
        """Count one request of ``tenant``: its count in the current window, or :class:`RateLimited`
        when that is over the limit."""
        stamp = now_ms() if now is None else now
        window_ms = self.limit.window_s * 1000
        start = stamp - stamp % window_ms
        table = schema.rate_windows
        with self._engine.begin() as conn:
            if self._postgres:  # (a count lost in a crash costs nothing: the commit need not wait for the disk)
                conn.exec_driver_sql("SET LOCAL synchronous_commit TO OFF")
            count = int(conn.execute(self._count, {"tenant": tenant, "window_ms": start, "requests": 1}).scalar_one())
            if count == 1:
                conn.execute(delete(table).where(table.c.tenant == tenant, table.c.window_ms < start))
        if count > self.limit.requests:
            raise RateLimited(self.limit, max(1, math.ceil((start + window_ms - stamp) / 1000)))
        return count

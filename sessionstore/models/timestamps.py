"""ISO 8601 entry timestamps to Unix milliseconds, as JavaScript's ``Date.parse`` reads pi's strings."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from functools import lru_cache

from sessionstore.models.js import date_parse


def iso_to_ms(value: object) -> int | None:
    """Unix ms of a timestamp string as JavaScript's ``Date.parse`` reads it (see
    :func:`sessionstore.models.js.date_parse`), or ``None`` where it gives NaN or ``value`` is no string."""
    if not isinstance(value, str) or not value:
        return None
    return _parse(value)


_parse = lru_cache(maxsize=4096)(date_parse)


def now_ms() -> int:
    """The current time as JavaScript's ``Date.now()`` gives it (epoch milliseconds)."""
    return time.time_ns() // 1_000_000


def now_iso() -> str:
    """The current time as JavaScript's ``new Date().toISOString()`` writes it."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"  # "+00:00" -> "Z"

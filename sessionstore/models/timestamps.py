"""ISO 8601 entry timestamps to Unix milliseconds, as JavaScript's ``Date.parse`` reads pi's strings."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache


def iso_to_ms(value: object) -> int | None:
    """Unix ms of an ISO 8601 timestamp, or ``None`` where ``Date.parse`` gives NaN.

    A timestamp without a zone is read as UTC (pi always writes ``toISOString()``, which ends in ``Z``).
    """
    if not isinstance(value, str) or not value:
        return None
    return _iso_to_ms(value)


@lru_cache(maxsize=4096)
def _iso_to_ms(value: str) -> int | None:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    delta = parsed - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def now_iso() -> str:
    """The current time as JavaScript's ``new Date().toISOString()`` writes it."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"  # "+00:00" -> "Z"

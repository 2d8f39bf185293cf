"""What a running service is configured with: the database, authentication, CORS and the request limits.

Workers started by uvicorn (``--workers N``) import the application afresh; the configuration reaches them
through the environment (:meth:`ServiceConfig.to_env` / :meth:`ServiceConfig.from_env`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from sessionstore.errors import InvalidInputError
from sessionstore.models.frozen import MAX_JSON_DEPTH

ENV_VAR = "SESSIONSTORE_SERVICE_CONFIG"
"""The environment variable holding the JSON configuration for workers."""

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Request limits. Bodies over ``max_body`` (``max_import_body`` for imports) bytes are 413. A body
    must arrive within ``body_timeout`` seconds, extended by one second for every ``body_min_rate`` bytes
    received (Apache mod_reqtimeout's rule), and never stall ``body_timeout`` seconds between two chunks;
    else it is dropped (408). An append takes at most ``max_entries`` entries; JSON may nest
    ``max_nesting`` levels deep (the library's rule). An event
    stream sends a comment every ``feed_heartbeat`` seconds when it has nothing else to send; a
    subscriber more than ``feed_queue`` events (or ``feed_queue_bytes`` bytes) behind is cut off, with a
    last event telling it to resume, and one that takes nothing for ``feed_cut_grace`` seconds is
    disconnected."""

    max_body: int = 16 * MIB
    max_import_body: int = 64 * MIB
    max_entries: int = 1000
    max_nesting: int = MAX_JSON_DEPTH
    body_timeout: float = 30.0
    body_min_rate: int = 500
    feed_heartbeat: float = 15.0
    feed_queue: int = 1000
    feed_queue_bytes: int = 8 * MIB
    feed_cut_grace: float = 30.0


UNITS = {"s": 1, "sec": 1, "second": 1, "min": 60, "minute": 60, "h": 3600, "hour": 3600}
"""The window lengths ``--rate-limit N/UNIT`` takes, in seconds."""
_SPEC = re.compile(r"\s*(\d+)\s*/\s*([a-z]+)\s*")


@dataclass(frozen=True)
class RateLimit:
    """``requests`` per window of ``window_s`` seconds, per tenant."""

    requests: int
    window_s: int

    @classmethod
    def parse(cls, text: str) -> RateLimit:
        """``N/s``, ``N/min`` or ``N/h`` (also ``second``, ``minute``, ``hour``); N at least 1."""
        match = _SPEC.fullmatch(text.lower())
        if match is None or match.group(2) not in UNITS or int(match.group(1)) < 1:
            raise InvalidInputError(f"bad rate limit {text!r}: give N/s, N/min or N/h with N >= 1")
        return cls(int(match.group(1)), UNITS[match.group(2)])

    def __str__(self) -> str:
        unit = {1: "s", 60: "min", 3600: "h"}.get(self.window_s, f"{self.window_s}s")
        return f"{self.requests}/{unit}"


@dataclass(frozen=True)
class ServiceConfig:
    """``url``: the database (None: the library's default). ``no_auth``: every request is tenant
    ``default`` with scope admin (loopback binds only, checked by ``serve``). ``cors_origins``: the origins
    CORS allows (none: CORS off). ``token_cache``: seconds a verified token is trusted without a lookup
    (a revocation takes effect within them; 0: every request is looked up). ``metrics_public``: ``/metrics``
    answers without a token (else it needs an ``admin`` one). ``rate_limit``: each tenant's request
    budget (None: no limit; :mod:`sessionstore.service.ratelimit`)."""

    url: str | None
    no_auth: bool = False
    limits: Limits = field(default_factory=Limits)
    cors_origins: tuple[str, ...] = ()
    token_cache: float = 1.0
    metrics_public: bool = False
    rate_limit: RateLimit | None = None
    retention_interval: float = 3600.0
    """Seconds between the scheduled retention runs (``service.retention_task``; 0: none)."""
    archive_dir: str | None = None
    """Where archive files go (None: ``store.archive.default_archive_dir`` of the database)."""
    regex_timeout: float = 10.0
    """Seconds a ``re:`` search may run, in a child process (``service.regex_search``; 0: in the worker,
    unbounded)."""

    def to_env(self) -> dict[str, str]:
        """The environment a worker process needs to rebuild this configuration."""
        return {ENV_VAR: json.dumps(asdict(self))}

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ServiceConfig:
        """The configuration :meth:`to_env` wrote; a missing variable gives the defaults."""
        env = os.environ if environ is None else environ
        text = env.get(ENV_VAR)
        if not text:
            return cls(url=None)
        data: dict[str, Any] = json.loads(text)
        return cls(
            url=data.get("url"),
            no_auth=bool(data.get("no_auth", False)),
            limits=Limits(**data.get("limits", {})),
            cors_origins=tuple(data.get("cors_origins", ())),
            token_cache=float(data.get("token_cache", 1.0)),
            metrics_public=bool(data.get("metrics_public", False)),
            rate_limit=RateLimit(**data["rate_limit"]) if data.get("rate_limit") else None,
            retention_interval=float(data.get("retention_interval", 3600.0)),
            archive_dir=data.get("archive_dir"),
            regex_timeout=float(data.get("regex_timeout", 10.0)),
        )

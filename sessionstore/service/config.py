"""What a running service is configured with: the database, authentication, CORS and the request limits.

Workers started by uvicorn (``--workers N``) import the application afresh; the configuration reaches them
through the environment (:meth:`ServiceConfig.to_env` / :meth:`ServiceConfig.from_env`).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from sessionstore.models.frozen import MAX_JSON_DEPTH

ENV_VAR = "SESSIONSTORE_SERVICE_CONFIG"
"""The environment variable holding the JSON configuration for workers."""

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Request limits. Bodies over ``max_body`` (``max_import_body`` for imports) bytes are 413; a body
    arriving slower than one chunk per ``body_timeout`` seconds is dropped (408); an append takes at most
    ``max_entries`` entries; JSON may nest ``max_nesting`` levels deep (the library's rule). An event
    stream sends a comment every ``feed_heartbeat`` seconds when it has nothing else to send; a
    subscriber more than ``feed_queue`` events (or ``feed_queue_bytes`` bytes) behind is cut off, with a
    last event telling it to resume, and one that takes nothing for ``feed_cut_grace`` seconds is
    disconnected."""

    max_body: int = 16 * MIB
    max_import_body: int = 64 * MIB
    max_entries: int = 1000
    max_nesting: int = MAX_JSON_DEPTH
    body_timeout: float = 30.0
    feed_heartbeat: float = 15.0
    feed_queue: int = 1000
    feed_queue_bytes: int = 8 * MIB
    feed_cut_grace: float = 30.0


@dataclass(frozen=True)
class ServiceConfig:
    """``url``: the database (None: the library's default). ``no_auth``: every request is tenant
    ``default`` with scope admin (loopback binds only, checked by ``serve``). ``cors_origins``: the origins
    CORS allows (none: CORS off)."""

    url: str | None
    no_auth: bool = False
    limits: Limits = field(default_factory=Limits)
    cors_origins: tuple[str, ...] = ()

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
        )

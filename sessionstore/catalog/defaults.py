"""The catalog's user-facing defaults and choices (search order and hits, pi's sessions directory,
the sync poll interval), apart from the modules that run them: the CLI's options name these when
it starts, before any of the catalog is needed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

SortOrder = Literal["relevance", "recent"]
SORT_ORDERS: tuple[SortOrder, ...] = ("relevance", "recent")
HITS_PER_SESSION = 3
"""Matching entries a search result lists by default."""
DEFAULT_INTERVAL = 2.0
"""Seconds between two scans of ``sync --watch``."""
ENV_AGENT_DIR = "PI_CODING_AGENT_DIR"


def default_sessions_dir() -> Path:
    """pi's sessions root: ``$PI_CODING_AGENT_DIR/sessions`` (``~`` expanded), else ``~/.pi/agent/sessions``."""
    agent = os.environ.get(ENV_AGENT_DIR)
    base = Path(agent).expanduser() if agent else Path.home() / ".pi" / "agent"
    return base / "sessions"

"""Where the database is when no URL is given: ``$SESSIONSTORE_DB``, else a SQLite file in the
user's data directory. Cheap to import (no SQLAlchemy): the CLI's help names these."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir

ENV_URL = "SESSIONSTORE_DB"


def default_db_path() -> Path:
    return Path(user_data_dir("sessionstore", appauthor=False)) / "sessions.db"


def default_url() -> str:
    """``$SESSIONSTORE_DB`` if set, else a SQLite file in the user's data directory."""
    return os.environ.get(ENV_URL) or f"sqlite:///{default_db_path()}"

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


def database_url(given: str) -> str:
    """The URL of a database as a user names it: a URL as it is (``postgres://`` read as
    ``postgresql://``, as libpq and Heroku write it), and what reads as a file's path (``./x.db``,
    ``~/x.db``, ``/abs/x.db``, ``dir/x.db``, ``x.db``: a folder, a leading ``.`` or ``~``, a suffix,
    or an existing file) the URL of that SQLite file, made absolute, as sqlite-utils and llm take a
    path. Anything else is given back, for the URL parser to refuse with its own words."""
    if given.startswith("postgres://"):
        return "postgresql://" + given[len("postgres://"):]
    if "://" in given or given.startswith("sqlite:"):
        return given
    path = Path(given)
    if given.startswith((".", "~")) or os.sep in given or path.suffix or path.is_file():
        return "sqlite:///" + os.path.abspath(os.path.expanduser(given))
    return given

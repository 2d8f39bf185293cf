"""An existing SQLite file at the current schema is opened with sqlite3 itself (store/sqlite_file.py):
the same connection settings as SQLAlchemy's engine gives, the same results, and every other case
(a new file, an older schema, a URL with options, a file that is not a sessionstore database) takes
SQLAlchemy's path as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sessionstore.api import SessionStore
from sessionstore.errors import SchemaTooNewError
from sessionstore.store.sqlite_file import SqliteFile, plain_path
from tests.builders import user


def settings(store: SessionStore) -> tuple[str, int, int, int]:
    with store._entries.backend.read() as tx:
        values = [tx.cursor.execute(f"PRAGMA {name}").fetchone()[0]
                  for name in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")]
        return values[0], values[1], values[2], values[3]


def opened_directly(store: SessionStore) -> bool:
    return isinstance(getattr(store._entries.backend.shared, "engine", None), SqliteFile)


@pytest.mark.parametrize(("durability", "synchronous"), [("full", 2), ("normal", 1)])
def test_a_current_file_opens_without_sqlalchemy_with_the_same_settings(tmp_path: Path, durability: str,
                                                                        synchronous: int) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    with SessionStore(url, durability=durability) as new:  # type: ignore[arg-type]
        assert not opened_directly(new)  # created (and migrated) through SQLAlchemy
        sid = new.create_session(cwd="/w")
        new.append_message(sid, user("hi"))
        by_engine = settings(new)
        entries = new.entries(sid)
    with SessionStore(url, durability=durability) as again:  # type: ignore[arg-type]
        assert opened_directly(again)
        assert settings(again) == by_engine == ("wal", synchronous, 1, 60000)
        assert again.entries(sid) == entries
        again.append_message(sid, user("again"))
        assert len(again.entries(sid)) == 2
        assert again.database == url  # (SQLAlchemy's engine is made when something asks for it)


def test_other_files_and_urls_take_sqlalchemys_path(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    with SessionStore(url) as store:
        store.create_session(cwd="/w")
    with SessionStore(url + "?timeout=5") as with_options:
        assert not opened_directly(with_options) and len(with_options.list_sessions()) == 1
    with sqlite3.connect(tmp_path / "s.db") as conn:  # as if a newer version had written it
        conn.execute("UPDATE sessionstore_alembic_version SET version_num = '9999'")
    conn.close()
    with pytest.raises(SchemaTooNewError):  # what SQLAlchemy's path says of it, as before
        SessionStore(url)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    with SessionStore(f"sqlite:///{other}") as foreign:
        assert not opened_directly(foreign)


def test_plain_paths_are_the_ones_sqlalchemy_reads_the_same_way() -> None:
    from sqlalchemy.engine import make_url

    for url in ["sqlite:///rel.db", "sqlite:////abs/x.db", "sqlite:///a b/c.db", "sqlite:////x/y.db.bak"]:
        assert plain_path(url) == make_url(url).database, url
    for url in ["sqlite://", "sqlite:///", "sqlite:///:memory:", "sqlite:///file:x?mode=ro&uri=true",
                "sqlite:///x.db?timeout=1", "sqlite:///a%20b.db", "sqlite:///~/x.db", "postgresql://h/db",
                "sqlite+pysqlite:///x.db"]:
        assert plain_path(url) is None, url

"""The substitution the SDK's own session tests run under: ``SQLiteSession``, ``AsyncSQLiteSession`` and
``SQLAlchemySession`` (the names the copied tests import from here instead of ``agents``) make a
:class:`~sessionstore.openai_agents.SessionStoreSession` over the store of the backend the test runs
on (``conftest.py``: SQLite or PostgreSQL, through ``SessionStore`` or ``AsyncSessionStore``).

Where the SDK's session keeps its data (a ``db_path``, a URL, an engine) names one database of the
test here: sessions made with the same place share it, each ``:memory:`` one has its own, as in the
SDK. ``close()`` does nothing (``SessionStoreSession`` has none: its store is the caller's); the stores
are closed when the test ends."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sessionstore import AsyncSessionStore, SessionStore
from sessionstore.openai_agents import SessionStoreSession

_MEMORY = itertools.count()


class Databases:
    """The databases (and their stores) of one test, by the place the SDK's session names."""

    def __init__(self, backend: str, asynchronous: bool, new_url: Callable[[str], str]) -> None:
        self.backend = backend
        self.asynchronous = asynchronous
        self._new_url = new_url
        self.stores: dict[str, AsyncSessionStore | SessionStore] = {}
        self._lock = threading.Lock()  # (sessions are made from several threads in some tests)

    def store(self, place: str) -> AsyncSessionStore | SessionStore:
        if place.endswith(":memory:"):
            place = f"{place}#{next(_MEMORY)}"
        with self._lock:
            if place not in self.stores:
                url = self._new_url(place)
                self.stores[place] = AsyncSessionStore(url) if self.asynchronous else SessionStore(url)
            return self.stores[place]


CURRENT: list[Databases] = []
"""The running test's databases (set by ``conftest.py``'s ``substituted_backend`` fixture)."""


def _store(place: str) -> AsyncSessionStore | SessionStore:
    if not CURRENT:
        raise RuntimeError("the substituted sessions need tests/agents_sdk/conftest.py's backend fixture")
    return CURRENT[-1].store(place)


def _file(db_path: str | Path) -> str:
    return ":memory:" if str(db_path) == ":memory:" else f"file:{Path(db_path).expanduser().resolve()}"


class _Substituted(SessionStoreSession):
    """A ``SessionStoreSession`` on the store of the database ``place`` names."""

    def __init__(self, session_id: str, place: str, *, session_settings: Any = None) -> None:
        super().__init__(session_id, _store(place), cwd="/agents-sdk-tests", session_settings=session_settings)


class SQLiteSession(_Substituted):
    """In place of ``agents.SQLiteSession(session_id, db_path=":memory:", ..., session_settings=None)``."""

    def __init__(self, session_id: str, db_path: str | Path = ":memory:", sessions_table: str = "agent_sessions",
                 messages_table: str = "agent_messages", session_settings: Any = None) -> None:
        super().__init__(session_id, _file(db_path), session_settings=session_settings)
        self.db_path = db_path
        self.sessions_table = sessions_table
        self.messages_table = messages_table

    def close(self) -> None:
        """Nothing to end: the store is the test's (closed when it ends)."""


class AsyncSQLiteSession(SQLiteSession):
    """In place of ``agents.extensions.memory.AsyncSQLiteSession`` (its ``close`` is awaited)."""

    async def close(self) -> None:  # type: ignore[override]
        """Nothing to end (as ``SQLiteSession.close``), awaited."""


class _Engine:
    """What ``SQLAlchemySession.from_url`` sessions give as ``engine``: the SDK's tests dispose of it."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def dispose(self) -> None:
        return None


class SQLAlchemySession(_Substituted):
    """In place of ``agents.extensions.memory.sqlalchemy_session.SQLAlchemySession``: ``from_url(session_id,
    url=...)`` or ``SQLAlchemySession(session_id, engine=...)`` (the engine's URL names the database)."""

    def __init__(self, session_id: str, *, engine: Any, create_tables: bool = False,
                 sessions_table: str = "agent_sessions", messages_table: str = "agent_messages",
                 session_settings: Any = None, ensure_ascii: bool = True) -> None:
        url = str(getattr(engine, "url", engine))
        super().__init__(session_id, url, session_settings=session_settings)
        self._engine = engine
        self.sessions_table = sessions_table
        self.messages_table = messages_table

    @classmethod
    def from_url(cls, session_id: str, *, url: str, engine_kwargs: dict[str, Any] | None = None,
                 session_settings: Any = None, **kwargs: Any) -> SQLAlchemySession:
        return cls(session_id, engine=_Engine(url), session_settings=session_settings, **kwargs)

    @property
    def engine(self) -> Any:
        return self._engine

"""The live-session contract tests (``test_live_sessions``, ``test_pi16_writes``) run again through
:class:`~sessionstore.aio.AsyncSessionStore`, on both backends: their ``store`` is the async store behind a
blocking facade that runs each awaited call on an event loop of its own, so every rule they check
(appends, leaf conflicts, branches, forks, labels, compaction, import, export, listing, errors' types)
holds through the async API too, with no test written twice."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from sessionstore.aio import AsyncSessionStore
from tests.contract import test_live_sessions, test_pi16_writes
from tests.contract.test_live_sessions import sid  # noqa: F401 (a fixture, on this module's store)


class BlockingFacade:
    """A ``SessionStore``-shaped object whose methods run the async store's coroutines to their end."""

    def __init__(self, url: str) -> None:
        self._runner = asyncio.Runner()
        self.aio = AsyncSessionStore(url)
        self._runner.run(self.aio.open())

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.aio, name)
        if not inspect.iscoroutinefunction(attribute):
            return attribute

        def blocking(*args: Any, **kwargs: Any) -> Any:
            return self._runner.run(attribute(*args, **kwargs))

        return blocking

    def close(self) -> None:
        self._runner.run(self.aio.close())
        self._runner.close()

    def __enter__(self) -> BlockingFacade:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture
def store(db_url: str) -> Iterator[BlockingFacade]:
    with BlockingFacade(db_url) as opened:
        yield opened


def _tests_on_the_store(module: ModuleType) -> dict[str, Callable[..., Any]]:
    """The module's tests that take the ``store`` fixture (the others do not use the API under test)."""
    return {name: test for name, test in vars(module).items()
            if name.startswith("test_") and callable(test) and "store" in inspect.signature(test).parameters}


LIVE = _tests_on_the_store(test_live_sessions)
PI16 = _tests_on_the_store(test_pi16_writes)
globals().update({f"{name}_async": test for name, test in {**LIVE, **PI16}.items()})


def test_the_contract_tests_reused_here_are_most_of_the_live_session_tests() -> None:
    assert len(LIVE) >= 30 and len(PI16) >= 14, (len(LIVE), len(PI16))

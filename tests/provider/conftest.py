"""Every provider test runs offline, and leaves no task or exception behind for asyncio to report."""

from __future__ import annotations

import gc
import http.client
import logging
import socket
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest


class NetworkAccessError(AssertionError):
    """Raised by the guards below; a provider test reaching the network is a bug."""


class OfflineSocket(socket.socket):
    """``socket.socket`` that refuses to open a socket.

    Wrapping an already open descriptor stays allowed: ``socket.socketpair()`` does that for the
    event loop's internal self-pipe (an AF_UNIX pair inside this process, not a network connection).
    """

    def __init__(self, family: Any = -1, type: Any = -1, proto: Any = -1, fileno: Any = None) -> None:
        if fileno is None:
            raise NetworkAccessError("provider tests must not open sockets")
        super().__init__(family, type, proto, fileno)


def _refuse(*args: object, **kwargs: object) -> Any:
    raise NetworkAccessError("provider tests must not touch the network")


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "socket", OfflineSocket)
    monkeypatch.setattr(socket, "create_connection", _refuse)
    monkeypatch.setattr(urllib.request, "urlopen", _refuse)
    monkeypatch.setattr(http.client, "HTTPConnection", _refuse)


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture(autouse=True)
def asyncio_reports_nothing() -> Iterator[None]:
    """Fail a test after which asyncio logs an error.

    Such reports ("Task was destroyed but it is pending!", "Task exception was never retrieved")
    are logged, not warned, so ``filterwarnings = error`` alone would not catch them. This fixture
    is set up before the event loop and torn down after it, and collects garbage first, so tasks
    leaked by the test are reported here.
    """
    collector = _Collector()
    logger = logging.getLogger("asyncio")
    logger.addHandler(collector)
    try:
        yield
        gc.collect(1)
    finally:
        logger.removeHandler(collector)
    assert not collector.messages, collector.messages

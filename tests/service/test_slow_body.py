"""A body trickled in is dropped by the minimum-rate rule (``--body-timeout`` extended by one second per
``--body-min-rate`` bytes) with a 408 and a closed connection, while other clients are answered; a body
sent at a normal speed, small or large, is not affected. Over TCP against a real ``sessionstore serve``."""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from sessionstore.service.config import Limits, ServiceConfig
from tests.paths import PI_FILES
from tests.service.conftest import Server, StartServer

TIMEOUT_S = 2.0
MIN_RATE = 100
TRICKLE_GAP_S = 0.25
PROMPT_S = 1.0
"""How long another client's request may take while the slow ones trickle (it is ~10 ms unloaded)."""
SLACK_S = 2.5
"""For a loaded machine: the 408 comes at most this long after the rule's deadline."""

JSON = {"Content-Type": "application/json"}


def message(text: str) -> dict[str, object]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


@pytest.fixture(scope="module")
def slow_limits(tmp_path_factory: pytest.TempPathFactory, start_server: StartServer) -> Server:
    db = tmp_path_factory.mktemp("slow") / "slow.db"
    return start_server(f"sqlite:///{db}", "--no-auth", "--body-timeout", str(TIMEOUT_S),
                        "--body-min-rate", str(MIN_RATE))


@pytest.fixture(scope="module")
def http(slow_limits: Server) -> Iterator[httpx.Client]:
    with slow_limits.client() as client:
        yield client


def port_of(server: Server) -> int:
    return int(server.base_url.rsplit(":", 1)[1])


def open_trickle(server: Server, target: str, content_type: str, length: int) -> socket.socket:
    """A connection that has sent a request's head announcing ``length`` body bytes, and no body yet."""
    sock = socket.create_connection(("127.0.0.1", port_of(server)))
    sock.sendall(f"POST {target} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n"
                 f"Content-Length: {length}\r\n\r\n".encode())
    return sock


def read_to_close(sock: socket.socket, timeout: float) -> bytes:
    """Everything the server sends until it closes the connection (an AssertionError if it does not)."""
    sock.settimeout(timeout)
    answered = b""
    try:
        while chunk := sock.recv(65536):
            answered += chunk
    except TimeoutError:
        raise AssertionError(f"the server kept the connection open after {answered[:200]!r}") from None
    return answered


def parse(answer: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def timed(call: Callable[..., httpx.Response], *args: object, **kwargs: object) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = call(*args, **kwargs)
    return response, time.monotonic() - started


@pytest.mark.slow
def test_a_trickled_body_is_dropped_without_blocking_other_requests(slow_limits: Server, http: httpx.Client) -> None:
    assert http.post("/v1/sessions", json={"id": "trickled", "cwd": "/w"}).status_code == 201
    assert http.post("/v1/sessions", json={"id": "other", "cwd": "/w"}).status_code == 201
    slow = {  # an append and an import (whose body a worker thread reads), each announcing 10000 bytes
        "append": open_trickle(slow_limits, "/v1/sessions/trickled/entries", "application/json", 10_000),
        "import": open_trickle(slow_limits, "/v1/imports", "application/jsonl", 10_000),
    }
    started = time.monotonic()
    answered: dict[str, tuple[bytes, float]] = {}
    sent = 0
    others: list[float] = []
    while len(answered) < len(slow) and time.monotonic() - started < TIMEOUT_S + 10:
        for name, sock in slow.items():
            if name not in answered:
                sock.sendall(b" ")
        sent += 1
        listed, took = timed(http.get, "/v1/sessions")
        assert listed.status_code == 200
        others.append(took)
        appended, took = timed(http.post, "/v1/sessions/other/entries", json=message(f"meanwhile {sent}"))
        assert appended.status_code == 201, appended.text
        others.append(took)
        waiting = [sock for name, sock in slow.items() if name not in answered]
        readable, _, _ = select.select(waiting, [], [], TRICKLE_GAP_S)
        for name, sock in slow.items():
            if sock in readable:
                answered[name] = (read_to_close(sock, 5.0), time.monotonic() - started)
    for sock in slow.values():
        sock.close()
    assert set(answered) == set(slow), f"no answer after {sent} bytes"
    # the rule's deadline: the initial timeout plus one second per MIN_RATE bytes received
    deadline = TIMEOUT_S + sent / MIN_RATE
    for name, (answer, after) in answered.items():
        status, headers, body = parse(answer)
        assert status == 408, (name, answer[:300])
        assert headers["connection"] == "close" and headers["content-type"] == "application/problem+json"
        problem = json.loads(body)
        assert problem["code"] == "REQUEST_TIMEOUT" and "100 bytes a second" in problem["detail"], problem
        assert TIMEOUT_S * 0.9 <= after <= deadline + SLACK_S, (name, after)
    assert max(others) < PROMPT_S, others  # (each of the other client's requests, while the two trickled)
    assert len(others) >= 2 * int(TIMEOUT_S / TRICKLE_GAP_S) - 2
    # nothing of the dropped requests was written; the other client's appends all were
    assert http.get("/v1/sessions/trickled/entries").content == b""
    assert len(http.get("/v1/sessions/other/entries").content.splitlines()) == len(others) // 2


@pytest.mark.slow
def test_a_steady_body_may_take_longer_than_the_initial_timeout(slow_limits: Server, http: httpx.Client) -> None:
    """400 bytes a second for 2.5 s: over ``--body-timeout`` but above the minimum rate, so it is served."""
    assert http.post("/v1/sessions", json={"id": "steady", "cwd": "/w"}).status_code == 201
    body = json.dumps(message("steady")).encode().ljust(1000)
    sock = open_trickle(slow_limits, "/v1/sessions/steady/entries", "application/json", len(body))
    started = time.monotonic()
    for start in range(0, len(body), 100):
        sock.sendall(body[start:start + 100])
        time.sleep(TRICKLE_GAP_S)
    assert time.monotonic() - started > TIMEOUT_S
    sock.shutdown(socket.SHUT_WR)  # (the server answers, then closes on the client's end of input)
    status, _, answer = parse(read_to_close(sock, 10.0))
    sock.close()
    assert status == 201, answer


def test_a_refusal_before_the_body_is_read_closes_the_connection(slow_limits: Server) -> None:
    """A 415 (the route never reads the body) ends the connection: else the server would go on reading,
    at the client's pace, a body nobody reads, and hold the connection as long as the client trickles."""
    sock = open_trickle(slow_limits, "/v1/sessions/trickled/entries", "text/plain", 10_000)
    sock.sendall(b"{")
    started = time.monotonic()
    status, headers, _ = parse(read_to_close(sock, 10.0))
    sock.close()
    assert time.monotonic() - started < TIMEOUT_S  # (at once: not the keep-alive timeout, nor the body's)
    assert status == 415 and headers.get("connection") == "close"


def test_a_large_body_at_a_normal_speed_is_not_affected(slow_limits: Server, http: httpx.Client,
                                                        tmp_path: Path) -> None:
    """A 2.4 MB import (streamed) and a 3 MB append with the same small limits: both succeed."""
    source = PI_FILES["before-compaction"]

    def chunks() -> Iterator[bytes]:
        with source.open("rb") as fp:
            while chunk := fp.read(64 * 1024):
                yield chunk

    imported = http.post("/v1/imports", content=chunks(), headers={"Content-Type": "application/jsonl"})
    assert imported.status_code == 201, imported.text
    stored = http.get(f"/v1/sessions/{imported.json()['sessionId']}/entries").content
    assert imported.json()["entries"] == len(stored.splitlines()) > 900
    assert http.post("/v1/sessions", json={"id": "large", "cwd": "/w"}).status_code == 201
    batch = [message("x" * 30_000) for _ in range(100)]
    appended = http.post("/v1/sessions/large/entries", json=batch)
    assert appended.status_code == 201, appended.text
    assert len(appended.json()["entries"]) == 100


def test_the_rate_reaches_the_workers() -> None:
    config = ServiceConfig(url="sqlite:///x.db", limits=Limits(body_timeout=2.5, body_min_rate=7))
    assert ServiceConfig.from_env(config.to_env()) == config

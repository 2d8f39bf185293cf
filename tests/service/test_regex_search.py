"""A ``re:`` search over the service runs in a child process with a deadline (``serve --regex-timeout``):
a pattern that backtracks without end is stopped with INVALID_INPUT, the worker answers other requests
meanwhile, and a regex that ends gives the library's results. A real ``serve`` over TCP, both backends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from sessionstore import user_message
from sessionstore.api import SessionStore
from tests.service.conftest import Server

pytestmark = pytest.mark.slow


def test_a_backtracking_regex_is_stopped_and_the_worker_answers_meanwhile(
        service_db_url: str, start_server: Callable[..., Server]) -> None:
    with SessionStore(service_db_url, tenant="rx") as store:
        sid = store.create_session(cwd="/w")
        store.append_message(sid, user_message("a" * 40))
        store.append_message(sid, user_message("an error: Timeout in parser"))
        expected = [r.to_json() for r in store.search(r"re:error: \w+", hits=2)]
    server = start_server(service_db_url, "--workers", "1", "--regex-timeout", "2")
    try:
        with server.client(server.token("rx", "read")) as client:
            answer = client.get("/v1/search", params={"q": r"re:error: \w+", "hits": 2})
            assert answer.status_code == 200 and answer.json() == expected

            stopped: dict[str, Any] = {}

            def backtrack() -> None:
                began = time.monotonic()
                stopped["answer"] = client.get("/v1/search", params={"q": "re:(a+)+b"}, timeout=60)
                stopped["seconds"] = time.monotonic() - began

            running = threading.Thread(target=backtrack)
            running.start()
            time.sleep(0.5)
            began = time.monotonic()
            assert client.get(f"/v1/sessions/{sid}").status_code == 200  # (the worker is not held)
            assert time.monotonic() - began < 1.5
            running.join(60)
            answer = stopped["answer"]
            assert answer.status_code == 422 and answer.json()["code"] == "INVALID_INPUT"
            assert "ran for 2 s and was stopped" in answer.json()["detail"]
            assert 1.5 < stopped["seconds"] < 15
            bad = client.get("/v1/search", params={"q": "re:(unclosed"})  # the library's error, from the child
            assert bad.status_code == 422 and "Invalid regular expression" in bad.json()["detail"]
    finally:
        server.stop()

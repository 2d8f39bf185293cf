"""Several workers behave as one service (issue 24 point 5): two ``serve`` processes on different ports
sharing one PostgreSQL database, one ``serve --workers 2`` on PostgreSQL, and one ``serve --workers 2`` on
one SQLite file (two processes on one file). Over TCP, the clients race through the two servers (or, with
``--workers 2``, through fresh connections, which the kernel hands to either worker): compare-and-set,
``Idempotency-Key``, client-chosen entry ids and the rate limit hold across them, because each is kept in
the database and not in a worker."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import httpx
import pytest

from tests.conftest import drop_pg_database, fresh_pg_database
from tests.requirements import POSTGRES
from tests.service.conftest import Server, StartServer, clear_of_the_window_end

ROUNDS = 12
BUDGET = 8
"""``--rate-limit BUDGET/h`` of the rate-limited servers (an hour: a window boundary during the test is
waited out: ``clear_of_the_window_end``)."""

SETUPS = [
    pytest.param("postgresql-two-servers", id="postgresql-two-servers", marks=pytest.mark.requires(POSTGRES)),
    pytest.param("postgresql-workers", id="postgresql-workers", marks=pytest.mark.requires(POSTGRES)),
    pytest.param("sqlite-workers", id="sqlite-workers"),
]


def message(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


@pytest.fixture(scope="module")
def pg_shared_url(pg_template: str) -> Iterator[str]:
    """One PostgreSQL database the module's PostgreSQL servers share."""
    name, url = fresh_pg_database(pg_template)
    yield url
    drop_pg_database(name)


class Pair:
    """Two ways into one service: ``a`` and ``b`` (two servers, or one with two workers), with fresh
    connections per request (so that with ``--workers 2`` both workers answer), and the same service
    started again with ``--rate-limit`` (``limited_a``, ``limited_b``)."""

    def __init__(self, kind: str, a: Server, b: Server, limited_a: Server, limited_b: Server) -> None:
        self.kind, self.a, self.b, self.limited_a, self.limited_b = kind, a, b, limited_a, limited_b

    def clients(self, server_a: Server, server_b: Server, token: str) -> tuple[httpx.Client, httpx.Client]:
        fresh = httpx.Limits(max_keepalive_connections=0)
        return server_a.client(token, limits=fresh), server_b.client(token, limits=fresh)


@pytest.fixture(scope="module", params=SETUPS)
def pair(request: pytest.FixtureRequest, start_server: StartServer,
         tmp_path_factory: pytest.TempPathFactory) -> Pair:
    kind = str(request.param)
    if kind.startswith("postgresql"):
        url = request.getfixturevalue("pg_shared_url")
    else:
        url = f"sqlite:///{tmp_path_factory.mktemp('scale') / 'sessions.db'}"
    limit = ("--rate-limit", f"{BUDGET}/h")
    if kind.endswith("two-servers"):
        return Pair(kind, start_server(url), start_server(url), start_server(url, *limit), start_server(url, *limit))
    one = start_server(url, "--workers", "2")
    limited = start_server(url, "--workers", "2", *limit)
    return Pair(kind, one, one, limited, limited)


def race(*calls: Callable[[], httpx.Response]) -> list[httpx.Response]:
    """Run ``calls`` at the same moment (a barrier), each in its own thread; their responses in order."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], httpx.Response]) -> httpx.Response:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def _session(client: httpx.Client) -> str:
    created = client.post("/v1/sessions", json={"cwd": "/scale"})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def _stored(client: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/v1/sessions/{session_id}/entries")
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines()]


def test_conditional_appends_through_both_let_exactly_one_win_each_round(pair: Pair) -> None:
    token = pair.a.token(pair.kind)
    client_a, client_b = pair.clients(pair.a, pair.b, token)
    with client_a, client_b:
        sid = _session(client_a)
        tag = '"root"'
        for n in range(ROUNDS):
            url = f"/v1/sessions/{sid}/entries"
            answers = race(partial(client_a.post, url, json=message(f"a{n}"), headers={"If-Match": tag}),
                           partial(client_b.post, url, json=message(f"b{n}"), headers={"If-Match": tag}))
            assert sorted(r.status_code for r in answers) == [201, 412], [r.text for r in answers]
            won = next(r for r in answers if r.status_code == 201)
            lost = next(r for r in answers if r.status_code == 412).json()
            assert lost["code"] == "LEAF_CONFLICT" and lost["currentLeafId"] == won.json()["leafId"]
            tag = won.headers["etag"]
        stored = _stored(client_b, sid)
    assert len(stored) == ROUNDS
    parents = [entry["parentId"] for entry in stored]
    assert parents == [None, *(entry["id"] for entry in stored[:-1])]  # one chain: no fork


def test_a_retry_through_the_other_gets_the_first_answer_byte_for_byte(pair: Pair) -> None:
    token = pair.a.token(pair.kind)
    client_a, client_b = pair.clients(pair.a, pair.b, token)
    with client_a, client_b:
        sid = _session(client_a)
        url = f"/v1/sessions/{sid}/entries"
        key = {"Idempotency-Key": f"retry-{pair.kind}"}
        first = client_a.post(url, json=message("once"), headers=key)
        again = client_b.post(url, json=message("once"), headers=key)
        assert first.status_code == again.status_code == 201
        assert again.content == first.content and again.headers["etag"] == first.headers["etag"]
        assert again.headers["idempotent-replayed"] == "true"
        other = client_b.post(url, json=message("another body"), headers=key)
        assert other.status_code == 422 and other.json()["code"] == "IDEMPOTENCY_KEY_REUSED"
        assert len(_stored(client_a, sid)) == 1


def test_one_key_sent_through_both_at_once_writes_once_and_both_answers_are_equal(pair: Pair) -> None:
    token = pair.a.token(pair.kind)
    client_a, client_b = pair.clients(pair.a, pair.b, token)
    with client_a, client_b:
        sid = _session(client_a)
        url = f"/v1/sessions/{sid}/entries"
        for n in range(ROUNDS):
            key = {"Idempotency-Key": f"race-{pair.kind}-{n}"}
            answers = race(partial(client_a.post, url, json=message(f"m{n}"), headers=key),
                           partial(client_b.post, url, json=message(f"m{n}"), headers=key))
            assert [r.status_code for r in answers] == [201, 201], [r.text for r in answers]
            assert answers[0].content == answers[1].content
            assert [r.headers.get("idempotent-replayed") for r in answers].count("true") == 1
        stored = _stored(client_a, sid)
    assert [entry["message"]["content"] for entry in stored] == [f"m{n}" for n in range(ROUNDS)]


def test_one_batch_of_given_ids_sent_through_both_at_once_is_stored_once(pair: Pair) -> None:
    token = pair.a.token(pair.kind)
    client_a, client_b = pair.clients(pair.a, pair.b, token)
    with client_a, client_b:
        sid = _session(client_a)
        url = f"/v1/sessions/{sid}/entries"
        for n in range(ROUNDS):
            batch = [{**message(f"r{n}-{i}"), "id": f"r{n}-{i}", "timestamp": "2026-12-02T10:00:00.000Z"}
                     for i in range(3)]
            answers = race(partial(client_a.post, url, json=batch), partial(client_b.post, url, json=batch))
            assert [r.status_code for r in answers] == [201, 201], [r.text for r in answers]
            assert answers[0].json() == answers[1].json()
        stored = _stored(client_b, sid)
    assert [entry["id"] for entry in stored] == [f"r{n}-{i}" for n in range(ROUNDS) for i in range(3)]
    assert [entry["parentId"] for entry in stored] == [None, *(entry["id"] for entry in stored[:-1])]


def test_the_rate_limit_is_one_budget_across_both_and_per_tenant(pair: Pair) -> None:
    clear_of_the_window_end()
    token = pair.limited_a.token(f"{pair.kind}-limited")
    other = pair.limited_a.token(f"{pair.kind}-other")
    client_a, client_b = pair.clients(pair.limited_a, pair.limited_b, token)
    with client_a, client_b:
        answers = race(*(partial((client_a, client_b)[n % 2].get, "/v1/sessions") for n in range(BUDGET)))
        assert [r.status_code for r in answers] == [200] * BUDGET
        for client in (client_a, client_b):
            refused = client.get("/v1/sessions")
            assert refused.status_code == 429, refused.text
            assert refused.headers["content-type"] == "application/problem+json"
            assert refused.json()["code"] == "RATE_LIMITED"
            assert 1 <= int(refused.headers["retry-after"]) <= 3600
    # Another tenant's budget is its own; unauthenticated requests count for nobody.
    with pair.limited_b.client(other) as client:
        assert client.get("/v1/sessions").status_code == 200
    with pair.limited_a.client() as client:
        assert client.get("/v1/sessions").status_code == 401

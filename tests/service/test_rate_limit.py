"""Rate limits (``serve --rate-limit N/UNIT``, SPEC 15 ``RATE_LIMITED``): a per-tenant budget per fixed
window, counted in the database. Over TCP against a real server on both backends, and the counter itself
on a real database. (Two servers sharing one budget: tests/service/test_scale_out.py.)"""

from __future__ import annotations

import subprocess

import pytest

from sessionstore.api import SessionStore
from sessionstore.errors import InvalidInputError
from sessionstore.service.config import RateLimit, ServiceConfig
from sessionstore.service.ratelimit import RateLimited, RateLimiter
from sessionstore.store import schema
from sessionstore.store.engine import make_engine
from tests.service.conftest import Server, StartServer, clear_of_the_window_end, sessionstore_command

BUDGET = 5


@pytest.fixture(scope="module")
def limited(service_db_url: str, start_server: StartServer) -> Server:
    return start_server(service_db_url, "--rate-limit", f"{BUDGET}/h")


def test_a_tenant_over_its_budget_gets_429_with_retry_after_and_others_do_not(limited: Server) -> None:
    clear_of_the_window_end()
    with limited.client(limited.token("spender")) as spender, limited.client(limited.token("bystander")) as other:
        assert [spender.get("/v1/sessions").status_code for _ in range(BUDGET)] == [200] * BUDGET
        refused = spender.post("/v1/sessions", json={"cwd": "/x"})
        assert refused.status_code == 429
        assert refused.headers["content-type"] == "application/problem+json"
        body = refused.json()
        assert (body["code"], body["status"], body["title"]) == ("RATE_LIMITED", 429, "Too Many Requests")
        assert f"{BUDGET}/h" in body["detail"] and "Traceback" not in refused.text
        assert 1 <= int(refused.headers["retry-after"]) <= 3600
        assert other.get("/v1/sessions").status_code == 200  # (never another tenant's requests)
        assert spender.get("/v1/sessions").status_code == 429  # (refused requests count: still refused)
    assert "ss_" not in limited.log()


def test_requests_without_a_valid_token_count_for_no_tenant(limited: Server) -> None:
    clear_of_the_window_end()
    with limited.client() as anonymous, limited.client("ss_bogus") as bogus:
        for _ in range(BUDGET * 2):
            assert anonymous.get("/v1/sessions").status_code == 401
            assert bogus.get("/v1/sessions").status_code == 401
    with limited.client(limited.token("fresh")) as fresh:
        assert [fresh.get("/v1/sessions").status_code for _ in range(BUDGET)] == [200] * BUDGET


def test_routes_outside_the_api_are_not_limited(limited: Server) -> None:
    with limited.client() as client:
        assert all(client.get("/openapi.json").status_code == 200 for _ in range(BUDGET + 2))


def test_the_counter_starts_again_each_window_and_drops_the_old_windows(sqlite_url: str) -> None:
    with SessionStore(sqlite_url) as store:
        limiter = RateLimiter(store, RateLimit(2, 60))
        start = 1_900_000_020_000 - 1_900_000_020_000 % 60_000
        assert [limiter.hit("t", now=start + n) for n in range(2)] == [1, 2]
        with pytest.raises(RateLimited) as refused:
            limiter.hit("t", now=start + 45_500)
        assert refused.value.retry_after == 15 and refused.value.code == "RATE_LIMITED"
        assert limiter.hit("u", now=start + 1) == 1  # (per tenant)
        assert limiter.hit("t", now=start + 60_000) == 1  # (the next window)
        engine = make_engine(sqlite_url)
        with engine.connect() as conn:
            rows = sorted(conn.execute(schema.rate_windows.select()).all())
        engine.dispose()
        assert rows == [("t", start + 60_000, 1), ("u", start, 1)]


@pytest.mark.parametrize(("text", "limit"), [("100/s", RateLimit(100, 1)), ("5/min", RateLimit(5, 60)),
                                              (" 7 / hour ", RateLimit(7, 3600))])
def test_rate_limits_parse_and_reach_the_workers_through_the_environment(text: str, limit: RateLimit) -> None:
    assert RateLimit.parse(text) == limit
    config = ServiceConfig(url="sqlite:///x.db", rate_limit=limit)
    assert ServiceConfig.from_env(config.to_env()) == config
    assert ServiceConfig.from_env(ServiceConfig(url=None).to_env()).rate_limit is None


@pytest.mark.parametrize("text", ["0/s", "5/day", "5", "-1/min", "x/s"])
def test_a_bad_rate_limit_is_one_error_line(text: str, sqlite_url: str) -> None:
    with pytest.raises(InvalidInputError):
        RateLimit.parse(text)
    done = subprocess.run([*sessionstore_command(), "--db", sqlite_url, "serve", "--port", "0", "--rate-limit", text],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("error: --rate-limit: bad rate limit")
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr

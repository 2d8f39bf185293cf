"""Tenant isolation, tested as an attacker would (issue 23 point 5, SPEC 16), over TCP against a real
``sessionstore serve``: every route, called with tenant B's token on tenant A's session and entry ids,
answers exactly as it answers for an id that exists nowhere; no list, search, stats or export of B
holds A's data; A's session is unchanged afterwards. The route table must cover every route the
application publishes in ``/openapi.json``, so a new route cannot escape the test.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.service.conftest import Server

MARKER = "alpha-secret-marker-7f3e"
A_SESSION = "iso-alpha-session"
UNUSED = "iso-unused-session"  # the same length as A_SESSION: exists in no tenant
A_ENTRY = "a1b2c3d4"
UNUSED_ENTRY = "e5f6a7b8"


@dataclass(frozen=True)
class Route:
    """One route of SPEC 15: ``path`` with ``{sid}`` / ``{eid}`` placeholders, a JSON ``body`` (with the
    same placeholders in its strings) or ``jsonl`` text, and the OpenAI path it stands for."""

    method: str
    path: str
    openapi: str
    body: Any = None
    jsonl: str | None = None


SESSION_ROUTES = [
    Route("GET", "/v1/sessions/{sid}", "/v1/sessions/{session_id}"),
    Route("DELETE", "/v1/sessions/{sid}", "/v1/sessions/{session_id}"),
    Route("POST", "/v1/sessions/{sid}/entries", "/v1/sessions/{session_id}/entries",
          body={"type": "message", "message": {"role": "user", "content": "b writes", "timestamp": 1}}),
    Route("GET", "/v1/sessions/{sid}/entries", "/v1/sessions/{session_id}/entries"),
    Route("PUT", "/v1/sessions/{sid}/leaf", "/v1/sessions/{session_id}/leaf", body={"leafId": "{eid}"}),
    Route("POST", "/v1/sessions/{sid}/fork", "/v1/sessions/{session_id}/fork", body={"entryId": "{eid}"}),
    Route("POST", "/v1/sessions/{sid}/compact", "/v1/sessions/{session_id}/compact",
          body={"summary": "b's summary", "firstKeptEntryId": "{eid}"}),
    Route("GET", "/v1/sessions/{sid}/compaction-plan", "/v1/sessions/{session_id}/compaction-plan"),
    Route("GET", "/v1/sessions/{sid}/context?leaf={eid}", "/v1/sessions/{session_id}/context"),
    Route("GET", "/v1/sessions/{sid}/payload?provider=anthropic&model=claude-sonnet-4-5",
          "/v1/sessions/{session_id}/payload"),
    Route("GET", "/v1/sessions/{sid}/tree", "/v1/sessions/{session_id}/tree"),
    Route("GET", "/v1/sessions/{sid}/stats", "/v1/sessions/{session_id}/stats"),
    Route("GET", "/v1/sessions/{sid}/export?format=jsonl", "/v1/sessions/{session_id}/export"),
    Route("GET", "/v1/sessions/{sid}/export?format=html", "/v1/sessions/{session_id}/export"),
    Route("GET", "/v1/sessions/{sid}/entry-ids?prefix=a1", "/v1/sessions/{session_id}/entry-ids"),
    Route("GET", "/v1/sessions/{sid}/entries/{eid}", "/v1/sessions/{session_id}/entries/{entry_id}"),
    Route("GET", "/v1/sessions/{sid}/events", "/v1/sessions/{session_id}/events"),
]
"""Routes that name a session: B on A's id must answer as B on an id that exists nowhere."""

TENANT_ROUTES = [
    Route("GET", "/v1/sessions", "/v1/sessions"),
    Route("GET", f"/v1/search?q={MARKER}", "/v1/search"),
    Route("GET", f"/v1/search?q={MARKER}&everything=true", "/v1/search"),
    Route("GET", "/v1/stats?by=model", "/v1/stats"),
    Route("GET", "/v1/stats?by=day", "/v1/stats"),
    Route("GET", f"/v1/session-ids?prefix={A_SESSION[:5]}", "/v1/session-ids"),
]
"""Routes over the caller's whole tenant: B's answers never hold A's data."""

CREATING_ROUTES = [
    Route("POST", "/v1/sessions", "/v1/sessions", body={"id": A_SESSION, "cwd": "/b"}),
    Route("POST", "/v1/imports", "/v1/imports", jsonl=json.dumps(
        {"type": "session", "version": 3, "id": A_SESSION, "timestamp": "2026-01-01T00:00:00.000Z",
         "cwd": "/b"}) + "\n"),
]
"""Routes that create: B may create a session with A's id in its own tenant, never touching A's."""

NOT_TENANT_DATA = {"/healthz", "/readyz", "/metrics"}
"""Published routes outside this issue's table of tenant data (issue 24's operations)."""

TENANT_FEEDS = [Route("GET", "/v1/events", "/v1/events")]
"""Streams over the caller's whole tenant (tested by watching them: they do not end)."""


def _fill(value: Any, sid: str, eid: str) -> Any:
    if isinstance(value, str):
        return value.replace("{sid}", sid).replace("{eid}", eid)
    if isinstance(value, dict):
        return {k: _fill(v, sid, eid) for k, v in value.items()}
    return value


def call(client: httpx.Client, route: Route, sid: str, eid: str) -> httpx.Response:
    path = route.path.replace("{sid}", sid).replace("{eid}", eid)
    if route.jsonl is not None:
        return client.request(route.method, path, content=route.jsonl.encode(),
                              headers={"Content-Type": "application/jsonl"})
    if route.body is not None:
        return client.request(route.method, path, json=_fill(route.body, sid, eid))
    return client.request(route.method, path)


def _shape(response: httpx.Response, *ids: str) -> tuple[int, str, str]:
    """What an answer says, with the ids named in it and the request id taken out."""
    body = response.text
    for n, one in enumerate(ids):
        body = body.replace(one, f"<id{n}>")
    body = re.sub(r'"requestId":\s*"[^"]*"', '"requestId": "-"', body)
    return response.status_code, response.headers.get("content-type", ""), body


@pytest.fixture(scope="module")
def tenants(server: Server) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """Clients of tenant A (holding one session with MARKER in it) and of tenant B (empty)."""
    a = server.client(server.token("alpha", "write"))
    b = server.client(server.token("beta", "write"))
    made = a.post("/v1/sessions", json={"id": A_SESSION, "cwd": f"/{MARKER}"})
    assert made.status_code == 201, made.text
    appended = a.post(f"/v1/sessions/{A_SESSION}/entries", json=[
        {"type": "message", "id": A_ENTRY, "message": {"role": "user", "content": f"say {MARKER}",
                                                      "timestamp": 1_700_000_000_000}},
        {"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": MARKER}],
                                        "api": "anthropic-messages", "provider": "anthropic",
                                        "model": "claude-sonnet-4-5", "stopReason": "stop",
                                        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0,
                                                  "totalTokens": 15, "cost": {"input": 0.1, "output": 0.2,
                                                                              "cacheRead": 0, "cacheWrite": 0,
                                                                              "total": 0.3}},
                                        "timestamp": 1_700_000_001_000}},
        {"type": "session_info", "name": f"named {MARKER}"},
    ])
    assert appended.status_code == 201, appended.text
    yield a, b
    a.close()
    b.close()


def _export(client: httpx.Client) -> bytes:
    response = client.get(f"/v1/sessions/{A_SESSION}/export?format=jsonl")
    assert response.status_code == 200, response.text
    return response.content


@pytest.mark.parametrize("route", SESSION_ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_another_tenants_session_answers_as_one_that_does_not_exist(
        tenants: tuple[httpx.Client, httpx.Client], route: Route) -> None:
    a, b = tenants
    before = _export(a)
    probed = call(b, route, A_SESSION, A_ENTRY)
    control = call(b, route, UNUSED, UNUSED_ENTRY)
    assert probed.status_code == 404, (probed.status_code, probed.text)
    assert _shape(probed, A_SESSION, A_ENTRY) == _shape(control, UNUSED, UNUSED_ENTRY)
    assert MARKER not in probed.text
    assert _export(a) == before  # nothing of A's was written or deleted


@pytest.mark.parametrize("route", TENANT_ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_no_tenant_wide_answer_holds_another_tenants_data(
        tenants: tuple[httpx.Client, httpx.Client], route: Route) -> None:
    a, b = tenants
    seen_by_a = call(a, route, A_SESSION, A_ENTRY)
    seen_by_b = call(b, route, A_SESSION, A_ENTRY)
    assert seen_by_a.status_code == seen_by_b.status_code == 200, (seen_by_a.text, seen_by_b.text)
    if "stats" not in route.path:  # (stats are numbers: A's show in A's totals, B's are empty)
        assert MARKER in seen_by_a.text or A_SESSION in seen_by_a.text
    assert MARKER not in seen_by_b.text and A_SESSION not in seen_by_b.text
    if "stats" in route.path:
        assert seen_by_b.text != seen_by_a.text


@pytest.mark.parametrize("route", CREATING_ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_another_tenant_may_hold_the_same_id_without_touching_the_first(
        server: Server, tenants: tuple[httpx.Client, httpx.Client], route: Route) -> None:
    a, _ = tenants
    before = _export(a)
    with server.client(server.token(f"gamma{len(route.path)}", "write")) as c:
        made = call(c, route, A_SESSION, A_ENTRY)
        assert made.status_code == 201, made.text
        assert MARKER not in made.text
        mine = c.get(f"/v1/sessions/{A_SESSION}")
        assert mine.status_code == 200 and MARKER not in mine.text
    assert _export(a) == before


def test_the_table_covers_every_published_route(server: Server) -> None:
    published = httpx.get(server.base_url + "/openapi.json").json()["paths"]
    covered = {(r.method, r.openapi) for r in SESSION_ROUTES + TENANT_ROUTES + CREATING_ROUTES + TENANT_FEEDS}
    missing = [(method.upper(), path) for path, methods in published.items() for method in methods
               if path not in NOT_TENANT_DATA and (method.upper(), path) not in covered]
    assert missing == []


@pytest.mark.parametrize("header", [
    None, "", "Bearer", "Basic dXNlcjpwYXNz", "Bearer ss_", "Bearer ss__", "Bearer ss_a_b_c",
    "Bearer ss_0000000000000000_" + "A" * 43, "Bearer " + "x" * 10_000, "Bearer ss_\u00e9\u00e9_\u00e9",
])
def test_no_token_or_a_bad_one_is_401_with_a_challenge(server: Server, tenants: Any, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header.encode("utf-8")}
    for method, path in (("GET", "/v1/sessions"), ("GET", f"/v1/sessions/{A_SESSION}"),
                         ("POST", f"/v1/sessions/{A_SESSION}/entries")):
        response = httpx.request(method, server.base_url + path, headers=headers, json={})  # type: ignore[arg-type]
        assert response.status_code == 401, (header, path, response.text)
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.headers["content-type"].startswith("application/problem+json")
        assert MARKER not in response.text
        if header and len(header) > 8:
            assert header.split(" ", 1)[-1] not in response.text
    if header and len(header) > 8:
        assert header.split(" ", 1)[-1] not in server.log()


def test_the_tenant_comes_from_the_token_alone(server: Server, tenants: tuple[httpx.Client, httpx.Client]) -> None:
    _, b = tenants
    for extra in ({"X-Tenant": "alpha"}, {"X-Sessionstore-Tenant": "alpha"}, {"Tenant": "alpha"}):
        response = b.get(f"/v1/sessions/{A_SESSION}", headers=extra)
        assert response.status_code == 404
    assert b.get(f"/v1/sessions/{A_SESSION}?tenant=alpha").status_code == 404
    assert A_SESSION not in b.get("/v1/sessions?tenant=alpha").text


def test_a_read_token_cannot_write(server: Server, tenants: tuple[httpx.Client, httpx.Client]) -> None:
    a, _ = tenants
    before = _export(a)
    with server.client(server.token("alpha", "read")) as reader:
        assert reader.get(f"/v1/sessions/{A_SESSION}").status_code == 200
        for route in SESSION_ROUTES + CREATING_ROUTES:
            if route.method == "GET":
                continue
            response = call(reader, route, A_SESSION, A_ENTRY)
            assert response.status_code == 403, (route, response.text)
            assert response.json()["code"] == "FORBIDDEN"
    assert _export(a) == before


def test_no_token_reaches_a_log_line(server: Server, tenants: tuple[httpx.Client, httpx.Client]) -> None:
    secrets = [token.split("_")[-1] for token in server.tokens.values()]
    log = server.log()
    assert log  # (the access log has lines)
    assert not [s for s in secrets if s in log]
    assert "Traceback" not in log


def test_the_tenant_feed_never_carries_another_tenants_sessions(
        server: Server, tenants: tuple[httpx.Client, httpx.Client]) -> None:
    from tests.service.test_feeds import Feed

    a, b = tenants
    watched = Feed(server, "/v1/events", server.token("beta", "read"))
    try:
        time.sleep(0.5)  # (the feed is listening)
        appended = a.post(f"/v1/sessions/{A_SESSION}/entries", json={"type": "custom", "customType": MARKER})
        assert appended.status_code == 201, appended.text
        sentinel = f"beta-sentinel-{len(MARKER)}"
        assert b.post("/v1/sessions", json={"id": sentinel, "cwd": "/b"}).status_code == 201
        seen: list[str] = []
        while not any(sentinel in text for text in seen):
            event = watched.next(10.0)
            assert event is not None
            seen.append(event.data)
        assert not any(MARKER in text or A_SESSION in text for text in seen), seen
    finally:
        watched.close()


def test_an_erase_with_another_tenants_admin_token_answers_as_for_a_missing_id(
        server: Server, tenants: tuple[httpx.Client, httpx.Client]) -> None:
    """``DELETE ?erase=true`` needs an admin token (issue 26): another tenant's admin gets what a missing
    id gets, and the session, its entries and its audit stay as they were."""
    a, _ = tenants
    before = _export(a)
    with server.client(server.token("beta", "admin")) as b_admin:
        probed = b_admin.delete(f"/v1/sessions/{A_SESSION}?erase=true")
        control = b_admin.delete(f"/v1/sessions/{UNUSED}?erase=true")
    assert probed.status_code == 404, (probed.status_code, probed.text)
    assert _shape(probed, A_SESSION) == _shape(control, UNUSED)
    assert MARKER not in probed.text
    assert _export(a) == before

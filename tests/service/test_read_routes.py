"""The read routes over TCP against a real ``sessionstore serve`` (both backends): each body is the real
CLI's output on the same database, byte for byte; the list pages with its cursor; a missing id is 404;
the HTML export carries its security headers."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from tests.service.conftest import Server, sessionstore_command

SESSIONS = ("read-a", "read b/slash", "read-c")


def user(text: str, ts: int) -> dict[str, object]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": ts}}


def assistant(text: str, ts: int) -> dict[str, object]:
    cost = {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003}
    return {"type": "message", "message": {
        "role": "assistant", "content": [{"type": "text", "text": text}], "api": "anthropic-messages",
        "provider": "anthropic", "model": "claude-opus-4-5", "stopReason": "stop", "timestamp": ts,
        "usage": {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120, "cost": cost}}}


def path_of(session_id: str) -> str:
    return "/v1/sessions/" + quote(session_id, safe="")


@pytest.fixture(scope="module")
def http(no_auth_server: Server) -> Iterator[httpx.Client]:
    with no_auth_server.client() as client:
        for n, session_id in enumerate(SESSIONS):
            assert client.post("/v1/sessions", json={"id": session_id, "cwd": "/proj"}).status_code == 201
            batch = [user(f"hello pelican {n}", 1), assistant(f"reply {n} about pelicans", 2),
                     user("second question", 3), assistant("second answer", 4)]
            response = client.post(path_of(session_id) + "/entries", json=batch)
            assert response.status_code == 201, response.text
        yield client


def cli(server: Server, *args: str) -> bytes:
    done = subprocess.run([*sessionstore_command(), "--db", server.url, *args], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(("route", "command"), [
    ("/context", ("context", "{id}", "--json")),
    ("/tree", ("tree", "{id}", "--json")),
    ("/export", ("export", "{id}")),
    ("/export?format=html", ("export", "{id}", "--html")),
    ("/stats", ("stats", "{id}", "--json")),
    ("/compaction-plan?keepRecentTokens=1", ("compact", "{id}", "--plan", "--json", "--keep-recent-tokens", "1")),
    ("/compaction-plan?keepRecentTokens=100000", ("compact", "{id}", "--plan", "--json",
                                                  "--keep-recent-tokens", "100000")),
    ("/payload?provider=anthropic&model=claude-opus-4-5",
     ("context", "{id}", "--payload", "--provider", "anthropic", "--model", "claude-opus-4-5")),
])
def test_session_bodies_are_the_cli_output(http: httpx.Client, no_auth_server: Server, route: str,
                                           command: tuple[str, ...]) -> None:
    session_id = "read b/slash"
    response = http.get(path_of(session_id) + route)
    assert response.status_code == 200, response.text
    assert response.content == cli(no_auth_server, *(a.format(id=session_id) for a in command))


def test_context_at_a_leaf(http: httpx.Client, no_auth_server: Server) -> None:
    first = json.loads(cli(no_auth_server, "tree", "read-a", "--json"))[0]["entry"]["id"]
    response = http.get(path_of("read-a") + "/context", params={"leaf": first})
    assert response.content == cli(no_auth_server, "context", "read-a", "--leaf", first, "--json")


@pytest.mark.parametrize(("route", "command"), [
    ("/v1/stats", ("stats", "--all", "--json")),
    ("/v1/stats?by=model", ("stats", "--all", "--by", "model", "--json")),
    ("/v1/stats?by=day&cwd=/proj", ("stats", "--all", "--by", "day", "--cwd", "/proj", "--json")),
    ("/v1/search?q=pelican", ("search", "pelican", "--json")),
    ("/v1/search?q=pelican&sort=recent&limit=2&everything=true",
     ("search", "pelican", "--sort", "recent", "--limit", "2", "--everything", "--json")),
])
def test_store_wide_bodies_are_the_cli_output(http: httpx.Client, no_auth_server: Server, route: str,
                                              command: tuple[str, ...]) -> None:
    response = http.get(route)
    assert response.status_code == 200, response.text
    assert response.content == cli(no_auth_server, *command)


def test_one_session_is_its_ls_item_with_its_etag(http: httpx.Client, no_auth_server: Server) -> None:
    listed = json.loads(cli(no_auth_server, "ls", "--json"))
    item = next(i for i in listed if i["id"] == "read b/slash")
    response = http.get(path_of("read b/slash"))
    assert response.status_code == 200
    assert response.content == cli(no_auth_server, "ls", "--json")[:0] + (
        json.dumps(item, indent=2, ensure_ascii=False).encode() + b"\n")
    assert response.headers["etag"] == f'"{item["leafId"]}"'


def test_the_list_pages_with_its_cursor(http: httpx.Client, no_auth_server: Server) -> None:
    whole = json.loads(cli(no_auth_server, "ls", "--json"))
    assert http.get("/v1/sessions").json() == {"sessions": whole, "next": None}
    seen: list[object] = []
    cursor: str | None = None
    for _page in range(10):
        params: dict[str, str | int] = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        body = http.get("/v1/sessions", params=params).json()
        assert len(body["sessions"]) <= 2
        seen += body["sessions"]
        cursor = body["next"]
        if cursor is None:
            break
    assert seen == whole
    first = http.get("/v1/sessions", params={"limit": 2}).json()
    assert first["sessions"] == json.loads(cli(no_auth_server, "ls", "--json", "--limit", "2"))
    modified = http.get("/v1/sessions", params={"sort": "modified", "cwd": "/proj"}).json()["sessions"]
    assert modified == json.loads(cli(no_auth_server, "ls", "--json", "--sort", "modified", "--cwd", "/proj"))
    bad = http.get("/v1/sessions", params={"cursor": "not a cursor"})
    assert bad.status_code == 422 and bad.json()["code"] == "INVALID_INPUT"


@pytest.mark.parametrize("route", ["", "/context", "/tree", "/export", "/export?format=html", "/stats",
                                   "/compaction-plan", "/payload?provider=anthropic&model=claude-opus-4-5"])
def test_a_missing_session_is_404(http: httpx.Client, route: str) -> None:
    response = http.get(path_of("no such session") + route)
    assert response.status_code == 404, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "NOT_FOUND" and "Traceback" not in response.text


def test_the_html_export_headers(http: httpx.Client) -> None:
    response = http.get(path_of("read-a") + "/export", params={"format": "html"})
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    policy = response.headers["content-security-policy"]
    assert policy.startswith("default-src 'none'; script-src 'sha256-") and "unsafe-inline" not in policy
    assert f'content="{policy}"' in response.text  # the page's own <meta> policy, the same one


def test_entries_are_the_stored_lines_after_a_seq(http: httpx.Client, no_auth_server: Server) -> None:
    lines = cli(no_auth_server, "export", "read-c").splitlines(keepends=True)[1:]  # (the header is not an entry)
    whole = http.get(path_of("read-c") + "/entries")
    assert whole.status_code == 200 and whole.headers["content-type"] == "application/jsonl"
    assert whole.content == b"".join(lines) and whole.headers["x-last-seq"] == str(len(lines) - 1)
    page = http.get(path_of("read-c") + "/entries", params={"after": 0, "limit": 2})
    assert page.content == b"".join(lines[1:3]) and page.headers["x-last-seq"] == "2"
    rest = http.get(path_of("read-c") + "/entries", params={"after": page.headers["x-last-seq"]})
    assert rest.content == b"".join(lines[3:])
    done = http.get(path_of("read-c") + "/entries", params={"after": len(lines) - 1})
    assert done.content == b"" and done.headers["x-last-seq"] == str(len(lines) - 1)
    assert http.get(path_of("no such session") + "/entries").status_code == 404

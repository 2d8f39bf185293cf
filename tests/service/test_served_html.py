"""The HTML viewer as the API serves it (``GET /v1/sessions/{id}/export?format=html``), opened in headless
chromium at the server's own URL, so the page runs under the API's real headers (its
Content-Security-Policy included): the session's messages render, the branch links work, nothing is
logged to the console (no script error, no CSP violation), and the bytes are ``export --html``'s."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sessionstore.api import SessionStore
from sessionstore.views.html_export import page_policy
from tests.browser import body_of, load, message_ids
from tests.paths import FIXTURES, PI_FILES
from tests.service.conftest import Server, sessionstore_command

MESSAGE_TYPES = ("message", "compaction", "branch_summary", "custom_message")
SOURCES = {"pi": PI_FILES["large-session"], "tree": FIXTURES / "valid" / "tree-v3.jsonl"}


@pytest.fixture(scope="module")
def http(no_auth_server: Server) -> Iterator[httpx.Client]:
    with no_auth_server.client() as client:
        yield client


@pytest.fixture(scope="module")
def imported(http: httpx.Client) -> dict[str, str]:
    """The sessions of SOURCES imported through the API: name -> session id."""
    ids = {}
    for name, source in SOURCES.items():
        response = http.post("/v1/imports", content=source.read_bytes(), headers={"Content-Type": "application/jsonl"})
        assert response.status_code == 201, response.text
        ids[name] = response.json()["sessionId"]
    return ids


@pytest.fixture(scope="module")
def local(no_auth_server: Server) -> Iterator[SessionStore]:
    """The server's database opened by the library, to say what the page should show."""
    with SessionStore(no_auth_server.url) as store:
        yield store


def page_url(server: Server, session_id: str, query: str = "") -> str:
    return f"{server.base_url}/v1/sessions/{session_id}/export?format=html{query}"


def text_of(entry: dict[str, Any]) -> str:
    content = entry["message"]["content"]
    return content if isinstance(content, str) else "".join(b["text"] for b in content if b["type"] == "text")


def test_the_served_page_is_export_html_byte_for_byte(no_auth_server: Server, http: httpx.Client,
                                                     imported: dict[str, str]) -> None:
    for session_id in imported.values():
        response = http.get(f"/v1/sessions/{session_id}/export", params={"format": "html"})
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        assert response.headers["content-security-policy"] == page_policy()
        assert response.headers["x-content-type-options"] == "nosniff"
        done = subprocess.run([*sessionstore_command(), "--db", no_auth_server.url, "export", session_id, "--html"],
                              capture_output=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert response.content == done.stdout


@pytest.mark.slow
def test_chromium_renders_the_served_pi_session(chromium: str, no_auth_server: Server, imported: dict[str, str],
                                                local: SessionStore, tmp_path: Path) -> None:
    session_id = imported["pi"]
    loaded = load(chromium, page_url(no_auth_server, session_id), tmp_path / "profile")
    assert loaded.console == []  # no script error, no CSP violation, nothing logged at all
    body = body_of(loaded.dom)
    path = local.path(session_id)
    assert message_ids(body) == [e["id"] for e in path if e["type"] in MESSAGE_TYPES]
    shown = {n.attrs["data-entry-id"]: n.all_text() for n in body.find(lambda n: "data-msg" in n.attrs)}
    users = [e for e in path if e["type"] == "message" and e["message"]["role"] == "user" and text_of(e)]
    assistants = [e for e in path if e["type"] == "message" and e["message"]["role"] == "assistant" and text_of(e)]
    for known in (users[1], users[2], users[len(users) // 2], users[-1], assistants[0], assistants[-1]):
        assert text_of(known).split("\n")[0].strip()[:60] in shown[known["id"]], known["id"]
    # the tree: every entry, the active path marked, the leaf current
    tree = body.find(lambda n: "tree-node" in n.attrs.get("class", "").split())
    assert len(tree) == len(local.entries(session_id))
    assert {n.attrs["data-entry-id"] for n in tree if n.attrs["data-on-path"] == "true"} == {e["id"] for e in path}
    current = [n.attrs["data-entry-id"] for n in tree if "current" in n.attrs["class"].split()]
    assert current == [local.leaf(session_id)] == [body.attrs["data-leaf-id"]]
    (stats,) = body.find(lambda n: "data-stats" in n.attrs)
    report = local.stats(session_id)
    assert f"{report.messages.user} user, {report.messages.assistant} assistant" in stats.all_text()


@pytest.mark.slow
def test_chromium_follows_a_branch_link_on_the_served_page(chromium: str, no_auth_server: Server,
                                                           imported: dict[str, str], local: SessionStore,
                                                           tmp_path: Path) -> None:
    session_id = imported["tree"]
    loaded = load(chromium, page_url(no_auth_server, session_id, "&leafId=e07"), tmp_path / "profile")
    assert loaded.console == []
    body = body_of(loaded.dom)
    assert body.attrs["data-leaf-id"] == "e07" != local.leaf(session_id)
    branch = local.path(session_id, "e07")
    assert message_ids(body) == [e["id"] for e in branch if e["type"] in MESSAGE_TYPES]
    assert not body.find(lambda n: "data-in-context" in n.attrs)  # the context is the session leaf's
    on_path = {n.attrs["data-entry-id"] for n in body.find(lambda n: n.attrs.get("data-on-path") == "true")}
    assert on_path == {e["id"] for e in branch}
    side = {e["id"] for e in local.entries(session_id)} - on_path
    assert side  # (the session leaf's own branch is in the tree, off this path)


@pytest.mark.slow
def test_a_policy_violation_reaches_the_console_check(chromium: str, tmp_path: Path) -> None:
    """The control of the checks above: under the viewer's own policy a foreign inline script is refused,
    and chromium's log says so, so an empty console means no violation happened."""
    page = tmp_path / "violating.html"
    page.write_text(f'<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="{page_policy()}">'
                    "</head><body><script>document.body.dataset.ran = 'yes'</script></body></html>")
    loaded = load(chromium, page.as_uri(), tmp_path / "profile")
    (body,) = loaded.dom.find(lambda n: n.tag == "body")
    assert "data-ran" not in body.attrs
    assert any("Content Security Policy" in line for line in loaded.console), loaded.console

"""The live view (issue 24 point 4): ``GET /v1/sessions/{id}/export?format=html&follow=true`` is the HTML
viewer following the session's event feed. Over TCP against real ``sessionstore serve`` processes on both
backends: the follow page's policy adds only ``connect-src 'self'`` (the plain page is unchanged), and in
a chromium that stays open (tests/browser.py ``Browser``, the DevTools protocol) an entry appended through
the API appears without a reload, hostile text stays text, a leaf move re-renders the path, and a delete
shows its notice, with nothing on the console (no script error, no CSP violation)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sessionstore.api import SessionStore
from sessionstore.views.html_export import page_policy
from tests.browser import Browser
from tests.paths import FIXTURES
from tests.service.conftest import Server, free_port, launch

HOSTILE = "</script><img src=x onerror=alert(1)>"
WITHIN = 20.0
"""Seconds the page may take to show a change (a generous bound: it is pushed at once)."""


@pytest.fixture(scope="module")
def http(no_auth_server: Server) -> Iterator[httpx.Client]:
    with no_auth_server.client() as client:
        yield client


def imported(http: httpx.Client) -> str:
    """A fresh copy of the tree fixture (its own session id), imported through the API."""
    lines = (FIXTURES / "valid" / "tree-v3.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    header["id"] = str(uuid.uuid4())
    body = "\n".join([json.dumps(header), *lines[1:]]) + "\n"
    response = http.post("/v1/imports", content=body, headers={"Content-Type": "application/jsonl"})
    assert response.status_code == 201, response.text
    return str(response.json()["sessionId"])


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1_767_225_600_000}}


def append(http: httpx.Client, session_id: str, *entries: dict[str, Any]) -> list[str]:
    made = http.post(f"/v1/sessions/{session_id}/entries", json=list(entries))
    assert made.status_code == 201, made.text
    return [e["id"] for e in made.json()["entries"]]


def follow_url(server: Server, session_id: str) -> str:
    return f"{server.base_url}/v1/sessions/{session_id}/export?format=html&follow=true"


def page_meta(html: str) -> dict[str, Any]:
    found = re.search(r'<script id="session-meta" type="application/json">(.*?)</script>', html, re.S)
    assert found is not None
    return dict(json.loads(found.group(1)))


def js(value: str) -> str:
    return json.dumps(value)


def shown_text(entry_id: str) -> str:
    """The page's text of the message card of ``entry_id`` ('' while there is none)."""
    return f"(document.getElementById({js('entry-' + entry_id)}) || {{textContent: ''}}).textContent"


def tree_node(entry_id: str) -> str:
    return f'.tree-node[data-entry-id="{entry_id}"]'


def cards(entry_id: str) -> str:
    """How many message cards the page shows for ``entry_id``."""
    selector = f'[data-msg][data-entry-id="{entry_id}"]'
    return f"document.querySelectorAll({js(selector)}).length"


def live_state() -> str:
    return "(document.getElementById('live-status') || {dataset: {}}).dataset.live"


# -- the response (no browser) ---------------------------------------------------------------------
def test_the_follow_page_may_connect_to_its_origin_only(http: httpx.Client) -> None:
    session_id = imported(http)
    append(http, session_id, user(HOSTILE))
    plain = http.get(f"/v1/sessions/{session_id}/export", params={"format": "html"})
    live = http.get(f"/v1/sessions/{session_id}/export", params={"format": "html", "follow": "true"})
    assert plain.status_code == live.status_code == 200
    assert plain.headers["content-security-policy"] == page_policy()
    assert "connect-src" not in plain.headers["content-security-policy"]
    assert "follow" not in page_meta(plain.text)
    policy = live.headers["content-security-policy"]
    assert policy == page_policy(follow=True)
    # the one difference: connect-src 'self' (the header and the page's own <meta> alike)
    assert policy.split("; ") == [*page_policy().split("; ")[:4], "connect-src 'self'",
                                  *page_policy().split("; ")[4:]]
    assert f'<meta http-equiv="Content-Security-Policy" content="{policy}">' in live.text
    assert live.headers["x-content-type-options"] == "nosniff"
    assert HOSTILE not in live.text and "<img" not in live.text  # (the data stays JSON, escaped)
    meta = page_meta(live.text)
    entries = http.get(f"/v1/sessions/{session_id}/entries")
    # the feed's numbering: the newest entry's seq, as the entries route (and the feed's id:) count
    assert meta["follow"] == {"events": "events", "after": int(entries.headers["x-last-seq"])}
    assert meta["follow"]["after"] == len(entries.text.splitlines()) - 1
    bad = http.get(f"/v1/sessions/{session_id}/export", params={"format": "jsonl", "follow": "true"})
    assert bad.status_code == 422


def test_the_follow_url_names_the_session_feed(http: httpx.Client, no_auth_server: Server) -> None:
    """The page's relative ``events`` resolves, against the page's URL, to the session's feed, which
    answers from the page's seq on (what the script opens)."""
    session_id = imported(http)
    page = httpx.URL(follow_url(no_auth_server, session_id))
    after = page_meta(http.get(page).text)["follow"]["after"]
    (added,) = append(http, session_id, user(HOSTILE))
    feed = page.join("events").copy_with(params={"after": after})
    assert feed.path == f"/v1/sessions/{session_id}/events"
    with http.stream("GET", feed, timeout=httpx.Timeout(10.0)) as stream:
        assert stream.status_code == 200
        lines: list[str] = []
        for line in stream.iter_lines():
            lines.append(line)
            if line.startswith("data: "):
                break
    assert lines[:2] == [f"id: {after + 1}", "event: entry"]
    assert json.loads(lines[2][len("data: "):])["id"] == added


# -- in chromium -----------------------------------------------------------------------------------
@pytest.fixture
def browser(chromium: str, tmp_path: Path) -> Iterator[Browser]:
    with Browser(chromium, tmp_path / "profile") as opened:
        yield opened


@pytest.mark.slow
def test_the_live_view_shows_appends_leaf_moves_and_the_delete(browser: Browser, http: httpx.Client,
                                                               no_auth_server: Server) -> None:
    session_id = imported(http)
    before = http.get(f"/v1/sessions/{session_id}").json()["leafId"]
    browser.open(follow_url(no_auth_server, session_id))
    assert browser.evaluate("document.body.dataset.rendered") == "ok"
    browser.wait_for(f"{live_state()} === 'following'", WITHIN)
    shown_before = browser.evaluate("document.querySelectorAll('[data-msg]').length")

    # an append through the API appears without a reload, and the view moves to it
    text = f"live entry {uuid.uuid4()}"
    (added,) = append(http, session_id, user(text))
    browser.wait_for(f"{shown_text(added)}.includes({js(text)})", WITHIN)
    assert browser.evaluate("performance.getEntriesByType('navigation').length") == 1  # (no reload)
    assert browser.evaluate("document.body.dataset.leafId") == added
    assert browser.evaluate("document.querySelectorAll('[data-msg]').length") == shown_before + 1
    assert browser.evaluate(f"document.querySelector('.tree-node.current').dataset.entryId === {js(added)}")
    # an append at the context's leaf is in the context, as a plain message is
    assert browser.evaluate(f"document.getElementById({js('entry-' + added)}).dataset.inContext") == "true"

    # hostile text arrives as text: no element made of it, nothing run
    (hostile,) = append(http, session_id, user(HOSTILE))
    browser.wait_for(f"{shown_text(hostile)}.includes({js(HOSTILE)})", WITHIN)
    assert browser.evaluate("document.querySelectorAll('img').length") == 0
    assert browser.evaluate("document.scripts.length") == 3  # (the two data elements and the viewer's)
    assert not [e for e in browser.events if e["method"] == "Page.javascriptDialogOpening"]

    # a reader who chose another branch stays on it while the tree grows; "back" goes to the new leaf
    browser.evaluate(f"document.querySelector({js(tree_node('e07'))}).click(); true")
    browser.wait_for("document.body.dataset.leafId === 'e07'", WITHIN)
    (elsewhere,) = append(http, session_id, user(f"appended while the reader was at e07 {uuid.uuid4()}"))
    browser.wait_for(f"document.querySelector({js(tree_node(elsewhere))}) !== null", WITHIN)
    assert browser.evaluate("document.body.dataset.leafId") == "e07"
    assert browser.evaluate(cards(elsewhere)) == 0
    browser.evaluate("document.querySelector('[data-action=\"back\"]').click(); true")
    browser.wait_for(f"document.body.dataset.leafId === {js(elsewhere)}", WITHIN)
    assert browser.evaluate(cards(elsewhere)) == 1

    # a leaf moved back (a branch) re-renders the path: the new entries leave the messages
    moved = http.put(f"/v1/sessions/{session_id}/leaf", json={"leafId": before})
    assert moved.status_code == 200, moved.text
    browser.wait_for(f"document.body.dataset.leafId === {js(before)}", WITHIN)
    browser.wait_for(f"{shown_text(added)} === ''", WITHIN)
    assert browser.evaluate(f"document.querySelector({js(tree_node(added))}).dataset.onPath") == "false"
    # (the context the page got no longer describes this leaf: not claimed)
    assert browser.evaluate("document.querySelectorAll('[data-in-context]').length") == 0

    # a delete: a clear notice, and the feed is closed
    deleted = http.delete(f"/v1/sessions/{session_id}")
    assert deleted.status_code == 204
    browser.wait_for(f"{live_state()} === 'deleted'", WITHIN)
    assert "session deleted" in browser.evaluate("document.getElementById('live-status').textContent")
    assert browser.evaluate("document.body.dataset.sessionDeleted") == "true"
    assert browser.console() == []  # no script error, no CSP violation, nothing logged


@pytest.mark.slow
def test_a_compaction_makes_the_context_marks_stale(browser: Browser, http: httpx.Client,
                                                   no_auth_server: Server) -> None:
    session_id = imported(http)
    browser.open(follow_url(no_auth_server, session_id))
    browser.wait_for(f"{live_state()} === 'following'", WITHIN)
    assert browser.evaluate("document.querySelectorAll('[data-in-context]').length") > 0
    made = http.post(f"/v1/sessions/{session_id}/compact", json={"summary": "compacted live", "keepRecentTokens": 0})
    assert made.status_code == 201, made.text
    compaction = made.json()["id"]
    browser.wait_for(f"document.body.dataset.leafId === {js(compaction)}", WITHIN)
    # the page cannot know what the model now sees: it shows no context marks and says why
    assert browser.evaluate("document.querySelectorAll('[data-in-context]').length") == 0
    assert "context changed since the page was made" in browser.evaluate(
        "document.querySelector('[data-stats]').textContent")
    assert browser.console() == []


@pytest.mark.slow
def test_the_plain_page_may_not_connect(browser: Browser, http: httpx.Client, no_auth_server: Server) -> None:
    """The control of the console checks above: the served page without ``follow`` (export --html's) is
    refused a connection to its own feed, and the refusal reaches ``Browser.console``."""
    session_id = imported(http)
    browser.open(f"{no_auth_server.base_url}/v1/sessions/{session_id}/export?format=html")
    assert browser.evaluate("document.body.dataset.rendered") == "ok"
    assert browser.evaluate("document.getElementById('live-status')") is None  # (it does not follow)
    assert browser.console() == []
    browser.evaluate("new EventSource('events'); true")
    browser.until(lambda: any("Content Security Policy" in line and "connect-src" in line
                              for line in browser.console()), WITHIN)


@pytest.mark.slow
def test_the_live_view_resumes_after_the_server_was_away(browser: Browser, service_db_url: str,
                                                          tmp_path: Path) -> None:
    """The server stops, an entry is stored meanwhile (by the library), the server starts again on the
    same port: the page reconnects by itself (EventSource, Last-Event-ID) and shows what it missed."""
    port = free_port()
    server = launch(service_db_url, tmp_path / "server.log", "--no-auth", port=port)
    try:
        with server.client() as api:
            session_id = imported(api)
        browser.open(follow_url(server, session_id))
        browser.wait_for(f"{live_state()} === 'following'", WITHIN)
        server.stop()
        browser.wait_for(f"{live_state()} === 'reconnecting'", WITHIN)
        text = f"stored while the server was away {uuid.uuid4()}"
        with SessionStore(service_db_url) as store:
            missed = store.append_message(session_id, user(text)["message"])
        server = launch(service_db_url, tmp_path / "server.log", "--no-auth", port=port)
        browser.wait_for(f"{shown_text(missed)}.includes({js(text)})", WITHIN + 30)
        assert browser.evaluate(live_state()) == "following"
        assert browser.evaluate(cards(missed)) == 1
    finally:
        server.stop()
    # (chromium logs the refused reconnections as network errors; no script error, no CSP violation)
    assert [line for line in browser.console() if "ERR_CONNECTION_REFUSED" not in line] == []

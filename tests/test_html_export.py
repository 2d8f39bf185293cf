"""``export --html``: one self-contained page; session text stays data (escaping, embedding, no
network), and the page renders in a real headless browser (Debian's ``chromium``).

Without ``chromium`` the browser tests skip naming ``.ci/install-chromium.sh``, except under CI, where
they fail (the rule of ``tests/requirements.py``)."""

from __future__ import annotations

import base64
import io
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.views.html_export import ScriptSafeWriter, script_safe, write_session_html
from sessionstore.wire.jsjson import js_dumpb
from tests.browser import Node, body_of, browse, message_ids
from tests.builders import assistant, entry, msg, result, user
from tests.paths import FIXTURES, PI_FILES, ROOT

Json = dict[str, Any]
HOSTILE = "</script><script>document.documentElement.setAttribute('data-pwned','script')</script>"
HOSTILE_IMG = "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','img')\">"
#: a 1x1 PNG
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
MESSAGE_TYPES = ("message", "compaction", "branch_summary", "custom_message")


# -- the page's data, read back ---------------------------------------------------------------
def data_element(page: str, element_id: str) -> str:
    found = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page, re.S)
    assert found is not None, element_id
    return found.group(1)


def export_page(store: SessionStore, session_id: str) -> str:
    out = io.BytesIO()
    write_session_html(store, session_id, out)
    return out.getvalue().decode("utf-8")


def hostile_session(store: SessionStore) -> str:
    """A session whose every text field tries to become markup, with images good and bad, a bash run,
    a custom message, a label, a name and a second branch."""
    bad_calls = ("c1", "bash", {"command": f"echo '{HOSTILE}'"})
    entries = [
        msg("u1", None, {"role": "user", "timestamp": 1, "content": [
            {"type": "text", "text": f"{HOSTILE}\n\n{HOSTILE_IMG}\n\n[click](javascript:alert(1)) "
                                     "![remote](https://example.com/x.png) <b>bold?</b> \u2028 & done"},
            {"type": "image", "mimeType": "image/png", "data": PNG},
            {"type": "image", "mimeType": "text/html", "data": PNG},
            {"type": "image", "mimeType": "image/png", "data": "not base64 \"><script>x</script>"},
        ]}),
        msg("a1", "u1", assistant(f"**bold** `code` [ok](https://example.com/page) {HOSTILE_IMG}\n\n"
                                  "```html\n" + HOSTILE + "\n```", bad_calls)),
        msg("r1", "a1", {**result("c1", "bash", HOSTILE), "content": [
            {"type": "text", "text": HOSTILE}, {"type": "image", "mimeType": "image/webp", "data": PNG}]}),
        msg("b1", "r1", {"role": "bashExecution", "command": HOSTILE, "output": HOSTILE_IMG, "exitCode": 3,
                         "cancelled": False, "truncated": False, "timestamp": 2}),
        entry("cm1", "b1", "custom_message", customType=HOSTILE, content=HOSTILE_IMG, display=True),
        entry("l1", "cm1", "label", targetId="u1", label=HOSTILE),
        entry("n1", "l1", "session_info", name=f"</title>{HOSTILE}"),
        msg("u2", "n1", user("on the main branch")),
        msg("a2", "u2", assistant("answer on main")),
        msg("x1", "a1", user("a side branch")),
        msg("x2", "x1", assistant("side answer")),
        msg("a3", "a2", assistant("the leaf")),
    ]
    header = {"type": "session", "version": 3, "id": "hostile-html", "timestamp": "2025-01-01T00:00:00.000Z",
              "cwd": f"/tmp/{HOSTILE}"}
    store.import_entries(header, entries)
    return "hostile-html"


@pytest.fixture
def sqlite_store(sqlite_url: str) -> Iterator[SessionStore]:
    with SessionStore(sqlite_url) as opened:
        yield opened


# -- unit tests (no browser) ------------------------------------------------------------------
def test_script_safe_leaves_no_markup_and_keeps_the_json() -> None:
    value = {"text": "</script><!-- <script> & \u2028\u2029 >", "n": [1, "<"]}
    safe = script_safe(js_dumpb(value))
    assert not re.search(rb"[<>&]", safe)
    assert "\u2028".encode() not in safe and "\u2029".encode() not in safe
    assert json.loads(safe) == value


def test_the_writer_escapes_a_separator_split_across_writes() -> None:
    data = js_dumpb({"t": "a\u2028b\u2029c<>&" * 3})
    out = io.BytesIO()
    writer = ScriptSafeWriter(out)
    for i in range(len(data)):
        writer.write(data[i:i + 1])
    writer.flush()
    assert out.getvalue() == script_safe(data)
    assert json.loads(out.getvalue()) == json.loads(data)


def test_session_text_stays_inside_the_data_elements(sqlite_store: SessionStore) -> None:
    session_id = hostile_session(sqlite_store)
    page = export_page(sqlite_store, session_id)
    # the page's own elements only: no session text opened or closed a script
    assert page.count("<script") == 3 and page.count("</script>") == 3
    assert "onerror" not in page.split('<script id="session-meta"')[0]  # not in the head or the layout
    title = re.search(r"<title>(.*?)</title>", page, re.S)
    assert title is not None and "<" not in title.group(1) and "&lt;/title&gt;" in title.group(1)
    lines = [json.loads(line) for line in data_element(page, "session-entries").split("\n") if line]
    assert lines[0]["type"] == "session"
    assert lines[1:] == sqlite_store.entries(session_id)
    meta = json.loads(data_element(page, "session-meta"))
    assert meta["leafId"] == "a3" and meta["labels"] == {"u1": HOSTILE} and meta["name"] == f"</title>{HOSTILE}"
    assert meta["stats"]["assistantMessages"] == 4
    assert meta["contextEntryIds"] == sqlite_store.context(session_id).entry_ids


def test_the_page_loads_nothing_from_the_network(sqlite_store: SessionStore) -> None:
    session_id = sqlite_store.import_jsonl(PI_FILES["large-session"]).session_id
    page = export_page(sqlite_store, session_id)
    layout = page.split('<script id="session-meta"')[0] + page.rsplit("</script>", 2)[1]
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", layout)
    assert "<link" not in layout and "@import" not in layout and "url(" not in layout
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    assert "default-src 'none'" in policy.group(1) and "img-src data:" in policy.group(1)


def test_cli_export_html_to_a_file_and_to_stdout(sqlite_url: str, tmp_path: Path) -> None:
    runner = CliRunner()
    run = lambda *args: runner.invoke(cli, ["--db", sqlite_url, *args], catch_exceptions=False)  # noqa: E731
    assert run("import", str(FIXTURES / "valid" / "tree-v3.jsonl")).exit_code == 0
    out = tmp_path / "session.html"
    done = run("export", "tree-v3-demo", "--html", "-o", str(out))
    assert done.exit_code == 0 and done.stderr.strip() == f"wrote 19 entries to {out}"
    assert run("export", "tree-v3-demo", "--html").stdout_bytes == out.read_bytes()
    assert out.read_bytes().startswith(b"<!DOCTYPE html>")
    missing = run("export", "no-such-session", "--html", "-o", str(tmp_path / "x.html"))
    assert missing.exit_code == 2 and len(missing.stderr.splitlines()) == 1
    assert "Traceback" not in missing.output and not (tmp_path / "x.html").exists()


@pytest.mark.slow
def test_the_page_assets_ship_in_the_wheel() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = declared["sessionstore.views"]
    assets = sorted(p.name for p in (ROOT / "sessionstore" / "views" / "html").iterdir())
    assert assets == ["viewer.css", "viewer.html", "viewer.js"]
    assert all(any(Path("html", name).match(pattern) for pattern in patterns) for name in assets)


# -- in the browser ---------------------------------------------------------------------------
def write_page(store: SessionStore, session_id: str, path: Path) -> Path:
    with path.open("wb") as fp:
        write_session_html(store, session_id, fp)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("name", ["large-session", "before-compaction", "tree-v3"])
def test_the_browser_renders_the_active_path(chromium: str, sqlite_store: SessionStore, tmp_path: Path,
                                             name: str) -> None:
    source = PI_FILES.get(name, FIXTURES / "valid" / f"{name}.jsonl")
    session_id = sqlite_store.import_jsonl(source).session_id
    body = body_of(browse(chromium, write_page(sqlite_store, session_id, tmp_path / "page.html")))
    path = sqlite_store.path(session_id)
    context = sqlite_store.context(session_id)
    # one element per message of the active path, in path order; the ones the model sees are marked
    assert message_ids(body) == [e["id"] for e in path if e["type"] in MESSAGE_TYPES]
    in_context = [n.attrs["data-entry-id"] for n in body.find(lambda n: n.attrs.get("data-in-context") == "true")]
    assert sorted(in_context) == sorted(context.entry_ids)  # the context puts a compaction's summary first
    if not any(e["type"] == "compaction" for e in path):
        assert len(message_ids(body)) == len(context.messages)
    # the tree: every entry, the active path marked, the leaf current
    tree = body.find(lambda n: "tree-node" in n.attrs.get("class", "").split())
    assert len(tree) == len(sqlite_store.entries(session_id))
    assert {n.attrs["data-entry-id"] for n in tree if n.attrs["data-on-path"] == "true"} == {e["id"] for e in path}
    current = [n.attrs["data-entry-id"] for n in tree if "current" in n.attrs["class"].split()]
    assert current == [sqlite_store.leaf(session_id)] == [body.attrs["data-leaf-id"]]
    # a tool call, with its result inside it
    call = next(b for e in path if e["type"] == "message" and e["message"]["role"] == "assistant"
                for b in e["message"]["content"] if b["type"] == "toolCall")
    (shown,) = body.find(lambda n: "tool-call" in n.attrs.get("class", "").split()
                         and n.attrs.get("data-tool-call-id") == call["id"])
    assert shown.attrs["data-tool-name"] == call["name"] and shown.attrs["data-status"] in ("ok", "error")
    (inside,) = shown.find(lambda n: n.attrs.get("data-msg") == "toolResult")
    assert inside.attrs["data-tool-call-id"] == call["id"]
    # the header's stats
    (stats,) = body.find(lambda n: "data-stats" in n.attrs)
    report = sqlite_store.stats(session_id)
    assert f"{report.messages.user} user, {report.messages.assistant} assistant" in stats.all_text()
    assert f"${report.cost:.3f}" in stats.all_text()


def header_rows(body: Node) -> dict[str, str]:
    """The header's info rows, label -> value text."""
    (grid,) = body.find(lambda n: "data-stats" in n.attrs)
    spans = [n for n in grid.children if n.tag == "span"]
    return {label.all_text(): value.all_text() for label, value in zip(spans[::2], spans[1::2], strict=True)}


def counted_parts(text: str) -> list[tuple[int, str]]:
    return [(int(n), what) for n, what in re.findall(r"(\d+) ([^,()]+?)(?=,|$)", text)]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["large-session", "before-compaction"])
def test_the_header_counts_add_up_and_say_what_they_count(chromium: str, sqlite_store: SessionStore,
                                                          tmp_path: Path, name: str) -> None:
    """The header said '55 user, 484 assistant, 448 tool results (990 in all)' (987) and 'This branch:
    1002 entries, 992 messages', more than the session's 990: each count's parts now sum to it, named."""
    session_id = sqlite_store.import_jsonl(PI_FILES[name]).session_id
    rows = header_rows(body_of(browse(chromium, write_page(sqlite_store, session_id, tmp_path / "page.html"))))
    report = sqlite_store.stats(session_id)
    entries, path = sqlite_store.entries(session_id), sqlite_store.path(session_id)
    assert rows["Entries:"] == str(len(entries))
    parts_text, total_text = re.fullmatch(r"(.*) \((\d+) message entries in all\)", rows["Messages:"]).groups()
    parts = counted_parts(parts_text)
    assert sum(n for n, _ in parts) == int(total_text) == report.messages.total
    assert parts[:3] == [(report.messages.user, "user"), (report.messages.assistant, "assistant"),
                         (report.messages.tool_results, "tool results")]
    if report.messages.total > report.messages.user + report.messages.assistant + report.messages.tool_results:
        assert parts[3][1] == "bash executions"  # what makes the difference, named
    branch, _, seen = rows["This branch:"].partition("; ")
    count_text, _, kinds_text = branch.partition(": ")
    kinds = counted_parts(kinds_text)
    assert count_text == f"{len(path)} entries" and sum(n for n, _ in kinds) == len(path)
    messages_on_branch = dict((what, n) for n, what in kinds)["messages"]
    assert messages_on_branch == sum(1 for e in path if e["type"] == "message") <= report.messages.total
    assert seen.startswith(f"the model sees {len(sqlite_store.context(session_id).messages)} messages at the leaf")


@pytest.mark.slow
def test_hostile_session_text_does_not_execute_in_the_browser(chromium: str, sqlite_store: SessionStore,
                                                              tmp_path: Path) -> None:
    session_id = hostile_session(sqlite_store)
    dom = browse(chromium, write_page(sqlite_store, session_id, tmp_path / "hostile.html"))
    body = body_of(dom)
    (html,) = dom.find(lambda n: n.tag == "html")
    assert "data-pwned" not in html.attrs
    assert len(dom.find(lambda n: n.tag == "script")) == 3  # the page's own
    assert not dom.find(lambda n: any(name.startswith("on") for name in n.attrs))
    text = body.all_text()
    assert HOSTILE in text and HOSTILE_IMG in text  # shown, as text
    # links: http(s)/mailto only; images: checked data: URLs only (nothing fetched)
    hrefs = [n.attrs["href"] for n in dom.find(lambda n: n.tag == "a")]
    assert hrefs and all(h.startswith(("https://", "http://", "mailto:")) for h in hrefs)
    assert "https://example.com/page" in hrefs
    images = dom.find(lambda n: n.tag == "img")
    assert [n.attrs["src"] for n in images] == [f"data:image/png;base64,{PNG}", f"data:image/webp;base64,{PNG}"]
    assert len(dom.find(lambda n: n.attrs.get("data-image") == "refused")) == 2
    base64.b64decode(PNG, validate=True)
    # labels, the name, a bash run with its exit code, the custom message
    (title,) = dom.find(lambda n: n.tag == "h1")
    assert title.all_text() == f"</title>{HOSTILE}"
    (bash,) = body.find(lambda n: n.attrs.get("data-msg") == "bashExecution")
    assert "$ " + HOSTILE in bash.all_text() and "exit 3" in bash.all_text()
    assert body.find(lambda n: n.attrs.get("data-msg") == "custom")
    assert any(HOSTILE in n.all_text() for n in body.find(lambda n: "tree-label" in n.attrs.get("class", "")))
    # the side branch is in the tree, off the active path
    (side,) = body.find(lambda n: n.attrs.get("data-entry-id") == "x1" and "tree-node" in n.attrs.get("class", ""))
    assert side.attrs["data-on-path"] == "false"


@pytest.mark.slow
def test_the_page_shows_another_branch_when_asked(chromium: str, sqlite_store: SessionStore, tmp_path: Path) -> None:
    session_id = sqlite_store.import_jsonl(FIXTURES / "valid" / "tree-v3.jsonl").session_id
    page = write_page(sqlite_store, session_id, tmp_path / "tree.html")
    body = body_of(browse(chromium, page, "?leafId=e07"))
    assert body.attrs["data-leaf-id"] == "e07"
    assert message_ids(body) == [e["id"] for e in sqlite_store.path(session_id, "e07") if e["type"] in MESSAGE_TYPES]
    assert not body.find(lambda n: "data-in-context" in n.attrs)  # the context is the session leaf's
    on_path = {n.attrs["data-entry-id"] for n in body.find(lambda n: n.attrs.get("data-on-path") == "true")}
    assert on_path == {e["id"] for e in sqlite_store.path(session_id, "e07")}


def tolerant_files() -> list[Path]:
    return sorted((FIXTURES / "tolerant").glob("*.jsonl")) + sorted((FIXTURES / "valid").glob("*.jsonl"))


@pytest.mark.slow
def test_odd_sessions_render_without_a_script_error(chromium: str, sqlite_store: SessionStore,
                                                    tmp_path: Path) -> None:
    pages = []
    for source in tolerant_files():
        session_id = sqlite_store.import_jsonl(source, lenient=True).session_id
        pages.append((source.name, write_page(sqlite_store, session_id, tmp_path / f"{source.stem}.html")))
    for name, page in pages:  # one at a time: two headless chromiums at once crash on a small machine
        body = body_of(browse(chromium, page))
        errors = [n.attrs["data-render-error"] for n in body.find(lambda n: "data-render-error" in n.attrs)]
        assert errors == [], name

"""Headless chromium for the HTML viewer's tests: load a page (a file or a URL), read back the DOM it
rendered (``--dump-dom``) and what it wrote to the console (``--enable-logging=stderr``: script errors,
``console.*`` calls and Content-Security-Policy violations all arrive there).

The tests get the binary from the ``chromium`` fixture (tests/conftest.py), which asks for it through
``tests/requirements.py``."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

BROWSER_TIMEOUT_S = 120
CONSOLE_LINE = re.compile(r"^\[[^\]]*:CONSOLE[^\]]*\] (.*)$", re.M)
"""A console message in chromium's log: ``[pid:tid:time:INFO:CONSOLE:line] "text", source: url (line)``."""


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    text: list[str] = field(default_factory=list)

    def walk(self) -> Iterator[Node]:
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def find(self, test: Callable[[Node], bool]) -> list[Node]:
        return [node for node in self.walk() if test(node)]

    def all_text(self) -> str:
        return "".join(part for node in self.walk() for part in node.text)


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class DomReader(HTMLParser):
    """Chromium's --dump-dom output as a tree of Nodes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {name: value or "" for name, value in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].text.append(data)


@dataclass
class Loaded:
    """A page as chromium left it: ``dom`` (its document after the scripts ran) and ``console`` (every
    message it logged, in order)."""

    dom: Node
    console: list[str]


def load(chromium: str, url: str, profile: Path, *, screenshot: Path | None = None) -> Loaded:
    """Open ``url`` in headless chromium with a fresh profile in ``profile``; with ``screenshot``, save a
    PNG there instead of reading the DOM (the dom is then empty)."""
    what = [f"--screenshot={screenshot}", "--window-size=1400,1000"] if screenshot else ["--dump-dom"]
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}", *what, url],
        capture_output=True, timeout=BROWSER_TIMEOUT_S, check=False,
    )
    log = done.stderr.decode(errors="replace")
    assert done.returncode == 0, log[-2000:]
    reader = DomReader()
    reader.feed(done.stdout.decode("utf-8"))
    reader.close()
    return Loaded(reader.root, CONSOLE_LINE.findall(log))


def browse(chromium: str, page: Path, query: str = "", *, screenshot: Path | None = None) -> Node:
    """The DOM of the page file ``page`` (``query`` appended to its URL, e.g. ``?leafId=ID``)."""
    profile = page.parent / (".chromium-" + page.stem)
    return load(chromium, page.resolve().as_uri() + query, profile, screenshot=screenshot).dom


def body_of(dom: Node) -> Node:
    """The viewer's ``<body>``, asserting that its script rendered the session."""
    (body,) = dom.find(lambda n: n.tag == "body")
    assert body.attrs.get("data-rendered") == "ok", body.attrs.get("data-render-error")
    return body


def message_ids(body: Node) -> list[str]:
    """The entry ids of the messages the viewer shows, in order."""
    return [n.attrs["data-entry-id"] for n in body.find(lambda n: "data-msg" in n.attrs)]

"""Headless chromium for the HTML viewer's tests, two ways.

``load``: load a page (a file or a URL), read back the DOM it rendered (``--dump-dom``) and what it wrote
to the console (``--enable-logging=stderr``: script errors, ``console.*`` calls and Content-Security-Policy
violations all arrive there). That is a snapshot at load.

``Browser`` (the live view's tests): a chromium that stays open, driven through the DevTools protocol over
its websocket (``--remote-debugging-port=0`` on loopback; the port is read from ``DevToolsActivePort`` in
the profile), so a test can act (append through the API) and then watch the page change: ``evaluate``
runs an expression in the page, ``wait_for`` polls one until it holds or a deadline passes, ``console``
is every console message, script exception and logged CSP violation since the page was opened.

The tests get the binary from the ``chromium`` fixture (tests/conftest.py), which asks for it through
``tests/requirements.py``."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx

BROWSER_TIMEOUT_S = 120
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         "--disable-dev-shm-usage"]
"""The flags of every chromium the tests start."""
QUIET = ["--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic"]
"""And for one that stays open: no request of its own (updates, sync, field trials) besides the page's."""
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
        [chromium, *FLAGS, "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}", *what, url],
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


# -- a chromium that stays open (the DevTools protocol) ---------------------------------------------
class Browser:
    """Headless chromium with a fresh profile in ``profile``, one page (``about:blank`` at first), driven
    over the DevTools protocol. Use as a context manager: leaving it ends chromium (its process group)."""

    def __init__(self, chromium: str, profile: Path, *, timeout: float = 30.0) -> None:
        from websockets.sync.client import connect

        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._next_id = 0
        profile.mkdir(parents=True, exist_ok=True)
        self._stderr = (profile.parent / (profile.name + ".stderr")).open("wb")
        self.process = subprocess.Popen(
            [chromium, *FLAGS, *QUIET, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             f"--user-data-dir={profile}", "--window-size=1400,1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=self._stderr, start_new_session=True)
        try:
            port = self._port(profile / "DevToolsActivePort")
            pages = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=timeout, trust_env=False).json()
            (page,) = [t for t in pages if t.get("type") == "page"]
            self._ws = connect(page["webSocketDebuggerUrl"], proxy=None, max_size=None, open_timeout=timeout)
            for domain in ("Runtime", "Log", "Page"):
                self.call(f"{domain}.enable")
        except BaseException:
            self.close()
            raise

    def _port(self, active: Path) -> int:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"chromium exited with {self.process.returncode}")
            lines = active.read_text().splitlines() if active.is_file() else []
            if lines and lines[0].isdigit():
                return int(lines[0])
            time.sleep(0.05)
        raise AssertionError(f"chromium wrote no {active.name} in {self.timeout} s")

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        ws = getattr(self, "_ws", None)
        if ws is not None:
            ws.close()
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # (its own group: the renderers go too)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._stderr.close()

    # -- the protocol ---------------------------------------------------------------------------
    def _receive(self, timeout: float) -> dict[str, Any] | None:
        try:
            message: dict[str, Any] = json.loads(self._ws.recv(timeout=timeout))
        except TimeoutError:
            return None
        if "method" in message:
            self.events.append(message)
        return message

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (an error answer raises)."""
        self._next_id += 1
        ask = self._next_id
        self._ws.send(json.dumps({"id": ask, "method": method, "params": params}))
        deadline = time.monotonic() + self.timeout
        while (left := deadline - time.monotonic()) > 0:
            message = self._receive(left)
            if message is not None and message.get("id") == ask:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
        raise AssertionError(f"{method}: no answer in {self.timeout} s")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able; an exception raises)."""
        done = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in done:
            raise AssertionError(f"{expression}: {done['exceptionDetails']}")
        return done["result"].get("value")

    def open(self, url: str) -> None:
        """Navigate to ``url`` and wait until its document has loaded."""
        self.call("Page.navigate", url=url)
        self.wait_for(f"document.readyState === 'complete' && location.href === {json.dumps(url)}")

    def wait_for(self, expression: str, timeout: float | None = None) -> Any:
        """Poll ``expression`` until it is truthy (returns its value) or ``timeout`` passes (fails, with
        the page's text)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                text = self.evaluate("document.body ? document.body.innerText.slice(0, 2000) : ''")
                raise AssertionError(f"not so after {timeout or self.timeout} s: {expression}\n{text}")
            self._receive(0.1)  # (the wait between polls, taking what chromium tells meanwhile)

    def until(self, check: Callable[[], bool], timeout: float) -> None:
        """Take what chromium tells until ``check()`` holds (for checks of ``events`` or ``console``), or
        fail after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"not so after {timeout} s; console: {self.console()}")
            self._receive(0.1)

    def console(self) -> list[str]:
        """Every console call, logged entry (CSP violations among them) and uncaught exception so far."""
        out = []
        for event in self.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.consoleAPICalled":
                args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                out.append(f"console.{params.get('type')}: {args}")
            elif event["method"] == "Log.entryAdded":
                entry = params.get("entry", {})
                out.append(f"log {entry.get('level')} {entry.get('source')}: {entry.get('text')}")
            elif event["method"] == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                out.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
        return out

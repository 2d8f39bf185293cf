"""``sessionstore export --html``: one self-contained HTML file showing a session as pi's ``/export`` does.

The page is ``html/viewer.html`` with ``viewer.css`` and ``viewer.js`` inlined, and the session as data:
the session's v3 JSONL lines (the header, then every entry in append order, exactly as ``export``
writes them) in one ``<script type="application/json">`` element, and the leaf, labels, name, stats
and the context's entry ids in another. The script renders it in the browser (the tree, the messages
of the active path, a click on the tree shows another branch), as pi's export does.

Session text is hostile input. It reaches the page only as JSON inside those data elements, where
``<``, ``>``, ``&``, U+2028 and U+2029 are written as ``\\u`` escapes (they occur in JSON only inside
strings, where the escape means the same character), so nothing in it can end the element or start
markup. The script builds the DOM with ``textContent`` and attributes, never from HTML text. A
Content-Security-Policy allows only the page's own script and style (by hash), images only as
``data:`` URLs, and no fetch of anything: the page needs no network, and gets none.

The entries are streamed to ``fp`` as ``export_jsonl`` writes them, never held as one string.

*Follow mode* (only the service's ``export?format=html&follow=true``; the CLI's page and any saved file
never have it): the meta also holds ``follow``: ``{"events": "events", "after": SEQ}``, the session's
event feed as a URL relative to the page (``/v1/sessions/{id}/events`` beside ``.../export``) and the seq
of the newest entry at the meta's read, the feed's ``id:`` numbering (an entry's place in append order,
from 0). The script opens an ``EventSource`` there with ``?after=SEQ``; the policy then adds
``connect-src 'self'`` and nothing else. An entry stored between that read and the entries' write is on
the page and comes again on the feed: the script takes a known entry id as a move of the leaf only.
"""

from __future__ import annotations

import base64
import hashlib
from importlib import resources
from typing import IO, TYPE_CHECKING, Any, cast

from sessionstore.wire.jsjson import js_dumpb

if TYPE_CHECKING:
    from sessionstore.views import Store

GENERATOR = "sessionstore export --html"
_DATA_MARK = "{{DATA}}"

#: What may not appear as such inside a ``<script>`` data element, and the JSON escape written for it.
_SCRIPT_ESCAPES = (
    (b"&", b"\\u0026"),  # first: the other replacements add no "&"
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def script_safe(data: bytes) -> bytes:
    """JSON text made safe to stand inside a ``<script type="application/json">`` element: ``<``, ``>``,
    ``&``, U+2028 and U+2029 written as ``\\uXXXX`` escapes. Only for JSON text, where those characters
    can occur only inside strings (where the escape is the same character)."""
    for raw, escaped in _SCRIPT_ESCAPES:
        data = data.replace(raw, escaped)
    return data


class ScriptSafeWriter:
    """A binary writer that passes JSON text on to ``fp`` through :func:`script_safe`, holding back the
    start of a UTF-8 sequence that a write splits (U+2028/9 are three bytes)."""

    def __init__(self, fp: IO[bytes]) -> None:
        self._fp = fp
        self._held = b""
        self.written = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:
        chunk = self._held + bytes(data)
        cut = len(chunk)
        # a possibly split E2 80 A8/A9 at the end waits for the next write
        if chunk.endswith(b"\xe2"):
            cut -= 1
        elif chunk.endswith(b"\xe2\x80"):
            cut -= 2
        self._held = chunk[cut:]
        out = script_safe(chunk[:cut])
        self._fp.write(out)
        self.written += len(out)
        return len(data)

    def flush(self) -> None:
        if self._held:
            self._fp.write(self._held)  # a lone lead byte: nothing to escape
            self.written += len(self._held)
            self._held = b""
        self._fp.flush()


def _asset(name: str) -> str:
    return resources.files("sessionstore.views").joinpath("html", name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def page_policy(*, follow: bool = False) -> str:
    """The page's Content-Security-Policy (its ``<meta>``, and the service's header): only its own inline
    script and style, by hash; nothing loaded, no form, no base. ``follow``: the one connection a followed
    page makes, to its own origin's event feed (``connect-src 'self'``)."""
    css, js = _asset("viewer.css"), _asset("viewer.js")
    return ("default-src 'none'; " f"script-src {_csp_hash(js)}; style-src {_csp_hash(css)}; img-src data:; "
            + ("connect-src 'self'; " if follow else "") + "base-uri 'none'; form-action 'none'")


def page_parts(title: str, *, follow: bool = False) -> tuple[bytes, bytes]:
    """The page before and after the session data: the template with its title, policy, style and script."""
    template, css, js = _asset("viewer.html"), _asset("viewer.css"), _asset("viewer.js")
    for name, text in (("viewer.css", css), ("viewer.js", js)):
        if "</" in text:  # would end its element early (an asset bug, not a session's doing)
            raise AssertionError(f"{name} must not contain '</'")
    policy = page_policy(follow=follow)
    head, tail = template.split(_DATA_MARK)
    head = head.replace("{{CSP}}", policy).replace("{{CSS}}", css).replace("{{TITLE}}", _html_text(title))
    tail = tail.replace("{{JS}}", js)
    return head.encode("utf-8"), tail.encode("utf-8")


def _html_text(text: str) -> str:
    """Text for an HTML text node or double-quoted attribute: markup characters as references, lone
    surrogates (not encodable) and control characters (not allowed in HTML text) as U+FFFD."""
    text = "".join("\ufffd" if (ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) < 0xA0
                   or 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
            .replace("'", "&#39;"))


def session_meta(store: Store, session_id: str, *, follow: bool = False) -> dict[str, Any]:
    """What the page shows besides the entries: leaf, name, labels, stats, the context's entry ids; with
    ``follow``, where the page's script follows the session from (see the module's doc)."""
    info = store.session(session_id)
    context = store.context(session_id)
    meta: dict[str, Any] = {
        "generator": GENERATOR,
        "sessionId": session_id,
        "leafId": info.leaf_id,
        "name": info.name,
        "cwd": info.cwd,
        "created": info.created,
        "session": info.to_json(),
        "labels": store.labels(session_id),
        "stats": store.stats(session_id).to_json(),
        # which entries the model sees at the leaf (after compaction and context edits)
        "contextEntryIds": context.entry_ids,
        "contextMessageCount": len(context.messages),
    }
    if follow:  # (the newest seq of the same read as leafId: the feed's first read tells what came after)
        meta["follow"] = {"events": "events", "after": info.entry_count - 1}
    return meta


def write_session_html(store: Store, session_id: str, fp: IO[bytes], *, follow: bool = False) -> int:
    """Write the session as one self-contained HTML page to ``fp``; returns the entries written.
    ``follow``: the service's live page, which follows the session's event feed (see the module's doc)."""
    meta = session_meta(store, session_id, follow=follow)
    name = meta["name"]
    title = f"{name} - session {session_id}" if isinstance(name, str) and name else f"Session {session_id}"
    if len(title) > 300:
        title = title[:300] + "…"
    head, tail = page_parts(title, follow=follow)
    fp.write(head)
    fp.write(b'<script id="session-meta" type="application/json">')
    fp.write(script_safe(js_dumpb(meta)))
    fp.write(b'</script>\n<script id="session-entries" type="application/json">\n')
    safe = ScriptSafeWriter(fp)
    count = store.export_jsonl(session_id, cast(IO[bytes], safe))  # it only writes
    safe.flush()
    fp.write(b"</script>\n")
    fp.write(tail)
    fp.flush()
    return count

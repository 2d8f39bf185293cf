"""Reading what a request carries: JSON bodies (by the library's JSON rules: ``JSON.parse``'s reading,
nesting at most 200 deep), content types, ids taken from raw path segments, and ``If-Match``."""

from __future__ import annotations

import urllib.parse
from typing import Any

import orjson
from fastapi import Request
from starlette.convertors import Convertor, register_url_convertor

from sessionstore.api import Leaf
from sessionstore.protocol import etag as etag  # (re-exported: the routes write bodies.etag)
from sessionstore.protocol import etag_unquote
from sessionstore.service.problems import ProblemError
from sessionstore.store.records import UNSET
from sessionstore.wire.codec import LineRefused, parse_line

JSON_TYPES = ("application/json",)
JSONL_TYPES = ("application/jsonl", "application/x-ndjson")


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").partition(";")[0].strip().lower()


def require_type(request: Request, accepted: tuple[str, ...]) -> None:
    """415 UNSUPPORTED_MEDIA_TYPE unless the body's ``Content-Type`` is one of ``accepted``."""
    given = media_type(request)
    if given not in accepted:
        shown = given or "none"
        raise ProblemError(415, "UNSUPPORTED_MEDIA_TYPE",
                           f"Content-Type {shown!r} is not accepted here: send {' or '.join(accepted)}")


async def read_json(request: Request) -> Any:
    """The request's JSON body (``application/json``). Not JSON: 400 BAD_JSON naming line and column;
    nested deeper than the library allows: 400 BAD_JSON. The size limit is the middleware's."""
    require_type(request, JSON_TYPES)
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
    return parse_json(bytes(raw))


def parse_json(raw: bytes) -> Any:
    if not raw.strip():
        raise ProblemError(400, "BAD_JSON", "the request body is empty: send a JSON value")
    try:
        return parse_line(raw)
    except LineRefused as exc:
        extra: dict[str, Any] = {}
        try:
            orjson.loads(raw)
        except orjson.JSONDecodeError as syntax:
            if "recursion" not in syntax.msg:
                extra = {"line": syntax.lineno, "column": syntax.colno}
                raise ProblemError(400, "BAD_JSON", f"invalid JSON at line {syntax.lineno} column"
                                   f" {syntax.colno}: {syntax.msg}", **extra) from None
        raise ProblemError(400, "BAD_JSON", str(exc)) from None


def json_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProblemError(422, "INVALID_INPUT", f"{what} must be a JSON object")
    return value


def expected_leaf(request: Request) -> Leaf:
    """``If-Match: "<leafId>"`` / ``"root"`` as the library's ``expected_leaf``; absent: UNSET. ``*``
    matches any leaf (unconditional)."""
    given = request.headers.get("if-match")
    if given is None or given.strip() == "*":
        return UNSET
    tag = given.strip()
    if tag.startswith("W/"):
        raise ProblemError(400, "INVALID_INPUT", "If-Match takes a strong ETag (a leaf id in quotes)")
    if len(tag) < 2 or not (tag.startswith('"') and tag.endswith('"')):
        raise ProblemError(400, "INVALID_INPUT", 'If-Match must be an ETag in quotes: "<leafId>" or "root"')
    inner = tag[1:-1]
    return None if inner == "root" else etag_unquote(inner)


class IdConvertor(Convertor[str]):
    """A path segment holding an id: percent-decoded as UTF-8 (``%2F`` is a ``/`` inside the id; the
    middleware routes on the raw path). Invalid UTF-8 (a lone surrogate) or NUL: 400 INVALID_INPUT."""

    regex = "[^/]+"

    def convert(self, value: str) -> str:
        try:
            decoded = urllib.parse.unquote_to_bytes(value.encode("latin-1")).decode("utf-8")
        except UnicodeDecodeError:
            raise ProblemError(400, "INVALID_INPUT", "an id in the path is not UTF-8 (a lone surrogate?)") from None
        if "\x00" in decoded:
            raise ProblemError(400, "INVALID_INPUT", "an id in the path holds NUL")
        return decoded

    def to_string(self, value: str) -> str:
        return urllib.parse.quote(value, safe="")


def register_id_convertor() -> None:
    """Make ``{name:id}`` in a route path an :class:`IdConvertor` segment (Starlette's registry is global)."""
    register_url_convertor("id", IdConvertor())


register_id_convertor()

"""The ASGI layer under the routes: request ids, the access log, routing on the raw path, and the body
limits (size, checked on ``Content-Length`` first and then while the body streams in; the slow-body
timeout between two chunks, so a trickling client holds a connection but never a worker)."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sessionstore.service import ops, problems
from sessionstore.service.config import Limits

REQUEST_ID = re.compile(r"[A-Za-z0-9._:@+=-]{1,128}")
"""A client's ``X-Request-Id`` echoed as it is; any other gets a new id (no header injection, no log noise)."""

IMPORT_PATH = "/v1/imports"


def request_id(scope: Scope) -> str:
    """The id of the request ``scope`` (set by :class:`ServiceMiddleware`)."""
    return str(scope.get("state", {}).get("request_id", ""))


class ServiceMiddleware:
    """Every HTTP request: an ``X-Request-Id`` on the response, its record (:func:`ops.record_request`:
    one JSON access-log line and the request metrics; never a header's value), ``scope["path"]`` set to
    the raw path so that an id's ``%2F`` stays inside its segment, and the body limits of :class:`Limits`."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.lower(): value for name, value in scope.get("headers", ())}
        given = headers.get(b"x-request-id", b"").decode("latin-1")
        rid = given if REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid
        raw = scope.get("raw_path")
        if raw is not None:
            scope["path"] = raw.decode("latin-1").partition("?")[0]
        started = time.perf_counter()
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), (b"x-request-id", rid.encode())]
            await send(message)

        try:
            limit = self.limits.max_import_body if scope["path"] == IMPORT_PATH else self.limits.max_body
            length = headers.get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > limit):
                response = problems.problem(413, "PAYLOAD_TOO_LARGE", f"the request body is over {limit} bytes",
                                            headers={"Connection": "close"}, limit=limit)
                await response(scope, receive, send_with_id)
                return
            await self.app(scope, _limited(receive, limit, self.limits.body_timeout), send_with_id)
        finally:
            # (no response started: the exception goes on to the 500 handler outside this middleware)
            ops.record_request(scope, request_id=rid, status=status or 500, seconds=time.perf_counter() - started)
            ops.sample_pool_now_and_then(scope.get("app"))


def _limited(receive: Receive, limit: int, timeout: float) -> Receive:
    """``receive`` that refuses a body over ``limit`` bytes (413) and one stalled ``timeout`` seconds
    between two chunks (408), both raised as :class:`problems.ProblemError` into the route reading it."""
    seen = 0
    done = False

    async def limited() -> Message:
        nonlocal seen, done
        if done:
            return await receive()  # (after the body: the wait for a disconnect, no timeout)
        try:
            message: dict[str, Any] = dict(await asyncio.wait_for(receive(), timeout))
        except TimeoutError:
            raise problems.ProblemError(408, "REQUEST_TIMEOUT", f"the request body stalled for {timeout:g} s",
                                        headers={"Connection": "close"}) from None
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise problems.ProblemError(413, "PAYLOAD_TOO_LARGE", f"the request body is over {limit} bytes",
                                            headers={"Connection": "close"}, limit=limit)
            done = not message.get("more_body", False)
        else:
            done = True
        return message

    return limited

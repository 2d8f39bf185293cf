"""The ASGI layer under the routes: request ids, the access log, routing on the raw path, and the body
limits (size, checked on ``Content-Length`` first and then while the body streams in; time, by a minimum
rate, so a trickling client holds a connection for a bounded time and never a worker)."""

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
            body = _Body(receive, limit, self.limits, announced=length not in (None, b"0")
                         or b"transfer-encoding" in headers)
            await self.app(scope, body.receive, body.closing(send_with_id))
        finally:
            # (no response started: the exception goes on to the 500 handler outside this middleware)
            ops.record_request(scope, request_id=rid, status=status or 500, seconds=time.perf_counter() - started)
            ops.sample_pool_now_and_then(scope.get("app"))


class _Body:
    """The request body as the route reads it. :meth:`receive` refuses a body over ``limit`` bytes (413)
    and a slow one (408), both raised as :class:`problems.ProblemError` into the route reading it, with
    ``Connection: close``. :meth:`closing` adds ``Connection: close`` to a response sent before the
    body was all read (a refusal that never read it): else the server would go on reading, at the
    client's pace, a body nobody reads.

    Slow is mod_reqtimeout's rule: the body has ``limits.body_timeout`` seconds, plus one second for every
    ``limits.body_min_rate`` bytes received, and no gap between two chunks may reach ``body_timeout``.
    Only the time spent waiting for the client counts: a route busy with a chunk (a slow database) does
    not use the client's allowance."""

    def __init__(self, receive: Receive, limit: int, limits: Limits, *, announced: bool) -> None:
        self._receive = receive
        self._limit = limit
        self._limits = limits
        self._seen = 0
        self._done = not announced
        self._allowance = limits.body_timeout

    async def receive(self) -> Message:
        if self._done:
            return await self._receive()  # (after the body: the wait for a disconnect, no timeout)
        timeout = self._limits.body_timeout
        wait = min(timeout, self._allowance)
        started = time.monotonic()
        try:
            message: dict[str, Any] = dict(await asyncio.wait_for(self._receive(), max(wait, 0.0)))
        except TimeoutError:
            if wait < timeout:
                detail = (f"the request body arrived slower than {self._limits.body_min_rate} bytes a second"
                          f" (after {self._seen} bytes)")
            else:
                detail = f"the request body stalled for {timeout:g} s"
            raise problems.ProblemError(408, "REQUEST_TIMEOUT", detail, headers={"Connection": "close"}) from None
        self._allowance -= time.monotonic() - started
        if message["type"] == "http.request":
            size = len(message.get("body", b""))
            self._seen += size
            self._allowance += size / self._limits.body_min_rate
            if self._seen > self._limit:
                raise problems.ProblemError(413, "PAYLOAD_TOO_LARGE", f"the request body is over {self._limit}"
                                            " bytes", headers={"Connection": "close"}, limit=self._limit)
            self._done = not message.get("more_body", False)
        else:
            self._done = True
        return message

    def closing(self, send: Send) -> Send:
        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and not self._done:
                headers = list(message.get("headers", ()))
                if not any(name.lower() == b"connection" for name, _ in headers):
                    message["headers"] = [*headers, (b"connection", b"close")]
            await send(message)

        return closing_send

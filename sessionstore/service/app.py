"""The ASGI application: routers, error handlers, request ids, the access log and the request limits."""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from sessionstore import errors
from sessionstore.api import SessionStore
from sessionstore.service import ops, problems, routes_events, routes_lookup, routes_read, routes_write, tokens
from sessionstore.service.config import ServiceConfig
from sessionstore.service.middleware import ServiceMiddleware
from sessionstore.service.ratelimit import RateLimiter

log = logging.getLogger("sessionstore.service")


def create_app(config: ServiceConfig) -> FastAPI:
    """The service over ``config.url``: opens the store at start-up (creating a new SQLite database like
    the CLI's writers) and closes it at shutdown."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        ops.watch_for_shutdown()
        app.state.store = await _open_store(config.url)
        app.state.rate_limiter = None if config.rate_limit is None else RateLimiter(app.state.store, config.rate_limit)
        retention = _start_retention(app.state.store, config)
        try:
            yield
        finally:
            if retention is not None:
                retention.cancel()
            if getattr(app.state, "feeds", None) is not None:
                app.state.feeds.close()
            app.state.store.close()
            ops.worker_exiting()

    app = FastAPI(title="sessionstore", version="1", lifespan=lifespan,
                  description="Coding-agent sessions (pi-compatible) over HTTP: SPEC sections 15-16.")
    app.state.config = config
    app.state.verified_tokens = tokens.VerifiedTokens(config.token_cache)
    _configure_logging()
    ops.configure_access_log()
    _add_error_handlers(app)
    app.include_router(ops.router)
    app.include_router(routes_read.router)
    app.include_router(routes_write.router)
    app.include_router(routes_lookup.router)
    app.include_router(routes_events.router)
    if config.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(config.cors_origins), allow_credentials=False,
                           allow_methods=["GET", "POST", "PUT", "DELETE"],
                           allow_headers=["Authorization", "Content-Type", "If-Match", "Idempotency-Key",
                                          "X-Request-Id"],
                           expose_headers=["ETag", "Location", "X-Request-Id", "X-Last-Seq", "Retry-After",
                                           "Idempotent-Replayed"])
    app.add_middleware(ServiceMiddleware, limits=config.limits)  # (outermost: ids and limits for all)
    return app


def _start_retention(store: SessionStore, config: ServiceConfig) -> asyncio.Task[None] | None:
    """The scheduled retention run (SPEC 18; ``service.retention_task``), unless the interval is 0."""
    if config.retention_interval <= 0:
        return None
    from pathlib import Path

    from sessionstore.service.retention_task import schedule
    from sessionstore.store.archive import default_archive_dir

    directory = Path(config.archive_dir) if config.archive_dir else default_archive_dir(store.url)
    return asyncio.get_running_loop().create_task(
        schedule(store, archive_dir=directory, interval_s=config.retention_interval))


WORKER_ENTRY_CACHE_BYTES = 32 << 20
"""The bound of a worker's memory of the entries it checked (``SessionStore(entry_cache_bytes=...)``; the
library's default is 128 MiB): a worker serves every tenant from one store and stays well under its
300 MB target with it (the soak measured 145-185 MB without the cache)."""


async def _open_store(url: str | None) -> SessionStore:
    """The worker's store. While the database cannot be reached (a worker started again by ``serve
    --workers N`` during an outage) it tries again, up to every 2 s, instead of failing: uvicorn's
    supervisor takes a worker that fails to start for a broken application and stops the whole server.
    ``serve`` itself opened the store before anything listened, so any other error (an outdated schema,
    a SQLite file that cannot be opened) fails at once, as does a stop signal meanwhile."""
    delay = 0.1
    while True:
        try:
            return await anyio.to_thread.run_sync(
                functools.partial(SessionStore, url, entry_cache_bytes=WORKER_ENTRY_CACHE_BYTES))
        except errors.StoreError as exc:
            if not (url or "").startswith("postgresql") or not _unreachable(exc) or ops.draining():
                raise
            if delay == 0.1:
                log.warning("the database cannot be reached: this worker starts serving once it can")
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)


def _unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` or an error it was raised from says the database could not be reached."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, problems.connection_errors()):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _configure_logging() -> None:
    """The access log and the service's errors, one line each on stderr (uvicorn's own access log is off:
    it would not carry the request id). Each line names the worker's process id (``[1234]``), so a
    request can be traced to its worker under ``--workers N``."""
    logger = logging.getLogger("sessionstore.service")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s [%(process)d] %(name)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def app_from_env() -> FastAPI:
    """The application for uvicorn's ``--factory`` (each worker): configured by the environment."""
    return create_app(ServiceConfig.from_env())


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(problems.ProblemError)
    async def on_problem(request: Request, exc: problems.ProblemError) -> Response:
        return problems.from_problem_error(exc)

    @app.exception_handler(errors.SessionStoreError)
    async def on_store_error(request: Request, exc: errors.SessionStoreError) -> Response:
        return problems.from_problem_error(problems.for_store_error(exc))

    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()))
        return problems.problem(422, "INVALID_INPUT", f"{where}: {first.get('msg', 'invalid request')}")

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> Response:
        codes = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}
        return problems.problem(exc.status_code, codes.get(exc.status_code, "INVALID_INPUT"), str(exc.detail),
                                headers=dict(exc.headers or {}))

    async def on_unavailable(request: Request, exc: Exception) -> Response:
        log.warning("database unavailable in %s %s: %s", request.method, request.url.path, type(exc).__name__)
        found = problems.unavailable(exc)
        return problems.from_problem_error(found or problems.ProblemError(500, "INTERNAL", "internal error"))

    for unavailable in problems.connection_errors():
        app.add_exception_handler(unavailable, on_unavailable)

    @app.exception_handler(Exception)
    async def on_anything(request: Request, exc: Exception) -> Response:
        log.error("internal error in %s %s: %s", request.method, request.url.path, type(exc).__name__,
                  exc_info=exc)
        return problems.problem(500, "INTERNAL", "internal error")

"""The ASGI application: routers, error handlers, request ids, the access log and the request limits."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from sessionstore import errors
from sessionstore.api import SessionStore
from sessionstore.service import problems, routes_events, routes_read, routes_write
from sessionstore.service.config import ServiceConfig
from sessionstore.service.middleware import ServiceMiddleware

log = logging.getLogger("sessionstore.service")


def create_app(config: ServiceConfig) -> FastAPI:
    """The service over ``config.url``: opens the store at start-up (creating a new SQLite database like
    the CLI's writers) and closes it at shutdown."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.store = SessionStore(config.url)
        try:
            yield
        finally:
            if getattr(app.state, "feeds", None) is not None:
                app.state.feeds.close()
            app.state.store.close()

    app = FastAPI(title="sessionstore", version="1", lifespan=lifespan,
                  description="Coding-agent sessions (pi-compatible) over HTTP: SPEC sections 15-16.")
    app.state.config = config
    _configure_logging()
    _add_error_handlers(app)
    app.include_router(routes_read.router)
    app.include_router(routes_write.router)
    app.include_router(routes_events.router)
    if config.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(config.cors_origins), allow_credentials=False,
                           allow_methods=["GET", "POST", "PUT", "DELETE"],
                           allow_headers=["Authorization", "Content-Type", "If-Match", "Idempotency-Key",
                                          "X-Request-Id"],
                           expose_headers=["ETag", "Location", "X-Request-Id", "Retry-After"])
    app.add_middleware(ServiceMiddleware, limits=config.limits)  # (outermost: ids and limits for all)
    return app


def _configure_logging() -> None:
    """The access log and the service's errors, one line each on stderr (uvicorn's own access log is off:
    it would not carry the request id)."""
    logger = logging.getLogger("sessionstore.service")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
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

    @app.exception_handler(Exception)
    async def on_anything(request: Request, exc: Exception) -> Response:
        log.error("internal error in %s %s: %s", request.method, request.url.path, type(exc).__name__,
                  exc_info=exc)
        return problems.problem(500, "INTERNAL", "internal error")

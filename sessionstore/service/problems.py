"""Errors as RFC 9457 ``application/problem+json``: ONE table from the library's error classes to the
HTTP status and API code, and the one function that renders a problem. Bodies never carry a traceback,
a token or an ``Authorization`` header."""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Any

import orjson
from starlette.responses import Response

from sessionstore import errors
from sessionstore.service.ratelimit import RateLimited

PROBLEM_TYPE = "application/problem+json"

# (library error class, status, API code); the first class an error is an instance of wins, so
# subclasses come before their parents.
ERROR_TABLE: tuple[tuple[type[errors.SessionStoreError], int, str], ...] = (
    (errors.SessionNotFoundError, 404, "NOT_FOUND"),
    (errors.EntryNotFoundError, 404, "NOT_FOUND"),
    (errors.SessionExistsError, 409, "SESSION_EXISTS"),
    (errors.EntryIdTakenError, 409, "DUPLICATE_ID"),
    (errors.LeafConflictError, 412, "LEAF_CONFLICT"),
    (errors.SourceConflictError, 409, "SESSION_EXISTS"),
    (errors.JsonlError, 422, "INVALID_INPUT"),
    (errors.InvalidCompactionError, 422, "INVALID_INPUT"),
    (errors.InvalidInputError, 422, "INVALID_INPUT"),
    (errors.SchemaError, 503, "SERVICE_UNAVAILABLE"),
    (errors.BackendUnavailableError, 503, "SERVICE_UNAVAILABLE"),
    (errors.StoreError, 503, "SERVICE_UNAVAILABLE"),
    (RateLimited, 429, "RATE_LIMITED"),
)


_ENTRY_PLACE = re.compile(r"entries\[(\d+)\]: ")
"""The prefix ``append_entries`` gives a refusal of one entry of a batch (its documented text)."""


class ProblemError(Exception):
    """Raised anywhere in a request to answer with a problem; ``headers`` go on the response."""

    def __init__(self, status: int, code: str, detail: str, *, headers: dict[str, str] | None = None,
                 **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = headers or {}
        self.extra = extra


def problem(status: int, code: str, detail: str, *, headers: dict[str, str] | None = None,
            **extra: Any) -> Response:
    """The problem+json response: ``type``, ``status``, ``title`` (the status's phrase), ``code``,
    ``detail`` and the ``extra`` members (camelCase names, e.g. ``currentLeafId``, ``storeCode``)."""
    body: dict[str, Any] = {"type": "about:blank", "status": status, "title": HTTPStatus(status).phrase,
                            "code": code, "detail": detail}
    body.update(extra)
    return Response(orjson.dumps(body) + b"\n", status_code=status, media_type=PROBLEM_TYPE,
                    headers=headers)


def from_problem_error(exc: ProblemError) -> Response:
    return problem(exc.status, exc.code, exc.detail, headers=exc.headers, **exc.extra)


def for_store_error(exc: errors.SessionStoreError) -> ProblemError:
    """The problem a library error answers with, by :data:`ERROR_TABLE` (unlisted: 500 INTERNAL)."""
    extra: dict[str, Any] = {"storeCode": exc.code}
    if isinstance(exc, errors.LeafConflictError):
        extra["currentLeafId"] = exc.actual
    if isinstance(exc, errors.SessionExistsError):
        extra["sessionId"] = exc.session_id
    if isinstance(exc, errors.JsonlError) and exc.line is not None:
        extra["line"] = exc.line
    place = _ENTRY_PLACE.match(str(exc))
    if place is not None:  # (which entry of an append's batch was refused: its index from 0)
        extra["entry"] = int(place.group(1))
    for cls, status, code in ERROR_TABLE:
        if isinstance(exc, cls):
            headers = {"Retry-After": "1"} if status == 503 else None
            if isinstance(exc, RateLimited):
                headers = {"Retry-After": str(exc.retry_after)}
            detail = str(exc) if status != 503 else "the database is not available"
            return ProblemError(status, code, detail, headers=headers, **extra)
    return ProblemError(500, "INTERNAL", "internal error", **extra)


# -- the database out of reach (SPEC 17): one rule for every error that means it --------------------
def unavailable(exc: BaseException) -> ProblemError | None:
    """The 503 problem (``SERVICE_UNAVAILABLE`` with ``Retry-After``) of an error meaning that the database
    cannot be used now: a library error :data:`ERROR_TABLE` maps to 503, or one of
    :func:`connection_errors` that reached the service untranslated (a token check, an idempotency
    record); ``None`` for any other error."""
    if isinstance(exc, errors.SessionStoreError):
        found = for_store_error(exc)
        return found if found.status == 503 else None
    if isinstance(exc, connection_errors()):
        return for_store_error(errors.StoreError(type(exc).__name__))
    return None


def connection_errors() -> tuple[type[Exception], ...]:
    """SQLAlchemy's and psycopg's errors about the connection or the server (not about a statement):
    the database went away, refused the connection, or the pool timed out."""
    from sqlalchemy import exc as sa

    found: list[type[Exception]] = [sa.OperationalError, sa.InterfaceError, sa.TimeoutError, sa.DisconnectionError]
    try:
        import psycopg
    except ImportError:  # (SQLite only: no psycopg error can happen)
        return tuple(found)
    return (*found, psycopg.OperationalError, psycopg.InterfaceError)

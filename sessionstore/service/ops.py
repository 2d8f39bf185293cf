"""Operations (SPEC 17): ``/healthz``, ``/readyz``, ``/metrics``, the one record of each request (its
JSON access-log line and its metrics), the open-feeds gauge and the draining flag the feeds watch.

Metrics are ``prometheus_client``'s. Under ``serve`` every worker writes them to the directory named by
``PROMETHEUS_MULTIPROC_DIR`` (made by ``serve``, removed when it exits), and ``/metrics`` in any worker
adds up all of them, so the figures hold across ``--workers N``; a process importing this module
without that variable (a test's own app) keeps them in its memory. The variable must be set before
this module is first imported: ``prometheus_client`` picks its storage then.

For the feeds: :func:`open_feed` (or :func:`feed_opened` / :func:`feed_closed`) keeps the
``sessionstore_open_feeds`` gauge, and :func:`draining` / :func:`until_draining` say when ``serve``
got SIGTERM (a feed then sends its final event and ends, so that the graceful shutdown can finish).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, Literal, get_args

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from starlette.responses import Response
from starlette.types import Scope

from sessionstore.api import SessionStore
from sessionstore.errors import SchemaError, SchemaTooNewError, StoreError
from sessionstore.service import problems

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""Where each worker's metric files are (``prometheus_client``'s own variable)."""

READY_TIMEOUT = 5.0
"""Seconds ``/readyz`` waits for the database before it answers 503."""

router = APIRouter(tags=["operations"])
access_log = logging.getLogger("sessionstore.service.access")

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})
UNMATCHED = "(unmatched)"
"""The route label of a request no route took (a 404, or a body the middleware refused first)."""

REQUESTS = Counter("sessionstore_http_requests_total", "HTTP requests answered, by route template and status.",
                   ["method", "route", "status"])
LATENCY = Histogram("sessionstore_http_request_duration_seconds",
                    "Time from a request's arrival to the end of its response, by route template.",
                    ["method", "route"],
                    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0))
APPENDED = Counter("sessionstore_appended_entries_total", "Entries written by appends (a replayed batch: none).")
OPEN_FEEDS = Gauge("sessionstore_open_feeds", "Event streams open now.", ["feed"], multiprocess_mode="livesum")
POOL_CHECKED_OUT = Gauge("sessionstore_db_pool_checked_out",
                         "Database connections in use (the pool's checked-out connections), all workers.",
                         multiprocess_mode="livesum")
POOL_SIZE = Gauge("sessionstore_db_pool_size", "Connections the database pools keep, all workers.",
                  multiprocess_mode="livesum")

Feed = Literal["session", "tenant"]
for _feed in get_args(Feed):
    OPEN_FEEDS.labels(_feed)  # (0 from the start: a gauge without a sample would look like no metric)


# -- what the routes and feeds call ------------------------------------------------------------
def entries_appended(count: int) -> None:
    """Count ``count`` entries an append wrote."""
    if count:
        APPENDED.inc(count)


def feed_opened(feed: Feed = "session") -> None:
    """A feed (``session``: one session's events; ``tenant``: ``/v1/events``) started streaming."""
    OPEN_FEEDS.labels(feed).inc()


def feed_closed(feed: Feed = "session") -> None:
    """The feed :func:`feed_opened` counted ended (each opened feed is closed exactly once)."""
    OPEN_FEEDS.labels(feed).dec()


@contextmanager
def open_feed(feed: Feed = "session") -> Iterator[None]:
    """Count a feed as open for the ``with`` block, however it ends."""
    feed_opened(feed)
    try:
        yield
    finally:
        feed_closed(feed)


_draining = threading.Event()
_drain_waiters: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}
_drain_lock = threading.Lock()


def begin_draining() -> None:
    """The process is shutting down (``serve`` got SIGTERM or Ctrl-C): wake every :func:`until_draining`."""
    _draining.set()
    with _drain_lock:
        waiters = list(_drain_waiters.items())
    for loop, event in waiters:
        if not loop.is_closed():
            loop.call_soon_threadsafe(event.set)


def draining() -> bool:
    """Whether the process is shutting down: a long response (a feed) should finish now."""
    return _draining.is_set()


def watch_for_shutdown() -> None:
    """Call :func:`begin_draining` when this process gets SIGTERM or SIGINT, before the handler in place
    (uvicorn's, which stops accepting and then waits for the responses in flight: a feed must end for
    that wait to end). Called at the application's start-up, on the main thread (else it does nothing)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        before = signal.getsignal(sig)
        if getattr(before, "sessionstore_drains", False):
            continue

        def drain_then(signum: int, frame: FrameType | None, before: Any = before) -> None:
            begin_draining()
            if callable(before):
                before(signum, frame)
            elif before == signal.SIG_DFL:
                signal.signal(signum, signal.SIG_DFL)
                signal.raise_signal(signum)

        drain_then.sessionstore_drains = True  # type: ignore[attr-defined]
        signal.signal(sig, drain_then)


async def until_draining() -> None:
    """Return once the process is shutting down (at once if it already is)."""
    loop = asyncio.get_running_loop()
    with _drain_lock:
        event = _drain_waiters.setdefault(loop, asyncio.Event())
    if _draining.is_set():
        event.set()
    await event.wait()


# -- the record of each request -------------------------------------------------------------
def route_template(scope: Scope) -> str:
    """The template of the route that took the request (``/v1/sessions/{session_id}``): labels and log
    fields by template, never by raw path, so ids cannot multiply them."""
    route = scope.get("route")
    template = getattr(route, "path_format", None) or getattr(route, "path", None)
    return str(template) if template else UNMATCHED


def request_tenant(scope: Scope) -> str | None:
    """The tenant of the authenticated caller (``deps.caller`` keeps it in ``scope["state"]``), if any."""
    caller = scope.get("state", {}).get("caller")
    tenant = getattr(caller, "tenant", None)
    return str(tenant) if tenant is not None else None


def record_request(scope: Scope, *, request_id: str, status: int, seconds: float) -> None:
    """The end of one HTTP request: its metrics and its access-log line, one JSON object with ``ts``,
    ``method``, ``route`` (the template), ``path`` (raw, cut at 512 characters), ``status``,
    ``durationMs``, ``requestId``, ``tenant`` (null before authentication) and ``pid`` (the worker's
    process, under ``--workers N``). No header's value is
    logged, so neither a token nor an ``Authorization`` value reaches the log."""
    method = scope["method"] if scope["method"] in METHODS else "OTHER"
    route = route_template(scope)
    REQUESTS.labels(method, route, str(status)).inc()
    LATENCY.labels(method, route).observe(seconds)
    if access_log.isEnabledFor(logging.INFO):
        path = scope["path"] if len(scope["path"]) <= 512 else scope["path"][:512] + "..."
        access_log.info(json.dumps({
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "method": method, "route": route, "path": path, "status": status,
            "durationMs": round(seconds * 1000, 2), "requestId": request_id, "tenant": request_tenant(scope),
            "pid": os.getpid(),
        }, ensure_ascii=True))


def configure_access_log() -> None:
    """The access log: one JSON object per line on stderr, nothing else on the line."""
    if not access_log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        access_log.addHandler(handler)
        access_log.setLevel(logging.INFO)
        access_log.propagate = False


# -- the routes ----------------------------------------------------------------------------------
@router.get("/healthz", response_class=Response)
async def healthz() -> Response:
    """200 while the process runs (no database, no token)."""
    return Response(b'{"status":"ok"}\n', media_type="application/json")


@router.get("/readyz", response_class=Response)
async def readyz(request: Request) -> Response:
    """200 when the database answers and its schema is the one this code needs; else 503
    SERVICE_UNAVAILABLE with ``Retry-After`` (no token needed)."""
    store: SessionStore = request.app.state.store
    try:
        await asyncio.wait_for(run_in_threadpool(check_database, store), READY_TIMEOUT)
    except TimeoutError:
        return problems.from_problem_error(problems.for_store_error(
            StoreError(f"the database did not answer in {READY_TIMEOUT:g} s")))
    except SchemaError as exc:
        not_ready = problems.for_store_error(exc)
        not_ready.detail = ("the database schema is newer than this version: upgrade sessionstore"
                            if isinstance(exc, SchemaTooNewError) else
                            "the database schema is not the one this version needs: run `sessionstore db upgrade`")
        return problems.from_problem_error(not_ready)
    except Exception as exc:
        unavailable = problems.unavailable(exc)
        if unavailable is None:
            raise
        return problems.from_problem_error(unavailable)
    return Response(b'{"status":"ready"}\n', media_type="application/json")


def check_database(store: SessionStore) -> None:
    """Raise unless ``store``'s database answers at the schema revision this code needs (the check
    opening a store makes: :func:`sessionstore.store.migrate.check_database`)."""
    from sessionstore.store import migrate

    migrate.check_database(store._entries.engine)


@router.get("/metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    """Prometheus text: requests by route and status, latency histograms, entries appended, open feeds,
    database pool use. Needs an ``admin`` token unless ``serve --metrics-public`` (or ``--no-auth``)."""
    config = request.app.state.config
    if not config.metrics_public and not config.no_auth:
        from sessionstore.service.deps import caller

        who = await caller(request)
        if who.scope != "admin":
            raise problems.ProblemError(403, "FORBIDDEN", "/metrics needs an admin token (or serve --metrics-public)")
    sample_pool(request.app.state.store)
    return Response(exposition(), media_type=CONTENT_TYPE_LATEST)


def exposition() -> bytes:
    """Every worker's metrics in Prometheus text (this process's alone without a metrics directory)."""
    folder = os.environ.get(MULTIPROC_ENV)
    if not folder:
        return generate_latest(REGISTRY)
    forget_dead_workers(Path(folder))
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=folder)  # type: ignore[no-untyped-call]
    return generate_latest(registry)


def forget_dead_workers(folder: Path) -> None:
    """Drop the live gauges of worker processes that are gone (a worker killed or restarted by the
    supervisor never cleans up after itself); their counters and histograms stay, as totals must."""
    pids: set[int] = set()
    for file in folder.glob("gauge_live*_*.db"):
        digits = file.stem.rpartition("_")[2]
        if digits.isdigit():
            pids.add(int(digits))
    for pid in pids:
        if not _alive(pid):
            multiprocess.mark_process_dead(pid, str(folder))  # type: ignore[no-untyped-call]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # (another user's process of that pid: alive, not ours to judge)
        return True
    return True


def worker_exiting() -> None:
    """This process's live gauges leave the figures (at the end of the application's lifespan)."""
    folder = os.environ.get(MULTIPROC_ENV)
    if folder and Path(folder).is_dir():
        multiprocess.mark_process_dead(os.getpid(), folder)  # type: ignore[no-untyped-call]


def sample_pool(store: SessionStore) -> None:
    """Set the pool gauges from the store's connection pool (SQLAlchemy's ``checkedout()`` and
    ``size()``); a SQLite store without a pool of its own reports none."""
    pool = _pool_of(store)
    if pool is None:
        return
    try:
        POOL_CHECKED_OUT.set(pool.checkedout())
        POOL_SIZE.set(pool.size())
    except (AttributeError, NotImplementedError):  # a pool kind without these figures
        return


def _pool_of(store: SessionStore) -> Any:
    backend = getattr(store._entries.backend, "shared", None)
    engine = getattr(backend, "engine", None)
    return getattr(engine, "pool", None)


_last_sample = 0.0


def sample_pool_now_and_then(app: Any) -> None:
    """:func:`sample_pool` of ``app``'s store at most once a second (called at the end of requests, so
    that a worker no scrape reaches still reports its pool)."""
    global _last_sample
    now = time.monotonic()
    store = getattr(getattr(app, "state", None), "store", None)
    if store is None or now - _last_sample < 1.0:
        return
    _last_sample = now
    sample_pool(store)

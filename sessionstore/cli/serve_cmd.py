"""``sessionstore serve``: the HTTP service (SPEC 15) on uvicorn."""

from __future__ import annotations

import inspect
import ipaddress
import math
import os
import shutil
import signal
import socket
import tempfile
from typing import Any

import click

from sessionstore.cli.app import Ctx, fail, handle_errors, pass_ctx
from sessionstore.errors import InvalidInputError
from sessionstore.service.config import Limits, RateLimit, ServiceConfig

FACTORY = "sessionstore.service.app:app_from_env"
METRICS_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus_client's directory of the workers' metric files (see :mod:`sessionstore.service.ops`)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine: ``localhost``, 127.0.0.0/8 or ::1."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a port in use is one ``error:`` line, not a log record."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        fail(f"--host {host}: {exc.strerror}")
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    sock.set_inheritable(True)
    return sock


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port to listen on.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes (each opens its own connections to the database).")
@click.option("--no-auth", is_flag=True,
              help="No tokens: every request is tenant 'default' with scope admin. Refused unless --host is"
                   " a loopback address.")
@click.option("--cors-origin", "cors_origins", multiple=True, metavar="ORIGIN",
              help="Allow cross-origin requests from ORIGIN (repeatable). CORS is off otherwise.")
@click.option("--ssl-certfile", type=click.Path(exists=True, dir_okay=False), default=None,
              help="TLS certificate (PEM); with --ssl-keyfile, serve HTTPS.")
@click.option("--ssl-keyfile", type=click.Path(exists=True, dir_okay=False), default=None,
              help="TLS private key (PEM).")
@click.option("--max-body", type=click.IntRange(min=1), default=Limits.max_body, show_default=True,
              metavar="BYTES", help="Largest request body, imports aside (larger: 413).")
@click.option("--max-import-body", type=click.IntRange(min=1), default=Limits.max_import_body,
              show_default=True, metavar="BYTES", help="Largest import body (larger: 413).")
@click.option("--max-entries", type=click.IntRange(min=1), default=Limits.max_entries, show_default=True,
              help="Most entries one append may carry.")
@click.option("--graceful-timeout", type=click.FloatRange(min=0), default=30.0, show_default=True,
              metavar="SECONDS", help="On SIGTERM or Ctrl-C, stop accepting connections and let the requests"
                                      " in flight finish for up to this long before they are cancelled.")
@click.option("--metrics-public", is_flag=True,
              help="Serve /metrics without a token (for a scraper on a private network); else it needs an"
                   " admin token.")
@click.option("--body-timeout", type=click.FloatRange(min=0.01), default=Limits.body_timeout, show_default=True,
              metavar="SECONDS", help="Time a request body has to arrive (extended by --body-min-rate) and the"
                                      " longest stall between two of its chunks; slower: 408.")
@click.option("--body-min-rate", type=click.IntRange(min=1), default=Limits.body_min_rate, show_default=True,
              metavar="BYTES", help="Each BYTES of body received extend --body-timeout by one second, so a"
                                    " body trickling in slower than BYTES a second is dropped.")
@click.option("--token-cache", type=click.FloatRange(min=0), default=ServiceConfig.token_cache, show_default=True,
              metavar="SECONDS", help="Trust a verified token this long without looking it up again (a revoked"
                                      " token is refused within SECONDS; 0: look up every request).")
@click.option("--rate-limit", metavar="N/UNIT", default=None,
              help="At most N requests per tenant per second, minute or hour (N/s, N/min, N/h), counted in the"
                   " database so the limit holds across workers and hosts; over it: 429 with Retry-After."
                   " Off by default.")
@click.option("--feed-heartbeat", type=click.FloatRange(min=0.05), default=Limits.feed_heartbeat, show_default=True,
              metavar="SECONDS", help="An event stream sends a comment when it sent nothing for this long.")
@click.option("--feed-queue", type=click.IntRange(min=1), default=Limits.feed_queue, show_default=True,
              metavar="EVENTS", help="Cut off an event stream's subscriber this many events behind (it may resume).")
@click.option("--feed-queue-bytes", type=click.IntRange(min=1), default=Limits.feed_queue_bytes, show_default=True,
              metavar="BYTES", help="... or this many bytes of entries behind.")
@click.option("--feed-cut-grace", type=click.FloatRange(min=0.05), default=Limits.feed_cut_grace, show_default=True,
              metavar="SECONDS", help="Disconnect a feed's subscriber that takes nothing for this long (it"
                                      " may resume).")
@click.option("--retention-interval", type=click.FloatRange(min=0), default=ServiceConfig.retention_interval,
              show_default=True, metavar="SECONDS",
              help="Apply the tenants' retention policies this often (one worker at a time, across hosts; 0: never).")
@click.option("--archive-dir", default=None, type=click.Path(file_okay=False), metavar="DIR",
              help="Where the retention run puts archive files (default: beside the database).")
@click.option("--regex-timeout", type=click.FloatRange(min=0), default=ServiceConfig.regex_timeout, show_default=True,
              metavar="SECONDS", help="Stop a re: search after this long (it runs in a child process; 0: in the"
                                      " worker, never stopped).")
@pass_ctx
@handle_errors
def serve(ctx: Ctx, host: str, port: int, workers: int, no_auth: bool, cors_origins: tuple[str, ...],
          ssl_certfile: str | None, ssl_keyfile: str | None, max_body: int, max_import_body: int,
          max_entries: int, graceful_timeout: float, metrics_public: bool, body_timeout: float,
          body_min_rate: int, token_cache: float, rate_limit: str | None, feed_heartbeat: float, feed_queue: int,
          feed_queue_bytes: int, feed_cut_grace: float, retention_interval: float, archive_dir: str | None,
          regex_timeout: float) -> None:
    """Serve the HTTP API (SPEC 15) on uvicorn; stops on SIGTERM or Ctrl-C, gracefully (exit status 0).

    Requests need 'Authorization: Bearer <token>' (sessionstore token create); the token alone decides the
    tenant. The database is --db, like every command's; a new SQLite file is created. /docs and
    /openapi.json describe every route; /healthz, /readyz and /metrics are for operators (SPEC 17)."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    if no_auth and not is_loopback(host):
        fail(f"--no-auth is refused on --host {host}: it is not a loopback address (127.0.0.0/8, ::1, localhost)")
    if (ssl_certfile is None) != (ssl_keyfile is None):
        fail("--ssl-certfile and --ssl-keyfile go together")
    try:
        budget = None if rate_limit is None else RateLimit.parse(rate_limit)
    except InvalidInputError as exc:
        fail(f"--rate-limit: {exc}")
    ctx.local_store.close()  # (opened once here: a bad database is one error line before anything listens)
    config = ServiceConfig(url=ctx.url, no_auth=no_auth, cors_origins=cors_origins, token_cache=token_cache,
                           metrics_public=metrics_public,
                           rate_limit=budget, retention_interval=retention_interval, regex_timeout=regex_timeout,
                           archive_dir=None if archive_dir is None else os.path.abspath(archive_dir),
                           limits=Limits(max_body=max_body, max_import_body=max_import_body,
                                         max_entries=max_entries, body_timeout=body_timeout,
                                         body_min_rate=body_min_rate,
                                         feed_heartbeat=feed_heartbeat, feed_queue=feed_queue,
                                         feed_queue_bytes=feed_queue_bytes, feed_cut_grace=feed_cut_grace))
    os.environ.update(config.to_env())
    sock = _bind(host, port)
    # Every worker's metrics go to one directory of this server's, so that /metrics in any worker adds
    # them all up; set before a worker imports prometheus_client, removed when the server stops.
    metrics_dir = tempfile.mkdtemp(prefix="sessionstore-metrics-")
    os.environ[METRICS_ENV] = metrics_dir
    server_config = uvicorn.Config(FACTORY, factory=True, workers=workers, access_log=False,
                                   ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile,
                                   timeout_keep_alive=5, log_level="info", server_header=False,
                                   timeout_graceful_shutdown=math.ceil(graceful_timeout))  # (whole seconds)
    server = uvicorn.Server(server_config)
    # uvicorn raises the signal that stopped it again once it has shut down: with these handlers in
    # place a stop by SIGTERM or Ctrl-C exits 0 like any finished command (and one before uvicorn took
    # the signals over still stops the server).
    previous = {sig: signal.signal(sig, _stopped) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        if workers > 1:
            supervisor: Any = Multiprocess  # (uvicorn < 0.36 also takes the target to run in each worker)
            if "target" in inspect.signature(Multiprocess).parameters:
                supervisor(server_config, target=server.run, sockets=[sock]).run()
            else:
                supervisor(server_config, sockets=[sock]).run()
        else:
            server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        shutil.rmtree(metrics_dir, ignore_errors=True)


def _stopped(sig: int, frame: object) -> None:
    """The handler of SIGTERM and SIGINT around uvicorn's own: exit with status 0 (after uvicorn's
    graceful shutdown, or before it started: nothing was in flight)."""
    raise SystemExit(0)

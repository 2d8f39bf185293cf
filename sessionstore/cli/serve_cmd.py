"""``sessionstore serve``: the HTTP service (SPEC 15) on uvicorn."""

from __future__ import annotations

import inspect
import ipaddress
import os
import socket
from typing import Any

import click

from sessionstore.cli.main import Ctx, fail, handle_errors, pass_ctx
from sessionstore.service.config import Limits, ServiceConfig

FACTORY = "sessionstore.service.app:app_from_env"


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
@click.option("--body-timeout", type=click.FloatRange(min=0.01), default=Limits.body_timeout, show_default=True,
              metavar="SECONDS", help="Drop a request whose body stalls this long between two chunks.")
@click.option("--feed-heartbeat", type=click.FloatRange(min=0.05), default=Limits.feed_heartbeat, show_default=True,
              metavar="SECONDS", help="An event stream sends a comment when it sent nothing for this long.")
@click.option("--feed-queue", type=click.IntRange(min=1), default=Limits.feed_queue, show_default=True,
              metavar="EVENTS", help="Cut off an event stream's subscriber this many events behind (it may resume).")
@click.option("--feed-queue-bytes", type=click.IntRange(min=1), default=Limits.feed_queue_bytes, show_default=True,
              metavar="BYTES", help="... or this many bytes of entries behind.")
@click.option("--feed-cut-grace", type=click.FloatRange(min=0.05), default=Limits.feed_cut_grace, show_default=True,
              metavar="SECONDS", help="Disconnect a feed's subscriber that takes nothing for this long (it"
                                      " may resume).")
@pass_ctx
@handle_errors
def serve(ctx: Ctx, host: str, port: int, workers: int, no_auth: bool, cors_origins: tuple[str, ...],
          ssl_certfile: str | None, ssl_keyfile: str | None, max_body: int, max_import_body: int,
          max_entries: int, body_timeout: float, feed_heartbeat: float, feed_queue: int,
          feed_queue_bytes: int, feed_cut_grace: float) -> None:
    """Serve the HTTP API (SPEC 15) on uvicorn; stops on Ctrl-C.

    Requests need 'Authorization: Bearer <token>' (sessionstore token create); the token alone decides the
    tenant. The database is --db, like every command's; a new SQLite file is created. /docs and
    /openapi.json describe every route."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    if no_auth and not is_loopback(host):
        fail(f"--no-auth is refused on --host {host}: it is not a loopback address (127.0.0.0/8, ::1, localhost)")
    if (ssl_certfile is None) != (ssl_keyfile is None):
        fail("--ssl-certfile and --ssl-keyfile go together")
    ctx.store.close()  # (opened once here: a bad database is one error line before anything listens)
    config = ServiceConfig(url=ctx.url, no_auth=no_auth, cors_origins=cors_origins,
                           limits=Limits(max_body=max_body, max_import_body=max_import_body,
                                         max_entries=max_entries, body_timeout=body_timeout,
                                         feed_heartbeat=feed_heartbeat, feed_queue=feed_queue,
                                         feed_queue_bytes=feed_queue_bytes, feed_cut_grace=feed_cut_grace))
    os.environ.update(config.to_env())
    sock = _bind(host, port)
    server_config = uvicorn.Config(FACTORY, factory=True, workers=workers, access_log=False,
                                   ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile,
                                   timeout_keep_alive=5, log_level="info", server_header=False)
    server = uvicorn.Server(server_config)
    if workers > 1:
        supervisor: Any = Multiprocess  # (uvicorn < 0.36 also takes the target to run in each worker)
        if "target" in inspect.signature(Multiprocess).parameters:
            supervisor(server_config, target=server.run, sockets=[sock]).run()
        else:
            supervisor(server_config, sockets=[sock]).run()
    else:
        server.run(sockets=[sock])

"""The real-server harness: ``sessionstore --db URL serve`` in a subprocess on a free loopback port,
talked to over TCP (no in-process test client).

``server`` (module-scoped, both backends) is a server with tokens; ``no_auth_server`` one with
``--no-auth``; ``start_server(url, *flags)`` starts one with other flags for a test of its own. Each
server's stdout and stderr go to ``log_path`` (``.log()`` reads it), so a test can check what was logged.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import BACKENDS, drop_pg_database, fresh_pg_database

READY_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """A running ``sessionstore serve``: ``base_url`` (``http://127.0.0.1:PORT``), ``url`` (its database),
    ``log_path`` (its output)."""

    base_url: str
    url: str
    log_path: Path
    process: subprocess.Popen[bytes]
    tokens: dict[tuple[str, str], str] = field(default_factory=dict)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def token(self, tenant: str = "default", scope: str = "write") -> str:
        """A token of ``tenant`` with ``scope``, made by ``sessionstore token create`` (one per pair)."""
        if (tenant, scope) not in self.tokens:
            self.tokens[tenant, scope] = mint_token(self.url, tenant=tenant, scope=scope)
        return self.tokens[tenant, scope]

    def client(self, token: str | None = None, **kwargs: object) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30.0, **kwargs)  # type: ignore[arg-type]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def sessionstore_command() -> list[str]:
    """The ``sessionstore`` script of the interpreter running the tests."""
    return [str(Path(sys.executable).parent / "sessionstore")]


def mint_token(url: str, *, tenant: str = "default", scope: str = "write", name: str | None = None,
               expires: str | None = None) -> str:
    """The text of a new token, from ``sessionstore token create --json``."""
    args = [*sessionstore_command(), "--db", url, "token", "create", "--tenant", tenant, "--scope", scope, "--json"]
    if name:
        args += ["--name", name]
    if expires:
        args += ["--expires", expires]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["token"])


def launch(url: str, log_path: Path, *flags: str, port: int | None = None, wait: bool = True) -> Server:
    """Start ``sessionstore --db URL serve --port PORT FLAGS`` and wait until it answers HTTP."""
    port = port or free_port()
    log_file = log_path.open("ab")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([*sessionstore_command(), "--db", url, "serve", "--port", str(port), *flags],
                               stdout=log_file, stderr=subprocess.STDOUT, env=env)
    log_file.close()
    server = Server(base_url=f"http://127.0.0.1:{port}", url=url, log_path=log_path, process=process)
    if wait:
        wait_ready(server)
    return server


def wait_ready(server: Server) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"the server exited with {server.process.returncode}:\n{server.log()}")
        try:
            httpx.get(server.base_url + "/openapi.json", timeout=1.0)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    server.stop()
    raise AssertionError(f"the server did not answer in {READY_TIMEOUT} s:\n{server.log()}")


def clear_of_the_window_end(window_s: int = 3600, margin_s: float = 20.0) -> None:
    """Wait until the current rate window has at least ``margin_s`` left (a test counting one window must
    not straddle two)."""
    left = window_s - time.time() % window_s
    if left < margin_s:
        time.sleep(left + 0.5)


@pytest.fixture(scope="module", params=BACKENDS)
def service_db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh database for one module's server, on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('service') / 'sessions.db'}"
        return
    name, url = fresh_pg_database(request.getfixturevalue("pg_template"))
    yield url
    drop_pg_database(name)


StartServer = Callable[..., Server]


@pytest.fixture(scope="module")
def start_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StartServer]:
    """``start_server(url, *flags, wait=True)``: a server stopped at the end of the module."""
    started: list[Server] = []

    def start(url: str, *flags: str, wait: bool = True) -> Server:
        log_path = tmp_path_factory.mktemp("serve") / "server.log"
        server = launch(url, log_path, *flags, wait=wait)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def server(service_db_url: str, start_server: StartServer) -> Server:
    """A server with tokens over a fresh database (both backends)."""
    return start_server(service_db_url)


@pytest.fixture(scope="module")
def no_auth_server(service_db_url: str, start_server: StartServer) -> Server:
    """A ``--no-auth`` server over a fresh database (both backends)."""
    return start_server(service_db_url, "--no-auth")

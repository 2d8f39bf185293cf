"""Whole-session bodies are streamed while the store writes them, against a real ``sessionstore serve``
over TCP (both backends): a session of several MB arrives as the CLI prints it, chunked; the first bytes
arrive while the writer still holds its read transaction (the transaction is observed in the database);
a client that goes away mid-body ends that transaction; a missing session is still problem+json; a
failure after the first byte cuts the connection instead of ending the body."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.service.conftest import Server, StartServer, sessionstore_command

SESSION = "stream-big"
ENTRIES = 480
TEXT_BYTES = 16 * 1024  # (ENTRIES x TEXT_BYTES: about 8 MB of JSONL, beyond what the sockets buffer)
PROBE = "stream-probe"
WAIT = 15.0


def session_lines(session_id: str, entries: int) -> Iterator[bytes]:
    """A pi v3 file: a header and ``entries`` messages, user and assistant in turn, chained."""
    yield json.dumps({"type": "session", "version": 3, "id": session_id, "timestamp": "2025-12-01T00:00:00.000Z",
                      "cwd": "/proj"}).encode() + b"\n"
    parent = None
    for n in range(entries):
        text = f"{n:05d} " + "".join(chr(97 + (n * 7 + k) % 26) for k in range(64)) * (TEXT_BYTES // 64)
        if n % 2 == 0:
            message: dict[str, object] = {"role": "user", "content": text, "timestamp": 1_764_547_200_000 + n}
        else:
            message = {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "anthropic-messages",
                       "provider": "anthropic", "model": "claude-opus-4-5", "stopReason": "stop",
                       "timestamp": 1_764_547_200_000 + n,
                       "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                                 "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}
        entry_id = f"e{n:07x}"
        yield json.dumps({"type": "message", "id": entry_id, "parentId": parent,
                          "timestamp": f"2025-12-01T00:00:{n % 60:02d}.000Z", "message": message}).encode() + b"\n"
        parent = entry_id


def import_through_api(client: httpx.Client, session_id: str, entries: int) -> None:
    response = client.post("/v1/imports", content=b"".join(session_lines(session_id, entries)),
                           headers={"Content-Type": "application/jsonl"})
    assert response.status_code == 201, response.text


@pytest.fixture(scope="module")
def http(no_auth_server: Server) -> Iterator[httpx.Client]:
    with no_auth_server.client() as client:
        import_through_api(client, SESSION, ENTRIES)
        assert client.post("/v1/sessions", json={"id": PROBE, "cwd": "/proj"}).status_code == 201
        yield client


def cli(server: Server, *args: str) -> bytes:
    done = subprocess.run([*sessionstore_command(), "--db", server.url, *args], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def user_entry(text: str) -> dict[str, object]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


# -- observing the server's read transaction in the database --------------------------------------------
def sqlite_path(url: str) -> str:
    return url.removeprefix("sqlite:///")


def reading(server: Server, http: httpx.Client) -> bool:
    """Whether a transaction of the server's (a body's writer) is open in the database now.

    SQLite: a commit made now (an append to another session) cannot be checkpointed while a reader holds
    an older snapshot. PostgreSQL: a backend of the database other than ours is inside a transaction."""
    if server.url.startswith("sqlite"):
        assert http.post(f"/v1/sessions/{PROBE}/entries", json=user_entry("probe")).status_code == 201
        with sqlite3.connect(sqlite_path(server.url), isolation_level=None) as probe:
            probe.execute("PRAGMA busy_timeout = 0")
            busy, _log, _done = probe.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        probe.close()
        return bool(busy)
    import psycopg

    parts = urlsplit(server.url)
    with psycopg.connect(parts._replace(scheme="postgresql").geturl()) as probe:
        row = probe.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                            " AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
                            " AND backend_type = 'client backend'").fetchone()
    assert row is not None
    return bool(row[0])


def eventually_not_reading(server: Server, http: httpx.Client) -> bool:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if not reading(server, http):
            return True
        time.sleep(0.05)
    return False


def open_body(server: Server, path: str, *, at_least: int) -> tuple[socket.socket, bytes]:
    """A GET of ``path`` on a socket with a small receive buffer; returns it (still open) and what was read:
    the head and at least ``at_least`` bytes of the body."""
    parts = urlsplit(server.base_url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)  # (before connect: the window stays small)
    sock.settimeout(WAIT)
    sock.connect((parts.hostname, parts.port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n".encode())
    got = b""
    while b"\r\n\r\n" not in got or len(got.partition(b"\r\n\r\n")[2]) < at_least:
        chunk = sock.recv(16 * 1024)
        assert chunk, got[:500]
        got += chunk
    return sock, got


# -- the tests ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("route", "command"), [
    ("/context", ("context", SESSION, "--json")),
    ("/export", ("export", SESSION)),
    ("/tree", ("tree", SESSION, "--json")),
])
def test_a_big_session_body_is_the_cli_output_and_goes_chunked(http: httpx.Client, no_auth_server: Server,
                                                               route: str, command: tuple[str, ...]) -> None:
    with http.stream("GET", f"/v1/sessions/{SESSION}{route}") as response:
        assert response.status_code == 200
        assert "content-length" not in response.headers
        assert response.headers["transfer-encoding"] == "chunked"
        body = response.read()
    expected = cli(no_auth_server, *command)
    assert len(expected) > 4_000_000
    assert body == expected


def test_the_entries_body_is_the_exports_lines_with_the_last_seq(http: httpx.Client, no_auth_server: Server) -> None:
    export = cli(no_auth_server, "export", SESSION)
    lines = export.splitlines(keepends=True)[1:]
    whole = http.get(f"/v1/sessions/{SESSION}/entries")
    assert "content-length" not in whole.headers
    assert whole.content == b"".join(lines) and whole.headers["x-last-seq"] == str(ENTRIES - 1)
    page = http.get(f"/v1/sessions/{SESSION}/entries", params={"after": 99, "limit": 300})
    assert page.content == b"".join(lines[100:400]) and page.headers["x-last-seq"] == "399"
    rest = http.get(f"/v1/sessions/{SESSION}/entries", params={"after": ENTRIES - 1})
    assert rest.content == b"" and rest.headers["x-last-seq"] == str(ENTRIES - 1)


@pytest.mark.parametrize("route", ["/context", "/export", "/entries"])
def test_the_first_bytes_come_while_the_writer_reads_and_a_client_gone_ends_its_transaction(
        http: httpx.Client, no_auth_server: Server, route: str) -> None:
    assert not reading(no_auth_server, http)
    sock, got = open_body(no_auth_server, f"/v1/sessions/{SESSION}{route}", at_least=4096)
    try:
        head = got.partition(b"\r\n\r\n")[0].lower()
        assert head.startswith(b"http/1.1 200") and b"transfer-encoding: chunked" in head
        # The writer has not finished: the body is larger than every buffer between it and this socket.
        assert reading(no_auth_server, http)
    finally:
        sock.close()
    assert eventually_not_reading(no_auth_server, http)
    appended = http.post(f"/v1/sessions/{SESSION}/entries", json=user_entry("after a reader left"), timeout=5.0)
    assert appended.status_code == 201, appended.text


@pytest.mark.parametrize("route", ["/context", "/export", "/entries", "/tree", "/export?format=html"])
def test_a_missing_session_is_still_a_problem(http: httpx.Client, route: str) -> None:
    response = http.get("/v1/sessions/no-such-session" + route)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "NOT_FOUND"


def test_a_failure_after_the_first_byte_cuts_the_connection(tmp_path: Path, start_server: StartServer) -> None:
    """A stored line made unreadable behind the store's back (its triggers dropped): ``context`` fails at
    that entry, after its first chunks went out; the client sees a cut body, not an end."""
    url = f"sqlite:///{tmp_path / 'broken.db'}"
    server = start_server(url, "--no-auth")
    with server.client() as client:
        import_through_api(client, "broken", 200)
        with sqlite3.connect(sqlite_path(url), isolation_level=None) as db:
            for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"
                                      " AND tbl_name = 'sessionstore_entries'").fetchall():
                db.execute(f'DROP TRIGGER "{name}"')
            db.execute("UPDATE sessionstore_entries SET payload = '{not json' WHERE seq = 190")
        db.close()
        with client.stream("GET", "/v1/sessions/broken/context") as response:
            assert response.status_code == 200
            with pytest.raises(httpx.RemoteProtocolError):
                response.read()
        assert client.get("/v1/sessions/broken").status_code == 200  # (the server goes on)


def test_the_pipe_sends_writes_of_any_size_in_whole_chunks() -> None:
    import asyncio

    import anyio

    from sessionstore.service.streaming import CHUNK, Chunks, Pipe

    sizes = [0, 1, 100, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7, 700_000, 5]
    parts = [bytes([n]) * size for n, size in enumerate(sizes * 3)]

    async def run() -> list[bytes]:
        chunks = Chunks(asyncio.get_running_loop(), buffered=2)  # (the writer waits for the reader)
        pipe = Pipe(chunks)

        def write() -> None:
            for part in parts:
                assert pipe.write(part) == len(part)
            pipe.close_out()

        async def writer() -> None:
            try:
                await anyio.to_thread.run_sync(write)
            finally:
                chunks.end()

        got = []
        async with anyio.create_task_group() as group:
            group.start_soon(writer)
            while (chunk := await chunks.get()) is not None:
                got.append(chunk)
        return got

    got = anyio.run(run)
    assert b"".join(got) == b"".join(parts)
    assert {len(chunk) for chunk in got[:-1]} == {CHUNK} and 0 < len(got[-1]) <= CHUNK


def test_a_writer_blocked_on_a_full_pipe_gets_client_gone_when_the_reader_leaves() -> None:
    import asyncio

    import anyio

    from sessionstore.service.streaming import CHUNK, Chunks, ClientGone, Pipe

    async def run() -> BaseException | None:
        chunks = Chunks(asyncio.get_running_loop(), buffered=1)
        pipe = Pipe(chunks)
        raised: list[BaseException] = []

        def write() -> None:
            try:
                for _ in range(10):
                    pipe.write(b"x" * CHUNK)  # (blocks from the second chunk: nobody reads)
            except ClientGone as exc:
                raised.append(exc)

        async with anyio.create_task_group() as group:
            group.start_soon(anyio.to_thread.run_sync, write)
            assert await chunks.get() == b"x" * CHUNK
            await anyio.sleep(0.05)
            chunks.close()
        return raised[0] if raised else None

    assert isinstance(anyio.run(run), ClientGone)

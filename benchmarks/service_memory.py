"""Service memory benchmark: the peak RSS of ``sessionstore serve`` (one worker) while it imports a big
pi file through ``POST /v1/imports`` and while it sends a big session's context, export and entries,
against the CLI's own peak RSS for ``import``, ``context --json`` and ``export`` of the same files in the
same run.

Files (the generators of the other memory benchmarks): the import file is ``import.py --big``'s (real
``large-session`` entries repeated with fresh ids, about 1 KB each; default 1 GiB), the session read is
``memory.py``'s linear one (default 200 MB), imported first with the CLI.

Each CLI command is a fresh process reporting its own ``VmHWM`` (``memory.run_cli``). Each server row is
a fresh ``sessionstore --db URL serve --no-auth`` process (``--max-import-body`` the file's size) and one
request, sent by this process with httpx (the import body streamed from the file in 1 MiB pieces, the
response bodies read and counted); the row's peak is the server's ``VmHWM`` read from
``/proc/PID/status`` after the request, ``idle`` its ``VmHWM`` before it (start-up: interpreter,
FastAPI, uvicorn, the open store). ratio = server peak / CLI peak of the same work (``entries`` is
compared with ``export``: the same stored lines without the header).

Target (issue 23 point 2): within the CLI's memory limits, i.e. each server peak under the CLI's 300 MB
target (``memory.py``, ``import.py``); ratios are printed for comparison. SQLite only.

    python benchmarks/service_memory.py [--import-mb 1024] [--session-mb 200] [--keep DIR]
    python benchmarks/service_memory.py --quick
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import exit_on_sigterm, log, met, print_table, remove_sqlite, work_dir, write_synth_file
from memory import _hwm_kb, run_cli, write_session

TARGET_RSS_MB = 300.0
_SERVE = """
import sys
sys.argv[0] = "sessionstore"
from sessionstore.cli import main
main()
"""
PIECE = 1 << 20


@dataclass
class Row:
    work: str
    cli_mb: float
    cli_s: float
    server_idle_mb: float
    server_mb: float
    server_s: float
    out_bytes: int

    @property
    def ratio(self) -> float:
        return self.server_mb / self.cli_mb


class Serve:
    """One ``sessionstore serve`` process on a free loopback port."""

    def __init__(self, url: str, log_path: Path, max_import_body: int) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.base_url = f"http://127.0.0.1:{self.port}"
        with log_path.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _SERVE, "--db", url, "serve", "--no-auth", "--port", str(self.port),
                 "--max-import-body", str(max_import_body)], stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited with {self.process.returncode}: see {log_path}")
            try:
                httpx.get(self.base_url + "/openapi.json", timeout=2.0)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"serve did not answer in 60 s: see {log_path}") from None
                time.sleep(0.05)

    def peak_mb(self) -> float:
        return (_hwm_kb(self.process.pid) or 0) / 1024

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _pieces(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fp:
        while piece := fp.read(PIECE):
            yield piece


def serve_import(url: str, workdir: Path, path: Path) -> tuple[float, float, float]:
    """(idle MB, peak MB, seconds) of a fresh server importing ``path`` through the API."""
    server = Serve(url, workdir / "serve.log", path.stat().st_size + 1)
    try:
        idle = server.peak_mb()
        began = time.perf_counter()
        response = httpx.post(server.base_url + "/v1/imports", content=_pieces(path),
                              headers={"Content-Type": "application/jsonl"}, timeout=3600)
        seconds = time.perf_counter() - began
        if response.status_code != 201:
            raise RuntimeError(f"POST /v1/imports answered {response.status_code}: {response.text[:500]}")
        return idle, server.peak_mb(), seconds
    finally:
        server.stop()


def serve_read(url: str, workdir: Path, route: str) -> tuple[float, float, float, int]:
    """(idle MB, peak MB, seconds, body bytes) of a fresh server sending ``route``."""
    server = Serve(url, workdir / "serve.log", 1 << 20)
    try:
        idle = server.peak_mb()
        began = time.perf_counter()
        size = 0
        with httpx.stream("GET", server.base_url + route, timeout=3600) as response:
            if response.status_code != 200:
                raise RuntimeError(f"GET {route} answered {response.status_code}: {response.read()[:500]!r}")
            for chunk in response.iter_raw():
                size += len(chunk)
        return idle, server.peak_mb(), time.perf_counter() - began, size
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--import-mb", type=float, default=None, help="import file size, MiB (default 1024)")
    parser.add_argument("--session-mb", type=float, default=None, help="session read, MB of JSONL (default 200)")
    parser.add_argument("--keep", metavar="DIR", help="write the files and databases to DIR and keep them")
    parser.add_argument("--quick", action="store_true", help="a small smoke run (a few MB; seconds)")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    import_bytes = int((args.import_mb or (4 if args.quick else 1024)) * (1 << 20))
    session_bytes = int((args.session_mb or (3 if args.quick else 200)) * 1_000_000)
    started = time.perf_counter()
    rows: list[Row] = []
    with work_dir(args.keep, "sessionstore-service-memory-") as workdir:
        import_file = workdir / f"service-import-{import_bytes >> 20}mib.jsonl"
        entries, size = write_synth_file(import_file, min_bytes=import_bytes, tag="service-import",
                                         source="large-session")
        log(f"wrote {import_file.name}: {entries:,} entries, {size / 2**20:.0f} MiB")
        cli_db, api_db, read_db = (workdir / name for name in ("cli-import.db", "api-import.db", "read.db"))
        for db in (cli_db, api_db, read_db):
            remove_sqlite(db)
        try:
            cli = run_cli(f"sqlite:///{cli_db}", ["import", "--silent", str(import_file)])
            log(f"CLI import: {cli.seconds:.1f}s, peak {cli.peak_rss_mb:.0f} MB")
            remove_sqlite(cli_db)
            idle, peak, seconds = serve_import(f"sqlite:///{api_db}", workdir, import_file)
            log(f"API import: {seconds:.1f}s, peak {peak:.0f} MB (idle {idle:.0f} MB)")
            remove_sqlite(api_db)
            rows.append(Row(f"import {size / 2**20:.0f} MiB ({entries:,} entries)", cli.peak_rss_mb, cli.seconds,
                            idle, peak, seconds, size))
            import_file.unlink()

            session_file = workdir / "service-read.jsonl"
            session_id, count, session_size = write_session(session_file, session_bytes, "linear")
            run_cli(f"sqlite:///{read_db}", ["import", "--silent", str(session_file)])
            session_file.unlink()
            log(f"session {session_id}: {count:,} entries, {session_size / 1e6:.0f} MB, imported")
            path = f"/v1/sessions/{session_id}"
            export = run_cli(f"sqlite:///{read_db}", ["export", session_id], count_output=True)
            context = run_cli(f"sqlite:///{read_db}", ["context", session_id, "--json"], count_output=True)
            for work, route, twin in (("context --json", "/context", context), ("export", "/export", export),
                                      ("entries (vs export)", "/entries", export)):
                idle, peak, seconds, out = serve_read(f"sqlite:///{read_db}", workdir, path + route)
                log(f"GET {route}: {seconds:.1f}s, {out / 1e6:.0f} MB, peak {peak:.0f} MB (idle {idle:.0f} MB)")
                if route != "/entries" and out != twin.out_bytes:
                    raise RuntimeError(f"GET {route} sent {out} bytes, the CLI printed {twin.out_bytes}")
                rows.append(Row(f"{work}, {session_size / 1e6:.0f} MB session", twin.peak_rss_mb, twin.seconds,
                                idle, peak, seconds, out))
        finally:
            for db in (cli_db, api_db, read_db):
                remove_sqlite(db)
    print_table(["work (SQLite)", "CLI peak MB", "server idle MB", "server peak MB", "ratio", "CLI s", "server s",
                 "body MB", "server MB/s"],
                [[r.work, f"{r.cli_mb:.0f}", f"{r.server_idle_mb:.0f}", f"{r.server_mb:.0f}", f"{r.ratio:.2f}x",
                  f"{r.cli_s:.1f}", f"{r.server_s:.1f}", f"{r.out_bytes / 1e6:.1f}",
                  f"{r.out_bytes / 1e6 / r.server_s:.0f}"] for r in rows])
    worst = max(rows, key=lambda r: r.server_mb)
    print(f"target: server peak RSS < {TARGET_RSS_MB:.0f} MB (the CLI's limit) for every row: worst"
          f" {worst.server_mb:.0f} MB ({worst.work}) -> {met(worst.server_mb < TARGET_RSS_MB)}")
    print(f"total {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

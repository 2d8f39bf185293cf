"""Append throughput with 1, 2 and 4 workers in the same run (issue 24), and where the limit is.

For each ``--workers`` N (``1,2,4``): a fresh database, ``serve --workers N`` on it, and ``service.py``'s
clients (``--clients`` 32, each on its own session) for ``--seconds`` (45): appends only by default
(``--load mixed``: issue 23's 80/15/5 mix). Printed per N: appends/s and the ratio to one worker,
p50/p99, errors (answers of 400 and over but the If-Match 412s, and transport failures), the 412s, and
the acknowledged appends not stored exactly once.

Where the limit is: during each run the CPU of each group of processes is sampled from /proc and
printed as cores used (CPU seconds / wall seconds): ``serve`` (its supervisor and workers), ``pg db``
(the PostgreSQL backends of the run's database), ``pg rest`` (the rest of the cluster: postmaster, WAL
writer, checkpointer, and on a shared server other databases' backends), ``client`` (the clients: this
process's CPU, or the client processes'), ``machine`` (every CPU's busy time: what others ran shows as
machine minus the rest), and the CPU per append of the serve and pg groups (ms). On a 2-core machine a
sum near 2 cores means the CPU is the limit, and the shares say whose. ``--client-procs 0,2`` runs each
N with the clients as threads of this process (0) and spread over 2 processes (so the clients' GIL is
not the limit).

PostgreSQL with ``--pg-url`` (the figure the issue asks for); without one, SQLite (a smoke run's
backend). ``--quick``: 1 and 2 workers, 4 clients, 2 s, threads and 2 client processes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _procs
from _common import PgDatabases, add_common_args, log, met, print_table, work_dir
from service import Server, check_exactly_once, make_sessions, ms, run_load


def numbers(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def postmaster(db_url: str) -> int | None:
    """The postmaster of the server at ``db_url`` if it runs on this host (else ``None``)."""
    import psycopg

    with psycopg.connect(db_url) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
    return None if row is None else _procs.postmaster_of(int(row[0]))


def one_run(url: str, label: str, workers: int, procs: int, args: argparse.Namespace, workdir: Path,
            ) -> dict[str, Any]:
    from sqlalchemy.engine import make_url

    server = Server(url, workers, workdir / f"serve-workers-{label}-{workers}-{procs}.log")
    try:
        sessions = make_sessions(server, args.clients)
        serve_pid = server.process.pid
        groups: dict[str, Any] = {"serve": lambda: {serve_pid, *_procs.serve_workers(serve_pid)}}
        pm = postmaster(url) if label == "postgres" else None
        if pm is not None:
            database = str(make_url(url).database)
            groups["pg db"] = lambda: _procs.pg_backends(pm, database)
            groups["pg rest"] = lambda: _procs.pg_rest(pm, database)
        meter = _procs.CpuMeter(groups, every=1.0)
        load_before = _procs.loadavg()
        load = run_load(server, sessions, args.seconds, kind=args.load, processes=procs, on_start=meter.start)
        cores = meter.stop()
        load_after = _procs.loadavg()
        acked, wrong = check_exactly_once(server, load.mix)
    finally:
        server.stop()
    mix = load.mix
    appends = mix.latency.get("append", [])
    return {"workers": workers, "procs": procs, "rate": mix.appended() / load.elapsed,
            "p50": ms(appends, 50) if appends else "-", "p99": ms(appends, 99) if appends else "-",
            "errors": sum(mix.errors().values()) + len(mix.failures), "error_detail": mix.errors(),
            "failures": mix.failures[:3], "412": mix.statuses["append", 412], "acked": acked, "wrong": wrong,
            "cores": cores, "client": load.client_cpu / load.elapsed, "load": f"{load_before} -> {load_after}",
            "elapsed": load.elapsed}


def per_append(cores: float | None, rate: float) -> str:
    return "-" if cores is None or not rate else f"{cores / rate * 1000:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(parser)
    parser.add_argument("--workers", type=numbers, default=[1, 2, 4], help="serve --workers values (default 1,2,4)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--seconds", type=float, default=45.0, help="length of each run (default 45)")
    parser.add_argument("--load", choices=("appends", "mixed"), default="appends",
                        help="appends only (default) or issue 23's mix")
    parser.add_argument("--client-procs", type=numbers, default=[0], metavar="P[,P...]",
                        help="run the clients as threads of this process (0, the default) or in P processes;"
                             " a list runs each")
    args = parser.parse_args()
    if args.quick:
        args.workers, args.clients, args.seconds, args.client_procs = [1, 2], 4, 2.0, [0, 2]
    results = []
    with work_dir(args.keep, "sessionstore-bench-workers-") as workdir:
        dbs = PgDatabases(args.pg_url, "workers") if args.pg_url else None
        label = "postgres" if dbs else "sqlite"
        if dbs is None:
            print("note: no --pg-url: SQLite (the issue's figure is PostgreSQL's)")
        try:
            for procs in args.client_procs:
                for workers in args.workers:
                    url = (dbs.create(f"w{workers}p{procs}", migrated=True) if dbs
                           else f"sqlite:///{workdir / f'w{workers}p{procs}.db'}")
                    log(f"{label}: serve --workers {workers}, {args.clients} clients "
                        f"({'threads' if not procs else f'{procs} processes'}), {args.load}, {args.seconds:g} s")
                    results.append(one_run(url, label, workers, procs, args, workdir))
                    if dbs:
                        dbs.drop(url)
        finally:
            if dbs is not None:
                dbs.drop_all()
    what = "appends of 1 KB messages with If-Match" if args.load == "appends" else "issue 23's mix"
    print(f"{label}: {args.clients} clients, {what}, {args.seconds:g} s per run; "
          "CPU in cores used (CPU s / wall s), per append in ms of CPU")
    rows = []
    for got in results:
        base = next(r["rate"] for r in results if r["procs"] == got["procs"])
        cores = got["cores"]
        known = [cores.get("serve"), cores.get("pg db"), cores.get("pg rest"), got["client"]]
        others = None if cores["machine"] is None else cores["machine"] - sum(v or 0.0 for v in known)
        rows.append([
            "threads" if not got["procs"] else f"{got['procs']} procs", got["workers"], f"{got['rate']:.0f}",
            f"{got['rate'] / base:.2f}x", got["p50"], got["p99"], got["errors"], got["412"],
            got["wrong"], _procs.fmt_cores(cores.get("serve")), _procs.fmt_cores(cores.get("pg db")),
            _procs.fmt_cores(cores.get("pg rest")), _procs.fmt_cores(got["client"]),
            _procs.fmt_cores(cores["machine"]), _procs.fmt_cores(others),
            per_append(cores.get("serve"), got["rate"]), per_append(cores.get("pg db"), got["rate"]), got["load"]])
    print_table(["clients", "workers", "appends/s", "vs 1", "p50 ms", "p99 ms", "errors", "412", "not once",
                 "serve", "pg db", "pg rest", "client", "machine", "others", "serve ms/app", "pg ms/app",
                 "loadavg before -> after"], rows)
    for got in results:
        if got["errors"]:
            print(f"workers {got['workers']}, {got['procs']} procs: errors {got['error_detail']} {got['failures']}")
    print(f"every acknowledged append stored exactly once in every run: "
          f"{met(all(r['wrong'] == 0 for r in results))} ({sum(r['acked'] for r in results)} appends)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

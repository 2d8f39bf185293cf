"""Append benchmark: ``SessionStore.append_message`` against raw driver inserts of the same rows.

For every history size (default 0, 10,000 and 100,000 entries) and setting (SQLite with
``synchronous`` FULL and NORMAL, both in WAL mode; PostgreSQL when a server URL is given), the script
times ``--appends`` single appends (default 5,000), each its own committed transaction, of real
messages from the pi fixtures (user, assistant, toolResult, bashExecution, cycled in file order) to
one session that already holds the history (built with ``insert_session`` from the real entries
repeated, see ``_common.synth_entries``). All history sizes of one setting run side by side.

PostgreSQL databases are primed (one unrelated 1,000-entry session and ANALYZE before the history is
inserted; VACUUM ANALYZE and new connections before timing), as a database in use would be: in an
empty database PostgreSQL plans the (session_id, entry_id) lookups as a scan of the whole session
and keeps that plan per connection (see ``_common.PgDatabases``); ``--pg-unprimed`` shows that case.

The floor, measured in the same run and interleaved append by append with the store (so both see
the same machine): raw ``sqlite3`` (or raw ``psycopg``) on a separate database with the same
settings, a table shaped like ``entries`` (session_id, seq, entry_id, parent_id, payload; primary key
(session_id, seq), unique index on (session_id, entry_id)) preloaded with the same history rows by
one ``executemany`` (PostgreSQL: ``COPY``, payload ``json`` as in the store), inserting each appended entry's row
(payload JSON serialised beforehand) in its own ``BEGIN IMMEDIATE`` ... ``COMMIT`` (PostgreSQL:
``INSERT`` + ``commit()``). The store's time includes everything ``append_message`` does (message
validation, leaf lookup, id generation, entry validation, facts, insert, session row update, commit).

A third side on SQLite, ``schema``, runs the store's own statements for each append (head read, entry
insert, session update, commit) raw with ``sqlite3`` on a copy of the store's database: its ratio to
the floor is the ceiling of the store's ratio before any Python runs.

Printed per run: appends/s (appends / summed latencies), p50 and p99 latency of the timed appends
(after 20 warm-up appends on each side) and ratio = store appends/s / floor appends/s.

Targets (from the issue): ratio >= 0.5 under the same setting; flat in history size (the largest
history's mean append time within 1.3x of the empty session's); p99 < 5 ms with FULL.

    python benchmarks/append.py [--appends 5000] [--histories 0,10000,100000] [--pg-url URL] [--keep DIR]
    python benchmarks/append.py --quick
"""

from __future__ import annotations

import argparse
import gc
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    PgDatabases,
    add_common_args,
    exit_on_sigterm,
    log,
    met,
    percentile,
    pg_analyze,
    pg_url_or_note,
    print_table,
    real_messages,
    remove_sqlite,
    sqlite_pragmas,
    synth_entries,
    synth_header,
    synth_id,
    work_dir,
)

from sessionstore.api import SessionStore
from sessionstore.store.backend import HeadUpdate, entry_row
from sessionstore.store.facts import NodeFacts
from sessionstore.store.sqlite import STATEMENTS
from sessionstore.store.sqltx import head_update_params

Json = dict[str, Any]
Row = tuple[str, int, str, str | None, str]

WARMUP = 20
TARGET_RATIO = 0.5
TARGET_FLAT = 1.3
TARGET_P99_MS = 5.0
FLOOR_TS = "2025-12-01T00:00:00.000Z"

_FLOOR_DDL_SQLITE = (
    "CREATE TABLE entries (session_id TEXT NOT NULL, seq INTEGER NOT NULL, entry_id TEXT NOT NULL,"
    " parent_id TEXT, payload TEXT NOT NULL, PRIMARY KEY (session_id, seq))",
    "CREATE UNIQUE INDEX ix_floor_entry_id ON entries (session_id, entry_id)",
)
_FLOOR_DDL_PG = (
    "CREATE TABLE entries (session_id text NOT NULL, seq bigint NOT NULL, entry_id text NOT NULL,"
    " parent_id text, payload json NOT NULL, PRIMARY KEY (session_id, seq))",
    "CREATE UNIQUE INDEX ix_floor_entry_id ON entries (session_id, entry_id)",
)
_FLOOR_INSERT_SQLITE = "INSERT INTO entries (session_id, seq, entry_id, parent_id, payload) VALUES (?, ?, ?, ?, ?)"
_FLOOR_INSERT_PG = (
    "INSERT INTO entries (session_id, seq, entry_id, parent_id, payload) VALUES (%s, %s, %s, %s, %s::json)"
)


@dataclass
class Stats:
    rate: float
    mean_ms: float
    p50_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, seconds: list[float]) -> Stats:
        ordered = sorted(seconds)
        total = sum(ordered)
        return cls(
            rate=len(ordered) / total,
            mean_ms=total / len(ordered) * 1000,
            p50_ms=percentile(ordered, 50) * 1000,
            p99_ms=percentile(ordered, 99) * 1000,
            max_ms=ordered[-1] * 1000,
        )


@dataclass
class Result:
    backend: str
    setting: str
    history: int
    store: Stats
    floor: Stats
    schema: Stats | None = None

    @property
    def ratio(self) -> float:
        return self.store.rate / self.floor.rate

    @property
    def schema_ratio(self) -> float | None:
        """How close the store's own statements, run raw, come to the floor (the store's ceiling)."""
        return None if self.schema is None else self.schema.rate / self.floor.rate

    @property
    def label(self) -> str:
        return self.backend if self.setting == "-" else f"{self.backend} {self.setting}"


# -- rows ------------------------------------------------------------------------------------------
def history_rows(session_id: str, history: int) -> Iterator[Row]:
    """The floor's rows of the history: the same entries the store's session holds."""
    for seq, entry in enumerate(synth_entries(history)):
        yield session_id, seq, entry["id"], entry["parentId"], orjson.dumps(entry).decode()


def append_rows(session_id: str, history: int, messages: list[Json]) -> list[Row]:
    """The floor's rows of the appended entries (what ``append_message`` stores), serialised up front."""
    rows: list[Row] = []
    parent = synth_id(history - 1) if history else None
    for i, message in enumerate(messages):
        entry_id = synth_id(history + i)
        entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": FLOOR_TS, "message": message}
        rows.append((session_id, history + i, entry_id, parent, orjson.dumps(entry).decode()))
        parent = entry_id
    return rows


def pick_messages(count: int) -> list[Json]:
    pool = real_messages()
    return [pool[i % len(pool)] for i in range(count)]


# -- the timed loop --------------------------------------------------------------------------------
@dataclass
class Lane:
    """One history size under one setting: the store's session and the floor's table, side by side."""

    history: int
    store_append: Callable[[Json], object]
    floor_insert: Callable[[Row], object]
    rows: list[Row]
    schema_insert: Callable[[int], object] | None = None
    """SQLite: the store's own statements for append ``i``, run raw on a copy of the store's database."""
    store_s: list[float] = field(default_factory=list)
    floor_s: list[float] = field(default_factory=list)
    schema_s: list[float] = field(default_factory=list)


def interleave(lanes: list[Lane], messages: list[Json]) -> None:
    """Warm up every lane, then append message by message to every lane in turn (the lane that goes
    first rotates, and so does which side goes first), so that all history sizes and all sides of one
    setting see the same machine (disk and CPU noise, checkpoints of others)."""
    for lane in lanes:
        for i in range(WARMUP):
            lane.store_append(messages[i])
            lane.floor_insert(lane.rows[i])
            if lane.schema_insert is not None:
                lane.schema_insert(i)
    clock = time.perf_counter
    gc.collect()
    for i in range(WARMUP, len(messages)):
        k = i % len(lanes)
        for lane in lanes[k:] + lanes[:k]:
            sides: list[tuple[Callable[[], object], list[float]]] = [
                (partial(lane.store_append, messages[i]), lane.store_s),
                (partial(lane.floor_insert, lane.rows[i]), lane.floor_s),
            ]
            if lane.schema_insert is not None:
                sides.append((partial(lane.schema_insert, i), lane.schema_s))
            j = i % len(sides)
            for run, seconds in sides[j:] + sides[:j]:
                t0 = clock()
                run()
                seconds.append(clock() - t0)


def check_count(store: SessionStore, session_id: str, expected: int) -> None:
    count = store.session(session_id).entry_count
    if count != expected:
        raise AssertionError(f"the store's session holds {count} entries, expected {expected}")


# -- SQLite ----------------------------------------------------------------------------------------
def checkpoint(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


@dataclass
class Template:
    store_db: Path
    floor_db: Path
    session_id: str


def build_sqlite_template(workdir: Path, history: int) -> Template:
    """Store and floor databases holding the history (WAL checkpointed, so one file each)."""
    header = synth_header(f"append-{history}")
    sid = header["id"]
    store_db = workdir / f"append-store-h{history}.db"
    floor_db = workdir / f"append-floor-h{history}.db"
    remove_sqlite(store_db)
    remove_sqlite(floor_db)
    began = time.perf_counter()
    store = SessionStore(f"sqlite:///{store_db}", durability="normal")
    try:
        if history:
            store.import_entries(header, synth_entries(history))
        else:
            store.create_session(cwd=header["cwd"], session_id=sid, timestamp=header["timestamp"])
    finally:
        store.close()
    built_store = time.perf_counter() - began
    began = time.perf_counter()
    conn = sqlite3.connect(floor_db, isolation_level=None)
    try:
        sqlite_pragmas(conn, "normal")
        for ddl in _FLOOR_DDL_SQLITE:
            conn.execute(ddl)
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(_FLOOR_INSERT_SQLITE, history_rows(sid, history))
        conn.execute("COMMIT")
    finally:
        conn.close()
    built_floor = time.perf_counter() - began
    checkpoint(store_db)
    checkpoint(floor_db)
    if history:
        log(
            f"  history {history:,}: store insert_session {built_store:.1f}s"
            f" ({store_db.stat().st_size / 1e6:.0f} MB), floor executemany {built_floor:.1f}s"
            f" ({floor_db.stat().st_size / 1e6:.0f} MB)"
        )
    return Template(store_db, floor_db, sid)


def _sqlite_insert(conn: sqlite3.Connection, row: Row) -> None:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(_FLOOR_INSERT_SQLITE, row)
    conn.execute("COMMIT")


def _schema_insert(
    conn: sqlite3.Connection, insert_sql: str, statements: list[tuple[tuple[Any, ...], Json]], sid: str, i: int
) -> None:
    """The statements ``append_message`` runs (head read, entry insert, session update), raw."""
    values, head = statements[i]
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(STATEMENTS.head, {"sid": sid, "tenant": "default"}).fetchone()
    conn.execute(insert_sql, values)
    conn.execute(STATEMENTS.update_head_counts, head)
    conn.execute("COMMIT")


SESSION_KEY = 1
"""The key of the one session a template database holds (its first session row)."""


def schema_statements(rows: list[Row]) -> list[tuple[tuple[Any, ...], Json]]:
    """For each floor row (same entry, same payload text): the store's entry row and session update,
    built with the store's own functions for a linear chain of messages."""
    out: list[tuple[tuple[Any, ...], Json]] = []
    for _sid, seq, entry_id, parent, payload in rows:
        entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": FLOOR_TS,
                 "message": {"role": "user"}}
        facts = NodeFacts(seq, 0, seq, 0, None, None, None)
        values = entry_row(SESSION_KEY, entry, facts, None if parent is None else seq - 1, payload)
        update = HeadUpdate(SESSION_KEY, entry_id, facts, seq + 1, seq + 1, None, None, 0)
        out.append((tuple(values), head_update_params(update)))
    return out


def run_sqlite(workdir: Path, templates: dict[int, Template], durability: str, messages: list[Json]) -> list[Result]:
    """All history sizes under one ``synchronous`` setting, on copies of the templates."""
    lanes: list[Lane] = []
    with ExitStack() as stack:
        stores: list[tuple[SessionStore, str, int]] = []
        for history, tpl in templates.items():
            store_db = workdir / f"run-store-h{history}-{durability}.db"
            floor_db = workdir / f"run-floor-h{history}-{durability}.db"
            schema_db = workdir / f"run-schema-h{history}-{durability}.db"
            for db in (store_db, floor_db, schema_db):
                stack.callback(remove_sqlite, db)
            shutil.copyfile(tpl.store_db, store_db)
            shutil.copyfile(tpl.floor_db, floor_db)
            shutil.copyfile(tpl.store_db, schema_db)
            schema_conn = sqlite3.connect(schema_db, isolation_level=None)
            stack.callback(schema_conn.close)
            sqlite_pragmas(schema_conn, durability)
            schema_conn.execute("PRAGMA foreign_keys = ON")
            store = SessionStore(f"sqlite:///{store_db}", durability=durability)  # type: ignore[arg-type]
            stack.callback(store.close)
            conn = sqlite3.connect(floor_db, isolation_level=None)
            stack.callback(conn.close)
            sqlite_pragmas(conn, durability)
            stores.append((store, tpl.session_id, history))
            rows = append_rows(tpl.session_id, history, messages)
            lanes.append(
                Lane(
                    history,
                    partial(store.append_message, tpl.session_id),
                    partial(_sqlite_insert, conn),
                    rows,
                    partial(_schema_insert, schema_conn, STATEMENTS.insert_entry,
                            schema_statements(rows), tpl.session_id),
                )
            )
        interleave(lanes, messages)
        for store, sid, history in stores:
            check_count(store, sid, history + len(messages))
    setting = durability.upper()
    return [
        Result("sqlite", setting, ln.history, Stats.of(ln.store_s), Stats.of(ln.floor_s), Stats.of(ln.schema_s))
        for ln in lanes
    ]


# -- PostgreSQL ------------------------------------------------------------------------------------
def run_postgres(dbs: PgDatabases, histories: list[int], messages: list[Json], *, primed: bool) -> list[Result]:
    """All history sizes on PostgreSQL: a migrated (by default primed, see ``PgDatabases``) database per
    history for the store, a plain one for the floor (history loaded with COPY). Both are VACUUM
    ANALYZEd after loading and the timed appends run on new connections, as in a database in use."""
    import psycopg

    lanes: list[Lane] = []
    with ExitStack() as stack:
        stores: list[tuple[SessionStore, str, int]] = []
        for history in histories:
            header = synth_header(f"append-{history}")
            sid = header["id"]
            store_url = dbs.create(f"store_h{history}", migrated=True, primed=primed)
            stack.callback(dbs.drop, store_url)
            floor_url = dbs.create(f"floor_h{history}")
            stack.callback(dbs.drop, floor_url)
            began = time.perf_counter()
            with SessionStore(store_url) as builder:
                if history:
                    builder.import_entries(header, synth_entries(history))
                else:
                    builder.create_session(cwd=header["cwd"], session_id=sid, timestamp=header["timestamp"])
            built_store = time.perf_counter() - began
            began = time.perf_counter()
            with psycopg.connect(floor_url) as loader:
                for ddl in _FLOOR_DDL_PG:
                    loader.execute(ddl)
                with loader.cursor() as cur, cur.copy(
                    "COPY entries (session_id, seq, entry_id, parent_id, payload) FROM STDIN"
                ) as copy:
                    for row in history_rows(sid, history):
                        copy.write_row(row)
            if history:
                log(
                    f"  postgresql history {history:,}: store insert_session {built_store:.1f}s,"
                    f" floor COPY {time.perf_counter() - began:.1f}s"
                )
            pg_analyze(store_url)
            pg_analyze(floor_url)
            store = SessionStore(store_url)
            stack.callback(store.close)
            conn = psycopg.connect(floor_url)
            stack.callback(conn.close)
            cursor = conn.cursor()
            stack.callback(cursor.close)
            stores.append((store, sid, history))
            lanes.append(
                Lane(history, partial(store.append_message, sid), partial(_pg_insert, conn, cursor),
                     append_rows(sid, history, messages))
            )
        with psycopg.connect(dbs.url, autocommit=True) as admin:
            admin.execute("CHECKPOINT")
        interleave(lanes, messages)
        for store, sid, history in stores:
            check_count(store, sid, history + len(messages))
    setting = "-" if primed else "unprimed"
    return [Result("postgresql", setting, ln.history, Stats.of(ln.store_s), Stats.of(ln.floor_s)) for ln in lanes]


def _pg_insert(conn: Any, cursor: Any, row: Row) -> None:
    cursor.execute(_FLOOR_INSERT_PG, row)
    conn.commit()


# -- report ----------------------------------------------------------------------------------------
def print_report(results: list[Result], appends: int) -> None:
    print(
        f"append: {appends:,} single appends (each its own committed transaction) of real pi messages to one"
        " session holding `history` entries"
    )
    print(
        "store = SessionStore.append_message; floor = raw driver INSERT of the same row + COMMIT on a table shaped"
        " like entries, same settings, interleaved with the store"
    )
    print(
        f"rate = appends / summed latency; p50/p99/max over the timed appends (after {WARMUP} warm-up appends);"
        " ratio = store rate / floor rate; postgresql databases primed unless marked 'unprimed'"
    )
    print(
        "schema (sqlite) = the store's own statements for each append (head read, entry insert, session update,"
        " commit) run raw with sqlite3 on a copy of the store's database; schema ratio = schema rate / floor rate:"
        " the ceiling for the store's ratio before any Python runs"
    )
    headers = [
        "backend", "sync", "history", "store/s", "p50 ms", "p99 ms", "max ms",
        "floor/s", "p50 ms", "p99 ms", "max ms", "ratio", "schema/s", "schema ratio",
    ]
    rows = [
        [
            r.backend, r.setting, f"{r.history:,}",
            f"{r.store.rate:,.0f}", f"{r.store.p50_ms:.2f}", f"{r.store.p99_ms:.2f}", f"{r.store.max_ms:.1f}",
            f"{r.floor.rate:,.0f}", f"{r.floor.p50_ms:.2f}", f"{r.floor.p99_ms:.2f}", f"{r.floor.max_ms:.1f}",
            f"{r.ratio:.2f}x",
            "-" if r.schema is None else f"{r.schema.rate:,.0f}",
            "-" if r.schema_ratio is None else f"{r.schema_ratio:.2f}x",
        ]
        for r in results
    ]
    print_table(headers, rows)
    print()


def print_targets(results: list[Result]) -> None:
    labels = list(dict.fromkeys(r.label for r in results))
    for label in labels:
        group = [r for r in results if r.label == label]
        worst = min(group, key=lambda r: r.ratio)
        detail = ", ".join(f"history {r.history:,}: {r.ratio:.2f}x" for r in group)
        print(f"target: {label} store rate >= {TARGET_RATIO}x floor: {detail} -> {met(worst.ratio >= TARGET_RATIO)}")
    for label in labels:
        group = sorted((r for r in results if r.label == label), key=lambda r: r.history)
        if len(group) < 2 or group[0].history != 0:
            print(f"target: {label} flat in history size: not measured (needs history 0 and a larger one)")
            continue
        empty, big = group[0], group[-1]
        growth = big.store.mean_ms / empty.store.mean_ms
        floor_growth = big.floor.mean_ms / empty.floor.mean_ms
        print(
            f"target: {label} mean append time at history {big.history:,} within {TARGET_FLAT}x of history 0:"
            f" {growth:.2f}x ({empty.store.mean_ms:.3f} -> {big.store.mean_ms:.3f} ms; floor {floor_growth:.2f}x)"
            f" -> {met(growth <= TARGET_FLAT)}"
        )
    full = [r for r in results if r.backend == "sqlite" and r.setting == "FULL"]
    if full:
        worst = max(full, key=lambda r: r.store.p99_ms)
        detail = ", ".join(f"history {r.history:,}: {r.store.p99_ms:.2f} ms" for r in full)
        ok = worst.store.p99_ms < TARGET_P99_MS
        print(f"target: sqlite FULL p99 < {TARGET_P99_MS:.0f} ms: {detail} -> {met(ok)}")
    else:
        print("target: sqlite FULL p99: not measured")
    pg = [r for r in results if r.backend == "postgresql"]
    if pg:
        detail = ", ".join(f"history {r.history:,}: {r.store.p99_ms:.2f} ms" for r in pg)
        print(f"info: postgresql p99 (synchronous_commit as the server has it): {detail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=None, help="timed appends per run (default 5000)")
    parser.add_argument("--histories", default=None, help="comma-separated history sizes (default 0,10000,100000)")
    parser.add_argument(
        "--pg-unprimed",
        action="store_true",
        help="PostgreSQL: use empty databases without planner statistics instead of primed ones (shows the"
        " slow-down described in _common.PgDatabases; a 100,000-entry history then takes ~20 minutes to build)",
    )
    add_common_args(parser)
    args = parser.parse_args(argv)
    exit_on_sigterm()
    appends = args.appends if args.appends is not None else (300 if args.quick else 5000)
    histories_arg = args.histories or ("0,2000" if args.quick else "0,10000,100000")
    histories = sorted({int(h.replace("_", "")) for h in histories_arg.split(",") if h.strip()})
    if appends < 10 or any(h < 0 for h in histories):
        parser.error("--appends must be >= 10 and history sizes >= 0")
    pg_url = pg_url_or_note(args)
    messages = pick_messages(appends + WARMUP)
    started = time.perf_counter()
    results: list[Result] = []
    with work_dir(args.keep, "sessionstore-append-") as workdir:
        templates: dict[int, Template] = {}
        try:
            for history in histories:
                log(f"sqlite: building history {history:,}")
                templates[history] = build_sqlite_template(workdir, history)
            for durability in ("full", "normal"):
                began = time.perf_counter()
                results.extend(run_sqlite(workdir, templates, durability, messages))
                log(f"sqlite {durability}: {time.perf_counter() - began:.1f}s")
        finally:
            for tpl in templates.values():
                remove_sqlite(tpl.store_db)
                remove_sqlite(tpl.floor_db)
        if pg_url:
            dbs = PgDatabases(pg_url, "append")
            try:
                log("postgresql: building")
                began = time.perf_counter()
                results.extend(run_postgres(dbs, histories, messages, primed=not args.pg_unprimed))
                log(f"postgresql: {time.perf_counter() - began:.1f}s")
            finally:
                dbs.drop_all()
    order = {("sqlite", "FULL"): 0, ("sqlite", "NORMAL"): 1, ("postgresql", "-"): 2, ("postgresql", "unprimed"): 3}
    results.sort(key=lambda r: (order[(r.backend, r.setting)], r.history))
    print_report(results, appends)
    print_targets(results)
    print(f"total {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Peer benchmark: ``SessionStore`` against the OpenAI Agents SDK's ``SQLiteSession`` (openai-agents).

Needs the benchmark-only extra: ``pip install -e '.[bench]'`` (openai-agents). Both sides run in the
same process, in the same run, on the same disk, with the same durability, on the same messages.

Messages: ``--sizes`` user/assistant messages alternating (user first), each carrying the same text
of exactly ``--text-chars`` (default 1,000) ASCII characters (pseudo-random words, seeded: the same
texts on both sides, in every run). Each side gets them in its own format, built before timing:

- store: ``user_message(text)`` and ``assistant_message([{"type": "text", "text": text}], api=...,
  provider=..., model=...)`` (pi's format: the assistant message carries api/provider/model, zero
  usage and stopReason; each entry adds type, id, parentId and timestamp), passed to
  ``SessionStore.append_message(session_id, message)``;
- peer: the Responses items the Agents SDK's Runner saves to its session for the same turns:
  ``{"content": text, "role": "user"}`` (``ItemHelpers.input_to_new_input_list``) and an
  ``openai.types.responses.ResponseOutputMessage`` (id ``msg_`` + 48 hex characters, one
  ``output_text`` part, status completed) dumped as ``MessageOutputItem.to_input_item`` does
  (``model_dump(exclude_unset=True)``), passed to ``await SQLiteSession.add_items([item])``.

Durability, the same on both sides: WAL and ``synchronous=FULL``. The store: ``SessionStore(url,
durability="full")``. The peer: ``SQLiteSession`` already opens every connection in WAL mode
(``_configure_connection``) and leaves ``synchronous`` at SQLite's default, which is FULL in CPython's
SQLite; the benchmark does not rely on that default: it uses a subclass, ``FullSyncSQLiteSession``,
whose ``_configure_connection`` calls the original one and then sets ``PRAGMA synchronous = FULL``
(nothing else changed; the subclass only loses the SDK's compaction snapshot, which is not used).
Checked with ``strace -f -y -e trace=fsync,fdatasync`` (``-y`` names each descriptor's file) on
``--sizes 500 --rounds 1 --resume-size 0``: every append is one ``fdatasync`` of its WAL file on both
sides (store 510, peer 509 on the round's WAL for its 500 appends, the ``thread`` side below as the
store; the others are the schema creation, the store's migrations and ``create_session``, and the
checkpoints, which also sync the database file: store 5, peer 4). Neither side syncs more than once
per append.

How each side is called: the peer as an async agent calls it, one ``await session.add_items([item])``
per message inside a running event loop (``add_items`` runs its transaction in a worker thread,
``asyncio.to_thread``, so its time includes that hop); the store directly (its API is synchronous),
from the same coroutine, between the peer's awaits. A third side, for information (no target),
``thread``: the store on a third database file, called as an async agent that keeps its event loop
free would call it, ``await asyncio.to_thread(store.append_message, sid, message)``: the same thread
hop as the peer.

Appends (table 1): for every size, ``--rounds`` rounds (default 5); each round appends ``size``
messages one by one to a new session in a new database file on each side (files created, the store's
schema migrated and its session created before timing; nothing of a round is reused), interleaved
message by message (which side goes first rotates each message), so that machine drift hits all
sides. Ten untimed warm-up appends per side on separate files precede the first round. Interleaving
slows every side (each disturbs the others' caches and disk queue: absolute rates are lower than a
side running alone) but not the ratio: over ten pairs of 1,000-append runs on the development
machine, the store / peer rate ratio had a median of 0.92x with each side running alone (alternating
order, spread 0.66-1.29x) and 0.93x interleaved (spread 0.81-1.31x).

- rate/s: appends / summed latency of one round; the median over rounds (best round in
  parentheses); ratio = store rate / peer rate (medians; best / best in parentheses);
- p50, p99, max ms: latency percentiles over every timed append of every round of that size
  (nearest rank); p99 ratio = store p99 / peer p99 (<= 1.0x: no worse);
- thread/s, p99 ms, thread ratio: the ``thread`` side's median rate, p99, and rate / the peer's.

Bytes on disk (table 2): after each round both sides are closed and their WAL checkpointed into the
database file (``PRAGMA wal_checkpoint(TRUNCATE)``: the WAL is then empty); B/msg = (database file +
WAL + shm) / messages, from the last round of each size; both include their fixed schema pages (the
store: sessionstore_sessions, sessionstore_alembic_version, triggers; a few bytes per message at 10,000).
Split with SQLite's ``dbstat`` table (``-`` where SQLite lacks it): payload = the JSON text each side
stores per message (the store: the whole entry line; the peer: ``json.dumps(item)``); indexes = the
pages of the index b-trees (the store has three on entries: primary key, entry id, parent; the peer
one); slack = unused bytes in the pages of the message table (a page holds a whole number of rows; the
store's pages are 8 KiB, the peer's SQLite's default 4 KiB); other = the rest (the other columns,
record headers, schema pages). ratio = store B/msg / peer B/msg. With 4 KiB pages (before revision
0006) the ratio depended on where the rows fell against the page size (1.03-1.75x for texts of 300 to
4,000 characters); 8 KiB pages hold four to six such rows and leave little unused. A ``bulk`` row
shows the files of the resume test, written in one transaction (store ``import_entries``, peer one
``add_items`` of every item).

Resume (table 3): ``--resume-size`` messages (default 100,000; 0 skips) written to one session on
each side (store: ``import_entries``; peer: one ``add_items`` call), not timed, then both reopened
(a new ``SessionStore``, a new ``SQLiteSession``) and timed with warm caches, one warm-up each and
``--resume-repeat`` runs (default 3) alternating which side goes first; one result alive at a time:

- store: ``SessionStore.context(sid)`` in a store without its entry cache (``entry_cache_bytes=0``:
  every run is a first, cold resume): the path read from the leaf (uncompacted: all of it), the
  context built, validated and projected (``.messages`` and ``.llm``);
- again (info): the same in a store with its default entry cache, which resumed the session before
  (the entries are read and decoded again; the check of a text it checked before is not repeated);
- slice (info): ``context_slice(sid)`` alone, the database part of ``context`` (the recursive path
  query and decoding every payload);
- peer: ``await SQLiteSession.get_items()``: every row of the session, ``json.loads`` each;
- peer-pi: the same SDK session holding the same pi messages the store holds (issue 12's option c:
  each item is the message's wire dict, ``{"role": "user", "content": ..., "timestamp": ...}`` and
  the assistant's with api/provider/model/usage/stopReason), so both sides read and decode the same
  messages; the target's peer;
- times: best (median in parentheses); ratio = store / peer-pi on best times (<= 1.0x: the target).
  Every result is checked to hold every message's text, in order.

Targets (issue 12, item 6): store appends/s >= 1.0x the peer's at every size, with p99 no worse;
bytes on disk per message <= 1.1x the peer's at every size; resume of the uncompacted session <= 1.0x
the time of ``get_items()`` of the peer holding the same pi messages (issue 25). Printed as MET / NOT
MET; a missed target does not change the exit code.

    python benchmarks/peers.py [--sizes 1000,10000] [--rounds 3] [--resume-size 100000] [--keep DIR]
    python benchmarks/peers.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    exit_on_sigterm,
    log,
    met,
    percentile,
    print_table,
    remove_sqlite,
    synth_header,
    synth_id,
    work_dir,
)

from sessionstore import SessionStore, assistant_message, user_message
from sessionstore.store.entry_store import EntryStore

try:
    from agents.memory.sqlite_session import SQLiteSession
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText
except ImportError as exc:  # the benchmark-only extra is missing: main() says so
    MISSING_EXTRA: ImportError | None = exc
else:
    MISSING_EXTRA = None

Json = dict[str, Any]

TEXT_CHARS = 1_000
WARMUP = 10
TARGET_RATE = 1.0
TARGET_BYTES = 1.1
TARGET_BYTES_INDEXED = 2.0
SEARCH_EVERY = 100
"""The store side searches for the message it just appended every this many appends (untimed)."""
TARGET_RESUME = 1.0
CWD = "/work/bench"
API, PROVIDER, MODEL = "openai-responses", "openai", "gpt-5"


# -- the peer, at the store's durability --------------------------------------------------------------
def full_sync_session_class() -> type[Any]:
    class FullSyncSQLiteSession(SQLiteSession):  # type: ignore[misc, valid-type]
        """``SQLiteSession`` whose connections also run ``PRAGMA synchronous = FULL`` (after its own WAL
        setup), so the setting does not depend on how SQLite was compiled."""

        @staticmethod
        def _configure_connection(conn: sqlite3.Connection) -> None:
            SQLiteSession._configure_connection(conn)
            conn.execute("PRAGMA synchronous = FULL")

    return FullSyncSQLiteSession


# -- messages -----------------------------------------------------------------------------------------
def texts(count: int, chars: int = TEXT_CHARS) -> list[str]:
    """``count`` texts of exactly ``chars`` ASCII characters (seeded pseudo-random words)."""
    rng = random.Random(12)
    vocabulary = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 10))) for _ in range(2000)]
    out = []
    for i in range(count):
        words = [f"message {i}:"]
        size = len(words[0])
        while size < chars:
            words.append(rng.choice(vocabulary))
            size += len(words[-1]) + 1
        out.append(" ".join(words)[:chars])
    return out


@dataclass
class Messages:
    texts: list[str]
    store: list[Any]  # message models
    peer: list[Json]  # Responses items


def make_messages(count: int, chars: int = TEXT_CHARS) -> Messages:
    all_texts = texts(count, chars)
    rng = random.Random(34)
    store: list[Any] = []
    peer: list[Json] = []
    for i, text in enumerate(all_texts):
        if i % 2 == 0:
            store.append(user_message(text))
            peer.append({"content": text, "role": "user"})
        else:
            store.append(assistant_message([{"type": "text", "text": text}], api=API, provider=PROVIDER, model=MODEL))
            raw = ResponseOutputMessage(
                id=f"msg_{rng.getrandbits(192):048x}",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
            )
            peer.append(raw.model_dump(exclude_unset=True))
    return Messages(all_texts, store, peer)


def peer_text(item: Json) -> str:
    content = item["content"]
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


def store_text(message: Json) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "".join(block["text"] for block in content)


# -- files --------------------------------------------------------------------------------------------
def checkpoint(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


@dataclass
class FileFacts:
    bytes: int
    messages: int
    payload: int
    """Bytes of the JSON text stored per message (the store: the entry line; the peer: the item)."""
    indexes: int | None
    """Bytes of the index b-trees' pages (``dbstat``; ``None`` where SQLite lacks it)."""
    slack: int | None
    """Unused bytes in the pages of the message table (``dbstat``)."""


def file_facts(path: Path, table: str, column: str) -> FileFacts:
    conn = sqlite3.connect(path)
    try:
        payload, count = conn.execute(f"SELECT sum(length(CAST({column} AS BLOB))), count(*) FROM {table}").fetchone()
        try:
            indexes = conn.execute(
                "SELECT sum(d.pgsize) FROM dbstat d JOIN sqlite_schema s ON s.name = d.name WHERE s.type = 'index'"
            ).fetchone()[0]
            slack = conn.execute("SELECT sum(unused) FROM dbstat WHERE name = ?", (table,)).fetchone()[0]
        except sqlite3.OperationalError:  # no dbstat table in this SQLite
            indexes = slack = None
    finally:
        conn.close()
    return FileFacts(disk_bytes(path), int(count), int(payload or 0), indexes, slack)


@dataclass
class Disk:
    label: str
    store: FileFacts
    peer: FileFacts

    @property
    def messages(self) -> int:
        return self.store.messages

    @property
    def ratio(self) -> float:
        return self.store.bytes / self.peer.bytes


def measure_disk(label: str, messages: int, store_db: Path, peer_db: Path) -> Disk:
    """Both files checkpointed (WAL emptied), measured, and their message counts checked."""
    for path in (store_db, peer_db):
        checkpoint(path)
    store = file_facts(store_db, "sessionstore_entries", "payload")
    disk = Disk(label, store, file_facts(peer_db, "agent_messages", "message_data"))
    for name, facts in (("store", disk.store), ("peer", disk.peer)):
        if facts.messages != messages:
            raise AssertionError(f"{name} file {label} holds {facts.messages} messages, expected {messages}")
    return disk


# -- appends ------------------------------------------------------------------------------------------
@dataclass
class Appends:
    size: int
    store_rates: list[float] = field(default_factory=list)
    peer_rates: list[float] = field(default_factory=list)
    thread_rates: list[float] = field(default_factory=list)
    store_s: list[float] = field(default_factory=list)
    peer_s: list[float] = field(default_factory=list)
    thread_s: list[float] = field(default_factory=list)
    disk: Disk | None = None
    disk_off: Disk | None = None
    search_ms: list[float] = field(default_factory=list)
    search_missed: int = 0

    def rate(self, side: str) -> float:
        return statistics.median(getattr(self, f"{side}_rates"))

    def best(self, side: str) -> float:
        return max(getattr(self, f"{side}_rates"))

    def ratio(self, side: str = "store") -> float:
        return self.rate(side) / self.rate("peer")

    @property
    def best_ratio(self) -> float:
        return self.best("store") / self.best("peer")

    def pct(self, side: str, q: float) -> float:
        return percentile(sorted(getattr(self, f"{side}_s")), q) * 1000

    @property
    def p99_ratio(self) -> float:
        return self.pct("store", 99) / self.pct("peer", 99)


@dataclass
class Round:
    store_s: list[float]
    peer_s: list[float]
    thread_s: list[float]
    store_db: Path
    peer_db: Path
    thread_db: Path
    search_ms: list[float] = field(default_factory=list)
    search_missed: int = 0


def search_check(store: SessionStore, sid: str, text: str, entry_id: str) -> bool:
    """Whether a search for the start of ``text`` (a quoted phrase), issued right after its append
    returned, finds that entry."""
    found = store.search('"' + text[:40] + '"', hits=1)
    return [(r.session.id, [h.entry_id for h in r.hits]) for r in found] == [(sid, [entry_id])]


async def append_round(workdir: Path, tag: str, msgs: Messages, count: int) -> Round:
    """One round: ``count`` messages appended one by one on each side, interleaved; new files."""
    session_class = full_sync_session_class()
    sid = synth_header(tag)["id"]
    dbs = [workdir / f"{side}-{tag}.db" for side in ("store", "peer", "thread")]
    for db in dbs:
        remove_sqlite(db)
    store_db, peer_db, thread_db = dbs
    store = SessionStore(f"sqlite:///{store_db}", durability="full")
    in_thread = SessionStore(f"sqlite:///{thread_db}", durability="full")
    peer = session_class(sid, peer_db)
    out = Round([], [], [], *dbs)
    try:
        store.create_session(cwd=CWD, session_id=sid)
        in_thread.create_session(cwd=CWD, session_id=sid)
        in_thread.set_search_index(False)  # the thread side measures the store with the index off
        append = store.append_message
        append_in_thread = in_thread.append_message
        add = peer.add_items
        to_thread = asyncio.to_thread
        clock = time.perf_counter
        gc.collect()
        for i in range(count):
            store_msg, peer_item = msgs.store[i], msgs.peer[i]
            for k in range(3):  # the side that goes first rotates
                side = (i + k) % 3
                if side == 0:
                    t0 = clock()
                    entry_id = append(sid, store_msg)
                    out.store_s.append(clock() - t0)
                    if i % SEARCH_EVERY == SEARCH_EVERY - 1:  # (untimed: a search right after the append)
                        t0 = clock()
                        out.search_missed += not search_check(store, sid, msgs.texts[i], entry_id)
                        out.search_ms.append((clock() - t0) * 1000)
                elif side == 1:
                    t0 = clock()
                    await add([peer_item])
                    out.peer_s.append(clock() - t0)
                else:
                    t0 = clock()
                    await to_thread(append_in_thread, sid, store_msg)
                    out.thread_s.append(clock() - t0)
        store.search("message")  # the index catches up with the last appends before the files are measured
    finally:
        store.close()
        in_thread.close()
        peer.close()
    return out


async def run_appends(workdir: Path, sizes: list[int], rounds: int, msgs: Messages, keep: bool) -> list[Appends]:
    log(f"appends: warm-up ({WARMUP} per side)")
    warm = await append_round(workdir, "warmup", msgs, WARMUP)
    for db in (warm.store_db, warm.peer_db, warm.thread_db):
        remove_sqlite(db)
    results = []
    for size in sizes:
        result = Appends(size)
        for r in range(rounds):
            began = time.perf_counter()
            done = await append_round(workdir, f"appends-{size}-r{r}", msgs, size)
            for side in ("store", "peer", "thread"):
                seconds = getattr(done, f"{side}_s")
                getattr(result, f"{side}_s").extend(seconds)
                getattr(result, f"{side}_rates").append(size / sum(seconds))
            result.disk = measure_disk(f"{size:,} appended, index on", size, done.store_db, done.peer_db)
            result.disk_off = measure_disk(f"{size:,} appended, index off", size, done.thread_db, done.peer_db)
            result.search_ms += done.search_ms
            result.search_missed += done.search_missed
            if not keep:
                for db in (done.store_db, done.peer_db, done.thread_db):
                    remove_sqlite(db)
            log(
                f"  {size:,} round {r + 1}/{rounds}: store {result.store_rates[-1]:,.0f}/s,"
                f" peer {result.peer_rates[-1]:,.0f}/s, store in a thread {result.thread_rates[-1]:,.0f}/s"
                f" ({time.perf_counter() - began:.1f}s)"
            )
        results.append(result)
    return results


# -- resume -------------------------------------------------------------------------------------------
@dataclass
class Timing:
    best_ms: float
    median_ms: float

    @classmethod
    def of(cls, seconds: list[float]) -> Timing:
        return cls(min(seconds) * 1000, statistics.median(seconds) * 1000)

    def __str__(self) -> str:
        return f"{self.best_ms:,.1f} ({self.median_ms:,.1f})"


@dataclass
class Resume:
    size: int
    store: Timing
    again: Timing
    slice: Timing
    peer: Timing
    peer_pi: Timing
    disk: Disk

    @property
    def ratio(self) -> float:
        return self.store.best_ms / self.peer_pi.best_ms

    @property
    def median_ratio(self) -> float:
        return self.store.median_ms / self.peer_pi.median_ms


def resume_entries(msgs: Messages, count: int) -> list[Json]:
    start = datetime(2025, 12, 1, tzinfo=UTC)
    entries: list[Json] = []
    parent = None
    for i in range(count):
        stamp = (start + timedelta(milliseconds=i)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        entry_id = synth_id(i)
        entries.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp,
                        "message": msgs.store[i % len(msgs.store)].to_wire()})
        parent = entry_id
    return entries


async def timed_async(make: Callable[[], Coroutine[Any, Any, Any]]) -> tuple[float, Any]:
    gc.collect()
    t0 = time.perf_counter()
    result = await make()
    return time.perf_counter() - t0, result


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


async def run_resume(workdir: Path, size: int, repeat: int, msgs: Messages, keep: bool) -> Resume:
    header = synth_header(f"peers-resume-{size}")
    sid = header["id"]
    store_db = workdir / f"store-resume-{size}.db"
    peer_db = workdir / f"peer-resume-{size}.db"
    peer_pi_db = workdir / f"peer-pi-resume-{size}.db"
    for db in (store_db, peer_db, peer_pi_db):
        remove_sqlite(db)
    session_class = full_sync_session_class()
    log(f"resume: building {size:,} messages on each side")
    began = time.perf_counter()
    with SessionStore(f"sqlite:///{store_db}", durability="full") as builder:
        builder.import_entries(header, resume_entries(msgs, size))
    built_store = time.perf_counter() - began
    began = time.perf_counter()
    peer_builder = session_class(sid, peer_db)
    try:
        await peer_builder.add_items([msgs.peer[i % len(msgs.peer)] for i in range(size)])
    finally:
        peer_builder.close()
    pi_items = [msgs.store[i % len(msgs.store)].to_wire() for i in range(size)]
    peer_builder = session_class(sid, peer_pi_db)
    try:
        await peer_builder.add_items(pi_items)
    finally:
        peer_builder.close()
    del pi_items
    log(f"  built: store import_entries {built_store:.1f}s, peers add_items {time.perf_counter() - began:.1f}s")
    disk = measure_disk(f"{size:,} bulk", size, store_db, peer_db)
    expected = [msgs.texts[i % len(msgs.texts)] for i in range(size)]

    store = SessionStore(f"sqlite:///{store_db}", durability="full", entry_cache_bytes=0)  # every resume cold
    cached = SessionStore(f"sqlite:///{store_db}", durability="full")  # with its entry cache
    lower = EntryStore(f"sqlite:///{store_db}", durability="full")  # the layer below, for the slice alone
    peer = session_class(sid, peer_db)
    peer_pi = session_class(sid, peer_pi_db)
    store_s: list[float] = []
    again_s: list[float] = []
    slice_s: list[float] = []
    peer_s: list[float] = []
    peer_pi_s: list[float] = []
    try:
        # warm-up, and the check that every side gives back every message in order
        for side in (store, cached):
            _t, ctx = timed(lambda side=side: side.context(sid))
            if [store_text(m) for m in ctx.messages] != expected or len(ctx.llm) != size:
                raise AssertionError(f"the store's context holds {len(ctx.messages)} messages, not the {size} written")
            if ctx.diagnostics:
                log(f"  note: {len(ctx.diagnostics)} diagnostics, first: {ctx.diagnostics[0].message}")
            ctx = None
        _t, items = await timed_async(peer.get_items)
        if [peer_text(item) for item in items] != expected:
            raise AssertionError(f"the peer's get_items gave {len(items)} items, not the {size} written")
        _t, items = await timed_async(peer_pi.get_items)
        if [store_text(item) for item in items] != expected:
            raise AssertionError(f"the pi-message peer's get_items gave {len(items)} items, not the {size} written")
        items = None
        timed(lambda: lower.context_slice(sid))
        for r in range(repeat):
            async def peers_run() -> None:
                seconds, _items = await timed_async(peer.get_items)
                peer_s.append(seconds)
                _items = None
                seconds, _items = await timed_async(peer_pi.get_items)
                peer_pi_s.append(seconds)

            def store_run() -> None:
                seconds, _ctx = timed(lambda: store.context(sid))
                store_s.append(seconds)
                _ctx = None
                seconds, _ctx = timed(lambda: cached.context(sid))
                again_s.append(seconds)

            if r % 2 == 0:
                await peers_run()
                store_run()
            else:
                store_run()
                await peers_run()
            seconds, _part = timed(lambda: lower.context_slice(sid))
            slice_s.append(seconds)
            log(f"  run {r + 1}/{repeat}: store {store_s[-1] * 1000:,.0f} ms (again {again_s[-1] * 1000:,.0f}),"
                f" peer {peer_s[-1] * 1000:,.0f} ms, peer-pi {peer_pi_s[-1] * 1000:,.0f} ms")
    finally:
        store.close()
        cached.close()
        lower.close()
        peer.close()
        peer_pi.close()
    if not keep:
        for db in (store_db, peer_db, peer_pi_db):
            remove_sqlite(db)
    return Resume(size, Timing.of(store_s), Timing.of(again_s), Timing.of(slice_s), Timing.of(peer_s),
                  Timing.of(peer_pi_s), disk)


# -- report -------------------------------------------------------------------------------------------
def print_appends(results: list[Appends], rounds: int) -> None:
    print(
        "appends: one message per call (store: SessionStore.append_message; peer: await"
        " SQLiteSession.add_items([item])), WAL + synchronous=FULL on both sides, interleaved message by message"
    )
    print(
        f"rate/s = appends / summed latency: median of {rounds} rounds (best); ratio = store / peer (best / best);"
        " p50/p99/max over every timed append of the size; p99 ratio = store / peer;"
        " thread (info) = the store with its search index off called as the peer runs,"
        " await asyncio.to_thread(append_message, ...)"
    )
    headers = ["messages", "store/s", "p50 ms", "p99 ms", "max ms", "peer/s", "p50 ms", "p99 ms", "max ms",
               "ratio", "p99 ratio", "thread/s", "p99 ms", "thread ratio"]
    rows = [
        [
            f"{r.size:,}",
            f"{r.rate('store'):,.0f} ({r.best('store'):,.0f})",
            f"{r.pct('store', 50):.2f}", f"{r.pct('store', 99):.2f}", f"{r.pct('store', 100):.1f}",
            f"{r.rate('peer'):,.0f} ({r.best('peer'):,.0f})",
            f"{r.pct('peer', 50):.2f}", f"{r.pct('peer', 99):.2f}", f"{r.pct('peer', 100):.1f}",
            f"{r.ratio():.2f}x ({r.best_ratio:.2f}x)", f"{r.p99_ratio:.2f}x",
            f"{r.rate('thread'):,.0f}", f"{r.pct('thread', 99):.2f}", f"{r.ratio('thread'):.2f}x",
        ]
        for r in results
    ]
    print_table(headers, rows)
    print(
        f"search right after an append (every {SEARCH_EVERY}th, untimed; the index catches up with the appends"
        " since the last search first): "
        + ", ".join(f"{r.size:,}: {len(r.search_ms)} searches, p50 {statistics.median(r.search_ms):.1f} ms,"
                    f" {r.search_missed} missed" for r in results if r.search_ms)
    )
    print()


def print_disk(disks: list[Disk]) -> None:
    print(
        "bytes on disk per message: database file + WAL after PRAGMA wal_checkpoint(TRUNCATE), schema pages included;"
        " ratio = store / peer"
    )
    print(
        "of which: payload = the JSON text stored; indexes = the index b-trees' pages; slack = unused bytes in the"
        " message table's pages; other = the rest (other columns, record headers, schema pages)"
    )
    headers = ["files", "store B/msg", "payload", "indexes", "slack", "other",
               "peer B/msg", "payload", "indexes", "slack", "other", "ratio"]

    def split(f: FileFacts) -> list[str]:
        n = f.messages
        if f.indexes is None or f.slack is None:
            return [f"{f.bytes / n:,.0f}", f"{f.payload / n:,.0f}", "-", "-", "-"]
        other = f.bytes - f.payload - f.indexes - f.slack
        return [f"{v / n:,.0f}" for v in (f.bytes, f.payload, f.indexes, f.slack, other)]

    print_table(headers, [[d.label, *split(d.store), *split(d.peer), f"{d.ratio:.2f}x"] for d in disks])
    print()


def print_resume(resume: Resume, repeat: int) -> None:
    print(
        "resume of an uncompacted session: store = SessionStore.context() without the entry cache (read the path,"
        " decode, build, validate, project); again = with the cache, resumed before; slice = the database read"
        " alone; peer = await SQLiteSession.get_items() of Responses items; peer-pi = the same holding the same pi"
        " messages"
    )
    print(f"times: best of {repeat} warm runs (median), sides alternating; ratio = store / peer-pi (best times)")
    headers = ["messages", "store ms", "again ms", "slice ms", "peer ms", "peer-pi ms", "ratio", "median ratio",
               "again ratio"]
    print_table(headers, [[
        f"{resume.size:,}", str(resume.store), str(resume.again), str(resume.slice), str(resume.peer),
        str(resume.peer_pi), f"{resume.ratio:.2f}x", f"{resume.median_ratio:.2f}x",
        f"{resume.again.best_ms / resume.peer_pi.best_ms:.2f}x",
    ]])
    print()


def print_targets(appends: list[Appends], resume: Resume | None) -> None:
    if appends:
        detail = ", ".join(
            f"{r.size:,}: {r.rate('store'):,.0f}/s vs {r.rate('peer'):,.0f}/s = {r.ratio():.2f}x" for r in appends
        )
        ok = all(r.ratio() >= TARGET_RATE for r in appends)
        print(f"target: store appends/s >= {TARGET_RATE}x SQLiteSession's: {detail} -> {met(ok)}")
        detail = ", ".join(
            f"{r.size:,}: {r.pct('store', 99):.2f} ms vs {r.pct('peer', 99):.2f} ms = {r.p99_ratio:.2f}x"
            for r in appends
        )
        ok = all(r.p99_ratio <= 1.0 for r in appends)
        print(f"target: store append p99 no worse than SQLiteSession's: {detail} -> {met(ok)}")
        for target, disks in ((TARGET_BYTES, [r.disk_off for r in appends if r.disk_off is not None]),
                              (TARGET_BYTES_INDEXED, [r.disk for r in appends if r.disk is not None])):
            detail = ", ".join(
                f"{d.label}: {d.store.bytes / d.messages:,.0f} B vs {d.peer.bytes / d.messages:,.0f} B = {d.ratio:.2f}x"
                for d in disks
            )
            ok = all(d.ratio <= target for d in disks)
            print(f"target: store bytes on disk per message <= {target}x SQLiteSession's: {detail} -> {met(ok)}")
        missed = sum(r.search_missed for r in appends)
        checks = sum(len(r.search_ms) for r in appends)
        print(f"target: a search right after an append finds it: {checks - missed} of {checks} -> {met(missed == 0)}")
    else:
        print("target: appends and bytes on disk: not measured (no --sizes)")
    if resume is not None:
        print(
            f"target: {resume.size:,}-message uncompacted resume <= {TARGET_RESUME}x the time of get_items() of the"
            f" same pi messages: {resume.store.best_ms:,.0f} ms vs {resume.peer_pi.best_ms:,.0f} ms"
            f" = {resume.ratio:.2f}x"
            f" (medians {resume.median_ratio:.2f}x) -> {met(resume.ratio <= TARGET_RESUME)}"
        )
    else:
        print("target: resume: not measured (--resume-size 0)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=None, help="comma-separated append run sizes (default 1000,10000)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per append size, new files each (default 5)")
    parser.add_argument(
        "--resume-size", type=int, default=None, help="messages of the resume test (default 100000; 0 skips)"
    )
    parser.add_argument("--resume-repeat", type=int, default=None, help="timed resume runs per side (default 3)")
    parser.add_argument(
        "--text-chars", type=int, default=TEXT_CHARS,
        help=f"characters of each message's text (default {TEXT_CHARS}; bytes per message depend on how many rows"
        " fit in a page)",
    )
    parser.add_argument("--keep", metavar="DIR", help="write the databases to DIR and keep them")
    parser.add_argument("--quick", action="store_true", help="a small smoke run (seconds, not minutes)")
    args = parser.parse_args(argv)
    if MISSING_EXTRA is not None:
        print(
            f"peers.py needs the benchmark extra (openai-agents): pip install -e '.[bench]'"
            f" ({type(MISSING_EXTRA).__name__}: {MISSING_EXTRA})",
            file=sys.stderr,
        )
        return 2
    exit_on_sigterm()
    sizes_arg = args.sizes if args.sizes is not None else ("200" if args.quick else "1000,10000")
    sizes = [int(s.replace("_", "")) for s in sizes_arg.split(",") if s.strip()]
    rounds = args.rounds if args.rounds is not None else (2 if args.quick else 5)
    resume_size = args.resume_size if args.resume_size is not None else (2000 if args.quick else 100_000)
    repeat = args.resume_repeat if args.resume_repeat is not None else (2 if args.quick else 3)
    if any(s < WARMUP for s in sizes) or rounds < 1 or repeat < 1 or resume_size < 0 or args.text_chars < 20:
        parser.error(
            f"sizes must be >= {WARMUP}, --rounds and --resume-repeat >= 1, --resume-size >= 0, --text-chars >= 20"
        )
    started = time.perf_counter()
    distinct = max([*sizes, WARMUP, min(resume_size, 10_000)])
    # an even count: the resume session cycles through the messages and stays user/assistant alternating
    msgs = make_messages(distinct + distinct % 2, args.text_chars)

    async def run(workdir: Path) -> tuple[list[Appends], Resume | None]:
        appends = await run_appends(workdir, sizes, rounds, msgs, bool(args.keep))
        resume = await run_resume(workdir, resume_size, repeat, msgs, bool(args.keep)) if resume_size else None
        return appends, resume

    with work_dir(args.keep, "sessionstore-peers-") as workdir:
        appends, resume = asyncio.run(run(workdir))
    print(f"peer: openai-agents {agents_version()} SQLiteSession (WAL + synchronous=FULL); store: sessionstore"
          f" SessionStore(durability='full'); messages of {args.text_chars:,} characters, user/assistant alternating")
    print()
    if appends:
        print_appends(appends, rounds)
    disks = [d for r in appends for d in (r.disk_off, r.disk) if d is not None] + ([resume.disk] if resume else [])
    if disks:
        print_disk(disks)
    if resume is not None:
        print_resume(resume, repeat)
    print_targets(appends, resume)
    print(f"total {time.perf_counter() - started:.0f}s")
    return 0


def agents_version() -> str:
    from importlib.metadata import version

    return version("openai-agents")


if __name__ == "__main__":
    sys.exit(main())

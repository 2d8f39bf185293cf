"""Change notification (SPEC 17): how a write announces that a session changed, how a watcher in any
process learns it, and how a follower reads what changed.

**Announcing.** Every write of a session goes through three transaction primitives: ``update_head``
(an append, an import, a sync, a create or fork: the session now has N entries), ``set_leaf`` (the leaf
moved) and ``delete_session``. On PostgreSQL each of them also runs :data:`PG_NOTIFY` in the writing
transaction (``Statements.notify``), so the notification is delivered when, and only if, it commits.
Its payload is compact JSON: ``[tenant, session key, last seq, kind, session id or null]`` (the id
only when it is short; a payload has at most 8000 bytes). SQLite has no notifications: its watchers
look (below), and its writers announce nothing.

**Watching.** :func:`open_hub` opens one :class:`ChangeHub` per process and database: on PostgreSQL a
thread holding one ``LISTEN`` connection, on SQLite a thread that every ``interval`` seconds (200 ms)
runs ``PRAGMA data_version`` on a connection of its own and, when another connection committed since,
reads the session rows of the watched sessions (by key) and tenants (by tenant): no entry is read.
Either way the hub calls each :class:`Watch`'s callback, from its thread, with a :class:`Change`, or
with ``None`` when anything may have changed (the listener reconnected after losing the database).
Any writer reaches every watcher: another worker, another process, the CLI, a sync.

**Following.** A notification only says *look*: a follower reads what is stored, after the last seq it
delivered (:meth:`SessionFeed.advance`), so nothing is skipped or delivered twice however notifications
are merged, repeated or lost, and a resumed follower (``after=``) reads exactly the same.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import orjson

from sessionstore.store.dbtext import from_db, loaded, to_db
from sessionstore.store.records import UNSET, SessionEvent, _Unset

if TYPE_CHECKING:
    from sessionstore.store.entry_store import EntryStore

log = logging.getLogger("sessionstore.changes")

ChangeKind = Literal["entries", "leaf", "deleted"]
CHANNEL = "sessionstore_changes"
"""The PostgreSQL notification channel."""
POLL_INTERVAL = 0.2
"""Seconds between two change checks of a SQLite watcher (SPEC 17: at most every 200 ms)."""
ID_IN_PAYLOAD = 1024
"""Longest stored session id (bytes) a notification carries; a longer one is left out (the key says it)."""
SESSIONS = "sessionstore_sessions"

PG_NOTIFY = (
    f"SELECT pg_notify('{CHANNEL}', json_build_array(tenant, key, entry_count - 1, CAST(%(kind)s AS text),"
    f" CASE WHEN octet_length(id) <= {ID_IN_PAYLOAD} THEN id END)::text) FROM {SESSIONS} WHERE key = %(key)s"
)
"""The notification of a change of session ``key`` (parameters ``key``, ``kind``), raised inside the
writing transaction: PostgreSQL delivers it at commit, and drops it on rollback."""

_ROW_COLUMNS = "key, tenant, id, entry_count, leaf_id, deleting"
SQLITE_ROWS_BY_KEY = f"SELECT {_ROW_COLUMNS} FROM {SESSIONS} WHERE key IN ({{marks}})"
SQLITE_ROWS_OF_TENANT = f"SELECT {_ROW_COLUMNS} FROM {SESSIONS} WHERE tenant = ?"
KEYS_PER_QUERY = 500


@dataclass(frozen=True, slots=True)
class Change:
    """Session ``key`` of ``tenant`` changed: ``kind`` ``entries`` (it has entries up to ``last_seq`` now:
    an append, import, sync, create, fork), ``leaf`` (its leaf moved) or ``deleted``. ``session_id`` may
    be ``None`` (a PostgreSQL payload leaves a very long id out)."""

    tenant: str
    key: int
    last_seq: int
    kind: ChangeKind
    session_id: str | None


def parse_payload(payload: str) -> Change | None:
    """The :class:`Change` of a :data:`PG_NOTIFY` payload; ``None`` for anything else."""
    try:
        tenant, key, last_seq, kind, session_id = orjson.loads(payload)
    except (orjson.JSONDecodeError, ValueError, TypeError):
        return None
    if not isinstance(tenant, str) or not isinstance(key, int) or kind not in ("entries", "leaf", "deleted"):
        return None
    return Change(tenant, key, int(last_seq) if isinstance(last_seq, int) else -1, kind,
                  from_db(session_id) if isinstance(session_id, str) else None)


Callback = Callable[[Change | None], None]


@dataclass(eq=False)
class Watch:
    """One watcher's registration: changes of session ``key`` of ``tenant`` (``key=None``: of every
    session of ``tenant``) reach ``callback``. :meth:`close` ends it."""

    hub: ChangeHub
    tenant: str
    key: int | None
    callback: Callback

    def close(self) -> None:
        self.hub._remove(self)


class ChangeHub:
    """The watches of one process on one database; a subclass brings the changes (:meth:`_deliver`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[int, set[Watch]] = {}
        self._by_tenant: dict[str, set[Watch]] = {}
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, callback: Callback, *, tenant: str, key: int | None = None) -> Watch:
        """Call ``callback`` (from the hub's thread: it must return at once) for each change of session
        ``key`` of ``tenant``, or of any session of ``tenant`` when ``key`` is ``None``."""
        one = Watch(self, tenant, key, callback)
        with self._lock:
            if key is None:
                self._by_tenant.setdefault(tenant, set()).add(one)
            else:
                self._by_key.setdefault(key, set()).add(one)
        self._added()
        return one

    def _remove(self, one: Watch) -> None:
        with self._lock:
            group = self._by_tenant.get(one.tenant) if one.key is None else self._by_key.get(one.key)
            if group is not None:
                group.discard(one)
                if not group:
                    if one.key is None:
                        del self._by_tenant[one.tenant]
                    else:
                        del self._by_key[one.key]

    def _added(self) -> None:
        """(A new watch: the SQLite watcher looks at once.)"""

    def _watched(self) -> tuple[list[int], list[str]]:
        with self._lock:
            return list(self._by_key), list(self._by_tenant)

    def _deliver(self, change: Change | None) -> None:
        """Hand ``change`` to the watches it concerns (``None``: to all)."""
        with self._lock:
            if change is None:
                chosen = [w for group in (*self._by_key.values(), *self._by_tenant.values()) for w in group]
            else:
                chosen = [*self._by_key.get(change.key, ()), *self._by_tenant.get(change.tenant, ())]
        for one in chosen:
            if one.key is not None and change is not None and change.tenant != one.tenant:
                continue  # (a key is one tenant's; this guards a payload that would say otherwise)
            try:
                one.callback(change)
            except Exception:  # a watcher's failure is its own
                log.exception("a change callback failed")

    def _start(self, target: Callable[[], None], name: str) -> None:
        self._thread = threading.Thread(target=target, name=name, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop watching (the thread ends within a poll interval)."""
        self._stopped.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def __enter__(self) -> ChangeHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SqliteWatcher(ChangeHub):
    """Changes of a SQLite file, looked for every ``interval`` seconds while anything is watched: a
    ``PRAGMA data_version`` on this watcher's own connection (it changes when any other connection
    committed), then the session rows of the watched keys and tenants compared with the last look."""

    def __init__(self, connect: Callable[[], Any], *, interval: float = POLL_INTERVAL) -> None:
        super().__init__()
        self._connect = connect
        self._interval = interval
        self._wake = threading.Event()
        self._seen_keys: dict[int, tuple[int, str | None]] = {}
        self._seen_tenants: dict[str, dict[int, tuple[int, str | None, str]]] = {}
        self._start(self._run, "sessionstore-sqlite-changes")

    def _added(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        connection: Any = None
        version: int | None = None
        while not self._stopped.is_set():
            self._wake.wait(self._interval)
            self._wake.clear()
            if self._stopped.is_set():
                break
            keys, tenants = self._watched()
            if not keys and not tenants:
                continue
            try:
                if connection is None:
                    connection = self._connect()
                now = connection.execute("PRAGMA data_version").fetchone()[0]
                fresh = [k for k in keys if k not in self._seen_keys] + \
                    [t for t in tenants if t not in self._seen_tenants]
                if now == version and not fresh:
                    continue
                version = now
                self._look(connection, keys, tenants)
            except Exception as exc:  # a broken connection: open another at the next look
                log.warning("the SQLite change check failed: %s", exc)
                if connection is not None:
                    with contextlib.suppress(Exception):
                        connection.close()
                connection, version = None, None
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()

    def _look(self, connection: Any, keys: list[int], tenants: list[str]) -> None:
        rows: dict[int, tuple[str, str, int, str | None, bool]] = {}
        for start in range(0, len(keys), KEYS_PER_QUERY):
            chunk = keys[start:start + KEYS_PER_QUERY]
            sql = SQLITE_ROWS_BY_KEY.format(marks=", ".join("?" * len(chunk)))
            for key, tenant, sid, count, leaf, deleting in connection.execute(sql, chunk):
                rows[key] = (tenant, sid, count, leaf, bool(deleting))
        for key in keys:
            before = self._seen_keys.get(key)
            row = rows.get(key)
            if row is None or row[4]:
                self._seen_keys.pop(key, None)
                self._deliver(Change("", key, -1, "deleted", None) if row is None
                              else Change(row[0], key, row[2] - 1, "deleted", from_db(row[1])))
                continue
            tenant, sid, count, leaf, _deleting = row
            self._seen_keys[key] = (count, leaf)
            if before != (count, leaf):
                kind: ChangeKind = "entries" if before is None or before[0] != count else "leaf"
                self._deliver(Change(tenant, key, count - 1, kind, from_db(sid)))
        watched = set(keys)
        self._seen_keys = {k: v for k, v in self._seen_keys.items() if k in watched}
        for tenant in tenants:
            before_rows = self._seen_tenants.get(tenant)
            now_rows: dict[int, tuple[int, str | None, str]] = {}
            for key, _tenant, sid, count, leaf, deleting in connection.execute(SQLITE_ROWS_OF_TENANT, (tenant,)):
                if not deleting:
                    now_rows[key] = (count, leaf, from_db(sid))
            self._seen_tenants[tenant] = now_rows
            if before_rows is None:
                continue  # (the first look of a tenant: what is there now is the start)
            for key, state in now_rows.items():
                old = before_rows.get(key)
                if old != state:
                    kind = "entries" if old is None or old[0] != state[0] else "leaf"
                    self._deliver_tenant(Change(tenant, key, state[0] - 1, kind, state[2]))
            for key in before_rows.keys() - now_rows.keys():
                self._deliver_tenant(Change(tenant, key, -1, "deleted", before_rows[key][2]))
        named = set(tenants)
        self._seen_tenants = {t: v for t, v in self._seen_tenants.items() if t in named}

    def _deliver(self, change: Change | None) -> None:
        # The rows by key are for the key's watches; a tenant's watches have their own look.
        if change is None:
            super()._deliver(None)
            return
        with self._lock:
            chosen = list(self._by_key.get(change.key, ()))
        for one in chosen:
            with contextlib.suppress(Exception):
                one.callback(change)

    def _deliver_tenant(self, change: Change) -> None:
        with self._lock:
            chosen = list(self._by_tenant.get(change.tenant, ()))
        for one in chosen:
            with contextlib.suppress(Exception):
                one.callback(change)


class PostgresListener(ChangeHub):
    """Changes of a PostgreSQL database: one connection of its own, ``LISTEN`` on :data:`CHANNEL`, in a
    thread. A lost connection is opened again (with backoff); every watch then hears ``None``, since
    notifications sent meanwhile are lost."""

    def __init__(self, conninfo: str, *, ready_timeout: float = 5.0) -> None:
        super().__init__()
        self._conninfo = conninfo
        self._listening = threading.Event()
        self._start(self._run, "sessionstore-pg-changes")
        self._listening.wait(ready_timeout)  # (a database that is down: the thread keeps trying)

    def _run(self) -> None:
        import psycopg

        delay = 0.1
        reconnected = False
        while not self._stopped.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True) as connection:
                    connection.execute(f"LISTEN {CHANNEL}")
                    self._listening.set()
                    delay = 0.1
                    if reconnected:
                        self._deliver(None)
                    reconnected = True
                    while not self._stopped.is_set():
                        for note in connection.notifies(timeout=0.5):
                            change = parse_payload(note.payload)
                            if change is not None:
                                self._deliver(change)
            except Exception as exc:
                if self._stopped.is_set():
                    break
                log.warning("the PostgreSQL change listener lost its connection: %s", exc)
                reconnected = True
                self._stopped.wait(delay)
                delay = min(delay * 2, 2.0)


def open_hub(entries: EntryStore, *, interval: float = POLL_INTERVAL) -> ChangeHub:
    """The change hub of ``entries``' database for this process (the caller closes it)."""
    shared: Any = entries.backend.shared
    if entries.backend.name == "postgresql":
        url = shared.engine.url.set(drivername="postgresql")
        return PostgresListener(url.render_as_string(hide_password=False))
    source = shared.engine

    def connect() -> Any:
        raw = source.raw_connection()  # (configured as every connection of the store is)
        raw.detach()
        return raw.dbapi_connection

    return SqliteWatcher(connect, interval=interval)


# -- following ---------------------------------------------------------------------------------
EventKind = Literal["entry", "leaf", "deleted"]


@dataclass(frozen=True, slots=True)
class FeedEvent:
    """What a feed delivers: an ``entry`` (its ``seq``, its stored JSONL ``line``), a ``leaf`` move
    without an entry (``leaf_id``), or ``deleted`` (the session is gone: the feed ends)."""

    kind: EventKind
    seq: int | None = None
    line: bytes | None = None
    leaf_id: str | None = None


def session_event(event: FeedEvent) -> SessionEvent:
    """The library's form of a feed's event: the entry decoded."""
    from sessionstore.wire.codec import json_loads

    entry = None if event.line is None else dict(json_loads(event.line))
    return SessionEvent(event.kind, seq=event.seq, entry=entry, leaf_id=event.leaf_id)


@dataclass(slots=True)
class Cursor:
    """Where a follower is: the session's key (``None`` before the first read), the last seq delivered
    (``after``), and the leaf it knows of (``UNSET``: none yet); ``done`` once the session is gone."""

    after: int = -1
    key: int | None = None
    leaf: str | _Unset | None = UNSET
    done: bool = False

    def copy(self) -> Cursor:
        return Cursor(self.after, self.key, self.leaf, self.done)

    def same(self, other: Cursor) -> bool:
        return (self.after, self.key, self.leaf, self.done) == (other.after, other.key, other.leaf, other.done)


@dataclass(slots=True)
class SessionFeed:
    """Reads of one session for its followers (``entries``: the tenant's store)."""

    entries: EntryStore
    session_id: str
    page: int = 256
    """Most entries one :meth:`advance` reads."""

    def key(self) -> int | None:
        """The session's key, ``None`` when it does not exist (for this tenant)."""
        with self.entries.backend.read() as tx:
            row = loaded(tx.head(to_db(self.session_id), lock=False))
        return None if row is None or row.deleting else row.key

    def to_newest(self, cursor: Cursor) -> None:
        """Move ``cursor`` to the session's newest entry and its leaf, reading no entry (``done`` when
        the session is gone or is another one of its id)."""
        with self.entries.backend.read() as tx:
            row = loaded(tx.head(to_db(self.session_id), lock=False))
        if row is None or row.deleting or (cursor.key is not None and row.key != cursor.key):
            cursor.done = True
            return
        cursor.after, cursor.key, cursor.leaf = row.entry_count - 1, row.key, row.leaf_id

    def advance(self, cursor: Cursor, *, limit: int | None = None) -> tuple[list[FeedEvent], bool]:
        """The events after ``cursor`` (at most ``limit`` entries, default :attr:`page`), read in one
        snapshot, and whether that reached the newest entry; ``cursor`` moves past them. A session that is
        gone, or replaced by another of its id (a new key), gives ``deleted``. A leaf that moved to
        somewhere other than the last entry read gives ``leaf`` (on a follower's first read: when the
        leaf is not the session's last entry)."""
        if cursor.done:
            return [], True
        most = self.page if limit is None else limit
        events: list[FeedEvent] = []
        with self.entries.backend.read() as tx:
            row = loaded(tx.head(to_db(self.session_id), lock=False))
            if row is None or row.deleting or (cursor.key is not None and row.key != cursor.key):
                cursor.done = True
                return [FeedEvent("deleted")], True
            cursor.key = row.key
            last = row.entry_count - 1
            upto = min(last, cursor.after + most)
            if upto > cursor.after:
                for seq, payload in tx.payloads_between(row.key, cursor.after + 1, upto):
                    line = payload.encode() if isinstance(payload, str) else bytes(payload)
                    events.append(FeedEvent("entry", seq=seq, line=line))
                    cursor.after = seq
        caught_up = cursor.after >= last
        if caught_up:
            leaf = row.leaf_id
            moved_by_entries = bool(events) and row.leaf_seq == cursor.after
            if isinstance(cursor.leaf, _Unset):  # (no leaf known yet: the last entry's, or none, goes unsaid)
                announce = (-1 if row.leaf_seq is None else row.leaf_seq) != last
            else:
                announce = leaf != cursor.leaf and not moved_by_entries
            if announce:
                events.append(FeedEvent("leaf", leaf_id=leaf))
            cursor.leaf = leaf
        return events, caught_up


def follow(entries: EntryStore, session_id: str, *, after: int = -1, hub: ChangeHub | None = None,
           idle: float = 1.0, stop: Callable[[], bool] | None = None,
           interval: float = POLL_INTERVAL) -> Iterator[FeedEvent]:
    """Every event of the session after seq ``after``, then each new one as it is stored, until the
    session is deleted (the last event) or ``stop()`` says so (checked at least every ``idle``
    seconds). ``hub``: the process's change hub (else one is opened for this follower, and closed).
    Raises :class:`~sessionstore.errors.SessionNotFoundError` when there is no such session."""
    from sessionstore.errors import SessionNotFoundError

    feed = SessionFeed(entries, session_id)
    key = feed.key()
    if key is None:
        raise SessionNotFoundError(session_id)
    own = hub is None
    watcher = open_hub(entries, interval=interval) if hub is None else hub
    woken = threading.Event()
    registration = watcher.watch(lambda _change: woken.set(), tenant=entries.tenant, key=key)
    cursor = Cursor(after=after, key=key)
    try:
        while not cursor.done:
            woken.clear()  # (before the read: a change during it wakes the next wait)
            events, caught_up = feed.advance(cursor)
            yield from events
            if cursor.done or not caught_up:
                continue
            while not woken.wait(idle):
                if stop is not None and stop():
                    return
            if stop is not None and stop():
                return
    finally:
        registration.close()
        if own:
            watcher.close()

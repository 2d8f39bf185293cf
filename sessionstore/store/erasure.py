"""Erasure (SPEC 18, issue 26): a session removed with every trace of it, and an audit record that
holds none of it.

In one transaction: the session's entries, search rows, usage rows, sync source (its file is
remembered as deleted, by path and session id only, so that ``sync`` does not bring it back unless the
file is synced again on purpose: ``--include-deleted``), hold and archive rows, the tenant's
idempotency records whose stored answer or headers name the session (their bodies may hold its
content), and the session row; an audit row (tenant, session id, when, by whom, how many entries) is
written. Then the archive file goes. The live feeds keep no history beyond the entries (``changes``:
PostgreSQL ``NOTIFY`` payloads name the session key and a kind, SQLite watchers poll).

The bytes: on SQLite the transaction runs with ``PRAGMA secure_delete = ON`` (freed cells and pages
are overwritten with zeros), the FTS5 index of the search terms is merged (``optimize``: the trigram
segments that held the session's terms are rewritten, the old ones freed, overwritten too), and the WAL
is checkpointed and truncated (``wal_checkpoint(TRUNCATE)``), so that the text is found in neither the
database file nor its WAL.
On PostgreSQL the rows are gone at commit and ``VACUUM`` of the affected tables runs right after
(``vacuum=True``, the command line) or is left to the service's scheduled retention run, which vacuums
after erasures (HTTP); PostgreSQL's ``VACUUM`` makes the dead tuples' space reusable but does not
overwrite it (``VACUUM FULL`` rewrites the tables, and is the operator's call).
"""

from __future__ import annotations

import getpass
import os
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sessionstore.errors import SessionNotFoundError
from sessionstore.models.timestamps import now_iso
from sessionstore.store.archive import archive_row
from sessionstore.store.dbtext import from_db, to_db
from sessionstore.store.sqlite import TERMS_FTS

if TYPE_CHECKING:
    from sessionstore.store.entry_store import EntryStore

_AUDIT = ("INSERT INTO sessionstore_erasures (tenant, session_id, erased_at, erased_by, entries)"
          " VALUES (:tenant, :sid, :at, :by, :entries)")
_AUDIT_LIST = ("SELECT id, session_id, erased_at, erased_by, entries FROM sessionstore_erasures"
               " WHERE tenant = :tenant ORDER BY id")
_IDEMPOTENCY_SQLITE = ("DELETE FROM sessionstore_idempotency WHERE tenant = :tenant AND (instr(body, :raw) > 0"
                       " OR instr(body, :quoted) > 0 OR instr(headers, :sid) > 0 OR instr(headers, :qsid) > 0)")
_IDEMPOTENCY_PG = ("DELETE FROM sessionstore_idempotency WHERE tenant = :tenant AND (position(:raw in body) > 0"
                   " OR position(:quoted in body) > 0 OR strpos(headers, :sid) > 0 OR strpos(headers, :qsid) > 0)")
_SESSION_IDS = "SELECT id FROM sessionstore_sessions WHERE tenant = :tenant AND NOT deleting ORDER BY id"
_LAST_ERASURE = "SELECT max(id) FROM sessionstore_erasures"
VACUUM_TABLES = ("sessionstore_entries", "sessionstore_search", "sessionstore_usage", "sessionstore_sessions",
                 "sessionstore_sources", "sessionstore_idempotency", "sessionstore_archives", "sessionstore_holds")
VACUUMED_LEASE = "erasures-vacuumed"
"""The lease row whose holder is the id of the last erasure vacuumed after (PostgreSQL, scheduled)."""


@dataclass(frozen=True, slots=True)
class Erasure:
    """An audit record: which session of which tenant, when, by whom, how many entries it had."""

    tenant: str
    session_id: str
    erased_at: str
    erased_by: str
    entries: int

    def to_json(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "sessionId": self.session_id, "erasedAt": self.erased_at,
                "erasedBy": self.erased_by, "entries": self.entries}


def os_user() -> str:
    """Who runs this process, for the audit: ``user:NAME``."""
    try:
        return f"user:{getpass.getuser()}"
    except Exception:
        return f"uid:{os.getuid()}"


def erase_session(store: EntryStore, session_id: str, *, by: str | None = None, vacuum: bool = True,
                  scrub: bool = True) -> Erasure:
    """Erase the session (see the module). ``by``: who asked (a token id ``token:ID``; default the OS
    user). ``vacuum``: on PostgreSQL, VACUUM the affected tables now. ``scrub``: on SQLite, merge the
    search index and checkpoint the WAL now (:func:`scrub_sqlite`; ``erase --all`` does it once at the end)."""
    record: Erasure | None = None
    file: str | None = None
    with store.backend.write() as tx:
        sqlite = tx.dialect == "sqlite"
        if sqlite:
            tx.run("PRAGMA secure_delete = ON")
        try:
            head = tx.head(to_db(session_id), lock=True)
            if head is None or head.deleting:
                raise SessionNotFoundError(session_id)
            archived = archive_row(tx, head.key)
            file = None if archived is None else archived[0]
            source = tx.source(head.key)
            quoted = quote(session_id, safe="")
            tx.run(_IDEMPOTENCY_SQLITE if sqlite else _IDEMPOTENCY_PG,
                    {"tenant": store.tenant, "raw": session_id.encode("utf-8", "surrogatepass"),
                     "quoted": quoted.encode(), "sid": to_db(session_id), "qsid": quoted})
            tx.delete_session(head.key)
            if source is not None:
                tx.put_deleted_source(source.path, to_db(session_id), now_iso())
            record = Erasure(store.tenant, session_id, now_iso(), by or os_user(), int(head.entry_count))
            tx.run(_AUDIT, {"tenant": record.tenant, "sid": to_db(session_id), "at": record.erased_at,
                                 "by": record.erased_by, "entries": record.entries})
        finally:
            if sqlite:  # (this thread's connection is kept: give it its default back)
                tx.run("PRAGMA secure_delete = OFF")
    if file is not None:
        remove_file(Path(file))
    if store.backend.name == "sqlite":
        if scrub:
            scrub_sqlite(store)
    elif vacuum:
        vacuum_postgres(store)
    assert record is not None
    return record


def erase_tenant(store: EntryStore, *, by: str | None = None, vacuum: bool = True) -> list[Erasure]:
    """Erase every session of the tenant (each as :func:`erase_session`; the scrub or VACUUM once, at the end)."""
    with store.backend.read() as tx:
        ids = [from_db(r[0]) for r in tx.run(_SESSION_IDS, {"tenant": store.tenant}).fetchall()]
    done = []
    for sid in ids:
        with suppress(SessionNotFoundError):  # (erased meanwhile)
            done.append(erase_session(store, sid, by=by, vacuum=False, scrub=False))
    if store.backend.name == "sqlite":
        scrub_sqlite(store)
    elif vacuum:
        vacuum_postgres(store)
    return done


def remove_file(path: Path) -> None:
    with suppress(FileNotFoundError):
        path.unlink()
    with suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def scrub_sqlite(store: EntryStore) -> None:
    """Merge the FTS5 index with ``secure_delete`` on (its freed segments overwritten), then checkpoint the
    WAL into the database file and truncate it (its frames held the text before the erasure)."""
    with store.backend.write() as tx:
        tx.run("PRAGMA secure_delete = ON")
        try:
            tx.run(f"INSERT INTO {TERMS_FTS} ({TERMS_FTS}) VALUES ('optimize')")
        finally:
            tx.run("PRAGMA secure_delete = OFF")
    raw = store.engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cursor.fetchall()
        cursor.close()
    finally:
        raw.close()


def vacuum_postgres(store: EntryStore) -> None:
    """``VACUUM`` of the tables an erasure deletes from (outside a transaction, as PostgreSQL requires)."""
    raw = store.engine.raw_connection()
    try:
        driver: Any = raw.driver_connection
        previous = driver.autocommit
        driver.autocommit = True
        try:
            with driver.cursor() as cursor:
                cursor.execute(f"VACUUM {', '.join(VACUUM_TABLES)}")
        finally:
            driver.autocommit = previous
        with store.backend.write() as tx:
            last = tx.run(_LAST_ERASURE).fetchone()[0]
            tx.run("DELETE FROM sessionstore_leases WHERE name = :name", {"name": VACUUMED_LEASE})
            tx.run("INSERT INTO sessionstore_leases (name, holder, expires_ms) VALUES (:name, :holder, 0)",
                    {"name": VACUUMED_LEASE, "holder": str(last or 0)})
    finally:
        raw.close()


def vacuum_if_erased(store: EntryStore) -> bool:
    """PostgreSQL: VACUUM when an erasure happened since the last VACUUM after erasures (the scheduled
    run); whether it ran."""
    if store.backend.name == "sqlite":
        return False
    with store.backend.read() as tx:
        last = tx.run(_LAST_ERASURE).fetchone()[0]
        row = tx.run("SELECT holder FROM sessionstore_leases WHERE name = :name",
                      {"name": VACUUMED_LEASE}).fetchone()
    if last is None or (row is not None and row[0] == str(last)):
        return False
    vacuum_postgres(store)
    return True


def erasures(store: EntryStore) -> list[Erasure]:
    """The tenant's audit records, oldest first."""
    with store.backend.read() as tx:
        return [Erasure(store.tenant, from_db(r[1]), r[2], r[3], int(r[4]))
                for r in tx.run(_AUDIT_LIST, {"tenant": store.tenant}).fetchall()]

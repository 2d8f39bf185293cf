"""Archived sessions (SPEC 18, issue 26): a session's entries moved out of the database into a
compressed, checksummed pi v3 JSONL file, and back.

An archive file is ``gzip`` of exactly what ``export`` writes for the session (its header line, then
each entry's stored line in append order), so ``zcat FILE`` is a pi session file. Entries are stored
at seqs 0..n-1 (a new entry goes only at the end: revision 0012), so the line order gives every seq
back; a restore writes each stored line as it was, with the facts an import computes from it (the
same as the append computed), and leaves the session row (header, leaf, listing facts, stats, usage
rows) as it was: the restored session exports byte for byte as before.

The archive row (``sessionstore_archives``) names the file by its location (an absolute path now; the
column leaves room for an object-storage URL) with its SHA-256 and size. Crash safety, step by step
(``SESSIONSTORE_TEST_CRASH_AT`` kills the process at each named step, for the tests):

- archive: write ``NAME.tmp-PID``, fsync (``archive:after-write``); then in one transaction that holds
  the session's lock: check the session did not change since it was read, rename the file into place and
  fsync its directory (``archive:after-rename``), insert the archive row, delete the session's search rows
  and entries, commit (``archive:after-commit``).
- restore: hash the whole file and refuse it unless it matches (``ArchiveError``, nothing written;
  ``restore:after-verify``); then in one transaction: insert every entry, check they are all there, delete
  the archive row (a trigger refuses it otherwise; ``restore:after-insert``), commit
  (``restore:after-commit``); then remove the file.

A crash before a commit leaves the session in the database and at most a file no row names (an orphan);
after it, in the file with its row. :func:`reconcile` removes orphans and temporary files of dead
writers; it decides under the session's lock, so it never removes the file of an archive under way.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import re
import signal
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import quote

from sessionstore.errors import ArchiveError, SessionNotFoundError, SessionStoreError, StoreError
from sessionstore.models.timestamps import now_iso
from sessionstore.store.dbtext import from_db, to_db
from sessionstore.store.tenant import check_tenant
from sessionstore.wire.codec import json_loads

if TYPE_CHECKING:
    from sessionstore.store.backend import HeadRow, Tx
    from sessionstore.store.entry_store import EntryStore

CRASH_ENV = "SESSIONSTORE_TEST_CRASH_AT"
"""A test hook: ``archive:after-rename`` (a step named in this module) makes the process kill itself
with SIGKILL at that step. Never set in production."""

ARCHIVE_ENV = "SESSIONSTORE_ARCHIVE_DIR"
COMPRESSLEVEL = 3
"""gzip level of archive files: most of level 9's size at several times its speed."""
SUFFIX = ".jsonl.gz"
CHUNK = 1 << 20
LAYOUT = "v1"
"""The first component under the archive directory: the layout's version (``v1/TENANT/XX/NAME``, XX the
first byte of the SHA-256 of the session id in hex, which spreads files over 256 directories and maps
to object-storage keys as it is)."""
TEMP = re.compile(r"\.tmp-(\d+)$")
TEMP_GRACE_S = 3600
"""A temporary file of a writer on another host (whose pid cannot be checked) is removed after this long."""


def crash_point(step: str) -> None:
    """Kill this process with SIGKILL when ``$SESSIONSTORE_TEST_CRASH_AT`` names ``step`` (tests only)."""
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def default_archive_dir(url: str) -> Path:
    """``$SESSIONSTORE_ARCHIVE_DIR``, else beside the database: ``DIR/NAME-archive`` for the SQLite file
    ``DIR/NAME.db``; for PostgreSQL ``archive/HOST-DB`` in the directory of the default SQLite file."""
    given = os.environ.get(ARCHIVE_ENV)
    if given:
        return Path(given).expanduser().absolute()
    from sqlalchemy.engine import make_url

    from sessionstore.store.location import default_db_path

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
        db = Path(parsed.database).expanduser().absolute()
        return db.with_name(db.stem + "-archive")
    return default_db_path().parent / "archive" / f"{parsed.host or 'local'}-{parsed.database or 'db'}"


@dataclass(frozen=True, slots=True)
class ArchiveInfo:
    """An archived session: where its file is, its SHA-256 and size, the entries it holds, when."""

    session_id: str
    file: str
    sha256: str
    bytes: int
    entries: int
    archived_at: str

    def to_json(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "file": self.file, "sha256": self.sha256, "bytes": self.bytes,
                "entries": self.entries, "archivedAt": self.archived_at}


# -- SQL (each written once, in sqlite3's named style; PostgreSQL's is derived) ---------------------
_SELECT_ARCHIVE = ("SELECT file, sha256, bytes, entries, archived_at FROM sessionstore_archives"
                   " WHERE session_key = :key")
_INSERT_ARCHIVE = ("INSERT INTO sessionstore_archives (session_key, tenant, file, sha256, bytes, entries, archived_at)"
                   " VALUES (:key, :tenant, :file, :sha256, :bytes, :entries, :at)")
_DELETE_ARCHIVE = "DELETE FROM sessionstore_archives WHERE session_key = :key"
_DELETE_ENTRIES = "DELETE FROM sessionstore_entries WHERE session_key = :key"
_ARCHIVED_IDS = ("SELECT s.id FROM sessionstore_archives a JOIN sessionstore_sessions s ON s.key = a.session_key"
                 " WHERE s.tenant = :tenant AND NOT s.deleting")
_ARCHIVED_ALL = ("SELECT s.tenant, s.id, a.session_key, a.file FROM sessionstore_archives a"
                 " JOIN sessionstore_sessions s ON s.key = a.session_key")
_ARCHIVE_FILES = ("SELECT a.session_key, s.id, a.file FROM sessionstore_archives a"
                  " JOIN sessionstore_sessions s ON s.key = a.session_key WHERE s.tenant = :tenant AND NOT s.deleting")
_SESSION_BY_KEY = "SELECT tenant, id FROM sessionstore_sessions WHERE key = :key AND NOT deleting"
def archive_row(tx: Tx, key: int) -> tuple[str, str, int, int, str] | None:
    row = tx.run(_SELECT_ARCHIVE, {"key": key}).fetchone()
    return None if row is None else (from_db(row[0]), row[1], int(row[2]), int(row[3]), row[4])


def archived_ids(store: EntryStore) -> set[str]:
    """The ids of the tenant's archived sessions (one query)."""
    with store.backend.read() as tx:
        return {from_db(r[0]) for r in tx.run(_ARCHIVED_IDS, {"tenant": store.tenant}).fetchall()}


def archive_info(store: EntryStore, session_id: str) -> ArchiveInfo | None:
    """The session's archive, ``None`` when it is not archived (``SessionNotFoundError`` when absent)."""
    with store.backend.read() as tx:
        head = _head(tx, session_id)
        row = archive_row(tx, head.key)
    return None if row is None else ArchiveInfo(session_id, *row)


def is_archived(store: EntryStore, session_id: str) -> bool:
    """Whether the session is archived (``False`` also when there is no such session: the caller's
    own read then says so)."""
    with store.backend.read() as tx:
        head = tx.head(to_db(session_id), lock=False)
        return head is not None and not head.deleting and archive_row(tx, head.key) is not None


def _head(tx: Tx, session_id: str, *, lock: bool = False) -> HeadRow:
    head = tx.head(to_db(session_id), lock=lock)
    if head is None or head.deleting:
        raise SessionNotFoundError(session_id)
    return head


def archive_location(archive_dir: Path, tenant: str, session_id: str, key: int) -> Path:
    """Where the archive of session ``session_id`` (key ``key``) of ``tenant`` goes under ``archive_dir``."""
    spread = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:2]
    name = quote(session_id, safe="")[:120]
    return archive_dir / LAYOUT / check_tenant(tenant) / spread / f"{name}.{key}{SUFFIX}"


class _Hashing:
    """A binary file that hashes (SHA-256) and counts what is written through it."""

    def __init__(self, fp: IO[bytes]) -> None:
        self.fp = fp
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.sha.update(data)
        self.size += len(data)
        return self.fp.write(data)

    def flush(self) -> None:
        self.fp.flush()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def archive_session(store: EntryStore, session_id: str, *, archive_dir: Path) -> ArchiveInfo:
    """Move the session's entries into an archive file under ``archive_dir`` (see the module's steps).

    Raises ``SessionNotFoundError``, ``InvalidInputError`` when it is archived already, and
    ``StoreError`` (nothing archived) when the session changed while its file was written."""
    from sessionstore.errors import InvalidInputError

    with store.backend.read() as tx:
        head = _head(tx, session_id)
        if archive_row(tx, head.key) is not None:
            raise InvalidInputError(f"session {session_id} is archived already")
        key, count, leaf = head.key, head.entry_count, head.leaf_id
    if count == 0:
        raise InvalidInputError(f"session {session_id} has no entries: nothing to archive")
    final = archive_location(archive_dir, store.tenant, session_id, key)
    final.parent.mkdir(parents=True, exist_ok=True)
    temp = final.with_name(f"{final.name}.tmp-{os.getpid()}")
    try:
        with open(temp, "wb") as raw:
            hashing = _Hashing(raw)
            with gzip.GzipFile(filename="", mode="wb", fileobj=cast(IO[bytes], hashing),
                               compresslevel=COMPRESSLEVEL, mtime=0) as zipped:
                written = store.export_jsonl(session_id, cast(IO[bytes], zipped))
            raw.flush()
            os.fsync(raw.fileno())
        crash_point("archive:after-write")
        info = ArchiveInfo(session_id, str(final), hashing.sha.hexdigest(), hashing.size, written, now_iso())
        renamed = False
        try:
            with store.backend.write() as tx:
                now = _head(tx, session_id, lock=True)
                if (now.key, now.entry_count, now.leaf_id) != (key, count, leaf) or written != count:
                    raise StoreError(f"session {session_id} changed while it was being archived; nothing"
                                     " archived (run it again)")
                if archive_row(tx, key) is not None:
                    raise InvalidInputError(f"session {session_id} is archived already")
                os.replace(temp, final)
                renamed = True
                _fsync_dir(final.parent)
                crash_point("archive:after-rename")
                tx.run(_INSERT_ARCHIVE, {"key": key, "tenant": store.tenant, "file": to_db(info.file),
                                              "sha256": info.sha256, "bytes": info.bytes, "entries": info.entries,
                                              "at": info.archived_at})
                if tx.dialect == "sqlite":  # the freed pages are overwritten: the text is in the file only
                    tx.run("PRAGMA secure_delete = ON")
                try:
                    tx.delete_search_rows(key)
                    tx.run(_DELETE_ENTRIES, {"key": key})
                finally:
                    if tx.dialect == "sqlite":
                        tx.run("PRAGMA secure_delete = OFF")
        except BaseException:
            if renamed:  # not committed: the file is an orphan (reconcile would remove it too)
                with suppress(OSError):
                    final.unlink()
            raise
        crash_point("archive:after-commit")
        return info
    finally:
        with suppress(FileNotFoundError):
            temp.unlink()


def _verified(info: tuple[str, str, int, int, str], session_id: str) -> Path:
    """The archive file, after checking its size and SHA-256 against its row (``ArchiveError`` unless they match)."""
    file, sha256, size, _entries, _at = info
    path = Path(file)
    digest = hashlib.sha256()
    seen = 0
    try:
        with open(path, "rb") as fp:
            while chunk := fp.read(CHUNK):
                digest.update(chunk)
                seen += len(chunk)
    except OSError as exc:
        raise ArchiveError(f"session {session_id}: its archive {file} cannot be read ({exc.strerror or exc});"
                           " the session stays archived") from None
    if seen != size or digest.hexdigest() != sha256:
        raise ArchiveError(f"session {session_id}: its archive {file} is damaged (SHA-256 {digest.hexdigest()[:16]}…,"
                           f" {seen} bytes; expected {sha256[:16]}…, {size} bytes); nothing restored")
    return path


def archive_files(tx: Tx, tenant: str) -> dict[int, tuple[str, str]]:
    """Session key -> ``(session id, archive file)`` of the tenant's archived sessions, in ``tx``'s snapshot."""
    rows = tx.run(_ARCHIVE_FILES, {"tenant": tenant}).fetchall()
    return {int(key): (from_db(sid), file) for key, sid, file in rows}


def archived_entries(file: str, session_id: str) -> Iterator[dict[str, Any]]:
    """The entries of an archived session in append order (an entry's position is its seq), read from its
    file for a reader that leaves the session archived (``search --archived``). The file is not hashed
    first (gzip's own CRC still fails a damaged one at its end); ``ArchiveError`` names the file when it
    cannot be read."""
    for entry, _line in _archived_lines(Path(file), session_id, consequence="it stays archived"):
        yield entry


def _archived_lines(path: Path, session_id: str, *, consequence: str = "nothing restored"
                    ) -> Iterator[tuple[dict[str, Any], str]]:
    """The entries of an archive file with their stored lines (its header line checked and skipped)."""
    try:
        with gzip.open(path, "rb") as fp:
            header = fp.readline()
            if json_loads(header).get("id") != session_id:
                raise ArchiveError(f"session {session_id}: its archive {path} holds another session; {consequence}")
            for line in fp:
                text = line[:-1].decode("utf-8") if line.endswith(b"\n") else line.decode("utf-8")
                yield json_loads(text), text
    except (OSError, EOFError, zlib.error, ValueError) as exc:
        raise ArchiveError(f"session {session_id}: its archive {path} cannot be read ({exc}); {consequence}") \
            from None


class _KeepUsage:
    """A transaction whose ``add_usage`` does nothing: a restore keeps the session's usage rows (its stats
    stayed while it was archived) rather than adding the same sums twice."""

    def __init__(self, tx: Tx) -> None:
        self._tx = tx

    def add_usage(self, rows: object) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)


def restore_session(store: EntryStore, session_id: str) -> ArchiveInfo:
    """Put an archived session's entries back into the database and remove its file (see the module's
    steps). ``ArchiveError`` when the file is missing, damaged or not the session's (nothing written);
    ``InvalidInputError`` when the session is not archived."""
    from sessionstore.errors import InvalidInputError
    from sessionstore.store.entry_store import _write_entries
    from sessionstore.store.facts import SessionStats, TreeIndex

    with store.backend.read() as tx:
        head = _head(tx, session_id)
        row = archive_row(tx, head.key)
    if row is None:
        raise InvalidInputError(f"session {session_id} is not archived")
    path = _verified(row, session_id)
    crash_point("restore:after-verify")
    with store.backend.write(bulk=True) as tx:
        head = _head(tx, session_id, lock=True)
        if archive_row(tx, head.key) != row:  # restored (or archived again) meanwhile
            raise StoreError(f"session {session_id} changed while it was being restored (run it again)")
        written = _write_entries(cast("Tx", _KeepUsage(tx)), head.key, _archived_lines(path, session_id),
                                 TreeIndex(), SessionStats(), source_name=str(path))
        del written
        stored = tx.count_entries(head.key)
        if stored != head.entry_count or stored != row[3]:
            raise ArchiveError(f"session {session_id}: its archive {path} holds {stored} entries, the session"
                               f" {head.entry_count}; nothing restored")
        crash_point("restore:after-insert")
        tx.run(_DELETE_ARCHIVE, {"key": head.key})
    crash_point("restore:after-commit")
    with suppress(FileNotFoundError):
        path.unlink()
    return ArchiveInfo(session_id, *row)


def restore_if_archived(store: EntryStore, session_id: str) -> bool:
    """Restore the session when it is archived (what ``context``, ``export``, ``append`` and ``fork`` do
    first); whether it was. Of concurrent callers one restores it, the others find it restored."""
    from sessionstore.errors import InvalidInputError

    if not is_archived(store, session_id):
        return False
    try:
        restore_session(store, session_id)
    except (StoreError, InvalidInputError):
        if is_archived(store, session_id):
            raise
    return True


@dataclass(slots=True)
class Reconciled:
    """What :func:`reconcile` found: orphan files removed, temporary files removed, archive rows whose
    file is missing (an error it reports and leaves: the session stays archived)."""

    orphans: list[str]
    temporary: list[str]
    missing: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"orphans": self.orphans, "temporary": self.temporary, "missing": self.missing}


_KEY = re.compile(r"\.(\d+)" + re.escape(SUFFIX) + "$")


def reconcile(store: EntryStore, archive_dir: Path, *, grace_s: float = TEMP_GRACE_S) -> Reconciled:
    """Make the archive directory and the archive rows agree after a crash: a file no row names is an
    orphan (a crash after the rename, before the commit; or after a restore's commit) and goes; a
    temporary file whose writer is gone (its pid is not running, or it is older than ``grace_s``) goes;
    a row whose file is missing is reported. Each file is judged under its session's lock (all tenants)."""
    result = Reconciled([], [], [])
    root = archive_dir / LAYOUT
    named: dict[str, tuple[str, str]] = {}
    with store.backend.read() as tx:
        for tenant, sid, _key, file in tx.run(_ARCHIVED_ALL).fetchall():
            named[from_db(file)] = (tenant, from_db(sid))
    for file, (_tenant, sid) in sorted(named.items()):
        if Path(file).is_relative_to(archive_dir) and not Path(file).exists():
            result.missing.append(sid)
    if not root.is_dir():
        return result
    now = time.time()
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        temp = TEMP.search(path.name)
        if temp is not None:
            pid = int(temp.group(1))
            try:
                age = now - path.stat().st_mtime
            except FileNotFoundError:
                continue
            if age > grace_s or not _running(pid):
                with suppress(FileNotFoundError):
                    path.unlink()
                    result.temporary.append(str(path))
            continue
        match = _KEY.search(path.name)
        if match is None or str(path) in named:
            continue
        if _orphan_removed(store, path, int(match.group(1))):
            result.orphans.append(str(path))
    return result


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _orphan_removed(store: EntryStore, path: Path, key: int) -> bool:
    """Remove ``path`` when, under its session's lock, no archive row names it (``True`` if removed)."""
    with store.backend.write() as tx:
        session = tx.run(_SESSION_BY_KEY, {"key": key}).fetchone()
        if session is not None:  # take the session's lock (an archive under way holds it until it commits)
            tx_tenant = cast(Any, tx)
            saved = tx_tenant.tenant
            tx_tenant.tenant = session[0]
            try:
                tx.head(session[1], lock=True)
            finally:
                tx_tenant.tenant = saved
        row = archive_row(tx, key)
        if row is not None and Path(row[0]) == path:
            return False
        with suppress(FileNotFoundError):
            path.unlink()
            return True
    return False


_F = TypeVar("_F", bound=Callable[..., Any])


def restores_archived(method: _F) -> _F:
    """For ``EntryStore``'s appends: an append to an archived session fails in the database (its
    entries are gone: the next seq is not at the end, the parent is missing); then the session is
    restored and the append tried once more. Costs nothing while the session is not archived."""

    @functools.wraps(method)
    def appending(store: EntryStore, session_id: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(store, session_id, *args, **kwargs)
        except SessionStoreError:
            if not isinstance(session_id, str) or not restore_if_archived(store, session_id):
                raise
        return method(store, session_id, *args, **kwargs)

    return cast(_F, appending)

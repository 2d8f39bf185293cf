"""Mirroring a pi session directory into the database (``sessionstore sync``).

pi keeps its sessions in ``{agentDir}/sessions/--{encoded cwd}--/{timestamp}_{id}.jsonl``; a sync scans
each sub-directory of that root (a symlink to a directory included, as pi's ``listAll`` does) for
``*.jsonl`` files and brings each one's session up to date. Each synced session has a source row
(``sessionstore_sources``: the file's path, its size and mtime when last looked at, the bytes and lines
of it in the database, the lengths and digests of its first and last consumed lines and a digest of
the whole consumed prefix, its version as read, the parent ids no entry had yet, the time of the
sync). Per file:

- **unchanged**: same path, size, mtime (ns), inode and ctime as recorded: one ``stat`` (from the
  directory scan), nothing read (a copy that keeps the size and mtime, ``cp -p`` or ``rsync -t``,
  changes the ctime or the inode, and is checked as below);
- **appended** (grown): a v3 file at least as large as the consumed offset whose first line and last
  consumed line are the recorded ones (two small ``pread`` calls) and whose consumed prefix hashes to
  the recorded digest (read whole: only for a file whose size or mtime changed, so a rewrite that
  keeps the size, a middle line changed, is seen): only the bytes past the offset are
  read, and their complete lines appended in one transaction with the import's checks (duplicate id,
  parents before children, a parent naming no entry makes a root, the leaf moves to the last entry);
  the lines' numbers in errors are the file's. A grown file with nothing complete past the offset
  has its new size recorded and counts as unchanged;
- **rewritten**: anything else (shorter than the consumed offset, a changed consumed prefix: pi
  rewrites a v1/v2 file as v3 when it loads it, and ``_rewriteFile`` truncates and writes the whole
  file), a grown v1/v2 file (the upgrade numbers entries from the start) and a file whose
  source row predates the prefix digest: re-imported, replacing the session, in one transaction.
  Nothing the database added is lost that way: when the session holds entries its file did not give
  (``append``, ``label``, ``name``, ``compact``: the source row counts the file's) or its leaf was
  moved in the database (``branch``), the rewrite is that file's failure saying so, and ``adopt``
  replaces the session with the file. A rewritten file whose header names another session is that
  session's import: the session it held is kept, its source recorded as gone (``{path} (session OLD
  replaced by NEW)``: counted ``gone``, removed by ``prune``, taken back by a file of its id elsewhere);
- **imported**: a path without a source row. A file whose session is in the database already is a
  failure when that session was imported by hand (``adopt`` takes it over) or is synced from another
  file that still exists; when that other file is gone the file was moved: it is imported under its
  new path and takes the session over (one read; the session keeps its id; what the database added
  to it fails the take-over as it fails a rewrite). A second path to a file
  already synced (a symlinked project directory beside its target) is the same file: unchanged.
- **pending**: an empty file, or one whose header line has no newline yet (pi creates a file and
  writes its lines one at a time): skipped this time, not a failure. A last line without its newline
  is likewise not consumed when it is read: pi's appends are ``appendFileSync`` calls of one line
  each, so a reader may see half a line; the next sync reads it once it is complete. A file whose
  last line stays without its newline (a torn write: pi reads the line, and its next load of the
  file adds the newline) is not being written once a sync finds it unchanged since the previous one:
  that sync reads the line when it is a whole JSON object (no torn prefix of pi's one-object lines
  is), as pi does; the newline pi adds later ends that line and reads nothing again. A file with such
  a line not read yet is counted ``waiting`` (besides its state).
- **failed**: ``file:line: reason`` (the import's checks, unreadable files, conflicts, and any
  unexpected failure while the file is stored, at the line read last); nothing of that file is
  written, the other files still sync, and the source row stays as it was (the next sync tries again).
- **skipped**: a ``*.jsonl`` name that is not a regular file (a FIFO, a device, a socket, a
  directory), with that reason; it is never opened (reading a FIFO would block).

**deleted**: a file naming a synced session that was deleted on purpose (``rm``, ``delete_session``:
the store remembers the session and its file, ``sessionstore_deleted_sources``) is not imported
again, whatever pi writes to it later, wherever it is (its header is read: another session's file at
that path is imported); ``include_deleted`` imports it and forgets the deletion. A deleted session
that is in the database again (imported by hand) is not counted deleted: it is a session imported by
hand. A user who deleted a session from the mirror meant it; pi still has the file.

``prune``: a synced session whose recorded path is under the directory and whose file is gone is
deleted (only sessions with a source row; a session imported by hand is never pruned). Without it a
session whose file is gone stays, and is counted (``gone``: an archive keeps what pi deleted).

Watching (:func:`watch`) polls: a sync of an unchanged directory is a directory scan and one query
(milliseconds for a thousand files), so polling every couple of seconds costs little, needs no
dependency, and works where change notification does not (network and container file systems,
symlinked project directories, editors replacing files); pi writes a line per entry, so a latency of
an interval is what a mirror needs.
"""

from __future__ import annotations

import os
import stat as stat_module
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessionstore.catalog.defaults import DEFAULT_INTERVAL, default_sessions_dir
from sessionstore.errors import (
    IncompleteHeaderError,
    InvalidInputError,
    JsonlError,
    SessionNotFoundError,
    SessionStoreError,
)
from sessionstore.store.sources import (
    FileStat,
    SourceChangedError,
    SourceDeletedError,
    SourceInfo,
    file_check,
    prefix_digest,
    split_check,
)
from sessionstore.wire.codec import LineRefused, parse_line

if TYPE_CHECKING:
    from sessionstore.store.entry_store import EntryStore
    from sessionstore.wire.jsonl import Hasher


Progress = Callable[[int, int], None]
"""Called with the bytes read so far and the bytes a sync has to read (files to import or append)."""


@dataclass(frozen=True, slots=True)
class SyncFailure:
    path: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}" if self.line is not None else f"{self.path}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "reason": self.reason}


@dataclass(slots=True)
class SyncResult:
    """What one sync did, file by file counted once each."""

    imported: int = 0
    appended: int = 0
    rewritten: int = 0
    unchanged: int = 0
    pruned: int = 0
    pending: int = 0
    entries: int = 0
    """Entries written (imports, appends and re-imports)."""
    gone: int = 0
    """Synced sessions under the directory whose file is gone, kept (``prune`` deletes them instead)."""
    deleted: int = 0
    """Files whose session was deleted on purpose, left unread (``include_deleted`` imports them)."""
    waiting: int = 0
    """Files whose last line has no newline and was not read (a line being written, or torn and not
    whole; counted besides the file's state)."""
    failures: list[SyncFailure] = field(default_factory=list)
    skipped: list[SyncFailure] = field(default_factory=list)
    """``*.jsonl`` names that are not regular files (a FIFO, a device, a socket, a directory), with why."""

    @property
    def failed(self) -> int:
        return len(self.failures)

    def add(self, other: SyncResult) -> None:
        """Fold ``other`` in (a watch's totals; failures: the latest cycle's)."""
        for name in ("imported", "appended", "rewritten", "unchanged", "pruned", "pending", "entries"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.gone = other.gone
        self.deleted = other.deleted
        self.waiting = other.waiting
        self.failures = list(other.failures)
        self.skipped = list(other.skipped)

    def to_json(self) -> dict[str, Any]:
        return {"imported": self.imported, "appended": self.appended, "rewritten": self.rewritten,
                "unchanged": self.unchanged, "pruned": self.pruned, "pending": self.pending, "failed": self.failed,
                "entries": self.entries, "gone": self.gone, "deleted": self.deleted, "waiting": self.waiting,
                "failures": [f.to_json() for f in self.failures], "skipped": [s.to_json() for s in self.skipped]}

    def summary(self) -> str:
        """One line of counts; what a user should know of (sources gone, names skipped) said after them."""
        line = (f"{self.imported} imported, {self.appended} appended, {self.rewritten} rewritten, "
                f"{self.unchanged} unchanged, {self.pruned} pruned, {self.pending} pending, {self.failed} failed")
        if self.waiting:
            its = "its" if self.waiting == 1 else "their"
            line += f"; {_count(self.waiting, 'last line')} waiting for {its} newline"
        if self.skipped:
            line += f"; {_count(len(self.skipped), 'name')} skipped (not a regular file)"
        if self.gone:
            line += f"; {_count(self.gone, 'source')} gone, kept; --prune removes them"
        if self.deleted:
            line += f"; {_count(self.deleted, 'deleted session')} not synced; --include-deleted syncs them"
        return line


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


_KINDS = ((stat_module.S_ISDIR, "a directory"), (stat_module.S_ISFIFO, "a FIFO"),
          (stat_module.S_ISCHR, "a character device"), (stat_module.S_ISBLK, "a block device"),
          (stat_module.S_ISSOCK, "a socket"))


def _not_regular(mode: int) -> str:
    """Why a ``*.jsonl`` name of ``mode`` is not synced (it is never opened: a FIFO would block the read)."""
    kind = next((what for test, what in _KINDS if test(mode)), "not a regular file")
    return f"{kind}, not a regular file: skipped"


def _scan(root: Path, result: SyncResult) -> Iterator[tuple[str, os.stat_result]]:
    """``(path, stat)`` of every ``*.jsonl`` regular file in a sub-directory of ``root`` (symlinks followed);
    other ``*.jsonl`` names go to ``result.skipped``, unreadable ones to ``result.failures``."""
    failures = result.failures
    try:
        projects = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        raise InvalidInputError(f"cannot read the sessions directory {root}: {exc.strerror or exc}") from None
    for project in projects:
        try:
            if not project.is_dir():
                continue
            files = sorted(os.scandir(project.path), key=lambda e: e.name)
        except OSError as exc:
            failures.append(SyncFailure(project.path, None, f"cannot read the directory: {exc.strerror or exc}"))
            continue
        for file in files:
            if not file.name.endswith(".jsonl"):
                continue
            try:
                info = file.stat()
            except OSError as exc:
                failures.append(SyncFailure(file.path, None, exc.strerror or str(exc)))
                continue
            if stat_module.S_ISREG(info.st_mode):
                yield file.path, info
            else:
                result.skipped.append(SyncFailure(file.path, None, _not_regular(info.st_mode)))


def sync_directory(
    store: EntryStore,
    directory: str | Path | None = None,
    *,
    prune: bool = False,
    adopt: bool = False,
    include_deleted: bool = False,
    progress: Progress | None = None,
) -> SyncResult:
    """Mirror the pi session directory ``directory`` (default: :func:`default_sessions_dir`) into
    ``store`` once (see the module's documentation). Raises :class:`InvalidInputError` when the
    directory does not exist; a file that fails is reported in the result, not raised. ``include_deleted``:
    files whose session was deleted on purpose are imported again."""
    root = Path(os.path.abspath(Path(directory).expanduser() if directory is not None else default_sessions_dir()))
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "does not exist"
        raise InvalidInputError(f"the sessions directory {root} {what}")
    result = SyncResult()
    known = {source.path: source for source in store.sources()}
    deleted_ids = frozenset(store.deleted_sources().values())  # sessions deleted on purpose (rm)
    scanned = list(_scan(root, result))
    synced_files = {(info.st_dev, info.st_ino) for path, info in scanned if path in known}
    work: list[tuple[str, FileStat, SourceInfo | None, tuple[int, int]]] = []
    for path, info in scanned:
        stat = FileStat.of(info)
        source = known.get(path)
        if source is not None and source.stat.same_as(stat):
            if source.consumed_bytes < stat.size and _whole_last_line(path, source.consumed_bytes, stat.size):
                work.append((path, stat, source, (info.st_dev, info.st_ino)))  # unchanged since: not being written
            else:
                result.unchanged += 1
                if source.consumed_bytes < stat.size:
                    result.waiting += 1
        elif stat.size == 0:
            result.pending += 1  # pi creates the file, then writes it
        else:
            work.append((path, stat, source, (info.st_dev, info.st_ino)))
    total = sum(stat.size - (source.consumed_bytes if source else 0) for _p, stat, source, _f in work)
    done = 0
    for path, stat, source, file_id in work:
        if source is None and file_id in synced_files:
            result.unchanged += 1  # another path to a synced file (a symlinked project directory beside it)
        else:
            try:
                _sync_file(store, path, stat, source, result, adopt=adopt, deleted=deleted_ids,
                           include_deleted=include_deleted)
            except Exception as exc:  # (not the database's: those are SessionStoreErrors) this file's failure
                message = str(exc).strip()
                reason = f"internal error: {type(exc).__name__}{': ' + message if message else ''}"
                result.failures.append(SyncFailure(path, None, reason))
            synced_files.add(file_id)
        done += stat.size - (source.consumed_bytes if source else 0)
        if progress is not None:
            progress(done, total)
    seen = {path for path, _info in scanned}
    unread = tuple(f.path.rstrip(os.sep) + os.sep for f in result.failures if f.line is None)
    prefix = str(root).rstrip(os.sep) + os.sep
    after = store.sources() if work else known.values()  # as the sync left them (a moved file took its session)
    for source in after:
        path = source.path
        if path.startswith(prefix) and path not in seen and not path.startswith(unread) and _gone(path):
            if not prune:
                result.gone += 1
                continue
            with suppress(SessionNotFoundError):
                store.delete_session(source.session_id, remember_source=False)
                result.pruned += 1
    return result


def _gone(path: str) -> bool:
    """Whether ``path`` is known not to exist: a file that cannot be looked at (a directory it is in
    cannot be searched) is not gone, and its session is not pruned."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def _sync_file(
    store: EntryStore, path: str, stat: FileStat, source: SourceInfo | None, result: SyncResult, *, adopt: bool,
    deleted: frozenset[str], include_deleted: bool,
) -> None:
    try:
        if source is None:
            done = store.import_source(path, stat, adopt=adopt, deleted=deleted, include_deleted=include_deleted)
            result.imported += 1
        else:
            settled = source.stat.same_as(stat)  # a last line without its newline, left as it was: read it
            digest = _only_grown(path, stat, source)
            if digest is not None:
                done = store.append_source(source, stat, digest=digest, take_unterminated=settled)
                if done.entries:
                    result.appended += 1
                else:
                    result.unchanged += 1
            else:
                done = store.import_source(path, stat, replacing=source, take_unterminated=settled, adopt=adopt,
                                           deleted=deleted, include_deleted=include_deleted)
                if done.session_id == source.session_id:
                    result.rewritten += 1
                else:  # another session's file in its place: a new session (the one it held is kept, gone)
                    result.imported += 1
        result.entries += done.entries
        if done.source.consumed_bytes < stat.size:
            result.waiting += 1  # a last line without its newline, not read (yet)
    except IncompleteHeaderError:
        result.pending += 1
    except SourceChangedError:
        result.pending += 1  # another sync is at this file: the next sync sees what it left
    except SourceDeletedError:
        result.deleted += 1  # a file naming a session deleted on purpose (moved since): left
    except JsonlError as exc:
        result.failures.append(SyncFailure(path, exc.line, exc.reason))
    except SessionStoreError as exc:
        reason = str(exc)
        result.failures.append(SyncFailure(path, None, reason.removeprefix(f"{path}: ")))
    except OSError as exc:
        result.failures.append(SyncFailure(path, None, exc.strerror or str(exc)))


def _only_grown(path: str, stat: FileStat, source: SourceInfo) -> Hasher | None:
    """The hasher of the consumed prefix (:func:`~sessionstore.store.sources.prefix_digest`) when the file
    at ``path`` is the consumed part of ``source`` and maybe more (a v3 file only), else ``None``. The first
    and last consumed lines are compared first (two small reads); then the whole consumed prefix is
    hashed: only for a file whose size or mtime changed, so an unchanged directory reads nothing."""
    head, tail, prefix = split_check(source.check)
    if source.file_version != 3 or stat.size < source.consumed_bytes or prefix is None:
        return None
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        check = file_check(fd, head_bytes=source.head_bytes, consumed_bytes=source.consumed_bytes,
                           tail_bytes=source.tail_bytes)
        if check != f"{head}:{tail}":
            return None
        digest = prefix_digest(fd, source.consumed_bytes)
    finally:
        os.close(fd)
    return digest if digest.hexdigest() == prefix else None


def _whole_last_line(path: str, offset: int, size: int) -> bool:
    """Whether the bytes of ``path`` from ``offset`` to ``size`` are one line without its newline that is a
    whole JSON object (pi reads it; a torn write is never one). Unreadable: ``False`` (the sync reports it
    when the file changes)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        tail = os.pread(fd, size - offset, offset)
    except OSError:
        return False
    finally:
        os.close(fd)
    if b"\n" in tail or not tail.strip():
        return False
    try:
        return isinstance(parse_line(tail), dict)
    except (LineRefused, ValueError, ArithmeticError):  # not a line pi reads whole: left as it is
        return False


def watch(
    store: EntryStore,
    directory: str | Path | None = None,
    *,
    interval: float = DEFAULT_INTERVAL,
    cycles: int | None = None,
    prune: bool = False,
    adopt: bool = False,
    include_deleted: bool = False,
    on_cycle: Callable[[SyncResult], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> SyncResult:
    """Sync ``directory`` every ``interval`` seconds (polling; see the module's documentation), ``cycles``
    times (``None``: until interrupted: ``KeyboardInterrupt`` propagates, after the totals so far went to
    ``on_cycle``). Returns the totals (failures: the last cycle's)."""
    if interval < 0:
        raise InvalidInputError(f"the interval must be at least 0 seconds, got {interval!r}")
    totals = SyncResult()
    cycle = 0
    while cycles is None or cycle < cycles:
        if cycle:
            sleep(interval)
        once = sync_directory(store, directory, prune=prune, adopt=adopt, include_deleted=include_deleted)
        totals.add(once)
        if on_cycle is not None:
            on_cycle(once)
        cycle += 1
    return totals

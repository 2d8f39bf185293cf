"""What a sync records about the file a session is mirrored from (``sessionstore_sources``), and the
cheap check that the part of the file already in the database is still what it was.

A file's *check* (``{head}:{tail}:{prefix}``) is a digest of its first line, one of its last consumed
line (each with its newline) and one of the whole consumed prefix (:func:`prefix_digest`). A file that
pi only appended to keeps all three; every rewrite pi makes (a v1/v2 file migrated to v3 on load
rewrites the header and every line; a truncation) changes the first two or the size, which two
``pread`` calls of a few hundred bytes see whatever the size of the file; any other rewrite (a middle
line changed, the size kept) changes the prefix digest, which a sync computes only for a file whose
size or mtime changed. A check recorded before the prefix digest existed has two parts: such a file
is re-imported once when it changes.

After the three digests a check holds ``key=value`` facts (:class:`SourceFacts`), each optional (a row
written before a fact existed lacks it): ``n``, the session's entries that came from the file, and ``l``,
the seq of the leaf the sync left (so a sync tells entries appended in the database, and a leaf moved
there, from what the file gave); ``i`` and ``c``, the file's inode and ctime (ns) when it was looked
at, which a copy that keeps the size and mtime (``cp -p``, ``rsync -t``, ``touch -r``) changes.
"""

from __future__ import annotations

import json
import os
from contextlib import suppress
from dataclasses import dataclass
from hashlib import blake2b
from typing import TYPE_CHECKING, Any

from sessionstore.errors import StoreError
from sessionstore.store.backend import SourceRow

if TYPE_CHECKING:
    from sessionstore.wire.jsonl import Hasher, ResumePoint

CHECK_WINDOW_MAX = 1 << 20
"""A first or last line longer than this is checked by its first and last half MiB (the digest of a
longer line would read it whole)."""


class SourceChangedError(StoreError):
    """Another sync changed this file's source row between the check and the write (try it again)."""


class SourceDeletedError(StoreError):
    """The file names a session deleted on purpose (a sync leaves it, unless asked to include it)."""

    def __init__(self, path: str, session_id: str) -> None:
        super().__init__(f"{path}: session {session_id} was deleted (sync --include-deleted imports it again)")
        self.session_id = session_id


@dataclass(frozen=True, slots=True)
class FileStat:
    """What a ``stat`` of the file said when a sync looked at it (``ino``, ``ctime_ns``: ``None`` in a
    source row recorded before they were)."""

    size: int
    mtime_ns: int
    ino: int | None = None
    ctime_ns: int | None = None

    @classmethod
    def of(cls, result: os.stat_result) -> FileStat:
        return cls(result.st_size, result.st_mtime_ns, result.st_ino, result.st_ctime_ns)

    def same_as(self, now: FileStat) -> bool:
        """Whether the file recorded as this is unchanged at ``now`` (what was not recorded is not compared)."""
        return (self.size == now.size and self.mtime_ns == now.mtime_ns and self.ino in (None, now.ino)
                and self.ctime_ns in (None, now.ctime_ns))


_FACT_KEYS = (("n", "entries"), ("l", "leaf_seq"), ("i", "ino"), ("c", "ctime_ns"))


@dataclass(frozen=True, slots=True)
class SourceFacts:
    """The facts a check holds after its digests (see the module's documentation); ``None``: not recorded."""

    entries: int | None = None
    """``n``: the session's entries that came from the file."""
    leaf_seq: int | None = None
    """``l``: the seq of the leaf the sync left (``-1``: no leaf)."""
    ino: int | None = None
    ctime_ns: int | None = None

    def encode(self) -> str:
        return "".join(f":{key}={getattr(self, name)}" for key, name in _FACT_KEYS if getattr(self, name) is not None)

    @classmethod
    def decode(cls, check: str) -> SourceFacts:
        given = dict(part.partition("=")[::2] for part in check.split(":")[3:])
        values: dict[str, int] = {}
        for key, name in _FACT_KEYS:
            with suppress(KeyError, ValueError):
                values[name] = int(given[key])
        return cls(**values)


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """A synced session's source row, as the sync engine reads it."""

    session_id: str
    session_key: int
    path: str
    stat: FileStat
    consumed_bytes: int
    consumed_lines: int
    head_bytes: int
    tail_bytes: int
    check: str
    file_version: int
    dangling: dict[str, int]
    synced_at: str

    @classmethod
    def of(cls, session_id: str, row: SourceRow) -> SourceInfo:
        """From a source row whose text is read back (``dbtext.loaded``)."""
        facts = SourceFacts.decode(row.check_hash)
        stat = FileStat(row.size, row.mtime_ns, facts.ino, facts.ctime_ns)
        return cls(session_id, int(row.session_key), row.path, stat,
                   int(row.consumed_bytes), int(row.consumed_lines), int(row.head_bytes), int(row.tail_bytes),
                   row.check_hash, int(row.file_version), decode_dangling(row.dangling), row.synced_at)

    @property
    def facts(self) -> SourceFacts:
        return SourceFacts.decode(self.check)

    @property
    def resume_point(self) -> ResumePoint:
        from sessionstore.wire.jsonl import ResumePoint

        return ResumePoint(self.consumed_bytes, self.consumed_lines, self.dangling)


def _digest(fd: int, offset: int, length: int) -> str:
    """The digest of ``length`` bytes at ``offset`` (a long window: its two ends)."""
    hasher = blake2b(digest_size=12)
    if length <= CHECK_WINDOW_MAX:
        hasher.update(os.pread(fd, length, offset))
    else:
        half = CHECK_WINDOW_MAX // 2
        hasher.update(os.pread(fd, half, offset))
        hasher.update(os.pread(fd, half, offset + length - half))
    hasher.update(length.to_bytes(8, "big"))
    return hasher.hexdigest()


def line_digest(line: bytes) -> str:
    """The digest of one line as read (the same as :func:`_digest` of the bytes it occupies)."""
    hasher = blake2b(digest_size=12)
    if len(line) <= CHECK_WINDOW_MAX:
        hasher.update(line)
    else:
        half = CHECK_WINDOW_MAX // 2
        hasher.update(line[:half])
        hasher.update(line[-half:])
    hasher.update(len(line).to_bytes(8, "big"))
    return hasher.hexdigest()


def file_check(fd: int, *, head_bytes: int, consumed_bytes: int, tail_bytes: int) -> str:
    """The check of the open file ``fd`` at the recorded line positions: ``{head}:{tail}``, the
    :func:`line_digest` of the first line and of the last consumed line when they are unchanged."""
    return f"{_digest(fd, 0, head_bytes)}:{_digest(fd, consumed_bytes - tail_bytes, tail_bytes)}"


PREFIX_CHUNK = 1 << 20
"""Bytes per ``pread`` of a prefix digest."""


def new_prefix_hasher() -> Hasher:
    """A hasher for :func:`prefix_digest` (fed the consumed lines by the reader, then ``hexdigest()``)."""
    return blake2b(digest_size=16)


def prefix_digest(fd: int, length: int) -> Hasher:
    """The hasher of the first ``length`` bytes of the open file ``fd`` (its ``hexdigest()`` is the
    check's prefix part; fed more bytes, it goes on to a longer prefix). A file shorter than ``length``
    gives a digest of what it has, which no recorded prefix has."""
    hasher = new_prefix_hasher()
    offset = 0
    while offset < length:
        chunk = os.pread(fd, min(PREFIX_CHUNK, length - offset), offset)
        if not chunk:
            break
        hasher.update(chunk)
        offset += len(chunk)
    return hasher


def split_check(check: str) -> tuple[str, str, str | None]:
    """``(head, tail, prefix)`` of a recorded check (``prefix``: ``None`` in a check from before it)."""
    head, tail, prefix = [*check.split(":"), "", ""][:3]
    return head, tail, prefix or None


def encode_dangling(awaited: dict[str, int]) -> str:
    """The stored form of the parent ids no entry had yet (JSON; lone surrogates escaped as ``\\udXXX``)."""
    return json.dumps(awaited, ensure_ascii=True, separators=(",", ":"))


def decode_dangling(text: str) -> dict[str, int]:
    value: Any = json.loads(text) if text else {}
    return {str(k): int(v) for k, v in value.items()} if isinstance(value, dict) else {}

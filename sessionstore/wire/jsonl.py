"""Reading and writing pi JSONL session files.

Reading streams the file line by line. It loads what pi 1.6 loads: each entry line is kept
verbatim, and what pi reads tolerantly (a missing field, a field of the wrong type, a parent that
names no entry) is reported in :attr:`SessionFileReader.diagnostics`, never refused. It refuses,
raising :class:`~sessionstore.errors.JsonlError` (``file:line: reason``), what pi cannot load or
would silently skip as unparsable, and the ambiguities pi hangs on:

- a line that is not a JSON object (invalid JSON, invalid UTF-8, a byte order mark, ``NaN`` or
  ``Infinity``, nesting deeper than :data:`MAX_JSON_DEPTH`, an array, a number, ...);
- a missing or bad header, a second header;
- an entry without a non-empty string id, a duplicate id, an entry that is its own parent, and a
  parent that comes after its child (pi never writes one; with duplicates it is how parent cycles arise).

In lenient mode a refused line is skipped and recorded in :attr:`SessionFileReader.skipped` instead.

For a sync (``catalog.sync``) the reader reads complete lines only (``complete_lines``: a last line
without its newline is being written, and is left for the next read, unless ``take_unterminated``:
then a last line that is a whole JSON object is read as pi reads it), can continue a file where
an earlier read stopped (``resume``: its byte offset, line number and the parent ids no entry had
yet; ``known_parent`` says whether an id names an entry stored before), and feeds the bytes of the
lines it consumes to ``digest`` (a sync's check of the consumed prefix).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from sessionstore.errors import IncompleteHeaderError, JsonlError
from sessionstore.models import js
from sessionstore.validate import Diagnostic
from sessionstore.wire.codec import LineRefused, dump_line, parse_line
from sessionstore.wire.migrate import CURRENT_VERSION, Upgrader, pi_rewritten

if TYPE_CHECKING:  # (the pydantic models: imported where entries are checked, not by readers of these types)
    pass

MAX_DIAGNOSTICS = 10_000
"""Diagnostics kept per file; past that they are counted (:attr:`SessionFileReader.diagnostics_dropped`)."""


@dataclass(frozen=True, slots=True)
class SkippedLine:
    line: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason}


def _effective_version(version: Any) -> int:
    """The upgrades pi applies to a file whose header says ``version`` (``null``/absent: 1): v1 -> v2
    when it compares below 2, v2 -> v3 below 3; a version that compares as NaN gets none."""
    number = 1.0 if version is None else js.to_number(version)
    if number < 2:
        return 1
    if number < 3:
        return 2
    return CURRENT_VERSION


def _js_blank(raw: bytes) -> bool:
    """Whether pi reads the line as blank (``!line.trim()``): only JavaScript whitespace."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(char in js.JS_SPACE for char in text)


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where an earlier read of a v3 file stopped: the bytes and lines it consumed (complete lines), and
    the parent ids named by entries it read that no entry had (id -> the line that named it)."""

    offset: int
    line: int
    awaited: dict[str, int]


class _LineError(Exception):
    pass


def line_text(raw: bytes) -> bytes:
    """A line as it is stored and exported: without its newline and the carriage returns just before it
    (a CRLF line end, CR CR LF; at the end of a file without a newline, the CRs pi's added newline would
    make a CRLF), everything else kept (spaces and tabs at either end included): a v3 line exports byte
    for byte, and an exported file imports to the same text again."""
    return raw.removesuffix(b"\n").rstrip(b"\r")


class Hasher(Protocol):
    """What the reader feeds consumed lines to (a ``hashlib`` object)."""

    def update(self, data: bytes, /) -> None: ...

    def hexdigest(self) -> str: ...


def _whole_object(raw: bytes) -> bool:
    """Whether a line without its newline is a whole JSON object (a torn write never is: what pi writes
    is one object, and no proper prefix of it parses as one)."""
    try:
        return isinstance(parse_line(raw), dict)
    except LineRefused:
        return False


class SessionFileReader:
    """Streams the header and v3 entries of one pi session file.

    The header is read and checked on construction; :meth:`entries` yields ``(line, entry)`` pairs,
    each ``entry`` a plain dict in v3 wire form with every original field kept in its original order.
    """

    def __init__(
        self,
        source: str | Path | IO[bytes],
        *,
        lenient: bool = False,
        name: str | None = None,
        complete_lines: bool = False,
        resume: ResumePoint | None = None,
        known_parent: Callable[[str], bool] | None = None,
        take_unterminated: bool = False,
        digest: Hasher | None = None,
    ) -> None:
        if isinstance(source, (str, Path)):
            self.name = name or str(source)
            try:
                self._fp: IO[bytes] = open(source, "rb")  # noqa: SIM115 - closed by close()/entries()
            except OSError as exc:
                raise JsonlError(self.name, None, exc.strerror or str(exc)) from exc
            self._owns = True
            self._path: str | None = str(source)
        else:
            self.name = name or str(getattr(source, "name", "<stream>"))
            if isinstance(source, io.TextIOBase):
                raise JsonlError(self.name, None, "a text stream: open the file in binary mode ('rb')")
            self._fp = source
            self._owns = False
            self._path = None
        self.lenient = lenient
        self.skipped: list[SkippedLine] = []
        self.diagnostics: list[Diagnostic] = []
        """What pi reads tolerantly (entry codes), in file order; at most :data:`MAX_DIAGNOSTICS`."""
        self.diagnostics_dropped = 0
        self.ids: dict[str, int] = {}
        """Ids of the entries yielded so far -> their position (0, 1, ...); a consumer that numbers
        entries the same way may share this dict instead of building its own (memory on huge files)."""
        self.bytes_read = 0
        self._line = 0
        self._index = 0
        # parent id -> line of the first entry that named it before it was seen (read as a root)
        self._awaited: dict[str, int] = {}
        self._complete = complete_lines or resume is not None
        self._known_parent = known_parent
        self._start = 0
        self._partial = 0
        self._take_unterminated = take_unterminated
        self._unterminated = False
        self._digest = digest
        self.first_line = b""
        """The file's first line as read (its newline included), for a sync's check of the prefix."""
        self.last_line = b""
        """The last complete line read (its newline included)."""
        if resume is not None:
            try:
                self._fp.seek(resume.offset)
            except (OSError, ValueError) as exc:
                self.close()
                raise JsonlError(self.name, None, f"cannot seek to byte {resume.offset}: {exc}") from exc
            self._start = resume.offset
            self._line = resume.line
            self._awaited = dict(resume.awaited)
            self.header: dict[str, Any] = {}
            self._header_line = b""
            self.source_version: int = CURRENT_VERSION
            self._upgrader = Upgrader(CURRENT_VERSION)
            self.header_text: str | None = None
            return
        try:
            self.header = self._read_header()
        except BaseException:
            self.close()
            raise
        self.source_version = _effective_version(self.header.get("version"))
        self._upgrader = Upgrader(self.source_version)
        self._upgrader.upgrade_header(self.header)
        upgraded = self.source_version != CURRENT_VERSION
        self.header_text = (pi_rewritten(self.header, self._header_line) if upgraded else self._header_line).decode()
        """The header line to store: the file's own (:func:`line_text`) for a v3 file, pi's rewrite of
        the upgraded header for a v1/v2 file."""

    def close(self) -> None:
        if self._owns:
            self._fp.close()

    @property
    def consumed_bytes(self) -> int:
        """The file offset after the last complete line read (a partial last line not counted)."""
        return self._start + self.bytes_read - self._partial

    @property
    def consumed_lines(self) -> int:
        """The lines of the file read so far, complete ones (the header and blank lines included; a last
        line taken without its newline is not counted: the newline pi adds when it loads the file ends
        it, and is then read as that line)."""
        return self._line - self._unterminated

    @property
    def awaited(self) -> dict[str, int]:
        """Parent ids named by the entries read that no entry had (id -> the first line naming it)."""
        return dict(self._awaited)

    def __enter__(self) -> SessionFileReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- lines -------------------------------------------------------------------------------
    def _raw_lines(self) -> Iterator[tuple[int, bytes]]:
        for raw in self._fp:
            self._line += 1
            self.bytes_read += len(raw)
            if self._line == 1:
                self.first_line = raw
            if self._complete and not raw.endswith(b"\n"):
                self._line -= 1
                self._partial = len(raw)
                raise IncompleteHeaderError(self.name, self._line + 1, "the session header line is not complete yet")
            self.last_line = raw
            if self._digest is not None:
                self._digest.update(raw)
            if raw.strip() and not (raw[:1] >= b"\x80" and _js_blank(raw)):
                yield self._line, raw

    def _error(self, line: int | None, reason: str) -> JsonlError:
        return JsonlError(self.name, line, reason)

    def _note(self, code: Any, line: int, entry_id: str | None, reason: str) -> None:
        if len(self.diagnostics) >= MAX_DIAGNOSTICS:
            self.diagnostics_dropped += 1
            return
        where = f"line {line}" + (f", entry {entry_id!r}" if entry_id is not None else "")
        self.diagnostics.append(Diagnostic(code=code, message_index=None, entry_id=entry_id,
                                           message=f"{where}: {reason}"))

    def _read_header(self) -> dict[str, Any]:
        self._lines = self._raw_lines()
        first = next(self._lines, None)
        if first is None:
            raise self._error(None, "empty file: no session header")
        line, raw = first
        self._header_line = line_text(raw)
        try:
            header = parse_line(raw)
        except LineRefused as exc:
            raise self._error(line, f"the session header is not readable: {exc}") from None
        if not isinstance(header, dict) or header.get("type") != "session":
            got = header.get("type") if isinstance(header, dict) else js.json_type(header)
            raise self._error(line, f"the first line must be a session header (type 'session'), got {got!r}")
        header_id = header.get("id")
        if not isinstance(header_id, str) or not header_id:
            got = "no id" if "id" not in header else f"id {header_id!r}"
            raise self._error(line, f"bad session header: {got}; a session needs a non-empty string id")
        for name in ("timestamp", "cwd"):
            if not isinstance(header.get(name), str):
                self._note("INVALID_ENTRY", line, None, f"session header: {name} is "
                           f"{'missing' if name not in header else js.json_type(header[name])}")
        version = header.get("version")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int | float)):
            self._note("INVALID_ENTRY", line, None, f"session header: version is {js.json_type(version)}; read as"
                       " pi compares it")
        elif isinstance(version, int | float) and version > CURRENT_VERSION:
            self._note("HEADER_VERSION_NEWER", line, None,
                       f"session file version {version} is newer than 3; read as version 3, as pi does")
        self._index = 1
        return header

    # -- entries -----------------------------------------------------------------------------
    def entries(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Yield ``(line, entry)`` for every good entry line; raise or record the bad ones."""
        for line, entry, _text in self.entries_with_text():
            yield line, entry

    def entries_with_text(self) -> Iterator[tuple[int, dict[str, Any], str]]:
        """Yield ``(line, entry, text)``: ``text`` is what is stored and exported for the entry: the
        line itself (:func:`line_text`) in a v3 file, byte for byte; in a v1/v2 file pi's rewrite of
        the upgraded entry (:func:`~sessionstore.wire.migrate.pi_rewritten`), as pi's upgrade writes
        the whole file again."""
        seen = self.ids
        line = self._line
        complete = self._complete
        upgraded = self.source_version != CURRENT_VERSION
        digest = self._digest
        try:
            # the file's lines straight, not through ``_raw_lines`` (a generator per line costs ~0.5 us)
            for raw in self._fp:
                line += 1
                self._line = line
                self.bytes_read += len(raw)
                if complete:
                    if not raw.endswith(b"\n"):  # being written: left for the next read
                        if not (self._take_unterminated and _whole_object(raw)):
                            self._line = line - 1
                            self._partial = len(raw)
                            break
                        self._unterminated = True
                    self.last_line = raw
                    if digest is not None:
                        digest.update(raw)
                if not raw.strip():
                    continue
                try:
                    entry = self._entry(line, raw, seen)
                except _LineError as exc:
                    if _js_blank(raw):  # blank for pi too: Unicode spaces only
                        continue
                    if not self.lenient:
                        raise self._error(line, str(exc)) from None
                    self.skipped.append(SkippedLine(line, str(exc)))
                    self._upgrader.skipped()
                    continue
                seen[entry["id"]] = len(seen)
                self._upgrader.accepted(entry["id"])
                text = pi_rewritten(entry, raw) if upgraded else line_text(raw)
                yield line, entry, text.decode("utf-8")
        finally:
            self.close()

    def _entry(self, line: int, raw: bytes, seen: dict[str, int]) -> dict[str, Any]:
        try:
            entry = parse_line(raw)
        except LineRefused as exc:
            raise _LineError(str(exc)) from None
        index = self._index
        if js.truthy(entry):  # pi keeps every parsed value but null, false, 0 and "" when it numbers v1 entries
            self._index += 1
        if not isinstance(entry, dict):
            raise _LineError(f"expected a JSON object, got {js.json_type(entry)}")
        kind = entry.get("type")
        if kind == "session":
            raise _LineError("a second session header")
        self._upgrader.upgrade(entry, index)
        entry_id = entry.get("id")
        if not isinstance(entry_id, str) or not entry_id:
            got = "no id" if "id" not in entry else f"id {entry_id!r}"
            raise _LineError(f"entry has {got}: an entry needs a non-empty string id")
        if entry_id in seen:
            first = self._first_line_of(entry_id)
            where = f" (first on line {first})" if first is not None else ""
            raise _LineError(f"duplicate entry id {entry_id!r}{where}")
        if entry_id in self._awaited:
            child_line = self._awaited[entry_id]
            raise _LineError(
                f"entry {entry_id!r} is named as parent by the entry on line {child_line}, which comes before"
                f" it: parents must precede their children{self._cycle_note(entry_id, entry.get('parentId'))}"
            )
        parent = entry.get("parentId")
        if isinstance(parent, str) and parent:
            if parent == entry_id:
                raise _LineError(f"entry {entry_id!r} is its own parent (pi would loop on it)")
            if parent not in seen and (self._known_parent is None or not self._known_parent(parent)):
                self._awaited.setdefault(parent, line)
                self._note("PARENT_NOT_FOUND", line, entry_id,
                           f"parentId {parent!r} names no earlier entry: the entry is a root, as pi reads it")
        elif parent is not None or "parentId" not in entry:
            got = "missing" if "parentId" not in entry else "an empty string" if parent == "" else js.json_type(parent)
            self._note("INVALID_ENTRY", line, entry_id, f"parentId is {got}: the entry is a root, as pi reads it")
        from sessionstore.models.kinds import entry_problems

        for problem in entry_problems(entry):
            self._note("INVALID_ENTRY", line, entry_id, f"{kind!s} entry: {problem}")
        return entry

    def _cycle_note(self, entry_id: str, parent: Any) -> str:
        """Error path only: whether ``entry_id``'s own ancestors include the entry waiting for it (a
        parent cycle), read again from the file (parents are not kept per entry, to keep memory small)."""
        if not self._path or not isinstance(parent, str):
            return ""
        parents: dict[str, Any] = {}
        try:
            with open(self._path, "rb") as fp:
                for raw in fp:
                    try:
                        other = parse_line(raw) if raw.strip() else None
                    except LineRefused:
                        continue
                    if isinstance(other, dict) and isinstance(other.get("id"), str):
                        parents.setdefault(other["id"], other.get("parentId"))
        except OSError:
            return ""
        node: Any = parent
        visited = {entry_id}
        while isinstance(node, str) and node in parents and node not in visited:
            visited.add(node)
            node = parents[node]
        return "; the parents form a cycle (pi would loop on it)" if node == entry_id else ""

    def _first_line_of(self, entry_id: str) -> int | None:
        """Error path only: the line where ``entry_id`` first appears (ids are not kept per line, to
        keep memory small on very large files). ``None`` when the source cannot be read again."""
        if not self._path:
            return None
        try:
            with open(self._path, "rb") as fp:
                upgrader = Upgrader(self.source_version)
                index = 0
                for number, raw in enumerate(fp, 1):
                    if not raw.strip() or number == 1:
                        continue
                    try:
                        entry = parse_line(raw)
                    except LineRefused:
                        continue
                    if not js.truthy(entry):
                        continue
                    index += 1
                    if isinstance(entry, dict):
                        upgrader.upgrade(entry, index)
                        if entry.get("id") == entry_id:
                            return number
        except OSError:
            return None
        return None


def write_session_file(header: dict[str, Any], entries: Iterable[dict[str, Any]], fp: IO[bytes]) -> int:
    """Write a v3 file (header, then one entry per line, in the given order); returns entries written."""
    fp.write(dump_line(header))
    count = 0
    for entry in entries:
        fp.write(dump_line(entry))
        count += 1
    return count

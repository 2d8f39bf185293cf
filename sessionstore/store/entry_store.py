"""``EntryStore``: sessions as append-only entry trees, on a backend (SQLite or PostgreSQL); this
module names no database (see ``backend`` for the contract, ``sqlite`` and ``postgres`` for the two).
"""

from __future__ import annotations

import copy
import os
import uuid
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple, Self

from sessionstore.errors import (
    DuplicateIdError,
    EntryIdTakenError,
    EntryNotFoundError,
    InvalidInputError,
    JsonlError,
    LeafConflictError,
    SessionExistsError,
    SessionNotFoundError,
    SessionStoreError,
    SourceConflictError,
    StoreError,
)
from sessionstore.models.entry_catalog import usage_of
from sessionstore.models.frozen import MAX_JSON_DEPTH
from sessionstore.models.ids import random_entry_id
from sessionstore.models.js import date_ms, iso_string
from sessionstore.models.rules import cwd_matches, is_compaction, listing_modified_ms, resolve_path
from sessionstore.models.timestamps import now_iso, now_ms
from sessionstore.models.wire import JsonObject as Json
from sessionstore.store.archive import restores_archived
from sessionstore.store.backend import (
    EntryBrief,
    EntryRow,
    EntrySink,
    HeadRow,
    HeadUpdate,
    NewSession,
    SearchRow,
    SessionRow,
    SourceRow,
    TenantBackend,
    Tx,
    entry_row,
    search_row,
)
from sessionstore.store.dbtext import from_db, loaded, stored, to_db
from sessionstore.store.engine import Durability, make_engine, open_backend, open_current_sqlite, upgrades_on_open
from sessionstore.store.facts import NodeFacts, SessionStats, TreeIndex, UsageBuckets, facts_for, later_activity
from sessionstore.store.location import default_url
from sessionstore.store.records import (
    LIST_ORDERS,
    UNSET,
    AppendResult,
    ContextSlice,
    ImportResult,
    LabelState,
    ListOrder,
    SessionInfo,
    TreeNode,
    _Unset,
    write_tree_json,
)
from sessionstore.store.sources import (
    FileStat,
    SourceChangedError,
    SourceDeletedError,
    SourceFacts,
    SourceInfo,
    encode_dangling,
    line_digest,
    new_prefix_hasher,
    split_check,
)
from sessionstore.store.tenant import DEFAULT_TENANT, check_tenant
from sessionstore.validate import Diagnostic
from sessionstore.wire.codec import decode_payloads, dump_line, json_loads, within_json_depth
from sessionstore.wire.jsjson import gc_paused
from sessionstore.wire.migrate import CURRENT_VERSION, DIGITS_KEY_TEXT, in_js_key_order

if TYPE_CHECKING:  # (the file reader is imported by the imports and syncs that read a file)
    from sqlalchemy import Engine

    from sessionstore.wire.jsonl import Hasher, SessionFileReader


def _active_time(info: SessionInfo) -> int | None:
    return info.active_ms


def _modified_time(info: SessionInfo) -> int | None:
    return info.modified_ms


PROGRESS_EVERY = 2_000
"""Entries between two progress calls of an import."""



@dataclass(slots=True)
class SessionHead:
    """A session as an append sees it, inside the append's transaction: its key, its leaf and the
    leaf's facts, and the listing columns."""

    key: int
    id: str
    leaf_id: str | None
    leaf_facts: NodeFacts | None
    stats: SessionStats


class AppendView:
    """What an entry kind's check (``models.kinds.SessionView``) may read inside the append's
    transaction, before anything is written."""

    def __init__(self, tx: Tx, head: SessionHead, parent: NodeFacts | None) -> None:
        self._tx = tx
        self.head = head
        self._parent = parent

    @property
    def session_id(self) -> str:
        return self.head.id

    def has(self, entry_id: str) -> bool:
        """Whether the session holds ``entry_id`` (on any branch)."""
        return self.facts(entry_id) is not None

    def facts(self, entry_id: str) -> NodeFacts | None:
        """The facts of ``entry_id`` anywhere in the session (earlier entries of the batch included)."""
        return self._tx.facts(self.head.key, to_db(entry_id))

    def facts_on_path(self, entry_id: Any) -> NodeFacts | None:
        """The facts of ``entry_id`` when it is on the path the new entry extends (its parent's), else ``None``."""
        if not isinstance(entry_id, str) or self._parent is None:
            return None
        target = self._tx.facts(self.head.key, to_db(entry_id))
        if target is None or not self._tx.on_path(self.head.key, self._parent.seq, target):
            return None
        return target

    def entry_on_path(self, entry_id: Any) -> Json | None:
        """The entry ``entry_id`` when it is on the path the new entry extends, else ``None``."""
        if self.facts_on_path(entry_id) is None:
            return None
        text = self._tx.payload(self.head.key, to_db(entry_id))
        return None if text is None else dict(json_loads(text))


"""A check run inside an append's transaction; it raises to refuse the entry."""


ENTRY_LINES_PAGE = 1000
"""Entries :meth:`EntryStore.write_entry_lines` reads per query."""


class EntryStore:
    """Sessions as append-only entry trees on a :class:`~sessionstore.store.backend.Backend`, on
    ``url`` (default: ``$SESSIONSTORE_DB``, else SQLite in the user data dir).

    Every write is one transaction (appends to one session are serialised, a failed import leaves
    nothing behind). No method updates or deletes an entry; the database refuses it too
    (``delete_session`` aside). SQLite databases that are new or behind are upgraded on open;
    PostgreSQL schemas are upgraded only by ``sessionstore db upgrade`` (an outdated one raises
    :class:`~sessionstore.errors.SchemaError`). ``on_event_loop``: see :func:`~sessionstore.store.engine.make_engine`.
    ``tenant``: whose sessions it sees (:mod:`sessionstore.store.tenant`); :meth:`for_tenant` gives
    another tenant's on the same connections.
    """

    def __init__(self, url: str | None = None, *, durability: Durability = "full", upgrade: bool | None = None,
                 on_event_loop: bool = False, create: bool = True, tenant: str = DEFAULT_TENANT) -> None:
        self.tenant = check_tenant(tenant)
        self.url = url or default_url()
        self._durability: Durability = durability
        self._engine: Engine | None = None
        self._owner: EntryStore | None = None
        """The store that opened the database, for a view of another tenant (:meth:`for_tenant`)."""
        opened = None if on_event_loop or upgrade else open_current_sqlite(self.url, durability)
        self._file_url: str | None = None
        """The absolute URL of a SQLite file opened without SQLAlchemy."""
        if opened is not None:  # an existing SQLite file at the current schema: no SQLAlchemy
            self.backend = TenantBackend(opened[0], self.tenant, owner=True)
            self._file_url = opened[1]
            return
        from sessionstore.store import migrate

        where = self.url
        try:
            engine = make_engine(self.url, durability=durability, on_event_loop=on_event_loop, create=create)
        except StoreError as exc:
            raise StoreError(f"cannot open {where}: {exc}") from exc
        auto = upgrades_on_open(engine) if upgrade is None else upgrade
        try:
            migrate.ensure_schema(engine, auto_upgrade=auto, create=create)
        except StoreError as exc:
            engine.dispose()
            where = engine.url.render_as_string(hide_password=True)
            raise StoreError(f"cannot open {where}: {exc}") from exc.__cause__
        except BaseException:
            engine.dispose()
            raise
        self._engine = engine
        self.backend = TenantBackend(open_backend(engine), self.tenant, owner=True)

    def for_tenant(self, tenant: str) -> EntryStore:
        """The store of ``tenant`` on this one's database and connections (no new engine, no schema
        check). Closing it leaves them open: they are this store's (whose close closes them)."""
        name = check_tenant(tenant)
        owner = self._owner or self
        view = EntryStore.__new__(EntryStore)
        view.tenant = name
        view.url = self.url
        view._durability = self._durability
        view._engine = None
        view._owner = owner
        view._file_url = self._file_url
        view.backend = TenantBackend(self.backend.shared, name, owner=False)
        return view

    @property
    def engine(self) -> Engine:
        """SQLAlchemy's engine on the database (made on first use, for the file opened, when it was opened
        without SQLAlchemy)."""
        if self._owner is not None:
            return self._owner.engine
        if self._engine is None:
            assert self._file_url is not None
            self._engine = make_engine(self._file_url, durability=self._durability)
        return self._engine

    @property
    def database(self) -> str:
        """The database's URL, password hidden (a SQLite file opened without SQLAlchemy: the URL given)."""
        if self._file_url is not None:
            return self.url
        return self.engine.url.render_as_string(hide_password=True)

    def close(self) -> None:
        self.backend.close()  # (a view of another tenant closes nothing: see for_tenant)
        if self._engine is not None:
            self._engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- import / export -----------------------------------------------------------------------
    def import_jsonl(
        self,
        source: str | Path | IO[bytes],
        *,
        lenient: bool = False,
        replace: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> ImportResult:
        """Import one pi session file (v1-v3) as a new session, atomically.

        Raises :class:`~sessionstore.errors.JsonlError` (``file:line: reason``) for a bad line, unless
        ``lenient``: then bad lines are skipped and listed in the result (entries below a skipped line become
        roots, as pi reads them). What pi reads tolerantly is in ``ImportResult.diagnostics``.
        ``progress`` is called with the bytes read so far. A session with the same id is an error
        unless ``replace``: then it is replaced in the same transaction.
        """
        from sessionstore.wire.jsonl import SessionFileReader

        reader = SessionFileReader(source, lenient=lenient)
        try:
            header = reader.header
            given = header.pop(LEAF_KEY, UNSET)  # written by export_jsonl; pi ignores it
            leaf_hint = _leaf_hint(given)
            result = self.insert_session(
                header,
                ((entry, text) for _line, entry, text in reader.entries_with_text()),
                shared_ids=reader.ids,
                leaf_id=leaf_hint,
                replace=replace,
                progress=(lambda: progress(reader.bytes_read)) if progress is not None else None,
                source_name=reader.name,
                header_text=reader.header_text,
            )
        finally:
            reader.close()
        diagnostics = list(reader.diagnostics)
        if not isinstance(given, _Unset) and (isinstance(leaf_hint, _Unset) or result.leaf_id != leaf_hint):
            diagnostics.append(Diagnostic(
                code="INVALID_ENTRY", message_index=None, entry_id=None,
                message=f"line 1: header leafId {given!r} names no imported entry; the leaf is the last entry,"
                " as pi reads the file"))
        return ImportResult(result.session_id, result.entries, tuple(reader.skipped), result.leaf_id,
                            tuple(diagnostics))

    def insert_session(
        self,
        header: Json,
        new_entries: Iterable[Json | tuple[Json, str]],
        *,
        leaf_id: str | _Unset | None = UNSET,
        replace: bool = False,
        progress: Callable[[], None] | None = None,
        source_name: str = "<entries>",
        shared_ids: dict[str, int] | None = None,
        header_text: str | None = None,
        made_ms: int | None = None,
    ) -> ImportResult:
        """Create a session from a header and entries in append order (each parent before its
        children), in one transaction. An item may be ``(entry, text)``: ``text`` is the entry's JSON as
        pi writes it (kept verbatim, so that export gives it back byte for byte). The leaf is
        ``leaf_id`` if given and it names an entry (or is ``None``: no leaf), else the last entry.
        ``shared_ids``: the id -> seq map a JSONL reader fills as it yields (saves a second map).
        ``made_ms``: the time of the write through the API that makes the session (a new session, a
        fork), its activity time; without it (an import) its activity is the latest of its own times
        (``facts.later_activity``)."""
        with self.backend.write(bulk=True) as tx:
            _key, result = self._insert(tx, header, new_entries, leaf_id=leaf_id, replace=replace, progress=progress,
                                        source_name=source_name, shared_ids=shared_ids, header_text=header_text,
                                        made_ms=made_ms)
        return result

    def _insert(
        self,
        tx: Tx,
        header: Json,
        new_entries: Iterable[Json | tuple[Json, str]],
        *,
        leaf_id: str | _Unset | None = UNSET,
        replace: bool = False,
        progress: Callable[[], None] | None = None,
        source_name: str = "<entries>",
        shared_ids: dict[str, int] | None = None,
        header_text: str | None = None,
        made_ms: int | None = None,
    ) -> tuple[int, ImportResult]:
        """``insert_session`` inside the bulk transaction ``tx``; returns the new session's key too."""
        session_id = str(header["id"])
        existing = _head(tx, session_id, lock=True)
        if existing is not None:
            if not replace and not existing.deleting:  # (a session marked deleting is gone for readers)
                raise SessionExistsError(session_id)
            tx.delete_session(existing.key)
        values = _new_session(header, header_text)
        stats = SessionStats()
        stats.touch(date_ms(loaded(values).created))
        stats.touch(made_ms)
        key = tx.insert_session(values._replace(active_ms=stats.activity_ms()))
        index = TreeIndex(shared_ids)
        written = _write_entries(tx, key, new_entries, index, stats, progress=progress, source_name=source_name)
        leaf = written.last_id
        if not isinstance(leaf_id, _Unset) and (leaf_id is None or leaf_id in index):
            leaf = leaf_id
        leaf_facts = None if leaf is None else index.facts(index.seq_of[leaf])
        tx.update_head(_head_update(key, leaf, leaf_facts, stats), texts_changed=True)
        return key, ImportResult(session_id, len(index), (), leaf)

    # -- sync sources (catalog.sync) -------------------------------------------------------------
    def sources(self) -> list[SourceInfo]:
        """The source row of every synced session (one query, no entry read)."""
        with self.backend.read() as tx:
            return [SourceInfo.of(from_db(session_id), loaded(row)) for session_id, row in tx.sources()]

    def import_source(
        self, path: str, stat: FileStat, *, replacing: SourceInfo | None = None, adopt: bool = False,
        take_unterminated: bool = False, deleted: Collection[str] = (), include_deleted: bool = False,
    ) -> SourceResult:
        """Import the complete lines of the pi file at ``path`` as the session synced from it, and record
        its source row, in one transaction (the import's checks; the leaf is the last entry, as pi's loader
        takes it). ``replacing``: the source this path had (a rewritten file): its session is replaced,
        unless it holds what the file did not give (entries appended in the database, a leaf moved
        there: :class:`SourceConflictError` unless ``adopt``); when the file now names another session,
        that one is imported and the replaced one kept, its source gone (:func:`replaced_path`).
        ``stat``: what a ``stat`` said before the read.

        Raises :class:`JsonlError` (``file:line: reason``), :class:`IncompleteHeaderError` while the
        header line has no newline, and :class:`SourceConflictError` when the file's session is in the
        database from elsewhere: imported by hand (unless ``adopt``), or synced from another file that
        still exists (a file whose recorded source is gone was moved: it takes the session over).
        :class:`SourceChangedError` when another sync changed the source meanwhile; any other failure
        of storing a line is a :class:`JsonlError` at that line. ``take_unterminated``: a last line
        without its newline that is a whole JSON object is read too (the file did not change since the
        previous sync: it was not being written). ``deleted``: ids of sessions deleted on purpose
        (:meth:`deleted_sources`): a file naming one that is not in the database raises
        :class:`SourceDeletedError`, unless ``include_deleted``, whose import forgets the deletion of the
        path and session."""
        from sessionstore.wire.jsonl import SessionFileReader

        digest = new_prefix_hasher()
        reader = SessionFileReader(path, complete_lines=True, take_unterminated=take_unterminated, digest=digest)
        try:
            with _failing_at_line(_Reading(path, reader)):
                return self._import_source(reader, path, stat, digest, replacing=replacing, adopt=adopt,
                                           deleted=deleted, include_deleted=include_deleted)
        finally:
            reader.close()

    def _import_source(self, reader: SessionFileReader, path: str, stat: FileStat, digest: Hasher, *,
                       replacing: SourceInfo | None, adopt: bool, deleted: Collection[str],
                       include_deleted: bool) -> SourceResult:
        header = reader.header
        header.pop(LEAF_KEY, None)  # written by export_jsonl; pi ignores it, and so does a mirror
        session_id = str(header["id"])
        with self.backend.write(bulk=True) as tx:
            existing = _head(tx, session_id, lock=True)
            present = existing is not None and not existing.deleting
            if session_id in deleted and not include_deleted and not present:
                raise SourceDeletedError(path, session_id)
            if replacing is not None:
                current = loaded(tx.source(replacing.session_key))
                if current is None or current.path != path:
                    raise SourceChangedError(path)
                if replacing.session_id == session_id:
                    if existing is not None and not adopt:
                        _refuse_local_changes(existing, replacing, path, session_id)
                    tx.delete_session(replacing.session_key)
                    present = False
                else:  # the file now holds another session: the one it held is kept, its file gone
                    tx.put_source(stored(current._replace(path=replaced_path(path, replacing.session_id, session_id))))
            if existing is not None and present:
                owner = loaded(tx.source(existing.key))
                _check_owner(owner, path, session_id, adopt=adopt)
                if owner is not None and not adopt:  # a moved file: what the session holds beyond it stays
                    _refuse_local_changes(existing, SourceInfo.of(session_id, owner), path, session_id)
            key, result = self._insert(
                tx, header, ((entry, text) for _line, entry, text in reader.entries_with_text()),
                shared_ids=reader.ids, replace=True, source_name=reader.name, header_text=reader.header_text)
            after = _head(tx, session_id, lock=False)
            facts = _facts_after(after, stat)
            row = _source_row(key, path, stat, reader, line_digest(reader.first_line), reader.source_version,
                              prefix=digest.hexdigest(), facts=facts)
            tx.put_source(stored(row))
            if include_deleted:
                tx.forget_deleted_source(to_db(path), to_db(session_id))
        return SourceResult(session_id, result.entries, SourceInfo.of(session_id, row))

    def append_source(self, source: SourceInfo, stat: FileStat, *, digest: Hasher,
                      take_unterminated: bool = False) -> SourceResult:
        """Append the complete lines that the file of ``source`` has past the consumed offset to its
        session, in one transaction, with the import's checks (line numbers are the file's: the source
        knows the lines it consumed), and record how far it was read. The leaf moves to the last
        appended entry. Parents are looked up by id (indexed) or among the new entries: the cost
        follows the new lines, not the session's size. Only for a v3 file whose consumed part is
        unchanged (the caller checked it: :func:`~sessionstore.store.sources.prefix_digest`, whose
        hasher ``digest`` is, fed the lines read here, the new check's prefix part). Failures as
        :meth:`import_source`'s; ``take_unterminated`` as there."""
        reading = _Reading(source.path)
        try:
            with _failing_at_line(reading):
                return self._append_source(source, stat, digest, reading, take_unterminated=take_unterminated)
        except EntryIdTakenError:
            raise self._taken_line(source) from None

    def _append_source(self, source: SourceInfo, stat: FileStat, digest: Hasher, reading: _Reading, *,
                       take_unterminated: bool) -> SourceResult:
        from sessionstore.wire.jsonl import SessionFileReader

        with self.backend.write(bulk=True) as tx:
            row = _head(tx, source.session_id, lock=True)
            current = None if row is None or row.deleting else loaded(tx.source(row.key))
            if row is None or current is None or current.consumed_bytes != source.consumed_bytes \
                    or current.path != source.path:
                raise SourceChangedError(source.path)
            known = _StoredEntries(tx, row.key)
            reader = SessionFileReader(source.path, complete_lines=True, resume=source.resume_point,
                                       known_parent=known.has, take_unterminated=take_unterminated, digest=digest)
            reading.reader = reader
            try:
                index = TreeIndex(reader.ids, base=row.entry_count, stored=known)
                stats = _stats(row)
                texts_before = (stats.name, stats.first_message)
                # Batched inserts, not the bulk sink: the lookups of stored parents run between them
                # (a COPY left open would hold the connection).
                written = _write_entries(tx, row.key, ((e, t) for _line, e, t in reader.entries_with_text()),
                                         index, stats, source_name=reader.name, sink=_BatchedRows(tx))
            finally:
                reader.close()
            if written.last_id is not None:
                texts_changed = (stats.name, stats.first_message) != texts_before
                tx.update_head(_head_update(row.key, written.last_id, written.last_facts, stats),
                               texts_changed=texts_changed)
            head_digest = source.check.partition(":")[0]
            before = source.facts.entries
            after = _head(tx, source.session_id, lock=False)
            facts = _facts_after(after, stat, from_file=None if before is None else before + len(index))
            new_row = _source_row(row.key, source.path, stat, reader, head_digest, source.file_version,
                                  prefix=digest.hexdigest(), previous=source, facts=facts)
            tx.put_source(stored(new_row))
        return SourceResult(source.session_id, len(index), SourceInfo.of(source.session_id, new_row))

    def _taken_line(self, source: SourceInfo) -> SessionStoreError:
        """Error path only: the first new line of ``source``'s file whose id the session has already."""
        from sessionstore.wire.jsonl import SessionFileReader

        with self.backend.read() as tx:
            row = _head(tx, source.session_id, lock=False)
            if row is not None:
                reader = SessionFileReader(source.path, complete_lines=True, resume=source.resume_point,
                                           known_parent=lambda _parent: True)
                try:
                    for line, entry, _text in reader.entries_with_text():
                        if tx.facts(row.key, to_db(entry["id"])) is not None:
                            return JsonlError(source.path, line, f"duplicate entry id {entry['id']!r}: the session"
                                              " has an entry with that id already")
                finally:
                    reader.close()
        return StoreError(f"{source.path}: an appended entry has an id the session has already")

    def export_jsonl(self, session_id: str, fp: IO[bytes]) -> int:
        """Write the session as a v3 file, entries in append order; returns the entries written.

        The stored header line and the stored text of each entry are written as they are (the file's own
        lines for an imported v3 file, pi's rewrite for an upgraded v1/v2 one), on both backends; when
        ``import_jsonl`` of that header would not give the session's leaf back, the header records the
        leaf as ``leafId`` (pi ignores the field): :func:`export_header_line`."""
        with self.backend.read() as tx:
            head = loaded(tx.export_head(to_db(session_id)))
            if head is None or head.deleting:
                raise SessionNotFoundError(session_id)
            key = head.key
            fp.write(export_header_line(head.header, leaf_id=head.leaf_id, last_id=head.last_entry_id,
                                        names_entry=lambda entry_id: tx.facts(key, to_db(entry_id)) is not None))
            return tx.write_payload_lines(head.key, fp)

    def write_entry_lines(self, session_id: str, fp: IO[bytes], *, after: int = -1,
                          limit: int | None = None) -> tuple[int, int | None]:
        """Write the stored line (and a newline) of each entry whose append index (seq, from 0) is above
        ``after``, in append order, at most ``limit``, a page at a time; returns the count and the last
        written seq (``None`` when none was)."""
        with self._session_read(session_id) as (tx, row):
            total = row.entry_count
            first = max(after + 1, 0)
            last = total - 1 if limit is None else min(total - 1, first + limit - 1)
            count, last_seq = 0, None
            for start in range(first, last + 1, ENTRY_LINES_PAGE):
                for seq, payload in tx.payloads_between(row.key, start, min(last, start + ENTRY_LINES_PAGE - 1)):
                    fp.write((payload.encode() if isinstance(payload, str) else payload) + b"\n")
                    count, last_seq = count + 1, seq
            return count, last_seq

    # -- reading -------------------------------------------------------------------------------
    @contextmanager
    def _session_read(self, session_id: str) -> Iterator[tuple[Tx, HeadRow]]:
        """A read transaction and the session's row (``SessionNotFoundError`` when it has none)."""
        with self.backend.read() as tx:
            row = _head(tx, session_id, lock=False)
            if row is None or row.deleting:
                raise SessionNotFoundError(session_id)
            yield tx, row

    def session(self, session_id: str) -> SessionInfo:
        with self.backend.read() as tx:
            row = tx.session(to_db(session_id))
        if row is None:
            raise SessionNotFoundError(session_id)
        return _info(row)

    def header(self, session_id: str) -> Json:
        with self.backend.read() as tx:
            row = tx.session(to_db(session_id))
        if row is None:
            raise SessionNotFoundError(session_id)
        header = dict(json_loads(row.header))
        header.pop(LEAF_KEY, None)  # the export's record of the leaf, kept for the line's sake only
        return header

    def list_sessions(
        self, *, cwd: str | None = None, since_ms: int | None = None, limit: int | None = None,
        sort: ListOrder = "activity",
    ) -> list[SessionInfo]:
        """Sessions newest first, by ``sort``: ``"activity"`` (default), the last activity of any kind
        (``active_ms``: creation, appends, forks, leaf moves; an imported file's own latest time), ties
        by creation and id; ``"modified"``, pi's order: pi's ``modified`` (the last message activity, else
        the header's time), then by creation and id, as pi's file names order ties. Reads no entry payload.

        ``cwd``: only sessions started there, compared as pi compares them (both resolved against the
        current directory: ``.``, ``~``, a trailing slash name the same directory); ``since_ms``: only
        sessions whose time of that order is then or later; ``limit``: at most that many."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidInputError(f"limit must be a non-negative int, got {limit!r}")
        if cwd is not None and not isinstance(cwd, str):
            raise InvalidInputError(f"cwd must be a string, got {type(cwd).__name__}")
        if since_ms is not None and (isinstance(since_ms, bool) or not isinstance(since_ms, int | float)):
            raise InvalidInputError(f"since_ms must be a number of milliseconds, got {since_ms!r}")
        if sort not in LIST_ORDERS:
            raise InvalidInputError(f"sort must be one of {', '.join(map(repr, LIST_ORDERS))}, got {sort!r}")
        with self.backend.read() as tx:
            listed = self.listed_sessions(tx, cwd=cwd, since_ms=since_ms, sort=sort)
        infos = [info for _key, info in listed]
        return infos if limit is None else infos[:limit]

    @staticmethod
    def listed_sessions(tx: Tx, *, cwd: str | None = None, since_ms: int | float | None = None,
                        sort: ListOrder = "modified") -> list[tuple[int, SessionInfo]]:
        """The sessions :meth:`list_sessions` lists (its arguments checked by the caller), in its order
        (here pi's by default: search and stats follow pi), each with its key, read in the caller's
        transaction ``tx``."""
        listed = [(row.key, _info(row)) for row in tx.sessions()]
        if cwd is not None:
            base = os.getcwd()
            wanted = resolve_path(cwd, base)
            listed = [(k, i) for k, i in listed if cwd_matches(i.cwd, wanted, base)]
        time_of = _active_time if sort == "activity" else _modified_time
        if since_ms is not None:
            listed = [(k, i) for k, i in listed if (t := time_of(i)) is not None and t >= since_ms]
        listed.sort(key=lambda ki: (time_of(ki[1]) is not None, time_of(ki[1]) or 0, ki[1].created, ki[1].id),
                    reverse=True)
        return listed

    def leaf(self, session_id: str) -> str | None:
        with self._session_read(session_id) as (_tx, row):
            return row.leaf_id

    def entry(self, session_id: str, entry_id: str) -> Json:
        with self._session_read(session_id) as (tx, row):
            text = tx.payload(row.key, to_db(entry_id))
        if text is None:
            raise EntryNotFoundError(session_id, entry_id)
        return dict(json_loads(text))

    def entry_ids_with_prefix(self, session_id: str, prefix: str, limit: int) -> list[EntryBrief]:
        """Up to ``limit`` entries of the session whose id starts with ``prefix`` (taken literally: ``%``
        and ``_`` are characters), by id, each as its id and type; one indexed query, no payload read."""
        if not isinstance(prefix, str):
            raise InvalidInputError(f"an entry id prefix must be a string, got {type(prefix).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidInputError(f"limit must be a non-negative int, got {limit!r}")
        with self._session_read(session_id) as (tx, row):
            found = tx.entry_ids_with_prefix(row.key, to_db(prefix), limit)
        return [loaded(e) for e in found]

    def session_ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` ids of the tenant's sessions that start with ``prefix`` (taken literally), by id;
        one indexed query."""
        if not isinstance(prefix, str):
            raise InvalidInputError(f"a session id prefix must be a string, got {type(prefix).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidInputError(f"limit must be a non-negative int, got {limit!r}")
        with self.backend.read() as tx:
            return [from_db(i) for i in tx.session_ids_with_prefix(to_db(prefix), limit)]

    def entries(self, session_id: str) -> list[Json]:
        """Every entry in append order (loads the whole session: for export-like work, not resume)."""
        with self._session_read(session_id) as (tx, row):
            return decode_payloads(list(tx.payloads(row.key)))

    def children(self, session_id: str, entry_id: str | None) -> list[Json]:
        """Children of ``entry_id`` in append order (``None``: the roots)."""
        with self._session_read(session_id) as (tx, row):
            parent_seq = None if entry_id is None else self._facts(tx, row.key, session_id, entry_id).seq
            return decode_payloads(tx.children(row.key, parent_seq))

    def path(self, session_id: str, leaf_id: str | _Unset | None = UNSET) -> list[Json]:
        """Entries from the root to ``leaf_id`` (default: the session's leaf), root first."""
        with self._session_read(session_id) as (tx, row):
            facts = self._leaf_facts(tx, row, session_id, leaf_id)
            if facts is None:
                return []
            rows = tx.path(row.key, facts.seq, from_depth=0)
        return decode_payloads(rows.payloads)

    def context_slice(self, session_id: str, leaf_id: str | _Unset | None = UNSET) -> ContextSlice:
        """The part of the path that the context at ``leaf_id`` needs, read in one recursive query
        bounded by the depth at which the context starts, plus the two settings entries before it."""
        texts = self.context_texts(session_id, leaf_id)
        with gc_paused():  # (100,000 decoded entries: see gc_paused)
            return ContextSlice(texts.leaf_id, decode_payloads(texts.path), _decoded(texts.thinking_entry),
                                _decoded(texts.model_entry))

    def context_texts(self, session_id: str, leaf_id: str | _Unset | None = UNSET) -> ContextTexts:
        """:meth:`context_slice` with every entry as its stored JSON text, not decoded (the caller
        decodes them, and may know some of the texts already)."""
        with self._session_read(session_id) as (tx, row):
            leaf = row.leaf_id if isinstance(leaf_id, _Unset) else leaf_id
            facts = self._leaf_facts(tx, row, session_id, leaf_id)
            if leaf is None or facts is None:
                return ContextTexts(None, [], None, None)
            path_rows = tx.path(row.key, facts.seq, from_depth=facts.ctx_depth)
            first_seq = path_rows.first_seq if path_rows.first_seq is not None else facts.seq
            extra: dict[int, str | None] = {}
            for seq in (facts.thinking_seq, facts.model_seq):
                if seq is not None and seq < first_seq and seq not in extra:
                    extra[seq] = tx.payload_at(row.key, seq)
        thinking = extra.get(facts.thinking_seq) if facts.thinking_seq in extra else None
        model = extra.get(facts.model_seq) if facts.model_seq in extra else None
        return ContextTexts(leaf, path_rows.payloads, thinking, model)

    def tree(self, session_id: str) -> list[TreeNode]:
        """The whole tree: roots in append order, children in append order, labels resolved, and the
        active path (root to the session's leaf) marked."""
        with self._session_read(session_id) as (tx, row):
            rows = tx.tree(row.key)
        nodes: dict[int, TreeNode] = {}
        parent_of: dict[int, int | None] = {}
        by_id: dict[str, TreeNode] = {}
        roots: list[TreeNode] = []
        labels = LabelState()
        for seq, parent_seq, text in rows:
            payload = json_loads(text)
            node = TreeNode(payload)
            nodes[seq] = node
            parent_of[seq] = parent_seq
            by_id[payload["id"]] = node
            (roots if parent_seq is None else nodes[parent_seq].children).append(node)
            labels.add(payload)
        for target, (label, _timestamp) in labels.current.items():
            if target in by_id:
                by_id[target].label = label
        seq_on_path = row.leaf_seq
        while seq_on_path is not None:
            nodes[seq_on_path].on_active_path = True
            seq_on_path = parent_of[seq_on_path]
        return roots

    @contextmanager
    def context_stream(self, session_id: str, leaf_id: str | _Unset | None = UNSET) -> Iterator[StreamedSlice]:
        """:meth:`context_slice` for a path too long to hold: the entries are read in pages of
        ``STREAM_PAGE`` while the caller iterates ``entries``, inside this read transaction (one
        snapshot); held at once are only the last compaction, the ``context_edit`` entries of the slice
        and the two settings entries."""
        with self._session_read(session_id) as (tx, row):
            leaf = row.leaf_id if isinstance(leaf_id, _Unset) else leaf_id
            facts = self._leaf_facts(tx, row, session_id, leaf_id)
            if leaf is None or facts is None:
                yield StreamedSlice(None, None, None, None, [], iter(()))
                return
            key, stop = row.key, facts.ctx_depth
            runs = tx.path_runs(key, facts.seq, from_depth=stop)

            def one(seq: int | None) -> Json | None:
                return None if seq is None else _decoded(tx.payload_at(key, seq))

            edits = [json_loads(text) for first, last in runs for _seq, text
                     in tx.payloads_between(key, first, last, from_depth=stop, entry_type="context_edit")]
            compaction_seq = facts.compaction_seq
            compaction = one(compaction_seq)

            def entries() -> Iterator[tuple[Json, bool]]:
                for first, last in runs:
                    for start in range(first, last + 1, STREAM_PAGE):
                        page = tx.payloads_between(key, start, min(last, start + STREAM_PAGE - 1), from_depth=stop)
                        for seq, text in page:
                            yield json_loads(text), seq == compaction_seq
                        del page

            yield StreamedSlice(leaf, compaction, one(facts.thinking_seq), one(facts.model_seq), edits, entries())

    def write_tree_json(self, session_id: str, fp: IO[bytes]) -> None:
        """``js_dumpb(flat_tree_json(self.tree(session_id)), indent=2)`` and a newline, written piece by
        piece: the tree's links (seqs only) are read first, then the payloads in pages, depth first (see
        ``records.write_tree_json``)."""
        with self._session_read(session_id) as (tx, row):
            key = row.key
            seqs: array[int] = array("q")
            parents: array[int] = array("q")
            for seq, parent_seq in tx.tree_links(key):
                seqs.append(seq)
                parents.append(-1 if parent_seq is None else parent_seq)
            labels = LabelState()
            for payload in decode_payloads(tx.payloads_of_type(key, "label")):
                labels.add(payload)

            def payloads(wanted: Iterator[int]) -> Iterator[Json]:
                return _payloads_in_order(tx, key, wanted)

            write_tree_json(fp, seqs, parents, row.leaf_seq, labels, payloads)

    def labels(self, session_id: str) -> dict[str, Any]:
        """Resolved labels: target entry id -> label, over every entry in append order (any branch),
        as pi resolves them (see :class:`LabelState`)."""
        return {target: label for target, (label, _ts) in self.label_state(session_id).current.items()}

    def label_state(self, session_id: str) -> LabelState:
        """pi's label map of the session: labels in the order pi's map holds them, with the timestamp
        of the label entry that set each."""
        with self._session_read(session_id) as (tx, row):
            texts = tx.payloads_of_type(row.key, "label")
        state = LabelState()
        for payload in decode_payloads(texts):
            state.add(payload)
        return state

    def is_ancestor(self, session_id: str, entry_id: str, leaf_id: str) -> bool:
        """Whether ``entry_id`` is on the path from the root to ``leaf_id`` (``leaf_id`` included)."""
        with self._session_read(session_id) as (tx, row):
            leaf = self._facts(tx, row.key, session_id, leaf_id)
            target = tx.facts(row.key, to_db(entry_id))
            return target is not None and tx.on_path(row.key, leaf.seq, target)

    def count_entries(self, session_id: str) -> int:
        with self._session_read(session_id) as (tx, row):
            return tx.count_entries(row.key)

    @staticmethod
    def _facts(tx: Tx, key: int, session_id: str, entry_id: str) -> NodeFacts:
        row = tx.facts(key, to_db(entry_id))
        if row is None:
            raise EntryNotFoundError(session_id, entry_id)
        return row

    def _leaf_facts(self, tx: Tx, row: HeadRow, session_id: str, leaf_id: str | _Unset | None) -> NodeFacts | None:
        """The facts of ``leaf_id`` (default: the session's leaf); ``None`` for no leaf."""
        if isinstance(leaf_id, _Unset) or leaf_id == row.leaf_id:
            return row.leaf_facts
        if leaf_id is None:
            return None
        return self._facts(tx, row.key, session_id, leaf_id)

    # -- writing -------------------------------------------------------------------------------
    def create_session(
        self,
        *,
        cwd: str,
        session_id: str | None = None,
        parent_session: str | None = None,
        timestamp: str | None = None,
        exist_ok: bool = False,
    ) -> str:
        """Create an empty session (header version 3); returns its id (a new UUID unless given). A
        session of that id raises :class:`SessionExistsError`, or with ``exist_ok`` is left as it is
        (race-free: of concurrent creates of one id, from any thread or process, one creates it)."""
        made = now_ms()
        header = new_header(cwd=cwd, session_id=session_id, parent_session=parent_session,
                            timestamp=timestamp or iso_string(made))
        try:
            return self.insert_session(header, [], made_ms=made).session_id
        except SessionExistsError:
            if not exist_ok:
                raise
            return str(header["id"])

    def delete_session(self, session_id: str, *, remember_source: bool = True,
                       expected_leaf: str | _Unset | None = UNSET) -> None:
        """Remove the session and all its entries in one transaction (also a session that raw SQL
        marked as deleting, which readers no longer see). A synced session's file is remembered as
        deleted, so that a sync does not import it again unless asked (``remember_source=False``:
        not remembered; a prune, whose file is gone). ``expected_leaf``: raise
        :class:`LeafConflictError` and delete nothing unless the leaf is still that entry (``None``: no
        leaf), checked under the same lock as the delete."""
        with self.backend.write() as tx:
            row = _head(tx, session_id, lock=True)
            if row is None:
                raise SessionNotFoundError(session_id)
            if not isinstance(expected_leaf, _Unset) and expected_leaf != row.leaf_id:
                raise LeafConflictError(session_id, expected_leaf, row.leaf_id)
            source = tx.source(row.key) if remember_source else None  # (its path in stored form)
            tx.delete_session(row.key)
            if source is not None:
                tx.put_deleted_source(source.path, to_db(session_id), now_iso())

    def deleted_sources(self) -> dict[str, str]:
        """Path -> session id of each file whose synced session was deleted (:meth:`delete_session`)."""
        with self.backend.read() as tx:
            return {from_db(path): from_db(sid) for path, sid in tx.deleted_sources().items()}

    @restores_archived
    def append_entry(
        self,
        session_id: str,
        fields: Json,
        *,
        expected_leaf: str | _Unset | None = UNSET,
        parent_id: str | _Unset | None = UNSET,
        entry_id: str | None = None,
    ) -> str:
        """Append an entry (``fields`` holds ``type`` and the type's fields) as a child of the leaf
        (or of ``parent_id``), move the leaf to it, and return its id.

        ``expected_leaf``: raise :class:`LeafConflictError` and write nothing unless the session's
        leaf is still that entry (``None``: no leaf). The rules of the entry's kind that read the session
        (``models.kinds.check_in_transaction``) run inside the transaction, before anything is written,
        and may refuse it. A given ``entry_id`` that the session has raises :class:`EntryIdTakenError`."""
        if entry_id is not None and not entry_id:
            raise InvalidInputError("an entry id must be a non-empty string")
        return self._append(session_id, [fields], expected_leaf, parent_id, entry_id).entries[0][0]

    @restores_archived
    def append_entries(
        self, session_id: str, fields: Sequence[Json], *, expected_leaf: str | _Unset | None = UNSET,
        placed: bool = False,
    ) -> AppendResult:
        """Append entries as a chain at the leaf (each the child of the one before), in one transaction:
        all of them, contiguous in the session's order, or (on any error, a cancelled call included)
        none. Each is checked as :meth:`append_entry` checks one (an error names its place when
        ``placed``: ``entries[3]: ...``).

        ``placed``: each of ``fields`` may carry its own ``id`` (a non-empty string), ``parentId`` and
        ``timestamp``. A given ``parentId`` must be the leaf (first entry) or the entry before it in the
        batch, else :class:`LeafConflictError` with the current leaf. Given ids make the call idempotent:
        when every entry has a given id that the session holds with the line this call would store (an
        omitted ``parentId`` or ``timestamp`` compares as the stored one), nothing is written and the
        result has ``written=False`` (this is checked before ``expected_leaf``, which a first call that
        succeeded has moved); any other batch naming an id the session holds raises
        :class:`DuplicateIdError`."""
        if not fields:
            with self.backend.read() as tx:
                row = _head(tx, session_id, lock=False)
                if row is None or row.deleting:
                    raise SessionNotFoundError(session_id)
                leaf = row.leaf_id
            if not isinstance(expected_leaf, _Unset) and expected_leaf != leaf:
                raise LeafConflictError(session_id, expected_leaf, leaf)
            return AppendResult([], leaf, written=False)
        return self._append(session_id, fields, expected_leaf, UNSET, None, placed=placed)

    def _append(
        self,
        session_id: str,
        fields: Sequence[Json],
        expected_leaf: str | _Unset | None,
        parent_id: str | _Unset | None,
        entry_id: str | None,
        *,
        placed: bool = False,
    ) -> AppendResult:
        # (imported here: building the pydantic models is a writer's cost, not every reader's)
        from pydantic import ValidationError

        from sessionstore.models.kinds import parse_entry
        from sessionstore.models.problems import format_validation_error

        written_ms = now_ms()  # the append's time: the entries' timestamp unless given, and its activity
        entries: list[Json] = []
        places: list[_Place] = []
        for index, one in enumerate(fields):
            where = f"entries[{index}]: " if placed else ""
            kind = one.get("type")
            if not isinstance(kind, str) or kind == "session":
                raise InvalidInputError(f"{where}an entry needs a string 'type' other than 'session', got {kind!r}")
            place = _Place.of(one, where) if placed else _Place()
            entry: Json = {"type": kind, "id": place.id or entry_id or random_entry_id(), "parentId": None,
                           "timestamp": iso_string(written_ms)}
            entry.update((k, v) for k, v in one.items() if k not in ("type", "id", "parentId"))
            try:  # before the transaction: the shape does not depend on the parent (a string or None)
                parse_entry(entry)
            except ValidationError as exc:
                problem = format_validation_error(exc, tagged=True)  # (the kind's tag leads every location)
                raise InvalidInputError(f"{where}bad {kind!r} entry: {problem}") from None
            entries.append(entry)
            places.append(place)
        given = [p.id for p in places if p.id is not None]
        if len(set(given)) != len(given):
            raise InvalidInputError(f"the batch gives one entry id twice: {sorted(given)}")
        # The ids are checked by the insert itself (the unique constraint), not by a query before it;
        # generated ids of which one is taken are drawn again (full UUIDs after 100 collisions).
        for attempt in range(101):
            try:
                return self._append_once(session_id, entries, places, expected_leaf, parent_id, written_ms, placed)
            except DuplicateIdError:  # (a given id: no other draw helps)
                raise
            except EntryIdTakenError:
                if entry_id is not None:
                    raise EntryIdTakenError(f"session {session_id!r} already has an entry {entry_id!r}") from None
                for entry, place in zip(entries, places, strict=True):
                    if place.id is None:
                        entry["id"] = random_entry_id() if attempt < 99 else str(uuid.uuid4())
        raise StoreError(f"session {session_id!r}: no free entry id after 101 attempts")

    def _append_once(
        self,
        session_id: str,
        entries: list[Json],
        places: list[_Place],
        expected_leaf: str | _Unset | None,
        parent_id: str | _Unset | None,
        written_ms: int,
        placed_batch: bool,
    ) -> AppendResult:
        from sessionstore.models.kinds import check_in_transaction

        with self.backend.write() as tx:
            row = _head(tx, session_id, lock=True)
            if row is None or row.deleting:
                raise SessionNotFoundError(session_id)
            head = SessionHead(row.key, session_id, row.leaf_id, row.leaf_facts, _stats(row))
            if any(place.id is not None for place in places):
                done = _already_stored(tx, head, entries, places)
                if done is not None:
                    return done
            if not isinstance(expected_leaf, _Unset) and expected_leaf != head.leaf_id:
                raise LeafConflictError(session_id, expected_leaf, head.leaf_id)
            parent_facts = head.leaf_facts
            if isinstance(parent_id, _Unset):
                parent = head.leaf_id
            else:
                parent = parent_id
                parent_facts = None if parent is None else self._facts(tx, head.key, session_id, parent)
            texts_before = (head.stats.name, head.stats.first_message)
            usage = UsageBuckets()
            placed: list[tuple[str, str | None]] = []
            for index, (entry, place) in enumerate(zip(entries, places, strict=True)):
                if not isinstance(place.parent_id, _Unset) and place.parent_id != parent:
                    raise LeafConflictError(session_id, place.parent_id, head.leaf_id)
                entry["parentId"] = parent
                view = AppendView(tx, head, parent_facts)
                check_in_transaction(view, entry, where=f"entries[{index}]: " if placed_batch else "")
                seq = head.stats.entry_count
                kept_depth = None
                if is_compaction(entry):
                    kept = view.facts_on_path(entry.get("firstKeptEntryId"))
                    kept_depth = None if kept is None else kept.depth
                facts = facts_for(entry, seq, parent_facts, kept_depth)
                head.stats.add(entry)
                parent_seq = None if parent_facts is None else parent_facts.seq
                tx.insert_entry(entry_row(head.key, entry, facts, parent_seq, stored_payload(entry)))
                # (no search row: the index follows the committed entries, catalog.search.catch_up)
                usage.add(entry, usage_of(entry))
                placed.append((entry["id"], parent))
                parent, parent_facts = entry["id"], facts
            texts_changed = (head.stats.name, head.stats.first_message) != texts_before
            tx.add_usage(usage.rows(head.key))
            head.stats.touch(written_ms)  # an append through the API is activity now (or at the entry's time if later)
            tx.update_head(_head_update(head.key, parent, parent_facts, head.stats), texts_changed=texts_changed)
            return AppendResult(placed, parent, written=True)

    def set_leaf(self, session_id: str, entry_id: str | None, *, expected_leaf: str | _Unset | None = UNSET) -> None:
        """Move the leaf to ``entry_id`` (``None``: before the first entry); the move is activity (now).
        Nothing else changes."""
        with self.backend.write() as tx:
            row = _head(tx, session_id, lock=True)
            if row is None or row.deleting:
                raise SessionNotFoundError(session_id)
            if not isinstance(expected_leaf, _Unset) and expected_leaf != row.leaf_id:
                raise LeafConflictError(session_id, expected_leaf, row.leaf_id)
            facts = None if entry_id is None else self._facts(tx, row.key, session_id, entry_id)
            tx.set_leaf(row.key, None if entry_id is None else to_db(entry_id), facts,
                        active_ms=later_activity(row.active_ms, now_ms()))


@dataclass(frozen=True, slots=True)
class _Place:
    """Where a batch's entry object says it goes: its own ``id`` and ``parentId`` (``UNSET``: not given),
    and whether it gives its ``timestamp``."""

    id: str | None = None
    parent_id: str | _Unset | None = UNSET
    timestamp: bool = False

    @classmethod
    def of(cls, entry: Json, where: str) -> _Place:
        entry_id = entry.get("id", None)
        if entry_id is not None and (not isinstance(entry_id, str) or not entry_id):
            raise InvalidInputError(f"{where}id: an entry id must be a non-empty string, got {entry_id!r}")
        parent: str | _Unset | None = UNSET
        if "parentId" in entry:
            parent = entry["parentId"]
            if parent is not None and (not isinstance(parent, str) or not parent):
                raise InvalidInputError(f"{where}parentId: must be null or a non-empty string, got {parent!r}")
        return cls(entry_id, parent, "timestamp" in entry)


def _already_stored(tx: Tx, head: SessionHead, entries: list[Json], places: list[_Place]) -> AppendResult | None:
    """The result of a batch whose entries the session already holds exactly (a retry); ``None`` when it
    holds none of the given ids. Raises :class:`DuplicateIdError` for any other batch naming a held id."""
    texts = [None if place.id is None else tx.payload(head.key, to_db(place.id)) for place in places]
    if all(text is None for text in texts):
        return None
    previous: str | None = None
    result: list[tuple[str, str | None]] = []
    for entry, place, text in zip(entries, places, texts, strict=True):
        if text is None:
            held = next(p.id for p, t in zip(places, texts, strict=True) if t is not None)
            raise DuplicateIdError(f"session {head.id!r} already has an entry {held!r}, and the batch's entry "
                                   f"{entry['id']!r} is new: the batch is not a retry of one append")
        old = dict(json_loads(text))
        parent = (old.get("parentId") if not result else previous) if isinstance(place.parent_id, _Unset) \
            else place.parent_id
        candidate = {**entry, "parentId": parent}
        if not place.timestamp:
            candidate["timestamp"] = old.get("timestamp")
        if not _same_line(candidate, text):
            raise DuplicateIdError(f"session {head.id!r} already has an entry {entry['id']!r} with other content")
        result.append((entry["id"], old.get("parentId")))
        previous = entry["id"]
    return AppendResult(result, head.leaf_id, written=False)


def _same_line(candidate: Json, text: str) -> bool:
    """Whether ``candidate`` stores as ``text`` (a context edit's string content also as the text block its
    check makes of it for assistant and toolResult targets)."""
    if stored_payload(candidate) == text:
        return True
    replacement = candidate.get("replacement")
    if candidate.get("type") == "context_edit" and isinstance(replacement, dict) \
            and isinstance(replacement.get("content"), str):
        blocks = {**replacement, "content": [{"type": "text", "text": replacement["content"]}]}
        return stored_payload({**candidate, "replacement": blocks}) == text
    return False


@dataclass(slots=True)
class _Written:
    """What :func:`_write_entries` wrote: the last entry's id and facts (``None`` when none)."""

    last_id: str | None = None
    last_facts: NodeFacts | None = None


def _write_entries(
    tx: Tx,
    key: int,
    new_entries: Iterable[Json | tuple[Json, str]],
    index: TreeIndex,
    stats: SessionStats,
    *,
    progress: Callable[[], None] | None = None,
    source_name: str = "<entries>",
    sink: AbstractContextManager[EntrySink] | None = None,
) -> _Written:
    """Write ``new_entries`` (in append order) into session ``key`` through the bulk sink of ``tx``:
    each entry's row with its facts from ``index``, its search row, and its usage, folded into
    ``stats`` (the caller writes the session row). The one home of an import's per-entry work: an
    import and a sync's incremental append both write through it, so their rows cannot differ.
    ``sink``: where the rows go (default: the transaction's bulk sink, a ``COPY`` on PostgreSQL)."""
    usage = UsageBuckets()
    written = _Written()
    # A bulk write indexes its own entries when the session's search rows reach them (a new session's
    # do); else, or with the index off, catalog.search.catch_up indexes them later.
    indexing = tx.search_mark(key) == stats.entry_count
    with sink if sink is not None else tx.bulk_sink() as rows:
        for item in new_entries:
            entry, text = item if isinstance(item, tuple) else (item, None)
            try:
                facts, parent_seq = index.add(entry)
            except ValueError as exc:
                raise InvalidInputError(f"{source_name}: entry {entry['id']!r}: {exc}") from None
            stats.add(entry)
            usage.add(entry, usage_of(entry))
            written.last_id = entry["id"]
            written.last_facts = facts
            payload = text if text is not None else stored_payload(entry)
            rows.add(entry_row(key, entry, facts, parent_seq, payload),
                     search_row(key, facts.seq, entry) if indexing else None)
            if progress is not None and len(index) % PROGRESS_EVERY == 0:
                progress()
    if progress is not None:
        progress()
    tx.add_usage(usage.rows(key))
    if indexing:
        tx.put_search_mark(key, stats.entry_count)
    return written


@dataclass(slots=True)
class _Reading:
    """The file a sync is storing, and its reader once there is one."""

    name: str
    reader: SessionFileReader | None = None


@contextmanager
def _failing_at_line(reading: _Reading) -> Iterator[None]:
    """An unexpected exception while a synced file is stored becomes that file's :class:`JsonlError`
    at the line read last. Wrapped around the transaction: the database's errors, which the backend
    translates as the transaction ends, pass as they are."""
    try:
        yield
    except (SessionStoreError, OSError):
        raise
    except Exception as exc:
        message = str(exc).strip()
        reason = f"cannot be stored ({type(exc).__name__}{': ' + message if message else ''})"
        line = reading.reader.consumed_lines if reading.reader is not None else None
        raise JsonlError(reading.name, line or None, reason) from exc


@dataclass(frozen=True, slots=True)
class SourceResult:
    """A synced file: its session, the entries written, and its source row as recorded."""

    session_id: str
    entries: int
    source: SourceInfo


class _BatchedRows:
    """An entry sink that inserts through ``Tx.insert_entries`` every ``PROGRESS_EVERY`` rows."""

    def __init__(self, tx: Tx) -> None:
        self._tx = tx
        self._rows: list[EntryRow] = []
        self._search: list[SearchRow] = []

    def add(self, row: EntryRow, search: SearchRow | None = None) -> None:
        self._rows.append(row)
        if search is not None:
            self._search.append(search)
        if len(self._rows) >= PROGRESS_EVERY:
            self.flush()

    def flush(self) -> None:
        self._tx.insert_entries(self._rows, self._search)
        self._rows, self._search = [], []

    def __enter__(self) -> _BatchedRows:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if kind is None:
            self.flush()


class _StoredEntries:
    """The entries a session has (an incremental sync's parents), looked up by id in ``tx``, each once."""

    def __init__(self, tx: Tx, key: int) -> None:
        self._tx = tx
        self._key = key
        self._facts: dict[str, NodeFacts | None] = {}

    def facts(self, entry_id: str) -> NodeFacts | None:
        if entry_id not in self._facts:
            self._facts[entry_id] = self._tx.facts(self._key, to_db(entry_id))
        return self._facts[entry_id]

    def has(self, entry_id: str) -> bool:
        return self.facts(entry_id) is not None

    def on_path(self, leaf_seq: int, target: NodeFacts) -> bool:
        return self._tx.on_path(self._key, leaf_seq, target)


def _check_owner(source: SourceRow | None, path: str, session_id: str, *, adopt: bool) -> None:
    """Whether the file at ``path`` may take over the stored session ``session_id`` (else raises)."""
    if source is None:
        if not adopt:
            raise SourceConflictError(
                f"{path}: session {session_id} is in the database and was not synced from this file"
                " (sync --adopt replaces it with the file)")
        return
    other = source.path
    if other != path and os.path.lexists(other):
        raise SourceConflictError(f"{path}: session {session_id} is synced from {other}, which still exists")


def replaced_path(path: str, old_id: str, new_id: str) -> str:
    """The recorded path of session ``old_id`` once its file holds session ``new_id``: a name no sync
    finds, so the session counts as a source gone (kept; a prune removes it), and a file naming it
    elsewhere takes it over as a moved file does. Unique: it names the session whose row holds it."""
    return f"{path} (session {old_id} replaced by {new_id})"


def _facts_after(after: HeadRow | None, stat: FileStat, *, from_file: int | None = -1) -> SourceFacts:
    """The facts of a source row once a sync wrote its session (``after``): ``from_file`` entries came
    from the file (``-1``: all of them, an import; ``None``: not known, a row from before it was counted)."""
    count = after.entry_count if after is not None else 0
    leaf = after.leaf_seq if after is not None and after.leaf_seq is not None else -1
    return SourceFacts(count if from_file == -1 else from_file, leaf, stat.ino, stat.ctime_ns)


def _refuse_local_changes(head: HeadRow, source: SourceInfo, path: str, session_id: str) -> None:
    """Raises :class:`SourceConflictError` when the stored session ``head`` holds what its file
    (``source``, as last synced) did not give: entries appended in the database (``append``, ``label``,
    ``name``, ``compact``) or a leaf moved there (``branch``), which a re-import of the file would lose."""
    facts = source.facts
    local = head.entry_count - facts.entries if facts.entries is not None else 0
    leaf = head.leaf_seq if head.leaf_seq is not None else -1
    moved = leaf != (facts.leaf_seq if facts.leaf_seq is not None else head.entry_count - 1)
    if local <= 0 and not moved:
        return
    # Entries added move the leaf too: the leaf is named alone only when it is all there is.
    what = f"{_entries(local)} not from its file" if local > 0 else "its leaf moved in the database (a branch)"
    raise SourceConflictError(
        f"{path}: session {session_id} has {what}; re-importing the file would lose that (sessionstore export"
        f" {session_id} keeps a copy; sync --adopt replaces the session with the file)")


def _entries(n: int) -> str:
    return f"{n} entry" if n == 1 else f"{n} entries"


def _source_row(
    key: int, path: str, stat: FileStat, reader: SessionFileReader, head_digest: str, version: int, *,
    prefix: str, facts: SourceFacts, previous: SourceInfo | None = None,
) -> SourceRow:
    """The source row after ``reader`` consumed what it read (``previous``: the row it continued;
    ``prefix``: the digest of the consumed prefix); text as it is (:func:`stored` gives the row to store)."""
    if reader.last_line or previous is None:
        tail_bytes, tail_digest = len(reader.last_line), line_digest(reader.last_line)
    else:  # nothing complete was added: the last consumed line is the one before
        tail_bytes, tail_digest = previous.tail_bytes, split_check(previous.check)[1]
    head_bytes = previous.head_bytes if previous is not None else len(reader.first_line)
    return SourceRow(key, path, stat.size, stat.mtime_ns, reader.consumed_bytes, reader.consumed_lines,
                     head_bytes, tail_bytes, f"{head_digest}:{tail_digest}:{prefix}{facts.encode()}", version,
                     encode_dangling(reader.awaited), now_iso())


STREAM_PAGE = 2_000
"""Entries per page of a streamed read (a range of seqs, read in one statement)."""


@dataclass(slots=True)
class StreamedSlice:
    """:class:`ContextSlice` whose path is streamed: ``entries`` yields each entry of the path from the
    context's start to the leaf with whether it is ``compaction`` (the path's last compaction, given
    here too, decoded); ``edit_entries`` are the slice's ``context_edit`` entries in path order."""

    leaf_id: str | None
    compaction: Json | None
    thinking_entry: Json | None
    model_entry: Json | None
    edit_entries: list[Json]
    entries: Iterator[tuple[Json, bool]]


class ContextTexts(NamedTuple):
    """:class:`ContextSlice` as stored: each entry's JSON text (``str``, or ``bytes`` of UTF-8 where the
    driver gives them undecoded)."""

    leaf_id: str | None
    path: list[str] | list[bytes]
    thinking_entry: str | bytes | None
    model_entry: str | bytes | None


def _payloads_in_order(tx: Tx, key: int, wanted: Iterator[int]) -> Iterator[Json]:
    """The decoded payloads of the seqs ``wanted`` yields, in that order: consecutive seqs are read as one
    range, at most ``STREAM_PAGE`` at a time."""
    pending: list[int] = []

    def flush() -> Iterator[Json]:
        first, last = pending[0], pending[-1]
        by_seq = dict(tx.payloads_between(key, first, last))
        for seq in pending:
            yield json_loads(by_seq[seq])
        pending.clear()

    for seq in wanted:
        if pending and (seq != pending[-1] + 1 or len(pending) >= STREAM_PAGE):
            yield from flush()
        pending.append(seq)
    if pending:
        yield from flush()


def stored_payload(entry: Json) -> str:
    """Stored JSON text of an entry: the line pi would write (exports give it back verbatim). Raises
    :class:`InvalidInputError` for what is not JSON data or nests deeper than the import limit."""
    too_deep = InvalidInputError(
        f"a {entry.get('type')!r} entry nested deeper than {MAX_JSON_DEPTH} levels (or holding itself)"
    )
    try:
        text = dump_line(entry, finite_only=True)[:-1].decode("utf-8")
    except RecursionError:
        raise too_deep from None
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"a {entry.get('type')!r} entry is not JSON data: {exc}") from None
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and not within_json_depth(entry):
        raise too_deep
    if DIGITS_KEY_TEXT.search(text):  # (a JavaScript object holds its array-index keys first, as pi writes them)
        text = dump_line(in_js_key_order(copy.deepcopy(entry)), finite_only=True)[:-1].decode("utf-8")
    return text


def _decoded(text: str | bytes | None) -> Json | None:
    return None if text is None else dict(json_loads(text))


def _head(tx: Tx, session_id: str, *, lock: bool) -> HeadRow | None:
    """Session ``session_id``'s row as a write sees it (text read back), ``None`` when there is none."""
    return loaded(tx.head(to_db(session_id), lock=lock))


def _head_update(key: int, leaf_id: str | None, leaf: NodeFacts | None, stats: SessionStats) -> HeadUpdate:
    """The session row after a write: ``leaf_id`` with its facts, and ``stats``'s columns."""
    return stored(HeadUpdate(key=key, leaf_id=leaf_id, leaf=leaf, **stats.columns()))


def _stats(row: HeadRow) -> SessionStats:
    """The session's folded columns as its row holds them."""
    return SessionStats(**{column: getattr(row, column) for column in SessionStats.COLUMNS})


LEAF_KEY = "leafId"
"""The header field in which an export records a leaf that is not the last entry (pi ignores it)."""


def _leaf_hint(given: Any) -> str | _Unset | None:
    """The leaf an import takes from the header's ``leafId`` value ``given``: an entry id (used when it
    names an imported entry) or ``None`` (no leaf); :data:`UNSET` (the last entry) for anything else."""
    return given if isinstance(given, str) or given is None else UNSET


def export_header_line(
    header_text: str, *, leaf_id: str | None, last_id: str | None, names_entry: Callable[[str], bool]
) -> bytes:
    """The header line of an export: the stored line as it is (an imported v3 file's own, byte for
    byte, with its ``leafId`` and unknown fields) when importing it gives the session's leaf back;
    else the line with ``leafId`` set to the leaf, in its place when the line has one. ``names_entry``:
    whether an id names an entry of the session."""
    header = json_loads(header_text)
    hint = _leaf_hint(header.get(LEAF_KEY, UNSET)) if isinstance(header, dict) else UNSET
    leaf = leaf_id
    if isinstance(hint, str) and hint != leaf and not names_entry(hint):
        hint = UNSET
    if (last_id if isinstance(hint, _Unset) else hint) == leaf:
        return header_text.encode("utf-8") + b"\n"
    header[LEAF_KEY] = leaf
    return dump_line(header)


def new_header(
    *, cwd: str, session_id: str | None = None, parent_session: str | None = None, timestamp: str | None = None
) -> Json:
    """A v3 session header as pi writes it (a new UUID and the current time unless given)."""
    header: Json = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": session_id or str(uuid.uuid4()),
        "timestamp": timestamp or iso_string(now_ms()),
        "cwd": cwd,
    }
    if parent_session is not None:
        header["parentSession"] = parent_session
    return header


def _new_session(header: Json, header_text: str | None = None) -> NewSession:
    """The session row of a new session (the header as ``header_text`` gives it, the file's own line,
    else as pi writes it)."""
    def text(key: str) -> str:
        value = header.get(key)
        return value if isinstance(value, str) else ""

    parent = header.get("parentSession")
    return stored(NewSession(
        id=str(header["id"]),
        version=CURRENT_VERSION,
        cwd=text("cwd"),
        created=text("timestamp"),
        parent_session=parent if isinstance(parent, str) else None,
        header=header_text if header_text is not None else dump_line(header)[:-1].decode(),
    ))


def _info(stored_row: SessionRow) -> SessionInfo:
    row = loaded(stored_row)
    return SessionInfo(
        id=row.id,
        cwd=row.cwd,
        created=row.created,
        name=row.name,
        parent_session=row.parent_session,
        leaf_id=row.leaf_id,
        entry_count=int(row.entry_count),
        message_count=int(row.message_count),
        first_message=row.first_message,
        modified_ms=listing_modified_ms(row.modified_ms, row.created),
        source_path=row.source_path,
        active_ms=int(row.active_ms),
    )

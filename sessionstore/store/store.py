"""``EntryStore``: sessions as append-only entry trees in SQLite or PostgreSQL.

Every write is one transaction (``BEGIN IMMEDIATE`` on SQLite, a row lock on the session on
PostgreSQL), so appends to one session are serialised and a failed import leaves nothing behind.
No method updates or deletes an entry; the database refuses it too (``delete_session`` aside).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO, Any, Final, Self

from pydantic import ValidationError
from sqlalchemy import ColumnElement, Connection, Engine, func, select
from sqlalchemy.exc import SQLAlchemyError

from sessionstore.errors import (
    EntryNotFoundError,
    InvalidInputError,
    LeafConflictError,
    SessionExistsError,
    SessionNotFoundError,
    StoreError,
)
from sessionstore.models import js
from sessionstore.models.entries import parse_entry, random_entry_id
from sessionstore.models.frozen import MAX_JSON_DEPTH
from sessionstore.models.js import MISSING
from sessionstore.models.timestamps import now_iso
from sessionstore.store import migrate
from sessionstore.store.bulk import INSERT_BATCH, RowSink
from sessionstore.store.dbtext import from_db, to_db
from sessionstore.store.engine import (
    Durability,
    decode_payloads,
    default_url,
    json_loads,
    make_engine,
)
from sessionstore.store.facts import ENTRY_COLUMNS, NodeFacts, SessionStats, TreeIndex, entry_values, facts_for
from sessionstore.store.pgcopy import copy_payloads_out
from sessionstore.store.rawtx import RawTx, entry_id_taken, raw_write
from sessionstore.store.schema import entries, sessions
from sessionstore.validate import Diagnostic
from sessionstore.wire.jsonl import (
    CURRENT_VERSION,
    SessionFileReader,
    SkippedLine,
    dump_line,
    format_validation_error,
    within_json_depth,
)

Json = dict[str, Any]


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()


_WALK_UP = """
    WITH RECURSIVE path(seq, parent_seq, depth) AS (
        SELECT seq, parent_seq, depth FROM entries WHERE session_id = :sid AND seq = :leaf
        UNION ALL
        SELECT e.seq, e.parent_seq, e.depth FROM entries e
        JOIN path p ON e.session_id = :sid AND e.seq = p.parent_seq
        WHERE p.depth > :stop
    )
"""
"""Walk ``parentId`` up from the entry ``:leaf`` to depth ``:stop`` (0: the root)."""
_PATH_RAW = _WALK_UP + """
    SELECT e.seq, e.{payload_text} FROM path JOIN entries e ON e.session_id = :sid AND e.seq = path.seq
    ORDER BY path.depth
"""
"""The root-to-leaf path (or its tail from depth ``:stop``) in one recursive query from the leaf;
payloads come back as JSON text and are decoded with orjson."""
_EXPORT = "SELECT {payload_text} FROM entries WHERE session_id = :sid ORDER BY seq"
_EXPORT_HEADER = (
    "SELECT {header_text}, leaf_id, deleting,"
    " (SELECT entry_id FROM entries WHERE session_id = :sid ORDER BY seq DESC LIMIT 1){steer}"
    " FROM sessions WHERE id = :sid"
)
"""An export's header, leaf and last entry id, in one statement (see ``_export_header_sql``)."""


def _export_header_sql(dialect: str) -> str:
    """``_EXPORT_HEADER`` for ``dialect``. PostgreSQL also steers the export's COPY to the primary key
    (session_id, seq), which gives the rows in order, for this transaction: without fresh statistics
    (right after imports) the planner scanned the whole table and sorted (15 ms for a 1,000-entry
    session next to a 20,000-entry one)."""
    if dialect == "postgresql":
        steer = ", set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true)"
        return _EXPORT_HEADER.format(header_text="header::text", steer=steer)
    return _EXPORT_HEADER.format(header_text="header", steer="")


_PAYLOAD_BY_SEQ = "SELECT {payload_text} FROM entries WHERE session_id = :sid AND seq = :seq"
_ANCESTOR_RAW = _WALK_UP + "SELECT count(*) FROM path WHERE seq = :target"
_HEAD = (
    "SELECT leaf_id, entry_count, message_count, name, first_message, modified_ms, deleting,"
    " leaf_seq, leaf_depth, leaf_ctx_depth, leaf_compaction_seq, leaf_model_seq, leaf_thinking_seq"
    " FROM sessions WHERE id = :sid"
)
_FACTS_BY_ID = (
    "SELECT seq, depth, ctx_depth, compaction_seq, model_seq, thinking_seq FROM entries"
    " WHERE session_id = :sid AND entry_id = :eid"
)
_SEQ_DEPTH_BY_ID = "SELECT seq, depth FROM entries WHERE session_id = :sid AND entry_id = :eid"
_SET_LEAF = (
    "leaf_id = :leaf_id, leaf_seq = :leaf_seq, leaf_depth = :leaf_depth, leaf_ctx_depth = :leaf_ctx_depth,"
    " leaf_compaction_seq = :leaf_compaction_seq, leaf_model_seq = :leaf_model_seq,"
    " leaf_thinking_seq = :leaf_thinking_seq"
)
_SET_COUNTS = f"{_SET_LEAF}, entry_count = :entry_count, message_count = :message_count, modified_ms = :modified_ms"
_UPDATE_HEAD = f"UPDATE sessions SET {_SET_COUNTS}, name = :name, first_message = :first_message WHERE id = :sid"
_UPDATE_HEAD_COUNTS = f"UPDATE sessions SET {_SET_COUNTS} WHERE id = :sid"
"""``_UPDATE_HEAD`` for an append that changed neither the name nor the first message: those text
columns are not rewritten (a long first prompt would otherwise be copied, and on PostgreSQL
compressed into TOAST again, by every append)."""


def _leaf_columns(leaf_id: str | None, facts: NodeFacts | None) -> Json:
    """The session row's leaf columns (see ``_SET_LEAF``): the leaf's id and its entry's facts."""
    if facts is None or leaf_id is None:
        return {"leaf_id": None, "leaf_seq": None, "leaf_depth": None, "leaf_ctx_depth": None,
                "leaf_compaction_seq": None, "leaf_model_seq": None, "leaf_thinking_seq": None}
    return {"leaf_id": to_db(leaf_id), "leaf_seq": facts.seq, "leaf_depth": facts.depth,
            "leaf_ctx_depth": facts.ctx_depth,
            "leaf_compaction_seq": facts.compaction_seq, "leaf_model_seq": facts.model_seq,
            "leaf_thinking_seq": facts.thinking_seq}


@dataclass(slots=True)
class SessionHead:
    """A session's row as an append sees it: its leaf, the leaf's facts and the listing columns."""

    id: str
    leaf_id: str | None
    leaf_facts: NodeFacts | None
    stats: SessionStats


@dataclass(frozen=True, slots=True)
class ImportResult:
    """An imported file: its session, the entries stored, the lines skipped (lenient mode) and what
    was read tolerantly, as pi reads it (entry-code diagnostics, in file order)."""

    session_id: str
    entries: int
    skipped: tuple[SkippedLine, ...] = ()
    leaf_id: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()

    def to_json(self) -> Json:
        return {
            "sessionId": self.session_id,
            "entries": self.entries,
            "skipped": [s.to_json() for s in self.skipped],
            "leafId": self.leaf_id,
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    cwd: str
    created: str
    name: str | None
    parent_session: str | None
    leaf_id: str | None
    entry_count: int
    message_count: int
    first_message: str | None
    modified_ms: int | None

    def to_json(self) -> Json:
        return {
            "id": self.id,
            "cwd": self.cwd,
            "name": self.name,
            "created": self.created,
            "modified": self.modified_ms,
            "parentSession": self.parent_session,
            "leafId": self.leaf_id,
            "entries": self.entry_count,
            "messageCount": self.message_count,
            "firstMessage": self.first_message,
        }


@dataclass(slots=True)
class TreeNode:
    entry: Json
    children: list[TreeNode] = field(default_factory=list)
    label: str | None = None
    on_active_path: bool = False

    def to_json(self) -> Json:
        """``{"entry", "onActivePath", "label"?, "children": [...]}``, built with an explicit stack (a
        session's tree is as deep as its longest branch: thousands of entries)."""

        def shell(node: TreeNode) -> Json:
            out: Json = {"entry": node.entry, "onActivePath": node.on_active_path}
            if node.label is not None:
                out["label"] = node.label
            out["children"] = []
            return out

        root = shell(self)
        stack: list[tuple[TreeNode, Json]] = [(self, root)]
        while stack:
            node, out = stack.pop()
            for child in node.children:
                child_out = shell(child)
                out["children"].append(child_out)
                stack.append((child, child_out))
        return root


@dataclass(slots=True)
class LabelState:
    """Labels as pi 1.6 resolves them (``labelsById``/``labelTimestampsById``): label entries in file
    order; a truthy ``label`` sets the target's label (a target set again keeps its place in the
    map), any other clears it (a later set puts the target at the end)."""

    current: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """target id -> (label, timestamp of the entry that set it; MISSING when it has none)."""

    def add(self, entry: Json) -> None:
        if entry.get("type") != "label" or not isinstance(entry.get("targetId"), str):
            return
        label = entry.get("label", MISSING)
        if js.truthy(label):
            self.current[entry["targetId"]] = (label, entry.get("timestamp", MISSING))
        else:
            self.current.pop(entry["targetId"], None)


@dataclass(slots=True)
class ContextSlice:
    """What resuming at a leaf needs: the path tail and the entries that set thinking level/model."""

    leaf_id: str | None
    path: list[Json]
    thinking_entry: Json | None
    model_entry: Json | None


class EntryStore:
    """A session store on ``url`` (default: ``$SESSIONSTORE_DB``, else SQLite in the user data dir).

    SQLite databases that are new or behind are upgraded on open; PostgreSQL schemas are upgraded
    only by ``sessionstore db upgrade`` (an outdated one raises :class:`~sessionstore.errors.SchemaError`).
    """

    def __init__(self, url: str | None = None, *, durability: Durability = "full", upgrade: bool | None = None) -> None:
        self.url = url or default_url()
        self.engine: Engine = make_engine(self.url, durability=durability)
        self.dialect = self.engine.dialect.name
        auto = self.dialect == "sqlite" if upgrade is None else upgrade
        try:
            migrate.ensure_schema(self.engine, auto_upgrade=auto)
        except SQLAlchemyError as exc:
            self.engine.dispose()
            raise StoreError(f"cannot open {self.engine.url.render_as_string(hide_password=True)}: {exc}") from exc
        except BaseException:
            self.engine.dispose()
            raise

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions --------------------------------------------------------------------------
    @contextmanager
    def _read(self) -> Iterator[Connection]:
        try:
            with self.engine.connect() as conn, conn.begin():
                yield conn
        except SQLAlchemyError as exc:
            raise StoreError(f"database error: {exc}") from exc

    def _session_row(self, conn: Connection, session_id: str) -> Any:
        row = conn.execute(select(sessions).where(sessions.c.id == to_db(session_id))).first()
        if row is None or row.deleting:
            raise SessionNotFoundError(session_id)
        return row

    def _seq_of(self, conn: Connection, session_id: str, entry_id: str) -> int:
        seq = conn.execute(
            select(entries.c.seq).where(
                entries.c.session_id == to_db(session_id), entries.c.entry_id == to_db(entry_id)
            )
        ).scalar()
        if seq is None:
            raise EntryNotFoundError(session_id, entry_id)
        return int(seq)

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
        reader = SessionFileReader(source, lenient=lenient)
        try:
            header = reader.header
            given = header.pop("leafId", UNSET)  # written by export_jsonl; pi ignores it
            leaf_hint = given if isinstance(given, str) or given is None else UNSET
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
    ) -> ImportResult:
        """Create a session from a header and entries in append order (each parent before its
        children), in one transaction. An item may be ``(entry, text)``: ``text`` is the entry's JSON as
        pi writes it (kept verbatim, so that export gives it back byte for byte). The leaf is
        ``leaf_id`` if given and it names an entry (or is ``None``: no leaf), else the last entry."""
        session_id = str(header["id"])
        index = TreeIndex(shared_ids)
        stats = SessionStats()
        last_id: str | None = None
        # A bulk write: SQLite checks no foreign key here (the session row comes first in this transaction
        # and every parent is checked below, before its child, in this session; the two index probes per
        # row cost about a tenth of an import). PostgreSQL keeps its checks.
        with raw_write(self.engine, bulk=True) as tx:
            existing = tx.one("SELECT deleting FROM sessions WHERE id = :sid", {"sid": to_db(session_id)})
            if existing is not None:
                if not replace and not existing[0]:  # (a session marked deleting is gone for readers)
                    raise SessionExistsError(session_id)
                self._raw_delete(tx, session_id)
            tx.execute(self._insert_session_sql, _session_values(header, header_text))
            with RowSink(tx, self._insert_sql) as sink:
                for item in new_entries:
                    entry, text = item if isinstance(item, tuple) else (item, None)
                    try:
                        facts, parent_seq = index.add(entry)
                    except ValueError as exc:
                        raise InvalidInputError(f"{source_name}: entry {entry['id']!r}: {exc}") from None
                    stats.add(entry)
                    last_id = entry["id"]
                    payload = text if text is not None else self._payload(entry)
                    sink.add(entry_values(to_db(session_id), entry, facts, parent_seq, payload))
                    if progress is not None and len(index) % INSERT_BATCH == 0:
                        progress()
            if progress is not None:
                progress()
            leaf = last_id
            if not isinstance(leaf_id, _Unset) and (leaf_id is None or leaf_id in index):
                leaf = leaf_id
            leaf_facts = None if leaf is None else index.facts(index.seq_of[leaf])
            tx.execute(_UPDATE_HEAD, {"sid": to_db(session_id), **_leaf_columns(leaf, leaf_facts), **stats.columns()})
        return ImportResult(session_id, len(index), (), leaf)

    def export_jsonl(self, session_id: str, fp: IO[bytes]) -> int:
        """Write the session as a v3 file, entries in append order; returns the entries written.

        When the leaf is not the last entry the header records it as ``leafId`` (pi ignores the field;
        ``import_jsonl`` restores the leaf from it). The stored text of each entry is written as it is
        (pi's own line for imported entries), on both backends."""
        with raw_write(self.engine, write=False) as tx:
            row = tx.one(_export_header_sql(self.dialect), {"sid": to_db(session_id)})
            if row is None or row[2]:
                raise SessionNotFoundError(session_id)
            fp.write(export_header_line(row[0], leaf_id=row[1], last_id=row[3]))
            if self.dialect == "postgresql":
                return copy_payloads_out(tx, to_db(session_id), fp)
            connection = tx.cursor.connection
            connection.text_factory = bytes  # the stored UTF-8 text, written without decoding
            try:
                tx.execute(_EXPORT, {"sid": to_db(session_id)})
                count = 0
                while rows := tx.cursor.fetchmany(4096):
                    fp.write(b"\n".join(text for (text,) in rows) + b"\n")
                    count += len(rows)
            finally:
                connection.text_factory = str
            return count

    # -- reading -------------------------------------------------------------------------------
    def session(self, session_id: str) -> SessionInfo:
        with self._read() as conn:
            return _info(self._session_row(conn, session_id))

    def header(self, session_id: str) -> Json:
        with self._read() as conn:
            return dict(self._session_row(conn, session_id).header)

    def list_sessions(self, *, cwd: str | None = None) -> list[SessionInfo]:
        """Sessions, newest first (by last message time, then creation); reads no entry payload."""
        query = select(sessions).where(sessions.c.deleting.is_(False))
        if cwd is not None:
            query = query.where(sessions.c.cwd == to_db(cwd))
        with self._read() as conn:
            rows = conn.execute(query).all()
        infos = [_info(r) for r in rows]
        infos.sort(key=lambda i: (i.modified_ms or 0, i.created), reverse=True)
        return infos

    def leaf(self, session_id: str) -> str | None:
        with self._read() as conn:
            leaf: str | None = self._session_row(conn, session_id).leaf_id
        return from_db(leaf)

    def entry(self, session_id: str, entry_id: str) -> Json:
        with self._read() as conn:
            self._session_row(conn, session_id)
            payload = conn.execute(
                select(entries.c.payload).where(
                    entries.c.session_id == to_db(session_id), entries.c.entry_id == to_db(entry_id)
                )
            ).scalar()
        if payload is None:
            raise EntryNotFoundError(session_id, entry_id)
        return payload  # type: ignore[no-any-return]

    def entries(self, session_id: str) -> list[Json]:
        """Every entry in append order (loads the whole session: for export-like work, not resume)."""
        with self._read() as conn:
            self._session_row(conn, session_id)
            return [
                p
                for (p,) in conn.execute(
                    select(entries.c.payload).where(entries.c.session_id == to_db(session_id)).order_by(entries.c.seq)
                )
            ]

    def children(self, session_id: str, entry_id: str | None) -> list[Json]:
        """Children of ``entry_id`` in append order (``None``: the roots)."""
        with self._read() as conn:
            self._session_row(conn, session_id)
            cond: ColumnElement[bool]
            if entry_id is None:
                cond = entries.c.parent_seq.is_(None)
            else:
                cond = entries.c.parent_seq == self._seq_of(conn, session_id, entry_id)
            return [
                p
                for (p,) in conn.execute(
                    select(entries.c.payload)
                    .where(entries.c.session_id == to_db(session_id), cond)
                    .order_by(entries.c.seq)
                )
            ]

    def path(self, session_id: str, leaf_id: str | _Unset | None = UNSET) -> list[Json]:
        """Entries from the root to ``leaf_id`` (default: the session's leaf), root first."""
        with raw_write(self.engine, write=False) as tx:
            _leaf, facts = self._resolve_leaf(tx, session_id, leaf_id)
            if facts is None:
                return []
            rows = tx.all(_PATH_RAW, {"sid": to_db(session_id), "leaf": facts.seq, "stop": 0})
        return decode_payloads([text for _seq, text in rows])

    def context_slice(self, session_id: str, leaf_id: str | _Unset | None = UNSET) -> ContextSlice:
        """The part of the path that the context at ``leaf_id`` needs, read in one recursive query
        bounded by the depth at which the context starts, plus the two settings entries before it."""
        with raw_write(self.engine, write=False) as tx:
            leaf, facts = self._resolve_leaf(tx, session_id, leaf_id)
            if leaf is None or facts is None:
                return ContextSlice(None, [], None, None)
            path_rows = tx.all(_PATH_RAW, {"sid": to_db(session_id), "leaf": facts.seq, "stop": facts.ctx_depth})
            on_path = {seq for seq, _text in path_rows}
            extra: dict[int, str] = {}
            for seq in (facts.thinking_seq, facts.model_seq):
                if seq is not None and seq not in on_path and seq not in extra:
                    extra[seq] = tx.scalar(_PAYLOAD_BY_SEQ, {"sid": to_db(session_id), "seq": seq})
        path = decode_payloads([text for _seq, text in path_rows])
        thinking = json_loads(extra[facts.thinking_seq]) if facts.thinking_seq in extra else None
        model = json_loads(extra[facts.model_seq]) if facts.model_seq in extra else None
        return ContextSlice(leaf, path, thinking, model)

    def tree(self, session_id: str) -> list[TreeNode]:
        """The whole tree: roots in append order, children in append order, labels resolved, and the
        active path (root to the session's leaf) marked."""
        with self._read() as conn:
            row = self._session_row(conn, session_id)
            rows = conn.execute(
                select(entries.c.seq, entries.c.parent_seq, entries.c.payload)
                .where(entries.c.session_id == to_db(session_id))
                .order_by(entries.c.seq)
            ).all()
        nodes: dict[int, TreeNode] = {}
        parent_of: dict[int, int | None] = {}
        by_id: dict[str, TreeNode] = {}
        roots: list[TreeNode] = []
        labels = LabelState()
        for seq, parent_seq, payload in rows:
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

    def labels(self, session_id: str) -> dict[str, Any]:
        """Resolved labels: target entry id -> label, over every entry in append order (any branch),
        as pi resolves them (see :class:`LabelState`)."""
        return {target: label for target, (label, _ts) in self.label_state(session_id).current.items()}

    def label_state(self, session_id: str) -> LabelState:
        """pi's label map of the session: labels in the order pi's map holds them, with the timestamp
        of the label entry that set each."""
        with self._read() as conn:
            self._session_row(conn, session_id)
            rows = conn.execute(
                select(entries.c.payload)
                .where(entries.c.session_id == to_db(session_id), entries.c.type == "label")
                .order_by(entries.c.seq)
            ).all()
        state = LabelState()
        for (payload,) in rows:
            state.add(payload)
        return state

    # -- writing -------------------------------------------------------------------------------
    def create_session(
        self,
        *,
        cwd: str,
        session_id: str | None = None,
        parent_session: str | None = None,
        timestamp: str | None = None,
    ) -> str:
        """Create an empty session (header version 3); returns its id (a new UUID unless given)."""
        header = new_header(cwd=cwd, session_id=session_id, parent_session=parent_session, timestamp=timestamp)
        return self.insert_session(header, []).session_id

    def delete_session(self, session_id: str) -> None:
        """Remove the session and all its entries in one transaction (also a session that raw SQL
        marked as deleting, which readers no longer see)."""
        lock = " FOR UPDATE" if self.dialect == "postgresql" else ""
        with raw_write(self.engine) as tx:
            if tx.one("SELECT 1 FROM sessions WHERE id = :sid" + lock, {"sid": to_db(session_id)}) is None:
                raise SessionNotFoundError(session_id)
            self._raw_delete(tx, session_id)

    def append_entry(
        self,
        session_id: str,
        fields: Json,
        *,
        expected_leaf: str | _Unset | None = UNSET,
        parent_id: str | _Unset | None = UNSET,
        entry_id: str | None = None,
        check: Callable[[RawTx, Json, SessionHead], None] | None = None,
    ) -> str:
        """Append an entry (``fields`` holds ``type`` and the type's fields) as a child of the leaf
        (or of ``parent_id``), move the leaf to it, and return its id.

        ``expected_leaf``: raise :class:`LeafConflictError` and write nothing unless the session's
        leaf is still that entry (``None``: no leaf). ``check`` runs inside the transaction, before
        anything is written, and may raise to refuse the entry."""
        kind = fields.get("type")
        if not isinstance(kind, str) or kind == "session":
            raise InvalidInputError(f"an entry needs a string 'type' other than 'session', got {kind!r}")
        if entry_id is not None and not entry_id:
            raise InvalidInputError("an entry id must be a non-empty string")
        entry: Json = {"type": kind, "id": entry_id or random_entry_id(), "parentId": None, "timestamp": now_iso()}
        entry.update((k, v) for k, v in fields.items() if k not in ("type", "id", "parentId"))
        try:  # before the transaction: the shape does not depend on the parent (a string or None)
            parse_entry(entry)
        except ValidationError as exc:
            raise InvalidInputError(f"bad {kind!r} entry: {format_validation_error(exc)}") from None
        # The id is checked by the insert itself (the unique constraint), not by a query before it;
        # a generated id that is taken is drawn again (a full UUID after 100 collisions).
        for attempt in range(101):
            try:
                self._append_once(session_id, entry, expected_leaf, parent_id, check)
                return str(entry["id"])
            except StoreError as exc:
                if not entry_id_taken(exc):
                    raise
                if entry_id is not None:
                    raise InvalidInputError(f"session {session_id!r} already has an entry {entry_id!r}") from None
                entry["id"] = random_entry_id() if attempt < 99 else str(uuid.uuid4())
        raise StoreError(f"session {session_id!r}: no free entry id after 101 attempts")

    def _append_once(
        self,
        session_id: str,
        entry: Json,
        expected_leaf: str | _Unset | None,
        parent_id: str | _Unset | None,
        check: Callable[[RawTx, Json, SessionHead], None] | None,
    ) -> None:
        with raw_write(self.engine, pipeline=True) as tx:
            head = self._head(tx, session_id, lock=True)
            if not isinstance(expected_leaf, _Unset) and expected_leaf != head.leaf_id:
                raise LeafConflictError(session_id, expected_leaf, head.leaf_id)
            parent_facts = head.leaf_facts
            if isinstance(parent_id, _Unset):
                parent = head.leaf_id
            else:
                parent = parent_id
                parent_facts = None if parent is None else self._raw_facts(tx, session_id, entry_id=parent)
            entry["parentId"] = parent
            if check is not None:
                check(tx, entry, head)
            seq = head.stats.entry_count
            kept_depth = None
            if entry["type"] == "compaction" and parent_facts is not None:
                kept_depth = self._kept_depth(tx, session_id, entry.get("firstKeptEntryId"), parent_facts.seq)
            facts = facts_for(entry, seq, parent_facts, kept_depth)
            texts_before = (head.stats.name, head.stats.first_message)
            head.stats.add(entry)
            texts_changed = (head.stats.name, head.stats.first_message) != texts_before
            parent_seq = None if parent_facts is None else parent_facts.seq
            row = entry_values(to_db(session_id), entry, facts, parent_seq, self._payload(entry))
            tx.execute(self._insert_sql, row)
            tx.execute(_UPDATE_HEAD if texts_changed else _UPDATE_HEAD_COUNTS,
                       {"sid": to_db(session_id), **_leaf_columns(entry["id"], facts), **head.stats.columns()})

    def _payload(self, entry: Json) -> str:
        """Stored JSON text of an entry: the line pi would write (SQLite exports it verbatim). Raises
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
        return text

    @cached_property
    def _insert_session_sql(self) -> str:
        header = "CAST(:header AS json)" if self.dialect == "postgresql" else ":header"
        return (
            "INSERT INTO sessions (id, version, cwd, created, parent_session, header, leaf_id, leaf_seq, entry_count,"
            " message_count, name, first_message, modified_ms, deleting) VALUES (:id, :version, :cwd, :created,"
            f" :parent_session, {header}, NULL, NULL, 0, 0, NULL, NULL, NULL, FALSE)"
        )

    def _raw_delete(self, tx: RawTx, session_id: str) -> None:
        # The append-only trigger lets entries go only while their session is marked as deleting.
        tx.execute("UPDATE sessions SET deleting = TRUE WHERE id = :sid", {"sid": to_db(session_id)})
        tx.execute("DELETE FROM entries WHERE session_id = :sid", {"sid": to_db(session_id)})
        tx.execute("DELETE FROM sessions WHERE id = :sid", {"sid": to_db(session_id)})

    @cached_property
    def _insert_sql(self) -> str:
        """INSERT of one row of :func:`entry_values` (positional parameters: faster than named ones)."""
        mark = "%s" if self.dialect == "postgresql" else "?"
        values = [f"CAST({mark} AS json)" if c == "payload" and mark == "%s" else mark for c in ENTRY_COLUMNS]
        return f"INSERT INTO entries ({', '.join(ENTRY_COLUMNS)}) VALUES ({', '.join(values)})"

    def _head(self, tx: RawTx, session_id: str, *, lock: bool) -> SessionHead:
        """The session row with the facts of its leaf entry, in one statement; ``lock``: for a write
        (SQLite's ``BEGIN IMMEDIATE`` already serialises writers; PostgreSQL locks the row, and a
        writer that waited for the lock reads the row the previous writer left)."""
        sql = _HEAD + " FOR UPDATE" if lock and self.dialect == "postgresql" else _HEAD
        row = tx.one(sql, {"sid": to_db(session_id)})
        if row is None or row[6]:
            raise SessionNotFoundError(session_id)
        leaf_id, count, messages, name, first, modified = row[:6]
        facts = None if row[7] is None else NodeFacts(*row[7:13])
        stats = SessionStats(int(count), int(messages), from_db(name), from_db(first), modified)
        return SessionHead(session_id, from_db(leaf_id), facts, stats)

    def _resolve_leaf(
        self, tx: RawTx, session_id: str, leaf_id: str | _Unset | None
    ) -> tuple[str | None, NodeFacts | None]:
        """``leaf_id`` (default: the session's leaf) and its facts; ``(None, None)`` for no leaf."""
        head = self._head(tx, session_id, lock=False)
        leaf = head.leaf_id if isinstance(leaf_id, _Unset) else leaf_id
        if leaf is None:
            return None, None
        if leaf == head.leaf_id:
            return leaf, head.leaf_facts
        return leaf, self._raw_facts(tx, session_id, entry_id=leaf)

    def _raw_facts(self, tx: RawTx, session_id: str, *, entry_id: str) -> NodeFacts:
        row = tx.one(_FACTS_BY_ID, {"sid": to_db(session_id), "eid": to_db(entry_id)})
        if row is None:
            raise EntryNotFoundError(session_id, entry_id)
        return NodeFacts(*row)

    def _kept_depth(self, tx: RawTx, session_id: str, first_kept: Any, parent_seq: int) -> int | None:
        """Depth of ``first_kept`` when it is on the path ending at ``parent_seq``, else ``None``."""
        if not isinstance(first_kept, str):
            return None
        target = tx.one(_SEQ_DEPTH_BY_ID, {"sid": to_db(session_id), "eid": to_db(first_kept)})
        if target is None:
            return None
        found = tx.scalar(_ANCESTOR_RAW, {"sid": to_db(session_id), "leaf": parent_seq, "stop": target[1],
                                          "target": target[0]})
        return int(target[1]) if found else None

    def is_ancestor(self, session_id: str, entry_id: str, leaf_id: str) -> bool:
        """Whether ``entry_id`` is on the path from the root to ``leaf_id`` (``leaf_id`` included)."""
        with raw_write(self.engine, write=False) as tx:
            self._head(tx, session_id, lock=False)
            leaf = self._raw_facts(tx, session_id, entry_id=leaf_id)
            return self._kept_depth(tx, session_id, entry_id, leaf.seq) is not None

    def set_leaf(self, session_id: str, entry_id: str | None, *, expected_leaf: str | _Unset | None = UNSET) -> None:
        """Move the leaf to ``entry_id`` (``None``: before the first entry). Nothing else changes."""
        with raw_write(self.engine) as tx:
            head = self._head(tx, session_id, lock=True)
            if not isinstance(expected_leaf, _Unset) and expected_leaf != head.leaf_id:
                raise LeafConflictError(session_id, expected_leaf, head.leaf_id)
            facts = None if entry_id is None else self._raw_facts(tx, session_id, entry_id=entry_id)
            tx.execute(f"UPDATE sessions SET {_SET_LEAF} WHERE id = :sid",
                       {"sid": to_db(session_id), **_leaf_columns(entry_id, facts)})

    def count_entries(self, session_id: str) -> int:
        with self._read() as conn:
            self._session_row(conn, session_id)
            return int(
                conn.execute(select(func.count()).select_from(entries).where(entries.c.session_id == to_db(session_id)))
                .scalar_one()
            )


def export_header_line(header_text: str, *, leaf_id: str | None, last_id: str | None) -> bytes:
    """The header line of an export: the stored line (the file's own header for an imported v3 file),
    with ``leafId`` added when the leaf (in its stored form) is not the last entry."""
    if leaf_id == last_id:
        return header_text.encode("utf-8") + b"\n"
    header = json_loads(header_text)
    header["leafId"] = from_db(leaf_id)
    return dump_line(header)


def new_header(
    *, cwd: str, session_id: str | None = None, parent_session: str | None = None, timestamp: str | None = None
) -> Json:
    """A v3 session header as pi writes it (a new UUID and the current time unless given)."""
    header: Json = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": session_id or str(uuid.uuid4()),
        "timestamp": timestamp or now_iso(),
        "cwd": cwd,
    }
    if parent_session is not None:
        header["parentSession"] = parent_session
    return header


def _session_values(header: Json, header_text: str | None = None) -> Json:
    """The ``sessions`` row of a new session (text in its stored form; the header as ``header_text``
    gives it, the file's own line, else as pi writes it)."""
    def text(key: str) -> str:
        value = header.get(key)
        return to_db(value) if isinstance(value, str) else ""

    parent = header.get("parentSession")
    return {
        "id": to_db(str(header["id"])),
        "version": CURRENT_VERSION,
        "cwd": text("cwd"),
        "created": text("timestamp"),
        "parent_session": to_db(parent) if isinstance(parent, str) else None,
        "header": header_text if header_text is not None else dump_line(header)[:-1].decode(),
    }


def _info(row: Any) -> SessionInfo:
    return SessionInfo(
        id=from_db(row.id),
        cwd=from_db(row.cwd),
        created=from_db(row.created),
        name=from_db(row.name),
        parent_session=from_db(row.parent_session),
        leaf_id=from_db(row.leaf_id),
        entry_count=int(row.entry_count),
        message_count=int(row.message_count),
        first_message=from_db(row.first_message),
        modified_ms=row.modified_ms,
    )

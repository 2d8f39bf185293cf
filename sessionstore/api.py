"""The library's front door: :class:`SessionStore` composes the store, context building,
validation, projection and compaction planning.

    store = SessionStore("sqlite:///sessions.db")
    sid = store.create_session(cwd="/repo")
    store.append_message(sid, user_message("hi"))
    ctx = store.context(sid)          # messages, llm, thinkingLevel, model, diagnostics
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from sessionstore.catalog.defaults import DEFAULT_INTERVAL, HITS_PER_SESSION
from sessionstore.context import build_session_context, project
from sessionstore.context.build import model_of
from sessionstore.context.compaction import (
    DEFAULT_KEEP_RECENT_TOKENS,
    CompactionPlan,
    context_tokens,
    plan_compaction,
    plan_or_reason,
)
from sessionstore.context.entry_cache import DEFAULT_ENTRY_CACHE_BYTES, DecodedPath, EntryCache
from sessionstore.context.project import TransformContext
from sessionstore.context.system import current_system_message
from sessionstore.errors import EntryNotFoundError, InvalidCompactionError, InvalidInputError, LeafConflictError
from sessionstore.models import js
from sessionstore.models.ids import new_entry_id
from sessionstore.models.roles import BUILTIN_ROLES, known_roles
from sessionstore.models.timestamps import iso_to_ms, now_iso
from sessionstore.models.wire import AgentMessageDict, ProviderMessageDict
from sessionstore.models.wire import JsonObject as Json
from sessionstore.store.engine import Durability
from sessionstore.store.entry_store import ContextTexts, EntryStore, new_header
from sessionstore.store.records import (
    UNSET,
    AppendResult,
    ImportResult,
    ListOrder,
    SessionEvent,
    SessionInfo,
    TreeNode,
    _Unset,
)
from sessionstore.store.tenant import DEFAULT_TENANT
from sessionstore.validate import Diagnostic
from sessionstore.wire.codec import json_loads
from sessionstore.wire.jsjson import gc_paused

if TYPE_CHECKING:
    # (the pydantic models are imported where a message or an entry is checked, the search and stats
    # modules where they run: reading a session needs neither)
    from sessionstore.catalog.defaults import SortOrder
    from sessionstore.catalog.search import SearchResult
    from sessionstore.catalog.stats import AllStatsReport, SessionStatsReport
    from sessionstore.catalog.sync import Progress as SyncProgress
    from sessionstore.catalog.sync import SyncResult
    from sessionstore.models.content import WireModel
    from sessionstore.models.kinds import SessionEntryDict, SessionHeaderDict
    from sessionstore.store.changes import ChangeHub, SessionFeed

Leaf = str | None | _Unset


@dataclass(slots=True)
class ContextResult:
    """The context a model call at ``leaf_id`` gets, with its diagnostics (never raises on odd data)."""

    session_id: str
    leaf_id: str | None
    messages: list[AgentMessageDict]
    entry_ids: list[str | None]
    llm: list[ProviderMessageDict]
    thinking_level: str | None
    model: Json | None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def message_models(self) -> list[WireModel]:
        """The context's messages as the pydantic models (``AgentMessagesAdapter``): a message of a role
        nobody registered is an ``UnknownMessage`` keeping every field."""
        from sessionstore.models.adapters import message_models

        return message_models(self.messages)

    def to_json(self) -> Json:
        return {
            "sessionId": self.session_id,
            "leafId": self.leaf_id,
            "messages": self.messages,
            "llm": self.llm,
            "thinkingLevel": self.thinking_level,
            "model": self.model,
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }


class SessionStore:
    """Sessions in SQLite or PostgreSQL with pi's session-manager operations (pi's names, in snake
    case), import and export of pi's JSONL files, listing, and the context a model call gets.

    ``url``: ``sqlite:///path`` or ``postgresql://...`` (default: ``$SESSIONSTORE_DB``, else SQLite in
    the user's data directory). ``durability="full"`` (default) makes every acknowledged append survive
    a crash of the machine; ``"normal"`` (SQLite) may lose the last appends on power loss, never
    corrupt the file. SQLite databases that are new or behind are upgraded on open; PostgreSQL
    schemas only by ``sessionstore db upgrade`` (an outdated one raises ``SchemaError``).
    ``create=False`` opens only an existing database: a missing SQLite file raises ``StoreError`` naming
    it, one without a schema ``SchemaError``, and nothing is created (what a reader wants).

    ``tenant`` (default ``"default"``): whose sessions the store sees; every read, list, search, stats,
    sync, import, fork and delete is that tenant's only, and another tenant's session is one that does
    not exist. A name is 1-64 characters of ``A-Z a-z 0-9 . _ -``, not starting with ``.`` or ``-``
    (else ``InvalidInputError``). :meth:`for_tenant` gives another tenant's store on the same database.

    ``entry_cache_bytes`` (default 128 MiB; 0: none): the bound of the store's memory of the stored
    entries it checked (:mod:`sessionstore.context.entry_cache`), shared with its :meth:`for_tenant`
    stores: a resume of a session read before checks again only the entries it has not seen.
    """

    def __init__(self, url: str | None = None, *, durability: Durability = "full", upgrade: bool | None = None,
                 create: bool = True, tenant: str = DEFAULT_TENANT,
                 entry_cache_bytes: int = DEFAULT_ENTRY_CACHE_BYTES) -> None:
        self._entry_cache = EntryCache(entry_cache_bytes)
        self._entries = EntryStore(url, durability=durability, upgrade=upgrade, create=create, tenant=tenant)
        self.url = self._entries.url

    @classmethod
    def _over(cls, entries: EntryStore, entry_cache: EntryCache | None = None) -> SessionStore:
        """The store's operations on an :class:`EntryStore` opened by the caller (the async store opens
        one on an event loop's connections)."""
        store = cls.__new__(cls)
        store._entry_cache = EntryCache() if entry_cache is None else entry_cache
        store._entries = entries
        store.url = entries.url
        return store

    @property
    def database(self) -> str:
        """The database's URL, password hidden."""
        return self._entries.database

    @property
    def tenant(self) -> str:
        """The tenant whose sessions this store sees."""
        return self._entries.tenant

    def for_tenant(self, tenant: str) -> SessionStore:
        """The store of ``tenant`` on this store's database, engine and connections: cheap (no new
        engine, no schema check; a server makes one per request). Closing it leaves the database open
        for this store, whose :meth:`close` closes it (the views then fail)."""
        return SessionStore._over(self._entries.for_tenant(tenant), self._entry_cache)

    def close(self) -> None:
        self._entries.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions ------------------------------------------------------------------------------
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
        session of that id raises ``SessionExistsError``, or with ``exist_ok`` is left as it is (of
        concurrent creates of one id, one creates it and the others find it)."""
        return self._entries.create_session(cwd=cwd, session_id=session_id, parent_session=parent_session,
                                            timestamp=timestamp, exist_ok=exist_ok)

    def delete_session(self, session_id: str, *, expected_leaf: Leaf = UNSET) -> None:
        """Remove the session and all its entries, in one transaction. A synced session's file is
        remembered: :meth:`sync` does not import it again unless ``include_deleted``. ``expected_leaf``:
        delete only while the leaf is that entry (``None``: no entries), else :class:`LeafConflictError`
        and nothing deleted."""
        self._entries.delete_session(session_id, expected_leaf=expected_leaf)

    def session(self, session_id: str) -> SessionInfo:
        return self._entries.session(session_id)

    def list_sessions(
        self, *, cwd: str | None = None, since_ms: int | None = None, limit: int | None = None,
        sort: ListOrder = "activity",
    ) -> list[SessionInfo]:
        """The session list: id, cwd, name, parent session, created, modified as pi computes the last
        activity, message count and first message (pi's ``SessionManager.list`` facts), and ``active_ms``;
        newest first by ``sort``: ``"activity"`` (default), the last activity of any kind (creation,
        appends, forks, leaf moves; an imported file's own latest time), or ``"modified"``, pi's order.
        ``cwd`` (resolved as pi resolves it), ``since_ms`` (that order's time then or later) and
        ``limit`` narrow it. Reads no payload."""
        return self._entries.list_sessions(cwd=cwd, since_ms=since_ms, limit=limit, sort=sort)

    def most_recent_session(self, *, cwd: str | None = None) -> str | None:
        """The session pi's ``continueRecent`` resumes (of ``cwd``, resolved as pi resolves it; ``None``
        when there is none). pi 1.6 takes the session file with the newest mtime, i.e. the session last
        written to in any way, not the one with the newest ``modified``; its analogue here is the
        activity time, so this is the first session of ``list_sessions(sort="activity")``."""
        latest = self._entries.list_sessions(cwd=cwd, limit=1, sort="activity")
        return latest[0].id if latest else None

    def search(
        self,
        query: str,
        *,
        cwd: str | None = None,
        limit: int | None = None,
        sort: SortOrder = "relevance",
        everything: bool = False,
        hits: int = HITS_PER_SESSION,
        archived: bool = False,
    ) -> list[SearchResult]:
        """The sessions pi 1.6's session picker shows for ``query`` (plain tokens, ``"phrases"``,
        ``re:regex``; every token must match the name, id, cwd or messages), ordered by pi's relevance
        score or (``sort="recent"``) newest activity first, each with up to ``hits`` matching entries.
        ``everything`` also searches what pi does not (thinking, tool calls and results, bash, summaries,
        custom messages), which the index does not hold: slower (a scan of the search rows). Reads the
        search index, not the payloads (a ``re:`` query reads the entries of the sessions whose name, id
        and cwd do not decide it). Archived sessions are left out unless ``archived``: then their files
        are read too (they stay archived; each result says whether its session is). See
        :mod:`sessionstore.catalog.search`."""
        from sessionstore.catalog.search import search_sessions

        return search_sessions(self._entries, query, cwd=cwd, limit=limit, sort=sort, everything=everything,
                               hits=hits, archived=archived)

    def search_index_on(self) -> bool:
        """Whether the database keeps a search index (on by default; :meth:`set_search_index`)."""
        from sessionstore.catalog.search import search_index_on

        return search_index_on(self._entries)

    def set_search_index(self, on: bool) -> int:
        """Turn the database's search index off (its rows are deleted, no write makes them again, and a
        search reads every entry of the sessions it searches: the same results, slower) or on (this
        tenant's sessions are indexed now, others' at their next search); returns the entries indexed."""
        from sessionstore.catalog.search import set_search_index

        return set_search_index(self._entries, on)

    def header(self, session_id: str) -> SessionHeaderDict:
        """pi's ``getHeader``: the session's header line."""
        return cast("SessionHeaderDict", self._entries.header(session_id))

    # -- import / export -----------------------------------------------------------------------
    def import_jsonl(
        self,
        source: str | Path | IO[bytes],
        *,
        lenient: bool = False,
        replace: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> ImportResult:
        """Import one pi session file (v1-v3) as a new session, atomically (see
        ``EntryStore.import_jsonl``: strict or ``lenient``, ``replace``, ``progress`` in bytes read)."""
        return self._entries.import_jsonl(source, lenient=lenient, replace=replace, progress=progress)

    def import_entries(self, header: Mapping[str, Any], entries: Iterable[Mapping[str, Any]], *,
                       replace: bool = False) -> ImportResult:
        """Create a session from a header and its entries in append order (parents before children),
        in one transaction, as an import of a file holding them would; the leaf is the last entry."""
        return self._entries.insert_session(dict(header), (dict(e) for e in entries), replace=replace)

    def export_jsonl(self, session_id: str, fp: IO[bytes]) -> int:
        """Write the session as a v3 file (pi's own lines for imported entries); returns the entries written."""
        self.restore_if_archived(session_id)
        return self._entries.export_jsonl(session_id, fp)

    def write_entry_lines(self, session_id: str, fp: IO[bytes], *, after: int = -1,
                          limit: int | None = None) -> tuple[int, int | None]:
        """Write the stored lines of the entries whose seq (append index, from 0) is above ``after``, in
        append order, at most ``limit``, streamed (for a catch-up); returns the count and the last seq."""
        return self._entries.write_entry_lines(session_id, fp, after=after, limit=limit)

    # -- following (SPEC 17) ---------------------------------------------------------------------
    def events(self, session_id: str, *, after: int | None = None, idle: float = 1.0,
               stop: Callable[[], bool] | None = None) -> Iterator[SessionEvent]:
        """The session's entries after seq ``after`` (default: from the first), in order, then each new
        one as any writer stores it (another process, the CLI, a sync; a leaf move as a ``leaf`` event),
        until the session is deleted (a last ``deleted`` event) or ``stop()`` is true (asked at least
        every ``idle`` seconds). ``SessionNotFoundError`` when there is no such session."""
        from sessionstore.store.changes import follow, session_event

        for event in follow(self._entries, session_id, after=-1 if after is None else after, idle=idle, stop=stop):
            yield session_event(event)

    # -- reading the tree (pi's getters) -------------------------------------------------------
    def leaf(self, session_id: str) -> str | None:
        """pi's ``getLeafId``."""
        return self._entries.leaf(session_id)

    def entry(self, session_id: str, entry_id: str) -> SessionEntryDict:
        """pi's ``getEntry`` (``EntryNotFoundError`` when the session has no such entry)."""
        return cast("SessionEntryDict", self._entries.entry(session_id, entry_id))

    def entry_ids_with_prefix(self, session_id: str, prefix: str, *, limit: int = 10) -> list[tuple[str, str]]:
        """Up to ``limit`` ``(id, type)`` of the session's entries whose id starts with ``prefix`` (taken
        literally), by id: one indexed query, no payload read. For tools that take id prefixes (the CLI);
        every other method takes exact ids."""
        return [(e.entry_id, e.type) for e in self._entries.entry_ids_with_prefix(session_id, prefix, limit)]

    def session_ids_with_prefix(self, prefix: str, *, limit: int = 10) -> list[str]:
        """Up to ``limit`` ids of the sessions whose id starts with ``prefix`` (taken literally), by id
        (code point order: an exact id comes first): one indexed query. For tools that take id prefixes
        (the CLI); every other method takes exact ids."""
        return self._entries.session_ids_with_prefix(prefix, limit)

    def entries(self, session_id: str) -> list[SessionEntryDict]:
        """pi's ``getEntries``: every entry in append order."""
        return cast("list[SessionEntryDict]", self._entries.entries(session_id))

    def children(self, session_id: str, entry_id: str | None) -> list[SessionEntryDict]:
        """pi's ``getChildren`` (``None``: the roots), in append order."""
        return cast("list[SessionEntryDict]", self._entries.children(session_id, entry_id))

    def path(self, session_id: str, leaf_id: Leaf = UNSET) -> list[SessionEntryDict]:
        """pi's ``getBranch``: the entries from the root to ``leaf_id`` (default: the leaf)."""
        return cast("list[SessionEntryDict]", self._entries.path(session_id, leaf_id))

    def tree(self, session_id: str) -> list[TreeNode]:
        """pi's ``getTree``, with roots and children in append order (pi sorts siblings by their timestamps:
        the same order unless an entry appended later has an earlier timestamp), labels resolved, the
        active path marked."""
        return self._entries.tree(session_id)

    def labels(self, session_id: str) -> dict[str, Any]:
        """Resolved labels (pi's ``getLabel`` for every target): target entry id -> label."""
        return self._entries.labels(session_id)

    # -- context -------------------------------------------------------------------------------
    def context(
        self,
        session_id: str,
        *,
        leaf_id: Leaf = UNSET,
        provider_safe: bool = False,
        transform_context: TransformContext | None = None,
    ) -> ContextResult:
        """Resume: the context at ``leaf_id`` (default: the session's leaf), validated and projected.

        Reads only the part of the path the context needs (see ``EntryStore.context_slice``)."""
        texts = self._context_texts(session_id, leaf_id)
        cache = self._entry_cache
        with gc_paused():  # (a long path is many small containers, none in a cycle: see gc_paused)
            decoded = cache.decode(texts.path)
            return context_of(session_id, texts.leaf_id, decoded.entries,
                              thinking_entry=_decoded(texts.thinking_entry), model_entry=_decoded(texts.model_entry),
                              provider_safe=provider_safe, transform_context=transform_context,
                              checked=(cache, decoded))

    def _context_texts(self, session_id: str, leaf_id: Leaf) -> ContextTexts:
        """The texts a resume reads; an archived session (no entry under its leaf, or none named
        ``leaf_id``) is restored and read again: no query of its own on the resume's path."""
        try:
            texts = self._entries.context_texts(session_id, leaf_id)
        except EntryNotFoundError:
            if not self.restore_if_archived(session_id):
                raise
            return self._entries.context_texts(session_id, leaf_id)
        if texts.leaf_id is not None and not texts.path and self.restore_if_archived(session_id):
            return self._entries.context_texts(session_id, leaf_id)
        return texts

    def write_context_json(
        self, session_id: str, fp: IO[bytes], *, leaf_id: Leaf = UNSET, provider_safe: bool = False
    ) -> None:
        """Write ``js_dumpb(self.context(...).to_json(), indent=2)`` and a newline to ``fp``, the same bytes,
        while the path is read: memory stays bounded whatever the session's size (the entries are read in
        pages, each message is built, validated, projected and written at once; see
        :mod:`sessionstore.context.stream`). The projected messages wait in a temporary file (in memory
        while small) until the messages are written."""
        from sessionstore.context.stream import write_context_json

        self.restore_if_archived(session_id)
        with self._entries.context_stream(session_id, leaf_id) as part:
            write_context_json(
                fp,
                session_id=session_id,
                leaf_id=part.leaf_id,
                entries=part.entries,
                compaction=part.compaction,
                edit_entries=part.edit_entries,
                thinking_entry=part.thinking_entry,
                model_entry=part.model_entry,
                known_roles=known_roles() - BUILTIN_ROLES,
                provider_safe=provider_safe,
            )

    def write_tree_json(self, session_id: str, fp: IO[bytes]) -> None:
        """Write ``tree --json``'s form of the tree to ``fp``: ``js_dumpb(flat_tree_json(self.tree(session_id)),
        indent=2)`` and a newline, the same bytes, one node at a time (memory bounded by the tree's links,
        not its payloads; see ``records.flat_tree_json`` for why it is flat)."""
        self._entries.write_tree_json(session_id, fp)

    def validate(self, session_id: str, *, leaf_id: Leaf = UNSET) -> list[Diagnostic]:
        """Diagnostics of the context at the leaf (shape, linkage, compaction)."""
        return self.context(session_id, leaf_id=leaf_id).diagnostics

    # -- appends -------------------------------------------------------------------------------
    def append_entry(
        self,
        session_id: str,
        entry: Mapping[str, Any],
        *,
        expected_leaf: Leaf = UNSET,
        entry_id: str | None = None,
    ) -> str:
        """Append one pi v3 entry object of any kind at the leaf and move the leaf to it; returns its id.

        ``entry`` holds ``type`` and the kind's fields (``{"type": "label", "targetId": ...}``; a message
        is ``{"type": "message", "message": {...}}``), and may hold a ``timestamp`` (default: now). It is
        built and checked by its kind (:mod:`sessionstore.models.kinds`): what the kind refuses raises
        ``InvalidInputError``, a rule that reads the session its own error (a label's missing target:
        ``EntryNotFoundError``). Every typed append below is this call. ``entry_id`` defaults to 8 new
        hex characters, as pi generates them."""
        return self._append(session_id, entry, expected_leaf=expected_leaf, entry_id=entry_id)

    def _append(self, session_id: str, entry: Mapping[str, Any], *, expected_leaf: Leaf = UNSET,
                parent_id: Leaf = UNSET, entry_id: str | None = None) -> str:
        from sessionstore.models.kinds import entry_fields

        fields = entry_fields(entry, keep=("timestamp",))
        return self._entries.append_entry(session_id, fields, expected_leaf=expected_leaf, parent_id=parent_id,
                                          entry_id=entry_id)

    def append_message(
        self,
        session_id: str,
        message: WireModel | AgentMessageDict | Mapping[str, Any],
        *,
        expected_leaf: Leaf = UNSET,
        entry_id: str | None = None,
    ) -> str:
        """Append a message (a model, or wire data checked against its role's shape); ``entry_id``
        defaults to 8 new hex characters, as pi generates them."""
        return self._append(session_id, {"type": "message", "message": message},
                            expected_leaf=expected_leaf, entry_id=entry_id)

    def append_tool_result(
        self,
        session_id: str,
        *,
        tool_call_id: str,
        tool_name: str,
        content: str | list[Any],
        is_error: bool = False,
        details: Any = None,
        expected_leaf: Leaf = UNSET,
    ) -> str:
        """Append the result of a tool call (a ``toolResult`` message) under the provider's own tool-call
        id (as :func:`~sessionstore.payloads.record_anthropic` and its twins recorded it); ``content`` is a
        text or pi's content blocks (text, image)."""
        from sessionstore.models.messages import tool_result_message

        message = tool_result_message(
            tool_call_id=tool_call_id, tool_name=tool_name, content=content, is_error=is_error, details=details
        )
        return self.append_message(session_id, message, expected_leaf=expected_leaf)

    def append_model_change(
        self, session_id: str, *, provider: str, model_id: str, expected_leaf: Leaf = UNSET
    ) -> str:
        return self._append(session_id, {"type": "model_change", "provider": provider, "modelId": model_id},
                            expected_leaf=expected_leaf)

    def append_thinking_level_change(
        self, session_id: str, thinking_level: str, *, expected_leaf: Leaf = UNSET
    ) -> str:
        return self._append(session_id, {"type": "thinking_level_change", "thinkingLevel": thinking_level},
                            expected_leaf=expected_leaf)

    def append_custom(
        self, session_id: str, custom_type: str, data: Any = None, *, expected_leaf: Leaf = UNSET
    ) -> str:
        """Extension state; never part of the context."""
        return self._append(session_id, {"type": "custom", "customType": custom_type, "data": data},
                            expected_leaf=expected_leaf)

    def append_custom_message(
        self,
        session_id: str,
        custom_type: str,
        content: str | list[Any],
        *,
        display: bool = True,
        details: Any = None,
        expected_leaf: Leaf = UNSET,
    ) -> str:
        """A message injected by an extension; part of the context as a ``custom`` message."""
        return self._append(session_id, {"type": "custom_message", "customType": custom_type, "content": content,
                                         "display": display, "details": details}, expected_leaf=expected_leaf)

    def append_entries(
        self, session_id: str, entries: Iterable[Mapping[str, Any]], *, expected_leaf: Leaf = UNSET
    ) -> list[str]:
        """Append pi v3 entry objects as one chain at the leaf, in one transaction: all of them,
        contiguous (no other writer's entry between them), or none; returns their ids in order (see
        :meth:`append_entries_detailed` for the rules)."""
        return self.append_entries_detailed(session_id, entries, expected_leaf=expected_leaf).ids

    def append_entries_detailed(
        self, session_id: str, entries: Iterable[Mapping[str, Any]], *, expected_leaf: Leaf = UNSET
    ) -> AppendResult:
        """Append pi v3 entry objects of every type a typed append writes (``message`` of any role incl.
        ``system``, ``custom``, ``custom_message``, ``label``, ``session_info``, ``model_change``,
        ``thinking_level_change``, ``usage``, ``context_edit``, ``branch_summary``, ``compaction``) as one
        chain at the leaf, atomically. Each is checked and normalised by the rule its typed append uses
        (``sessionstore.models.kinds``); a refusal raises that append's error, its text prefixed
        with the entry's place (``entries[3]: ...``; a label's or edit's missing target is an
        ``InvalidInputError``). A non-object, a ``session`` header or an unknown type raises
        ``InvalidInputError``. ``id`` (a non-empty string), ``parentId`` and ``timestamp`` may be given
        (see ``EntryStore.append_entries(placed=True)``: a given ``parentId`` must be the leaf or the
        entry before; the same ids with the same content are a retry that writes nothing, ``written``
        ``False``; a held id otherwise raises ``DuplicateIdError``). A compaction is stored as given (no
        planning, no ``systemMessage`` filled in: :meth:`compact` does that)."""
        from sessionstore.models.kinds import PLACE_KEYS, entry_fields

        fields: list[Json] = []
        for index, entry in enumerate(entries):
            where = f"entries[{index}]."
            try:
                fields.append(entry_fields(entry, where=where, keep=PLACE_KEYS))
            except InvalidInputError as exc:
                raise InvalidInputError(f"entries[{index}]: {exc}") from None
        return self._entries.append_entries(session_id, fields, expected_leaf=expected_leaf, placed=True)

    def append_label(
        self, session_id: str, target_id: str, label: str | None = None, *, expected_leaf: Leaf = UNSET
    ) -> str:
        """Label ``target_id`` (which must exist); no ``label`` clears it."""
        return self._append(session_id, {"type": "label", "targetId": target_id, "label": label},
                            expected_leaf=expected_leaf)

    def append_session_info(self, session_id: str, name: str, *, expected_leaf: Leaf = UNSET) -> str:
        """Name the session (the latest name wins; an empty name clears it). As pi 1.6 writes it: every
        run of CR/LF becomes one space, then the name is trimmed."""
        return self._append(session_id, {"type": "session_info", "name": name}, expected_leaf=expected_leaf)

    def append_usage(
        self,
        session_id: str,
        *,
        kind: str,
        provider: str,
        model: str,
        usage: Mapping[str, Any],
        note: str | None = None,
        expected_leaf: Leaf = UNSET,
    ) -> str:
        """Model usage outside the conversation (pi 1.6's ``usage`` entry, e.g. ``kind="cache_warm"``):
        counted in the session's totals, never part of the context. ``note`` is written only when truthy."""
        return self._append(session_id, {"type": "usage", "kind": kind, "provider": provider, "model": model,
                                         "usage": usage, "note": note}, expected_leaf=expected_leaf)

    def append_context_edit(
        self,
        session_id: str,
        target_id: str,
        replacement: Mapping[str, Any] | None,
        *,
        expected_leaf: Leaf = UNSET,
    ) -> str:
        """Edit an earlier entry's part of the context on this branch (pi 1.6's ``appendContextEdit``):
        ``replacement=None`` omits the target from the context; ``{"content": str | list}`` replaces its
        content (a string becomes one text block for assistant and toolResult targets, as pi stores it).

        The target must be on the active branch and be a ``custom_message`` or a ``message`` of role
        user, assistant or toolResult; anything else is refused with pi's error text. The entry stays
        in the database: the edit is itself an entry, so another branch still sees the original."""
        return self._append(session_id, {"type": "context_edit", "targetId": target_id, "replacement": replacement},
                            expected_leaf=expected_leaf)

    # -- leaf and branches ---------------------------------------------------------------------
    def branch(self, session_id: str, entry_id: str, *, expected_leaf: Leaf = UNSET) -> None:
        """Move the leaf to an earlier entry; the next append starts a new branch there."""
        self._entries.set_leaf(session_id, entry_id, expected_leaf=expected_leaf)

    def reset_leaf(self, session_id: str, *, expected_leaf: Leaf = UNSET) -> None:
        """Move the leaf before the first entry; the next append is a new root."""
        self._entries.set_leaf(session_id, None, expected_leaf=expected_leaf)

    def branch_with_summary(
        self,
        session_id: str,
        entry_id: str | None,
        summary: str,
        *,
        details: Any = None,
        from_hook: bool | None = None,
        usage: Mapping[str, Any] | None = None,
        expected_leaf: Leaf = UNSET,
    ) -> str:
        """Append a ``branch_summary`` child of ``entry_id`` (``None``: a new root) whose ``fromId`` is
        the leaf being left (``"root"`` when there is none), as pi 1.6 stores it, and move the leaf to it."""
        leaf = self.leaf(session_id) if isinstance(expected_leaf, _Unset) else expected_leaf
        entry = {"type": "branch_summary", "fromId": leaf if leaf is not None else "root", "summary": summary,
                 "details": details, "usage": usage, "fromHook": from_hook}
        return self._append(session_id, entry, parent_id=entry_id, expected_leaf=leaf)

    def fork(self, session_id: str, *, leaf_id: Leaf = UNSET, new_session_id: str | None = None) -> str:
        """A new session holding the path root..leaf, as pi 1.6's ``createBranchedSession`` makes it:
        the path's ``label`` entries are left out and the kept entries re-chained (a compaction whose
        ``firstKeptEntryId`` named a dropped label keeps from the entry after it); then one new
        ``label`` entry per kept entry that has a label in the whole session (labels set on other
        branches count), in pi's label order, with the timestamp of the entry that set it. The new
        header's ``parentSession`` names this session. Returns the new session's id."""
        self.restore_if_archived(session_id)
        source = self.session(session_id)
        path = self.path(session_id, leaf_id)
        kept: list[Json] = []
        after_labels: dict[Any, str] = {}  # a dropped label's id -> the kept entry after it
        pending: list[Any] = []
        parent: str | None = None
        for entry in path:
            if entry.get("type") == "label":
                pending.append(entry["id"])
                continue
            after_labels.update((label_id, entry["id"]) for label_id in pending)
            pending.clear()
            copied = {**copy.deepcopy(entry), "parentId": parent}
            first_kept = entry.get("firstKeptEntryId")
            if entry.get("type") == "compaction" and isinstance(first_kept, str) and first_kept != entry["id"]:
                copied["firstKeptEntryId"] = after_labels.get(first_kept, first_kept)
            kept.append(copied)
            parent = entry["id"]
        taken = {e["id"] for e in kept}
        on_path = set(taken)
        for target, (label, timestamp) in self._entries.label_state(session_id).current.items():
            if target not in on_path:
                continue
            label_id = new_entry_id(taken.__contains__)
            taken.add(label_id)
            kept.append(js.obj(("type", "label"), ("id", label_id), ("parentId", parent), ("timestamp", timestamp),
                               ("targetId", target), ("label", label)))
            parent = label_id
        header = new_header(cwd=source.cwd, session_id=new_session_id, parent_session=session_id)
        # (made now: the header's time, which is the fork's activity time)
        return self._entries.insert_session(header, kept, made_ms=iso_to_ms(header["timestamp"])).session_id

    # -- compaction ----------------------------------------------------------------------------
    def plan_compaction(
        self,
        session_id: str,
        *,
        keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
        leaf_id: Leaf = UNSET,
    ) -> CompactionPlan | None:
        """What compacting at the leaf would keep and summarise (``None``: nothing to compact)."""
        if isinstance(keep_recent_tokens, bool) or not isinstance(keep_recent_tokens, int) or keep_recent_tokens < 0:
            raise InvalidInputError(f"keep_recent_tokens must be a non-negative int, got {keep_recent_tokens!r}")
        return plan_compaction(self.path(session_id, leaf_id), keep_recent_tokens=keep_recent_tokens)

    def compact(
        self,
        session_id: str,
        *,
        summary: str,
        first_kept_entry_id: str | None = None,
        tokens_before: int | None = None,
        details: Any = None,
        from_hook: bool | None = None,
        usage: Mapping[str, Any] | None = None,
        keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
        expected_leaf: Leaf = UNSET,
    ) -> str:
        """Append a ``compaction`` entry at the leaf. Without ``first_kept_entry_id`` the cut is
        planned as pi plans it; a given id must be on the path before the compaction and must not be a
        toolResult (pi stores such ids unchecked, then drops context or sends an orphan result)."""
        if first_kept_entry_id is None or tokens_before is None:
            leaf = self.leaf(session_id)
            if not isinstance(expected_leaf, _Unset) and expected_leaf != leaf:
                raise LeafConflictError(session_id, expected_leaf, leaf)
            path = self.path(session_id, leaf)
            if first_kept_entry_id is None:
                plan = plan_or_reason(path, keep_recent_tokens=keep_recent_tokens)
                if isinstance(plan, str):
                    raise InvalidCompactionError(f"session {session_id!r}: nothing to compact: {plan}")
                first_kept_entry_id = plan.first_kept_entry_id
            if tokens_before is None:
                tokens_before = context_tokens(path)
            expected_leaf = leaf
        if isinstance(expected_leaf, _Unset):
            expected_leaf = self.leaf(session_id)
        timestamp = now_iso()
        fields: Json = {
            "type": "compaction",
            "timestamp": timestamp,
            "summary": summary,
            "firstKeptEntryId": first_kept_entry_id,
            "tokensBefore": tokens_before,
        }
        fields.update(details=details, usage=usage, fromHook=from_hook)
        # pi 1.6 keeps the prompt in force on the compaction: the system messages of the kept range
        # are no longer sent once it is there.
        system = current_system_message(self.context(session_id, leaf_id=expected_leaf).messages)
        if system is not None:
            fields["systemMessage"] = {**system, "timestamp": iso_to_ms(timestamp)}
        return self._append(session_id, fields, expected_leaf=expected_leaf)

    # -- stats ---------------------------------------------------------------------------------
    def stats(self, session_id: str) -> SessionStatsReport:
        """What pi 1.6's ``/session`` shows of the session (``getSessionStats``): message counts by role,
        tool calls and results, tokens (input, output, cacheRead, cacheWrite, total), cost and the
        per-model breakdown, over every entry of every branch. Read from the session row and its usage
        rows (no payload but the one entry that selects the model at the leaf); see
        ``sessionstore.catalog.stats`` for where it differs from pi. ``SessionNotFoundError`` when
        there is no such session."""
        from sessionstore.catalog import stats as catalog_stats

        return catalog_stats.session_stats(self._entries, session_id, model_key=_selected_model_key)

    def stats_all(
        self, *, cwd: str | None = None, since_ms: int | float | None = None, by: str | None = None
    ) -> AllStatsReport:
        """The stats summed over the sessions ``list_sessions(cwd=..., since_ms=..., sort="modified")`` lists
        (the same rule: ``cwd`` resolved as pi resolves it, ``since_ms`` pi's modified), and with ``by``
        (``"model"``: per breakdown key, ``"day"``: per UTC day of the entries) per group: one aggregate
        query of their counters and one grouped query of their usage rows. Message counts are per
        session, so groups carry usage only. A ``by`` of anything else raises ``InvalidInputError``."""
        from sessionstore.catalog import stats as catalog_stats

        return catalog_stats.all_stats(self._entries, cwd=cwd, since_ms=since_ms,
                                       by=catalog_stats.check_group_by(by))


    # -- sync of a pi session directory (catalog.sync) -----------------------------------------
    def sync(
        self,
        directory: str | Path | None = None,
        *,
        prune: bool = False,
        adopt: bool = False,
        include_deleted: bool = False,
        progress: SyncProgress | None = None,
    ) -> SyncResult:
        """Mirror a pi session directory (default: ``$PI_CODING_AGENT_DIR/sessions``, else
        ``~/.pi/agent/sessions``) into the store once: new files imported, grown ones appended (their new
        complete lines only), rewritten ones re-imported, unchanged ones only ``stat``-ed; ``prune``
        deletes synced sessions whose file is gone; ``adopt`` lets a file take over a session imported by
        hand; a file whose session was deleted (:meth:`delete_session`) is left unless ``include_deleted``.
        A file that fails is in ``SyncResult.failures`` (``file:line: reason``); the others sync.
        ``progress(read, total)`` in bytes. See :mod:`sessionstore.catalog.sync`."""
        from sessionstore.catalog.sync import sync_directory

        return sync_directory(self._entries, directory, prune=prune, adopt=adopt, include_deleted=include_deleted,
                              progress=progress)

    def watch_sync(
        self,
        directory: str | Path | None = None,
        *,
        interval: float = DEFAULT_INTERVAL,
        cycles: int | None = None,
        prune: bool = False,
        adopt: bool = False,
        include_deleted: bool = False,
        on_cycle: Callable[[SyncResult], None] | None = None,
    ) -> SyncResult:
        """:meth:`sync` every ``interval`` seconds (polling), ``cycles`` times or until interrupted;
        ``on_cycle`` gets each sync's result. Returns the totals."""
        from sessionstore.catalog.sync import watch

        return watch(self._entries, directory, interval=interval, cycles=cycles, prune=prune, adopt=adopt,
                     include_deleted=include_deleted,
                     on_cycle=on_cycle)
    # -- retention (SPEC 18; sessionstore.store.archive) ----------------------------------------------
    def restore_if_archived(self, session_id: str) -> bool:
        """Restore the session when it is archived (``context``, ``export`` and ``fork`` call it first;
        an append restores it when it finds the entries gone); whether it was archived.
        ``ArchiveError`` when its file is missing or damaged (nothing restored)."""
        from sessionstore.store.archive import restore_if_archived

        return restore_if_archived(self._entries, session_id)

    def archived_ids(self) -> set[str]:
        """The ids of this tenant's archived sessions (one query; ``ls`` marks them)."""
        from sessionstore.store.archive import archived_ids

        return archived_ids(self._entries)



def context_of(
    session_id: str,
    leaf_id: str | None,
    path: list[Json],
    *,
    thinking_entry: Mapping[str, Any] | None = None,
    model_entry: Mapping[str, Any] | None = None,
    provider_safe: bool = False,
    transform_context: TransformContext | None = None,
    checked: tuple[EntryCache, DecodedPath] | None = None,
) -> ContextResult:
    """The context at the end of ``path`` (the entries root..``leaf_id``, or the part of it from the
    compaction on with the entries that set thinking level and model), validated and projected: what
    :meth:`SessionStore.context` returns, for any holder of the path (the remote client).

    ``checked``: the store's cache and the path as it decoded it (:class:`EntryCache`): messages whose
    stored text passed the check before are not checked again, and the verdicts found are remembered."""
    from sessionstore.validate.transcript import validate_messages  # (loaded with the first context)

    built = build_session_context(path, thinking_entry=thinking_entry, model_entry=model_entry)
    diagnostics = list(built.diagnostics)
    roles = known_roles() - BUILTIN_ROLES
    if checked is None:
        found, _verdicts = validate_messages(built.messages, [None] * len(built.messages),
                                             entry_ids=built.entry_ids, known_roles=roles)
    else:
        cache, decoded = checked
        known = decoded.known
        prior = [known.get(id(message)) for message in built.messages] if known else [None] * len(built.messages)
        found, verdicts = validate_messages(built.messages, prior, entry_ids=built.entry_ids, known_roles=roles)
        cache.learn(decoded, built.messages, verdicts)
    diagnostics.extend(found)
    projection = project(
        built.messages,
        built.entry_ids,
        transform_context=transform_context,
        provider_safe_repairs=provider_safe,
    )
    diagnostics.extend(projection.diagnostics)
    return ContextResult(
        session_id=session_id,
        leaf_id=leaf_id,
        messages=built.messages,
        entry_ids=built.entry_ids,
        llm=cast(list[ProviderMessageDict], projection.llm),
        thinking_level=built.thinking_level,
        model=built.model,
        diagnostics=diagnostics,
    )


__all__ = ["DEFAULT_TENANT", "ContextResult", "ImportResult", "SessionInfo", "SessionStore", "SyncResult", "TreeNode",
           "message_to_wire"]


def _decoded(text: str | bytes | None) -> Json | None:
    return None if text is None else dict(json_loads(text))


def message_to_wire(message: WireModel | AgentMessageDict | Mapping[str, Any]) -> AgentMessageDict:
    """Wire data of a message, checked against its role's shape (``models.kinds.message_to_wire``)."""
    from sessionstore.models.kinds import message_to_wire as to_wire

    return to_wire(message)


def _selected_model_key(entry: Mapping[str, Any]) -> str | None:
    """pi's ``selectedModelKey`` (``{provider}/{id}``) of the model an entry selects on resume."""
    model = model_of(entry)
    if model is None:
        return None
    return f"{js.to_string(model.get('provider', js.MISSING))}/{js.to_string(model.get('modelId', js.MISSING))}"


def __getattr__(name: str) -> Any:
    if name == "SyncResult":  # (in __all__, imported on first use like the sync it describes)
        from sessionstore.catalog.sync import SyncResult

        return SyncResult
    raise AttributeError(f"module 'sessionstore.api' has no attribute {name!r}")


def session_feed(store: SessionStore, session_id: str) -> SessionFeed:
    """Reads of the session for a follower that has a change hub of its own (the service's feeds, the
    async store's ``events``): see :class:`sessionstore.store.changes.SessionFeed`."""
    from sessionstore.store.changes import SessionFeed

    return SessionFeed(store._entries, session_id)


def watch_changes(store: SessionStore) -> ChangeHub:
    """A watcher of ``store``'s database's writes by any writer in any process, for this process (one
    serves any number of watches); the caller closes it. See :mod:`sessionstore.store.changes`."""
    from sessionstore.store.changes import open_hub

    return open_hub(store._entries)

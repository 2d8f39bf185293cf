"""The store over HTTP: :class:`RemoteSessionStore` is a :class:`~sessionstore.api.SessionStore` whose
database is a ``sessionstore serve`` (SPEC 15), with the same method names, parameters, results and
error classes; :class:`AsyncRemoteSessionStore` is its async twin.

    store = RemoteSessionStore("http://127.0.0.1:8765", token="ss_...")
    sid = store.create_session(cwd="/repo")
    store.append_message(sid, user_message("hi"))

Writes go to the write routes; reads without a route of their own (path, entry, children, labels,
leaf, context) are computed here from the session's entries with the library's own functions.
Retries are safe: a dropped connection, a 503 or a key still in use is retried with backoff; every
write (POST, PUT, DELETE) carries one ``Idempotency-Key`` for all its attempts, and every append names
its entries' ids, parents and timestamps, so a retried append that had been stored is a no-op on the
server.
"""

from __future__ import annotations

import asyncio
import io
import math
import shutil
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import httpx

from sessionstore import errors
from sessionstore.api import ContextResult, Leaf, _selected_model_key, context_of
from sessionstore.catalog.defaults import HITS_PER_SESSION, SortOrder
from sessionstore.catalog.search import SearchResult
from sessionstore.catalog.stats import AllStatsReport, SessionStatsReport, check_group_by
from sessionstore.context.build import model_of
from sessionstore.context.compaction import DEFAULT_KEEP_RECENT_TOKENS, CompactionPlan, plan_compaction
from sessionstore.models.ids import new_entry_id
from sessionstore.models.timestamps import now_iso
from sessionstore.models.wire import JsonObject as Json
from sessionstore.protocol import etag, segment
from sessionstore.store.entry_store import new_header
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
from sessionstore.store.tenant import DEFAULT_TENANT, check_tenant
from sessionstore.validate import Diagnostic
from sessionstore.wire.codec import parse_line
from sessionstore.wire.jsjson import js_dumpb
from sessionstore.wire.jsonl import SkippedLine

if TYPE_CHECKING:
    from sessionstore.models.kinds import SessionEntryDict, SessionHeaderDict

MAX_IDS = 10_000
"""The most ids the entry-ids route returns in one call (``routes_lookup.MAX_IDS``)."""

NO_LIMIT = 2**31 - 1
"""The limit a search without one sends (the route's own default is ``search``'s 20)."""

RETRY_STATUSES = (503,)
"""Statuses a request is retried on (with ``Retry-After`` or backoff); a dropped connection is too."""

_ERRORS: dict[str, type[errors.SessionStoreError]] = {
    cls.code: cls for cls in (
        errors.InvalidInputError, errors.JsonlError, errors.IncompleteHeaderError, errors.SessionNotFoundError,
        errors.EntryNotFoundError, errors.SessionExistsError, errors.SourceConflictError, errors.EntryIdTakenError,
        errors.DuplicateIdError, errors.LeafConflictError, errors.InvalidCompactionError, errors.SchemaError,
        errors.SchemaTooNewError, errors.BackendUnavailableError, errors.StoreError,
    )
}
"""The library's error classes by their ``code``, which a problem's ``storeCode`` names."""

_API_CODES: dict[str, type[errors.SessionStoreError]] = {
    "NOT_FOUND": errors.SessionNotFoundError, "SESSION_EXISTS": errors.SessionExistsError,
    "DUPLICATE_ID": errors.DuplicateIdError, "LEAF_CONFLICT": errors.LeafConflictError,
    "SERVICE_UNAVAILABLE": errors.StoreError,
}
"""The class of a problem without ``storeCode`` (the server's own refusals); others are InvalidInputError."""


class RemoteError(errors.SessionStoreError):
    """The server refused the request for a reason of its own (401, 403, 413, 415, 429, 500 ...):
    ``status``, ``api_code`` (the problem's ``code``) and ``detail``."""

    code = "REMOTE_ERROR"

    def __init__(self, status: int, api_code: str, detail: str) -> None:
        self.status = status
        self.api_code = api_code
        self.detail = detail
        super().__init__(f"{status} {api_code}: {detail}")


class RemoteAccessError(RemoteError, errors.StoreError):
    """The server refused the caller (401: no token, or one it does not accept; 403: the token's scope
    does not allow it): a :class:`~sessionstore.errors.StoreError` too, since no request can succeed
    until the token changes, whatever it asks (as a database refusing a login)."""


def error_from_problem(status: int, problem: Mapping[str, Any], session_id: str | None = None) -> Exception:
    """The library error a problem+json body stands for: the class its ``storeCode`` names (else its
    ``code``'s), with the attributes the library's error carries (``currentLeafId`` as ``actual``,
    ``line``); a refusal of the server's own (auth, limits) is a :class:`RemoteError`."""
    detail = str(problem.get("detail", ""))
    store_code = problem.get("storeCode")
    api_code = str(problem.get("code", "INTERNAL"))
    cls = _ERRORS.get(store_code) if isinstance(store_code, str) else None
    if cls is None:
        cls = _API_CODES.get(api_code)
    if cls is None:
        if status == 422 or api_code in ("BAD_JSON", "INVALID_ENTRY", "INVALID_INPUT"):
            cls = errors.InvalidInputError
        else:
            return (RemoteAccessError if status in (401, 403) else RemoteError)(status, api_code, detail)
    exc = cls.__new__(cls)
    Exception.__init__(exc, detail)
    if isinstance(exc, errors.LeafConflictError):
        exc.session_id, exc.expected, exc.actual = session_id or "", None, problem.get("currentLeafId")
    elif isinstance(exc, errors.JsonlError):
        line = problem.get("line")
        exc.path, exc.line, exc.reason = "-", line if isinstance(line, int) else None, detail
    elif isinstance(exc, (errors.SessionNotFoundError, errors.SessionExistsError)):
        exc.session_id = session_id or str(problem.get("sessionId", ""))
    elif isinstance(exc, errors.EntryNotFoundError):
        exc.session_id, exc.entry_id = session_id or "", ""
    return exc




def _key_in_use(response: httpx.Response) -> bool:
    """Whether ``response`` says the request's Idempotency-Key is still held by its first attempt (409
    ``IDEMPOTENCY_KEY_IN_USE``): the retry waits for ``Retry-After`` and asks again."""
    if response.status_code != 409 or not response.headers.get("content-type", "").startswith("application/problem"):
        return False
    try:
        return bool(response.json().get("code") == "IDEMPOTENCY_KEY_IN_USE")
    except (ValueError, AttributeError):
        return False


UPLOAD_CHUNK = 1 << 20
"""Bytes of an import's body read and sent at a time."""


@contextmanager
def _seekable(source: str | Path | IO[bytes]) -> Iterator[IO[bytes]]:
    """``source`` as a binary file that can be read again from where it starts (a retry sends the body
    again): a path is opened, a seekable stream used as it is, any other stream (a pipe) spooled to a
    temporary file first, so an import's memory stays bounded by a chunk whatever the file's size."""
    if isinstance(source, (str, Path)):
        with open(source, "rb") as fp:
            yield fp
        return
    try:
        source.tell()
        seekable = source.seekable()
    except (OSError, ValueError):
        seekable = False
    if seekable:
        yield source
        return
    with tempfile.TemporaryFile() as spool:
        shutil.copyfileobj(source, spool, UPLOAD_CHUNK)
        spool.seek(0)
        yield spool


def _source_name(source: str | Path | IO[bytes]) -> str:
    """How the library's JSONL reader names a source in its errors: the path, else the stream's name."""
    return str(source) if isinstance(source, (str, Path)) else str(getattr(source, "name", "<stream>"))


def _renamed(exc: errors.JsonlError, name: str) -> errors.JsonlError:
    """``exc`` (from a problem: its text is the server's ``body:line: reason``) naming ``name`` instead."""
    reason = exc.reason
    mark = f":{exc.line}: " if exc.line is not None else ": "
    if mark in reason:
        reason = reason.split(mark, 1)[1]
    renamed = type(exc)(name, exc.line, reason)
    return renamed


class RemoteSessionStore:
    """A :class:`~sessionstore.api.SessionStore` on a ``sessionstore serve`` at ``base_url``
    (``http://HOST:PORT``), authenticated by ``token`` (``ss_...``; none for a ``--no-auth`` server).
    ``retries``: how often a request is tried again after a dropped connection or a 503 (a feed followed
    by :meth:`events` goes on by time instead, :data:`FEED_PATIENCE`); ``transport``:
    an httpx transport (tests). ``sync`` and ``watch_sync`` read a local directory, which a remote store
    has not: they raise ``InvalidInputError``."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 30.0, retries: int = 5,
                 transport: httpx.BaseTransport | None = None, idempotency_keys: bool = True,
                 tenant: str | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = base_url.rstrip("/")
        self._token = token
        self._tenant = None if tenant is None else check_tenant(tenant)
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout, transport=transport)
        self._retries = retries
        self._idempotency_keys = idempotency_keys

    @property
    def database(self) -> str:
        return self.url

    @property
    def tenant(self) -> str:
        """The tenant whose sessions this store sees. The server takes it from the token alone and
        does not tell it, so the client knows it only as stated: ``tenant=`` at construction (not
        checked against the token), else ``"default"`` without a token (a ``--no-auth`` server serves
        that tenant); with a token and no ``tenant=`` it raises ``InvalidInputError``."""
        if self._tenant is not None:
            return self._tenant
        if self._token is None:
            return DEFAULT_TENANT
        raise errors.InvalidInputError("the tenant of a remote store is its token's, which the server does not"
                                       " tell: pass tenant= to RemoteSessionStore to name it")

    def for_tenant(self, tenant: str) -> RemoteSessionStore:
        """Not possible: the tenant comes from the token alone. Raises ``InvalidInputError``."""
        raise errors.InvalidInputError(f"a remote store cannot switch to tenant {tenant!r}: the server takes the"
                                       " tenant from the token alone; connect with a token of that tenant")

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RemoteSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport -----------------------------------------------------------------------------
    def _request(self, method: str, path: str, *, session_id: str | None = None, json: Any = UNSET,
                 content: bytes | Callable[[], Iterator[bytes]] | None = None, media: str = "application/json",
                 params: Mapping[str, Any] | None = None, headers: Mapping[str, str] | None = None,
                 ok: tuple[int, ...] = (200, 201, 204)) -> httpx.Response:
        sent = dict(headers or {})
        if not isinstance(json, _Unset):
            content = js_dumpb(json)
        if content is not None:
            sent["Content-Type"] = media
        if method in ("POST", "PUT", "DELETE") and self._idempotency_keys:
            sent["Idempotency-Key"] = uuid.uuid4().hex  # (one key for every attempt of this call)
        delay = 0.05
        for attempt in range(self._retries + 1):
            try:
                body = content() if callable(content) else content  # (a stream starts again on each attempt)
                response = self._http.request(method, path, content=body, params=params, headers=sent)
            except (httpx.TransportError, httpx.RemoteProtocolError):
                if attempt == self._retries:
                    raise errors.StoreError(f"the server at {self.url} did not answer {method} {path}") from None
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            if (response.status_code in RETRY_STATUSES or _key_in_use(response)) and attempt < self._retries:
                time.sleep(min(float(response.headers.get("retry-after", delay)), 5.0))
                delay = min(delay * 2, 2.0)
                continue
            break
        if response.status_code in ok:
            return response
        try:
            problem = response.json()
        except ValueError:
            problem = {"code": "INTERNAL", "detail": response.text[:200]}
        raise error_from_problem(response.status_code, problem if isinstance(problem, dict) else {}, session_id)

    def _session_path(self, session_id: str, tail: str = "") -> str:
        return f"/v1/sessions/{segment(session_id)}{tail}"

    @staticmethod
    def _if_match(expected_leaf: Leaf) -> dict[str, str]:
        return {} if isinstance(expected_leaf, _Unset) else {"If-Match": etag(expected_leaf)}

    # -- sessions ------------------------------------------------------------------------------
    def create_session(self, *, cwd: str, session_id: str | None = None, parent_session: str | None = None,
                       timestamp: str | None = None, exist_ok: bool = False) -> str:
        try:
            if parent_session is None and timestamp is None:
                body: Json = {"cwd": cwd} if session_id is None else {"cwd": cwd, "id": session_id}
                return str(self._request("POST", "/v1/sessions", json=body).json()["id"])
            header = new_header(cwd=cwd, session_id=session_id, parent_session=parent_session, timestamp=timestamp)
            return self.import_entries(header, []).session_id
        except errors.SessionExistsError:
            if exist_ok and session_id is not None:
                return session_id
            raise errors.SessionExistsError(session_id or "") from None

    def delete_session(self, session_id: str) -> None:
        self._request("DELETE", self._session_path(session_id), session_id=session_id)

    def session(self, session_id: str) -> SessionInfo:
        return SessionInfo.from_json(self._request("GET", self._session_path(session_id),
                                                    session_id=session_id).json())

    def list_sessions(self, *, cwd: str | None = None, since_ms: int | None = None, limit: int | None = None,
                      sort: ListOrder = "activity") -> list[SessionInfo]:
        from sessionstore.models import js

        params: dict[str, Any] = {"sort": sort}
        if cwd is not None:
            params["cwd"] = cwd
        if since_ms is not None:
            params["since"] = js.iso_string(since_ms)
        found: list[SessionInfo] = []
        while True:
            if limit is not None:
                params["limit"] = limit - len(found)
            page = self._request("GET", "/v1/sessions", params=params).json()
            found.extend(SessionInfo.from_json(item) for item in page["sessions"])
            if not page.get("next") or (limit is not None and len(found) >= limit):
                return found
            params["cursor"] = page["next"]

    def most_recent_session(self, *, cwd: str | None = None) -> str | None:
        latest = self.list_sessions(cwd=cwd, limit=1, sort="activity")
        return latest[0].id if latest else None

    def header(self, session_id: str) -> SessionHeaderDict:
        buffer = io.BytesIO()  # (the export's first line; the rest is not read: the server stops writing it)
        self._stream(self._session_path(session_id, "/export"), buffer, session_id=session_id,
                     params={"format": "jsonl"}, lines=1)
        first = buffer.getvalue().split(b"\n", 1)[0]
        return cast("SessionHeaderDict", parse_line(first))

    # -- import / export -----------------------------------------------------------------------
    def import_jsonl(self, source: str | Path | IO[bytes], *, lenient: bool = False, replace: bool = False,
                     progress: Any = None) -> ImportResult:
        with _seekable(source) as body:
            start = body.tell()

            def chunks() -> Iterator[bytes]:
                body.seek(start)
                sent = 0
                while chunk := body.read(UPLOAD_CHUNK):
                    sent += len(chunk)
                    if progress is not None:
                        progress(sent)
                    yield chunk

            try:
                item = self._request("POST", "/v1/imports", content=chunks, media="application/jsonl",
                                     params={"lenient": str(lenient).lower(), "replace": str(replace).lower()}).json()
            except errors.JsonlError as exc:  # (named as the library names the source, not as the server its body)
                raise _renamed(exc, _source_name(source)) from None
        return ImportResult(
            session_id=item["sessionId"], entries=item["entries"], leaf_id=item.get("leafId"),
            skipped=tuple(SkippedLine(line=s["line"], reason=s["reason"]) for s in item.get("skipped", ())),
            diagnostics=tuple(Diagnostic(code=d["code"], message=d["message"], message_index=d.get("messageIndex"),
                                         entry_id=d.get("entryId")) for d in item.get("diagnostics", ())))

    def import_entries(self, header: Mapping[str, Any], entries: Iterable[Mapping[str, Any]], *,
                       replace: bool = False) -> ImportResult:
        lines = b"".join(js_dumpb(dict(line)) + b"\n" for line in (header, *entries))
        return self.import_jsonl(io.BytesIO(lines), replace=replace)

    def export_jsonl(self, session_id: str, fp: IO[bytes]) -> int:
        """The export route's bytes (``export``'s, byte for byte) streamed into ``fp``; returns the
        entries written (the lines after the header)."""
        lines = self._stream(self._session_path(session_id, "/export"), fp, session_id=session_id,
                             params={"format": "jsonl"})
        return max(lines - 1, 0)

    def _stream(self, path: str, fp: IO[bytes], *, session_id: str | None = None,
                params: Mapping[str, Any] | None = None, lines: int | None = None) -> int:
        """GET ``path`` and copy its body into ``fp`` as it arrives (memory bounded by a chunk), or only
        until ``lines`` newlines have come; returns the newlines written. An error answer raises before
        anything is written; a connection lost midway raises ``StoreError`` (``fp`` then holds a prefix:
        the caller's to discard)."""
        request = self._http.build_request("GET", path, params=params)
        try:
            response = self._http.send(request, stream=True)
        except httpx.TransportError:
            raise errors.StoreError(f"the server at {self.url} did not answer GET {path}") from None
        try:
            if response.status_code != 200:
                response.read()
                try:
                    problem = response.json()
                except ValueError:
                    problem = {"code": "INTERNAL", "detail": response.text[:200]}
                raise error_from_problem(response.status_code, problem if isinstance(problem, dict) else {},
                                         session_id)
            newlines = 0
            try:
                for chunk in response.iter_bytes():
                    fp.write(chunk)
                    newlines += chunk.count(b"\n")
                    if lines is not None and newlines >= lines:
                        break
            except httpx.TransportError:
                raise errors.StoreError(f"the server at {self.url} broke off GET {path}") from None
            return newlines
        finally:
            response.close()

    def write_context_json(self, session_id: str, fp: IO[bytes], *, leaf_id: Leaf = UNSET,
                           provider_safe: bool = False) -> None:
        """``context --json``'s bytes, streamed from the context route. ``leaf_id=None`` (the empty
        context before the first entry) has no form in the route: it is rendered here, the same bytes."""
        if leaf_id is None:
            text = js_dumpb(self.context(session_id, leaf_id=None, provider_safe=provider_safe).to_json(), indent=2)
            fp.write(text + b"\n")
            return
        params: dict[str, Any] = {"providerSafe": str(provider_safe).lower()}
        if not isinstance(leaf_id, _Unset):
            params["leaf"] = leaf_id
        self._stream(self._session_path(session_id, "/context"), fp, session_id=session_id, params=params)

    def write_tree_json(self, session_id: str, fp: IO[bytes]) -> None:
        """``tree --json``'s bytes, streamed from the tree route."""
        self._stream(self._session_path(session_id, "/tree"), fp, session_id=session_id)

    # -- search and stats ----------------------------------------------------------------------
    def search(self, query: str, *, cwd: str | None = None, limit: int | None = None,
               sort: SortOrder = "relevance", everything: bool = False,
               hits: int = HITS_PER_SESSION, archived: bool = False) -> list[SearchResult]:
        """The search route's results, each with its session's info (one GET per result: the route's
        ``search --json`` names a session by id; a session deleted in between is left out).
        ``limit=None`` (no limit, as the library's) is sent as the largest limit the route takes."""
        params: dict[str, Any] = {"q": query, "limit": NO_LIMIT if limit is None else limit, "sort": sort,
                                  "everything": str(everything).lower(), "hits": hits,
                                  "archived": str(archived).lower()}
        if cwd is not None:
            params["cwd"] = cwd
        found: list[SearchResult] = []
        for item in self._request("GET", "/v1/search", params=params).json():
            try:
                info = self.session(item["sessionId"])
            except errors.SessionNotFoundError:
                continue
            found.append(SearchResult.from_json(item, info))
        return found

    def stats(self, session_id: str) -> SessionStatsReport:
        """The stats route's report; the session's name and the model its leaf selects (which
        ``stats --json`` leaves out, and :meth:`SessionStatsReport.render` shows) are read here too."""
        item = self._request("GET", self._session_path(session_id, "/stats"), session_id=session_id).json()
        selected = None
        for entry in reversed(self.path(session_id)):
            if model_of(entry) is not None:
                selected = _selected_model_key(entry)
                break
        return SessionStatsReport.from_json(item, name=self.session(session_id).name, selected_model=selected)

    def stats_all(self, *, cwd: str | None = None, since_ms: int | float | None = None,
                  by: str | None = None) -> AllStatsReport:
        from sessionstore.models import js

        group_by = check_group_by(by)
        params: dict[str, Any] = {}
        if cwd is not None:
            params["cwd"] = cwd
        if since_ms is not None:  # (times are whole ms: modified >= 1.5 is modified >= 2)
            params["since"] = js.iso_string(math.ceil(since_ms))
        if group_by is not None:
            params["by"] = group_by
        return AllStatsReport.from_json(self._request("GET", "/v1/stats", params=params).json(), group_by)

    # -- reading the tree ----------------------------------------------------------------------
    def entries(self, session_id: str) -> list[SessionEntryDict]:
        response = self._request("GET", self._session_path(session_id, "/entries"), session_id=session_id)
        return [cast("SessionEntryDict", parse_line(line)) for line in response.content.split(b"\n") if line.strip()]

    def leaf(self, session_id: str) -> str | None:
        return self.session(session_id).leaf_id

    def entry(self, session_id: str, entry_id: str) -> SessionEntryDict:
        response = self._request("GET", self._session_path(session_id, f"/entries/{segment(entry_id)}"),
                                 session_id=session_id)
        return cast("SessionEntryDict", parse_line(response.content.rstrip(b"\n")))

    def session_ids_with_prefix(self, prefix: str, *, limit: int = 10) -> list[str]:
        """As the library's, from the session-ids route (at most its :data:`MAX_IDS` a call)."""
        if not isinstance(prefix, str):
            raise errors.InvalidInputError(f"a session id prefix must be a string, got {type(prefix).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise errors.InvalidInputError(f"limit must be a non-negative int, got {limit!r}")
        found = self._request("GET", "/v1/session-ids", params={"prefix": prefix, "limit": min(limit, MAX_IDS)})
        return [str(i) for i in found.json()["sessions"]]

    def entry_ids_with_prefix(self, session_id: str, prefix: str, *, limit: int = 10) -> list[tuple[str, str]]:
        """As the library's, from the entry-ids route (at most its :data:`MAX_IDS` a call)."""
        if not isinstance(prefix, str):
            raise errors.InvalidInputError(f"an entry id prefix must be a string, got {type(prefix).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise errors.InvalidInputError(f"limit must be a non-negative int, got {limit!r}")
        found = self._request("GET", self._session_path(session_id, "/entry-ids"), session_id=session_id,
                              params={"prefix": prefix, "limit": min(limit, MAX_IDS)}).json()["entries"]
        return [(str(e["id"]), str(e["type"])) for e in found]

    def children(self, session_id: str, entry_id: str | None) -> list[SessionEntryDict]:
        entries = self.entries(session_id)
        if entry_id is not None and all(e["id"] != entry_id for e in entries):
            raise errors.EntryNotFoundError(session_id, entry_id)
        return [e for e in entries if e.get("parentId") == entry_id]

    def path(self, session_id: str, leaf_id: Leaf = UNSET) -> list[SessionEntryDict]:
        leaf = self.leaf(session_id) if isinstance(leaf_id, _Unset) else leaf_id
        by_id = {e["id"]: e for e in self.entries(session_id)}
        if leaf is not None and leaf not in by_id:
            raise errors.EntryNotFoundError(session_id, leaf)
        path: list[SessionEntryDict] = []
        while leaf is not None:
            path.append(by_id[leaf])
            leaf = by_id[leaf].get("parentId")
        return path[::-1]

    def labels(self, session_id: str) -> dict[str, Any]:
        labels: dict[str, Any] = {}
        for entry in self.entries(session_id):
            if entry["type"] == "label":
                target, label = entry.get("targetId"), entry.get("label")
                if label:
                    labels[target] = label
                else:
                    labels.pop(target, None)
        return labels

    def tree(self, session_id: str) -> list[TreeNode]:
        """pi's ``getTree``, built here from the entries: children in append order, labels resolved,
        the active path (root..leaf) marked."""
        entries = self.entries(session_id)
        labels = self.labels(session_id)
        active = {e["id"] for e in self.path(session_id)}
        nodes = {e["id"]: TreeNode(entry=dict(e), label=labels.get(e["id"]), on_active_path=e["id"] in active)
                 for e in entries}
        roots: list[TreeNode] = []
        for e in entries:
            parent = e.get("parentId")
            (nodes[parent].children if parent in nodes else roots).append(nodes[e["id"]])
        return roots

    # -- context -------------------------------------------------------------------------------
    def context(self, session_id: str, *, leaf_id: Leaf = UNSET, provider_safe: bool = False,
                transform_context: Any = None) -> ContextResult:
        leaf = self.leaf(session_id) if isinstance(leaf_id, _Unset) else leaf_id
        path = [dict(e) for e in self.path(session_id, leaf)]
        return context_of(session_id, leaf, path, provider_safe=provider_safe, transform_context=transform_context)

    def validate(self, session_id: str, *, leaf_id: Leaf = UNSET) -> list[Diagnostic]:
        return self.context(session_id, leaf_id=leaf_id).diagnostics

    # -- appends -------------------------------------------------------------------------------
    def append_entries_detailed(self, session_id: str, entries: Iterable[Mapping[str, Any]], *,
                                expected_leaf: Leaf = UNSET) -> AppendResult:
        """POST the entries, each with its id and timestamp chosen here, and its parentId where it is
        known (the batch's previous entry; the first's is ``expected_leaf``'s, with ``If-Match``).
        Without ``expected_leaf`` the first goes on the server's current leaf, as the library's does; a
        retry of it is safe by the request's ``Idempotency-Key``, one with ``expected_leaf`` also by its ids."""
        placed: list[Json] = []
        parent: Leaf = expected_leaf
        for entry in entries:
            one = dict(entry)
            one.setdefault("id", new_entry_id(lambda _id: False))
            if not isinstance(parent, _Unset):
                one.setdefault("parentId", parent)
            one.setdefault("timestamp", now_iso())
            parent = one["id"]
            placed.append(one)
        answer = self._request("POST", self._session_path(session_id, "/entries"), session_id=session_id,
                               json=placed, headers=self._if_match(expected_leaf)).json()
        return AppendResult(entries=[(e["id"], e["parentId"]) for e in answer["entries"]],
                            leaf_id=answer["leafId"], written=True)

    def append_entries(self, session_id: str, entries: Iterable[Mapping[str, Any]], *,
                       expected_leaf: Leaf = UNSET) -> list[str]:
        return self.append_entries_detailed(session_id, entries, expected_leaf=expected_leaf).ids

    def append_entry(self, session_id: str, entry: Mapping[str, Any], *, expected_leaf: Leaf = UNSET,
                     entry_id: str | None = None) -> str:
        """As the library's: one entry object, built and checked by its kind here, then through the append
        route. A refusal reads as the library's, without the batch's ``entries[0]`` place."""
        from sessionstore.models.kinds import entry_fields

        fields = entry_fields(entry, keep=("timestamp",))
        if entry_id is not None:
            fields["id"] = entry_id
        try:
            return self.append_entries(session_id, [fields], expected_leaf=expected_leaf)[0]
        except errors.SessionStoreError as exc:
            text = str(exc)
            for place in ("entries[0]: ", "entries[0]."):
                if text.startswith(place) and exc.args == (text,):
                    exc.args = (text[len(place):],)
                    break
            raise

    def append_message(self, session_id: str, message: Any, *, expected_leaf: Leaf = UNSET,
                       entry_id: str | None = None) -> str:
        return self.append_entry(session_id, {"type": "message", "message": message}, expected_leaf=expected_leaf,
                                 entry_id=entry_id)

    def append_tool_result(self, session_id: str, *, tool_call_id: str, tool_name: str, content: str | list[Any],
                           is_error: bool = False, details: Any = None, expected_leaf: Leaf = UNSET) -> str:
        from sessionstore.models.messages import tool_result_message

        message = tool_result_message(tool_call_id=tool_call_id, tool_name=tool_name, content=content,
                                      is_error=is_error, details=details)
        return self.append_message(session_id, message, expected_leaf=expected_leaf)

    def append_model_change(self, session_id: str, *, provider: str, model_id: str,
                            expected_leaf: Leaf = UNSET) -> str:
        return self.append_entry(session_id, {"type": "model_change", "provider": provider, "modelId": model_id},
                                 expected_leaf=expected_leaf)

    def append_thinking_level_change(self, session_id: str, thinking_level: str, *,
                                     expected_leaf: Leaf = UNSET) -> str:
        return self.append_entry(session_id, {"type": "thinking_level_change", "thinkingLevel": thinking_level},
                                 expected_leaf=expected_leaf)

    def append_custom(self, session_id: str, custom_type: str, data: Any = None, *,
                      expected_leaf: Leaf = UNSET) -> str:
        return self.append_entry(session_id, {"type": "custom", "customType": custom_type, "data": data},
                                 expected_leaf=expected_leaf)

    def append_custom_message(self, session_id: str, custom_type: str, content: str | list[Any], *,
                              display: bool = True, details: Any = None, expected_leaf: Leaf = UNSET) -> str:
        return self.append_entry(session_id, {"type": "custom_message", "customType": custom_type, "content": content,
                                            "display": display, "details": details},
                                 expected_leaf=expected_leaf)

    def append_label(self, session_id: str, target_id: str, label: str | None = None, *,
                     expected_leaf: Leaf = UNSET) -> str:
        return self.append_entry(session_id, {"type": "label", "targetId": target_id, "label": label},
                                 expected_leaf=expected_leaf)

    def append_session_info(self, session_id: str, name: str, *, expected_leaf: Leaf = UNSET) -> str:
        return self.append_entry(session_id, {"type": "session_info", "name": name},
                                 expected_leaf=expected_leaf)

    def append_usage(self, session_id: str, *, kind: str, provider: str, model: str, usage: Mapping[str, Any],
                     note: str | None = None, expected_leaf: Leaf = UNSET) -> str:
        return self.append_entry(session_id, {"type": "usage", "kind": kind, "provider": provider, "model": model,
                                            "usage": usage, "note": note},
                                 expected_leaf=expected_leaf)

    def append_context_edit(self, session_id: str, target_id: str, replacement: Mapping[str, Any] | None, *,
                            expected_leaf: Leaf = UNSET) -> str:
        edit = {"type": "context_edit", "targetId": target_id, "replacement": replacement}
        return self.append_entry(session_id, edit, expected_leaf=expected_leaf)

    # -- leaf and branches ---------------------------------------------------------------------
    def branch(self, session_id: str, entry_id: str, *, expected_leaf: Leaf = UNSET) -> None:
        self._request("PUT", self._session_path(session_id, "/leaf"), session_id=session_id,
                      json={"leafId": entry_id}, headers=self._if_match(expected_leaf))

    def reset_leaf(self, session_id: str, *, expected_leaf: Leaf = UNSET) -> None:
        self._request("PUT", self._session_path(session_id, "/leaf"), session_id=session_id,
                      json={"leafId": None}, headers=self._if_match(expected_leaf))

    def branch_with_summary(self, session_id: str, entry_id: str | None, summary: str, *, details: Any = None,
                            from_hook: bool | None = None, usage: Mapping[str, Any] | None = None,
                            expected_leaf: Leaf = UNSET) -> str:
        """As the library's, in two requests (the API has no route for it): the leaf moves to
        ``entry_id`` (compare-and-set on the leaf left), then the summary is appended there."""
        leaf = self.leaf(session_id) if isinstance(expected_leaf, _Unset) else expected_leaf
        fields: Json = {"type": "branch_summary", "fromId": leaf if leaf is not None else "root", "summary": summary}
        for key, value in (("details", details), ("usage", usage), ("fromHook", from_hook)):
            if value is not None:
                fields[key] = value
        from sessionstore.models.kinds import entry_fields

        fields = entry_fields(fields)
        if entry_id is None:
            self.reset_leaf(session_id, expected_leaf=leaf)
        else:
            self.branch(session_id, entry_id, expected_leaf=leaf)
        return self.append_entries(session_id, [fields], expected_leaf=entry_id)[0]

    def fork(self, session_id: str, *, leaf_id: Leaf = UNSET, new_session_id: str | None = None) -> str:
        body: Json = {}
        if not isinstance(leaf_id, _Unset):
            if leaf_id is None:
                raise errors.InvalidInputError("a fork ends at an entry: leaf_id=None has no route")
            body["entryId"] = leaf_id
        if new_session_id is not None:
            body["id"] = new_session_id
        return str(self._request("POST", self._session_path(session_id, "/fork"), session_id=session_id,
                                 json=body).json()["id"])

    # -- compaction ----------------------------------------------------------------------------
    def plan_compaction(self, session_id: str, *, keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
                        leaf_id: Leaf = UNSET) -> CompactionPlan | None:
        if isinstance(keep_recent_tokens, bool) or not isinstance(keep_recent_tokens, int) or keep_recent_tokens < 0:
            raise errors.InvalidInputError(f"keep_recent_tokens must be a non-negative int, got {keep_recent_tokens!r}")
        return plan_compaction(self.path(session_id, leaf_id), keep_recent_tokens=keep_recent_tokens)

    def compact(self, session_id: str, *, summary: str, first_kept_entry_id: str | None = None,
                tokens_before: int | None = None, details: Any = None, from_hook: bool | None = None,
                usage: Mapping[str, Any] | None = None, keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
                expected_leaf: Leaf = UNSET) -> str:
        body: Json = {"summary": summary, "keepRecentTokens": keep_recent_tokens}
        for key, value in (("firstKeptEntryId", first_kept_entry_id), ("tokensBefore", tokens_before),
                           ("details", details), ("fromHook", from_hook), ("usage", usage)):
            if value is not None:
                body[key] = value
        return str(self._request("POST", self._session_path(session_id, "/compact"), session_id=session_id,
                                 json=body, headers=self._if_match(expected_leaf)).json()["id"])

    # -- what a remote store cannot do ---------------------------------------------------------
    def sync(self, *args: Any, **kwargs: Any) -> Any:
        raise errors.InvalidInputError("sync reads a local pi directory: run it where the server's database is")

    def watch_sync(self, *args: Any, **kwargs: Any) -> Any:
        raise errors.InvalidInputError("watch_sync reads a local pi directory: run it where the server's"
                                       " database is")

    # -- following (SPEC 17) ---------------------------------------------------------------------
    def events(self, session_id: str, *, after: int | None = None) -> Iterator[SessionEvent]:
        """As :meth:`SessionStore.events <sessionstore.api.SessionStore.events>`, from the session's event
        stream: its entries after seq ``after``, then each new one, until a ``deleted`` event. A dropped
        connection, a server restart or a cut-off is reconnected with ``Last-Event-ID`` (nothing skipped
        or repeated), also through an outage: a 503 is tried again after its ``Retry-After``. Only a failure
        lasting :data:`FEED_PATIENCE` seconds with nothing received raises ``StoreError``."""
        follow = _Following(session_id, after)
        while True:
            try:
                with self._http.stream("GET", self._session_path(session_id, "/events"), headers=follow.headers(),
                                       timeout=_FEED_TIMEOUT) as response:
                    if response.status_code not in (200, *RETRY_STATUSES):
                        response.read()
                        raise _problem_of(response, session_id)
                    follow.answered(response)
                    for line in response.iter_lines() if response.status_code == 200 else ():
                        event = follow.line(line)
                        if event is not None:
                            yield event
                            if event.kind == "deleted":
                                return
            except (httpx.TransportError, httpx.RemoteProtocolError):
                pass
            time.sleep(follow.failed(self.url))


class AsyncRemoteSessionStore:
    """The async twin of :class:`RemoteSessionStore`: every method is the sync one's, awaited, run in a
    worker thread (one code path for both; the HTTP connection pool is shared)."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 30.0, retries: int = 5,
                 transport: httpx.BaseTransport | None = None, idempotency_keys: bool = True,
                 tenant: str | None = None) -> None:
        self._store = RemoteSessionStore(base_url, token, timeout=timeout, retries=retries, transport=transport,
                                         idempotency_keys=idempotency_keys, tenant=tenant)
        self.url = self._store.url

    @property
    def tenant(self) -> str:
        """As :attr:`RemoteSessionStore.tenant`."""
        return self._store.tenant

    def for_tenant(self, tenant: str) -> AsyncRemoteSessionStore:
        """Not possible, as :meth:`RemoteSessionStore.for_tenant`: raises ``InvalidInputError``."""
        self._store.for_tenant(tenant)
        raise AssertionError("unreachable")

    async def close(self) -> None:
        self._store.close()

    async def aclose(self) -> None:
        self._store.close()

    async def __aenter__(self) -> AsyncRemoteSessionStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._store.close()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)
        if not callable(method):
            return method

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(method, *args, **kwargs)

        return call

    async def events(self, session_id: str, *, after: int | None = None) -> AsyncIterator[SessionEvent]:
        """As :meth:`RemoteSessionStore.events`, on the event loop (one HTTP connection of its own)."""
        store = self._store
        follow = _Following(session_id, after)
        async with httpx.AsyncClient(base_url=store.url, headers=dict(store._http.headers)) as http:
            while True:
                try:
                    async with http.stream("GET", store._session_path(session_id, "/events"),
                                           headers=follow.headers(), timeout=_FEED_TIMEOUT) as response:
                        if response.status_code not in (200, *RETRY_STATUSES):
                            await response.aread()
                            raise _problem_of(response, session_id)
                        follow.answered(response)
                        async for line in _lines(response):
                            event = follow.line(line)
                            if event is not None:
                                yield event
                                if event.kind == "deleted":
                                    return
                except (httpx.TransportError, httpx.RemoteProtocolError):
                    pass
                await asyncio.sleep(follow.failed(store.url))


FEED_PATIENCE = 300.0
"""Seconds a feed's follower goes on reconnecting while every connection fails (the server restarting, the
database away) before its ``events`` raises ``StoreError``."""
FEED_RETRY_AFTER_MAX = 30.0
"""The longest pause a 503's ``Retry-After`` makes a follower wait before it connects again."""

_FEED_TIMEOUT = httpx.Timeout(30.0, read=60.0)
"""A feed's read timeout: beyond the server's heartbeat (15 s), so a silent connection is a dead one."""


async def _lines(response: httpx.Response) -> AsyncIterator[str]:
    """The lines of a feed's answer (none for a 503: it is tried again)."""
    if response.status_code == 200:
        async for line in response.aiter_lines():
            yield line


def _problem_of(response: httpx.Response, session_id: str) -> Exception:
    try:
        problem = response.json()
    except ValueError:
        problem = {"code": "INTERNAL", "detail": response.text[:200]}
    return error_from_problem(response.status_code, problem if isinstance(problem, dict) else {}, session_id)


class _Following:
    """A client's reading of one session's event stream (SSE framing), its last seq, and its reconnects."""

    def __init__(self, session_id: str, after: int | None) -> None:
        self.session_id = session_id
        self.last = after
        self.attempts = 0
        self.failing_since: float | None = None
        self.retry_after: float | None = None
        self._kind = "message"
        self._data: list[str] = []
        self._id: str | None = None

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.last is not None:
            headers["Last-Event-ID"] = str(self.last)
        return headers

    def answered(self, response: httpx.Response) -> None:
        """A connection was answered: a stream (the failures so far are over) or a 503 (its ``Retry-After``
        is the next pause)."""
        if response.status_code == 200:
            self.attempts, self.failing_since, self.retry_after = 0, None, None
            return
        try:
            self.retry_after = min(float(response.headers.get("retry-after", "")), FEED_RETRY_AFTER_MAX)
        except ValueError:
            self.retry_after = None

    def failed(self, url: str) -> float:
        """The pause before the next connection (a backoff up to 2 s, or the server's ``Retry-After``);
        ``StoreError`` once connections have failed for :data:`FEED_PATIENCE` seconds with nothing received."""
        now = time.monotonic()
        if self.failing_since is None:
            self.failing_since = now
        self.attempts += 1
        self._kind, self._data, self._id = "message", [], None
        if now - self.failing_since > FEED_PATIENCE:
            raise errors.StoreError(f"the server at {url} did not answer the events of {self.session_id!r}"
                                    f" for {FEED_PATIENCE:g} s")
        pause = float(min(0.05 * 2 ** self.attempts, 2.0))
        if self.retry_after is not None:
            pause, self.retry_after = max(pause, self.retry_after), None
        return pause

    def line(self, line: str) -> SessionEvent | None:
        """Read one line of the stream; the event it completes, if any."""
        if line == "":
            kind, data, event_id = self._kind, "\n".join(self._data), self._id
            self._kind, self._data, self._id = "message", [], None
            return self._event(kind, data, event_id)
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self._kind = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            self._id = value
        return None

    def _event(self, kind: str, data: str, event_id: str | None) -> SessionEvent | None:
        self.attempts, self.failing_since = 0, None
        if kind == "entry" and event_id is not None:
            seq = int(event_id)
            if self.last is not None and seq <= self.last:
                return None  # (never twice, whatever a server sends)
            self.last = seq
            return SessionEvent("entry", seq=seq, entry=dict(parse_line(data.encode())))
        if kind == "leaf":
            return SessionEvent("leaf", leaf_id=parse_line(data.encode()).get("leafId"))
        if kind == "deleted":
            return SessionEvent("deleted")
        return None  # (resume: the stream ends, and is reconnected after the last seq)

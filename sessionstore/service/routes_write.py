"""The routes that write (SPEC 15): create, delete, append, move the leaf, fork, compact, import.

Each reads its own body (so the limits of the middleware and the library's JSON rules apply, not a
framework's), runs the store call in a worker thread, and answers with the session's ``ETag``. Every
write route honours ``Idempotency-Key`` (see :func:`idempotent`).
"""

from __future__ import annotations

import functools
import hashlib
import io
import tempfile
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import IO, Annotated, Any, TypeVar, cast

import anyio
import anyio.from_thread
from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.responses import Response

from sessionstore import views
from sessionstore.api import SessionStore
from sessionstore.errors import InvalidInputError, SessionStoreError
from sessionstore.service import bodies, idempotency, ops, problems
from sessionstore.service.config import ServiceConfig
from sessionstore.service.deps import Caller, CallerDep, WriterStore
from sessionstore.service.problems import ProblemError
from sessionstore.store.records import UNSET

router = APIRouter(prefix="/v1", tags=["write"])
M = TypeVar("M", bound=BaseModel)

JSON_TYPE = "application/json"
KEY_IN_USE_WAIT = 10.0
"""How long a request waits for the answer of a running request with its ``Idempotency-Key``."""
REPLAYED_HEADERS = ("content-type", "etag", "location")
"""The headers of a response an ``Idempotency-Key`` replays with its body."""


# -- bodies (pydantic models: validated strictly, and the schemas /openapi.json shows) --------------
class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class CreateSession(_Body):
    id: str | None = None
    cwd: str | None = Field(default=None, description="The session's working directory (default: empty).")
    name: str | None = Field(default=None, description="A display name (a session_info entry).")


class MoveLeaf(_Body):
    leafId: str | None = Field(description="The entry to make the leaf; null: before the first entry.")


class Fork(_Body):
    entryId: str | None = Field(default=None, description="The entry the fork ends at (default: the leaf).")
    id: str | None = Field(default=None, description="The new session's id (default: a new UUID).")


class Compact(_Body):
    summary: str
    firstKeptEntryId: str | None = None
    tokensBefore: int | None = None
    details: Any = None
    fromHook: bool | None = None
    usage: dict[str, Any] | None = None
    keepRecentTokens: int | None = None


class SessionItem(BaseModel):
    """The session's ``ls --json`` item."""

    model_config = ConfigDict(extra="allow")
    id: str
    cwd: str
    created: str


class EntryRef(BaseModel):
    id: str
    parentId: str | None


class Appended(BaseModel):
    entries: list[EntryRef]
    leafId: str | None


class LeafMoved(BaseModel):
    leafId: str | None


class Problem(BaseModel):
    """An RFC 9457 problem (``application/problem+json``)."""

    model_config = ConfigDict(extra="allow")
    type: str
    status: int
    title: str
    code: str
    detail: str


def _request_schema(schema: dict[str, Any], media: tuple[str, ...] = (JSON_TYPE,)) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {m: {"schema": schema} for m in media}}}


def _model_schema(model: type[BaseModel], *headers: str) -> dict[str, Any]:
    return {**_request_schema(model.model_json_schema()), **_headers(*headers)}


HEADERS: dict[str, str] = {
    "Idempotency-Key": "Retries are safe: the same key and request within 24 h answer the first response"
                       " again (a refusal too, a 5xx not) and write nothing; another request with the key: 422"
                       " IDEMPOTENCY_KEY_REUSED; while the first still runs: 409 IDEMPOTENCY_KEY_IN_USE.",
    "If-Match": 'Compare-and-set: "<leafId>" or "root" (the session\'s ETag); another leaf: 412 LEAF_CONFLICT'
                " with currentLeafId, nothing written.",
}


def _headers(*names: str) -> dict[str, Any]:
    """The OpenAPI ``parameters`` of the request headers ``names`` (read by the routes themselves)."""
    return {"parameters": [{"name": name, "in": "header", "required": False, "description": HEADERS[name],
                            "schema": {"type": "string"}} for name in names]}


ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "description": description} for status, description in (
        (400, "BAD_JSON, INVALID_INPUT"), (401, "UNAUTHORIZED"), (403, "FORBIDDEN"), (404, "NOT_FOUND"),
        (409, "SESSION_EXISTS, DUPLICATE_ID, IDEMPOTENCY_KEY_IN_USE"), (412, "LEAF_CONFLICT"),
        (413, "PAYLOAD_TOO_LARGE"),
        (415, "UNSUPPORTED_MEDIA_TYPE"), (422, "INVALID_INPUT, INVALID_ENTRY, IDEMPOTENCY_KEY_REUSED"),
    )
}


def _validated(model: type[M], value: Any) -> M:
    try:
        return model.model_validate(bodies.json_object(value, "the body"))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise ProblemError(422, "INVALID_INPUT", f"{where}: {first['msg']}") from None


# -- responses ---------------------------------------------------------------------------------
def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """``value`` as the CLI's ``--json`` writes it (``JSON.stringify(value, null, 2)`` and a newline)."""
    return Response(views.json_bytes(value), status_code=status, media_type=JSON_TYPE, headers=headers)


def session_location(session_id: str) -> str:
    """The session's path; ``.`` and ``..`` as ``%2E`` (clients would resolve them as dot segments)."""
    segment = urllib.parse.quote(session_id, safe="")
    return "/v1/sessions/" + (segment.replace(".", "%2E") if segment in (".", "..") else segment)


def _created(store: SessionStore, session_id: str) -> Response:
    info = store.session(session_id)
    return json_response(views.session_item(store, info), 201,
                         {"Location": session_location(session_id), "ETag": bodies.etag(store.leaf(session_id))})


# -- Idempotency-Key --------------------------------------------------------------------------
def _fingerprint(request: Request, body: bytes | str) -> str:
    """The request's identity for ``Idempotency-Key``: method, raw path, query, ``If-Match`` (a condition
    changes what the request asks for) and body."""
    digest = hashlib.sha256()
    for part in (request.method, request.scope.get("raw_path", b"").decode("latin-1"), request.url.query,
                 request.headers.get("if-match", "")):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(body.encode() if isinstance(body, str) else body)
    return digest.hexdigest()


def _key(request: Request) -> str | None:
    key = request.headers.get("idempotency-key")
    if key is None:
        return None
    if not 1 <= len(key) <= 255 or not key.isascii() or not key.isprintable():
        raise ProblemError(400, "INVALID_INPUT", "Idempotency-Key must be 1-255 printable ASCII characters")
    return key


async def idempotent(request: Request, who: Caller, fingerprint: str | None,
                     run: Callable[[], Awaitable[Response]]) -> Response:
    """``run()``, unless the request's ``Idempotency-Key`` was seen with the same ``fingerprint`` (the
    first response again, nothing written) or with another one (422 IDEMPOTENCY_KEY_REUSED).

    The first response is kept whatever its outcome, a refusal too (a 412, a 404, a 409: the request
    was answered and a retry gets that answer), except a 5xx: the request was not served (the database
    was away), so a retry runs again, as ``Retry-After`` invites. A retry arriving while the first
    request still runs waits for its answer (up to :data:`KEY_IN_USE_WAIT` seconds, then 409
    IDEMPOTENCY_KEY_IN_USE with ``Retry-After``): it never runs the request a second time. When the
    database goes away after the key was claimed, the answer goes out anyway and the claim's end is
    written once the database is back (:class:`~sessionstore.service.idempotency.Unsettled`)."""
    key = _key(request)
    if key is None or fingerprint is None:
        return await run()
    records = idempotency.IdempotencyRecords(request.app.state.store)
    unsettled = _unsettled(request)
    waited = 0.0
    while True:
        if unsettled:  # (claims this worker could not end while the database was away; one may be this key's)
            await run_in_threadpool(unsettled.settle, _is_unavailable)
        try:
            stored = await run_in_threadpool(records.begin, who.tenant, key, fingerprint)
            break
        except idempotency.KeyReused:
            raise ProblemError(422, "IDEMPOTENCY_KEY_REUSED",
                               "this Idempotency-Key was used with another request: use a new key") from None
        except idempotency.KeyInUse:
            if waited >= KEY_IN_USE_WAIT:
                raise ProblemError(409, "IDEMPOTENCY_KEY_IN_USE", "a request with this Idempotency-Key is still"
                                   " running: retry later", headers={"Retry-After": "1"}) from None
            await anyio.sleep(0.05)  # (a retry racing the first request waits for its answer)
            waited += 0.05
    if stored is not None:
        headers = {**dict(stored.headers), "Idempotent-Replayed": "true"}
        return Response(stored.body, status_code=stored.status, headers=headers)
    try:
        try:
            response = await run()
        except ProblemError as exc:
            response = problems.from_problem_error(exc)
        except SessionStoreError as exc:
            response = problems.from_problem_error(problems.for_store_error(exc))
    except BaseException:
        await _end_claim(unsettled, functools.partial(records.release, who.tenant, key, fingerprint))
        raise
    if response.status_code < 500:
        kept = {name: value for name, value in response.headers.items() if name in REPLAYED_HEADERS}
        end = functools.partial(records.finish, who.tenant, key, fingerprint, response.status_code, kept,
                                bytes(response.body))
    else:
        end = functools.partial(records.release, who.tenant, key, fingerprint)
    await _end_claim(unsettled, end)
    return response


def _unsettled(request: Request) -> idempotency.Unsettled:
    """The worker's claims whose end waits for the database (made with the first keyed request)."""
    found: idempotency.Unsettled | None = getattr(request.app.state, "unsettled_claims", None)
    if found is None:
        found = request.app.state.unsettled_claims = idempotency.Unsettled()
    return found


def _is_unavailable(exc: BaseException) -> bool:
    return problems.unavailable(exc) is not None


async def _end_claim(unsettled: idempotency.Unsettled, end: Callable[[], None]) -> None:
    """Write the end of a claim (its answer, or its release); when the database has gone away meanwhile,
    keep it for later (:class:`~sessionstore.service.idempotency.Unsettled`) and answer anyway: a request
    that was served (its answer below 500) says so, one that was not says 503."""
    try:
        await run_in_threadpool(end)
    except Exception as exc:
        if not _is_unavailable(exc):
            raise
        idempotency.log.warning("an Idempotency-Key's claim is ended later: the database is away (%s)",
                                type(exc).__name__)
        unsettled.add(end)


async def _read(request: Request) -> tuple[Any, bytes]:
    bodies.require_type(request, bodies.JSON_TYPES)
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
    return bodies.parse_json(bytes(raw)), bytes(raw)


# -- routes ------------------------------------------------------------------------------------
@router.post("/sessions", status_code=201, response_class=Response,
             openapi_extra=_model_schema(CreateSession, "Idempotency-Key"),
             responses={201: {"model": SessionItem, "description": "the session's ls --json item"}, **ERRORS})
async def create_session(request: Request, store: WriterStore,
                         who: CallerDep) -> Response:
    """Create an empty session; 201 with its ``ls --json`` item, ``Location`` and ``ETag``."""
    value, raw = await _read(request) if request.headers.get("content-length") != "0" else ({}, b"")
    body = _validated(CreateSession, value)

    def create() -> Response:
        session_id = store.create_session(cwd=body.cwd or "", session_id=body.id)
        if body.name is not None:
            try:
                store.append_session_info(session_id, body.name)
            except InvalidInputError:
                store.delete_session(session_id)
                raise
        return _created(store, session_id)

    return await idempotent(request, who, _fingerprint(request, raw), lambda: run_in_threadpool(create))


@router.delete("/sessions/{session_id:id}", status_code=204, response_class=Response, responses=ERRORS,
               openapi_extra=_headers("If-Match", "Idempotency-Key"))
async def delete_session(session_id: str, request: Request, store: WriterStore, who: CallerDep,
                         erase: bool = False) -> Response:
    """Delete the session and its entries; with ``If-Match`` only while its leaf is that one (412).
    ``erase=true`` (an ``admin`` token, else 403): erase it, every trace of it (``sessionstore erase``;
    SPEC 18), audited with the token's id; on PostgreSQL the VACUUM is left to the scheduled retention
    run. ``If-Match`` is not taken with ``erase``."""
    expected = bodies.expected_leaf(request)
    if erase and who.scope != "admin":
        raise ProblemError(403, "FORBIDDEN", f"a {who.scope!r} token may not erase: erasure needs an admin token")

    def delete() -> Response:
        if erase:
            from sessionstore.store.erasure import erase_session

            by = "no-auth" if who.token_id is None else f"token:{who.token_id}"
            erase_session(store._entries, session_id, by=by, vacuum=False)
            return Response(status_code=204)
        store.delete_session(session_id, expected_leaf=expected)
        return Response(status_code=204)

    return await idempotent(request, who, _fingerprint(request, b""), lambda: run_in_threadpool(delete))


ENTRY_SCHEMA: dict[str, Any] = {"type": "object", "description": "a pi v3 entry; id, parentId and timestamp"
                                " may be left out", "required": ["type"], "additionalProperties": True}


@router.post("/sessions/{session_id:id}/entries", status_code=201, response_class=Response,
             openapi_extra={**_request_schema({"oneOf": [ENTRY_SCHEMA, {"type": "array", "items": ENTRY_SCHEMA}]}),
                            **_headers("If-Match", "Idempotency-Key")},
             responses={201: {"model": Appended, "description": "the entries' ids and parents"}, **ERRORS})
async def append_entries(session_id: str, request: Request, store: WriterStore,
                         who: CallerDep) -> Response:
    """Append one entry (an object) or several (an array) at the leaf, atomically; ``If-Match`` makes it
    conditional (412 LEAF_CONFLICT with ``currentLeafId``). Entries with their own ids already stored with
    the same content are not written again (409 DUPLICATE_ID when the content differs)."""
    expected = bodies.expected_leaf(request)
    value, raw = await _read(request)
    entries = value if isinstance(value, list) else [value]
    limit = _config(request).limits.max_entries
    if len(entries) > limit:
        raise ProblemError(413, "PAYLOAD_TOO_LARGE", f"an append takes at most {limit} entries, not {len(entries)}")
    if not entries:
        raise ProblemError(422, "INVALID_INPUT", "the body is an empty array: give at least one entry")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ProblemError(422, "INVALID_ENTRY", f"entry {index} is not a JSON object", entry=index)

    def append() -> Response:
        result = store.append_entries_detailed(session_id, entries, expected_leaf=expected)
        ops.entries_appended(len(result.entries) if result.written else 0)
        return json_response({"entries": [{"id": i, "parentId": p} for i, p in result.entries],
                              "leafId": result.leaf_id}, 201, {"ETag": bodies.etag(result.leaf_id)})

    return await idempotent(request, who, _fingerprint(request, raw), lambda: run_in_threadpool(append))


@router.put("/sessions/{session_id:id}/leaf", response_class=Response,
            openapi_extra=_model_schema(MoveLeaf, "If-Match", "Idempotency-Key"),
            responses={200: {"model": LeafMoved, "description": "the new leaf"}, **ERRORS})
async def move_leaf(session_id: str, request: Request, store: WriterStore, who: CallerDep) -> Response:
    """Move the leaf to an entry (a branch), or before the first one (``null``)."""
    expected = bodies.expected_leaf(request)
    value, raw = await _read(request)
    body = _validated(MoveLeaf, value)

    def move() -> Response:
        if body.leafId is None:
            store.reset_leaf(session_id, expected_leaf=expected)
        else:
            store.branch(session_id, body.leafId, expected_leaf=expected)
        return json_response({"leafId": body.leafId}, 200, {"ETag": bodies.etag(body.leafId)})

    return await idempotent(request, who, _fingerprint(request, raw), lambda: run_in_threadpool(move))


@router.post("/sessions/{session_id:id}/fork", status_code=201, response_class=Response,
             openapi_extra=_model_schema(Fork, "Idempotency-Key"),
             responses={201: {"model": SessionItem, "description": "the new session's ls --json item"}, **ERRORS})
async def fork(session_id: str, request: Request, store: WriterStore,
               who: CallerDep) -> Response:
    """A new session holding the path root..``entryId`` (default: the leaf), as pi forks."""
    value, raw = await _read(request) if request.headers.get("content-length") != "0" else ({}, b"")
    body = _validated(Fork, value)

    def run() -> Response:
        new_id = store.fork(session_id, leaf_id=UNSET if body.entryId is None else body.entryId,
                            new_session_id=body.id)
        return _created(store, new_id)

    return await idempotent(request, who, _fingerprint(request, raw), lambda: run_in_threadpool(run))


@router.post("/sessions/{session_id:id}/compact", status_code=201, response_class=Response,
             openapi_extra=_model_schema(Compact, "If-Match", "Idempotency-Key"),
             responses={201: {"description": "the compaction entry", "content": {JSON_TYPE: {}}}, **ERRORS})
async def compact(session_id: str, request: Request, store: WriterStore,
                  who: CallerDep) -> Response:
    """Append a compaction entry (the cut planned as pi plans it unless ``firstKeptEntryId``)."""
    expected = bodies.expected_leaf(request)
    value, raw = await _read(request)
    body = _validated(Compact, value)

    def run() -> Response:
        options: dict[str, Any] = {}
        if body.keepRecentTokens is not None:
            options["keep_recent_tokens"] = body.keepRecentTokens
        entry_id = store.compact(session_id, summary=body.summary, first_kept_entry_id=body.firstKeptEntryId,
                                 tokens_before=body.tokensBefore, details=body.details, from_hook=body.fromHook,
                                 usage=body.usage, expected_leaf=expected, **options)
        return json_response(store.entry(session_id, entry_id), 201, {"ETag": bodies.etag(entry_id)})

    return await idempotent(request, who, _fingerprint(request, raw), lambda: run_in_threadpool(run))


BODY_NAME = "request body"
"""How an import's errors name the file they read (``request body:LINE: ...``)."""

JSONL_SCHEMA = {"type": "string", "description": "a pi session file (JSONL, v1-v3)"}


@router.post("/imports", status_code=201, response_class=Response,
             openapi_extra={**_request_schema(JSONL_SCHEMA, bodies.JSONL_TYPES), **_headers("Idempotency-Key")},
             responses={201: {"description": "the import --json item", "content": {JSON_TYPE: {}}}, **ERRORS})
async def import_session(
    store: WriterStore, who: CallerDep, request: Request,
    lenient: Annotated[bool, Query(description="skip bad lines")] = False,
    replace: Annotated[bool, Query(description="replace a session of the same id")] = False,
) -> Response:
    """Import one pi session file (the JSONL body), streamed: the body is never held whole in memory. With
    an ``Idempotency-Key`` it is spooled to a temporary file first (to compare it with the first request)."""
    bodies.require_type(request, bodies.JSONL_TYPES)
    if _key(request) is None:
        reader = io.BufferedReader(_BodyReader(request.stream()))
        return await run_in_threadpool(_import, store, reader, lenient, replace)
    with tempfile.TemporaryFile() as spool:
        digest = hashlib.sha256()
        async for chunk in request.stream():
            digest.update(chunk)
            await run_in_threadpool(spool.write, chunk)
        spool.seek(0)
        fingerprint = _fingerprint(request, digest.hexdigest())
        named = _NamedSpool(spool)
        return await idempotent(request, who, fingerprint,
                                lambda: run_in_threadpool(_import, store, named, lenient, replace))


class _NamedSpool(io.BufferedReader):
    """A spooled body read as the streamed one is named in errors (a temporary file's name is its
    descriptor's number)."""

    name = BODY_NAME

    def __init__(self, spool: IO[bytes]) -> None:
        super().__init__(cast(Any, spool))


def _import(store: SessionStore, source: IO[bytes] | io.BufferedReader, lenient: bool, replace: bool) -> Response:
    result = store.import_jsonl(source, lenient=lenient, replace=replace)
    return json_response(views.import_item(result), 201, {"Location": session_location(result.session_id),
                                     "ETag": bodies.etag(result.leaf_id)})


class _BodyReader(io.RawIOBase):
    """The request body as a binary file for a worker thread: each read takes the next chunk from the
    event loop, so the import holds one chunk (and one line) at a time."""

    name = BODY_NAME

    def __init__(self, stream: AsyncIterator[bytes]) -> None:
        self._stream = stream
        self._pending = memoryview(b"")
        self._ended = False

    def readable(self) -> bool:
        return True

    async def _next(self) -> bytes:
        try:
            return await self._stream.__anext__()
        except StopAsyncIteration:
            return b""

    def readinto(self, buffer: Any) -> int:
        while not self._pending and not self._ended:
            self._pending = memoryview(anyio.from_thread.run(self._next))
            self._ended = not self._pending
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]  # (a view: the chunk's rest is not copied)
        return size


def _config(request: Request) -> ServiceConfig:
    config: ServiceConfig = request.app.state.config
    return config

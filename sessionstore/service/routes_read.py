"""The routes that read (SPEC 15): each body is the CLI output of the same name, made by the same function.

A whole-session body (context, tree, export, entries) is written by the store's own writer in a worker
thread and sent while it is written (:mod:`sessionstore.service.streaming`): memory stays bounded, and an
error before the first byte (a missing session) is a problem response, not a cut body.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import IO, Annotated, Any, Literal, cast

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from sessionstore import views
from sessionstore.api import SessionStore
from sessionstore.catalog.defaults import HITS_PER_SESSION
from sessionstore.catalog.search_rules import is_regex_query
from sessionstore.errors import StoreError
from sessionstore.models import js
from sessionstore.service import bodies
from sessionstore.service.deps import ReaderStore
from sessionstore.service.problems import ProblemError
from sessionstore.service.regex_search import search_in_child
from sessionstore.service.streaming import Pipe, PipedResponse, piped
from sessionstore.store.records import UNSET, SessionInfo

router = APIRouter(prefix="/v1", tags=["read"])

JSON_TYPE = "application/json"
JSONL_TYPE = "application/jsonl"


def _json(value: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(views.json_bytes(value), media_type=JSON_TYPE, headers=headers)


def _since(since: str | None) -> int | None:
    """``since`` as ``ls --since`` reads it."""
    if since is None:
        return None
    when = js.date_ms(since)
    if when is None:
        raise ProblemError(422, "INVALID_INPUT", f"since: not a date: {since!r} (e.g. 2025-01-31)")
    return int(when)


def _leaf(leaf: str | None) -> Any:
    return UNSET if leaf is None else leaf


# -- the session list and one session ----------------------------------------------------------
def _sort_key(info: SessionInfo, sort: str) -> int | None:
    return info.modified_ms if sort == "modified" else info.active_ms


def encode_cursor(info: SessionInfo, sort: str) -> str:
    """An opaque cursor after ``info``: its sort time and id, base64url."""
    raw = json.dumps([sort, _sort_key(info, sort), info.id]).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode_cursor(cursor: str, sort: str) -> tuple[int | None, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        order, key, session_id = json.loads(raw)
        if order != sort or not isinstance(session_id, str) or not (key is None or isinstance(key, int)):
            raise ValueError
    except (ValueError, TypeError, binascii.Error):
        raise ProblemError(422, "INVALID_INPUT", "cursor: not a cursor of this list (give the 'next' it returned)"
                           ) from None
    return key, session_id


def list_page(store: SessionStore, *, cwd: str | None, since_ms: int | None, limit: int | None,
              cursor: str | None, sort: Literal["activity", "modified"]) -> dict[str, Any]:
    """``{"sessions": [ls --json items], "next"}``: the sessions after ``cursor`` in ``ls`` order, at most
    ``limit``; ``next`` is the cursor of the page after, or ``None`` at the end."""
    fetch = None if limit is None else limit + 1
    if cursor is None:
        infos = store.list_sessions(cwd=cwd, since_ms=since_ms, limit=fetch, sort=sort)
    else:
        key, after_id = _decode_cursor(cursor, sort)
        every = store.list_sessions(cwd=cwd, since_ms=since_ms, sort=sort)
        at = next((n for n, info in enumerate(every) if info.id == after_id), None)
        if at is None:  # that session is gone: resume at the first one listed after its time
            at = next((n - 1 for n, info in enumerate(every) if (_sort_key(info, sort) or 0) < (key or 0)),
                      len(every) - 1)
        infos = every[at + 1:] if fetch is None else every[at + 1:at + 1 + fetch]
    more = limit is not None and len(infos) > limit
    page = infos[:limit] if more else infos
    return {"sessions": views.session_list(store, page),
            "next": encode_cursor(page[-1], sort) if more and page else None}


@router.get("/sessions", response_class=Response,
            responses={200: {"description": '{"sessions": [ls --json items], "next": cursor or null}',
                             "content": {JSON_TYPE: {}}}})
async def list_sessions(
    store: ReaderStore,
    cwd: Annotated[str | None, Query(description="only sessions started in this directory")] = None,
    since: Annotated[str | None, Query(description="only sessions active since this date")] = None,
    limit: Annotated[int | None, Query(ge=0, description="at most this many per page")] = None,
    cursor: Annotated[str | None, Query(description="the 'next' of the page before")] = None,
    sort: Annotated[Literal["activity", "modified"], Query()] = "activity",
) -> Response:
    """The sessions in ``ls`` order, a page at a time."""
    since_ms = _since(since)
    return _json(await run_in_threadpool(lambda: list_page(store, cwd=cwd, since_ms=since_ms, limit=limit,
                                                           cursor=cursor, sort=sort)))


@router.get("/sessions/{session_id:id}", response_class=Response,
            responses={200: {"description": "the session's ls --json item (with leafId)", "content": {JSON_TYPE: {}}}})
async def get_session(session_id: str, store: ReaderStore) -> Response:
    """One session's ``ls --json`` item, and its ``ETag``."""
    info = await run_in_threadpool(store.session, session_id)
    return _json(views.session_item(store, info), {"ETag": bodies.etag(info.leaf_id)})


# -- whole-session bodies ----------------------------------------------------------------------
@router.get("/sessions/{session_id:id}/context", response_class=Response,
            responses={200: {"description": "context --json", "content": {JSON_TYPE: {}}}})
async def get_context(session_id: str, store: ReaderStore, leaf: str | None = None,
                      provider_safe: Annotated[bool, Query(alias="providerSafe")] = False) -> Response:
    """What a model call at the leaf (or ``leaf``) gets: ``context --json``, streamed."""
    return piped(lambda fp: store.write_context_json(session_id, fp, leaf_id=_leaf(leaf),
                                                               provider_safe=provider_safe), JSON_TYPE)


@router.get("/sessions/{session_id:id}/tree", response_class=Response,
            responses={200: {"description": "tree --json", "content": {JSON_TYPE: {}}}})
async def get_tree(session_id: str, store: ReaderStore) -> Response:
    """The entry tree: ``tree --json``, streamed."""
    return piped(lambda fp: store.write_tree_json(session_id, fp), JSON_TYPE)


HTML_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


FOLLOW_HELP = ("with format=html: the live view, a page that follows the session's event feed "
               "(/v1/sessions/{id}/events, same origin) and shows new entries, leaf moves and a deletion without "
               "a reload; its policy adds only connect-src 'self'. Without it the page is export --html's, byte "
               "for byte, and makes no request. A browser sends no Authorization header, to the page or to the "
               "feed: follow on a --no-auth server (loopback) or behind a proxy that adds the header")


@router.get("/sessions/{session_id:id}/export", response_class=Response,
            responses={200: {"description": "export (JSONL) or export --html (with follow=true: the live view)",
                             "content": {JSONL_TYPE: {}, "text/html": {}}}})
async def export_session(session_id: str, store: ReaderStore,
                         format: Literal["jsonl", "html"] = "jsonl",
                         follow: Annotated[bool, Query(description=FOLLOW_HELP)] = False) -> Response:
    """The session as ``export`` writes it (JSONL, byte for byte) or ``export --html``'s page; with
    ``format=html&follow=true``, that page following the session live (its event feed)."""
    if format == "html":
        from sessionstore.views.html_export import page_policy, write_session_html

        headers = {**HTML_HEADERS, "Content-Security-Policy": page_policy(follow=follow)}
        return piped(lambda fp: write_session_html(store, session_id, fp, follow=follow),
                     "text/html; charset=utf-8", headers)
    if follow:
        raise ProblemError(422, "INVALID_INPUT", "follow: only with format=html (the live view)")
    return piped(lambda fp: store.export_jsonl(session_id, fp), JSONL_TYPE,
                           {"X-Content-Type-Options": "nosniff"})


@router.get("/sessions/{session_id:id}/entries", response_class=Response,
            responses={200: {"description": "the stored lines in append order (JSONL); X-Last-Seq: the last"
                             " line's seq, to pass as after", "content": {JSONL_TYPE: {}}}})
async def entries(session_id: str, store: ReaderStore,
                  after: Annotated[int, Query(ge=-1, description="only entries whose seq (from 0) is above")] = -1,
                  limit: Annotated[int | None, Query(ge=0)] = None) -> Response:
    """The stored lines of the entries after ``after`` in append order, for a catch-up (streamed)."""
    def write(pipe: Pipe) -> None:
        # X-Last-Seq goes out before the first line: the window is fixed by the entry count first (an
        # entry's seq and line never change), then exactly those lines are written.
        first = max(after + 1, 0)
        total = store.session(session_id).entry_count
        last = total - 1 if limit is None else min(total - 1, first + limit - 1)
        pipe.headers["X-Last-Seq"] = str(after if last < first else last)
        if last < first:
            return
        count, _last = store.write_entry_lines(session_id, cast(IO[bytes], pipe), after=after, limit=last - after)
        if count != last - first + 1:  # (deleted and made again between the two reads)
            raise StoreError(f"session {session_id!r} changed while its entries were read")

    return PipedResponse(write, media_type=JSONL_TYPE)


# -- numbers, search, plans, payloads -----------------------------------------------------------
@router.get("/sessions/{session_id:id}/stats", response_class=Response,
            responses={200: {"description": "stats --json", "content": {JSON_TYPE: {}}}})
async def session_stats(session_id: str, store: ReaderStore) -> Response:
    """pi's ``/session`` numbers: ``stats --json``."""
    report = await run_in_threadpool(store.stats, session_id)
    return _json(report.to_json())


@router.get("/stats", response_class=Response,
            responses={200: {"description": "stats --all --json", "content": {JSON_TYPE: {}}}})
async def all_stats(store: ReaderStore, by: Literal["model", "day"] | None = None, since: str | None = None,
                    cwd: str | None = None) -> Response:
    """The numbers summed over sessions: ``stats --all --json``."""
    since_ms = _since(since)
    totals = await run_in_threadpool(lambda: store.stats_all(cwd=cwd, since_ms=since_ms, by=by))
    return _json(totals.to_json())


@router.get("/search", response_class=Response,
            responses={200: {"description": "search --json", "content": {JSON_TYPE: {}}}})
async def search(request: Request, store: ReaderStore, q: str, cwd: str | None = None,
                 limit: Annotated[int, Query(ge=0)] = 20,
                 sort: Literal["relevance", "recent"] = "relevance", everything: bool = False,
                 hits: Annotated[int, Query(ge=0)] = HITS_PER_SESSION, archived: bool = False) -> Response:
    """pi's session-picker search: ``search --json``. A ``re:`` query runs in a child process, stopped
    after ``serve --regex-timeout`` seconds (``service.regex_search``)."""
    options: dict[str, Any] = {"cwd": cwd, "limit": limit, "sort": sort, "everything": everything, "hits": hits,
                               "archived": archived}
    timeout = request.app.state.config.regex_timeout
    if timeout > 0 and is_regex_query(q):
        found = await run_in_threadpool(search_in_child, store.url, store.tenant, q, options, timeout)
        return _json(found)
    results = await run_in_threadpool(lambda: store.search(q, **options))
    return _json([r.to_json() for r in results])


@router.get("/sessions/{session_id:id}/compaction-plan", response_class=Response,
            responses={200: {"description": "compact --plan --json", "content": {JSON_TYPE: {}}}})
async def compaction_plan(session_id: str, store: ReaderStore,
                          keep_recent_tokens: Annotated[int, Query(alias="keepRecentTokens", ge=0)] = 20000
                          ) -> Response:
    """What a compaction would summarise: ``compact --plan --json``."""
    return _json(await run_in_threadpool(views.compaction_plan, store, session_id, keep_recent_tokens))


@router.get("/sessions/{session_id:id}/payload", response_class=Response,
            responses={200: {"description": "context --payload", "content": {JSON_TYPE: {}}}})
async def payload(session_id: str, store: ReaderStore, provider: str, model: str, leaf: str | None = None,
                  provider_safe: Annotated[bool, Query(alias="providerSafe")] = False,
                  system_prompt: Annotated[str | None, Query(alias="systemPrompt")] = None) -> Response:
    """The request body pi-ai 1.6 sends for the context: ``context --payload``."""
    return _json(await run_in_threadpool(lambda: views.context_payload(
        store, session_id, provider=provider, model=model, leaf_id=_leaf(leaf), provider_safe=provider_safe,
        system_prompt=system_prompt)))

"""Lookups by id for a client that takes what people type (the CLI's ``--db http://``): the sessions and
the entries whose id starts with a prefix, and one entry, each without reading the session's other entries. Not in SPEC
15's table; read scope, the caller's tenant only (``deps.reader``), as every read route."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool
from starlette.responses import Response

from sessionstore import views
from sessionstore.service import bodies
from sessionstore.service.deps import ReaderStore

bodies.register_id_convertor()  # (the {..:id} paths below need it before the routes are made)

router = APIRouter(prefix="/v1", tags=["read"])

JSON_TYPE = "application/json"
MAX_IDS = 10_000
"""The most ids one prefix lookup returns."""


@router.get("/session-ids", response_class=Response,
            responses={200: {"description": '{"sessions": [id]}: the ids starting with prefix, by id',
                             "content": {JSON_TYPE: {}}}})
async def session_ids(store: ReaderStore, prefix: str = "",
                      limit: Annotated[int, Query(ge=0, le=MAX_IDS)] = 10) -> Response:
    """Up to ``limit`` of the tenant's sessions whose id starts with ``prefix`` (taken literally), by id."""
    found = await run_in_threadpool(store.session_ids_with_prefix, prefix, limit=limit)
    return Response(views.json_bytes({"sessions": found}), media_type=JSON_TYPE)


@router.get("/sessions/{session_id:id}/entry-ids", response_class=Response,
            responses={200: {"description": '{"entries": [{"id", "type"}]}: the ids starting with prefix, by id',
                             "content": {JSON_TYPE: {}}}})
async def entry_ids(session_id: str, store: ReaderStore, prefix: str = "",
                    limit: Annotated[int, Query(ge=0, le=MAX_IDS)] = 10) -> Response:
    """Up to ``limit`` entries whose id starts with ``prefix`` (taken literally), by id: each its id and type."""
    found = await run_in_threadpool(store.entry_ids_with_prefix, session_id, prefix, limit=limit)
    return Response(views.json_bytes({"entries": [{"id": eid, "type": kind} for eid, kind in found]}),
                    media_type=JSON_TYPE)


@router.get("/sessions/{session_id:id}/entries/{entry_id:id}", response_class=Response,
            responses={200: {"description": "the entry (pi's getEntry), one JSON object", "content": {JSON_TYPE: {}}}})
async def one_entry(session_id: str, entry_id: str, store: ReaderStore) -> Response:
    """One entry of the session, as the entries route holds it."""
    entry = await run_in_threadpool(store.entry, session_id, entry_id)
    return Response(views.json_line(entry), media_type=JSON_TYPE)

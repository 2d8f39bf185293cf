"""One rendering of every output that the command line prints and the HTTP service serves.

Each view gives the exact bytes: ``--json`` text (``JSON.stringify(value, null, 2)`` and a newline),
JSONL, or the HTML page. A command writes them to stdout, a route sends them as its body, so the two
cannot differ. Views over a whole session stream: they write to a binary stream, or yield chunks,
in bounded memory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any, Protocol

from sessionstore.errors import InvalidInputError
from sessionstore.models.wire import JsonObject as Json
from sessionstore.store.records import UNSET
from sessionstore.wire.jsjson import js_dumpb

if TYPE_CHECKING:
    from sessionstore.api import ContextResult, Leaf
    from sessionstore.catalog.stats import SessionStatsReport
    from sessionstore.models.kinds import SessionEntryDict
    from sessionstore.store.records import ImportResult, SessionInfo



class Store(Protocol):
    """What a view reads of a store: a ``SessionStore``, or a ``RemoteSessionStore`` (the CLI's
    ``--db http://...``), whose methods have the same names, parameters and results."""

    def session(self, session_id: str) -> SessionInfo: ...

    def path(self, session_id: str, leaf_id: Leaf = ...) -> list[SessionEntryDict]: ...

    def labels(self, session_id: str) -> dict[str, Any]: ...

    def context(self, session_id: str, *, leaf_id: Leaf = ..., provider_safe: bool = ...) -> ContextResult: ...

    def export_jsonl(self, session_id: str, fp: IO[bytes]) -> int: ...

    def stats(self, session_id: str) -> SessionStatsReport: ...


def json_bytes(value: Any) -> bytes:
    """``--json``'s text of ``value``: ``JSON.stringify(value, null, 2)`` as pi writes it, and a newline."""
    return js_dumpb(value, indent=2) + b"\n"


def json_line(value: Any) -> bytes:
    """``--nl``'s (and JSONL's) line of ``value``: compact JSON and a newline."""
    return js_dumpb(value) + b"\n"


def session_item(store: Store, info: SessionInfo) -> Json:
    """A session as ``ls --json`` lists it (and the service returns it): the session's facts
    (``SessionInfo.to_json``, which holds ``leafId``) and ``sourceGone``: whether the file a synced
    session mirrors no longer exists on this host (``None`` for a session not synced)."""
    del store  # (the item is the info's; the store names where it is from, for views that read more)
    gone = None if info.source_path is None else not os.path.lexists(info.source_path)
    return {**info.to_json(), "sourceGone": gone}


def session_list(store: Store, infos: Iterable[SessionInfo]) -> list[Json]:
    """``ls --json``'s array: :func:`session_item` of each session, in the given order; an archived
    session's item also has ``"archived": true`` (SPEC 18; a store that cannot tell marks none)."""
    items = [session_item(store, info) for info in infos]
    archived_ids = getattr(store, "archived_ids", None)
    archived = archived_ids() if items and archived_ids is not None else set()
    for item in items:
        if item["id"] in archived:
            item["archived"] = True
    return items


def import_item(result: ImportResult, *, file: str = "-") -> Json:
    """An imported file as ``import --json`` lists it: ``{"file", "status": "imported", ...the result}``
    (``file``: the name it was given; ``-`` for standard input, and for a request's body)."""
    return {"file": file, "status": "imported", **result.to_json()}


def import_exists_item(session_id: str, *, file: str = "-") -> Json:
    """A file ``import --skip-existing`` left alone: its session is in the database already."""
    return {"file": file, "status": "exists", "sessionId": session_id}


def import_failed_item(message: str, *, file: str = "-") -> Json:
    """A file whose import failed, with the one line that says why."""
    return {"file": file, "status": "failed", "error": message}


def payload_of(context: Any, *, provider: str, model: str) -> Any:
    """The payload for ``context`` (a pi-ai ``Context`` mapping, ``context --json``'s output, or a
    ``ContextResult``), after the provider messages' shapes are checked: a message of a bad shape or
    of a role pi-ai does not send is refused naming it (``InvalidInputError``), never fed to the builders
    (linkage findings are not: pi-ai repairs an unanswered call itself; nor is null content: pi-ai reads
    it as [])."""
    from sessionstore.payloads import build_payload, context_parts
    from sessionstore.payloads.transform import with_content
    from sessionstore.validate import SHAPE_CODES, validate_transcript

    messages, _prompt, _tools = context_parts(context)
    errors = [d for d in validate_transcript([with_content(m) for m in messages]) if d.code in SHAPE_CODES]
    if errors:
        first = errors[0]
        where = f"messages[{first.message_index}]" if first.message_index is not None else "messages"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InvalidInputError(f"{where}: {first.code}: {first.message}{more}")
    return build_payload(context, provider=provider, model=model)


def context_payload(store: Store, session_id: str, *, provider: str, model: str, leaf_id: Any = UNSET,
                    provider_safe: bool = False, system_prompt: str | None = None) -> Any:
    """``context --payload``'s value: the request body pi-ai sends for the session's context at the leaf
    (or ``leaf_id``), with ``system_prompt`` when given."""
    result = store.context(session_id, leaf_id=leaf_id, provider_safe=provider_safe)
    context_of: Json = {"messages": result.llm}
    if system_prompt is not None:
        context_of["systemPrompt"] = system_prompt
    return payload_of(context_of, provider=provider, model=model)


def compaction_plan(store: Store, session_id: str, keep_recent_tokens: int) -> Json:
    """``compact --plan --json``'s value: ``{"compact": true, ...the plan}``, or ``{"compact": false,
    "reason"}`` when there is nothing to compact (an answer, not a failure)."""
    from sessionstore.context.compaction import plan_or_reason

    plan = plan_or_reason(store.path(session_id), keep_recent_tokens=keep_recent_tokens)
    if isinstance(plan, str):
        return {"compact": False, "reason": plan}
    return {"compact": True, **plan.to_json()}


def archived_marked(store: Store, infos: list[SessionInfo]) -> list[SessionInfo]:
    """``ls``'s text table: an archived session shows ``[archived]`` before its name (or first message)."""
    from dataclasses import replace

    archived_ids = getattr(store, "archived_ids", None)
    archived = archived_ids() if infos and archived_ids is not None else set()
    return [replace(i, name=f"[archived] {i.name or i.first_message or ''}".rstrip()) if i.id in archived else i
            for i in infos]

"""One rendering of every output that the command line prints and the HTTP service serves.

Each view gives the exact bytes: ``--json`` text (``JSON.stringify(value, null, 2)`` and a newline),
JSONL, or the HTML page. A command writes them to stdout, a route sends them as its body, so the two
cannot differ. Views over a whole session stream: they write to a binary stream, or yield chunks,
in bounded memory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sessionstore.wire.jsjson import js_dumpb

if TYPE_CHECKING:
    from sessionstore.api import SessionStore
    from sessionstore.store.records import ImportResult, SessionInfo

Json = dict[str, Any]


def json_bytes(value: Any) -> bytes:
    """``--json``'s text of ``value``: ``JSON.stringify(value, null, 2)`` as pi writes it, and a newline."""
    return js_dumpb(value, indent=2) + b"\n"


def json_line(value: Any) -> bytes:
    """``--nl``'s (and JSONL's) line of ``value``: compact JSON and a newline."""
    return js_dumpb(value) + b"\n"


def session_item(store: SessionStore, info: SessionInfo) -> Json:
    """A session as ``ls --json`` lists it (and the service returns it): the session's facts
    (``SessionInfo.to_json``, which holds ``leafId``) and ``sourceGone``: whether the file a synced
    session mirrors no longer exists on this host (``None`` for a session not synced)."""
    del store  # (the item is the info's; the store names where it is from, for views that read more)
    gone = None if info.source_path is None else not os.path.lexists(info.source_path)
    return {**info.to_json(), "sourceGone": gone}


def session_list(store: SessionStore, infos: Iterable[SessionInfo]) -> list[Json]:
    """``ls --json``'s array: :func:`session_item` of each session, in the given order."""
    return [session_item(store, info) for info in infos]


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

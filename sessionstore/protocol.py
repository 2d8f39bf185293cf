"""The HTTP API's encodings that the server (:mod:`sessionstore.service`) and the client
(:mod:`sessionstore.client`) share, so that neither can drift: an id as a path segment and a session's
ETag. Standard library only (the client needs no server package)."""

from __future__ import annotations

import urllib.parse
from typing import Literal, get_args

Scope = Literal["read", "write", "admin"]
"""What a token may do: ``read`` every GET, ``write`` also POST, PUT and DELETE, ``admin`` also tenant-wide deletes."""
SCOPES: tuple[Scope, ...] = get_args(Scope)

ETAG_SAFE = "!#$&'()*+,-./:;<=>?@[]^_`{|}~"
"""The printable ASCII an ETag holds as it is (all but ``"``, ``\\``, ``%`` and space)."""


def segment(value: str) -> str:
    """An id as one path segment: every reserved character percent-encoded (``/`` as ``%2F``), and
    ``.`` / ``..`` as ``%2E`` / ``%2E%2E`` (clients would resolve them as dot segments)."""
    quoted = urllib.parse.quote(value, safe="")
    return quoted.replace(".", "%2E") if quoted in (".", "..") else quoted


def etag(leaf_id: str | None) -> str:
    """A session's ETag: ``"<leafId>"``, or ``"root"`` while it has no entries. Characters an ETag cannot
    hold (``"``, ``\\``, controls, non-ASCII, ``%``, space) are percent-encoded."""
    return '"root"' if leaf_id is None else '"' + urllib.parse.quote(leaf_id, safe=ETAG_SAFE) + '"'


def etag_unquote(inner: str) -> str:
    """The leaf id an ETag's inner text (between the quotes, not ``root``) names."""
    return urllib.parse.unquote(inner, errors="strict")

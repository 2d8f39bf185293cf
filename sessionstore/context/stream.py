"""The context at a leaf as JSON, written while the path is read: ``ContextResult.to_json()`` written
with ``indent=2`` (what ``sessionstore context --json`` prints), byte for byte, without holding the
messages.

One pass over the path's entries (the store streams them, root first, from where the context starts):
each entry goes through the steps :func:`~sessionstore.context.build.build_session_context` takes
(:class:`~sessionstore.context.build.ContextSelection`, ``context_entry_messages``), each message
through validation (:class:`~sessionstore.validate.transcript.TranscriptValidation`) and projection
(``convert_message``, :class:`~sessionstore.context.project.ProviderSafe`), as the in-memory path
does, and is written at once. The projected messages (``llm``) follow all the messages in the JSON:
they are written meanwhile to a temporary file (in memory while small) and copied after (by the
kernel, ``os.sendfile``, once the file is on disk and the output is a file or a pipe); a projected
message that is the message itself (most are) is written from the same bytes. The diagnostics come
last in the JSON, so they are known by then. What the pass must know before the first entry comes
from the store: the path's last compaction, the slice's ``context_edit`` entries and the two entries
that set the thinking level and the model.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

from sessionstore.context.build import (
    ContextSelection,
    context_entry_messages,
    edit_diagnostics,
    latest_edits,
    settings,
)
from sessionstore.context.project import ProviderSafe, convert_message
from sessionstore.models.roles import PROVIDER_ROLES, role_of
from sessionstore.models.wire import JsonObject as Json
from sessionstore.validate import Diagnostic
from sessionstore.validate.transcript import TranscriptValidation
from sessionstore.wire.jsjson import JsonPieces, gc_paused, js_dumpb, js_item

SPOOL_IN_MEMORY = 8 << 20
"""Bytes of projected messages kept in memory before their temporary file goes to disk."""
_ITEM_DEPTH = 2
"""Messages are items of the top-level object's arrays: two levels deep."""
_MESSAGES_KEY = b'\n  "messages": []'
_LLM_KEY = b'\n  "llm": []'


def _skeleton(session_id: str, leaf_id: str | None, thinking_level: Any, model: Json | None,
              diagnostics: Sequence[Diagnostic]) -> bytes:
    """``ContextResult.to_json()`` without messages, as ``js_dumpb`` writes it: the parts around them."""
    return js_dumpb({
        "sessionId": session_id,
        "leafId": leaf_id,
        "messages": [],
        "llm": [],
        "thinkingLevel": thinking_level,
        "model": model,
        "diagnostics": [d.to_json() for d in diagnostics],
    }, indent=2)


class _Array:
    """A JSON array of indent-2 items two levels deep, written item by item (each item as
    :func:`js_item` writes it, its comma first)."""

    __slots__ = ("_put", "count")

    def __init__(self, out: JsonPieces) -> None:
        self._put = out.put
        self.count = 0

    def add(self, item: bytes | memoryview) -> None:
        if self.count:
            self._put(item)
        else:
            self._put(b"[")
            self._put(memoryview(item)[1:])
        self.count += 1

    def close(self) -> None:
        self._put(b"\n  ]" if self.count else b"[]")


@gc_paused()  # (its loop makes and drops many small containers: see gc_paused)
def write_context_json(
    fp: IO[bytes],
    *,
    session_id: str,
    leaf_id: str | None,
    entries: Iterable[tuple[Mapping[str, Any], bool]],
    compaction: Mapping[str, Any] | None,
    edit_entries: Sequence[Mapping[str, Any]],
    thinking_entry: Mapping[str, Any] | None,
    model_entry: Mapping[str, Any] | None,
    known_roles: Iterable[str],
    provider_safe: bool = False,
) -> None:
    """Write ``js_dumpb(ContextResult.to_json(), indent=2) + b"\\n"`` of the context at ``leaf_id``.

    ``entries``: the path's entries from where the context starts to the leaf, root first, each with
    whether it is ``compaction`` (the path's last compaction; ``None``: none); ``edit_entries``: the
    ``context_edit`` entries among them, in path order; ``thinking_entry``/``model_entry``: the latest
    entries on the path (up to the leaf) that set the thinking level and the model. ``known_roles``:
    the registered roles beyond the built-in ones (validation)."""
    thinking_level, model = settings(thinking_entry, model_entry)
    head = _skeleton(session_id, leaf_id, thinking_level, model, ())
    out = JsonPieces(fp)
    out.put(head[: head.index(_MESSAGES_KEY)] + b'\n  "messages": ')
    messages = _Array(out)
    built: list[Diagnostic] = []  # the context building's per-entry diagnostics
    validation = TranscriptValidation(known_roles)
    repairs = ProviderSafe() if provider_safe else None
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as spool:
        llm_out = JsonPieces(spool)
        llm = _Array(llm_out)

        add_message, add_llm, validate = messages.add, llm.add, validation.add

        def send(message: Any, entry_id: str | None) -> None:
            index = messages.count
            text = js_item(message, _ITEM_DEPTH)
            add_message(text)
            validate(message, entry_id)
            if repairs is None and type(message) is dict and role_of(message) in PROVIDER_ROLES:
                add_llm(text)  # convert_message's answer for a provider role: the message itself
                return
            for projected in convert_message(message):
                sent = [projected] if repairs is None else repairs.add(projected, index, entry_id)
                for item in sent:
                    llm.add(text if item is message else js_item(item, _ITEM_DEPTH))

        selection = ContextSelection(compaction)
        edits = latest_edits(edit_entries)
        targets_met: set[str] = set()
        if compaction is not None:
            for message in context_entry_messages(compaction, True, edits, built):
                send(message, _entry_id(compaction))
        select = selection.select
        for entry, at_compaction in entries:
            if not select(entry, at_compaction):
                continue
            entry_id = _entry_id(entry)
            if edits and entry_id in edits:
                targets_met.add(entry_id)
            for message in context_entry_messages(entry, False, edits, built):
                send(message, entry_id)
        if compaction is not None and edits and (compaction_id := _entry_id(compaction)) in edits:
            targets_met.add(compaction_id)
        if repairs is not None:
            for item in repairs.close():
                llm.add(js_item(item, _ITEM_DEPTH))
        messages.close()
        llm.close()
        llm_out.flush()
        out.put(b',\n  "llm": ')
        out.flush()
        _copy_spool(spool, fp)
    diagnostics = selection.diagnostics()
    edit_diagnostics(edit_entries, targets_met, diagnostics)
    diagnostics.extend(built)
    diagnostics.extend(validation.diagnostics())
    if repairs is not None:
        diagnostics.extend(repairs.diagnostics)
    tail = _skeleton(session_id, leaf_id, thinking_level, model, diagnostics)
    out.put(tail[tail.index(_LLM_KEY) + len(_LLM_KEY):] + b"\n")
    out.flush()


def _copy_spool(spool: IO[bytes], fp: IO[bytes]) -> None:
    """Write the spooled bytes to ``fp``: sent by the kernel from the file to ``fp``'s descriptor when the
    spool is on disk (it holds more than ``SPOOL_IN_MEMORY``) and ``fp`` has one that ``os.sendfile``
    writes to (a file, a pipe); else read back and written a MiB at a time."""
    spool.flush()
    size = spool.tell()
    start = 0
    out_fd = _fileno(fp) if size > SPOOL_IN_MEMORY else None
    if out_fd is not None:
        fp.flush()
        try:
            while start < size and (sent := os.sendfile(out_fd, spool.fileno(), start, size - start)):
                start += sent
        except OSError as exc:
            if exc.errno not in _NO_SENDFILE:
                raise
    spool.seek(start)
    shutil.copyfileobj(spool, fp, 1 << 20)


_NO_SENDFILE = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ESPIPE})
"""What ``os.sendfile`` says of an output it cannot write to (a terminal, say): the bytes are then copied."""


def _fileno(file: IO[bytes]) -> int | None:
    try:
        return file.fileno()
    except (AttributeError, OSError, ValueError):  # (io.UnsupportedOperation is both of the last two)
        return None


def _entry_id(entry: Mapping[str, Any]) -> str | None:
    value = entry.get("id")
    return value if isinstance(value, str) else None

"""An OpenAI Agents SDK session on top of the store: ``Runner.run(agent, input, session=...)`` persists
into a pi session, so branches, compaction and export come with it.

``SessionStoreSession`` implements the SDK's ``Session`` protocol (``get_items``, ``add_items``,
``pop_item``, ``clear_session``) structurally, as the SDK asks third-party sessions to; the ``agents``
package is never imported here, so sessionstore works without it.

Mapping, one Responses item to one pi entry (in the order added):

* a user message (``{"role": "user", "content": ...}``, with or without ``"type": "message"``) -> a pi
  ``user`` message (text of ``input_text`` parts; ``input_image`` data URLs as image blocks);
* an assistant message (an output ``message`` item or ``{"role": "assistant", "content": ...}``), a
  ``function_call`` / ``custom_tool_call`` and a ``reasoning`` item -> a pi ``assistant`` message of one
  block, made by the Responses mapping of ``payloads.response_openai`` (text with pi-ai's text
  signature; a ``toolCall`` with id ``call_id|item_id``; thinking with the item's JSON as
  ``thinkingSignature``), ``api: "openai-responses"``, the session's ``provider`` and ``model``, zero
  usage, ``stopReason`` ``toolUse`` for a call and ``stop`` otherwise;
* a ``function_call_output`` -> a pi ``toolResult`` message answering the call's ``toolCall`` block
  (its ``toolCallId`` and ``toolName``; the output's text);
* any other item (system / developer messages, hosted tool calls, ...) -> a ``custom`` entry
  (``customType: "openai-agents-item"``, ``data``: the item), outside pi's context.

Every message also keeps the item in its ``openaiAgentsItem`` field (pi keeps unknown message fields,
and so do import and export), so ``get_items()`` gives back what was added.

An item is Python JSON, not a pi message: ``get_items()`` gives back ``json.loads(json.dumps(item))``,
what the SDK's ``SQLiteSession`` gives (it stores ``json.dumps`` text); an item ``json.dumps`` refuses
raises its ``TypeError``. The field (and a custom entry's ``data``) holds the item as JSON data where
pi's JSON (``JSON.stringify``/``JSON.parse``, doubles) gives it back unchanged, else its ``json.dumps``
text, a string: integers beyond what a double holds exactly (``10**30``), whole floats (``1.0``, which
pi writes as ``1``), ``-0.0``, ``NaN`` and the infinities come back as Python wrote them.

Writes. ``add_items`` writes its items in one transaction (``SessionStore.append_entries``): all of
them, one after the other, or none (an invalid item, an error, a cancelled call that had not started);
the session is created on the first ``add_items`` (``create_session(exist_ok=True)``: concurrent first
uses from threads, tasks or processes all land). ``get_items``, ``pop_item`` and ``clear_session`` of a
session that does not exist yet give ``[]``, ``None`` and nothing. Concurrent ``pop_item`` calls each
take a different item (a pop whose leaf moved under it reads again).

``session_settings``: a ``SessionSettings`` or a dict of its fields, normalised by the SDK's own
``coerce_session_settings`` (unknown keys are a ``TypeError``); ``None`` is ``SessionSettings()`` when
the SDK is installed, as in ``SQLiteSession``.

``get_items`` reads the active path (root to the leaf) as pi builds a context from it: after the latest
compaction, its summary (as a user message with pi's summary wrapper) and the entries from its first
kept entry on; a branch summary becomes such a user message too, and so do messages appended by other
means (their text). ``pop_item`` is a branch: the leaf moves to the parent of the last item's entry,
which stays in the tree; ``clear_session`` moves the leaf before the first entry. Context edits are not
applied to the items (the SDK gets what was added)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sessionstore.aio import AsyncSessionStore
from sessionstore.api import SessionStore
from sessionstore.errors import LeafConflictError, SessionNotFoundError
from sessionstore.models import js
from sessionstore.models.timestamps import now_ms
from sessionstore.models.wire import JsonObject as Json
from sessionstore.payloads.response_common import zero_usage
from sessionstore.payloads.response_openai import _response_item
from sessionstore.wire.codec import dump_line, json_loads

if TYPE_CHECKING:
    from sessionstore.client import AsyncRemoteSessionStore, RemoteSessionStore

    AnyRemoteStore = RemoteSessionStore | AsyncRemoteSessionStore


ITEM_FIELD = "openaiAgentsItem"
"""The message field holding the Responses item a message was made from, verbatim."""
CUSTOM_TYPE = "openai-agents-item"
"""The ``customType`` of the custom entries holding items pi has no message for."""
COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"
_ASSISTANT_ITEMS = ("message", "function_call", "custom_tool_call", "reasoning")


def _plain(item: Any) -> Json:
    """An item as the SDK's sessions store it: Python JSON (``json.loads(json.dumps(item))``) of a
    mapping, or of an SDK model's ``model_dump``; ``TypeError`` for what ``json.dumps`` refuses."""
    if not isinstance(item, Mapping):
        dump = getattr(item, "model_dump", None)
        item = dump(exclude_unset=True, mode="json") if callable(dump) else item
        if not isinstance(item, Mapping):
            raise TypeError(f"a session item must be a mapping, got {type(item).__name__}")
    try:
        data: Json = json.loads(json.dumps(item))
    except ValueError as exc:  # (a circular reference)
        raise TypeError(f"a session item must be JSON data: {exc}") from None
    return data


def _stored(item: Json) -> Json | str:
    """What the store keeps of an item: the item where pi's JSON gives it back unchanged, else its
    ``json.dumps`` text (see the module docstring)."""
    text = json.dumps(item)
    try:
        if json.dumps(json_loads(dump_line(item, finite_only=True))) == text:
            return item
    except (TypeError, ValueError):
        pass
    return text


def _item(stored: Any) -> Json | None:
    """The item a stored value gives back (``None``: not an item)."""
    if isinstance(stored, str):
        try:
            data = json.loads(stored)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None
    return dict(stored) if isinstance(stored, Mapping) else None


def _settings(value: Any) -> Any:
    """``session_settings`` as the SDK's sessions normalise it (its ``coerce_session_settings``)."""
    try:
        from agents.memory.session_settings import SessionSettings, coerce_session_settings
    except ImportError:
        if value is None or not isinstance(value, dict):
            return value
        raise TypeError("session_settings as a dict needs openai-agents (pip install openai-agents)") from None
    return SessionSettings() if value is None else coerce_session_settings(value)


def _user_content(content: Any) -> str | list[Json]:
    if isinstance(content, str):
        return content
    blocks: list[Json] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
            blocks.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "input_image" and isinstance(part.get("image_url"), str):
            url: str = part["image_url"]
            head, _, data = url.partition(",")
            if url.startswith("data:") and head.endswith(";base64"):
                blocks.append({"type": "image", "data": data, "mimeType": head[5:].removesuffix(";base64")})
    return blocks


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(p["text"] for p in output if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return js.to_string(output) if output is not None else ""


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str))
    return ""


class SessionStoreSession:
    """The OpenAI Agents SDK's ``Session`` protocol over a pi session of ``store`` (sync or async),
    created (with ``cwd``) by the first ``add_items`` if missing. ``provider`` and ``model`` name the model the
    assistant messages are recorded under (the SDK does not tell a session which model answered)."""

    def __init__(self, session_id: str, store: AsyncSessionStore | SessionStore | AnyRemoteStore,
                 *, cwd: str = ".",
                 provider: str = "openai", model: str = "unknown", session_settings: Any = None) -> None:
        self.session_id = session_id
        self.store = store
        self.cwd = cwd
        self.provider = provider
        self.model = model
        self.session_settings = session_settings

    @property
    def session_settings(self) -> Any:
        """The SDK's ``SessionSettings`` (``limit``: the default of ``get_items``); set it to one, a
        dict of its fields or ``None``, normalised as ``SQLiteSession`` normalises them."""
        return self._settings

    @session_settings.setter
    def session_settings(self, value: Any) -> None:
        self._settings = _settings(value)

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self.store, name)
        if inspect.iscoroutinefunction(method):  # (AsyncSessionStore, or the remote client's async twin)
            return await method(*args, **kwargs)
        return await asyncio.to_thread(method, *args, **kwargs)

    # -- the mapping ---------------------------------------------------------------------------
    def _assistant(self, block: Json, item: Json) -> Json:
        stop = "toolUse" if block["type"] == "toolCall" else "stop"
        return {"role": "assistant", "content": [block], "api": "openai-responses", "provider": self.provider,
                "model": self.model, "usage": zero_usage(), "stopReason": stop, "timestamp": now_ms(),
                ITEM_FIELD: item}

    def _to_message(self, item: Json, calls: Mapping[str, tuple[str, Any]]) -> Json | None:
        """The pi message of an item (None: a custom entry)."""
        kind, role = item.get("type"), item.get("role")
        if role == "user" and kind in (None, "message"):
            return {"role": "user", "content": _user_content(item.get("content")), "timestamp": now_ms(),
                    ITEM_FIELD: item}
        if role == "assistant" and kind is None:
            text = _text_of(item.get("content")) if not isinstance(item.get("content"), str) else item["content"]
            return self._assistant({"type": "text", "text": text}, item)
        if kind in _ASSISTANT_ITEMS and (kind != "message" or role == "assistant"):
            block = _response_item(item, {})
            return None if block is None else self._assistant(block, item)
        if kind == "function_call_output":
            call_id = js.to_string(item.get("call_id", js.MISSING))
            tool_call_id, name = calls.get(call_id, (call_id, ""))
            return {"role": "toolResult", "toolCallId": tool_call_id, "toolName": name if isinstance(name, str) else "",
                    "content": [{"type": "text", "text": _output_text(item.get("output"))}], "isError": False,
                    "timestamp": now_ms(), ITEM_FIELD: item}
        return None

    @staticmethod
    def _note_calls(message: Mapping[str, Any], calls: dict[str, tuple[str, Any]]) -> None:
        if message.get("role") != "assistant":
            return
        for block in message.get("content") or []:
            if isinstance(block, Mapping) and block.get("type") == "toolCall" and isinstance(block.get("id"), str):
                calls[block["id"].split("|", 1)[0]] = (block["id"], block.get("name"))

    @staticmethod
    def _from_entry(entry: Mapping[str, Any]) -> Json | None:
        """The item an entry of the active path gives (None: not part of the conversation)."""
        kind = entry.get("type")
        if kind == "message":
            message = entry.get("message")
            if not isinstance(message, Mapping):
                return None
            if ITEM_FIELD in message:
                return _item(message[ITEM_FIELD])
            role = message.get("role")
            if role == "assistant":
                return {"role": "assistant", "content": _text_of(message.get("content"))}
            if role in ("user", "custom"):
                return {"role": "user", "content": _text_of(message.get("content"))}
            return None
        if kind == "custom":
            data = entry.get("data")
            return _item(data) if entry.get("customType") == CUSTOM_TYPE else None
        if kind == "custom_message":
            return {"role": "user", "content": _text_of(entry.get("content"))}
        if kind == "branch_summary":
            summary = js.to_string(entry.get("summary", js.MISSING))
            return {"role": "user", "content": BRANCH_SUMMARY_PREFIX + summary + BRANCH_SUMMARY_SUFFIX}
        return None

    async def _items_with_entries(self, leaf: str | None) -> list[tuple[Json, Mapping[str, Any]]]:
        """The conversation's items at ``leaf`` with the entries they come from, as pi builds a context."""
        path: Sequence[Mapping[str, Any]] = [] if leaf is None else await self._call("path", self.session_id, leaf)
        out: list[tuple[Json, Mapping[str, Any]]] = []
        last = max((i for i, e in enumerate(path) if e.get("type") == "compaction"), default=None)
        entries = list(path)
        if last is not None:
            compaction = path[last]
            summary = js.to_string(compaction.get("summary", js.MISSING))
            out.append(({"role": "user", "content": COMPACTION_SUMMARY_PREFIX + summary + COMPACTION_SUMMARY_SUFFIX},
                        compaction))
            kept = compaction.get("firstKeptEntryId")
            start = next((i for i, e in enumerate(path[:last]) if e.get("id") == kept), last)
            entries = [*path[start:last], *path[last + 1:]]
        for entry in entries:
            item = self._from_entry(entry)
            if item is not None:
                out.append((item, entry))
        return out

    async def _leaf(self) -> str | None:
        """The session's leaf (``None`` also for a session that does not exist yet)."""
        try:
            leaf: str | None = await self._call("leaf", self.session_id)
        except SessionNotFoundError:
            return None
        return leaf

    # -- the Session protocol --------------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation at the leaf; with ``limit``, its latest ``limit`` items (in order; 0: none,
        negative: all, as ``SQLiteSession``); ``limit`` defaults to ``session_settings.limit``."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        try:
            items = [item for item, _ in await self._items_with_entries(await self._leaf())]
        except SessionNotFoundError:  # (deleted between the two reads)
            items = []
        if limit is None or limit < 0:
            return items
        return items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        """Append the items at the leaf, one entry each (see the module's mapping), all in one
        transaction; the session is created if missing."""
        if not items:
            return
        plain = [_plain(item) for item in items]
        calls: dict[str, tuple[str, Any]] = {}
        if any(item.get("type") == "function_call_output" for item in plain):
            try:
                path = await self._call("path", self.session_id)
            except SessionNotFoundError:
                path = []
            for entry in path:
                if entry.get("type") == "message" and isinstance(entry.get("message"), Mapping):
                    self._note_calls(entry["message"], calls)
        entries: list[Json] = []
        for item in plain:
            message = self._to_message(item, calls)
            if message is None:
                entries.append({"type": "custom", "customType": CUSTOM_TYPE, "data": _stored(item)})
            else:
                self._note_calls(message, calls)
                message[ITEM_FIELD] = _stored(item)
                entries.append({"type": "message", "message": message})
        try:
            await self._call("append_entries", self.session_id, entries)
        except SessionNotFoundError:  # the first use: create the session (or find it created meanwhile)
            await self._call("create_session", cwd=self.cwd, session_id=self.session_id, exist_ok=True)
            await self._call("append_entries", self.session_id, entries)

    async def pop_item(self) -> Any | None:
        """The latest item, the leaf moved to the parent of its entry (a branch: nothing is deleted).
        After a compaction with no newer item, popping moves the leaf to before the compaction. Of
        concurrent pops each takes a different item: the move expects the leaf the item was read at."""
        while True:
            leaf = await self._leaf()
            try:
                found = await self._items_with_entries(leaf)
                if not found:
                    return None
                item, entry = found[-1]
                parent = entry.get("parentId")
                if parent is None:
                    await self._call("reset_leaf", self.session_id, expected_leaf=leaf)
                else:
                    await self._call("branch", self.session_id, parent, expected_leaf=leaf)
            except LeafConflictError:  # another writer moved the leaf since it was read: read again
                continue
            except SessionNotFoundError:
                return None
            return item

    async def clear_session(self) -> None:
        """An empty conversation: the leaf moves before the first entry; the tree keeps the history."""
        with contextlib.suppress(SessionNotFoundError):
            await self._call("reset_leaf", self.session_id)

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

Every message also keeps the original item verbatim in its ``openaiAgentsItem`` field (pi keeps unknown
message fields, and so do import and export), so ``get_items()`` gives back exactly what was added.

``get_items`` reads the active path (root to the leaf) as pi builds a context from it: after the latest
compaction, its summary (as a user message with pi's summary wrapper) and the entries from its first
kept entry on; a branch summary becomes such a user message too, and so do messages appended by other
means (their text). ``pop_item`` is a branch: the leaf moves to the parent of the last item's entry,
which stays in the tree; ``clear_session`` moves the leaf before the first entry. Context edits are not
applied to the items (the SDK gets what was added)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from sessionstore.aio import AsyncSessionStore
from sessionstore.api import SessionStore
from sessionstore.errors import SessionNotFoundError
from sessionstore.models import js
from sessionstore.models.timestamps import now_ms
from sessionstore.payloads.response_common import zero_usage
from sessionstore.payloads.response_openai import _response_item

Json = dict[str, Any]

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
    """An item as JSON data: a mapping as it is, an SDK model through ``model_dump``."""
    if isinstance(item, Mapping):
        return dict(item)
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        data = dump(exclude_unset=True, mode="json")
        if isinstance(data, dict):
            return data
    raise TypeError(f"a session item must be a mapping, got {type(item).__name__}")


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
    created (with ``cwd``) on first use if missing. ``provider`` and ``model`` name the model the
    assistant messages are recorded under (the SDK does not tell a session which model answered)."""

    session_settings: Any = None

    def __init__(self, session_id: str, store: AsyncSessionStore | SessionStore, *, cwd: str = ".",
                 provider: str = "openai", model: str = "unknown", session_settings: Any = None) -> None:
        self.session_id = session_id
        self.store = store
        self.cwd = cwd
        self.provider = provider
        self.model = model
        self.session_settings = session_settings
        self._ready = False

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self.store, name)
        if isinstance(self.store, AsyncSessionStore):
            return await method(*args, **kwargs)
        return await asyncio.to_thread(method, *args, **kwargs)

    async def _ensure(self) -> None:
        if self._ready:
            return
        try:
            await self._call("session", self.session_id)
        except SessionNotFoundError:
            await self._call("create_session", cwd=self.cwd, session_id=self.session_id)
        self._ready = True

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
            if isinstance(message.get(ITEM_FIELD), Mapping):
                return dict(message[ITEM_FIELD])
            role = message.get("role")
            if role == "assistant":
                return {"role": "assistant", "content": _text_of(message.get("content"))}
            if role in ("user", "custom"):
                return {"role": "user", "content": _text_of(message.get("content"))}
            return None
        if kind == "custom":
            data = entry.get("data")
            return dict(data) if entry.get("customType") == CUSTOM_TYPE and isinstance(data, Mapping) else None
        if kind == "custom_message":
            return {"role": "user", "content": _text_of(entry.get("content"))}
        if kind == "branch_summary":
            summary = js.to_string(entry.get("summary", js.MISSING))
            return {"role": "user", "content": BRANCH_SUMMARY_PREFIX + summary + BRANCH_SUMMARY_SUFFIX}
        return None

    async def _items_with_entries(self) -> list[tuple[Json, Mapping[str, Any]]]:
        """The conversation's items with the entries they come from, as pi builds a context."""
        await self._ensure()
        path: Sequence[Mapping[str, Any]] = await self._call("path", self.session_id)
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

    # -- the Session protocol --------------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation at the leaf; with ``limit``, its latest ``limit`` items (in order; 0: none,
        negative: all, as ``SQLiteSession``); ``limit`` defaults to ``session_settings.limit``."""
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
        items = [item for item, _ in await self._items_with_entries()]
        if limit is None or limit < 0:
            return items
        return items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        """Append the items at the leaf, one entry each (see the module's mapping)."""
        if not items:
            return
        await self._ensure()
        plain = [_plain(item) for item in items]
        calls: dict[str, tuple[str, Any]] = {}
        if any(item.get("type") == "function_call_output" for item in plain):
            for entry in await self._call("path", self.session_id):
                if entry.get("type") == "message" and isinstance(entry.get("message"), Mapping):
                    self._note_calls(entry["message"], calls)
        for item in plain:
            message = self._to_message(item, calls)
            if message is None:
                await self._call("append_custom", self.session_id, CUSTOM_TYPE, item)
            else:
                self._note_calls(message, calls)
                await self._call("append_message", self.session_id, message)

    async def pop_item(self) -> Any | None:
        """The latest item, the leaf moved to the parent of its entry (a branch: nothing is deleted).
        After a compaction with no newer item, popping moves the leaf to before the compaction."""
        found = await self._items_with_entries()
        if not found:
            return None
        item, entry = found[-1]
        leaf = await self._call("leaf", self.session_id)
        parent = entry.get("parentId")
        if parent is None:
            await self._call("reset_leaf", self.session_id, expected_leaf=leaf)
        else:
            await self._call("branch", self.session_id, parent, expected_leaf=leaf)
        return item

    async def clear_session(self) -> None:
        """An empty conversation: the leaf moves before the first entry; the tree keeps the history."""
        await self._ensure()
        await self._call("reset_leaf", self.session_id)

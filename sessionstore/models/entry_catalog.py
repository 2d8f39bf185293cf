"""What the catalog keeps of one entry, computed once when it is written (append, import, sync, the
migration's backfill): its part of pi's session stats and its search texts.

- **Usage** (:func:`usage_of`): pi 1.6's ``getSessionStats`` and ``getUsageCostBreakdown``
  (``core/usage-totals.js``) count the usage of an assistant message, of a ``usage`` entry, of a
  tool result that has one and of a ``compaction`` / ``branch_summary`` that has one, each under the
  key pi's ``/session`` prints it with: ``{provider}/{responseModel ?? model}`` for an assistant,
  ``{provider}/{model}`` for a usage entry, ``Tools/summaries`` for the rest. The store sums them per
  session, key and UTC day of the entry (for ``stats --by day``).
- **Search texts** (:func:`search_texts`): ``text``, the part of pi's ``allMessagesText`` that the
  entry gives (the text of a user or assistant message with content), and ``extra``, what pi does not
  search (thinking, tool-call names and arguments, tool results, bash commands and output, summaries,
  custom and system messages), both folded as pi compares them: lowercased, whitespace runs made one
  space, trimmed (JavaScript's whitespace, not Python's). A whitespace-free token is in pi's lowercased
  ``allMessagesText`` exactly when it is in one entry's folded ``text``; a phrase, when it is in the
  folded texts joined by spaces.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

from sessionstore.models import js
from sessionstore.models.js_text import normalize_whitespace_lower as fold
from sessionstore.models.rules import message_text

TOOLS_AND_SUMMARIES = "Tools/summaries"
"""pi's key for usage that no model is named for (tool results, compactions, branch summaries)."""


class Usage(NamedTuple):
    """One entry's usage as pi adds it to its totals (a value that is not a finite number counts 0)."""

    key: str
    input: float
    output: float
    cache_read: float
    cache_write: float
    cost: float


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    number = float(value)
    return number if math.isfinite(number) else 0.0


def _usage(key: str, usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    cost = usage.get("cost")
    return Usage(key, _number(usage.get("input")), _number(usage.get("output")), _number(usage.get("cacheRead")),
                 _number(usage.get("cacheWrite")), _number(cost.get("total")) if isinstance(cost, dict) else 0.0)


def usage_of(entry: Mapping[str, Any]) -> Usage | None:
    """The usage pi's stats count for ``entry``, under pi's breakdown key; ``None`` when it has none."""
    kind = entry.get("type")
    if kind == "usage":
        return _usage(f"{js.to_string(entry.get('provider', js.MISSING))}/"
                      f"{js.to_string(entry.get('model', js.MISSING))}", entry.get("usage"))
    if kind in ("compaction", "branch_summary"):
        return _usage(TOOLS_AND_SUMMARIES, entry.get("usage")) if js.truthy(entry.get("usage")) else None
    if kind != "message":
        return None
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    if role == "assistant":
        model = message.get("responseModel", js.MISSING)
        if js.nullish(model):
            model = message.get("model", js.MISSING)
        return _usage(f"{js.to_string(message.get('provider', js.MISSING))}/{js.to_string(model)}",
                      message.get("usage"))
    if role == "toolResult" and js.truthy(message.get("usage")):
        return _usage(TOOLS_AND_SUMMARIES, message.get("usage"))
    return None


def tool_calls_of(message: Mapping[str, Any]) -> int:
    """pi's count of ``toolCall`` blocks in an assistant message's content list."""
    content = message.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for block in content if isinstance(block, dict) and block.get("type") == "toolCall")


def day_of(entry: Mapping[str, Any]) -> str:
    """The UTC day (``YYYY-MM-DD``) of an entry's ``timestamp``; ``""`` when it is not a date."""
    ms = js.date_ms(entry.get("timestamp", js.MISSING))
    return "" if ms is None else js.iso_string(ms)[: -len("T00:00:00.000Z")]


class SearchTexts(NamedTuple):
    """An entry's search texts (see the module; raw or folded) and the role its hits show."""

    role: str
    text: str
    extra: str


def _block_texts(content: Any, *, thinking: bool) -> list[str]:
    """Texts of the blocks of ``content`` that pi does not search: thinking (when ``thinking``) and tool
    calls (name and arguments)."""
    if not isinstance(content, list):
        return []
    out: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "thinking" and thinking and isinstance(block.get("thinking"), str):
            out.append(block["thinking"])
        elif kind == "toolCall":
            name = block.get("name")
            if isinstance(name, str):
                out.append(name)
            arguments = block.get("arguments")
            if arguments is not None:
                out.append(arguments if isinstance(arguments, str) else _json_text(arguments))
    return out


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return ""


def _content_text(content: Any) -> str:
    """The text of a content that pi renders (a string, or its text blocks)."""
    return message_text({"content": content})


def entry_texts(entry: Mapping[str, Any]) -> SearchTexts | None:
    """The entry's search texts as written (``extra``'s parts joined by a space), ``None`` when it
    has neither."""
    kind = entry.get("type")
    text = ""
    extra: list[str] = []
    role = kind if isinstance(kind, str) else ""
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return None
        given = message.get("role")
        role = given if isinstance(given, str) else ""
        if role in ("user", "assistant") and "content" in message:
            text = message_text(message)
        content = message.get("content")
        if role == "assistant":
            extra += _block_texts(content, thinking=True)
        elif role == "toolResult":
            extra += [s for s in (message.get("toolName"), _content_text(content)) if isinstance(s, str)]
        elif role == "bashExecution":
            extra += [s for s in (message.get("command"), message.get("output")) if isinstance(s, str)]
        elif role != "user":
            extra.append(_content_text(content))
            if isinstance(message.get("summary"), str):
                extra.append(message["summary"])
    elif kind in ("compaction", "branch_summary"):
        if isinstance(entry.get("summary"), str):
            extra.append(entry["summary"])
    elif kind == "custom_message":
        extra.append(_content_text(entry.get("content")))
    else:
        return None
    joined = " ".join(part for part in extra if part)
    if not text and not joined:
        return None
    return SearchTexts(role, text, joined)


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
"""What no database text can hold: NUL (PostgreSQL) and lone surrogates (UTF-8)."""


def index_form(text: str) -> str:
    """``text`` as the search index holds it (and as a needle is looked up): NUL and lone surrogates
    become U+FFFD. (Unlike the payload's escaped form, no needle of letters can match the stand-in;
    a needle holding U+FFFD matches them, which pi would not.)"""
    if text.isascii() and "\x00" not in text:
        return text
    return _UNSTORABLE.sub("\ufffd", text)


def search_texts(entry: Mapping[str, Any]) -> SearchTexts | None:
    """The entry's folded search texts in the index's form (:func:`index_form`), ``None`` when both
    fold to nothing."""
    texts = entry_texts(entry)
    return None if texts is None else folded_texts(texts)


def folded_texts(texts: SearchTexts) -> SearchTexts | None:
    """Raw search texts (:func:`entry_texts`) folded into the index's form, ``None`` when both fold to nothing."""
    folded_text, folded_extra = index_form(fold(texts.text)), index_form(fold(texts.extra))
    if not folded_text and not folded_extra:
        return None
    return SearchTexts(texts.role, folded_text, folded_extra)

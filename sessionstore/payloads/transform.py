"""pi-ai's ``transformMessages`` (``api/transform-messages``): what every request builder does to a
provider message list before converting it (SPEC 14.1).

- ``null``/absent content becomes ``[]``;
- for a model without image input, images become one placeholder text per run;
- an assistant turn of another model (provider, api or model id differ) loses its thinking blocks,
  its text blocks are reduced to ``{type, text}``, its tool calls lose ``thoughtSignature`` and get
  the target's normalised ids, which the matching results follow;
- a same-model thinking block is kept when redacted or signed, else dropped when blank;
- assistant turns that stopped with ``error`` or ``aborted`` are dropped (their results stay);
- every call left without a result gets a synthetic error result before the next assistant or user
  message, or at the end; a system message met while calls are pending follows their results.

The input messages are never modified; changed ones are shallow copies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sessionstore.models import js
from sessionstore.models.js_text import js_trim
from sessionstore.models.wire import JsonObject as Json
from sessionstore.payloads.facts import ModelFacts

NormalizeToolCallId = Callable[[str, Json], str]
"""``(id, source assistant message) -> id`` as the target api needs it."""

NON_VISION_USER_IMAGE_PLACEHOLDER = "(image omitted: model does not support images)"
NON_VISION_TOOL_IMAGE_PLACEHOLDER = "(tool image omitted: model does not support images)"
ERROR_TOOL_IMAGE_PLACEHOLDER = "(image attached after the tool results)"
NO_RESULT_TEXT = "No result provided"
SYNTHETIC_RESULT_TIMESTAMP = 0
"""pi-ai stamps a synthetic result with ``Date.now()``; no payload carries it, so it is a constant here."""


def replace_images_with_placeholder(content: Sequence[Json], placeholder: str) -> list[Json]:
    """Each run of images (or an image right after the same placeholder text) becomes one placeholder text."""
    result: list[Json] = []
    previous_was_placeholder = False
    for block in content:
        if js.get(block, "type") == "image":
            if not previous_was_placeholder:
                result.append({"type": "text", "text": placeholder})
            previous_was_placeholder = True
            continue
        result.append(block)
        previous_was_placeholder = js.get(block, "text") == placeholder
    return result


def split_error_tool_result_images(message: Json) -> tuple[list[Json], str, list[Json]] | None:
    """pi-ai's ``splitErrorToolResultImages``: for an error result holding images, its content with the
    images replaced, the caption and the images, which follow all results of the turn; else ``None``."""
    if not js.truthy(message.get("isError", js.MISSING)):
        return None
    images = [block for block in message["content"] if js.get(block, "type") == "image"]
    if not images:
        return None
    caption = (
        f"Images from the error result of tool call {js.to_string(message.get('toolCallId', js.MISSING))} "
        f"({js.to_string(message.get('toolName', js.MISSING))}):"
    )
    return replace_images_with_placeholder(message["content"], ERROR_TOOL_IMAGE_PLACEHOLDER), caption, images


def _downgrade_unsupported_images(messages: list[Json], model: ModelFacts) -> list[Json]:
    if model.images:
        return messages
    out = []
    for message in messages:
        role = message.get("role")
        if role == "user" and isinstance(message["content"], list):
            message = {**message, "content": replace_images_with_placeholder(
                message["content"], NON_VISION_USER_IMAGE_PLACEHOLDER)}
        elif role == "toolResult":
            message = {**message, "content": replace_images_with_placeholder(
                message["content"], NON_VISION_TOOL_IMAGE_PLACEHOLDER)}
        out.append(message)
    return out


def is_same_model(message: Json, model: ModelFacts) -> bool:
    return (message.get("provider") == model.provider and message.get("api") == model.api
            and message.get("model") == model.id)


def _transform_assistant(message: Json, model: ModelFacts, normalize: NormalizeToolCallId | None,
                         renamed: dict[str, str]) -> Json:
    same = is_same_model(message, model)
    content: list[Any] = []
    for block in message["content"]:
        kind = js.get(block, "type")
        if kind == "thinking":
            if not same:
                continue
            replayable = js.truthy(block.get("redacted", js.MISSING)) or js.truthy(
                block.get("thinkingSignature", js.MISSING))
            if replayable or (js.truthy(block.get("thinking", js.MISSING)) and js_trim(str(block["thinking"])) != ""):
                content.append(block)
        elif kind == "text":
            content.append(block if same else js.obj(("type", "text"), ("text", block.get("text", js.MISSING))))
        elif kind == "toolCall":
            call = block
            if not same and js.truthy(call.get("thoughtSignature", js.MISSING)):
                call = {key: value for key, value in call.items() if key != "thoughtSignature"}
            if not same and normalize is not None:
                new_id = normalize(call["id"], message)
                if new_id != call["id"]:
                    renamed[call["id"]] = new_id
                    call = {**call, "id": new_id}
            content.append(call)
        else:
            content.append(block)
    return {**message, "content": content}


def with_content(message: Json) -> Json:
    """``message`` with ``null`` or absent content read as ``[]``, as pi-ai's ``transformMessages``
    does first (``msg.content == null``); the message itself when it has content."""
    return message if message.get("content") is not None else {**message, "content": []}


def transform_messages(messages: Sequence[Json], model: ModelFacts,
                       normalize_tool_call_id: NormalizeToolCallId | None = None) -> list[Json]:
    """pi-ai's ``transformMessages`` for the target ``model`` (see the module docstring)."""
    renamed: dict[str, str] = {}
    normalized = [with_content(message) for message in messages]
    transformed: list[Json] = []
    for message in _downgrade_unsupported_images(normalized, model):
        role = message.get("role")
        if role == "toolResult":
            new_id = renamed.get(message.get("toolCallId"))  # type: ignore[arg-type]
            if new_id and new_id != message.get("toolCallId"):
                message = {**message, "toolCallId": new_id}
        elif role == "assistant":
            message = _transform_assistant(message, model, normalize_tool_call_id, renamed)
        transformed.append(message)
    return _close_tool_calls(transformed)


def _close_tool_calls(messages: list[Json]) -> list[Json]:
    result: list[Json] = []
    pending: list[Json] = []
    answered: set[Any] = set()
    held_system: list[Json] = []

    def close_pending() -> None:
        nonlocal pending, answered
        for call in pending:
            if call.get("id") not in answered:
                result.append({
                    "role": "toolResult",
                    "toolCallId": call.get("id"),
                    "toolName": call.get("name"),
                    "content": [{"type": "text", "text": NO_RESULT_TEXT}],
                    "isError": True,
                    "timestamp": SYNTHETIC_RESULT_TIMESTAMP,
                })
        pending, answered = [], set()
        result.extend(held_system)
        held_system.clear()

    for message in messages:
        role = message.get("role")
        if role == "assistant":
            close_pending()
            if message.get("stopReason") in ("error", "aborted"):
                continue
            calls = [block for block in message["content"] if js.get(block, "type") == "toolCall"]
            if calls:
                pending, answered = calls, set()
            result.append(message)
        elif role == "toolResult":
            answered.add(message.get("toolCallId"))
            result.append(message)
        elif role == "system" and pending:
            held_system.append(message)
        elif role == "user":
            close_pending()
            result.append(message)
        else:
            result.append(message)
    close_pending()
    return result

"""The normalized model protocol the adapter emits: chunks and the final assistant response.

This is the trusted side of the boundary; nothing here knows transport names such as
``response_end`` or ``input_tokens``. Every value is immutable: frozen dataclasses, tuples, and
tool-call arguments frozen with :func:`~sessionstore.provider.snapshot.freeze_json`. Each type has
``to_json()``, which returns a fresh plain ``dict`` with the camelCase wire keys; mutating it never
affects the value it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from sessionstore.provider.snapshot import FrozenJsonObject, JsonObject, thaw_object

StopReason: TypeAlias = Literal["stop", "toolCall", "length"]
"""Normalized stop reasons (transport ``tool_call`` becomes ``toolCall``)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one response; both are non-negative ints."""

    input_tokens: int
    output_tokens: int

    def to_json(self) -> JsonObject:
        return {"inputTokens": self.input_tokens, "outputTokens": self.output_tokens}


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Chunk: one piece of assistant text, in arrival order."""

    text: str
    type: Literal["textDelta"] = field(default="textDelta", init=False)

    def to_json(self) -> JsonObject:
        return {"type": self.type, "text": self.text}


@dataclass(frozen=True, slots=True)
class TextBlock:
    """Content block: the text of one ``text_delta`` record."""

    text: str
    type: Literal["text"] = field(default="text", init=False)

    def to_json(self) -> JsonObject:
        return {"type": self.type, "text": self.text}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete tool call; it is both a chunk and a content block (the two have the same shape).

    ``id`` is the provider's id, kept verbatim (never regenerated), so a later tool result links
    to it. ``arguments`` is a read-only deep copy: a JSON object whose keys are ordinary strings,
    ``"__proto__"`` or ``"__class__"`` included.
    """

    id: str
    name: str
    arguments: FrozenJsonObject
    type: Literal["toolCall"] = field(default="toolCall", init=False)

    def to_json(self) -> JsonObject:
        return {"type": self.type, "id": self.id, "name": self.name, "arguments": thaw_object(self.arguments)}


ProviderChunk: TypeAlias = TextDelta | ToolCall
"""What iterating a stream yields, discriminated by ``type``."""

ContentBlock: TypeAlias = TextBlock | ToolCall
"""What an assistant response contains, discriminated by ``type``."""


@dataclass(frozen=True, slots=True)
class AssistantResponse:
    """The one final result of a completed response: an assistant message.

    ``id`` is ``message-{response_id}``; ``content`` holds one block per ``text_delta`` and
    ``tool_call`` record, in record order (text deltas are not merged); ``response_id`` is the
    provider's response id, kept as opaque data.
    """

    id: str
    content: tuple[ContentBlock, ...]
    stop_reason: StopReason
    usage: Usage
    response_id: str
    role: Literal["assistant"] = field(default="assistant", init=False)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool-call blocks of ``content``, in order."""
        return tuple(block for block in self.content if isinstance(block, ToolCall))

    @property
    def text(self) -> str:
        """The text blocks of ``content`` joined without separators (tool calls are not rendered)."""
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))

    def to_json(self) -> JsonObject:
        return {
            "id": self.id,
            "role": self.role,
            "content": [block.to_json() for block in self.content],
            "stopReason": self.stop_reason,
            "usage": self.usage.to_json(),
            "responseId": self.response_id,
        }

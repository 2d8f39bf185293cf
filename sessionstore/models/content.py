"""Content blocks (SPEC 1), discriminated by ``type``.

Unknown fields (signatures, provider data) are kept as extras and written back unchanged.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, TypeAdapter
from pydantic.alias_generators import to_camel

from sessionstore.models.frozen import freeze_json, thaw


class WireModel(BaseModel):
    """Base of every wire object: camelCase on the wire, extras kept, values immutable."""

    model_config = ConfigDict(
        extra="allow",
        frozen=True,
        populate_by_name=True,
        alias_generator=to_camel,
        serialize_by_alias=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The object as plain JSON data with pi's field names; unset optional fields are absent."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


def _freeze_arguments(value: Any) -> Any:
    if not isinstance(value, dict) and not hasattr(value, "items"):
        raise TypeError(f"arguments: expected a JSON object, got {type(value).__name__}")
    return freeze_json(value, "arguments")


JsonObject = Annotated[Any, PlainValidator(_freeze_arguments), PlainSerializer(thaw)]


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str
    text_signature: str | None = None


class ThinkingContent(WireModel):
    type: Literal["thinking"] = "thinking"
    thinking: str
    thinking_signature: str | None = None
    redacted: bool | None = None


class ImageContent(WireModel):
    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ToolCall(WireModel):
    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: JsonObject
    thought_signature: str | None = None
    namespace: str | None = None


UserContentBlock = Annotated[TextContent | ImageContent, Field(discriminator="type")]
AssistantContentBlock = Annotated[TextContent | ThinkingContent | ToolCall, Field(discriminator="type")]
ContentBlock = Annotated[TextContent | ThinkingContent | ImageContent | ToolCall, Field(discriminator="type")]

CONTENT_BLOCK_ADAPTER: TypeAdapter[TextContent | ThinkingContent | ImageContent | ToolCall] = TypeAdapter(
    ContentBlock
)

"""Content blocks (SPEC 1), discriminated by ``type``, and the field types every wire model uses.

The fields follow the TypedDicts of :mod:`sessionstore.models.wire` (a test holds them together):
numbers and booleans are strict JSON types (``"1"`` is no number, ``1`` no boolean), an optional
field may be absent but not ``null`` unless its TypedDict allows null, and opaque fields
(signatures, provider data) are kept unchecked. Unknown fields are kept as extras and written back
unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    StrictBool,
    StrictFloat,
    StrictInt,
    TypeAdapter,
)
from pydantic.alias_generators import to_camel

from sessionstore.models.frozen import freeze_json, thaw

_T = TypeVar("_T")


def _refuse_null(value: Any) -> Any:
    if value is None:
        raise ValueError("null is not allowed here (leave the field out instead)")
    return value


NotNull = Annotated[_T | None, BeforeValidator(_refuse_null)]
"""An optional field: absent reads as ``None``, an explicit ``null`` is refused (pi's ``key?: T``)."""

Number = StrictInt | Annotated[StrictFloat, Field(allow_inf_nan=False)]
"""A JSON number (pi's ``number``): an int or a finite float, never a boolean or a string."""

def _frozen(value: Any, path: str) -> Any:
    """``freeze_json`` inside a model: every refusal a ``ValueError``, so validation raises
    ``ValidationError`` (the constructors snapshot first and keep their ``TypeError``)."""
    try:
        return freeze_json(value, path)
    except TypeError as exc:
        raise ValueError(str(exc)) from None


FrozenJson = Annotated[Any, PlainValidator(lambda v: _frozen(v, "value")), PlainSerializer(thaw)]
"""Any JSON value, frozen; also the type of opaque fields (kept, never checked)."""


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
    if not isinstance(value, Mapping):
        raise ValueError(f"arguments: expected a JSON object, got {type(value).__name__}")
    return _frozen(value, "arguments")


def _tagged(value: Any) -> Any:
    """A block of a one-type list (system content) still needs its tag, as in the tagged unions."""
    if isinstance(value, Mapping) and "type" not in value:
        raise ValueError("a content block needs its 'type'")
    return value


JsonObject = Annotated[Any, PlainValidator(_freeze_arguments), PlainSerializer(thaw)]


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str
    text_signature: FrozenJson = None  # opaque


class ThinkingContent(WireModel):
    type: Literal["thinking"] = "thinking"
    thinking: str
    thinking_signature: FrozenJson = None  # opaque
    redacted: NotNull[StrictBool] = None


class ImageContent(WireModel):
    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ToolCall(WireModel):
    type: Literal["toolCall"] = "toolCall"
    id: str = Field(min_length=1)  # a tool result must be able to name it
    name: str
    arguments: JsonObject
    thought_signature: FrozenJson = None  # opaque
    namespace: NotNull[str] = None


TextContentBlock = Annotated[TextContent, BeforeValidator(_tagged)]
UserContentBlock = Annotated[TextContent | ImageContent, Field(discriminator="type")]
AssistantContentBlock = Annotated[TextContent | ThinkingContent | ToolCall, Field(discriminator="type")]
ContentBlock = Annotated[TextContent | ThinkingContent | ImageContent | ToolCall, Field(discriminator="type")]

CONTENT_BLOCK_ADAPTER: TypeAdapter[TextContent | ThinkingContent | ImageContent | ToolCall] = TypeAdapter(
    ContentBlock
)

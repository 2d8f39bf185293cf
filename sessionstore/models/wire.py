"""pi 1.6's wire shapes as TypedDicts: content blocks and messages (SPEC 1-2, 12); each entry kind's
TypedDict is in its module of :mod:`sessionstore.models.kinds`.

These are the types of the plain JSON data the store takes and returns (camelCase keys exactly as
pi writes them); the pydantic models in this package are the typed view of the same data, and
:data:`sessionstore.models.adapters.AgentMessagesAdapter` converts between the two.

Each TypedDict names the *known* keys of its object. Unknown keys survive import and export
(SPEC 3), so a value at run time may hold more keys than its TypedDict lists.

The declarations are also the rule: :mod:`sessionstore.models.wire_shape` reads them at import and
the transcript validator checks messages against what it reads, so a key's presence (``Required``
/ ``NotRequired``) and its type are stated once, here. Two conventions:

* a key marked ``Opaque`` is pi's provider or runtime data (signatures, ``responseId``, the
  optional fields pi 1.6 added, SPEC 1 and 12.2.2): typed here for readers, but neither the
  validator nor the models check it; it is kept byte for byte;
* ``int | float`` is a JSON number (pi's ``number``), never a boolean.

Where the store accepts less than pi 1.6's types demand, because older pi versions wrote less,
the key says so in a comment.
"""

from typing import Annotated, Any, Literal, NotRequired, TypedDict, final


@final
class _Opaque:
    """The marker of an opaque key (see the module docstring)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Opaque"


OPAQUE = _Opaque()

JsonValue = Any
"""Any JSON value (pi's ``JsonValue``; ``Any`` so callers' ``dict[str, Any]`` data type-checks)."""
JsonObject = dict[str, Any]
"""A JSON object (pi's ``JsonObject``)."""

StopReason = Literal["stop", "length", "toolUse", "error", "aborted", "pending", "deferred"]
"""The stop reasons pi 1.6 writes. ``stopReason`` is typed ``str``: a later pi may add more, and
they are kept."""


# -- content blocks (SPEC 1, 12.1) --------------------------------------------------------------------
class TextContentDict(TypedDict):
    type: Literal["text"]
    text: str
    textSignature: NotRequired[Annotated[str, OPAQUE]]


class ThinkingContentDict(TypedDict):
    type: Literal["thinking"]
    thinking: str
    thinkingSignature: NotRequired[Annotated[str, OPAQUE]]
    redacted: NotRequired[bool]


class ImageContentDict(TypedDict):
    type: Literal["image"]
    data: str  # base64
    mimeType: str


class ToolCallDict(TypedDict):
    type: Literal["toolCall"]
    id: str  # non-empty: a tool result must be able to name it
    name: str
    arguments: JsonObject
    thoughtSignature: NotRequired[Annotated[str, OPAQUE]]
    namespace: NotRequired[str]
    argumentsError: NotRequired[Annotated[str, OPAQUE]]  # 1.6: set when the model's arguments were not an object


UserContentBlockDict = TextContentDict | ImageContentDict
ToolResultContentBlockDict = TextContentDict | ImageContentDict
AssistantContentBlockDict = TextContentDict | ThinkingContentDict | ToolCallDict
ContentBlockDict = TextContentDict | ThinkingContentDict | ImageContentDict | ToolCallDict


# -- usage (pi-ai ``Usage``) ----------------------------------------------------------------------------
class CostDict(TypedDict, total=False):
    # pi 1.6 writes every count; the store reads a missing one as 0, as it always has.
    input: int | float
    output: int | float
    cacheRead: int | float
    cacheWrite: int | float
    total: int | float
    totalFromProvider: Annotated[bool, OPAQUE]


class UsageDict(TypedDict, total=False):
    # pi 1.6 writes every count; older pi wrote no totalTokens (most of fixtures/pi); missing is 0.
    input: int | float
    output: int | float
    cacheRead: int | float
    cacheWrite: int | float
    cacheWrite1h: Annotated[int | float, OPAQUE]
    reasoning: Annotated[int | float, OPAQUE]
    totalTokens: int | float
    cost: CostDict


# -- messages (SPEC 2, 12.2) ---------------------------------------------------------------------------
class ToolDict(TypedDict):
    """A tool definition a system message makes available (pi-ai ``Tool``)."""

    name: str
    description: str
    parameters: JsonValue  # a JSON schema
    constrainedSampling: NotRequired[Annotated[JsonValue, OPAQUE]]


class ToolReferenceDict(TypedDict):
    name: str


class SystemMessageDict(TypedDict):
    role: Literal["system"]
    content: str | list[TextContentDict]
    # pi types these three without null; the store has always read null as absent.
    sections: NotRequired[dict[str, str | None] | None]
    toolsAdded: NotRequired[list[ToolDict] | None]
    toolsRemoved: NotRequired[list[ToolReferenceDict] | None]
    timestamp: int | float  # Unix ms


class UserMessageDict(TypedDict):
    role: Literal["user"]
    content: str | list[UserContentBlockDict]
    timestamp: int | float


class AssistantMessageDict(TypedDict):
    role: Literal["assistant"]
    content: list[AssistantContentBlockDict]
    api: str
    provider: str
    model: str
    responseModel: NotRequired[Annotated[str, OPAQUE]]
    responseId: NotRequired[Annotated[str, OPAQUE]]
    providerThinkingLevel: NotRequired[Annotated[str, OPAQUE]]
    thinkingLevel: NotRequired[Annotated[str, OPAQUE]]
    diagnostics: NotRequired[Annotated[list[JsonValue], OPAQUE]]
    usage: UsageDict
    stopReason: str  # see StopReason
    deferred: NotRequired[Annotated[JsonObject, OPAQUE]]
    errorMessage: NotRequired[str]
    rawStopReason: NotRequired[Annotated[str, OPAQUE]]
    endTurn: NotRequired[Annotated[bool, OPAQUE]]
    timestamp: int | float
    durationMs: NotRequired[Annotated[int | float, OPAQUE]]


class ToolResultMessageDict(TypedDict):
    role: Literal["toolResult"]
    toolCallId: str
    toolName: str
    content: list[ToolResultContentBlockDict]
    details: NotRequired[JsonValue]  # runtime/UI data, never sent to the model
    usage: NotRequired[Annotated[UsageDict, OPAQUE]]
    nestedCalls: NotRequired[Annotated[JsonObject, OPAQUE]]
    isError: bool
    timestamp: int | float
    durationMs: NotRequired[Annotated[int | float, OPAQUE]]


class BashExecutionMessageDict(TypedDict):
    role: Literal["bashExecution"]
    command: str
    output: str
    exitCode: NotRequired[int | float | None]  # pi: ``number | undefined``; null is SPEC 2's "no code" too
    cancelled: bool
    truncated: bool
    fullOutputPath: NotRequired[str]
    timestamp: int | float
    excludeFromContext: NotRequired[bool]


class CustomMessageDict(TypedDict):
    role: Literal["custom"]
    customType: str
    content: str | list[UserContentBlockDict]
    display: bool
    details: NotRequired[JsonValue]
    timestamp: int | float


class BranchSummaryMessageDict(TypedDict):
    role: Literal["branchSummary"]
    summary: str
    fromId: str | None
    timestamp: int | float


class CompactionSummaryMessageDict(TypedDict):
    role: Literal["compactionSummary"]
    summary: str
    tokensBefore: int | float
    timestamp: int | float


ProviderMessageDict = SystemMessageDict | UserMessageDict | AssistantMessageDict | ToolResultMessageDict
"""What projection (pi's ``convertToLlm``) gives: the four provider roles."""

AgentMessageDict = (
    ProviderMessageDict
    | BashExecutionMessageDict
    | CustomMessageDict
    | BranchSummaryMessageDict
    | CompactionSummaryMessageDict
)
"""A message of a built-in role. Messages of roles the application registers are mappings with a
string ``role`` and whatever their model declares."""

MESSAGE_DICTS: dict[str, type[Any]] = {
    "system": SystemMessageDict,
    "user": UserMessageDict,
    "assistant": AssistantMessageDict,
    "toolResult": ToolResultMessageDict,
    "bashExecution": BashExecutionMessageDict,
    "custom": CustomMessageDict,
    "branchSummary": BranchSummaryMessageDict,
    "compactionSummary": CompactionSummaryMessageDict,
}
"""Built-in role -> its TypedDict."""


__all__ = [
    "OPAQUE",
    "AgentMessageDict",
    "AssistantContentBlockDict",
    "AssistantMessageDict",
    "BashExecutionMessageDict",
    "BranchSummaryMessageDict",
    "CompactionSummaryMessageDict",
    "ContentBlockDict",
    "CostDict",
    "CustomMessageDict",
    "ImageContentDict",
    "JsonObject",
    "JsonValue",
    "ProviderMessageDict",
    "StopReason",
    "SystemMessageDict",
    "TextContentDict",
    "ThinkingContentDict",
    "ToolCallDict",
    "ToolDict",
    "ToolReferenceDict",
    "ToolResultContentBlockDict",
    "ToolResultMessageDict",
    "UsageDict",
    "UserContentBlockDict",
    "UserMessageDict",
]

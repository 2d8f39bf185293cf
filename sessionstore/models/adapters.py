"""The one adapter between wire data (the TypedDicts of :mod:`sessionstore.models.wire`) and the
pydantic models, in both directions, as pydantic-ai's ``ModelMessagesTypeAdapter`` is.

``AgentMessagesAdapter.validate_python(dicts)`` gives the typed messages (roles registered by the
application through their own models, unregistered roles as :class:`UnknownMessage`);
``AgentMessagesAdapter.dump_python(models, mode="json")`` gives the wire data back, equal to what
went in: unknown fields, unset optional fields and number types survive the round trip. A message
of a built-in role that lacks pi 1.6's shape raises ``pydantic.ValidationError`` — exactly the
messages for which ``validate_transcript`` reports a shape diagnostic.
"""

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import PlainSerializer, PlainValidator, TypeAdapter

from sessionstore.models.content import CONTENT_BLOCK_ADAPTER, WireModel
from sessionstore.models.kinds import ENTRY_ADAPTER
from sessionstore.models.messages import (
    BUILTIN_MESSAGE_ADAPTER,
    PROVIDER_MESSAGE_ADAPTER,
    parse_agent_message,
)
from sessionstore.models.wire import AgentMessageDict


def _validate(value: Any) -> WireModel:
    if isinstance(value, WireModel):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(f"a message must be a mapping, got {type(value).__name__}")
    return parse_agent_message(value)


def _dump(message: WireModel) -> dict[str, Any]:
    return message.to_wire()


AgentMessage = Annotated[WireModel, PlainValidator(_validate), PlainSerializer(_dump)]
"""A typed message of any role: a built-in model, a registered role's model, or an
:class:`~sessionstore.models.messages.UnknownMessage`; serialised as its wire data."""

AgentMessageAdapter: TypeAdapter[WireModel] = TypeAdapter(AgentMessage)
"""One message: wire data <-> typed model (the registry is consulted at validation time)."""

AgentMessagesAdapter: TypeAdapter[list[WireModel]] = TypeAdapter(list[AgentMessage])
"""A message list: wire data <-> typed models (``ContextResult.messages`` <-> ``append_messages``)."""

ProviderMessageAdapter = PROVIDER_MESSAGE_ADAPTER
"""A provider message (system, user, assistant, toolResult): wire data <-> its model."""

BuiltinAgentMessageAdapter = BUILTIN_MESSAGE_ADAPTER
"""A message of a built-in role: wire data <-> its model (registered roles are refused)."""

ContentBlockAdapter = CONTENT_BLOCK_ADAPTER
"""A content block: wire data <-> its model."""

SessionEntryAdapter = ENTRY_ADAPTER
"""A session entry: wire data <-> its model (unknown types become ``UnknownEntry``)."""


def message_models(messages: Sequence[AgentMessageDict | Mapping[str, Any]]) -> list[WireModel]:
    """The typed models of wire messages (``[m.to_wire() for m in result] == messages``).

    Raises ``pydantic.ValidationError`` when a message of a built-in role lacks pi 1.6's shape
    (the messages ``validate_transcript`` reports)."""
    return AgentMessagesAdapter.validate_python(list(messages))


def message_dicts(messages: Sequence[WireModel]) -> list[AgentMessageDict]:
    """The wire data of typed messages (the inverse of :func:`message_models`)."""
    dumped: list[AgentMessageDict] = AgentMessagesAdapter.dump_python(list(messages), mode="json")
    return dumped

"""The offline provider fixture adapter: the ingest boundary between transport records and the model protocol.

``FixtureProviderAdapter(fixture)`` replays a ``schemaVersion: 1`` fixture as a model provider,
without any network access. ``adapter.stream(request_id, abort=...)`` returns a
:class:`ProviderStream`: iterate it for :data:`ProviderChunk` values, await it for the final
:class:`AssistantResponse`. Every failure is a :class:`FixtureProviderError` with a stable
:data:`ProviderErrorCode`, documented in :data:`PROVIDER_ERROR_CODES`.
"""

from sessionstore.provider.adapter import FixtureProviderAdapter
from sessionstore.provider.errors import PROVIDER_ERROR_CODES, FixtureProviderError, ProviderErrorCode
from sessionstore.provider.fixture import SCHEMA_VERSION, load_fixture
from sessionstore.provider.protocol import (
    AssistantResponse,
    ContentBlock,
    ProviderChunk,
    StopReason,
    TextBlock,
    TextDelta,
    ToolCall,
    Usage,
)
from sessionstore.provider.snapshot import FrozenJson, FrozenJsonObject, JsonObject, JsonValue
from sessionstore.provider.sources import AbortSignal
from sessionstore.provider.stream import ProviderStream

__all__ = [
    "PROVIDER_ERROR_CODES",
    "SCHEMA_VERSION",
    "AbortSignal",
    "AssistantResponse",
    "ContentBlock",
    "FixtureProviderAdapter",
    "FixtureProviderError",
    "FrozenJson",
    "FrozenJsonObject",
    "JsonObject",
    "JsonValue",
    "ProviderChunk",
    "ProviderErrorCode",
    "ProviderStream",
    "StopReason",
    "TextBlock",
    "TextDelta",
    "ToolCall",
    "Usage",
    "load_fixture",
]

"""Models of pi's session data, no I/O: wire TypedDicts (:mod:`~sessionstore.models.wire`), the
pydantic models (content, messages, entries) and the one adapter between them
(:mod:`~sessionstore.models.adapters`).

The message and content TypedDicts are imported eagerly (they cost nothing); the entry kinds
(:mod:`~sessionstore.models.kinds`, each kind's TypedDict beside its pydantic model) and the
adapters, which build pydantic validators, on first use, so that modules needing only the wire
shapes stay cheap to import.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from sessionstore.models.wire import (
    OPAQUE,
    AgentMessageDict,
    AssistantContentBlockDict,
    AssistantMessageDict,
    BashExecutionMessageDict,
    BranchSummaryMessageDict,
    CompactionSummaryMessageDict,
    ContentBlockDict,
    CostDict,
    CustomMessageDict,
    ImageContentDict,
    JsonObject,
    JsonValue,
    ProviderMessageDict,
    StopReason,
    SystemMessageDict,
    TextContentDict,
    ThinkingContentDict,
    ToolCallDict,
    ToolDict,
    ToolReferenceDict,
    ToolResultContentBlockDict,
    ToolResultMessageDict,
    UsageDict,
    UserContentBlockDict,
    UserMessageDict,
)

if TYPE_CHECKING:
    from sessionstore.models.adapters import AgentMessage as AgentMessage
    from sessionstore.models.adapters import AgentMessageAdapter as AgentMessageAdapter
    from sessionstore.models.adapters import AgentMessagesAdapter as AgentMessagesAdapter
    from sessionstore.models.adapters import BuiltinAgentMessageAdapter as BuiltinAgentMessageAdapter
    from sessionstore.models.adapters import ContentBlockAdapter as ContentBlockAdapter
    from sessionstore.models.adapters import ProviderMessageAdapter as ProviderMessageAdapter
    from sessionstore.models.adapters import SessionEntryAdapter as SessionEntryAdapter
    from sessionstore.models.adapters import message_dicts as message_dicts
    from sessionstore.models.adapters import message_models as message_models
    from sessionstore.models.kinds import *  # noqa: F403  (the kinds' TypedDicts and models, resolved lazily below)

_LAZY = frozenset({
    "AgentMessage",
    "AgentMessageAdapter",
    "AgentMessagesAdapter",
    "BuiltinAgentMessageAdapter",
    "ContentBlockAdapter",
    "ProviderMessageAdapter",
    "SessionEntryAdapter",
    "message_dicts",
    "message_models",
})


def __getattr__(name: str) -> Any:
    if name.endswith("EntryDict") or name in ("SessionHeaderDict", "ContextEditReplacementDict"):
        kinds = import_module("sessionstore.models.kinds")  # (each kind's TypedDict beside its model)
        if name in kinds.__all__:
            return getattr(kinds, name)
    if name in _LAZY:
        return getattr(import_module("sessionstore.models.adapters"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [  # (and, resolved on first use, the entry kinds' names: sessionstore.models.kinds.__all__)

    "OPAQUE",
    "AgentMessage",
    "AgentMessageAdapter",
    "AgentMessageDict",
    "AgentMessagesAdapter",
    "AssistantContentBlockDict",
    "AssistantMessageDict",
    "BashExecutionMessageDict",
    "BranchSummaryMessageDict",
    "BuiltinAgentMessageAdapter",
    "CompactionSummaryMessageDict",
    "ContentBlockAdapter",
    "ContentBlockDict",
    "CostDict",
    "CustomMessageDict",
    "ImageContentDict",
    "JsonObject",
    "JsonValue",
    "ProviderMessageAdapter",
    "ProviderMessageDict",
    "SessionEntryAdapter",
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
    "message_dicts",
    "message_models",
]

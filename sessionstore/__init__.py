"""sessionstore: an append-only, pi-compatible store for coding-agent sessions.

The public names are typed here for type checkers and imported on first use at run time, so that
``import sessionstore`` (and every ``sessionstore`` command's start) stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessionstore.aio import AsyncSessionStore as AsyncSessionStore
    from sessionstore.api import ContextResult as ContextResult
    from sessionstore.api import SessionStore as SessionStore
    from sessionstore.errors import EntryIdTakenError as EntryIdTakenError
    from sessionstore.errors import EntryNotFoundError as EntryNotFoundError
    from sessionstore.errors import InvalidCompactionError as InvalidCompactionError
    from sessionstore.errors import InvalidInputError as InvalidInputError
    from sessionstore.errors import JsonlError as JsonlError
    from sessionstore.errors import LeafConflictError as LeafConflictError
    from sessionstore.errors import SchemaError as SchemaError
    from sessionstore.errors import SessionExistsError as SessionExistsError
    from sessionstore.errors import SessionNotFoundError as SessionNotFoundError
    from sessionstore.errors import SessionStoreError as SessionStoreError
    from sessionstore.errors import StoreError as StoreError
    from sessionstore.models.adapters import AgentMessagesAdapter as AgentMessagesAdapter
    from sessionstore.models.kinds import SessionEntryDict as SessionEntryDict
    from sessionstore.models.kinds import SessionHeaderDict as SessionHeaderDict
    from sessionstore.models.messages import AssistantMessage as AssistantMessage
    from sessionstore.models.messages import SystemMessage as SystemMessage
    from sessionstore.models.messages import ToolResultMessage as ToolResultMessage
    from sessionstore.models.messages import UserMessage as UserMessage
    from sessionstore.models.messages import assistant_message as assistant_message
    from sessionstore.models.messages import register_role as register_role
    from sessionstore.models.messages import system_message as system_message
    from sessionstore.models.messages import tool_result_message as tool_result_message
    from sessionstore.models.messages import user_message as user_message
    from sessionstore.models.wire import AgentMessageDict as AgentMessageDict
    from sessionstore.models.wire import ProviderMessageDict as ProviderMessageDict
    from sessionstore.store.records import ImportResult as ImportResult
    from sessionstore.store.records import SessionInfo as SessionInfo
    from sessionstore.store.records import TreeNode as TreeNode
    from sessionstore.validate import Diagnostic as Diagnostic
    from sessionstore.validate import validate_transcript as validate_transcript

__version__ = "0.1.0"

_EXPORTS = {
    "SessionStore": "sessionstore.api",
    "AsyncSessionStore": "sessionstore.aio",
    "ContextResult": "sessionstore.api",
    "ImportResult": "sessionstore.store.records",
    "user_message": "sessionstore.models.messages",
    "assistant_message": "sessionstore.models.messages",
    "tool_result_message": "sessionstore.models.messages",
    "system_message": "sessionstore.models.messages",
    "register_role": "sessionstore.models.messages",
    "UserMessage": "sessionstore.models.messages",
    "AssistantMessage": "sessionstore.models.messages",
    "ToolResultMessage": "sessionstore.models.messages",
    "SystemMessage": "sessionstore.models.messages",
    "validate_transcript": "sessionstore.validate",
    "Diagnostic": "sessionstore.validate",
    "SessionStoreError": "sessionstore.errors",
    "InvalidInputError": "sessionstore.errors",
    "JsonlError": "sessionstore.errors",
    "SessionNotFoundError": "sessionstore.errors",
    "EntryNotFoundError": "sessionstore.errors",
    "LeafConflictError": "sessionstore.errors",
    "EntryIdTakenError": "sessionstore.errors",
    "InvalidCompactionError": "sessionstore.errors",
    "SchemaError": "sessionstore.errors",
    "SessionExistsError": "sessionstore.errors",
    "StoreError": "sessionstore.errors",
    "AgentMessageDict": "sessionstore.models.wire",
    "ProviderMessageDict": "sessionstore.models.wire",
    "SessionEntryDict": "sessionstore.models.kinds",
    "SessionHeaderDict": "sessionstore.models.kinds",
    "AgentMessagesAdapter": "sessionstore.models.adapters",
    "SessionInfo": "sessionstore.store.records",
    "TreeNode": "sessionstore.store.records",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sessionstore' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute
    return value

"""sessionstore: an append-only, pi-compatible store for coding-agent sessions.

The public names are imported lazily so that ``import sessionstore`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "SessionStore": "sessionstore.api",
    "ContextResult": "sessionstore.api",
    "user_message": "sessionstore.models.messages",
    "assistant_message": "sessionstore.models.messages",
    "tool_result_message": "sessionstore.models.messages",
    "register_role": "sessionstore.models.messages",
    "validate_transcript": "sessionstore.validate",
    "Diagnostic": "sessionstore.validate",
    "SessionStoreError": "sessionstore.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sessionstore' has no attribute {name!r}")
    return getattr(import_module(module), name)

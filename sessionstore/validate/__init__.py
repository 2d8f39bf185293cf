"""Transcript validation: stable diagnostic codes, the diagnostic value, and ``validate_transcript``
(imported on first use: the codes and the value are what most importers need)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessionstore.validate.codes import (
    CONTEXT_CODES,
    DIAGNOSTIC_CODES,
    ENTRY_CODES,
    ERROR_CODES,
    LINKAGE_CODES,
    SHAPE_CODES,
    ContextCode,
    DiagnosticCode,
    EntryCode,
    LinkageCode,
    ShapeCode,
)
from sessionstore.validate.diagnostic import Diagnostic

if TYPE_CHECKING:
    from sessionstore.validate.transcript import validate_transcript as validate_transcript

__all__ = [
    "CONTEXT_CODES",
    "DIAGNOSTIC_CODES",
    "ENTRY_CODES",
    "ERROR_CODES",
    "LINKAGE_CODES",
    "SHAPE_CODES",
    "ContextCode",
    "Diagnostic",
    "DiagnosticCode",
    "EntryCode",
    "LinkageCode",
    "ShapeCode",
    "validate_transcript",
]


def __getattr__(name: str) -> Any:
    if name == "validate_transcript":
        from sessionstore.validate.transcript import validate_transcript

        globals()[name] = validate_transcript
        return validate_transcript
    raise AttributeError(f"module 'sessionstore.validate' has no attribute {name!r}")

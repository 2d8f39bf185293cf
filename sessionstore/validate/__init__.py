"""Transcript validation: stable diagnostic codes, the diagnostic value, and ``validate_transcript``."""

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
from sessionstore.validate.transcript import validate_transcript

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

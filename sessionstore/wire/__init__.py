"""pi's JSONL session files: line-numbered reading, version upgrades to v3, v3 export, and the one JSON codec.

The names are imported on first use, so that a module needing only the codec does not load the reader
(and the pydantic models it checks entries with)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessionstore.models.problems import format_validation_error as format_validation_error
    from sessionstore.wire.codec import dump_line as dump_line
    from sessionstore.wire.jsonl import SessionFileReader as SessionFileReader
    from sessionstore.wire.jsonl import SkippedLine as SkippedLine
    from sessionstore.wire.jsonl import write_session_file as write_session_file
    from sessionstore.wire.migrate import CURRENT_VERSION as CURRENT_VERSION

_EXPORTS = {
    "CURRENT_VERSION": "sessionstore.wire.migrate",
    "SessionFileReader": "sessionstore.wire.jsonl",
    "SkippedLine": "sessionstore.wire.jsonl",
    "dump_line": "sessionstore.wire.codec",
    "format_validation_error": "sessionstore.models.problems",
    "write_session_file": "sessionstore.wire.jsonl",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sessionstore.wire' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value

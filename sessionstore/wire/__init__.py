"""pi's JSONL session files: line-numbered reading, version upgrades to v3, v3 export, and the one JSON codec."""

from sessionstore.wire.codec import dump_line
from sessionstore.wire.jsonl import (
    CURRENT_VERSION,
    SessionFileReader,
    SkippedLine,
    format_validation_error,
    write_session_file,
)

__all__ = [
    "CURRENT_VERSION",
    "SessionFileReader",
    "SkippedLine",
    "dump_line",
    "format_validation_error",
    "write_session_file",
]

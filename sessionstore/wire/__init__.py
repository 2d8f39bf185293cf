"""pi's JSONL session files: line-numbered reading, version upgrades to v3, and v3 export."""

from sessionstore.wire.jsonl import (
    CURRENT_VERSION,
    SessionFileReader,
    SkippedLine,
    dump_line,
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

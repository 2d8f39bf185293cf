"""One error tree for sessionstore.

Every error the library raises on purpose derives from :class:`SessionStoreError`;
driver errors are translated at the store boundary (``raise ... from exc``).
Each error carries a stable ``code`` (documented in the README).
"""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal[
    "SESSIONSTORE_ERROR",
    "INVALID_INPUT",
    "JSONL_INVALID",
    "SESSION_NOT_FOUND",
    "ENTRY_NOT_FOUND",
    "SESSION_EXISTS",
    "ENTRY_ID_TAKEN",
    "DUPLICATE_ID",
    "LEAF_CONFLICT",
    "INVALID_COMPACTION",
    "SCHEMA_OUTDATED",
    "SCHEMA_TOO_NEW",
    "BACKEND_UNAVAILABLE",
    "STORE_ERROR",
    "JSONL_INCOMPLETE",
    "SOURCE_CONFLICT",
    "ARCHIVE_DAMAGED",
]
"""The stable codes of the errors in this module (the provider adapter's errors carry its own codes)."""


class SessionStoreError(Exception):
    """Root of every error raised by sessionstore, the provider adapter's included."""

    code: str = "SESSIONSTORE_ERROR"


class InvalidInputError(SessionStoreError, ValueError):
    """A value handed to the library is not acceptable (bad message, bad entry, bad option)."""

    code = "INVALID_INPUT"


class JsonlError(SessionStoreError):
    """A JSONL session file cannot be read; ``str()`` is ``file:line: reason``."""

    code = "JSONL_INVALID"

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {reason}")


class IncompleteHeaderError(JsonlError):
    """The file's header line has no newline yet (a reader of complete lines only: pi is writing it)."""

    code = "JSONL_INCOMPLETE"


class SessionNotFoundError(SessionStoreError, LookupError):
    code = "SESSION_NOT_FOUND"

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"no session {session_id!r}")


class EntryNotFoundError(SessionStoreError, LookupError):
    code = "ENTRY_NOT_FOUND"

    def __init__(self, session_id: str, entry_id: str, *, where: str = "") -> None:
        """``where``: the entry's place in a batch (``entries[3]: ``), prefixed to the message."""
        self.session_id = session_id
        self.entry_id = entry_id
        super().__init__(f"{where}session {session_id!r} has no entry {entry_id!r}")


class SessionExistsError(SessionStoreError):
    code = "SESSION_EXISTS"

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"a session with id {session_id!r} already exists (import --replace replaces it)")


class SourceConflictError(SessionStoreError):
    """A synced file names a session that the database holds from elsewhere (imported by hand, or synced
    from another file that still exists)."""

    code = "SOURCE_CONFLICT"


class EntryIdTakenError(InvalidInputError):
    """The session already has an entry with the id given for a new one; nothing was written."""

    code = "ENTRY_ID_TAKEN"


class DuplicateIdError(EntryIdTakenError):
    """An append gave an entry id the session already holds with other content (or in another batch);
    nothing was written. The same ids with the same content are a retry, not this error."""

    code = "DUPLICATE_ID"


class LeafConflictError(SessionStoreError):
    """The session's leaf moved since the caller read it (another writer appended); nothing was written."""

    code = "LEAF_CONFLICT"

    def __init__(self, session_id: str, expected: str | None, actual: str | None) -> None:
        self.session_id = session_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"session {session_id!r}: expected leaf {expected!r} but the leaf is {actual!r}; nothing was written"
        )


class InvalidCompactionError(SessionStoreError, ValueError):
    code = "INVALID_COMPACTION"


class SchemaError(SessionStoreError):
    """The database schema is not the one this version of sessionstore needs."""

    code = "SCHEMA_OUTDATED"


class SchemaTooNewError(SchemaError):
    """The database was written by a newer sessionstore: its schema revision is unknown here, so this
    version neither reads nor upgrades it."""

    code = "SCHEMA_TOO_NEW"


class BackendUnavailableError(SessionStoreError):
    """A database driver or optional extra is missing."""

    code = "BACKEND_UNAVAILABLE"


class StoreError(SessionStoreError):
    """A database operation failed; the driver error is chained as ``__cause__``."""

    code = "STORE_ERROR"


class ArchiveError(SessionStoreError):
    """An archived session's file is missing, damaged (its SHA-256 differs from the one recorded) or not
    the session's: the session stays archived and nothing is restored."""

    code = "ARCHIVE_DAMAGED"

"""The stable diagnostic codes of sessionstore: the contract consumers branch on.

A code is a stable string; the prose of a diagnostic is for people and may change. Codes fall into
three families:

* shape codes: a value does not have pi's wire shape (SPEC 1, 2);
* linkage codes: tool calls and tool results do not form valid tool rounds (SPEC 7);
* context codes: context building and projection had to repair or drop something (SPEC 5, 6).
  The transcript validator never produces these; the context and provider modules do;
* entry codes: a session file entry that pi 1.6 loads lacks part of its shape (SPEC 12.9); the
  entry is stored verbatim and read as pi reads it. Import and context building report these.

Shape and linkage codes are errors (``ERROR_CODES``) of the messages as stored. ``sessionstore
validate`` exits 1 for a shape error and for a linkage error the provider-safe projection leaves in
place; a linkage finding the projection removes (``MISSING_TOOL_RESULT``, which real sessions hold
after aborted turns: a synthetic result answers the call) is reported as repaired. Loading still
succeeds either way. Context and entry codes are warnings.

``DiagnosticCode`` (static) and ``DIAGNOSTIC_CODES`` (runtime, code -> one-line documentation)
list the same codes; a test keeps them in agreement.
"""

from __future__ import annotations

from typing import Final, Literal

ShapeCode = Literal[
    "TRANSCRIPT_NOT_A_LIST",
    "MESSAGE_NOT_A_MAPPING",
    "UNKNOWN_ROLE",
    "INVALID_MESSAGE",
    "INVALID_CONTENT_BLOCK",
    "INVALID_TOOL_CALL",
    "TOOL_ARGUMENTS_NOT_OBJECT",
    "INVALID_TOOL_RESULT",
    "UNREADABLE_VALUE",
    "VALIDATION_INTERNAL_ERROR",
]

LinkageCode = Literal[
    "DUPLICATE_TOOL_CALL_ID",
    "DUPLICATE_TOOL_RESULT",
    "ORPHAN_TOOL_RESULT",
    "TOOL_RESULT_BEFORE_CALL",
    "TOOL_NAME_MISMATCH",
    "MISSING_TOOL_RESULT",
]

ContextCode = Literal[
    "COMPACTION_FIRST_KEPT_NOT_ON_PATH",
    "COMPACTION_FIRST_KEPT_IS_TOOL_RESULT",
    "UNREGISTERED_ROLE",
    "TRANSFORM_CONTEXT_FAILED",
    "PROVIDER_SAFE_DROPPED_ASSISTANT",
    "PROVIDER_SAFE_SYNTHETIC_RESULT",
    "CONTEXT_EDIT_WITHOUT_REPLACEMENT",
    "CONTEXT_EDIT_TARGET_NOT_IN_CONTEXT",
    "CONTEXT_EDIT_NO_EFFECT",
    "MESSAGE_ENTRY_WITHOUT_MESSAGE",
]

EntryCode = Literal[
    "INVALID_ENTRY",
    "PARENT_NOT_FOUND",
    "HEADER_VERSION_NEWER",
]

DiagnosticCode = Literal[ShapeCode, LinkageCode, ContextCode, EntryCode]
"""Every diagnostic code sessionstore emits (the union of the four families)."""

_SHAPE_DOCS: Final[dict[ShapeCode, str]] = {
    "TRANSCRIPT_NOT_A_LIST": "The transcript is not a list (a non-text sequence) of messages.",
    "MESSAGE_NOT_A_MAPPING": "A message is not a mapping (nor an object with model_dump()).",
    "UNKNOWN_ROLE": "A message role is neither built in nor registered by the application; "
    "the message is not checked further.",
    "INVALID_MESSAGE": "A message lacks a field pi 1.6's type requires for its role (role, content, timestamp, "
    "...) or holds a known field of the wrong JSON type.",
    "INVALID_CONTENT_BLOCK": "A content block is not a mapping, has an unknown or misplaced type, lacks its "
    "text/thinking/data/mimeType string, or holds a known field of the wrong type.",
    "INVALID_TOOL_CALL": "A toolCall block lacks a non-empty string id, a string name, or arguments.",
    "TOOL_ARGUMENTS_NOT_OBJECT": "Tool-call arguments are not a JSON object: not a mapping with string "
    "keys, or holding a non-JSON value (NaN, set, bytes, a cycle, ...).",
    "INVALID_TOOL_RESULT": "A toolResult lacks a string toolCallId or toolName, a content list, a boolean isError or a"
    " numeric timestamp, or holds a known field of the wrong type.",
    "UNREADABLE_VALUE": "Reading a value raised (attribute, item, length or iteration access); "
    "the value could not be checked.",
    "VALIDATION_INTERNAL_ERROR": "The validator failed unexpectedly; diagnostics before this one "
    "stand, the rest of the transcript was not checked.",
}

_LINKAGE_DOCS: Final[dict[LinkageCode, str]] = {
    "DUPLICATE_TOOL_CALL_ID": "A tool call id is used by more than one tool call.",
    "DUPLICATE_TOOL_RESULT": "A tool call already answered by a later toolResult receives another one.",
    "ORPHAN_TOOL_RESULT": "A toolResult's toolCallId matches no tool call in the transcript.",
    "TOOL_RESULT_BEFORE_CALL": "A toolResult appears before the tool call it answers.",
    "TOOL_NAME_MISMATCH": "A toolResult's toolName differs from the name of the call it answers.",
    "MISSING_TOOL_RESULT": "A tool call has no later toolResult (e.g. an aborted turn); reported at "
    "the call's message.",
}

_CONTEXT_DOCS: Final[dict[ContextCode, str]] = {
    "COMPACTION_FIRST_KEPT_NOT_ON_PATH": "A compaction's firstKeptEntryId is not on the path before it: "
    "every kept message is silently dropped.",
    "COMPACTION_FIRST_KEPT_IS_TOOL_RESULT": "A compaction's kept part starts with a toolResult: an "
    "orphan tool result follows the summary.",
    "UNREGISTERED_ROLE": "A message role no registry knows: the message is kept, not sent.",
    "TRANSFORM_CONTEXT_FAILED": "The transform_context hook raised; the original message list was used.",
    "PROVIDER_SAFE_DROPPED_ASSISTANT": "Provider-safe projection dropped an assistant message whose "
    "stopReason is error or aborted.",
    "PROVIDER_SAFE_SYNTHETIC_RESULT": "Provider-safe projection inserted a synthetic toolResult for a "
    "tool call left without a result.",
    "CONTEXT_EDIT_WITHOUT_REPLACEMENT": "A context_edit has no replacement key (pi throws on it); it is "
    "ignored.",
    "CONTEXT_EDIT_TARGET_NOT_IN_CONTEXT": "A context_edit targets an entry that is not part of this "
    "context (another branch, or summarised away); it has no effect.",
    "CONTEXT_EDIT_NO_EFFECT": "A context_edit replaces the content of an entry whose messages cannot be "
    "edited (compaction, branch summary, bash execution, system message); it has no effect.",
    "MESSAGE_ENTRY_WITHOUT_MESSAGE": "A message entry has no message (pi's context building fails on "
    "it); the entry contributes nothing.",
}

_ENTRY_DOCS: Final[dict[EntryCode, str]] = {
    "INVALID_ENTRY": "A session entry lacks a field of its type or has one of the wrong type; it is "
    "stored verbatim and read as pi reads it (missing content becomes empty).",
    "PARENT_NOT_FOUND": "An entry's parentId names no entry of the session; as in pi, the entry is a "
    "root. The file is stored and exported unchanged.",
    "HEADER_VERSION_NEWER": "The session header's version is newer than 3; as pi does, the file is read "
    "as version 3.",
}

DIAGNOSTIC_CODES: Final[dict[str, str]] = {
    code: doc for docs in (_SHAPE_DOCS, _LINKAGE_DOCS, _CONTEXT_DOCS, _ENTRY_DOCS) for code, doc in docs.items()
}
"""Every diagnostic code -> its one-line documentation, in family order."""

SHAPE_CODES: Final[frozenset[ShapeCode]] = frozenset(_SHAPE_DOCS)
"""Codes for values without pi's wire shape (errors)."""

LINKAGE_CODES: Final[frozenset[LinkageCode]] = frozenset(_LINKAGE_DOCS)
"""Codes for broken tool rounds (errors, MISSING_TOOL_RESULT included)."""

CONTEXT_CODES: Final[frozenset[ContextCode]] = frozenset(_CONTEXT_DOCS)
"""Codes for repairs and drops made while building or projecting context (warnings)."""

ENTRY_CODES: Final[frozenset[EntryCode]] = frozenset(_ENTRY_DOCS)
"""Codes for file entries read tolerantly, as pi reads them (warnings)."""

ERROR_CODES: Final[frozenset[DiagnosticCode]] = frozenset((*SHAPE_CODES, *LINKAGE_CODES))
"""Shape and linkage codes: errors of the messages as stored (``validate`` fails on those the
provider-safe projection does not repair)."""

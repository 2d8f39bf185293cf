"""The entry kinds of a session, each declared once in its own module (see :mod:`.base`), and what
is derived from them.

To add an entry kind: write its module here (TypedDict, model, builder, and its in-transaction check
if it reads the session), add its ``KIND`` to :data:`KINDS` and its TypedDict to
:data:`SessionEntryDict` (a type checker needs that union written out; a test checks it against
:data:`KINDS`), then its tests. The entry model union, the tolerant reading, the appendable types, the
generic append (API, HTTP and the CLI's ``append --type``) and the public exports follow.
"""

import functools
import operator
from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from pydantic import Discriminator, Tag, TypeAdapter

from sessionstore.errors import EntryNotFoundError, InvalidCompactionError, InvalidInputError
from sessionstore.models.js import json_type
from sessionstore.models.kinds import (
    branch_summary,
    compaction,
    context_edit,
    custom,
    custom_message,
    label,
    message,
    model_change,
    session_info,
    thinking_level_change,
    usage,
)
from sessionstore.models.kinds.base import PLACE_KEYS, EntryBase, EntryKind, SessionView, plain_json
from sessionstore.models.kinds.branch_summary import BranchSummaryEntry, BranchSummaryEntryDict
from sessionstore.models.kinds.compaction import CompactionEntry, CompactionEntryDict
from sessionstore.models.kinds.context_edit import (
    ContextEditEntry,
    ContextEditEntryDict,
    ContextEditReplacement,
    ContextEditReplacementDict,
)
from sessionstore.models.kinds.custom import CustomEntry, CustomEntryDict
from sessionstore.models.kinds.custom_message import CustomMessageEntry, CustomMessageEntryDict
from sessionstore.models.kinds.label import LabelEntry, LabelEntryDict
from sessionstore.models.kinds.message import MessageEntry, MessageEntryDict, message_to_wire
from sessionstore.models.kinds.model_change import ModelChangeEntry, ModelChangeEntryDict
from sessionstore.models.kinds.session_info import SessionInfoEntry, SessionInfoEntryDict
from sessionstore.models.kinds.thinking_level_change import ThinkingLevelChangeEntry, ThinkingLevelChangeEntryDict
from sessionstore.models.kinds.usage import UsageEntry, UsageEntryDict
from sessionstore.models.wire import JsonObject as Json

KINDS: tuple[EntryKind, ...] = (
    message.KIND,
    context_edit.KIND,
    usage.KIND,
    thinking_level_change.KIND,
    model_change.KIND,
    compaction.KIND,
    branch_summary.KIND,
    custom.KIND,
    custom_message.KIND,
    label.KIND,
    session_info.KIND,
)
"""Every entry kind this version knows, in the order pi 1.6's ``SessionEntry`` union lists them."""

BY_NAME: dict[str, EntryKind] = {kind.name: kind for kind in KINDS}
ENTRY_TYPES = frozenset(BY_NAME)
APPENDABLE_TYPES = tuple(BY_NAME)
"""The entry types an append takes: every kind (what a file holds of another type is kept on import,
never appended)."""


# -- the wire shapes -------------------------------------------------------------------------------
class SessionHeaderDict(TypedDict):
    type: Literal["session"]
    version: NotRequired[int | float]  # absent in v1 files
    id: str
    timestamp: str
    cwd: str
    parentSession: NotRequired[str]


SessionEntryDict = (
    MessageEntryDict
    | ThinkingLevelChangeEntryDict
    | ModelChangeEntryDict
    | CompactionEntryDict
    | BranchSummaryEntryDict
    | CustomEntryDict
    | CustomMessageEntryDict
    | LabelEntryDict
    | SessionInfoEntryDict
    | ContextEditEntryDict
    | UsageEntryDict
)
"""An entry of a known type (the TypedDicts of :data:`KINDS`). Entries of unknown types are kept too
(any mapping with ``id``, ``parentId``, ``timestamp`` and a string ``type``)."""

FileEntryDict = SessionHeaderDict | SessionEntryDict
"""A line of a session file: the header or an entry."""


# -- the typed view --------------------------------------------------------------------------------
class UnknownEntry(EntryBase):
    """An entry type this version does not know: stored and exported unchanged, ignored by context."""

    type: str


def _entry_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in ENTRY_TYPES else "unknown"


_MEMBERS: list[Any] = [Annotated[kind.model, Tag(kind.name)] for kind in KINDS]
SessionEntry: Any = Annotated[
    functools.reduce(operator.or_, [*_MEMBERS, Annotated[UnknownEntry, Tag("unknown")]]),
    Discriminator(_entry_tag),
]
"""The pydantic union of the kinds' models (and :class:`UnknownEntry`), discriminated by ``type``."""
ENTRY_ADAPTER: TypeAdapter[Any] = TypeAdapter(SessionEntry)
_ENTRY_VALIDATOR = ENTRY_ADAPTER.validator.validate_python  # the adapter's wrapper costs ~0.4 us per entry


def parse_entry(data: Mapping[str, Any]) -> Any:
    """Typed, validated view of a wire entry; raises ``pydantic.ValidationError`` on a bad shape. Strict:
    a value must already be of its JSON type (``"5"`` is no number, ``"yes"`` no boolean), since what
    is appended is stored as given, not as the model would convert it."""
    return _ENTRY_VALIDATOR(data, strict=True)


# -- the tolerant reading --------------------------------------------------------------------------
def entry_problems(entry: Mapping[str, Any]) -> list[str]:
    """What a file entry lacks of pi 1.6's shape for its type, one phrase each (``[]``: well formed).

    Never raises and never refuses: each problem is for a diagnostic; the entry is kept verbatim
    and read the way pi reads it (context building normalises missing content as pi does). The
    fields checked are the kind's TypedDict's (:attr:`EntryKind.lenient`): a required key must be
    there, and a key that is there must hold one of its JSON types (an optional key may be null)."""
    kind_name = entry.get("type")
    if not isinstance(kind_name, str):
        return [f"type is {json_type(kind_name)}, not a string: the entry is kept and contributes nothing"]
    problems: list[str] = []
    if not isinstance(entry.get("timestamp"), str):
        problems.append(f"timestamp is {'missing' if 'timestamp' not in entry else json_type(entry['timestamp'])}")
    kind = BY_NAME.get(kind_name)
    if kind is None:
        return problems
    for field in kind.lenient:
        if field.key not in entry:
            if field.required:
                problems.append(f"{field.key} is missing")
            continue
        value = entry[field.key]
        if json_type(value) not in field.kind.types and not (not field.required and value is None):
            problems.append(f"{field.key} is {json_type(value)}")
    if kind.problems is not None:
        problems += kind.problems(entry)
    return problems


# -- appends ---------------------------------------------------------------------------------------
def entry_fields(entry: Any, *, where: str = "", keep: tuple[str, ...] = ()) -> Json:
    """The fields the store writes for the pi v3 entry object ``entry``: its kind's builder's (``type``
    first, then the kind's fields in pi's order), then any unknown fields unchanged, then those of the
    place keys (``id``, ``parentId``, ``timestamp``) named in ``keep`` that ``entry`` gives (the others
    are the store's to fill). Raises ``InvalidInputError`` for a non-object, a header, an unknown type,
    or what the kind refuses before reading the session."""
    if not isinstance(entry, Mapping):
        raise InvalidInputError(f"an entry must be an object, got {type(entry).__name__}")
    name = entry.get("type")
    kind = BY_NAME.get(name) if isinstance(name, str) else None
    if kind is None:
        raise InvalidInputError(f"an entry's 'type' must be one of {', '.join(APPENDABLE_TYPES)}; got {name!r}")
    fields = kind.build(entry, where)
    for key, value in entry.items():
        if key not in kind.known and key not in PLACE_KEYS:
            fields[key] = plain_json(value, f"{where}{key}")
    fields.update((key, entry[key]) for key in keep if key in entry)
    return fields


def check_in_transaction(view: SessionView, entry: Json, *, where: str = "") -> None:
    """The rules of ``entry``'s kind that read the session, run inside the append's transaction (may
    complete the entry); an error's text is prefixed with ``where`` (``entries[3]: ``)."""
    name = entry.get("type")
    kind = BY_NAME.get(name) if isinstance(name, str) else None
    if kind is None or kind.check is None:
        return
    if not where:
        kind.check(view, entry)
        return
    try:
        kind.check(view, entry)
    except EntryNotFoundError as exc:
        raise EntryNotFoundError(exc.session_id, exc.entry_id, where=where) from None
    except (InvalidInputError, InvalidCompactionError) as exc:
        raise type(exc)(f"{where}{exc}") from None


__all__ = [
    "APPENDABLE_TYPES",
    "ENTRY_ADAPTER",
    "ENTRY_TYPES",
    "KINDS",
    "PLACE_KEYS",
    "BranchSummaryEntry",
    "BranchSummaryEntryDict",
    "CompactionEntry",
    "CompactionEntryDict",
    "ContextEditEntry",
    "ContextEditEntryDict",
    "ContextEditReplacement",
    "ContextEditReplacementDict",
    "CustomEntry",
    "CustomEntryDict",
    "CustomMessageEntry",
    "CustomMessageEntryDict",
    "EntryBase",
    "EntryKind",
    "FileEntryDict",
    "LabelEntry",
    "LabelEntryDict",
    "MessageEntry",
    "MessageEntryDict",
    "ModelChangeEntry",
    "ModelChangeEntryDict",
    "SessionEntry",
    "SessionEntryDict",
    "SessionHeaderDict",
    "SessionInfoEntry",
    "SessionInfoEntryDict",
    "SessionView",
    "ThinkingLevelChangeEntry",
    "ThinkingLevelChangeEntryDict",
    "UnknownEntry",
    "UsageEntry",
    "UsageEntryDict",
    "check_in_transaction",
    "entry_fields",
    "entry_problems",
    "message_to_wire",
    "parse_entry",
]

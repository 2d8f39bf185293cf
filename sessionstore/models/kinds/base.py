"""What one entry kind declares, and the helpers its declaration uses.

An entry kind (``message``, ``label``, ``compaction`` ...) is declared once, in its own module of this
package, as an :class:`EntryKind`: its TypedDict (the wire shape, pi 1.6's type), its pydantic model
(the strict, typed view), its builder (what an append of it writes) and, when it reads the session,
its in-transaction check. Everything else is read from that declaration:

- the tolerant reading's field table (:attr:`EntryKind.lenient`: which keys pi 1.6's type requires
  and which JSON types they hold) and the keys an append's builder reads (:attr:`EntryKind.known`)
  come from the TypedDict, through :func:`sessionstore.models.wire_shape.wire_fields`;
- the lists of kinds (the entry model union, the appendable types, the CLI's ``--type`` choices, the
  public exports) come from :data:`sessionstore.models.kinds.KINDS`.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

from pydantic import Field

from sessionstore.errors import InvalidInputError
from sessionstore.models.content import WireModel
from sessionstore.models.frozen import freeze_json, thaw
from sessionstore.models.wire import JsonObject as Json
from sessionstore.models.wire_shape import WireField, wire_fields

PLACE_KEYS = ("id", "parentId", "timestamp")
"""The keys of an entry object that place it (given or filled by the store), not its content."""


class EntryBaseDict(TypedDict):
    id: str
    parentId: str | None
    timestamp: str  # ISO 8601


class EntryBase(WireModel):
    id: str = Field(min_length=1)
    parent_id: str | None = None
    timestamp: str


class SessionView(Protocol):
    """What an in-transaction check may read of the session an entry is appended to, inside the
    append's transaction and before anything is written (the store's ``AppendView``)."""

    @property
    def session_id(self) -> str: ...

    def has(self, entry_id: str) -> bool:
        """Whether the session holds ``entry_id`` (on any branch)."""
        ...

    def entry_on_path(self, entry_id: Any) -> Json | None:
        """The entry ``entry_id`` when it is on the path the new entry extends, else ``None``."""
        ...


Build = Callable[[Mapping[str, Any], str], Json]
"""``build(entry, where)``: the fields an append of ``entry`` writes, ``type`` first then the kind's
fields in pi's order (``where`` prefixes the path of a bad value: ``entries[3].``); raises
``InvalidInputError`` for what the kind refuses before reading the session."""
Check = Callable[[SessionView, Json], None]
"""``check(view, entry)``: the kind's rules that read the session, run in the append's transaction;
may complete the entry (a context edit's string content)."""


@dataclass(frozen=True)
class EntryKind:
    """One entry kind, declared once (see the module)."""

    name: str
    typed_dict: type
    model: type[EntryBase]
    build: Build
    check: Check | None = None
    problems: Callable[[Mapping[str, Any]], list[str]] | None = None
    """Further tolerant-reading problems than the field table's (a message's role shapes)."""
    lenient: tuple[WireField, ...] = field(init=False)
    """The kind's fields as pi 1.6's type declares them (the place keys and ``type`` left out; opaque
    and any-JSON fields too: nothing to check)."""
    known: frozenset[str] = field(init=False)
    """The keys the builder reads; any other key of an appended entry object is kept as given."""

    def __post_init__(self) -> None:
        rows = wire_fields(self.typed_dict)
        skip = {"type", *PLACE_KEYS}
        object.__setattr__(self, "lenient", tuple(r for r in rows if r.key not in skip and r.kind.types
                                                   and not r.opaque))
        object.__setattr__(self, "known", frozenset(r.key for r in rows if r.key not in PLACE_KEYS))


def plain_json(value: Any, path: str) -> Any:
    """A deep copy of ``value`` that is plain JSON data (``InvalidInputError`` naming ``path`` if not)."""
    try:
        return thaw(freeze_json(value, path))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(str(exc)) from None


def put_optional(fields: Json, entry: Mapping[str, Any], key: str, *, path: str | None = None) -> None:
    """Copy ``entry[key]`` into ``fields`` unless absent or ``None`` (as plain JSON when ``path``)."""
    value = entry.get(key)
    if value is not None:
        fields[key] = plain_json(value, path) if path is not None else value

"""The wire TypedDicts read as data: which keys a value needs and what JSON each must hold.

:func:`wire_fields` turns a TypedDict of :mod:`sessionstore.models.wire` into
:class:`WireField` rows, once, at import. The transcript validator checks messages against these
rows and a test checks the pydantic models against them, so both follow the one declaration.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal, NotRequired, Required, Union, get_args, get_origin, get_type_hints

from sessionstore.models import wire

JsonType = Literal["string", "number", "boolean", "null", "object", "array"]


@dataclass(frozen=True, slots=True)
class WireKind:
    """What a JSON value must be.

    ``types`` are the JSON types it may have (empty: any value). An object's known members are
    ``fields`` (a TypedDict) or, for a dictionary, ``values`` is the kind of every member; an
    array's items are of kind ``items``, or, for an array of tagged blocks, ``variants`` maps each
    allowed ``type`` tag to the block's fields. ``literals`` restricts a string to those values.
    """

    types: frozenset[JsonType] = frozenset()
    fields: tuple[WireField, ...] = ()
    values: WireKind | None = None
    items: WireKind | None = None
    variants: Mapping[str, tuple[WireField, ...]] = field(default_factory=dict)
    literals: frozenset[str] = frozenset()

    def describe(self) -> str:
        """``a string or null``: the expected value, for a diagnostic."""
        names = {"string": "a string", "number": "a number", "boolean": "a boolean", "null": "null",
                 "object": "an object", "array": "a list"}
        if self.variants:
            names["array"] = "a list of content blocks"
        return " or ".join(names[name] for name in _ORDER if name in self.types) or "any JSON value"


@dataclass(frozen=True, slots=True)
class WireField:
    """One key of a TypedDict: whether it must be present, what it holds, and whether it is opaque
    (kept, never checked)."""

    key: str
    required: bool
    kind: WireKind
    opaque: bool = False


_ORDER: Final[tuple[JsonType, ...]] = ("string", "number", "boolean", "object", "array", "null")
_ANY: Final = WireKind()


def _merge(kinds: Sequence[WireKind]) -> WireKind:
    variants: dict[str, tuple[WireField, ...]] = {}
    for kind in kinds:
        variants.update(kind.variants)
    return WireKind(
        types=frozenset(t for kind in kinds for t in kind.types),
        fields=next((kind.fields for kind in kinds if kind.fields), ()),
        values=next((kind.values for kind in kinds if kind.values is not None), None),
        items=next((kind.items for kind in kinds if kind.items is not None), None),
        variants=variants,
        literals=frozenset(v for kind in kinds for v in kind.literals),
    )


def _is_typed_dict(hint: object) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__required_keys__")


def _block_tag(hint: object) -> str | None:
    """The ``type`` tag of a content-block TypedDict (``None`` for other TypedDicts)."""
    tag = get_type_hints(hint).get("type") if _is_typed_dict(hint) else None
    args = get_args(tag) if get_origin(tag) is Literal else ()
    return args[0] if len(args) == 1 and isinstance(args[0], str) else None


def kind_of(hint: object) -> WireKind:
    """The :class:`WireKind` of a type annotation of :mod:`sessionstore.models.wire`."""
    origin = get_origin(hint)
    if origin is Annotated or origin is Required or origin is NotRequired:
        return kind_of(get_args(hint)[0])
    if hint is Any:
        return _ANY
    if hint is type(None) or hint is None:
        return WireKind(frozenset({"null"}))
    if hint is str:
        return WireKind(frozenset({"string"}))
    if hint is bool:
        return WireKind(frozenset({"boolean"}))
    if hint is int or hint is float:
        return WireKind(frozenset({"number"}))
    if origin is Literal:
        return WireKind(frozenset({"string"}), literals=frozenset(str(v) for v in get_args(hint)))
    if origin is Union or origin is types.UnionType:
        return _merge([kind_of(arg) for arg in get_args(hint)])
    if origin is list or origin is tuple or origin is Sequence:
        (item,) = get_args(hint)[:1]
        members = get_args(item) if get_origin(item) in (Union, types.UnionType) else (item,)
        tags = {_block_tag(member): member for member in members}
        if None not in tags:
            return WireKind(frozenset({"array"}), variants={tag: wire_fields(m) for tag, m in tags.items() if tag})
        return WireKind(frozenset({"array"}), items=kind_of(item))
    if origin is dict or origin is Mapping:
        value = get_args(hint)[1]
        return WireKind(frozenset({"object"}), values=None if value is Any else kind_of(value))
    if _is_typed_dict(hint):
        return WireKind(frozenset({"object"}), fields=wire_fields(hint))
    raise TypeError(f"no wire kind for {hint!r}")


def _opaque(hint: object) -> bool:
    origin = get_origin(hint)
    if origin is Required or origin is NotRequired:
        return _opaque(get_args(hint)[0])
    return origin is Annotated and any(meta is wire.OPAQUE for meta in get_args(hint)[1:])


_FIELDS: dict[object, tuple[WireField, ...]] = {}


def wire_fields(typed_dict: Any) -> tuple[WireField, ...]:
    """The keys of a wire TypedDict in declaration order."""
    if typed_dict not in _FIELDS:
        hints = get_type_hints(typed_dict, include_extras=True)
        required: frozenset[str] = typed_dict.__required_keys__
        fields = (WireField(key, key in required, kind_of(hint), _opaque(hint)) for key, hint in hints.items())
        _FIELDS[typed_dict] = tuple(fields)
    return _FIELDS[typed_dict]


MESSAGE_FIELDS: Final[Mapping[str, tuple[WireField, ...]]] = {
    role: wire_fields(typed_dict) for role, typed_dict in wire.MESSAGE_DICTS.items()
}
"""Built-in role -> the fields of its message, ``role`` included."""

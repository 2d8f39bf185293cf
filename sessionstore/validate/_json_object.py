"""Whether a value is a JSON object, checked without recursion and without raising.

A JSON object is a mapping with ``str`` keys whose values are JSON values: ``None``, ``bool``,
``int``, finite ``float``, ``str``, a non-text sequence of JSON values, or a JSON object. NaN,
infinities, non-string keys, sets, bytes, other objects and cycles are not JSON. Containers shared
by several parents (a DAG) are fine and are checked once, so shared structure never costs
exponential time; arbitrarily deep nesting is walked with an explicit stack. Each container is
read once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, final

from sessionstore.validate._path import PathNode, index_segment, key_segment
from sessionstore.validate._read import (
    Unreadable,
    exact_str,
    is_mapping,
    is_sequence,
    read_sequence,
    type_name,
    unreadable,
)

_Kind = Literal["scalar", "mapping", "sequence"]
_Children = list[tuple[str, object]]


@final
@dataclass(frozen=True, slots=True)
class JsonProblem:
    """The first problem found: where (relative to the checked value), why, and whether a read raised."""

    node: PathNode | None
    reason: str
    unreadable: bool = False


@dataclass(slots=True)
class _Frame:
    container: object
    children: _Children
    node: PathNode | None
    position: int = 0


def _kind(value: object) -> _Kind | JsonProblem:
    """What ``value`` is as JSON; a (node-less) problem when it is not JSON."""
    exact = type(value)
    if value is None or exact is str or exact is bool or exact is int:
        return "scalar"
    if type(value) is float:
        return (
            "scalar" if math.isfinite(value) else JsonProblem(None, f"expected a finite number, got {value}")
        )
    try:
        if issubclass(exact, str | int):
            return "scalar"
        if issubclass(exact, float):
            number = float.__float__(value)  # type: ignore[arg-type]
            return (
                "scalar"
                if math.isfinite(number)
                else JsonProblem(None, f"expected a finite number, got {number}")
            )
    except Exception as exc:
        return JsonProblem(None, unreadable(exc).explain(), True)
    mapping = is_mapping(value)
    if type(mapping) is Unreadable:
        return JsonProblem(None, mapping.explain(), True)
    if mapping:
        return "mapping"
    sequence = is_sequence(value)
    if type(sequence) is Unreadable:
        return JsonProblem(None, sequence.explain(), True)
    if sequence:
        return "sequence"
    return JsonProblem(None, f"expected a JSON value, got {type_name(value)}")


def _mapping_children(value: Any, node: PathNode | None) -> _Children | JsonProblem:
    """The ``(segment, value)`` pairs of a mapping, or the problem with its keys or reads."""
    try:
        if type(value) is dict:
            pairs: list[tuple[object, object]] = list(value.items())
        else:
            length = len(value)
            keys: list[object] = []
            for key in value:
                if len(keys) >= length:
                    return JsonProblem(
                        node, "iterating the mapping yields more keys than len() reports", True
                    )
                keys.append(key)
            pairs = [(key, value[key]) for key in keys]
    except Exception as exc:
        return JsonProblem(node, unreadable(exc).explain(), True)
    children: _Children = []
    for key, item in pairs:
        text = exact_str(key)
        if text is None:
            return JsonProblem(node, f"expected a JSON object, got a key of type {type_name(key)}")
        children.append((key_segment(text), item))
    return children


def _sequence_children(value: object, node: PathNode | None) -> _Children | JsonProblem:
    """The ``(segment, value)`` pairs of a sequence, or the problem reading it."""
    read = read_sequence(value)
    if type(read) is Unreadable:
        return JsonProblem(node, read.explain(), True)
    if read is None:  # pragma: no cover - only called for sequences
        return JsonProblem(node, f"expected a JSON array, got {type_name(value)}")
    if read.failure is not None:
        return JsonProblem((node, index_segment(len(read.items))), read.failure.explain(), True)
    return [(index_segment(i), item) for i, item in enumerate(read.items)]


def find_json_object_problem(value: object) -> JsonProblem | None:
    """The first reason ``value`` is not a JSON object, or ``None`` when it is one.

    Problem paths are relative to ``value`` (node ``None`` is ``value`` itself).
    """
    root_kind = _kind(value)
    if type(root_kind) is JsonProblem:
        return root_kind
    if root_kind != "mapping":
        return JsonProblem(None, f"expected a JSON object, got {type_name(value)}")
    root = _mapping_children(value, None)
    if type(root) is JsonProblem:
        return root
    stack = [_Frame(value, root, None)]
    on_path = {id(value)}
    checked: set[int] = set()
    keep_alive: list[object] = []  # keeps checked objects alive so their ids stay unique
    while stack:
        frame = stack[-1]
        if frame.position >= len(frame.children):
            stack.pop()
            on_path.discard(id(frame.container))
            checked.add(id(frame.container))
            keep_alive.append(frame.container)
            continue
        segment, child = frame.children[frame.position]
        frame.position += 1
        node: PathNode = (frame.node, segment)
        kind = _kind(child)
        if kind == "scalar":
            continue
        if type(kind) is JsonProblem:
            return JsonProblem(node, kind.reason, kind.unreadable)
        if id(child) in on_path:
            return JsonProblem(node, "expected a JSON value, got a cycle (the value contains itself)")
        if id(child) in checked:
            continue
        children = _mapping_children(child, node) if kind == "mapping" else _sequence_children(child, node)
        if type(children) is JsonProblem:
            return children
        stack.append(_Frame(child, children, node))
        on_path.add(id(child))
    return None

"""snapshot_json accepts plain JSON data only and copies it; freeze/thaw make it read-only and back."""

from __future__ import annotations

import enum
from collections import OrderedDict
from types import MappingProxyType
from typing import Any

import pytest

from sessionstore.provider.snapshot import (
    MAX_DEPTH,
    NotPlainJsonError,
    freeze_json,
    snapshot_json,
    thaw_json,
)


class Color(enum.IntEnum):
    RED = 1


class RaisingItems(dict[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("hostile __getitem__")

    def items(self) -> Any:
        raise RuntimeError("hostile items")


class RaisingProperty:
    @property
    def value(self) -> int:
        raise RuntimeError("hostile property")


def test_snapshot_is_a_deep_copy_that_shares_nothing() -> None:
    original: dict[str, Any] = {"a": [1, {"b": "c"}], "d": None}

    copy = snapshot_json(original)
    original["a"][1]["b"] = "changed"

    assert copy == {"a": [1, {"b": "c"}], "d": None}


def test_snapshot_keeps_bools_distinct_from_ints() -> None:
    copy = snapshot_json([True, 1, False, 0])

    assert [type(item) for item in copy] == [bool, int, bool, int]  # type: ignore[union-attr]


def test_snapshot_accepts_a_value_shared_twice_without_a_cycle() -> None:
    shared = [1, 2]

    assert snapshot_json({"x": shared, "y": shared}) == {"x": [1, 2], "y": [1, 2]}


def test_snapshot_rejects_a_list_that_contains_itself() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)

    with pytest.raises(NotPlainJsonError, match="cycle"):
        snapshot_json(cycle)


def test_snapshot_rejects_a_dict_that_contains_itself() -> None:
    cycle: dict[str, Any] = {}
    cycle["self"] = {"again": cycle}

    with pytest.raises(NotPlainJsonError, match=r"\$\.self\.again: contains itself"):
        snapshot_json(cycle)


@pytest.mark.parametrize(
    "value",
    [
        (1, 2),
        {1, 2},
        frozenset(),
        (item for item in [1]),
        range(2),
        b"bytes",
        bytearray(b"x"),
        object(),
        RaisingProperty(),
        RaisingItems(a=1),
        OrderedDict(a=1),
        MappingProxyType({"a": 1}),
        Color.RED,
        1 + 2j,
        float("nan"),
        float("inf"),
        float("-inf"),
    ],
    ids=lambda value: type(value).__name__ + (repr(value) if isinstance(value, float) else ""),
)
def test_snapshot_rejects_values_that_are_not_plain_json(value: object) -> None:
    with pytest.raises(NotPlainJsonError):
        snapshot_json({"nested": [value]})


@pytest.mark.parametrize("key", [1, None, True, ("a",)], ids=repr)
def test_snapshot_rejects_non_string_keys(key: Any) -> None:
    with pytest.raises(NotPlainJsonError, match="key"):
        snapshot_json({key: 1})


def test_snapshot_rejects_nesting_deeper_than_the_limit() -> None:
    deep: list[Any] = []
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]

    with pytest.raises(NotPlainJsonError, match="deeper"):
        snapshot_json(deep)


def test_snapshot_error_names_the_path_of_the_bad_value() -> None:
    with pytest.raises(NotPlainJsonError) as raised:
        snapshot_json({"records": [{"odd key": [1, (2,)]}]}, path="$.fixture")

    assert raised.value.path == "$.fixture.records[0]['odd key'][1]"


def test_frozen_json_cannot_be_changed_and_thaws_to_an_equal_plain_copy() -> None:
    value = snapshot_json({"list": [1, {"x": None}], "n": 1.5})
    frozen = freeze_json(value)

    assert isinstance(frozen, MappingProxyType)
    assert frozen["list"] == (1, MappingProxyType({"x": None}))
    with pytest.raises(TypeError):
        frozen["n"] = 2  # type: ignore[index]
    thawed = thaw_json(frozen)
    assert thawed == value
    assert thawed is not value

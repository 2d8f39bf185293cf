"""Constructing the adapter: schemaVersion 1, plain JSON data only, snapshots of every record."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from sessionstore.provider import FixtureProviderAdapter, FixtureProviderError, TextDelta, ToolCall
from tests.provider.provider_support import complete, end, fixture_with, start, text, text_response, tool


def invalid_fixture(fixture: object) -> FixtureProviderError:
    with pytest.raises(FixtureProviderError) as raised:
        FixtureProviderAdapter(fixture)
    assert raised.value.code == "PROVIDER_INVALID_FIXTURE", str(raised.value)
    return raised.value


class HostileClass:
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        raise RuntimeError("hostile __class__")

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"hostile attribute {name}")


class HostileDict(dict[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("hostile __getitem__")

    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("hostile get")


def test_a_valid_fixture_is_queued_response_by_response() -> None:
    adapter = FixtureProviderAdapter(fixture_with(text_response("a"), text_response("b")))

    assert adapter.pending_response_count == 2
    assert adapter.call_count == 0
    assert adapter.request_ids == []


@pytest.mark.parametrize("version", [2, 0, "1", 1.0, True, None], ids=repr)
def test_schema_version_other_than_the_int_one_is_an_invalid_fixture(version: object) -> None:
    error = invalid_fixture({"schemaVersion": version, "responses": []})

    assert "schemaVersion" in error.message


def test_missing_schema_version_is_an_invalid_fixture() -> None:
    invalid_fixture({"responses": []})


@pytest.mark.parametrize(
    "make_fixture",
    [
        lambda: None,
        lambda: [],
        lambda: "fixture",
        lambda: ({"schemaVersion": 1, "responses": []},),
        lambda: HostileClass(),
        lambda: HostileDict(schemaVersion=1, responses=[]),
    ],
    ids=["None", "list", "str", "tuple", "hostile-class", "dict-subclass"],
)
def test_a_fixture_that_is_not_a_plain_dict_is_invalid(make_fixture: Callable[[], object]) -> None:
    invalid_fixture(make_fixture())


@pytest.mark.parametrize(
    "responses",
    [None, (), ({"records": []},), {"0": {"records": []}}, iter([{"records": []}])],
    ids=lambda value: type(value).__name__,
)
def test_responses_that_are_not_a_list_are_an_invalid_fixture(responses: object) -> None:
    invalid_fixture({"schemaVersion": 1, "responses": responses})


@pytest.mark.parametrize(
    "make_response",
    [lambda: None, lambda: [], lambda: "records", lambda: {"record": []}, lambda: HostileDict(records=[])],
    ids=["None", "list", "str", "no-records-key", "dict-subclass"],
)
def test_a_response_that_is_not_an_object_with_records_is_an_invalid_fixture(
    make_response: Callable[[], object],
) -> None:
    invalid_fixture({"schemaVersion": 1, "responses": [make_response()]})


@pytest.mark.parametrize(
    "records",
    [None, "records", {"0": start()}, (start(),), {1, 2}, (record for record in [start()]), iter([start()])],
    ids=lambda value: type(value).__name__,
)
def test_records_that_are_neither_a_list_nor_an_async_iterable_are_an_invalid_fixture(
    records: object,
) -> None:
    invalid_fixture(fixture_with(records))


def test_records_with_a_cycle_are_an_invalid_fixture() -> None:
    arguments: dict[str, Any] = {}
    arguments["self"] = arguments

    error = invalid_fixture(fixture_with([start(), tool(arguments=arguments), end(stop_reason="tool_call")]))

    assert "cycle" in error.message


@pytest.mark.parametrize(
    "make_value",
    [
        lambda: (1, 2),
        lambda: {1},
        lambda: float("nan"),
        lambda: float("inf"),
        lambda: HostileClass(),
        lambda: HostileDict(a=1),
        lambda: b"x",
        lambda: object(),
    ],
    ids=["tuple", "set", "nan", "inf", "hostile-class", "dict-subclass", "bytes", "object"],
)
def test_non_json_values_inside_records_are_an_invalid_fixture(make_value: Callable[[], object]) -> None:
    error = invalid_fixture(fixture_with([start(), tool(arguments={"value": make_value()})]))

    assert "$.responses[0].records[1].arguments.value" in error.message


def test_non_string_keys_inside_records_are_an_invalid_fixture() -> None:
    invalid_fixture(fixture_with([start(), tool(arguments={1: "one"})]))


def test_extra_keys_are_ignored_but_must_be_plain_json_too() -> None:
    FixtureProviderAdapter({"schemaVersion": 1, "responses": [], "label": ["ok"]})
    FixtureProviderAdapter({"schemaVersion": 1, "responses": [{"records": [], "note": "ok"}]})

    invalid_fixture({"schemaVersion": 1, "responses": [], "label": ("tuple",)})
    invalid_fixture({"schemaVersion": 1, "responses": [{"records": [], "note": {1, 2}}]})


async def test_later_changes_to_the_callers_fixture_do_not_reach_queued_responses() -> None:
    arguments: dict[str, Any] = {"nested": {"value": 1}}
    records = [start(), text("first"), tool("call-1", arguments=arguments), end(stop_reason="tool_call")]
    fixture = fixture_with(records)
    adapter = FixtureProviderAdapter(fixture)

    arguments["nested"]["value"] = 999
    records[1]["text"] = "mutated"
    records.insert(1, text("inserted"))
    fixture["responses"].append({"records": text_response("extra")})
    chunks, response = await complete(adapter.stream("request-1"))

    assert chunks == [TextDelta("first"), ToolCall("call-1", "add", {"nested": {"value": 1}})]
    assert response.tool_calls[0].arguments == {"nested": {"value": 1}}
    assert adapter.pending_response_count == 0


def test_an_async_iterable_of_records_is_accepted_without_being_read() -> None:
    reads = 0

    async def records() -> AsyncIterator[object]:
        nonlocal reads
        reads += 1
        yield start()

    FixtureProviderAdapter(fixture_with(records()))

    assert reads == 0


def test_construction_errors_never_escape_as_another_exception_type() -> None:
    hostile_values: list[object] = [
        HostileClass(),
        HostileDict(),
        {"schemaVersion": 1, "responses": [HostileClass()]},
        {"schemaVersion": 1, "responses": [{"records": HostileClass()}]},
        {"schemaVersion": 1, "responses": [{"records": [HostileDict(type="response_start")]}]},
        {HostileClass(): 1},
    ]
    for value in hostile_values:
        invalid_fixture(value)

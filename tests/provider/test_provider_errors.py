"""FixtureProviderError and its documented, stable codes."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Awaitable, Callable
from typing import get_args

import pytest

from sessionstore.provider import (
    PROVIDER_ERROR_CODES,
    FixtureProviderAdapter,
    FixtureProviderError,
    ProviderErrorCode,
)
from tests.provider.provider_support import end, fixture_with, start, text, text_response


def test_every_error_code_is_documented_and_every_documented_code_exists() -> None:
    assert set(get_args(ProviderErrorCode)) == set(PROVIDER_ERROR_CODES)


def test_every_error_code_has_a_one_line_description() -> None:
    for code, description in PROVIDER_ERROR_CODES.items():
        assert code.startswith("PROVIDER_")
        assert description.strip() and "\n" not in description


def test_error_exposes_its_code_message_and_context() -> None:
    error = FixtureProviderError(
        "PROVIDER_TRANSPORT_ERROR", "connection reset", provider_code="UPSTREAM_RESET", record_index=2
    )

    assert error.code == "PROVIDER_TRANSPORT_ERROR"
    assert error.message == "connection reset"
    assert error.provider_code == "UPSTREAM_RESET"
    assert error.record_index == 2
    assert str(error) == "PROVIDER_TRANSPORT_ERROR (record 2): connection reset"


def test_error_with_an_undocumented_code_cannot_be_built() -> None:
    with pytest.raises(ValueError, match="undocumented"):
        FixtureProviderError("PROVIDER_SOMETHING_ELSE", "nope")  # type: ignore[arg-type]


def test_error_survives_pickling_with_all_its_fields() -> None:
    error = FixtureProviderError("PROVIDER_MALFORMED_RECORD", "bad", provider_code="X", record_index=1)

    copy = pickle.loads(pickle.dumps(error))

    assert (copy.code, copy.message, copy.provider_code, copy.record_index) == (
        "PROVIDER_MALFORMED_RECORD",
        "bad",
        "X",
        1,
    )


def _records(*records: object) -> Callable[[], Awaitable[object]]:
    async def produce() -> object:
        return await FixtureProviderAdapter(fixture_with(list(records))).stream("request-1")

    return produce


async def _invalid_fixture() -> object:
    return FixtureProviderAdapter({"schemaVersion": 2, "responses": []})


async def _exhausted() -> object:
    return await FixtureProviderAdapter(fixture_with()).stream("request-1")


async def _aborted() -> object:
    abort = asyncio.Event()
    abort.set()
    return await FixtureProviderAdapter(fixture_with(text_response("x"))).stream("request-1", abort=abort)


SCENARIOS: dict[str, Callable[[], Awaitable[object]]] = {
    "PROVIDER_INVALID_FIXTURE": _invalid_fixture,
    "PROVIDER_EXHAUSTED": _exhausted,
    "PROVIDER_ABORTED": _aborted,
    "PROVIDER_UNKNOWN_RECORD": _records(start(), {"type": "surprise"}),
    "PROVIDER_MALFORMED_RECORD": _records(start(), {"type": "text_delta", "text": 1}),
    "PROVIDER_MISSING_START": _records(text("x")),
    "PROVIDER_DUPLICATE_START": _records(start(), start()),
    "PROVIDER_TRANSPORT_ERROR": _records({"type": "transport_error", "code": "RESET", "message": "reset"}),
    "PROVIDER_RESPONSE_ID_MISMATCH": _records(start("a"), end("b")),
    "PROVIDER_STOP_REASON_MISMATCH": _records(start(), end(stop_reason="tool_call")),
    "PROVIDER_MISSING_TERMINAL": _records(start()),
    "PROVIDER_DUPLICATE_TERMINAL": _records(start(), end(), end()),
    "PROVIDER_INVALID_TERMINAL": _records(start(), end(), text("late")),
}


def test_every_documented_code_has_a_minimal_scenario_below() -> None:
    assert set(SCENARIOS) == set(PROVIDER_ERROR_CODES)


@pytest.mark.parametrize("code", sorted(SCENARIOS))
async def test_each_error_code_is_produced_by_its_minimal_scenario(code: str) -> None:
    with pytest.raises(FixtureProviderError) as raised:
        await SCENARIOS[code]()

    assert raised.value.code == code

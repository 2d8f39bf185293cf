"""Builders and consumers shared by the provider adapter tests."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sessionstore.provider import AssistantResponse, FixtureProviderError, ProviderChunk, ProviderStream

COURSE_FIXTURE_PATH = Path(__file__).parents[2] / "fixtures" / "provider-tool-roundtrip.json"


def course_fixture() -> dict[str, Any]:
    """A fresh copy of the course fixture, read with the plain json module."""
    document: dict[str, Any] = json.loads(COURSE_FIXTURE_PATH.read_text(encoding="utf-8"))
    return document


def fixture_with(*responses: object) -> dict[str, Any]:
    """A schemaVersion 1 fixture whose responses have the given ``records`` values."""
    return {"schemaVersion": 1, "responses": [{"records": records} for records in responses]}


def start(response_id: str = "response-1", **extra: Any) -> dict[str, Any]:
    return {"type": "response_start", "responseId": response_id, "role": "assistant", **extra}


def text(value: str) -> dict[str, Any]:
    return {"type": "text_delta", "text": value}


def tool(call_id: str = "call-1", name: str = "add", arguments: object = None) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "id": call_id,
        "name": name,
        "arguments": {"left": 1, "right": 2} if arguments is None else arguments,
    }


def end(
    response_id: str = "response-1", stop_reason: str = "stop", usage: object = None, **extra: Any
) -> dict[str, Any]:
    return {
        "type": "response_end",
        "responseId": response_id,
        "stopReason": stop_reason,
        "usage": {"inputTokens": 3, "outputTokens": 4} if usage is None else usage,
        **extra,
    }


def text_response(*texts: str, response_id: str = "response-1") -> list[dict[str, Any]]:
    """A complete, valid text response."""
    return [start(response_id), *(text(value) for value in texts), end(response_id)]


def tool_response(*call_ids: str, response_id: str = "response-1") -> list[dict[str, Any]]:
    """A complete, valid response made of tool calls only."""
    return [start(response_id), *(tool(call_id) for call_id in call_ids), end(response_id, "tool_call")]


def deep_copy(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return copy.deepcopy(records)


async def collect(stream: ProviderStream) -> list[ProviderChunk]:
    return [chunk async for chunk in stream]


@dataclass
class Iterated:
    """What iterating a stream observed: the chunks, then the error that ended it, if any."""

    chunks: list[ProviderChunk] = field(default_factory=list)
    error: FixtureProviderError | None = None


async def iterate(stream: ProviderStream) -> Iterated:
    seen = Iterated()
    try:
        async for chunk in stream:
            seen.chunks.append(chunk)
    except FixtureProviderError as error:
        seen.error = error
    return seen


async def complete(stream: ProviderStream) -> tuple[list[ProviderChunk], AssistantResponse]:
    """Iterate, then await; both must succeed."""
    chunks = await collect(stream)
    return chunks, await stream


async def expect_failure(stream: ProviderStream, code: str) -> Iterated:
    """Iterate, then await: both consumers must fail with ``code``. Returns what iteration saw."""
    seen = await iterate(stream)
    assert seen.error is not None, f"iteration ended without error; expected {code}"
    assert seen.error.code == code, str(seen.error)
    with pytest.raises(FixtureProviderError) as raised:
        await stream
    assert raised.value.code == code, str(raised.value)
    return seen


async def expect_result_failure(stream: ProviderStream, code: str) -> FixtureProviderError:
    """Await first, then iterate: both consumers must fail with ``code``."""
    with pytest.raises(FixtureProviderError) as raised:
        await stream
    assert raised.value.code == code, str(raised.value)
    seen = await iterate(stream)
    assert seen.error is not None and seen.error.code == code
    return raised.value


@dataclass
class SourceProbe:
    """Observes an async record source: records pulled, and whether it stopped before its end."""

    pulled: int = 0
    closed_early: bool = False
    finished: bool = False


def probed_records(probe: SourceProbe, records: list[Any]) -> Callable[[], AsyncIterator[Any]]:
    """An async generator factory over ``records`` that reports to ``probe``."""

    async def generate() -> AsyncIterator[Any]:
        try:
            for record in records:
                probe.pulled += 1
                yield record
            probe.finished = True
        finally:
            probe.closed_early = not probe.finished

    return generate


async def reached(event: asyncio.Event) -> None:
    """Wait until a source signals it got somewhere; bounded so a regression fails instead of hanging."""
    async with asyncio.timeout(5):
        await event.wait()

"""Records from an async iterator: taken once, raced against the abort, closed on early stops."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from sessionstore.provider import FixtureProviderAdapter, FixtureProviderError, ProviderStream, TextDelta
from tests.provider.provider_support import (
    SourceProbe,
    complete,
    end,
    expect_failure,
    expect_result_failure,
    fixture_with,
    probed_records,
    reached,
    start,
    text,
    text_response,
)


def stream_of(records: object, *, abort: Any = None) -> ProviderStream:
    return FixtureProviderAdapter(fixture_with(records)).stream("request-1", abort=abort)


class ScriptedIterator:
    """A hand-written async iterator (no aclose of its own unless ``closable``) that counts cleanups."""

    def __init__(self, records: Sequence[object], *, closable: bool = True, failing_close: bool = False) -> None:
        self.records = list(records)
        self.closable = closable
        self.failing_close = failing_close
        self.close_calls = 0

    def __aiter__(self) -> ScriptedIterator:
        return self

    async def __anext__(self) -> object:
        if not self.records:
            raise StopAsyncIteration
        return self.records.pop(0)

    def __getattr__(self, name: str) -> Any:
        if name == "aclose" and self.closable:
            return self._aclose
        raise AttributeError(name)

    async def _aclose(self) -> None:
        self.close_calls += 1
        if self.failing_close:
            raise RuntimeError("cleanup failed")


async def test_async_records_are_streamed_like_a_list() -> None:
    probe = SourceProbe()

    chunks, response = await complete(stream_of(probed_records(probe, text_response("a", "b"))()))

    assert chunks == [TextDelta("a"), TextDelta("b")]
    assert response.text == "ab"
    assert (probe.pulled, probe.finished, probe.closed_early) == (4, True, False)


async def test_async_records_are_taken_as_is_and_read_only_when_streamed() -> None:
    late_records: list[object] = []

    async def records() -> AsyncIterator[object]:
        for record in late_records:
            yield record

    adapter = FixtureProviderAdapter(fixture_with(records()))
    late_records.extend(text_response("added after construction"))

    assert (await adapter.stream("request-1")).text == "added after construction"


async def test_abort_wins_the_race_against_a_pending_record_and_closes_the_source() -> None:
    abort = asyncio.Event()
    waiting = asyncio.Event()
    closed = asyncio.Event()

    async def records() -> AsyncIterator[object]:
        try:
            yield start()
            yield text("first")
            waiting.set()
            await asyncio.Event().wait()
            yield end()
        finally:
            closed.set()

    stream = stream_of(records(), abort=abort)
    assert await anext(stream) == TextDelta("first")
    pending = asyncio.ensure_future(anext(stream))
    await reached(waiting)

    abort.set()

    with pytest.raises(FixtureProviderError) as raised:
        await pending
    assert raised.value.code == "PROVIDER_ABORTED"
    await expect_result_failure(stream, "PROVIDER_ABORTED")
    assert closed.is_set()
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_a_record_that_arrives_after_the_abort_is_ignored() -> None:
    abort = asyncio.Event()
    waiting = asyncio.Event()

    async def records() -> AsyncIterator[object]:
        yield start()
        try:
            waiting.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            yield text("too late")  # the cancelled step still delivers a value

    stream = stream_of(records(), abort=abort)
    result = asyncio.ensure_future(stream.result())
    await reached(waiting)

    abort.set()

    with pytest.raises(FixtureProviderError) as raised:
        await result
    assert raised.value.code == "PROVIDER_ABORTED"
    await expect_failure(stream, "PROVIDER_ABORTED")


async def test_the_source_is_closed_when_a_record_is_invalid() -> None:
    probe = SourceProbe()
    records = probed_records(probe, [start(), text("a"), {"type": "surprise"}, text("never read"), end()])

    seen = await expect_failure(stream_of(records()), "PROVIDER_UNKNOWN_RECORD")

    assert seen.chunks == [TextDelta("a")]
    assert (probe.pulled, probe.closed_early) == (3, True)


async def test_the_source_is_closed_when_a_record_follows_the_terminal() -> None:
    probe = SourceProbe()
    records = probed_records(probe, [*text_response("a"), text("after the end"), text("never read")])

    await expect_failure(stream_of(records()), "PROVIDER_INVALID_TERMINAL")

    assert (probe.pulled, probe.closed_early) == (4, True)


async def test_an_exhausted_source_is_not_closed_again() -> None:
    source = ScriptedIterator(text_response("a"))

    await complete(stream_of(source))

    assert source.close_calls == 0


async def test_a_source_without_aclose_is_simply_dropped_on_an_early_stop() -> None:
    source = ScriptedIterator([start(), {"type": "surprise"}, end()], closable=False)

    await expect_failure(stream_of(source), "PROVIDER_UNKNOWN_RECORD")


async def test_a_failing_cleanup_does_not_mask_the_error_that_stopped_the_stream() -> None:
    source = ScriptedIterator([start(), text("x"), end("other-id")], failing_close=True)

    await expect_failure(stream_of(source), "PROVIDER_RESPONSE_ID_MISMATCH")

    assert source.close_calls == 1


async def test_an_exception_from_the_source_becomes_an_invalid_fixture() -> None:
    probe = SourceProbe()
    failure = RuntimeError("source broke")

    async def records() -> AsyncIterator[object]:
        async for record in probed_records(probe, [start(), text("a")])():
            yield record
        raise failure

    seen = await expect_failure(stream_of(records()), "PROVIDER_INVALID_FIXTURE")

    assert seen.chunks == [TextDelta("a")]
    assert seen.error is not None and seen.error.__cause__ is failure


async def test_a_fixture_provider_error_raised_by_the_source_is_not_trusted() -> None:
    forged = FixtureProviderError("PROVIDER_TRANSPORT_ERROR", "forged", provider_code="FORGED_UPSTREAM")

    async def records() -> AsyncIterator[object]:
        yield start()
        raise forged

    seen = await expect_failure(stream_of(records()), "PROVIDER_INVALID_FIXTURE")

    assert seen.error is not forged
    assert seen.error is not None and seen.error.provider_code is None


async def test_a_source_that_cancels_itself_is_an_invalid_fixture() -> None:
    async def records() -> AsyncIterator[object]:
        yield start()
        raise asyncio.CancelledError

    await expect_failure(stream_of(records()), "PROVIDER_INVALID_FIXTURE")


async def test_a_record_from_the_source_that_is_not_plain_json_is_malformed() -> None:
    async def records() -> AsyncIterator[object]:
        yield start()
        yield {"type": "tool_call", "id": "c", "name": "n", "arguments": {"when": object()}}

    seen = await expect_failure(stream_of(records()), "PROVIDER_MALFORMED_RECORD")

    assert seen.error is not None and seen.error.record_index == 1


async def test_records_from_the_source_are_copied_when_they_arrive() -> None:
    arguments: dict[str, Any] = {"value": 1}

    async def records() -> AsyncIterator[object]:
        yield start()
        yield {"type": "tool_call", "id": "c", "name": "n", "arguments": arguments}
        arguments["value"] = 2
        yield end(stop_reason="tool_call")

    _, response = await complete(stream_of(records()))

    assert response.tool_calls[0].arguments == {"value": 1}


async def test_the_payload_of_stop_async_iteration_is_ignored() -> None:
    class Hostile:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError("must not be inspected")

    class Source(ScriptedIterator):
        async def __anext__(self) -> object:
            if not self.records:
                raise StopAsyncIteration(Hostile())
            return self.records.pop(0)

    _, response = await complete(stream_of(Source(text_response("done"))))

    assert response.text == "done"


async def test_an_aiter_that_raises_fails_both_consumers_with_invalid_fixture() -> None:
    class Unopenable:
        def __aiter__(self) -> AsyncIterator[object]:
            raise RuntimeError("cannot open")

    await expect_failure(stream_of(Unopenable()), "PROVIDER_INVALID_FIXTURE")


async def test_an_aiter_that_returns_no_async_iterator_is_an_invalid_fixture() -> None:
    class NotAnIterator:
        def __aiter__(self) -> object:
            return [start()]

    await expect_failure(stream_of(NotAnIterator()), "PROVIDER_INVALID_FIXTURE")


async def test_an_anext_that_returns_no_awaitable_is_an_invalid_fixture() -> None:
    class Sync(ScriptedIterator):
        def __anext__(self) -> Any:  # deliberately not awaitable
            return self.records.pop(0)

    await expect_result_failure(stream_of(Sync(text_response("a"))), "PROVIDER_INVALID_FIXTURE")


async def test_one_async_iterator_cannot_serve_two_responses() -> None:
    records = ScriptedIterator(text_response("a"))
    adapter = FixtureProviderAdapter({"schemaVersion": 1, "responses": [{"records": records}, {"records": records}]})

    assert (await adapter.stream("request-1")).text == "a"
    await expect_failure(adapter.stream("request-2"), "PROVIDER_INVALID_FIXTURE")


async def test_one_async_generator_cannot_serve_two_adapters() -> None:
    async def records() -> AsyncIterator[object]:
        for record in text_response("a"):
            yield record

    shared = records()
    first = FixtureProviderAdapter(fixture_with(shared))
    second = FixtureProviderAdapter(fixture_with(shared))

    assert (await first.stream("request-1")).text == "a"
    await expect_failure(second.stream("request-1"), "PROVIDER_INVALID_FIXTURE")


async def test_a_reusable_iterable_opens_a_fresh_iterator_for_each_response() -> None:
    class Reusable:
        opened = 0

        def __aiter__(self) -> AsyncIterator[object]:
            Reusable.opened += 1
            return ScriptedIterator(text_response(f"pass {Reusable.opened}"))

    reusable = Reusable()
    adapter = FixtureProviderAdapter({"schemaVersion": 1, "responses": [{"records": reusable}, {"records": reusable}]})

    assert (await adapter.stream("request-1")).text == "pass 1"
    assert (await adapter.stream("request-2")).text == "pass 2"


async def test_abort_before_the_call_leaves_the_async_source_unclaimed() -> None:
    abort = asyncio.Event()
    abort.set()
    probe = SourceProbe()
    adapter = FixtureProviderAdapter(fixture_with(probed_records(probe, text_response("kept"))()))

    await expect_failure(adapter.stream("request-aborted", abort=abort), "PROVIDER_ABORTED")
    assert probe.pulled == 0

    assert (await adapter.stream("request-retry")).text == "kept"

"""The stream's two consumers, the response queue, call recording and the abort signal."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from sessionstore.provider import FixtureProviderAdapter, FixtureProviderError, ProviderChunk, TextDelta
from tests.provider.provider_support import (
    SourceProbe,
    collect,
    complete,
    end,
    expect_failure,
    expect_result_failure,
    fixture_with,
    iterate,
    probed_records,
    reached,
    start,
    text,
    text_response,
)


async def test_awaiting_alone_returns_the_final_response() -> None:
    adapter = FixtureProviderAdapter(fixture_with(text_response("only", response_id="r")))

    response = await adapter.stream("request-1")

    assert response.id == "message-r"
    assert response.text == "only"


async def test_iterating_then_awaiting_shares_one_consumption_of_the_records() -> None:
    probe = SourceProbe()
    records = probed_records(probe, text_response("a", "b"))
    stream = FixtureProviderAdapter(fixture_with(records())).stream("request-1")

    chunks = await collect(stream)
    response = await stream

    assert chunks == [TextDelta("a"), TextDelta("b")]
    assert response.text == "ab"
    assert probe.pulled == 4
    assert probe.finished


async def test_awaiting_then_iterating_replays_the_chunks() -> None:
    stream = FixtureProviderAdapter(fixture_with(text_response("a", "b"))).stream("request-1")

    response = await stream
    chunks = await collect(stream)

    assert chunks == [TextDelta("a"), TextDelta("b")]
    assert response.text == "ab"


async def test_awaiting_twice_returns_the_same_response() -> None:
    stream = FixtureProviderAdapter(fixture_with(text_response("a"))).stream("request-1")

    assert await stream is await stream
    assert await stream.result() is await stream


async def test_the_stream_is_its_own_async_iterator_and_stays_ended() -> None:
    stream = FixtureProviderAdapter(fixture_with(text_response("a"))).stream("request-1")

    assert aiter(stream) is stream
    assert await anext(stream) == TextDelta("a")
    with pytest.raises(StopAsyncIteration):
        await anext(stream)
    assert await collect(stream) == []
    assert stream.done


async def test_concurrent_consumers_share_one_consumption() -> None:
    probe = SourceProbe()
    release = asyncio.Event()

    async def records() -> AsyncIterator[object]:
        async for record in probed_records(probe, [start(), text("a")])():
            yield record
        await release.wait()
        yield end()

    stream = FixtureProviderAdapter(fixture_with(records())).stream("request-1")

    async def iterate_then_release() -> list[ProviderChunk]:
        chunks = []
        async for chunk in stream:
            chunks.append(chunk)
            release.set()
        return chunks

    chunks, response = await asyncio.gather(iterate_then_release(), stream.result())

    assert chunks == [TextDelta("a")]
    assert response.text == "a"
    assert probe.pulled == 2


async def test_each_call_takes_the_next_response_in_queue_order() -> None:
    adapter = FixtureProviderAdapter(
        fixture_with(text_response("one", response_id="r1"), text_response("two", response_id="r2"))
    )
    first = adapter.stream("request-1")
    second = adapter.stream("request-2")

    assert (await second).response_id == "r2"
    assert (await first).response_id == "r1"


async def test_request_ids_and_call_count_record_every_call_in_order() -> None:
    abort = asyncio.Event()
    abort.set()
    adapter = FixtureProviderAdapter(fixture_with(text_response("a")))

    adapter.stream("request-aborted", abort=abort)
    await adapter.stream("request-ok")
    adapter.stream("request-exhausted")

    assert adapter.request_ids == ["request-aborted", "request-ok", "request-exhausted"]
    assert adapter.call_count == 3


def test_request_ids_is_a_copy_the_caller_cannot_change() -> None:
    adapter = FixtureProviderAdapter(fixture_with(text_response("a")))
    adapter.stream("request-1")

    adapter.request_ids.append("forged")

    assert adapter.request_ids == ["request-1"]


async def test_an_exhausted_queue_fails_both_consumers() -> None:
    adapter = FixtureProviderAdapter({"schemaVersion": 1, "responses": []})

    await expect_failure(adapter.stream("request-1"), "PROVIDER_EXHAUSTED")
    await expect_result_failure(adapter.stream("request-2"), "PROVIDER_EXHAUSTED")

    assert adapter.call_count == 2


async def test_a_failed_response_is_not_put_back_in_the_queue() -> None:
    adapter = FixtureProviderAdapter(fixture_with([start(), text("no end")], text_response("next", response_id="r2")))

    await expect_failure(adapter.stream("request-1"), "PROVIDER_MISSING_TERMINAL")

    assert (await adapter.stream("request-2")).response_id == "r2"


async def test_abort_before_the_call_counts_it_but_leaves_its_response_queued() -> None:
    abort = asyncio.Event()
    abort.set()
    adapter = FixtureProviderAdapter(fixture_with(text_response("kept", response_id="r-kept")))

    await expect_failure(adapter.stream("request-aborted", abort=abort), "PROVIDER_ABORTED")

    assert adapter.call_count == 1
    assert adapter.request_ids == ["request-aborted"]
    assert adapter.pending_response_count == 1
    assert (await adapter.stream("request-retry")).response_id == "r-kept"


async def test_abort_between_chunks_fails_both_consumers() -> None:
    abort = asyncio.Event()
    stream = FixtureProviderAdapter(fixture_with(text_response("a", "b"))).stream("request-1", abort=abort)

    assert await anext(stream) == TextDelta("a")
    abort.set()
    seen = await iterate(stream)

    assert seen.chunks == []
    assert seen.error is not None and seen.error.code == "PROVIDER_ABORTED"
    with pytest.raises(FixtureProviderError) as raised:
        await stream
    assert raised.value.code == "PROVIDER_ABORTED"


async def test_abort_after_the_response_completed_changes_nothing() -> None:
    abort = asyncio.Event()
    stream = FixtureProviderAdapter(fixture_with(text_response("a"))).stream("request-1", abort=abort)
    chunks, response = await complete(stream)

    abort.set()

    assert await collect(stream) == []
    assert await stream is response
    assert chunks == [TextDelta("a")]


async def test_abort_accepts_any_object_with_is_set_and_async_wait() -> None:
    class Flag:
        def __init__(self) -> None:
            self.raised = False

        def is_set(self) -> bool:
            return self.raised

        async def wait(self) -> bool:
            while not self.raised:
                await asyncio.sleep(0)
            return True

    flag = Flag()
    adapter = FixtureProviderAdapter(fixture_with(text_response("a", "b"), text_response("c")))
    stream = adapter.stream("request-1", abort=flag)

    assert await anext(stream) == TextDelta("a")
    flag.raised = True

    await expect_failure(stream, "PROVIDER_ABORTED")
    await expect_failure(adapter.stream("request-2", abort=flag), "PROVIDER_ABORTED")
    assert adapter.pending_response_count == 1


async def test_cancelling_a_consumer_mid_stream_aborts_the_stream_for_every_consumer() -> None:
    probe = SourceProbe()
    waiting = asyncio.Event()
    never = asyncio.Event()

    async def records() -> AsyncIterator[object]:
        async for record in probed_records(probe, [start(), text("a")])():
            yield record
        waiting.set()
        await never.wait()
        yield end()

    stream = FixtureProviderAdapter(fixture_with(records())).stream("request-1")
    waiter = asyncio.create_task(stream.result())
    await reached(waiting)

    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter

    seen = await expect_failure(stream, "PROVIDER_ABORTED")
    assert seen.chunks == [TextDelta("a")]
    assert asyncio.all_tasks() == {asyncio.current_task()}

"""The course fixture end to end, and the seed note's failure experiment."""

from __future__ import annotations

import http.client
import socket
import urllib.request

import pytest

from sessionstore.provider import (
    FixtureProviderAdapter,
    TextBlock,
    TextDelta,
    ToolCall,
    Usage,
    load_fixture,
)
from tests.provider.provider_support import COURSE_FIXTURE_PATH, course_fixture, expect_failure


async def test_course_fixture_first_response_is_the_add_tool_call() -> None:
    adapter = FixtureProviderAdapter(load_fixture(COURSE_FIXTURE_PATH))

    stream = adapter.stream("request-tool")
    chunks = [chunk async for chunk in stream]
    response = await stream

    assert chunks == [ToolCall(id="call-add-001", name="add", arguments={"left": 20, "right": 22})]
    assert response.to_json() == {
        "id": "message-response-tool-001",
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "call-add-001", "name": "add", "arguments": {"left": 20, "right": 22}}],
        "stopReason": "toolCall",
        "usage": {"inputTokens": 12, "outputTokens": 8},
        "responseId": "response-tool-001",
    }


async def test_course_fixture_second_response_is_the_final_text() -> None:
    adapter = FixtureProviderAdapter(load_fixture(COURSE_FIXTURE_PATH))
    await adapter.stream("request-tool")

    stream = adapter.stream("request-final")
    chunks = [chunk async for chunk in stream]
    response = await stream

    assert chunks == [TextDelta("The sum is 42.")]
    assert response.id == "message-response-text-001"
    assert response.content == (TextBlock("The sum is 42."),)
    assert response.stop_reason == "stop"
    assert response.usage == Usage(input_tokens=30, output_tokens=6)
    assert adapter.request_ids == ["request-tool", "request-final"]
    assert adapter.pending_response_count == 0


async def test_failure_experiment_without_response_end_fails_both_consumers_after_the_tool_chunk() -> None:
    fixture = course_fixture()
    first_records = fixture["responses"][0]["records"]
    assert first_records.pop()["type"] == "response_end"
    adapter = FixtureProviderAdapter({"schemaVersion": 1, "responses": [{"records": first_records}]})

    seen = await expect_failure(adapter.stream("request-tool"), "PROVIDER_MISSING_TERMINAL")

    assert seen.chunks == [ToolCall(id="call-add-001", name="add", arguments={"left": 20, "right": 22})]


async def test_failure_experiment_with_response_end_restored_completes_both_responses() -> None:
    fixture = course_fixture()
    records = fixture["responses"][0]["records"]
    response_end = records.pop()
    broken = FixtureProviderAdapter(fixture)
    records.append(response_end)
    restored = FixtureProviderAdapter(fixture)

    await expect_failure(broken.stream("request-tool"), "PROVIDER_MISSING_TERMINAL")
    first = await restored.stream("request-tool")
    second = await restored.stream("request-final")

    assert first.stop_reason == "toolCall"
    assert first.tool_calls == (ToolCall(id="call-add-001", name="add", arguments={"left": 20, "right": 22}),)
    assert first.usage == Usage(input_tokens=12, output_tokens=8)
    assert second.text == "The sum is 42."
    assert second.stop_reason == "stop"
    assert second.usage == Usage(input_tokens=30, output_tokens=6)


@pytest.mark.parametrize(
    "open_connection",
    [
        lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM),
        lambda: socket.create_connection(("127.0.0.1", 9)),
        lambda: urllib.request.urlopen("http://127.0.0.1:9/"),
        lambda: http.client.HTTPConnection("127.0.0.1", 9),
    ],
    ids=["socket", "create_connection", "urlopen", "HTTPConnection"],
)
def test_the_network_guard_refuses_every_connection(open_connection: object) -> None:
    assert callable(open_connection)
    with pytest.raises(AssertionError, match=r"network|sockets"):
        open_connection()


def test_the_adapter_modules_import_nothing_that_reaches_the_network() -> None:
    import ast
    from pathlib import Path

    import sessionstore.provider

    network_modules = {"socket", "ssl", "http", "urllib", "requests", "httpx", "aiohttp", "websockets"}
    package_dir = Path(sessionstore.provider.__file__).parent
    for module in package_dir.glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module is not None:
                names = [node.module]
            assert not {name.split(".")[0] for name in names} & network_modules, module.name

"""What sessionstore.provider exports."""

from __future__ import annotations

import inspect

import sessionstore.provider as provider


def test_the_package_exports_its_public_api() -> None:
    expected = {
        "FixtureProviderAdapter",
        "FixtureProviderError",
        "ProviderErrorCode",
        "PROVIDER_ERROR_CODES",
        "ProviderStream",
        "ProviderChunk",
        "TextDelta",
        "ToolCall",
        "AssistantResponse",
        "ContentBlock",
        "TextBlock",
        "Usage",
        "StopReason",
        "AbortSignal",
        "load_fixture",
    }

    assert expected <= set(provider.__all__)
    for name in provider.__all__:
        assert hasattr(provider, name), name


def test_stream_takes_the_abort_signal_as_a_keyword_only_option() -> None:
    parameters = inspect.signature(provider.FixtureProviderAdapter.stream).parameters

    assert list(parameters) == ["self", "request_id", "abort"]
    assert parameters["abort"].kind is inspect.Parameter.KEYWORD_ONLY
    assert parameters["abort"].default is None

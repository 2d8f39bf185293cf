# Copied from openai-agents 0.24.0, tests/test_responses.py (get_text_message only); MIT License,
# Copyright (c) 2025 OpenAI (tests/agents_sdk/LICENSE-openai-agents).
from __future__ import annotations

from openai.types.responses import ResponseOutputItem, ResponseOutputMessage, ResponseOutputText


def get_text_message(content: str) -> ResponseOutputItem:
    return ResponseOutputMessage(
        id="1",
        type="message",
        role="assistant",
        content=[ResponseOutputText(text=content, type="output_text", annotations=[], logprobs=[])],
        status="completed",
    )

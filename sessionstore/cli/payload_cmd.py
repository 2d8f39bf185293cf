"""``sessionstore payload``: the request body pi-ai 1.6 sends for a context (``sessionstore.payloads``)."""

from __future__ import annotations

from typing import Any

import click

from sessionstore.cli.app import TEXT, emit_json, handle_errors, read_json_object
from sessionstore.views import payload_of

__all__ = ["payload", "payload_of"]


@click.command("payload")
@click.argument("source", metavar="CONTEXT.json", default="-", type=click.File("rb"))
@click.option("--provider", required=True, type=TEXT,
              help="The provider, as pi-ai's registry names it (anthropic, openai, openrouter, ...).")
@click.option("--model", required=True, type=TEXT, help="The model id of that provider in pi-ai's registry.")
@handle_errors
def payload(source: Any, provider: str, model: str) -> None:
    """Print the request body pi-ai 1.6 sends to MODEL of PROVIDER for a context: Anthropic Messages,
    OpenAI Chat Completions or OpenAI Responses, as the registry says the model speaks. CONTEXT.json
    (a file, or - for stdin) is context --json's output as it is (its "llm" are the messages: the
    payload is context --payload's), or {"systemPrompt"?, "messages", "tools"?} with provider
    messages (system, user, assistant, toolResult; any other role is refused).

    \b
    Examples:
      sessionstore payload ctx.json --provider anthropic --model claude-opus-4-5
      sessionstore context 0194c2 --json | sessionstore payload --provider openai --model gpt-5.2
    """
    emit_json(payload_of(read_json_object(source.read()), provider=provider, model=model))

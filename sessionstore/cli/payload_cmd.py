"""``sessionstore payload``: the request body pi-ai 1.6 sends for a context (``sessionstore.payloads``)."""

from __future__ import annotations

from typing import Any

import click

from sessionstore.cli.main import TEXT, emit_json, fail, handle_errors, read_json_object


def payload_of(context: Any, *, provider: str, model: str) -> Any:
    """The payload for ``context`` (a pi-ai ``Context`` mapping, ``context --json``'s output, or a
    ``ContextResult``), after the provider messages' shapes are checked: a message of a bad shape or
    of a role pi-ai does not send is refused naming it, never fed to the builders (linkage findings are
    not: pi-ai repairs an unanswered call itself; nor is null content: pi-ai reads it as [])."""
    from sessionstore.payloads import build_payload, context_parts
    from sessionstore.payloads.transform import with_content
    from sessionstore.validate import SHAPE_CODES, validate_transcript

    messages, _prompt, _tools = context_parts(context)
    errors = [d for d in validate_transcript([with_content(m) for m in messages]) if d.code in SHAPE_CODES]
    if errors:
        first = errors[0]
        where = f"messages[{first.message_index}]" if first.message_index is not None else "messages"
        fail(f"{where}: {first.code}: {first.message}" + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))
    return build_payload(context, provider=provider, model=model)


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

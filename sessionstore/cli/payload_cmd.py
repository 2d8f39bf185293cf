"""``sessionstore payload``: the request body pi-ai 1.6 sends for a context (``sessionstore.payloads``)."""

from __future__ import annotations

from typing import Any

import click

from sessionstore.cli.main import TEXT, emit_json, fail, handle_errors, read_json_object


def payload_of(context: Any, *, provider: str, model: str) -> Any:
    """The payload for ``context`` (a pi-ai ``Context`` mapping or a ``ContextResult``), after the
    provider messages' shapes are checked: a message of a bad shape is refused naming it, never fed
    to the builders (linkage findings are not: pi-ai repairs an unanswered call itself)."""
    from sessionstore.payloads import build_payload
    from sessionstore.validate import SHAPE_CODES, validate_transcript

    messages = context.get("messages") if isinstance(context, dict) else getattr(context, "llm", None)
    if not isinstance(messages, list):
        fail("the context needs a 'messages' list (as context --json's 'llm' gives it)")
    errors = [d for d in validate_transcript(messages) if d.code in SHAPE_CODES]
    if errors:
        first = errors[0]
        where = f"messages[{first.message_index}]" if first.message_index is not None else "messages"
        fail(f"{where}: {first.code}: {first.message}" + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))
    if isinstance(context, dict):
        for key, kind in (("systemPrompt", str), ("tools", list)):
            if context.get(key) is not None and not isinstance(context[key], kind):
                fail(f"'{key}' must be a {'string' if kind is str else 'list'}")
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
    (a file, or - for stdin) is {"systemPrompt"?, "messages", "tools"?}, messages as context --json's
    "llm" gives them.

    \b
    Examples:
      sessionstore payload ctx.json --provider anthropic --model claude-opus-4-5
      sessionstore context 0194c2 --json | jq '{messages: .llm}' \\
        | sessionstore payload --provider openai --model gpt-5.2
    """
    emit_json(payload_of(read_json_object(source.read()), provider=provider, model=model))

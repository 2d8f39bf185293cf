"""``sessionstore search``: pi's session-picker search over the database."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from sessionstore.catalog.defaults import HITS_PER_SESSION, SORT_ORDERS, SortOrder
from sessionstore.cli import render
from sessionstore.cli.app import (
    TEXT,
    Ctx,
    emit_json,
    emit_json_lines,
    handle_errors,
    json_option,
    nl_option,
    pass_ctx,
    say,
)

if TYPE_CHECKING:
    from sessionstore.catalog.search import SearchResult

DEFAULT_LIMIT = 20


@click.command()
@click.argument("query", type=TEXT)
@click.option("--cwd", default=None, type=TEXT, metavar="DIR",
              help="Only sessions started in DIR (resolved as pi resolves it: ., ~, relative paths).")
@click.option("--limit", default=DEFAULT_LIMIT, show_default=True, type=click.IntRange(min=0), metavar="N",
              help="At most N sessions.")
@click.option("--sort", type=click.Choice(SORT_ORDERS), default="relevance", show_default=True,
              help="relevance: pi's score (best first); recent: newest activity first.")
@click.option("--everything", is_flag=True,
              help="Also search what pi does not: thinking, tool calls and results, bash, summaries, custom messages.")
@click.option("--archived", is_flag=True,
              help="Also search archived sessions, reading their archive files (they stay archived).")
@click.option("--hits", default=HITS_PER_SESSION, show_default=True, type=click.IntRange(min=0), metavar="N",
              help="Matching entries shown per session.")
@json_option
@nl_option
@pass_ctx
@handle_errors
def search(ctx: Ctx, query: str, cwd: str | None, limit: int, sort: SortOrder, everything: bool, archived: bool,
           hits: int, as_json: bool, as_lines: bool) -> None:
    """Find sessions as pi's session picker (/resume) finds them.

    QUERY is pi's search syntax: words (each must match the name, id, cwd or messages; name and cwd
    also match fuzzily), "quoted phrases", or re:REGEX (a JavaScript regex, case-insensitive).

    \b
    Examples:
      sessionstore search 'migrate sqlite'
      sessionstore search '"connection pool"' --cwd . --sort recent
      sessionstore search 're:Error: \\w+' --everything --json
    """
    results = ctx.store.search(query, cwd=cwd, limit=limit, sort=sort, everything=everything, hits=hits,
                               archived=archived)
    if as_lines:
        emit_json_lines(r.to_json() for r in results)
    elif as_json:
        emit_json([r.to_json() for r in results])
    else:
        say(render_results(results))


def render_results(results: list[SearchResult]) -> str:
    if not results:
        return "no sessions match"
    lines: list[str] = []
    for result in results:
        info = result.session
        title = info.name or info.first_message or "-"
        if result.archived:
            title = f"[archived] {title}"
        lines.append(render.safe_line(f"{info.id}  {render.ms_to_iso(info.modified_ms)}  {info.cwd}  {title}")[:200])
        for hit in result.hits:
            lines.append(render.safe_line(f"    {hit.entry_id} {hit.role}: {hit.snippet}"))
    return "\n".join(lines)

"""``sessionstore stats``: pi's ``/session`` numbers of one session, or summed over many."""

from __future__ import annotations

from dataclasses import replace

import click

from sessionstore.cli import render
from sessionstore.cli.app import TEXT, Ctx, db_label, emit_json, handle_errors, json_option, pass_ctx, say, since_ms


@click.command("stats")
@click.argument("session", required=False, type=TEXT)
@click.option("--all", "all_sessions", is_flag=True, help="Sum over every session (narrowed by --cwd and --since).")
@click.option("--cwd", default=None, type=TEXT, metavar="DIR",
              help="With --all: only sessions started in DIR (resolved as pi resolves it, as for ls).")
@click.option("--since", default=None, type=TEXT, metavar="DATE",
              help="With --all: only sessions whose last message (pi's modified) is since DATE"
              " (as ls --sort modified).")
@click.option("--by", type=click.Choice(["model", "day"]), default=None,
              help="With --all: also per model (pi's breakdown key) or per UTC day of the entries.")
@json_option
@pass_ctx
@handle_errors
def stats(ctx: Ctx, session: str | None, all_sessions: bool, cwd: str | None, since: str | None, by: str | None,
          as_json: bool) -> None:
    """Show what pi's /session shows of SESSION: messages by role, tool calls and results, tokens
    (input, output, cache read and write, total) and cost, per model too; or, with --all, the same
    summed over sessions. Read from the catalog columns, not from the entries.

    \b
    Example:
      sessionstore stats 0194c2
      sessionstore stats --all --cwd ~/proj --since 2025-01-01 --by day --json"""
    if all_sessions and session is not None:
        raise click.UsageError("give a SESSION or --all, not both")
    if not all_sessions:
        if session is None:
            raise click.UsageError("Missing argument 'SESSION' (or give --all).")
        for name, value in (("--cwd", cwd), ("--since", since), ("--by", by)):
            if value is not None:
                raise click.UsageError(f"{name} goes with --all")
        report = ctx.store.stats(ctx.session_id(session))
        if as_json:
            emit_json(report.to_json())
        else:
            if report.name:  # one line: a tab or a newline in it is shown escaped, as every table cell is
                report = replace(report, name=render.safe_line(report.name))
            say(report.render(location=f"In database {db_label(ctx.resolved_url)}"))
        return
    totals = ctx.store.stats_all(cwd=cwd, since_ms=since_ms(since), by=by)
    emit_json(totals.to_json()) if as_json else say(totals.render())

"""``demo``: a scripted session recorded, branched, forked, compacted, exported and resumed."""

from __future__ import annotations

from pathlib import Path

import click

from sessionstore.cli import render
from sessionstore.cli.app import Ctx, handle_errors, pass_ctx, say
from sessionstore.validate import ERROR_CODES


@click.command()
@click.option("--export-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to write the exported JSONL (default: the temporary directory).")
@pass_ctx
@handle_errors
def demo(ctx: Ctx, export_dir: Path | None) -> None:
    """Record a scripted tool-using conversation from the bundled provider fixture, then branch, fork,
    compact, export and resume it, and print the context, the tree and the validation report."""
    from sessionstore.demo import run_demo

    result = run_demo(ctx.url, export_dir=export_dir, say=lambda line: say(line), tenant=ctx.tenant)
    from sessionstore.api import SessionStore

    with SessionStore(ctx.url, tenant=ctx.tenant) as store:
        say("")
        say(f"== tree of session {result.session_id} ==")
        say(render.render_tree(store.tree(result.session_id)))
        say("")
        say(f"== context of the fork {result.fork_id}, resumed from the database ==")
        say(render.render_context(result.context))
        say("")
        say("== validation ==")
        for sid in (result.session_id, result.fork_id):
            diagnostics = store.validate(sid)
            verdict = "valid" if not any(d.code in ERROR_CODES for d in diagnostics) else "INVALID"
            say(f"session {sid}: {verdict}; {render.render_diagnostics(diagnostics)}")

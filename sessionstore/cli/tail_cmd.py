"""``sessionstore tail``: a session's last entries, and with ``--follow`` each new one as it is stored."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable
from typing import Any

import click

from sessionstore.cli import render
from sessionstore.cli.app import TEXT, Ctx, emit_json_lines, handle_errors, pass_ctx, say
from sessionstore.wire.codec import json_loads

LAST = 10
"""Entries ``tail`` prints without ``-n``."""


def entry_line(entry: dict[str, Any]) -> str:
    """An entry as ``tree`` shows it: its id and what it is (escaped)."""
    return render.safe_line(f"{entry.get('id')} {render.describe_entry(entry)}")


@click.command("tail")
@click.argument("session", type=TEXT)
@click.option("-n", "--lines", "count", type=click.IntRange(min=0), default=LAST, show_default=True,
              help="Print the last N entries first (in append order).")
@click.option("--after", type=click.IntRange(min=-1), default=None, metavar="SEQ",
              help="Print the entries after the one at SEQ (append position, from 0) instead of the last N.")
@click.option("-f", "--follow", is_flag=True,
              help="Keep printing new entries as any writer stores them (another process, a server, a sync);"
                   " Ctrl-C ends it. Ends by itself when the session is deleted.")
@click.option("--json", "as_json", is_flag=True, help="Print each entry as one JSON line (JSONL).")
@pass_ctx
@handle_errors
def tail(ctx: Ctx, session: str, count: int, after: int | None, follow: bool, as_json: bool) -> None:
    """Print SESSION's last entries, one line each as tree shows them (or JSONL with --json); with
    --follow, then each new entry as it arrives, locally (the database's change check) or from a
    server (--db http://...). A leaf moved without an entry, and the deletion, are said on stderr.

    \b
    Example:
      sessionstore tail 0194c2 -n 5
      sessionstore tail 0194c2 --follow --json | jq .type"""
    try:  # (Ctrl-C is the way to end a follow: no traceback, no error line)
        _tail(ctx, session, count, after, follow, as_json)
    except KeyboardInterrupt:
        sys.exit(130)


def _tail(ctx: Ctx, session: str, count: int, after: int | None, follow: bool, as_json: bool) -> None:
    store = ctx.store
    sid = ctx.session_id(session)
    start = max(store.session(sid).entry_count - count, 0) - 1 if after is None else after
    last = start
    for seq, entry in _stored_after(store, sid, start):
        _print(entry, as_json=as_json)
        last = seq
    if not follow:
        return
    for event in store.events(sid, after=last):
        if event.kind == "entry" and event.entry is not None:
            _print(event.entry, as_json=as_json)
        elif event.kind == "leaf":
            say(f"leaf moved to {event.leaf_id}", err=True)
        elif event.kind == "deleted":
            say(f"session {sid} was deleted", err=True)
            return


def _stored_after(store: Any, session_id: str, after: int) -> Iterable[tuple[int, dict[str, Any]]]:
    """The stored entries after seq ``after`` with their seqs: a local store reads only those lines; a
    remote one has the session's entries."""
    write_lines = getattr(store, "write_entry_lines", None)
    if write_lines is None:
        entries = store.entries(session_id)
        return list(enumerate(entries))[after + 1:]
    buffer = io.BytesIO()
    write_lines(session_id, buffer, after=after)
    lines = buffer.getvalue().splitlines()
    return [(after + 1 + n, dict(json_loads(line))) for n, line in enumerate(lines)]


def _print(entry: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        emit_json_lines([entry])
    else:
        say(entry_line(entry), escaped=True)

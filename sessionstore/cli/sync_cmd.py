"""``sessionstore sync``: mirror a pi session directory into the database (``catalog.sync``)."""

from __future__ import annotations

import sys
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sessionstore.catalog.defaults import DEFAULT_INTERVAL, default_sessions_dir
from sessionstore.cli import render
from sessionstore.cli.app import (
    PROGRESS_MIN_BYTES,
    Ctx,
    emit_json,
    handle_errors,
    json_option,
    pass_ctx,
    say,
    write_bytes,
)
from sessionstore.wire.jsjson import js_dumpb

if TYPE_CHECKING:
    from sessionstore.catalog.sync import SyncResult


class _Bar:
    """A progress bar on stderr, opened once a sync knows it has at least ``PROGRESS_MIN_BYTES`` to read."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: Any = None
        self._shown = 0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < PROGRESS_MIN_BYTES:
            return
        if self._bar is None:
            self._bar = click.progressbar(length=total, label="syncing", file=sys.stderr)
            self._bar.__enter__()
        self._bar.update(done - self._shown)
        self._shown = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
            self._shown = 0


def _report(result: SyncResult, *, as_json: bool, lines: bool = False) -> None:
    """The counts on stdout (JSON, or one JSON line per cycle when watching), each failure on stderr."""
    if as_json:
        if lines:
            write_bytes(js_dumpb(result.to_json()) + b"\n")
        else:
            emit_json(result.to_json())
        return
    for skipped in result.skipped:
        say(f"skipped: {render.safe_line(str(skipped))}", err=True, escaped=True)
    for failure in result.failures:  # a name may hold a newline: one line each, escaped
        say(f"failed: {render.safe_line(str(failure))}", err=True, escaped=True)
    say(result.summary())


@click.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--prune", is_flag=True, help="Delete synced sessions whose file is gone (never one imported by hand).")
@click.option("--adopt", is_flag=True,
              help="Let a file take over the session of its id when it was imported by hand, or replace a synced"
                   " session the database added to (append, label, branch...) when its file was rewritten.")
@click.option("--include-deleted", is_flag=True,
              help="Import again the files whose session was deleted (rm); otherwise they are left.")
@click.option("--watch", "watching", is_flag=True, help="Keep mirroring as pi writes (polls every --interval s).")
@click.option("--interval", type=click.FloatRange(min=0.0), default=DEFAULT_INTERVAL, show_default=True,
              metavar="SECONDS", help="With --watch: seconds between two syncs.")
@click.option("--watch-cycles", type=click.IntRange(min=1), default=None, hidden=True)  # tests: stop after N
@click.option("--silent", is_flag=True, help="No progress bar.")
@json_option
@pass_ctx
@handle_errors
def sync(ctx: Ctx, directory: Path | None, prune: bool, adopt: bool, include_deleted: bool, watching: bool,
         interval: float, watch_cycles: int | None, silent: bool, as_json: bool) -> None:
    """Mirror a pi session directory into the database.

    DIRECTORY defaults to $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions. New files are
    imported, grown files get their new complete lines appended, rewritten files are re-imported,
    unchanged files cost a stat. A file that fails is reported as file:line and the others still
    sync; the exit status is then 1. A rewritten file whose session holds what the database added
    (appended entries, a moved leaf) fails rather than lose it (--adopt replaces it). A session whose
    file is gone, or now holds another session, stays (counted; --prune deletes it); a file of a
    session deleted with rm is left (counted; --include-deleted imports it).
    Names that are not regular files (FIFOs, devices) are skipped with the reason. Prints the
    counts (--json: imported, appended, rewritten, unchanged, pruned, pending, failed, entries,
    gone, deleted, waiting: last lines without their newline not read yet, failures, skipped).

    \b
    Example:
      sessionstore sync                 # once
      sessionstore sync --watch         # keep mirroring; Ctrl-C stops
    """
    store = ctx.local_store
    root = directory if directory is not None else default_sessions_dir()
    if not watching:
        bar = _Bar(not silent and not as_json and sys.stderr.isatty())
        try:
            result = store.sync(root, prune=prune, adopt=adopt, include_deleted=include_deleted, progress=bar)
        finally:
            bar.close()
        _report(result, as_json=as_json)
        if result.failures:
            sys.exit(1)
        return
    from sessionstore.catalog.sync import SyncResult

    totals = SyncResult()
    last = SyncResult()

    def cycle(once: SyncResult) -> None:
        nonlocal last
        last = once
        totals.add(once)
        if once.imported or once.appended or once.rewritten or once.pruned or once.failures:
            _report(once, as_json=as_json, lines=True)

    if not as_json:
        say(f"watching {root} (every {interval:g} s; Ctrl-C stops)", err=True)
    with suppress(KeyboardInterrupt):  # Ctrl-C ends the watch: the totals follow
        store.watch_sync(root, interval=interval, cycles=watch_cycles, prune=prune, adopt=adopt,
                         include_deleted=include_deleted, on_cycle=cycle)
    if as_json:
        write_bytes(js_dumpb({"total": totals.to_json()}) + b"\n")
    else:
        say(f"total: {totals.summary()}")
    if last.failures:
        sys.exit(1)

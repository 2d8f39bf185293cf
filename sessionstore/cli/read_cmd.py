"""The commands that read a session or the list of them: ``context``, ``export``, ``validate``,
``ls``, ``tree`` and ``show``. None of them writes to the database, nor creates it."""

from __future__ import annotations

import os
import secrets
import stat
import sys
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, cast

import click

from sessionstore.cli import render
from sessionstore.cli.app import (
    TEXT,
    Ctx,
    binary_stdout,
    ctx_exit,
    emit_json,
    emit_json_lines,
    entry_prefixes,
    fail,
    handle_errors,
    json_option,
    leaf_arg,
    nl_option,
    pass_ctx,
    say,
    since_ms,
    terminal_columns,
    write_bytes,
)
from sessionstore.views import archived_marked, context_payload, json_bytes, session_item, session_list


@click.command()
@click.argument("session", type=TEXT, required=False)
@click.option("--latest", is_flag=True, help="The most recently active session (pi's --continue); with --cwd, of DIR.")
@click.option("--cwd", default=None, type=TEXT, metavar="DIR", help="With --latest: the latest session of DIR.")
@click.option("--leaf", "leaf", metavar="ENTRY_ID", default=None, type=TEXT,
              help="Build the context at this entry ('none': before the first entry, an empty context).")
@click.option("--provider-safe", is_flag=True, help="Drop error/aborted turns, add results for unanswered calls.")
@click.option("--full", is_flag=True, help="Do not shorten long texts in the readable output.")
@click.option("--payload", "as_payload", is_flag=True,
              help="Print the request body pi-ai 1.6 sends for it instead (with --provider and --model).")
@click.option("--provider", default=None, type=TEXT, help="With --payload: the provider, as pi-ai names it.")
@click.option("--model", "model_id", default=None, type=TEXT, help="With --payload: the model id in pi-ai's registry.")
@click.option("--system-prompt", default=None, type=TEXT, help="With --payload: the system prompt to send.")
@json_option
@pass_ctx
@handle_errors
@entry_prefixes("leaf")
def context(ctx: Ctx, session: str | None, latest: bool, cwd: str | None, leaf: str | None, provider_safe: bool,
            full: bool, as_payload: bool, provider: str | None, model_id: str | None, system_prompt: str | None,
            as_json: bool) -> None:
    """Show what a model call at the leaf of SESSION (or, with --latest, of the most recent session)
    gets: messages, provider messages, diagnostics; with --payload, the provider request itself.

    \b
    Examples:
      sessionstore context 0194c2 --json
      sessionstore context --latest --payload --provider anthropic --model claude-opus-4-5"""
    if session is None and not latest:
        raise click.UsageError("Missing argument 'SESSION' (or give --latest).")
    if session is not None and latest:
        raise click.UsageError("give a SESSION or --latest, not both")
    if cwd is not None and not latest:
        raise click.UsageError("--cwd goes with --latest")
    if as_payload and (provider is None or model_id is None):
        raise click.UsageError("--payload needs --provider and --model")
    if not as_payload and (provider, model_id, system_prompt) != (None, None, None):
        raise click.UsageError("--provider, --model and --system-prompt go with --payload")
    if session is None:
        found = ctx.store.most_recent_session(cwd=cwd)
        if found is None:
            fail("no session yet" + (f" in {cwd}" if cwd is not None else ""))
        session_id = str(found)
    else:
        session_id = ctx.session_id(session)
    if as_payload:
        emit_json(context_payload(ctx.store, session_id, provider=str(provider), model=str(model_id),
                                        leaf_id=leaf_arg(leaf), provider_safe=provider_safe,
                                        system_prompt=system_prompt))
        return
    if as_json:  # streamed: the same bytes as emit_json(result.to_json()), in bounded memory
        with binary_stdout() as out:
            ctx.store.write_context_json(session_id, out, leaf_id=leaf_arg(leaf),
                                         provider_safe=provider_safe)
        return
    result = ctx.store.context(session_id, leaf_id=leaf_arg(leaf), provider_safe=provider_safe)
    say(render.render_context(result, limit=None if full else 400))


class RefusedOutput(Exception):
    """The output path is not a place to write a file to (one line: why)."""


def write_file_atomically(target: Path, produce: Callable[[IO[bytes]], int]) -> int:
    """Write ``target`` through a new file in its directory (created exclusively, never through a
    symlink), flushed and fsynced, then renamed onto it: readers see the old file or the whole new one.

    Refuses a target that is a symlink or exists as anything but a regular file (``/dev/null``, a fifo,
    a directory), leaving it alone. A replaced file keeps its permission bits; a new one gets the
    usual ``0666`` less the umask. The temporary file is removed on any failure."""
    try:
        existing = os.lstat(target)
    except FileNotFoundError:
        existing = None
    if existing is not None:
        if stat.S_ISLNK(existing.st_mode):
            raise RefusedOutput(f"{target} is a symbolic link: not writing through it (remove it, or name the file"
                                " it points to)")
        if not stat.S_ISREG(existing.st_mode):
            raise RefusedOutput(f"{target} exists and is not a regular file: not replacing it")
    directory = target.parent
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _attempt in range(100):
        partial = directory / f".{target.name}.{secrets.token_hex(6)}.partial"
        try:
            fd = os.open(partial, flags, 0o600 if existing is not None else 0o666)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 random names taken
        raise RefusedOutput(f"cannot create a temporary file in {directory}")
    try:
        with os.fdopen(fd, "wb") as fp:
            count = produce(fp)
            fp.flush()
            os.fsync(fp.fileno())
            if existing is not None:
                os.fchmod(fp.fileno(), stat.S_IMODE(existing.st_mode))
        os.replace(partial, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(partial)
        raise
    _fsync_directory(directory)
    return count


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable (best effort: not every system lets a directory be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@click.command()
@click.argument("session", type=TEXT)
@click.option("-o", "--output", metavar="FILE", default="-",
              help="File to write, replaced in one step (default: stdout). Not a symlink or a device.")
@click.option("--html", "as_html", is_flag=True,
              help="One self-contained HTML page (tree, messages, stats) instead of JSONL, as pi's /export.")
@pass_ctx
@handle_errors
def export(ctx: Ctx, session: str, output: str, as_html: bool) -> None:
    """Export a session as a pi v3 JSONL file (entries in append order), or with --html as one HTML page."""
    session_id = ctx.session_id(session)

    def produce(fp: IO[bytes]) -> int:
        if as_html:
            from sessionstore.views.html_export import write_session_html  # lazily: only --html needs it

            return write_session_html(ctx.store, session_id, fp)
        return ctx.store.export_jsonl(session_id, fp)

    if output == "-":
        sys.stdout.flush()
        produce(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    target = Path(output)
    try:
        count = write_file_atomically(target, produce)
    except RefusedOutput as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {target}: {exc.strerror or exc}")
    say(f"wrote {count} entries to {target}", err=True)


@click.command()
@click.argument("session", type=TEXT)
@click.option("--leaf", metavar="ENTRY_ID", default=None, type=TEXT,
              help="Validate the context at this entry ('none': before the first entry).")
@json_option
@pass_ctx
@handle_errors
@entry_prefixes("leaf")
def validate(ctx: Ctx, session: str, leaf: str | None, as_json: bool) -> None:
    """Validate the context at the leaf of SESSION (or at --leaf): what a model call would get.

    Each finding is an error (a bad shape, a broken tool round the provider-safe projection cannot
    repair), repaired (a tool call an aborted turn left without a result: context --provider-safe, as
    pi-ai before every call, sends a synthetic error result) or a warning (context building read
    something as pi does). The last line is the verdict, naming the session and the leaf.

    \b
    Exit status: 0 valid (nothing wrong, or only what the projection repairs);
    1 invalid (an error remains); 2 the command could not run (no such session, ...)."""
    from sessionstore.context import project

    session_id = ctx.session_id(session)
    result = ctx.store.context(session_id, leaf_id=leaf_arg(leaf))
    safe = project(cast(list[dict[str, Any]], result.messages), result.entry_ids, provider_safe_repairs=True).llm
    findings = _classified(result.diagnostics, safe)
    errors = sum(1 for severity, _ in findings if severity == "error")
    repaired = sum(1 for severity, _ in findings if severity == "repaired")
    verdict = render.validation_verdict(session_id, result.leaf_id, errors=errors, repaired=repaired,
                                        warnings=len(findings) - errors - repaired)
    if as_json:
        emit_json({"sessionId": session_id, "leafId": result.leaf_id, "valid": not errors, "errors": errors,
                   "repaired": repaired, "warnings": len(findings) - errors - repaired,
                   "diagnostics": [{**d.to_json(), "severity": severity} for severity, d in findings],
                   "verdict": verdict})
    else:
        say(render.render_validation(findings, verdict))
    if errors:
        ctx_exit(1)


def _classified(diagnostics: list[Any], provider_safe_llm: list[Any]) -> list[tuple[str, Any]]:
    """Each finding with its severity: ``error`` (a shape or linkage error the provider-safe projection
    leaves in place: its projected messages still have a linkage finding of that code), ``repaired``
    (one it removes: a call without a result gets a synthetic one, an aborted turn is not sent) or
    ``warning``; then, as errors, the linkage findings the projection makes (a result whose call was
    in a dropped turn) that the messages did not have."""
    from collections import Counter

    from sessionstore.validate import LINKAGE_CODES, SHAPE_CODES, validate_transcript

    projected = [d for d in validate_transcript(provider_safe_llm) if d.code in LINKAGE_CODES]
    left: Counter[str] = Counter(d.code for d in projected)
    out: list[tuple[str, Any]] = []
    for d in diagnostics:
        if d.code in SHAPE_CODES:
            out.append(("error", d))
        elif d.code in LINKAGE_CODES and left[d.code] > 0:
            left[d.code] -= 1
            out.append(("error", d))
        else:
            out.append(("repaired" if d.code in LINKAGE_CODES else "warning", d))
    for d in projected:
        if left[d.code] > 0:
            left[d.code] -= 1
            out.append(("error", replace(d, message=f"after the provider-safe projection: {d.message}",
                                         message_index=None)))
    return out


@click.command("ls")
@click.option("--cwd", default=None, type=TEXT,
              help="Only sessions started in this directory (resolved as pi resolves it: ., ~, relative paths).")
@click.option("--since", default=None, type=TEXT, metavar="DATE",
              help="Only sessions active since DATE (by the --sort time).")
@click.option("--limit", default=None, type=click.IntRange(min=0), metavar="N", help="At most N sessions.")
@click.option("--sort", type=click.Choice(["activity", "modified"]), default="activity", show_default=True,
              help="activity: the last activity of any kind (created, appended to, forked, leaf moved; an imported"
              " file's own latest time); modified: pi's order (the last message, pi's 'modified').")
@json_option
@nl_option
@pass_ctx
@handle_errors
def ls_cmd(ctx: Ctx, cwd: str | None, since: str | None, limit: int | None, sort: str, as_json: bool,
           as_lines: bool) -> None:
    """List sessions, newest first: by the last activity of any kind (ACTIVE; --sort modified: in pi's
    order, by pi's MODIFIED), with what pi's session picker shows: pi's message count (MSGS) and the
    session's name, else its first message, cut to the terminal's width ($COLUMNS; not cut in a pipe):
    a narrow terminal gets CWD and SOURCE cut from the left, then ids shortened to unique prefixes and
    ACTIVE left out, before the message is cut.
    --since goes by the same time. SOURCE: the file a synced session mirrors, '(gone)' when it no longer
    exists (--json: sourceGone, null for a session not synced); sync keeps such a session unless --prune."""
    infos = ctx.store.list_sessions(cwd=cwd, since_ms=since_ms(since), limit=limit,
                                    sort="modified" if sort == "modified" else "activity")
    if as_lines:
        emit_json_lines(session_item(ctx.store, i) for i in infos)
    elif as_json:
        write_bytes(json_bytes(session_list(ctx.store, infos)))
    else:
        gone = {i.source_path for i in infos if i.source_path is not None and not os.path.lexists(i.source_path)}
        infos = archived_marked(ctx.store, infos)
        filtered = cwd is not None or since is not None or limit is not None  # (short ids: unique in the store)
        say(render.render_sessions(infos, width=terminal_columns(), gone=gone, known_ids=lambda: [
            i.id for i in ctx.store.list_sessions()] if filtered else ()))


@click.command()
@click.argument("session", type=TEXT)
@click.option("--full", is_flag=True, help="Show every entry (long linear runs are folded otherwise).")
@json_option
@pass_ctx
@handle_errors
def tree(ctx: Ctx, session: str, full: bool, as_json: bool) -> None:
    """Show the entry tree: * marks the active path, ├─ └─ the branches of a fork, [labels]; runs of
    more than 8 entries without a fork are folded (--full shows them). Colour on a terminal only
    (NO_COLOR turns it off)."""
    if as_json:  # streamed: the same bytes as emit_json([r.to_json() for r in roots]), in bounded memory
        session_id = ctx.session_id(session)
        with binary_stdout() as out:
            ctx.store.write_tree_json(session_id, out)
        return
    roots = ctx.store.tree(ctx.session_id(session))
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    say(render.render_tree(roots, full=full, color=color), escaped=True)


@click.command()
@click.argument("session", type=TEXT)
@click.argument("entry", type=TEXT)
@pass_ctx
@handle_errors
@entry_prefixes("entry")
def show(ctx: Ctx, session: str, entry: str) -> None:
    """Print one entry as JSON."""
    emit_json(ctx.store.entry(ctx.session_id(session), entry))

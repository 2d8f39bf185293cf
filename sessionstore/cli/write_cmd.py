"""The commands that write to the database (and create it when it is missing): ``import`` (pi session
files), ``new``, ``append``, ``edit``, ``branch``, ``fork``, ``label``, ``name``, ``compact`` and ``rm``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from sessionstore.cli import render
from sessionstore.cli.app import (
    PROGRESS_MIN_BYTES,
    TEXT,
    Ctx,
    DatabaseProblem,
    StrParam,
    ctx_exit,
    describe,
    emit_json,
    emit_json_lines,
    entry_prefixes,
    fail,
    handle_errors,
    json_option,
    nl_option,
    one_line,
    os_message,
    pass_ctx,
    read_json_object,
    say,
)
from sessionstore.errors import BackendUnavailableError, SchemaError, SessionExistsError, SessionStoreError, StoreError
from sessionstore.models.kind_names import kind_names
from sessionstore.models.timestamps import now_ms
from sessionstore.store.records import UNSET
from sessionstore.views import compaction_plan, import_exists_item, import_failed_item, import_item
from sessionstore.wire.jsjson import js_dumpb

expected_leaf_option = click.option(
    "--expected-leaf",
    metavar="ENTRY",
    default=None,
    type=TEXT,
    help="Refuse (exit 2, nothing written) unless the session's leaf is still ENTRY ('none' for no leaf).",
)


def _expected(value: str | None) -> Any:
    if value is None:
        return UNSET
    return None if value == "none" else value


@click.command("import")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option("--lenient", is_flag=True, help="Skip bad lines (and entries below them) and report them.")
@click.option("--replace", is_flag=True, help="Replace a session with the same id (in the same transaction).")
@click.option("--skip-existing", is_flag=True, help="Leave a session that is already in the database as it is.")
@click.option("--silent", is_flag=True, help="No progress bar.")
@json_option
@nl_option
@pass_ctx
@handle_errors
def import_cmd(ctx: Ctx, paths: tuple[str, ...], lenient: bool, replace: bool, skip_existing: bool, silent: bool,
               as_json: bool, as_lines: bool) -> None:
    """Import pi session files (JSONL v1-v3); print each new session id.

    PATH is a file, a directory (its *.jsonl files, recursively, in name order), a glob ('*.jsonl',
    '**/*.jsonl') or - for stdin. Each file is imported in one transaction: a file with a bad line leaves
    nothing behind, is reported, and the others are still imported. With more than one file a summary
    ends the run; the exit status is 2 when any file failed.

    \b
    Examples:
      sessionstore import ~/.pi/agent/sessions --skip-existing
      sessionstore import 'exports/*.jsonl' --json
    """
    if replace and skip_existing:
        fail("--replace and --skip-existing contradict each other")
    files = _import_files(paths)
    outcomes: list[dict[str, Any]] = []
    for name in files:
        outcome = _import_one(ctx, name, lenient=lenient, replace=replace, skip_existing=skip_existing,
                              silent=silent, quiet=as_json or as_lines)
        outcomes.append(outcome)
        if as_lines:
            emit_json_lines([outcome])
    if as_json:
        emit_json(outcomes)
    counts = {status: sum(1 for o in outcomes if o["status"] == status) for status in ("imported", "exists", "failed")}
    if len(outcomes) > 1:
        say(f"{counts['imported']} imported, {counts['exists']} already in the database, {counts['failed']} failed",
            err=True)
    if counts["failed"]:
        ctx_exit(2)


def _import_files(paths: tuple[str, ...]) -> list[str]:
    """The files ``import`` reads for ``paths``: a directory's ``*.jsonl`` files (recursively), a glob's
    matches, else the path itself (a missing one fails as the import of that file)."""
    import glob

    files: list[str] = []
    for given in paths:
        if given == "-":
            files.append(given)
        elif os.path.isdir(given):
            found = sorted(str(p) for p in Path(given).rglob("*.jsonl") if p.is_file())
            if not found:
                say(f"warning: {render.safe_line(given)} holds no *.jsonl file: nothing imported from it", err=True,
                    escaped=True)
            files += found
        elif glob.has_magic(given) and not os.path.exists(given):
            matches = sorted(m for m in glob.glob(os.path.expanduser(given), recursive=True) if os.path.isfile(m))
            if not matches:
                fail(f"{render.safe_line(given)}: no file matches")
            files += matches
        else:
            files.append(given)
    return list(dict.fromkeys(files))


def _import_one(ctx: Ctx, name: str, *, lenient: bool, replace: bool, skip_existing: bool, silent: bool,
                quiet: bool) -> dict[str, Any]:
    """Import one file; a problem of that file is reported and returned, one of the database raised."""
    source: Any = sys.stdin.buffer if name == "-" else name
    try:
        size = 0 if name == "-" else Path(name).stat().st_size
        if silent or size < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
            result = ctx.store.import_jsonl(source, lenient=lenient, replace=replace)
        else:
            with click.progressbar(length=size, label=render.safe_line(f"importing {name}"), file=sys.stderr) as bar:
                done = [0]

                def advance(read: int, bar: Any = bar, done: list[int] = done) -> None:
                    bar.update(read - done[0])
                    done[0] = read

                result = ctx.store.import_jsonl(source, lenient=lenient, replace=replace, progress=advance)
    except SessionExistsError as exc:
        if skip_existing:
            say(f"skipped {render.safe_line(name)}: session {render.safe_line(exc.session_id)} is in the database"
                " already (--skip-existing)", err=True, escaped=True)
            return import_exists_item(exc.session_id, file=name)
        return _import_failed(name, exc)
    except (StoreError, SchemaError, BackendUnavailableError, DatabaseProblem):
        raise  # the database, not this file: nothing else can be imported either
    except (SessionStoreError, OSError) as exc:
        return _import_failed(name, exc)
    if not quiet:
        say(result.session_id)
    for skipped in result.skipped:
        say(render.safe_line(f"skipped {name}:{skipped.line}: {skipped.reason}"), err=True, escaped=True)
    return import_item(result, file=name)


def _import_failed(name: str, exc: BaseException) -> dict[str, Any]:
    """Report the failed import of ``name``: one line, the file named first (escaped, as sync names it:
    a newline in a file's name must not cut the reason off), then the reason."""
    shown = render.safe_line(name)
    if isinstance(exc, OSError):
        text = os_message(exc)
    elif isinstance(exc, SessionStoreError):
        text = str(exc).strip()
    else:
        text = describe(exc)[0]
    text = text.replace(name, shown) if name else text
    reason = text.splitlines()[0] if text.strip() else type(exc).__name__
    message = one_line(reason if reason.startswith(shown) else f"{shown}: {reason}")
    say(f"error: {message}", err=True, escaped=True)
    return import_failed_item(message, file=name)

@click.command()
@click.option("--cwd", default=None, type=TEXT, help="Working directory recorded in the header (default: current).")
@click.option("--id", "session_id", default=None, type=TEXT, help="Session id (default: a new UUID).")
@json_option
@pass_ctx
@handle_errors
def new(ctx: Ctx, cwd: str | None, session_id: str | None, as_json: bool) -> None:
    """Create an empty session and print its id."""
    if cwd is None:
        cwd = os.getcwd()
        if render.has_surrogates(cwd):
            fail(f"the name of the current directory is not valid UTF-8 ({render.safe_line(cwd)}): give --cwd")
    sid = ctx.store.create_session(cwd=cwd, session_id=session_id)
    emit_json({"sessionId": sid}) if as_json else say(sid)


def _shortcut_entry(user_text: str | None, assistant_text: str | None, model_name: str, custom_type: str | None,
                      custom_text: str | None, bash_command: str | None, bash_output: Any,
                      exit_code: int | None) -> dict[str, Any] | None:
    """The entry ``append``'s options write (``None`` without any); one of them at a time."""
    given = [name for name, value in (("--user", user_text), ("--assistant", assistant_text),
                                      ("--custom", custom_type), ("--bash", bash_command)) if value is not None]
    if len(given) > 1:
        fail(f"give one of {', '.join(given)}")
    if (custom_text is not None) != (custom_type is not None):
        fail("--custom TYPE and --text TEXT go together")
    if (bash_output is not None or exit_code is not None) and bash_command is None:
        fail("--output and --exit-code go with --bash")
    now = now_ms()
    if user_text is not None:
        return _message({"role": "user", "content": user_text, "timestamp": now})
    if assistant_text is not None:
        provider, slash, model = model_name.partition("/")
        if not slash or not provider or not model:
            fail(f"--model: expected PROVIDER/ID, got {render.safe_line(model_name)}")
        zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
        return _message({"role": "assistant", "content": [{"type": "text", "text": assistant_text}], "api": "manual",
                         "provider": provider, "model": model, "usage": zero, "stopReason": "stop", "timestamp": now})
    if custom_type is not None:
        return {"type": "custom_message", "customType": custom_type, "content": custom_text, "display": True}
    if bash_command is not None:
        raw = bash_output.read() if bash_output is not None else b""
        output = raw.decode("utf-8", "replace")
        return _message({"role": "bashExecution", "command": bash_command, "output": output,
                         "exitCode": exit_code, "cancelled": False, "truncated": False, "timestamp": now})
    return None


def _message(message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "message": message}


class EntryTypeParam(StrParam):
    """An entry kind (``models.kind_names``: read without building the kinds' models, a writer's cost)."""

    name = "type"

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        return "[" + "|".join(kind_names()) + "]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if value not in kind_names():
            self.fail(f"{value!r} is not one of {', '.join(kind_names())}", param, ctx)
        return str(value)


@click.command()
@click.argument("session", type=TEXT)
@click.argument("source", default="-", type=click.File("rb"))
@click.option("--type", "kind", type=EntryTypeParam(), default="message", show_default=True,
              help="Entry type; for 'message' the JSON is the message itself, else the entry's fields.")
@click.option("--user", "user_text", metavar="TEXT", default=None, type=TEXT, help="Append a user message.")
@click.option("--assistant", "assistant_text", metavar="TEXT", default=None, type=TEXT,
              help="Append an assistant message (of --model).")
@click.option("--model", "model_name", metavar="PROVIDER/ID", default="manual/manual", show_default=True, type=TEXT,
              help="With --assistant: the provider and model it is from.")
@click.option("--custom", "custom_type", metavar="TYPE", default=None, type=TEXT,
              help="Append a custom message of TYPE whose content is --text.")
@click.option("--text", "custom_text", metavar="TEXT", default=None, type=TEXT, help="With --custom: its content.")
@click.option("--bash", "bash_command", metavar="CMD", default=None, type=TEXT,
              help="Append a bash run of CMD (with --output FILE and --exit-code N).")
@click.option("--output", "bash_output", metavar="FILE", default=None, type=click.File("rb"),
              help="With --bash: the file holding its output (- for stdin).")
@click.option("--exit-code", "exit_code", metavar="N", default=None, type=int, help="With --bash: its exit code.")
@expected_leaf_option
@json_option
@pass_ctx
@handle_errors
@entry_prefixes("expected_leaf")
def append(ctx: Ctx, session: str, source: Any, kind: str, user_text: str | None, assistant_text: str | None,
           model_name: str, custom_type: str | None, custom_text: str | None, bash_command: str | None,
           bash_output: Any, exit_code: int | None, expected_leaf: str | None, as_json: bool) -> None:
    """Append an entry read as JSON from SOURCE (a file, or stdin by default), or written from the
    options; print its id. The entry is checked by its type's rules, as the API's append_entry
    checks it. Timestamps are filled in (a message's JSON without one gets the time now).

    A compaction is stored as given (it needs firstKeptEntryId and tokensBefore); 'sessionstore
    compact' plans one.

    \b
    Examples:
      sessionstore append 0194c2a1 --user 'Fix the failing test'
      sessionstore append 0194c2a1 --bash 'make test' --output test.log --exit-code 1
      echo '{"role": "user", "content": "hi"}' | sessionstore append 0194c2a1
      echo '{"customType": "note", "data": {"k": 1}}' | sessionstore append 0194c2a1 --type custom
    """
    shortcut = _shortcut_entry(user_text, assistant_text, model_name, custom_type, custom_text, bash_command,
                                 bash_output, exit_code)
    if shortcut is not None and kind != "message":
        fail("--user, --assistant, --custom and --bash append messages: leave out --type")
    if shortcut is not None:
        entry = shortcut
    else:
        if getattr(source, "name", None) == "<stdin>" and sys.stdin.isatty():
            say("reading the entry's JSON from the terminal; end it with Ctrl-D (or use --user TEXT)", err=True)
        data = read_json_object(source.read())
        entry = _message({**data, "timestamp": data.get("timestamp", now_ms())}) if kind == "message" \
            else {**data, "type": kind}
    sid = ctx.session_id(session)
    entry_id = ctx.store.append_entry(sid, entry, expected_leaf=_expected(expected_leaf))
    warnings = _role_warnings(entry["message"]) if entry["type"] == "message" else []
    for warning in warnings:
        say(f"warning: {warning}", err=True)
    if as_json:
        emit_json({"sessionId": sid, "entryId": entry_id, **({"warnings": warnings} if warnings else {})})
    else:
        say(entry_id)


def _role_warnings(message: dict[str, Any]) -> list[str]:
    """What to tell of a stored message whose role no one declared (pi's roles, or one an application
    registered): it is kept as given, and read as pi reads an unknown role."""
    from sessionstore.models.roles import known_roles

    role = message.get("role")
    if isinstance(role, str) and role in known_roles():
        return []
    known = ", ".join(sorted(known_roles()))
    return [f"role {render.safe_line(js_dumpb(role).decode())} is not a known role ({known};"
            " an application adds one with register_role): stored as given"]


@click.command()
@click.argument("session", type=TEXT)
@click.argument("entry", type=TEXT)
@click.option("--content", default=None, type=TEXT, help="The content the model sees instead of ENTRY's.")
@click.option("--omit", is_flag=True, help="Leave ENTRY out of the context.")
@expected_leaf_option
@json_option
@pass_ctx
@handle_errors
@entry_prefixes("entry", "expected_leaf")
def edit(ctx: Ctx, session: str, entry: str, content: str | None, omit: bool, expected_leaf: str | None,
         as_json: bool) -> None:
    """Edit what the model sees of ENTRY on this branch (pi 1.6's context edit); print the edit's id.

    ENTRY must be on the active branch and be a user, assistant or toolResult message or a custom
    message. The entry itself stays as it was: the edit is a new entry, so other branches, the export
    and the tree still show the original.

    \b
    Example:
      sessionstore edit 0194c2 a1b2c3d4 --content "(long output removed)"
      sessionstore edit 0194c2 a1b2c3d4 --omit"""
    if omit == (content is not None):
        fail("give exactly one of --content TEXT and --omit")
    sid = ctx.session_id(session)
    replacement = None if omit else {"content": content}
    entry_id = ctx.store.append_context_edit(sid, entry, replacement, expected_leaf=_expected(expected_leaf))
    emit_json({"sessionId": sid, "entryId": entry_id}) if as_json else say(entry_id)


@click.command()
@click.argument("session", type=TEXT)
@click.argument("entry", type=TEXT)
@click.option("--summary", default=None, type=TEXT, help="Leave a branch_summary of the abandoned branch at ENTRY.")
@expected_leaf_option
@pass_ctx
@handle_errors
@entry_prefixes("entry", "expected_leaf")
def branch(ctx: Ctx, session: str, entry: str, summary: str | None, expected_leaf: str | None) -> None:
    """Move the leaf to ENTRY ('none': before the first entry); the next append branches there."""
    sid = ctx.session_id(session)
    target = None if entry == "none" else entry
    if summary is not None:
        say(ctx.store.branch_with_summary(sid, target, summary, expected_leaf=_expected(expected_leaf)))
    elif target is None:
        ctx.store.reset_leaf(sid, expected_leaf=_expected(expected_leaf))
    else:
        ctx.store.branch(sid, target, expected_leaf=_expected(expected_leaf))


@click.command()
@click.argument("session", type=TEXT)
@click.option("--leaf", metavar="ENTRY_ID", default=None, type=TEXT, help="Fork at this entry (default: the leaf).")
@json_option
@pass_ctx
@handle_errors
@entry_prefixes("leaf")
def fork(ctx: Ctx, session: str, leaf: str | None, as_json: bool) -> None:
    """Copy the path root..leaf into a new session; print its id."""
    sid = ctx.session_id(session)
    new_id = ctx.store.fork(sid, leaf_id=UNSET if leaf is None else leaf)
    emit_json({"sessionId": new_id, "parentSession": sid}) if as_json else say(new_id)


@click.command()
@click.argument("session", type=TEXT)
@click.argument("entry", type=TEXT)
@click.argument("text", required=False, type=TEXT)
@pass_ctx
@handle_errors
@entry_prefixes("entry")
def label(ctx: Ctx, session: str, entry: str, text: str | None) -> None:
    """Label ENTRY with TEXT (no TEXT clears the label)."""
    say(ctx.store.append_label(ctx.session_id(session), entry, text))


@click.command()
@click.argument("session", type=TEXT)
@click.argument("text", type=TEXT)
@pass_ctx
@handle_errors
def name(ctx: Ctx, session: str, text: str) -> None:
    """Name the session."""
    say(ctx.store.append_session_info(ctx.session_id(session), text))


@click.command()
@click.argument("session", type=TEXT)
@click.option("--summary", default=None, type=TEXT, help="The summary of what is compacted away.")
@click.option("--summary-file", default=None, type=click.File("rb"), metavar="FILE",
              help="Read the summary from FILE (- for stdin).")
@click.option("--keep-recent-tokens", type=click.IntRange(min=0), default=20000, show_default=True)
@click.option("--first-kept", metavar="ENTRY_ID", default=None, type=TEXT,
              help="Keep from this entry (default: planned).")
@click.option("--plan", "plan_only", is_flag=True,
              help="Print what would be summarised, or why nothing would be (exit 0); write nothing."
                   " --json: {\"compact\": true, the plan...} or {\"compact\": false, \"reason\": ...}.")
@json_option
@pass_ctx
@handle_errors
@entry_prefixes("first_kept")
def compact(ctx: Ctx, session: str, summary: str | None, summary_file: Any, keep_recent_tokens: int,
            first_kept: str | None, plan_only: bool, as_json: bool) -> None:
    """Compact the history before a cut that keeps about --keep-recent-tokens."""
    sid = ctx.session_id(session)
    if plan_only:
        if as_json:
            emit_json(compaction_plan(ctx.store, sid, keep_recent_tokens))
            return
        from sessionstore.context.compaction import plan_or_reason

        plan = plan_or_reason(ctx.store.path(sid), keep_recent_tokens=keep_recent_tokens)
        if isinstance(plan, str):  # an answer, not a failure: the plan is that there is nothing to do
            say(f"nothing to compact: {plan}")
            return
        say(f"first kept entry: {plan.first_kept_entry_id}{' (splits a turn)' if plan.is_split_turn else ''}")
        say(f"tokens before: {plan.tokens_before} (estimated {plan.estimated_tokens_before}); "
                   f"kept: ~{plan.kept_tokens}")
        say(f"messages to summarise: {len(plan.messages_to_summarize)}"
                   f" (+{len(plan.turn_prefix_messages)} of the split turn)")
        for message in plan.messages_to_summarize + plan.turn_prefix_messages:
            lines = render.message_lines(message, 120)
            say(f"  {lines[0]}: {' '.join(line.strip() for line in lines[1:2])}")
        return
    if summary is not None and summary_file is not None:
        fail("give --summary or --summary-file, not both")
    if summary_file is not None:
        raw = summary_file.read()
        try:
            summary = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            fail(f"--summary-file: not UTF-8 text (byte {exc.start})")
        if not summary:
            fail("--summary-file: the summary is empty")
    if summary is None:
        fail("--summary TEXT or --summary-file FILE is required (or use --plan)")
        return
    entry_id = ctx.store.compact(sid, summary=summary, first_kept_entry_id=first_kept,
                                 keep_recent_tokens=keep_recent_tokens)
    emit_json({"sessionId": sid, "entryId": entry_id}) if as_json else say(entry_id)


RM_PREFIX = 8
"""The shortest session-id prefix ``rm`` takes (``rm 5`` in a script must not delete a session)."""


@click.command("rm")
@click.argument("session", type=TEXT)
@click.option("--yes", is_flag=True, help="Do not ask (needed when stdin is not a terminal).")
@pass_ctx
@handle_errors
def rm_cmd(ctx: Ctx, session: str, yes: bool) -> None:
    """Delete a session and all its entries. SESSION is its full id or a unique prefix of at least 8
    characters; on a terminal it asks first, elsewhere it refuses without --yes. A synced session's
    file is left, and sync does not import it again unless --include-deleted.

    \b
    Example:
      sessionstore rm 0194c2a1 --yes
    """
    sid = ctx.session_id(session)
    if session != sid and len(session) < RM_PREFIX:
        fail(f"rm takes the full session id or a prefix of at least {RM_PREFIX} characters"
             f" ({render.safe_line(session)} would delete {sid})")
    if not yes:
        if not sys.stdin.isatty():
            fail(f"not deleting {sid} without --yes (stdin is not a terminal to ask on)")
        click.confirm(f"delete session {sid}?", abort=True)
    synced_from = ctx.store.session(sid).source_path
    ctx.store.delete_session(sid)
    say(f"deleted {sid}", err=True)
    if synced_from is not None:
        say(f"it was synced from {synced_from}, which stays; sync will not import it again"
            " (sync --include-deleted does)", err=True)

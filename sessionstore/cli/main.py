"""The ``sessionstore`` command line: a thin layer over :mod:`sessionstore.api`.

Data goes to stdout (``--json`` for machines), messages and progress to stderr; an error prints
one line on stderr and exits with status 2 (``validate`` exits 1 when it finds errors).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from sessionstore.api import SessionStore
from sessionstore.cli import render
from sessionstore.errors import SessionNotFoundError, SessionStoreError
from sessionstore.store.engine import ENV_URL, default_db_path
from sessionstore.store.store import UNSET
from sessionstore.validate import ERROR_CODES

F = TypeVar("F", bound=Callable[..., Any])
PROGRESS_MIN_BYTES = 1 << 20


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2))


def fail(message: str, code: int = 2) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def handle_errors(func: F) -> F:
    """Turn library errors and bad input into one line on stderr and exit status 2."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except BrokenPipeError:
            # The reader went away (`sessionstore context X | head`): stop quietly, as `cat` does.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(0)
        except SessionStoreError as exc:
            fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        except OSError as exc:
            fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
        except json.JSONDecodeError as exc:
            fail(f"invalid JSON input: {exc}")

    return wrapper  # type: ignore[return-value]


class Ctx:
    def __init__(self, url: str | None, durability: str) -> None:
        self.url = url
        self.durability = durability
        self._store: SessionStore | None = None

    @property
    def store(self) -> SessionStore:
        if self._store is None:
            self._store = SessionStore(self.url, durability=self.durability)  # type: ignore[arg-type]
        return self._store

    def session_id(self, given: str) -> str:
        """An exact session id, or a unique prefix of one."""
        ids = [info.id for info in self.store.list_sessions()]
        if given in ids:
            return given
        matches = [i for i in ids if i.startswith(given)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise SessionNotFoundError(f"{given} (ambiguous: {len(matches)} sessions start with it)")
        raise SessionNotFoundError(given)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


pass_ctx = click.make_pass_decorator(Ctx)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON (pi's field names) instead of text.")
expected_leaf_option = click.option(
    "--expected-leaf",
    metavar="ENTRY",
    default=None,
    help="Refuse (exit 2, nothing written) unless the session's leaf is still ENTRY ('none' for no leaf).",
)


def _expected(value: str | None) -> Any:
    if value is None:
        return UNSET
    return None if value == "none" else value


@click.group(
    help=f"""Store, resume, branch and compact coding-agent sessions (pi-compatible JSONL).

The database is --db URL, else ${ENV_URL}, else the SQLite file
{default_db_path()} (created on first use). PostgreSQL: postgresql://user@host/db
(pip install 'sessionstore[postgres]').

SESSION arguments accept a unique prefix of a session id."""
)
@click.option("--db", "url", metavar="URL", envvar=ENV_URL, default=None, show_envvar=True,
              help=f"Database URL (default: sqlite:///{default_db_path()}).")
@click.option("--durability", type=click.Choice(["full", "normal"]), default="full", show_default=True,
              help="SQLite synchronous mode: full survives power loss; normal is faster (see README).")
@click.version_option(package_name="sessionstore")
@click.pass_context
def cli(context: click.Context, url: str | None, durability: str) -> None:
    context.obj = Ctx(url, durability)
    context.call_on_close(context.obj.close)


# -- import / export / read -------------------------------------------------------------------
@cli.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--lenient", is_flag=True, help="Skip bad lines (and entries below them) and report them.")
@click.option("--replace", is_flag=True, help="Replace a session with the same id (in the same transaction).")
@click.option("--silent", is_flag=True, help="No progress bar.")
@json_option
@pass_ctx
@handle_errors
def import_cmd(ctx: Ctx, files: tuple[str, ...], lenient: bool, replace: bool, silent: bool, as_json: bool) -> None:
    """Import pi session files (JSONL v1-v3); print each new session id.

    Each file is imported in one transaction: a file with a bad line leaves nothing behind."""
    results = []
    for name in files:
        source: Any = sys.stdin.buffer if name == "-" else name
        size = 0 if name == "-" else Path(name).stat().st_size
        if silent or size < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
            result = ctx.store.import_jsonl(source, lenient=lenient, replace=replace)
        else:
            with click.progressbar(length=size, label=f"importing {name}", file=sys.stderr) as bar:
                done = [0]

                def advance(read: int, bar: Any = bar, done: list[int] = done) -> None:
                    bar.update(read - done[0])
                    done[0] = read

                result = ctx.store.import_jsonl(source, lenient=lenient, replace=replace, progress=advance)
        results.append(result)
        if not as_json:
            click.echo(result.session_id)
            for skipped in result.skipped:
                click.echo(f"skipped {name}:{skipped.line}: {skipped.reason}", err=True)
    if as_json:
        payload = [r.to_json() for r in results]
        emit_json(payload[0] if len(payload) == 1 else payload)


@cli.command()
@click.argument("session")
@click.option("--leaf", "leaf", metavar="ENTRY_ID", default=None, help="Build the context at this entry.")
@click.option("--provider-safe", is_flag=True, help="Drop error/aborted turns, add results for unanswered calls.")
@click.option("--full", is_flag=True, help="Do not shorten long texts in the readable output.")
@json_option
@pass_ctx
@handle_errors
def context(ctx: Ctx, session: str, leaf: str | None, provider_safe: bool, full: bool, as_json: bool) -> None:
    """Show what a model call at the leaf gets: messages, provider messages, diagnostics."""
    result = ctx.store.context(
        ctx.session_id(session), leaf_id=UNSET if leaf is None else leaf, provider_safe=provider_safe
    )
    if as_json:
        emit_json(result.to_json())
    else:
        click.echo(render.render_context(result, limit=None if full else 400))


@cli.command()
@click.argument("session")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default="-",
              help="File to write (default: stdout).")
@pass_ctx
@handle_errors
def export(ctx: Ctx, session: str, output: str) -> None:
    """Export a session as a pi v3 JSONL file (entries in append order)."""
    session_id = ctx.session_id(session)
    if output == "-":
        ctx.store.export_jsonl(session_id, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    target = Path(output)
    partial = target.with_name(target.name + ".partial")
    with open(partial, "wb") as fp:
        count = ctx.store.export_jsonl(session_id, fp)
    partial.replace(target)
    click.echo(f"wrote {count} entries to {target}", err=True)


@cli.command()
@click.argument("session")
@click.option("--leaf", metavar="ENTRY_ID", default=None, help="Validate the context at this entry.")
@json_option
@pass_ctx
@handle_errors
def validate(ctx: Ctx, session: str, leaf: str | None, as_json: bool) -> None:
    """Validate the context at the leaf; exit 1 when a shape or linkage error is found."""
    session_id = ctx.session_id(session)
    diagnostics = ctx.store.validate(session_id, leaf_id=UNSET if leaf is None else leaf)
    errors = [d for d in diagnostics if d.code in ERROR_CODES]
    if as_json:
        emit_json({"sessionId": session_id, "valid": not errors, "diagnostics": [d.to_json() for d in diagnostics]})
    else:
        click.echo(render.render_diagnostics(diagnostics))
    if errors:
        sys.exit(1)


@cli.command("ls")
@click.option("--cwd", default=None, help="Only sessions started in this directory.")
@json_option
@pass_ctx
@handle_errors
def ls_cmd(ctx: Ctx, cwd: str | None, as_json: bool) -> None:
    """List sessions, newest first."""
    infos = ctx.store.list_sessions(cwd=cwd)
    if as_json:
        emit_json([i.to_json() for i in infos])
    else:
        click.echo(render.render_sessions(infos))


@cli.command()
@click.argument("session")
@json_option
@pass_ctx
@handle_errors
def tree(ctx: Ctx, session: str, as_json: bool) -> None:
    """Show the entry tree with labels; * marks the active path."""
    roots = ctx.store.tree(ctx.session_id(session))
    if as_json:
        emit_json([r.to_json() for r in roots])
    else:
        click.echo(render.render_tree(roots))


@cli.command()
@click.argument("session")
@click.argument("entry")
@pass_ctx
@handle_errors
def show(ctx: Ctx, session: str, entry: str) -> None:
    """Print one entry as JSON."""
    emit_json(ctx.store.entry(ctx.session_id(session), entry))


# -- writing ----------------------------------------------------------------------------------
@cli.command()
@click.option("--cwd", default=None, help="Working directory recorded in the header (default: current).")
@click.option("--id", "session_id", default=None, help="Session id (default: a new UUID).")
@json_option
@pass_ctx
@handle_errors
def new(ctx: Ctx, cwd: str | None, session_id: str | None, as_json: bool) -> None:
    """Create an empty session and print its id."""
    sid = ctx.store.create_session(cwd=cwd or str(Path.cwd()), session_id=session_id)
    emit_json({"sessionId": sid}) if as_json else click.echo(sid)


APPEND_TYPES = ["message", "model_change", "thinking_level_change", "custom", "custom_message", "label",
                "session_info", "compaction", "branch_summary"]


@cli.command()
@click.argument("session")
@click.argument("source", default="-", type=click.File("rb"))
@click.option("--type", "kind", type=click.Choice(APPEND_TYPES), default="message", show_default=True,
              help="Entry type; for 'message' the JSON is the message itself.")
@expected_leaf_option
@json_option
@pass_ctx
@handle_errors
def append(ctx: Ctx, session: str, source: Any, kind: str, expected_leaf: str | None, as_json: bool) -> None:
    """Append an entry read as JSON from SOURCE (a file, or stdin by default); print its id."""
    data = json.loads(source.read() or b"null")
    if not isinstance(data, dict):
        fail("the JSON must be an object")
    sid = ctx.session_id(session)
    store = ctx.store
    if kind == "message":
        entry_id = store.append_message(sid, data, expected_leaf=_expected(expected_leaf))
    elif kind == "compaction":
        entry_id = store.compact(
            sid,
            summary=data.get("summary", ""),
            first_kept_entry_id=data.get("firstKeptEntryId"),
            tokens_before=data.get("tokensBefore"),
            details=data.get("details"),
            expected_leaf=_expected(expected_leaf),
        )
    else:
        entry_id = store.append_entry(sid, {**data, "type": kind}, expected_leaf=_expected(expected_leaf))
    emit_json({"sessionId": sid, "entryId": entry_id}) if as_json else click.echo(entry_id)


@cli.command()
@click.argument("session")
@click.argument("entry")
@click.option("--summary", default=None, help="Leave a branch_summary of the abandoned branch at ENTRY.")
@expected_leaf_option
@pass_ctx
@handle_errors
def branch(ctx: Ctx, session: str, entry: str, summary: str | None, expected_leaf: str | None) -> None:
    """Move the leaf to ENTRY ('none': before the first entry); the next append branches there."""
    sid = ctx.session_id(session)
    target = None if entry == "none" else entry
    if summary is not None:
        click.echo(ctx.store.branch_with_summary(sid, target, summary, expected_leaf=_expected(expected_leaf)))
    elif target is None:
        ctx.store.reset_leaf(sid, expected_leaf=_expected(expected_leaf))
    else:
        ctx.store.branch(sid, target, expected_leaf=_expected(expected_leaf))


@cli.command()
@click.argument("session")
@click.option("--leaf", metavar="ENTRY_ID", default=None, help="Fork at this entry (default: the leaf).")
@json_option
@pass_ctx
@handle_errors
def fork(ctx: Ctx, session: str, leaf: str | None, as_json: bool) -> None:
    """Copy the path root..leaf into a new session; print its id."""
    sid = ctx.session_id(session)
    new_id = ctx.store.fork(sid, leaf_id=UNSET if leaf is None else leaf)
    emit_json({"sessionId": new_id, "parentSession": sid}) if as_json else click.echo(new_id)


@cli.command()
@click.argument("session")
@click.argument("entry")
@click.argument("text", required=False)
@pass_ctx
@handle_errors
def label(ctx: Ctx, session: str, entry: str, text: str | None) -> None:
    """Label ENTRY with TEXT (no TEXT clears the label)."""
    click.echo(ctx.store.append_label(ctx.session_id(session), entry, text))


@cli.command()
@click.argument("session")
@click.argument("text")
@pass_ctx
@handle_errors
def name(ctx: Ctx, session: str, text: str) -> None:
    """Name the session."""
    click.echo(ctx.store.append_session_info(ctx.session_id(session), text))


@cli.command()
@click.argument("session")
@click.option("--summary", default=None, help="The summary of what is compacted away.")
@click.option("--keep-recent-tokens", type=click.IntRange(min=0), default=20000, show_default=True)
@click.option("--first-kept", metavar="ENTRY_ID", default=None, help="Keep from this entry (default: planned).")
@click.option("--plan", "plan_only", is_flag=True, help="Print what would be summarised; write nothing.")
@json_option
@pass_ctx
@handle_errors
def compact(ctx: Ctx, session: str, summary: str | None, keep_recent_tokens: int, first_kept: str | None,
            plan_only: bool, as_json: bool) -> None:
    """Compact the history before a cut that keeps about --keep-recent-tokens."""
    sid = ctx.session_id(session)
    if plan_only:
        plan = ctx.store.plan_compaction(sid, keep_recent_tokens=keep_recent_tokens)
        if plan is None:
            fail("nothing to compact (no entries, or the leaf is a compaction)")
            return
        if as_json:
            emit_json(plan.to_json())
            return
        click.echo(f"first kept entry: {plan.first_kept_entry_id}{' (splits a turn)' if plan.is_split_turn else ''}")
        click.echo(f"tokens before: {plan.tokens_before} (estimated {plan.estimated_tokens_before}); "
                   f"kept: ~{plan.kept_tokens}")
        click.echo(f"messages to summarise: {len(plan.messages_to_summarize)}"
                   f" (+{len(plan.turn_prefix_messages)} of the split turn)")
        for message in plan.messages_to_summarize + plan.turn_prefix_messages:
            lines = render.message_lines(message, 120)
            click.echo(f"  {lines[0]}: {' '.join(line.strip() for line in lines[1:2])}")
        return
    if summary is None:
        fail("--summary TEXT is required (or use --plan)")
        return
    entry_id = ctx.store.compact(sid, summary=summary, first_kept_entry_id=first_kept,
                                 keep_recent_tokens=keep_recent_tokens)
    emit_json({"sessionId": sid, "entryId": entry_id}) if as_json else click.echo(entry_id)


@cli.command("rm")
@click.argument("session")
@click.option("--yes", is_flag=True, help="Do not ask.")
@pass_ctx
@handle_errors
def rm_cmd(ctx: Ctx, session: str, yes: bool) -> None:
    """Delete a session and all its entries."""
    sid = ctx.session_id(session)
    if not yes and sys.stdin.isatty():
        click.confirm(f"delete session {sid}?", abort=True)
    ctx.store.delete_session(sid)
    click.echo(f"deleted {sid}", err=True)


@cli.command()
@click.option("--export-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to write the exported JSONL (default: the temporary directory).")
@pass_ctx
@handle_errors
def demo(ctx: Ctx, export_dir: Path | None) -> None:
    """Record a scripted tool-using conversation from the bundled provider fixture, then branch, fork,
    compact, export and resume it, and print the context, the tree and the validation report."""
    from sessionstore.demo import run_demo

    result = run_demo(ctx.url, export_dir=export_dir, say=lambda line: click.echo(line))
    with SessionStore(ctx.url) as store:
        click.echo("")
        click.echo(f"== tree of session {result.session_id} ==")
        click.echo(render.render_tree(store.tree(result.session_id)))
        click.echo("")
        click.echo(f"== context of the fork {result.fork_id}, resumed from the database ==")
        click.echo(render.render_context(result.context))
        click.echo("")
        click.echo("== validation ==")
        for sid in (result.session_id, result.fork_id):
            diagnostics = store.validate(sid)
            verdict = "valid" if not any(d.code in ERROR_CODES for d in diagnostics) else "INVALID"
            click.echo(f"session {sid}: {verdict}; {render.render_diagnostics(diagnostics)}")


# -- schema -----------------------------------------------------------------------------------
@cli.group()
def db() -> None:
    """Schema management (Alembic)."""


@contextmanager
def _engine(ctx: Ctx) -> Iterator[Any]:
    from sessionstore.store.engine import default_url, make_engine

    engine = make_engine(ctx.url or default_url())
    try:
        yield engine
    finally:
        engine.dispose()


@db.command()
@pass_ctx
@handle_errors
def upgrade(ctx: Ctx) -> None:
    """Upgrade the schema to this version's head (the only way on PostgreSQL)."""
    from sessionstore.store import migrate

    with _engine(ctx) as engine:
        click.echo(f"schema at {migrate.upgrade(engine)}")


@db.command()
@pass_ctx
@handle_errors
def current(ctx: Ctx) -> None:
    """Print the schema revision of the database."""
    from sessionstore.store import migrate

    with _engine(ctx) as engine, engine.connect() as conn:
        click.echo(migrate.current_revision(conn) or "none")


@db.command()
@pass_ctx
@handle_errors
def check(ctx: Ctx) -> None:
    """Exit 0 when the schema is current, else say what to run and exit 2."""
    from sessionstore.store import migrate

    with _engine(ctx) as engine, engine.connect() as conn:
        migrate.check(conn)
    click.echo("schema is current")

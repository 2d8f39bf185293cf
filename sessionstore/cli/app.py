"""The ``sessionstore`` command line: a thin layer over :mod:`sessionstore.api`.

Data goes to stdout (``--json`` for machines), messages and progress to stderr; an error prints
one line on stderr and exits with status 2 (``validate`` exits 1 when it finds errors).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from functools import wraps
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeVar, cast

import click

from sessionstore.cli import render
from sessionstore.errors import (
    BackendUnavailableError,
    InvalidInputError,
    SchemaError,
    SessionExistsError,
    SessionNotFoundError,
    SessionStoreError,
    StoreError,
)
from sessionstore.models import js
from sessionstore.models.timestamps import now_ms
from sessionstore.store.location import ENV_URL, database_url, default_db_path, default_url
from sessionstore.store.records import UNSET, _Unset
from sessionstore.store.tenant import DEFAULT_TENANT, ENV_TENANT, check_tenant
from sessionstore.validate import ERROR_CODES
from sessionstore.views import (
    compaction_plan,
    context_payload,
    import_exists_item,
    import_failed_item,
    import_item,
    json_bytes,
    json_line,
    session_item,
    session_list,
)
from sessionstore.wire.codec import LineRefused, parse_line
from sessionstore.wire.jsjson import js_dumpb

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from sessionstore.api import SessionStore
    from sessionstore.client import RemoteSessionStore

    Store = SessionStore | RemoteSessionStore
    """What the commands work on: the database itself, or a ``sessionstore serve`` (``--db http://...``)."""

F = TypeVar("F", bound=Callable[..., Any])
PROGRESS_MIN_BYTES = 1 << 20
REPORT = "please report this with the command you ran"


# -- output -----------------------------------------------------------------------------------
def _write(data: bytes, *, err: bool = False) -> None:
    """Bytes to stdout/stderr, past the text layer (whose encoding may not be UTF-8, or may be strict)."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # started with the descriptor closed (`sessionstore ls >&-`)
        if err:
            return
        raise OSError(errno.EBADF, "standard output is closed")
    stream.flush()
    binary = getattr(stream, "buffer", None)
    if binary is not None:
        binary.write(data)
        binary.flush()
        return
    # a text-only stream (an embedding's capture): hand it text it can hold
    text = data.decode("utf-8", "replace")
    try:
        stream.write(text)
    except UnicodeEncodeError:
        stream.write(text.encode("ascii", "backslashreplace").decode("ascii"))
    stream.flush()


def say(text: str = "", *, err: bool = False, escaped: bool = False) -> None:
    """A line for people: terminal controls and lone surrogates escaped (see ``render.safe_text``;
    ``escaped``: the text was escaped already, and its own colour codes stay), characters the stream's
    encoding lacks written as backslash escapes, never an encoding error."""
    stream = sys.stderr if err else sys.stdout
    encoding = getattr(stream, "encoding", None) or "utf-8"
    shown = text if escaped else render.safe_text(text)
    try:
        data = (shown + "\n").encode(encoding, "backslashreplace")
    except LookupError:  # an encoding Python does not know
        data = (shown + "\n").encode("utf-8", "backslashreplace")
    _write(data, err=err)


def terminal_columns() -> int | None:
    """The width text output fits: ``$COLUMNS`` when it is a positive integer, else the terminal's
    when stdout is one, else ``None`` (a pipe or a file: lines are not cut)."""
    given = os.environ.get("COLUMNS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns if sys.stdout.isatty() else None
    except (OSError, ValueError, AttributeError):
        return None


def emit_json(value: Any) -> None:
    """``JSON.stringify(value, null, 2)`` as pi would write it, UTF-8 whatever the locale."""
    _write(json_bytes(value))


def emit_json_lines(values: Iterable[Any]) -> None:
    """``--nl``: one compact JSON value per line, each written as soon as it is made."""
    for value in values:
        _write(json_line(value))


def one_line(message: str) -> str:
    return " ".join(render.safe_line(part) for part in message.splitlines() if part.strip()) or "(no message)"


def fail(message: str, code: int = 2) -> NoReturn:
    say(f"error: {one_line(message)}", err=True)
    sys.exit(code)


# -- errors -----------------------------------------------------------------------------------
class DatabaseProblem(Exception):
    """The database at ``label`` cannot be used; ``reason`` says why (one line)."""

    def __init__(self, label: str, reason: str) -> None:
        super().__init__(f"database {label}: {reason}")


def _type_name(exc: BaseException) -> str:
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _driver_message(exc: BaseException) -> str:
    """The driver's own words for a database error (not SQLAlchemy's wrapping and background link)."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        orig = getattr(exc, "orig", None)
        if isinstance(orig, BaseException):
            exc = orig
            continue
        if isinstance(exc, StoreError) and exc.__cause__ is not None:
            exc = exc.__cause__
            continue
        break
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return first


def _os_message(exc: OSError) -> str:
    where = exc.filename if exc.filename is not None else ""
    what = exc.strerror or str(exc) or type(exc).__name__
    return f"{where}: {what}" if where else what


def describe(exc: BaseException) -> tuple[str, int]:
    """The one line (after ``error: ``) and the exit status that report ``exc``."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", 130
    if isinstance(exc, DatabaseProblem):
        return str(exc), 2
    if isinstance(exc, StoreError) and exc.__cause__ is not None:  # the driver's error, chained
        return _in_database(exc), 2
    if isinstance(exc, SessionStoreError):
        text = str(exc).strip()
        return (text.splitlines()[0] if text else type(exc).__name__), 2
    if isinstance(exc, OSError):
        return _os_message(exc), 2
    if isinstance(exc, MemoryError):
        return "out of memory", 2
    if _is_validation_error(exc):  # a library check that did not say it in its own words
        from sessionstore.wire.jsonl import format_validation_error

        return f"invalid input: {format_validation_error(exc)}", 2  # type: ignore[arg-type]
    message = str(exc).strip()
    message = f": {message}" if message else ""
    return f"internal error: {_type_name(exc)}{message} ({REPORT})", 2


def _is_validation_error(exc: BaseException) -> bool:
    """A pydantic ``ValidationError`` (without importing pydantic: a command that never loaded it
    cannot have raised one)."""
    core = sys.modules.get("pydantic_core")
    return core is not None and isinstance(exc, core.ValidationError)


def _in_database(exc: BaseException) -> str:
    """A driver error met while running a command, naming the command's database."""
    context = click.get_current_context(silent=True)
    state = context.find_object(Ctx) if context is not None else None
    if state is None:
        return f"database error: {_driver_message(exc)}"
    url = state.resolved_url
    return f"database {db_label(url)}: {_database_reason(exc, url)}"


_PASS_THROUGH = (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort)


@contextmanager
def reported_errors() -> Iterator[None]:
    """Whatever goes wrong inside becomes one ``error:`` line on stderr and exit status 2 (130 for
    an interrupt); ``SystemExit`` and click's own exceptions pass untouched."""
    try:
        yield
    except _PASS_THROUGH:
        raise
    except BrokenPipeError:
        # The reader went away (`sessionstore context X | head`): stop quietly, as `cat` does.
        with suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except (Exception, KeyboardInterrupt) as exc:
        message, code = describe(exc)
        try:
            fail(message, code)
        except BrokenPipeError:  # stderr went away too
            sys.exit(code)


def handle_errors(func: F) -> F:
    """Turn any failure into one line on stderr and exit status 2 (see :func:`reported_errors`)."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with reported_errors():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


# -- the database -----------------------------------------------------------------------------
def _parsed_url(url: str) -> URL:
    from sqlalchemy.engine import make_url

    return make_url(url)


KEEPS_NOTHING = ("an in-memory database keeps nothing after the command: give a SQLite file"
                 " (--db ./sessions.db, --db sqlite:////abs/path.db) or a postgresql:// URL")


def command_line_url(given: str) -> str:
    """The URL ``--db`` (or ``$SESSIONSTORE_DB``) names (:func:`database_url`), refused in one line when it
    is empty, does not parse, or is an in-memory SQLite database (``sqlite://``, ``sqlite:///``,
    ``:memory:``, ``mode=memory``): each command runs in its own process, so nothing it wrote would be
    kept. (The library accepts an in-memory database.)"""
    from sessionstore.store.sqlite_file import plain_path

    if not given.strip():
        fail(f"--db is empty: {KEEPS_NOTHING.partition(': ')[2]}")
    if is_server_url(given):
        return _server_url(given)
    url = database_url(given)
    if not url.startswith("sqlite") or plain_path(url) is not None:  # (no SQLAlchemy for the usual cases)
        return url
    try:
        parsed = _parsed_url(url)
    except Exception as exc:  # (SQLAlchemy's parser raises ValueError and its own ArgumentError)
        fail(f"--db {render.safe_line(given)}: not a database URL ({one_line(str(exc))})")
    database = parsed.database or ""
    if parsed.get_backend_name() == "sqlite" and not parsed.host and (  # (a host: its own error, later)
        database in ("", ":memory:") or "mode=memory" in database or parsed.query.get("mode") == "memory"
    ):
        fail(f"--db {render.safe_line(given)}: {KEEPS_NOTHING}")
    return url


ENV_TOKEN = "SESSIONSTORE_TOKEN"
"""The token (``ss_...``) the commands present to a server named by ``--db http(s)://...``."""

LOCAL_ONLY_COMMANDS = frozenset({"sync", "db", "token", "serve", "demo"})
"""Commands that need the database itself: each refuses a server URL before doing anything."""


def is_server_url(url: str) -> bool:
    """Whether ``--db`` names a ``sessionstore serve`` (``http://HOST:PORT``, ``https://...``)."""
    return url.lower().startswith(("http://", "https://"))


def _server_url(given: str) -> str:
    """A server URL as given, refused in one line when it has no host, a bad port, or spaces or
    control characters (which no HTTP request can carry)."""
    import urllib.parse

    try:
        parts = urllib.parse.urlsplit(given)
        parts.port  # noqa: B018 - (parsed on access: a bad port raises here, not in the first request)
    except ValueError as exc:
        fail(f"--db {render.safe_line(given)}: not a server URL ({one_line(str(exc))}): give http://HOST:PORT")
    if not parts.hostname or any(c.isspace() or not c.isprintable() for c in given):
        fail(f"--db {render.safe_line(given)}: not a server URL: give http://HOST:PORT")
    return given


def db_label(url: str) -> str:
    """How an error names the database: a SQLite file's path, a server's URL, else the URL without its
    password."""
    from sessionstore.store.sqlite_file import plain_path

    if is_server_url(url):
        return url

    path = plain_path(url)
    if path is not None:  # (what SQLAlchemy's parser gives for it, without loading SQLAlchemy)
        return path
    try:
        parsed = _parsed_url(url)
    except Exception:
        return repr(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database and not parsed.host:
        return parsed.database
    try:
        return parsed.render_as_string(hide_password=True)
    except Exception:  # pragma: no cover - a URL that parsed renders
        return repr(url)


def _sqlite_hint(url: str) -> str:
    """Why a SQLite file may not open, from what the file system says (error path only)."""
    try:
        parsed = _parsed_url(url)
    except Exception:
        return ""
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database.startswith("file:"):
        return ""
    path = Path(parsed.database).expanduser()
    try:
        if path.is_dir():
            return "it is a directory, not a database file"
        if path.exists() and not os.access(path, os.W_OK):
            return "the file is read-only"
        if not os.access(path.parent, os.W_OK | os.X_OK):
            return (f"its directory {path.parent} is not writable, and SQLite needs to create {path.name}-wal"
                    f" and {path.name}-shm beside the file")
    except OSError:
        return ""
    return ""


def _relative_hint(url: str) -> str:
    """For a missing file named by a relative ``sqlite:///`` URL: the absolute one it may have meant."""
    from sessionstore.store.sqlite_file import plain_path

    path = plain_path(url)
    if path is None or os.path.isabs(path):
        return ""
    return (f"{url} is relative to the working directory; sqlite:////{path} (four slashes) is /{path},"
            f" and a plain path is taken as it is")


def _database_reason(exc: BaseException, url: str) -> str:
    if isinstance(exc, StoreError):
        reason = _driver_message(exc)
        if "no such database file" in reason:  # (make_engine's words for create=False)
            reason += " (a command that only reads does not create a database)"
            hint = _relative_hint(url)
        else:
            hint = _sqlite_hint(url)
        return f"{reason}: {hint}" if hint and hint not in reason else reason
    if isinstance(exc, OSError):
        if exc.filename is not None and db_label(url) == str(exc.filename):
            return exc.strerror or str(exc)
        return _os_message(exc)
    return describe(exc)[0]


@contextmanager
def database_errors(url: str) -> Iterator[None]:
    """Errors that opening or checking the database at ``url`` raises name that database."""
    try:
        yield
    except _PASS_THROUGH:
        raise
    except (SessionStoreError, OSError) as exc:
        if isinstance(exc, SessionStoreError) and not isinstance(exc, StoreError | SchemaError):
            raise  # a bad URL or a missing driver: the message names the URL or the driver
        raise DatabaseProblem(db_label(url), _database_reason(exc, url)) from exc


READ_ONLY_COMMANDS = frozenset({"context", "export", "validate", "ls", "tree", "show", "payload", "search", "stats",
                                "tail"})
"""Commands that only read: they open an existing database and never create one (nor its schema)."""


class Ctx:
    def __init__(self, url: str | None, durability: str, *, create: bool = True, tenant: str = DEFAULT_TENANT) -> None:
        self.url = url
        self.durability = durability
        self.tenant = tenant
        """Whose sessions every command reads and writes (``--tenant``)."""
        self.create = create
        """Whether opening may create the database (a command that writes), or needs it to exist."""
        self._store: Store | None = None
        self._local: SessionStore | None = None
        self._session_ids: dict[str, str] = {}

    @property
    def resolved_url(self) -> str:
        return self.url or default_url()

    @property
    def store(self) -> Store:
        """The store the commands work on: a :class:`~sessionstore.client.RemoteSessionStore` with
        ``$SESSIONSTORE_TOKEN`` for a server URL (its tenant is the token's), else the database."""
        if self._store is None:
            if self.url is not None and is_server_url(self.url):
                from sessionstore.client import RemoteSessionStore

                self._store = RemoteSessionStore(self.url, token=os.environ.get(ENV_TOKEN) or None)
                return self._store
            self._store = self.local_store
        return self._store

    @property
    def local_store(self) -> SessionStore:
        """The database itself, for the commands that need it (:data:`LOCAL_ONLY_COMMANDS`, which
        refuse a server URL before they run)."""
        if self._local is None:
            if self.url is not None and is_server_url(self.url):  # (a caller that did not check first)
                raise InvalidInputError("this command works on the database itself, not on a server")
            with database_errors(self.resolved_url):
                from sessionstore.api import SessionStore

                self._local = SessionStore(self.url, durability=self.durability,  # type: ignore[arg-type]
                                           create=self.create, tenant=self.tenant)
            self._store = self._local
        return self._local

    def session_id(self, given: str) -> str:
        """An exact session id, or a unique prefix of one (resolved once per command)."""
        if given not in self._session_ids:
            self._session_ids[given] = self._resolve_session_id(given)
        return self._session_ids[given]

    def entry_id(self, session_id: str, given: str) -> str:
        """An entry id of session ``session_id`` as a command was given it: the exact id wins, else the
        entry whose id is the only one starting with ``given`` (at least :data:`ENTRY_PREFIX`
        characters); several raise an error listing them, and so does a shorter prefix that is not an id
        but starts some (it is too short). Anything else is given back as it is (the command then says
        the entry is not found)."""
        found = self.store.entry_ids_with_prefix(session_id, given, limit=PREFIX_COUNTED + 1)  # (ids only: cheap)
        if not found or found[0][0] == given:  # (an exact id sorts first)
            return given
        if len(given) >= ENTRY_PREFIX and len(found) == 1:
            return found[0][0]
        count = f"more than {PREFIX_COUNTED}" if len(found) > PREFIX_COUNTED else str(len(found))
        listed = AMBIGUOUS_SHOWN if len(given) >= ENTRY_PREFIX else TOO_SHORT_SHOWN
        shown = ", ".join(self._entry_candidate(session_id, eid, kind) for eid, kind in found[:listed])
        shown += ", ..." if len(found) > listed else ""
        starts = "entry starts" if len(found) == 1 else "entries start"
        if len(given) < ENTRY_PREFIX:
            raise InvalidInputError(f"entry prefix {render.safe_line(given)} is too short (an entry prefix needs"
                                    f" at least {ENTRY_PREFIX} characters): {count} {starts} with it: {shown}")
        raise InvalidInputError(f"entry prefix {render.safe_line(given)} is ambiguous: {count} {starts}"
                                f" with it: {shown}")

    def _entry_candidate(self, session_id: str, entry_id: str, kind: str) -> str:
        """A candidate of an ambiguous entry prefix: its id, type and a short preview."""
        try:
            preview = render.describe_entry(dict(self.store.entry(session_id, entry_id)))
        except SessionStoreError:
            preview = ""
        preview = preview if len(preview) <= 40 else preview[:39] + "…"
        return render.safe_line(f"{entry_id} [{kind}]" + (f" {preview}" if preview and preview != kind else ""))

    def _resolve_session_id(self, given: str) -> str:
        if not given:
            raise InvalidInputError("an empty session id: give a session id or a unique prefix of one")
        ids = [info.id for info in self.store.list_sessions()]
        if given in ids:
            return given
        matches = [i for i in ids if i.startswith(given)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            shown = ", ".join(sorted(matches)[:AMBIGUOUS_SHOWN]) + (", ..." if len(matches) > AMBIGUOUS_SHOWN else "")
            raise InvalidInputError(f"session prefix {render.safe_line(given)} is ambiguous: {len(matches)} sessions"
                                    f" start with it: {shown}")
        raise SessionNotFoundError(given)

    def close(self) -> None:
        store, self._store, self._local = self._store, None, None
        if store is not None:
            store.close()


class OneLineClickError(click.ClickException):
    """A click error (a usage error, a bad parameter, a file click could not open) shown as one
    ``error:`` line, with a ``--help`` hint for a usage error, instead of click's usage block; exit
    status 2, as every error of the command line. ``parent``: the group's context, for the hint of an
    error click raised without a context of its own (an option missing its value)."""

    exit_code = 2

    def __init__(self, original: click.ClickException, parent: click.Context | None = None) -> None:
        super().__init__(original.format_message())
        self.original = original
        self.parent = parent

    def show(self, file: IO[Any] | None = None) -> None:
        message = self.message.rstrip().removesuffix(".")
        original = self.original
        context = original.ctx if isinstance(original, click.UsageError) else None
        if isinstance(original, click.exceptions.NoSuchOption):
            message = f"No such option {original.option_name!r}{_suggestion(original, context)}"
            message += "; an argument that starts with '-' goes after '--'"
        path = context.command_path if context is not None and context.command.get_help_option(context) else None
        if context is None and isinstance(original, click.UsageError):
            path = self._subcommand_path()
        if path is not None:
            message += f" (try '{path} --help')"
        say(f"error: {one_line(message)}", err=True)

    def _subcommand_path(self) -> str | None:
        parent = self.parent
        if parent is None or not isinstance(parent.command, click.Group) or not parent.invoked_subcommand:
            return None
        found = parent.command.get_command(parent, parent.invoked_subcommand)
        return None if found is None else f"{parent.command_path} {parent.invoked_subcommand}"


def _suggestion(error: click.exceptions.NoSuchOption, context: click.Context | None) -> str:
    """`` (did you mean '--x'?)``: the command's options the given one starts (an abbreviation), else
    click's close matches; empty without any."""
    given = error.option_name
    known = [] if context is None else [
        name for param in context.command.get_params(context) for name in (*param.opts, *param.secondary_opts)]
    matches = [name for name in known if name.startswith(given)] or list(error.possibilities or ())
    if not matches:
        return ""
    return " (did you mean " + (f"{matches[0]!r}" if len(matches) == 1 else
                                "one of " + ", ".join(repr(m) for m in sorted(matches))) + "?)"


def _one_line(exc: click.ClickException, parent: click.Context | None = None) -> click.ClickException:
    if isinstance(exc, OneLineClickError | click.exceptions.NoArgsIsHelpError):  # (the latter shows the help)
        return exc
    return OneLineClickError(exc, parent)


class SessionstoreGroup(click.Group):
    """The root group: the group callback, every subcommand and closing the store all run inside
    :func:`reported_errors`, so no failure anywhere prints a traceback; click's own errors (of the
    command line, of any command) are one ``error:`` line (:class:`OneLineClickError`), exit 2."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:
            raise _one_line(exc) from exc

    def invoke(self, ctx: click.Context) -> Any:
        with reported_errors():
            try:
                result = super().invoke(ctx)
            except click.ClickException as exc:
                with suppress(Exception):
                    _close(ctx)
                raise _one_line(exc, ctx) from exc
            except BaseException:
                with suppress(Exception):  # already failing (or exiting): that is what to report
                    _close(ctx)
                raise
            _close(ctx)
            return result


def _close(ctx: click.Context) -> None:
    if isinstance(ctx.obj, Ctx):
        ctx.obj.close()


if TYPE_CHECKING:  # generic from click 8.2 on; plain before
    _StrParam = click.ParamType[str]
else:
    _StrParam = click.ParamType


class Utf8Text(_StrParam):
    """A command-line string that can be stored: one whose bytes were UTF-8 (Python keeps bytes that
    are not as lone surrogates, which no database and no JSON file can hold)."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and render.has_surrogates(value):
            if isinstance(param, click.Option):
                what = "/".join(param.opts)
            else:
                what = param.human_readable_name if param is not None else "an argument"
            try:
                shown = repr(value.encode("utf-8", "surrogateescape"))
            except UnicodeEncodeError:
                shown = render.safe_line(value)
            fail(f"{what} is not valid UTF-8 text: {shown}")
        return value


# (annotated: the command modules that import these are imported by this one, a cycle that mypy
# cannot infer module-level types through)
TEXT: Utf8Text = Utf8Text()
pass_ctx: Callable[[Callable[..., Any]], Callable[..., Any]] = click.make_pass_decorator(Ctx)
json_option: Callable[[F], F] = click.option(
    "--json", "as_json", is_flag=True, help="Print JSON (pi's field names) instead of text.")
nl_option: Callable[[F], F] = click.option(
    "--nl", "as_lines", is_flag=True, help="Print one JSON object per line (what --json prints as an array).")
expected_leaf_option = click.option(
    "--expected-leaf",
    metavar="ENTRY",
    default=None,
    type=TEXT,
    help="Refuse (exit 2, nothing written) unless the session's leaf is still ENTRY ('none' for no leaf).",
)


ENTRY_PREFIX = 4
"""The shortest entry-id prefix a command expands (a shorter ENTRY must be a whole id)."""


def entry_prefixes(*names: str) -> Callable[[F], F]:
    """A command whose parameters ``names`` name entries of its SESSION (or, with ``--latest``, of the
    most recent session): each given value is expanded to the full id before the command runs
    (:meth:`Ctx.entry_id`: an exact id, else a unique prefix of at least ENTRY_PREFIX characters).
    ``none`` (no leaf, where a command takes it) is left as it is. Goes under ``handle_errors``."""

    def decorate(func: F) -> F:
        @wraps(func)
        def wrapper(ctx: Ctx, *args: Any, **kwargs: Any) -> Any:
            given = {name: kwargs[name] for name in names if kwargs.get(name) not in (None, "none")}
            session = kwargs.get("session")
            if given and (session is None) == bool(kwargs.get("latest")):  # (else the command refuses)
                sid = ctx.session_id(session) if session is not None \
                    else ctx.store.most_recent_session(cwd=kwargs.get("cwd"))
                if sid is not None:
                    kwargs.update((name, ctx.entry_id(sid, value)) for name, value in given.items())
            return func(ctx, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def _expected(value: str | None) -> Any:
    if value is None:
        return UNSET
    return None if value == "none" else value


@click.group(
    cls=SessionstoreGroup,
    context_settings={"help_option_names": ["-h", "--help"]},  # (inherited by every command)
    help=f"""Store, resume, branch and compact coding-agent sessions (pi-compatible JSONL).

The database is --db URL, else ${ENV_URL}, else the SQLite file
{default_db_path()} (created on first use). PostgreSQL: postgresql://user@host/db
(pip install 'sessionstore[postgres]'). A server ('sessionstore serve'): --db http://HOST:PORT,
the token in ${ENV_TOKEN}.

SESSION arguments accept a unique prefix of a session id; entry ids (ENTRY, --leaf,
--first-kept, --expected-leaf) a unique prefix of at least 4 characters. An exact id
always wins; an ambiguous prefix is refused with its candidates."""
)
@click.option("--db", "url", metavar="URL", envvar=ENV_URL, default=None, show_envvar=True,
              help=f"Database URL, or the path of a SQLite file (default: sqlite:///{default_db_path()})."
                   " Commands that only read never create it. http://HOST:PORT (or https://) is a"
                   f" 'sessionstore serve': the commands work on it with the token in ${ENV_TOKEN}"
                   " (its tenant is the token's).")
@click.option("--tenant", metavar="T", envvar=ENV_TENANT, default=DEFAULT_TENANT, show_envvar=True,
              show_default=True,
              help="Whose sessions the command sees: every read, list, search, stats, sync, import and write is"
                   " this tenant's only (1-64 characters of A-Z a-z 0-9 . _ -).")
@click.option("--durability", type=click.Choice(["full", "normal"]), default="full", show_default=True,
              help="SQLite synchronous mode: full survives power loss; normal is faster (see README).")
@click.version_option(package_name="sessionstore")
@click.pass_context
def cli(context: click.Context, url: str | None, tenant: str, durability: str) -> None:
    try:
        check_tenant(tenant)
    except InvalidInputError as exc:
        fail(f"--tenant: {exc}")
    if url is not None and is_server_url(url):
        _check_server_use(context)
    context.obj = Ctx(None if url is None else command_line_url(url), durability,
                      create=context.invoked_subcommand not in READ_ONLY_COMMANDS, tenant=tenant)


def _check_server_use(context: click.Context) -> None:
    """Refuse, before anything runs, what a server URL cannot do: a command that needs the database
    itself, and a tenant of the command line's (the server takes it from the token alone)."""
    command = context.invoked_subcommand
    if command in LOCAL_ONLY_COMMANDS:
        fail(f"{command} works on the database itself, not on a server: give it the database's URL"
             f" (--db sqlite:///... or postgresql://...) where it runs")
    source = context.get_parameter_source("tenant")
    if source is click.core.ParameterSource.COMMANDLINE:
        fail("--tenant cannot go with a server URL: the server takes the tenant from the token alone"
             f" (${ENV_TOKEN})")
    if source is click.core.ParameterSource.ENVIRONMENT:
        fail(f"${ENV_TENANT} cannot go with a server URL: the server takes the tenant from the token alone"
             f" (${ENV_TOKEN})")


# -- import / export / read -------------------------------------------------------------------
@cli.command("import")
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


def ctx_exit(code: int) -> NoReturn:
    """Leave with ``code`` after the command's own output (the store is closed by the group)."""
    raise click.exceptions.Exit(code)


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
        text = _os_message(exc)
    elif isinstance(exc, SessionStoreError):
        text = str(exc).strip()
    else:
        text = describe(exc)[0]
    text = text.replace(name, shown) if name else text
    reason = text.splitlines()[0] if text.strip() else type(exc).__name__
    message = one_line(reason if reason.startswith(shown) else f"{shown}: {reason}")
    say(f"error: {message}", err=True, escaped=True)
    return import_failed_item(message, file=name)


class _TextOut:
    """A binary writer over a text-only stdout (an embedding's capture): bytes go through ``_write``, a
    character split between two writes (a streamed copy's chunk boundary) held until it is whole."""

    def __init__(self) -> None:
        import codecs

        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def write(self, data: bytes) -> int:
        text = self._decoder.decode(bytes(data))
        if text:
            _write(text.encode("utf-8", "surrogateescape"))
        return len(data)

    def flush(self) -> None:
        text = self._decoder.decode(b"", final=True)
        if text:
            _write(text.encode("utf-8", "surrogateescape"))


@contextmanager
def binary_stdout() -> Iterator[IO[bytes]]:
    """Where a streamed ``--json`` writes: stdout's binary layer (the text layer flushed first), flushed
    at the end; ``_write``'s checks and fallbacks for a closed or text-only stdout."""
    _write(b"")  # stdout closed: the error _write gives; else the text layer is flushed
    binary = getattr(sys.stdout, "buffer", None)
    out: Any = binary if binary is not None else _TextOut()
    yield out
    out.flush()


@cli.command()
@click.argument("session", type=TEXT, required=False)
@click.option("--latest", is_flag=True, help="The most recently active session (pi's --continue); with --cwd, of DIR.")
@click.option("--cwd", default=None, type=TEXT, metavar="DIR", help="With --latest: the latest session of DIR.")
@click.option("--leaf", "leaf", metavar="ENTRY_ID", default=None, type=TEXT, help="Build the context at this entry.")
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
                                        leaf_id=UNSET if leaf is None else leaf, provider_safe=provider_safe,
                                        system_prompt=system_prompt))
        return
    if as_json:  # streamed: the same bytes as emit_json(result.to_json()), in bounded memory
        with binary_stdout() as out:
            ctx.store.write_context_json(session_id, out, leaf_id=UNSET if leaf is None else leaf,
                                         provider_safe=provider_safe)
        return
    result = ctx.store.context(session_id, leaf_id=UNSET if leaf is None else leaf, provider_safe=provider_safe)
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


@cli.command()
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


@cli.command()
@click.argument("session", type=TEXT)
@click.option("--leaf", metavar="ENTRY_ID", default=None, type=TEXT, help="Validate the context at this entry.")
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
    result = ctx.store.context(session_id, leaf_id=UNSET if leaf is None else leaf)
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


def _since_ms(since: str | None) -> int | None:
    """``--since``: a date or a time as JavaScript's ``new Date()`` reads it (``2025-01-31``: midnight UTC;
    ``2025-01-31T09:00``: local time), in milliseconds."""
    if since is None:
        return None
    when = js.date_ms(since)
    if when is None:
        fail(f"--since: not a date: {since!r} (e.g. 2025-01-31 or 2025-01-31T09:00)")
    return when


@cli.command("ls")
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
    infos = ctx.store.list_sessions(cwd=cwd, since_ms=_since_ms(since), limit=limit,
                                    sort="modified" if sort == "modified" else "activity")
    if as_lines:
        emit_json_lines(session_item(ctx.store, i) for i in infos)
    elif as_json:
        _write(json_bytes(session_list(ctx.store, infos)))
    else:
        gone = {i.source_path for i in infos if i.source_path is not None and not os.path.lexists(i.source_path)}
        filtered = cwd is not None or since is not None or limit is not None  # (short ids: unique in the store)
        say(render.render_sessions(infos, width=terminal_columns(), gone=gone, known_ids=lambda: [
            i.id for i in ctx.store.list_sessions()] if filtered else ()))


@cli.command()
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


@cli.command()
@click.argument("session", type=TEXT)
@click.argument("entry", type=TEXT)
@pass_ctx
@handle_errors
@entry_prefixes("entry")
def show(ctx: Ctx, session: str, entry: str) -> None:
    """Print one entry as JSON."""
    emit_json(ctx.store.entry(ctx.session_id(session), entry))


# -- writing ----------------------------------------------------------------------------------
@cli.command()
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


def _shortcut_message(user_text: str | None, assistant_text: str | None, model_name: str, custom_type: str | None,
                      custom_text: str | None, bash_command: str | None, bash_output: Any,
                      exit_code: int | None) -> dict[str, Any] | None:
    """The message ``append``'s options write (``None`` without any); one of them at a time."""
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
        return {"role": "user", "content": user_text, "timestamp": now}
    if assistant_text is not None:
        provider, slash, model = model_name.partition("/")
        if not slash or not provider or not model:
            fail(f"--model: expected PROVIDER/ID, got {render.safe_line(model_name)}")
        zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
        return {"role": "assistant", "content": [{"type": "text", "text": assistant_text}], "api": "manual",
                "provider": provider, "model": model, "usage": zero, "stopReason": "stop", "timestamp": now}
    if custom_type is not None:
        return {"role": "custom", "customType": custom_type, "content": custom_text}
    if bash_command is not None:
        raw = bash_output.read() if bash_output is not None else b""
        output = raw.decode("utf-8", "replace")
        return {"role": "bashExecution", "command": bash_command, "output": output,
                "exitCode": exit_code, "cancelled": False, "truncated": False, "timestamp": now}
    return None


def read_json_object(raw: bytes) -> dict[str, Any]:
    """The JSON object in ``raw`` (UTF-8), or one line saying why there is none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        fail(f"the input is not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})")
    if not text.strip():
        fail("no input: expected a JSON object")
    try:
        data = parse_line(raw)  # as pi's JSON.parse reads it (no NaN, no byte order mark, bounded nesting)
    except LineRefused as exc:
        fail(f"invalid JSON input: {exc}")
    if not isinstance(data, dict):
        fail(f"the JSON must be an object, got {_json_type(data)}")
    return data


def _json_type(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


APPEND_TYPES = ["message", "model_change", "thinking_level_change", "custom", "custom_message", "label",
                "session_info", "compaction", "branch_summary", "context_edit", "usage"]


@cli.command()
@click.argument("session", type=TEXT)
@click.argument("source", default="-", type=click.File("rb"))
@click.option("--type", "kind", type=click.Choice(APPEND_TYPES), default="message", show_default=True,
              help="Entry type; for 'message' the JSON is the message itself.")
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
    options; print its id. Timestamps are filled in (a message's JSON without one gets the time now).

    \b
    Examples:
      sessionstore append 0194c2a1 --user 'Fix the failing test'
      sessionstore append 0194c2a1 --bash 'make test' --output test.log --exit-code 1
      echo '{"role": "user", "content": "hi"}' | sessionstore append 0194c2a1
      echo '{"customType": "note", "data": {"k": 1}}' | sessionstore append 0194c2a1 --type custom
    """
    shortcut = _shortcut_message(user_text, assistant_text, model_name, custom_type, custom_text, bash_command,
                                 bash_output, exit_code)
    if shortcut is not None and kind != "message":
        fail("--user, --assistant, --custom and --bash append messages: leave out --type")
    if shortcut is None:
        if getattr(source, "name", None) == "<stdin>" and sys.stdin.isatty():
            say("reading the entry's JSON from the terminal; end it with Ctrl-D (or use --user TEXT)", err=True)
        data = read_json_object(source.read())
    else:
        data = shortcut
    sid = ctx.session_id(session)
    store = ctx.store
    if shortcut is not None and shortcut.get("role") == "custom":
        entry_id = store.append_custom_message(sid, str(data["customType"]), data["content"],
                                               expected_leaf=_expected(expected_leaf))
    elif kind == "message":
        if "timestamp" not in data:
            data = {**data, "timestamp": now_ms()}
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
    elif kind == "context_edit":
        if "replacement" not in data:
            fail('a context_edit needs "replacement": null (omit the target) or {"content": ...}')
        entry_id = store.append_context_edit(sid, _text_field(data, "targetId"), data["replacement"],
                                             expected_leaf=_expected(expected_leaf))
    elif kind == "usage":
        entry_id = store.append_usage(
            sid, kind=_text_field(data, "kind"), provider=_text_field(data, "provider"),
            model=_text_field(data, "model"), usage=data.get("usage") or {}, note=data.get("note"),
            expected_leaf=_expected(expected_leaf),
        )
    elif kind == "label":
        label = data.get("label")
        entry_id = store.append_label(sid, _text_field(data, "targetId"), label if isinstance(label, str) else None,
                                      expected_leaf=_expected(expected_leaf))
    elif kind == "model_change":
        entry_id = store.append_model_change(
            sid, provider=_text_field(data, "provider"), model_id=_text_field(data, "modelId"),
            expected_leaf=_expected(expected_leaf))
    elif kind == "thinking_level_change":
        entry_id = store.append_thinking_level_change(sid, _text_field(data, "thinkingLevel"),
                                                      expected_leaf=_expected(expected_leaf))
    elif kind == "custom":
        entry_id = store.append_custom(sid, _text_field(data, "customType"), data.get("data"),
                                       expected_leaf=_expected(expected_leaf))
    elif kind == "custom_message":
        content = data.get("content")
        if not isinstance(content, str | list):
            fail('the JSON needs "content": a string or a list of content blocks')
        display = data.get("display", True)
        if not isinstance(display, bool):
            fail('"display" must be true or false')
        entry_id = store.append_custom_message(sid, _text_field(data, "customType"), content, display=display,
                                               details=data.get("details"), expected_leaf=_expected(expected_leaf))
    elif kind == "session_info":
        entry_id = store.append_session_info(sid, _text_field(data, "name"), expected_leaf=_expected(expected_leaf))
    else:  # branch_summary: a summary of the branch left, appended at the leaf (pi's branchWithSummary)
        leaf = _expected(expected_leaf)
        at = store.leaf(sid) if isinstance(leaf, _Unset) else leaf
        from_hook = data.get("fromHook")
        entry_id = store.branch_with_summary(
            sid, at, _text_field(data, "summary"), details=data.get("details"), usage=data.get("usage"),
            from_hook=from_hook if isinstance(from_hook, bool) else None, expected_leaf=at)
    warnings = _role_warnings(data) if kind == "message" else []
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


def _text_field(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        fail(f'the JSON needs a string "{key}"')
    return str(value)


@cli.command()
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


@cli.command()
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


@cli.command()
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


@cli.command()
@click.argument("session", type=TEXT)
@click.argument("entry", type=TEXT)
@click.argument("text", required=False, type=TEXT)
@pass_ctx
@handle_errors
@entry_prefixes("entry")
def label(ctx: Ctx, session: str, entry: str, text: str | None) -> None:
    """Label ENTRY with TEXT (no TEXT clears the label)."""
    say(ctx.store.append_label(ctx.session_id(session), entry, text))


@cli.command()
@click.argument("session", type=TEXT)
@click.argument("text", type=TEXT)
@pass_ctx
@handle_errors
def name(ctx: Ctx, session: str, text: str) -> None:
    """Name the session."""
    say(ctx.store.append_session_info(ctx.session_id(session), text))


@cli.command()
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
AMBIGUOUS_SHOWN = 10
"""Candidates an ambiguous-prefix error lists."""
TOO_SHORT_SHOWN = 3
"""Entries a too-short entry prefix's error lists (of those that start with it)."""
PREFIX_COUNTED = 1000
"""Entries a prefix error counts exactly (more: "more than 1000")."""


@cli.command("rm")
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


@cli.command()
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


# -- schema -----------------------------------------------------------------------------------
@cli.group()
def db() -> None:
    """Schema management (Alembic)."""


@contextmanager
def _engine(ctx: Ctx, *, create: bool = False) -> Iterator[Any]:
    """An engine on the database (``create``: a missing SQLite file is made); any failure to reach or
    read it names the database."""
    from sessionstore.store.engine import make_engine

    url = ctx.resolved_url
    with database_errors(url):
        engine = make_engine(url, durability=ctx.durability, create=create)  # type: ignore[arg-type]
        try:
            yield engine
        finally:
            engine.dispose()


def _missing_sqlite_file(ctx: Ctx) -> bool:
    url = _parsed_url(ctx.resolved_url)
    return bool(url.get_backend_name() == "sqlite" and url.database and not url.database.startswith("file:")
                and url.database != ":memory:" and not Path(url.database).expanduser().exists())


@db.command()
@pass_ctx
@handle_errors
def upgrade(ctx: Ctx) -> None:
    """Upgrade the schema to this version's head (the only way on PostgreSQL) and say which revisions
    were applied."""
    from sessionstore.store import migrate

    with _engine(ctx, create=True) as engine:
        before = migrate.database_revision(engine)
        revision = migrate.upgrade(engine)
    applied = migrate.applied_between(before, revision)
    if before == revision:
        say(f"schema at {revision}: already current")
        return
    if before is None:
        say(f"created the schema at {revision}")
        return
    for step in applied:
        say(f"applied {step.revision}: {step.title}")
    say(f"schema at {revision} (was {before})")


@db.command()
@pass_ctx
@handle_errors
def history(ctx: Ctx) -> None:
    """List the schema revisions this version knows, oldest first; '*' marks the database's (when it
    has a schema)."""
    from sessionstore.store import migrate

    current = None
    if not _missing_sqlite_file(ctx):
        with _engine(ctx) as engine:
            current = migrate.database_revision(engine)
    for step in migrate.history():
        say(f"{'*' if step.revision == current else ' '} {step.revision}  {step.title}")


@db.command()
@pass_ctx
@handle_errors
def current(ctx: Ctx) -> None:
    """Print the schema revision of the database ('none' before the first upgrade); exit 2 when this
    version of sessionstore does not know it (a newer one wrote the database)."""
    from sessionstore.store import migrate

    if _missing_sqlite_file(ctx):  # no schema, and nothing to create for saying so
        say("none")
        return
    with _engine(ctx) as engine:
        revision = migrate.database_revision(engine)
        if revision is not None and revision not in migrate.known_revisions():
            say(revision)
            migrate.check_database(engine)  # raises SchemaTooNewError, naming the database
    say(revision or "none")


@db.command()
@pass_ctx
@handle_errors
def check(ctx: Ctx) -> None:
    """Exit 0 when the schema is current, else say what to run and exit 2."""
    from sessionstore.store import migrate

    with _engine(ctx) as engine:
        migrate.check_database(engine)
    say("schema is current")


# Commands in modules of their own use the helpers above, so they are imported last.
from sessionstore.cli.payload_cmd import payload  # noqa: E402
from sessionstore.cli.search_cmd import search  # noqa: E402
from sessionstore.cli.serve_cmd import serve  # noqa: E402
from sessionstore.cli.stats_cmd import stats  # noqa: E402
from sessionstore.cli.sync_cmd import sync  # noqa: E402
from sessionstore.cli.tail_cmd import tail  # noqa: E402
from sessionstore.cli.token_cmd import token  # noqa: E402

for command in (payload, search, serve, stats, sync, tail, token):
    cli.add_command(command)

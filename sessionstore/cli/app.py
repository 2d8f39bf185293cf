"""What every command of the ``sessionstore`` command line shares: the :func:`cli` group and its
global options (``--db``, ``--tenant``, ``--durability``), :class:`Ctx` (the store a command works on),
output, error handling, the ``--db`` URL, parameter types and shared options. The commands are in
the ``*_cmd`` modules beside it, which import from here and not from each other; the package's
``__init__`` adds them to :func:`cli`.

Data goes to stdout (``--json`` for machines), messages and progress to stderr; an error prints
one line on stderr and exits with status 2 (``validate`` exits 1 when it finds errors).
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from functools import wraps
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from sessionstore.cli import render
from sessionstore.errors import InvalidInputError, SchemaError, SessionNotFoundError, SessionStoreError, StoreError
from sessionstore.models import js
from sessionstore.store.location import ENV_URL, database_url, default_db_path, default_url
from sessionstore.store.tenant import DEFAULT_TENANT, ENV_TENANT, check_tenant
from sessionstore.views import json_bytes, json_line
from sessionstore.wire.codec import LineRefused, parse_line

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
def write_bytes(data: bytes, *, err: bool = False) -> None:
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
    write_bytes(data, err=err)


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
    write_bytes(json_bytes(value))


def emit_json_lines(values: Iterable[Any]) -> None:
    """``--nl``: one compact JSON value per line, each written as soon as it is made."""
    for value in values:
        write_bytes(json_line(value))


class _TextOut:
    """A binary writer over a text-only stdout (an embedding's capture): bytes go through
    ``write_bytes``, a character split between two writes (a streamed copy's chunk boundary) held
    until it is whole."""

    def __init__(self) -> None:
        import codecs

        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def write(self, data: bytes) -> int:
        text = self._decoder.decode(bytes(data))
        if text:
            write_bytes(text.encode("utf-8", "surrogateescape"))
        return len(data)

    def flush(self) -> None:
        text = self._decoder.decode(b"", final=True)
        if text:
            write_bytes(text.encode("utf-8", "surrogateescape"))


@contextmanager
def binary_stdout() -> Iterator[IO[bytes]]:
    """Where a streamed ``--json`` writes: stdout's binary layer (the text layer flushed first), flushed
    at the end; ``write_bytes``'s checks and fallbacks for a closed or text-only stdout."""
    write_bytes(b"")  # stdout closed: the error write_bytes gives; else the text layer is flushed
    binary = getattr(sys.stdout, "buffer", None)
    out: Any = binary if binary is not None else _TextOut()
    yield out
    out.flush()


def one_line(message: str) -> str:
    return " ".join(render.safe_line(part) for part in message.splitlines() if part.strip()) or "(no message)"


def fail(message: str, code: int = 2) -> NoReturn:
    say(f"error: {one_line(message)}", err=True)
    sys.exit(code)


def ctx_exit(code: int) -> NoReturn:
    """Leave with ``code`` after the command's own output (the store is closed by the group)."""
    raise click.exceptions.Exit(code)


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


def os_message(exc: OSError) -> str:
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
        return os_message(exc), 2
    if isinstance(exc, MemoryError):
        return "out of memory", 2
    if _is_validation_error(exc):  # a library check that did not say it in its own words
        from sessionstore.models.problems import format_validation_error

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
def parsed_url(url: str) -> URL:
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
        parsed = parsed_url(url)
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

LOCAL_ONLY_COMMANDS = frozenset({"sync", "db", "token", "serve", "demo", "retention", "hold", "unhold", "archive",
                                 "restore", "erase"})
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
        parsed = parsed_url(url)
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
        parsed = parsed_url(url)
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
        return os_message(exc)
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


AMBIGUOUS_SHOWN = 10
"""Candidates an ambiguous-prefix error lists."""
TOO_SHORT_SHOWN = 3
"""Entries a too-short entry prefix's error lists (of those that start with it)."""
PREFIX_COUNTED = 1000
"""Sessions or entries a prefix error counts exactly (more: "more than 1000")."""


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
        matches = self.store.session_ids_with_prefix(given, limit=PREFIX_COUNTED + 1)  # (one indexed query)
        if matches and matches[0] == given:  # (an exact id sorts first)
            return given
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            count = f"more than {PREFIX_COUNTED}" if len(matches) > PREFIX_COUNTED else str(len(matches))
            shown = ", ".join(matches[:AMBIGUOUS_SHOWN]) + (", ..." if len(matches) > AMBIGUOUS_SHOWN else "")
            raise InvalidInputError(f"session prefix {render.safe_line(given)} is ambiguous: {count} sessions"
                                    f" start with it: {render.safe_line(shown)}")
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
    StrParam = click.ParamType[str]
else:
    StrParam = click.ParamType


class Utf8Text(StrParam):
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


TEXT = Utf8Text()
pass_ctx = click.make_pass_decorator(Ctx)
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print JSON (pi's field names) instead of text.")
nl_option = click.option(
    "--nl", "as_lines", is_flag=True, help="Print one JSON object per line (what --json prints as an array).")


ENTRY_PREFIX = 4
"""The shortest entry-id prefix a command expands (a shorter ENTRY must be a whole id)."""


NO_LEAF = "none"
"""What ``--leaf`` (and ``branch``'s ENTRY) takes for no leaf: before the first entry (pi's ``resetLeaf``)."""


def leaf_arg(leaf: str | None) -> Any:
    """A ``--leaf`` value as the library takes it: ``UNSET`` when not given (the session's leaf), ``None``
    for :data:`NO_LEAF`, else the entry id."""
    from sessionstore.store.records import UNSET

    return UNSET if leaf is None else None if leaf == NO_LEAF else leaf


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


# -- input ------------------------------------------------------------------------------------
def since_ms(since: str | None) -> int | None:
    """``--since``: a date or a time as JavaScript's ``new Date()`` reads it (``2025-01-31``: midnight UTC;
    ``2025-01-31T09:00``: local time), in milliseconds."""
    if since is None:
        return None
    when = js.date_ms(since)
    if when is None:
        fail(f"--since: not a date: {since!r} (e.g. 2025-01-31 or 2025-01-31T09:00)")
    return when


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


# -- the group every command is added to ------------------------------------------------------
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

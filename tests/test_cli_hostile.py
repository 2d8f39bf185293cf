"""The command line never prints a traceback: whatever the database, the input or the session data,
a failure is one `error:` line on stderr and exit status 2, and text output carries nothing that a
terminal would act on."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy.exc import DatabaseError

from sessionstore.api import SessionStore
from sessionstore.cli import cli, render
from sessionstore.cli.app import Ctx, describe
from sessionstore.errors import StoreError
from sessionstore.wire.jsjson import js_dumps
from tests.builders import TS, assistant, entry, msg, user
from tests.paths import PI_FILES

Run = Callable[..., Result]


def invoke(*args: str, input: str | bytes | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def assert_one_error_line(result: Result, *needles: str) -> str:
    """Exit status 2, nothing but one `error: ...` line on stderr; returns that line."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture
def run(db_url: str) -> Run:
    def run_on_db(*args: str, input: str | bytes | None = None) -> Result:
        return invoke("--db", db_url, *args, input=input)

    return run_on_db


def write_session(path: Path, header: dict[str, Any], entries: list[dict[str, Any]]) -> Path:
    path.write_text("".join(js_dumps(line) + "\n" for line in [header, *entries]), encoding="utf-8")
    return path


# -- damaged, unwritable and foreign databases --------------------------------------------------------
def newer_database(path: Path) -> Path:
    with SessionStore(f"sqlite:///{path}"):
        pass
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE sessionstore_alembic_version SET version_num = '9999'")
    return path


def damaged(kind: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{kind}.db"
    if kind == "random-bytes":
        path.write_bytes(bytes(range(256)) * 40)
    elif kind == "text-file":
        path.write_text("this is not a database\n" * 100)
    elif kind == "directory":
        path.mkdir()
    elif kind == "truncated":
        with SessionStore(f"sqlite:///{path}") as store:
            store.import_jsonl(PI_FILES["large-session"])
        data = path.read_bytes()
        path.write_bytes(data[:100])
    return path


DB_COMMANDS = [["db", "current"], ["db", "check"], ["db", "upgrade"], ["ls"],
               ["import", str(PI_FILES["large-session"])]]


def command_id(command: list[str]) -> str:
    return " ".join(command[:2]) if command[0] == "db" else command[0]


@pytest.mark.parametrize("command", DB_COMMANDS, ids=command_id)
@pytest.mark.parametrize("kind", ["random-bytes", "text-file", "directory", "truncated"])
def test_a_damaged_database_file_or_a_directory_is_one_line_naming_the_database(
    kind: str, command: list[str], tmp_path: Path
) -> None:
    path = damaged(kind, tmp_path)
    line = assert_one_error_line(invoke("--db", f"sqlite:///{path}", *command), str(path))
    assert ("directory" in line) if kind == "directory" else ("not a database" in line or "malformed" in line)


@pytest.mark.parametrize("command", DB_COMMANDS, ids=command_id)
def test_a_database_written_by_a_newer_sessionstore_says_so(command: list[str], tmp_path: Path) -> None:
    path = newer_database(tmp_path / "newer.db")
    result = invoke("--db", f"sqlite:///{path}", *command)
    line = assert_one_error_line(result, str(path), "written by a newer version of sessionstore", "'9999'")
    assert "outdated" not in line and "db upgrade" not in line
    if command == ["db", "current"]:
        assert result.stdout == "9999\n"  # the answer, then the error


def test_an_empty_file_is_a_new_database(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    url = f"sqlite:///{path}"
    assert invoke("--db", url, "db", "current").stdout == "none\n"
    assert_one_error_line(invoke("--db", url, "db", "check"), "no sessionstore schema", "db upgrade")
    assert invoke("--db", url, "db", "upgrade").exit_code == 0
    assert invoke("--db", url, "ls").stdout == "no sessions\n"


@pytest.mark.parametrize("command", DB_COMMANDS, ids=command_id)
def test_a_sqlite_url_with_a_host_part_says_the_right_form(command: list[str]) -> None:
    assert_one_error_line(invoke("--db", "sqlite://relative.db", *command), "sqlite://relative.db", "sqlite:///relative.db")


@pytest.mark.parametrize("command", DB_COMMANDS, ids=command_id)
@pytest.mark.parametrize("url", ["nonsense", "mysql://u@h/d", "postgresql://"])
def test_a_url_that_names_no_usable_database_is_one_line(url: str, command: list[str]) -> None:
    assert_one_error_line(invoke("--db", url, *command))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("command", DB_COMMANDS, ids=command_id)
def test_an_unreachable_postgresql_server_is_one_line_naming_it(command: list[str]) -> None:
    url = f"postgresql://someone:secret@127.0.0.1:{closed_port()}/nowhere"
    line = assert_one_error_line(invoke("--db", url, *command))
    assert "secret" not in line
    assert "127.0.0.1" in line or "psycopg" in line


def without_root_powers() -> list[str]:
    """A command prefix under which permission bits hold: nothing for a user, setpriv dropping the
    capabilities that let root ignore them (CI runs as root)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permission bits cannot be made to hold")
    caps = "-dac_override,-dac_read_search,-fowner"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def run_subprocess(*args: str, env: dict[str, str] | None = None, prefix: list[str] | None = None) -> Result:
    """The real command in a child process (its own locale, standard streams and privileges)."""
    code = "import sys; from sessionstore.cli import main; sys.argv[0] = 'sessionstore'; main()"
    done = subprocess.run(
        [*(prefix or []), sys.executable, "-c", code, *args],
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )
    result = Result(
        runner=CliRunner(),
        stdout_bytes=done.stdout,
        stderr_bytes=done.stderr,
        output_bytes=done.stdout + done.stderr,
        return_value=None,
        exit_code=done.returncode,
        exception=None,
    )
    return result


def populated(path: Path) -> Path:
    with SessionStore(f"sqlite:///{path}") as store:
        store.import_jsonl(PI_FILES["large-session"])
    return path


def test_a_read_only_database_file_reads_and_refuses_writes_in_one_line(tmp_path: Path) -> None:
    prefix = without_root_powers()
    path = populated(tmp_path / "ro.db")
    os.chmod(path, 0o444)
    url = f"sqlite:///{path}"
    for command in (["db", "current"], ["db", "check"], ["ls"]):
        assert run_subprocess("--db", url, *command, prefix=prefix).exit_code == 0
    write = run_subprocess("--db", url, "new", "--cwd", "/w", prefix=prefix)
    assert_one_error_line(write, str(path), "readonly", "the file is read-only")
    legacy = str(PI_FILES["large-session"].parent.parent / "legacy" / "compaction-v1.jsonl")
    assert_one_error_line(run_subprocess("--db", url, "import", legacy, prefix=prefix), str(path), "read-only")


@pytest.mark.parametrize("command", DB_COMMANDS, ids=command_id)
def test_a_database_in_a_read_only_directory_is_one_line_saying_why(command: list[str], tmp_path: Path) -> None:
    prefix = without_root_powers()
    directory = tmp_path / "ro-dir"
    directory.mkdir()
    path = populated(directory / "x.db")
    os.chmod(path, 0o666)
    os.chmod(directory, 0o555)
    try:
        result = run_subprocess("--db", f"sqlite:///{path}", *command, prefix=prefix)
        assert_one_error_line(result, str(path), "not writable", "x.db-wal")
        new = run_subprocess("--db", f"sqlite:///{directory / 'new.db'}", *command, prefix=prefix)
        if command[:2] == ["db", "current"]:  # a missing database has no revision, and is not created
            assert (new.exit_code, new.stdout) == (0, "none\n")
        else:
            reads = command[0] == "ls" or command[:2] == ["db", "check"]  # reads never create
            assert_one_error_line(new, str(directory / "new.db"),
                                  "no such database file" if reads else "ermission denied")
    finally:
        os.chmod(directory, 0o755)


# -- errors from anywhere ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (RecursionError("maximum recursion depth exceeded"),
         "internal error: RecursionError: maximum recursion depth exceeded (please report this"),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "internal error: UnicodeDecodeError: "),
        (ZeroDivisionError(), "internal error: ZeroDivisionError (please report this with the command you ran)"),
        (MemoryError(), "out of memory"),
        (PermissionError(13, "Permission denied", "/x/y"), "/x/y: Permission denied"),
        # The store translates every driver error into a StoreError; one that escapes it is a bug of ours.
        (sqlite3.DatabaseError("file is not a database"),
         "internal error: sqlite3.DatabaseError: file is not a database"),
    ],
)
def test_every_exception_becomes_one_line(exc: BaseException, expected: str) -> None:
    message, code = describe(exc)
    assert code == 2 and message.startswith(expected) and "\n" not in message


def test_a_driver_error_reports_the_drivers_words() -> None:
    wrapped = DatabaseError("SELECT 1", {}, sqlite3.DatabaseError("database disk image is malformed"))
    store_error = StoreError("database error: whatever")
    store_error.__cause__ = wrapped
    assert describe(store_error) == ("database error: database disk image is malformed", 2)
    translated = StoreError("database refused the write: file is not a database")
    translated.__cause__ = sqlite3.DatabaseError("file is not a database")
    assert describe(translated) == ("database error: file is not a database", 2)


def test_an_unexpected_error_in_a_command_is_reported_as_internal(sqlite_url: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> str:
        raise LookupError("no such thing\nsecond line")

    monkeypatch.setattr(render, "render_sessions", broken)
    SessionStore(sqlite_url).close()  # (a read of a missing database is refused before rendering)
    line = assert_one_error_line(invoke("--db", sqlite_url, "ls"))
    assert line == "error: internal error: LookupError: no such thing second line (please report this with the" \
                   " command you ran)"


def test_an_error_while_closing_the_store_is_one_line(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_close(self: Any) -> None:
        raise OSError("disk went away")

    monkeypatch.setattr(Ctx, "close", broken_close)
    SessionStore(sqlite_url).close()
    assert_one_error_line(invoke("--db", sqlite_url, "ls"), "disk went away")
    # a command that failed already reports its own failure, not the one of closing
    assert_one_error_line(invoke("--db", sqlite_url, "context", "nosuch"), "no session")


def test_an_interrupt_exits_130_with_one_line(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_args: Any, **_kwargs: Any) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(render, "render_sessions", interrupted)
    SessionStore(sqlite_url).close()
    result = invoke("--db", sqlite_url, "ls")
    assert result.exit_code == 130 and result.stderr == "error: interrupted\n"


def test_usage_errors_stay_clicks_own() -> None:
    result = CliRunner().invoke(cli, ["context"])
    assert result.exit_code == 2 and "Missing argument" in result.stderr and "Traceback" not in result.stderr


# -- hostile input ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("stdin", "needle"),
    [
        (b"[1, 2]", "must be an object, got an array"),
        (b'"text"', "must be an object, got a string"),
        (b"null", "must be an object, got null"),
        (b"", "no input"),
        (b"  \n", "no input"),
        (b"[" * 5000 + b"]" * 5000, "nested deeper than 200 levels"),
        (b'{"a":' * 5000 + b"1" + b"}" * 5000, "nested deeper than 200 levels"),
        (b'{"role": "user", "content": "\xff"}', "not UTF-8"),
        (b'{"role": "user", "content": "\xed\xa0\x80"}', "not UTF-8"),
        (b"{not json", "invalid JSON input"),
        (b'{"role": 5}', "role"),
    ],
)
def test_append_refuses_what_is_not_one_json_object_in_one_line(run: Run, stdin: bytes, needle: str) -> None:
    sid = run("new", "--cwd", "/w").stdout.strip()
    assert_one_error_line(run("append", sid, input=stdin), needle)


@pytest.mark.parametrize(
    "data",
    [{"summary": 5}, {"summary": "s", "firstKeptEntryId": ["x"]}, {"summary": "s", "tokensBefore": "many"}],
)
def test_append_of_a_malformed_compaction_is_one_line(run: Run, data: dict[str, Any]) -> None:
    sid = run("new", "--cwd", "/w").stdout.strip()
    run("append", sid, input=json.dumps(user("hi")))
    assert_one_error_line(run("append", sid, "--type", "compaction", input=json.dumps(data)))


def test_missing_entries_and_sessions_and_an_empty_prefix_are_one_line(run: Run) -> None:
    sid = run("new", "--cwd", "/w").stdout.strip()
    first = run("append", sid, input=json.dumps(user("hi"))).stdout.strip()
    assert_one_error_line(run("show", sid, "nosuch"), "no entry 'nosuch'")
    assert_one_error_line(run("context", "--leaf", "nosuch", sid), "no entry 'nosuch'")
    assert_one_error_line(run("validate", "--leaf", "nosuch", sid), "no entry 'nosuch'")
    assert_one_error_line(run("fork", "--leaf", "nosuch", sid), "no entry 'nosuch'")
    assert_one_error_line(run("branch", sid, "nosuch"), "no entry 'nosuch'")
    assert_one_error_line(run("label", sid, "nosuch", "x"), "no entry 'nosuch'")
    for command in (["context", ""], ["tree", ""], ["export", ""], ["rm", "", "--yes"], ["label", "", first, "x"]):
        assert_one_error_line(run(*command), "empty session id")
    assert_one_error_line(run("context", "nosuch"), "no session 'nosuch'")
    run("new", "--cwd", "/w", "--id", sid[:8] + "-other")
    assert_one_error_line(run("context", sid[:8]), "ambiguous")


def test_labels_and_names_with_odd_text_are_stored_and_shown_safely(run: Run) -> None:
    sid = run("new", "--cwd", "/w").stdout.strip()
    first = run("append", sid, input=json.dumps(user("hi"))).stdout.strip()
    for text in ["\x1b[31mred\x07", "", " ", "line\nbreak", "é中😀", "\u202eevil", "x" * 10000]:
        assert run("label", sid, first, text).exit_code == 0
        assert run("name", sid, text).exit_code == 0
        shown = run("tree", sid).stdout + run("ls").stdout
        assert not set(shown) & {"\x1b", "\x07", "\u202e"}
    assert json.loads(run("tree", "--json", sid).stdout)[0]["label"] == "x" * 10000


def test_arguments_that_are_not_utf8_are_refused_in_one_line(sqlite_url: str, tmp_path: Path) -> None:
    sid = invoke("--db", sqlite_url, "new", "--cwd", "/w").stdout.strip()
    first = invoke("--db", sqlite_url, "append", sid, input=json.dumps(user("hi"))).stdout.strip()
    undecodable = os.fsdecode(b"\xff\xfe")  # what Python makes of such bytes in argv
    for command in (["label", sid, first, undecodable], ["label", sid, undecodable, "x"], ["show", sid, undecodable],
                    ["name", sid, undecodable], ["ls", "--cwd", undecodable], ["new", "--id", undecodable],
                    ["context", undecodable], ["branch", sid, undecodable]):
        assert_one_error_line(invoke("--db", sqlite_url, *command), "not valid UTF-8", r"\xff\xfe")


def test_a_deeply_nested_message_goes_through_every_command(run: Run) -> None:
    sid = run("new", "--cwd", "/w").stdout.strip()
    message = user("deep")
    message["extra"] = json.loads("[" * 900 + "]" * 900)
    assert_one_error_line(run("append", sid, input=js_dumps(message)), "nested deeper than 200")
    message["extra"] = json.loads("[" * 190 + "]" * 190)
    entry_id = run("append", sid, input=js_dumps(message)).stdout.strip()
    for command in (["context", sid], ["context", "--json", sid], ["tree", sid], ["tree", "--json", sid],
                    ["export", sid], ["validate", sid], ["show", sid, entry_id]):
        result = run(*command)
        assert result.exit_code == 0 and result.stderr == "", (command, result.stderr)


# -- session data that would drive a terminal ------------------------------------------------------------
CONTROL = "\x1b[31m\x07\r\x1b]0;owned\x07\x9b2J\x7f\u202e"


def hostile_session(tmp_path: Path) -> Path:
    header = {"type": "session", "version": 3, "id": f"evil{CONTROL}", "timestamp": TS, "cwd": f"/w{CONTROL}"}
    call = ("c1", f"bash{CONTROL}", {"command": f"ls{CONTROL}"})
    entries = [
        msg(f"e1{CONTROL}", None, user(f"hello {CONTROL} world\r\nsecond line")),
        msg("e2", f"e1{CONTROL}", assistant(f"reply{CONTROL}", call, model=f"m{CONTROL}")),
        msg("e3", "e2", {"role": "toolResult", "toolCallId": "c1", "toolName": f"bash{CONTROL}",
                         "content": [{"type": "text", "text": f"out{CONTROL}"}], "isError": False,
                         "timestamp": 1}),
        entry("e4", "e3", "session_info", name=f"name{CONTROL}"),
        entry("e5", "e4", "label", targetId="e2", label=f"label{CONTROL}"),
        msg("e6", "e5", {"role": "bashExecution", "command": f"rm{CONTROL}", "output": f"o{CONTROL}",
                         "exitCode": 0, "cancelled": False, "truncated": False, "timestamp": 1}),
    ]
    return write_session(tmp_path / "evil.jsonl", header, entries)


def test_text_output_escapes_terminal_controls_from_session_data(run: Run, tmp_path: Path) -> None:
    imported = run("import", str(hostile_session(tmp_path)))
    assert imported.exit_code == 0, imported.stderr
    sid = f"evil{CONTROL}"
    outputs = {
        "import": imported.stdout,
        "ls": run("ls").stdout,
        "tree": run("tree", "evil").stdout,
        "context": run("context", "evil").stdout,
        "context --full": run("context", "--full", "evil").stdout,
        "validate": run("validate", "evil").stdout,
        "compact --plan": run("compact", "--plan", "--keep-recent-tokens", "0", "evil").stdout,
        "label": run("label", "evil", "e2", "x").stdout,
        "not found": run("show", "evil", f"nosuch{CONTROL}").stderr,
    }
    for command, text in outputs.items():
        bad = {ch for ch in text if (ord(ch) < 0x20 and ch not in "\n\t") or 0x7F <= ord(ch) <= 0x9F
               or ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"}
        assert not bad, (command, bad, text)
    assert r"\x1b[31m\x07\r\x1b]0;owned\x07\x9b2J\x7f\u202e" in outputs["tree"]
    assert "hello " in outputs["context"] and "\nsecond line" not in outputs["tree"]
    assert r"world" in outputs["context"] and "\\r\n" not in outputs["context"]  # CRLF is a line break
    # JSON is escaped by JSON itself and keeps the data exactly
    data = json.loads(run("context", "--json", "evil").stdout)
    assert data["sessionId"] == sid and data["messages"][0]["content"][0]["text"].startswith(f"hello {CONTROL}")
    assert json.loads(run("ls", "--json").stdout)[0]["name"] == f"name{CONTROL}"


SEPARATORS = "\u200f\u2028\u2029\u200e\u061c\x85"
"""Bidi marks (RLM, LRM, ALM), the line and paragraph separators and NEL: a terminal or a viewer acts on them."""


def test_text_output_escapes_bidi_marks_and_line_separators(run: Run, tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "sep", "timestamp": TS, "cwd": f"/w{SEPARATORS}"}
    entries = [
        msg("e1", None, user(f"first{SEPARATORS}message")),
        msg("e2", "e1", assistant(f"reply{SEPARATORS}", model=f"m{SEPARATORS}")),
        entry("e3", "e2", "session_info", name=f"na{SEPARATORS}me"),
    ]
    assert run("import", str(write_session(tmp_path / "sep.jsonl", header, entries))).exit_code == 0
    outputs = {command: run(command, *(() if command == "ls" else ("sep",))).stdout
               for command in ("ls", "tree", "stats", "context")}
    for command, text in outputs.items():
        assert not set(text) & set(SEPARATORS), (command, text)
        assert "\\u200f\\u2028\\u2029\\u200e\\u061c\\x85" in text, (command, text)
    data = json.loads(run("context", "--json", "sep").stdout)  # JSON keeps the data as it is
    assert data["messages"][0]["content"][0]["text"] == f"first{SEPARATORS}message"
    assert json.loads(run("ls", "--json").stdout)[0]["name"] == f"na{SEPARATORS}me"


def test_an_import_failure_of_a_file_with_a_newline_in_its_name_keeps_the_reason(run: Run, tmp_path: Path) -> None:
    """Before, the reason was cut at the name's newline: ``error: p/a b.jsonl: p/a``."""
    bad = tmp_path / "a\nb.jsonl"
    bad.write_text("garbage\n")
    lenient = tmp_path / "c\x1bd.jsonl"
    lenient.write_text(json.dumps({"type": "session", "version": 3, "id": "nl", "timestamp": TS, "cwd": "/w"})
                       + "\ngarbage\n")
    result = run("import", str(bad), str(tmp_path / "no\nsuch.jsonl"))
    errors = result.stderr.splitlines()
    assert result.exit_code == 2 and len(errors) == 3, result.stderr
    assert errors[0] == f"error: {tmp_path}/a\\nb.jsonl:1: the session header is not readable: invalid JSON:" \
        " unexpected character, expected a JSON value: line 1 column 1 (char 0)"
    assert errors[1] == f"error: {tmp_path}/no\\nsuch.jsonl: No such file or directory"
    skipped = run("import", "--lenient", str(lenient))
    assert skipped.exit_code == 0 and skipped.stderr.startswith(f"skipped {tmp_path}/c\\x1bd.jsonl:2: "), skipped.stderr
    assert len(skipped.stderr.splitlines()) == 1


INVISIBLE = "\ufeff\u200b\u2060\u2064\u00ad\U000e0001\U000e0041\U000e007f"
"""Format characters (category Cf) a terminal shows as nothing: the BOM, zero-width space, the word
joiner, an invisible operator, the soft hyphen and tag characters (text can hide in them)."""


def test_text_output_escapes_every_format_character_and_tabs_in_one_line_fields(run: Run, tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "inv", "timestamp": TS, "cwd": f"/w{INVISIBLE}"}
    entries = [
        msg("e1", None, user(f"first{INVISIBLE}message")),
        msg("e2", "e1", assistant(f"reply{INVISIBLE}", model=f"m{INVISIBLE}")),
        entry("e3", "e2", "session_info", name=f"na\tme{INVISIBLE}"),
    ]
    assert run("import", str(write_session(tmp_path / "inv.jsonl", header, entries))).exit_code == 0
    outputs = {command[0]: run(*command).stdout for command in (
        ["ls"], ["tree", "inv"], ["stats", "inv"], ["context", "inv"], ["search", "first"])}
    for command, text in outputs.items():
        assert not set(text) & set(INVISIBLE), (command, text)
        escaped = "\\ufeff\\u200b\\u2060\\u2064\\xad\\U000e0001\\U000e0041\\U000e007f"
        assert escaped in text, (command, text)
    assert "Name: na\\tme" in outputs["stats"], outputs["stats"]
    assert json.loads(run("ls", "--json").stdout)[0]["name"] == f"na\tme{INVISIBLE}"  # JSON keeps them


def test_the_escaped_format_characters_are_unicodes_category_cf() -> None:
    import sys
    import unicodedata

    from sessionstore.cli.render import safe_line

    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if unicodedata.category(char) == "Cf" and char not in JOINERS:
            assert safe_line(char) != char, hex(code)


JOINERS = "\u200c\u200d"
"""Format characters text output keeps: emoji sequences and Indic and Persian words need them."""


def test_the_joiners_that_emoji_and_scripts_need_are_printed_as_they_are() -> None:
    from sessionstore.cli.render import safe_line

    family, persian, devanagari = ("\U0001f468\u200d\U0001f469\u200d\U0001f467",
                                   "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", "\u0915\u094d\u200d\u0937")
    for text in (family, persian, devanagari):
        assert safe_line(text) == text


def test_lone_surrogates_in_session_data_print_escaped(run: Run, tmp_path: Path) -> None:
    # (in an assistant message: a lone surrogate in the cwd, a name or the first user message cannot be
    # imported yet, the session row's text columns refuse it)
    line = (
        '{"type":"message","id":"s1","parentId":null,"timestamp":"' + TS + '","message":{"role":"assistant",'
        '"content":[{"type":"text","text":"a\\ud800b \\ud83d\\ude00"}],"timestamp":1}}'
    )
    path = tmp_path / "surrogate.jsonl"
    path.write_text('{"type":"session","version":3,"id":"sur","timestamp":"' + TS + '","cwd":"/w"}\n' + line + "\n",
                    encoding="ascii")
    imported = run("import", str(path))
    assert imported.exit_code == 0, imported.stderr
    assert "a\\ud800b 😀" in run("context", "sur").stdout
    assert "a\\ud800b 😀" in run("tree", "sur").stdout
    for command in (["context", "--json", "sur"], ["show", "sur", "s1"], ["tree", "--json", "sur"]):
        raw = run(*command).stdout_bytes
        assert b'"a\\ud800b \xf0\x9f\x98\x80"' in raw, command
    assert json.loads(run("show", "sur", "s1").stdout)["message"]["content"][0]["text"] == "a\ud800b \U0001f600"


def test_output_never_fails_on_a_locale_that_is_not_utf8(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    env = {"PYTHONIOENCODING": "ascii", "LC_ALL": "C"}
    with SessionStore(url) as store:
        sid = store.create_session(cwd="/w")
        store.append_message(sid, user("é中😀 \U0001f600"))
        store.append_session_info(sid, "naïve")
    text = run_subprocess("--db", url, "context", sid, env=env)
    assert text.exit_code == 0 and text.stderr == ""
    assert "\\xe9\\u4e2d\\U0001f600 \\U0001f600" in text.stdout
    listed = run_subprocess("--db", url, "ls", env=env)
    assert listed.exit_code == 0 and "na\\xefve" in listed.stdout
    data = run_subprocess("--db", url, "context", "--json", sid, env=env)
    assert data.exit_code == 0
    assert json.loads(data.stdout_bytes.decode("utf-8"))["messages"][0]["content"][0]["text"] == "é中😀 \U0001f600"
    missing = run_subprocess("--db", url, "context", "é-nosuch", env=env)
    assert_one_error_line(missing, "no session")


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    with SessionStore(url) as store:
        sid = store.import_jsonl(PI_FILES["large-session"]).session_id
    code = "import sys; from sessionstore.cli import main; sys.argv[0] = 'sessionstore'; main()"
    for command in (["tree", "--json", sid], ["context", sid], ["export", sid]):
        with subprocess.Popen([sys.executable, "-c", code, "--db", url, *command], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) as child:
            assert child.stdout is not None and child.stderr is not None
            child.stdout.read(100)
            child.stdout.close()
            err = child.stderr.read()
            assert child.wait(timeout=120) == 0 and err == b"", (command, err)


def test_a_closed_stdout_is_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    SessionStore(url).close()
    code = "import sys; from sessionstore.cli import main; sys.argv[0] = 'sessionstore'; main()"
    done = subprocess.run(f'"{sys.executable}" -c "{code}" --db "{url}" ls >&-', shell=True, capture_output=True,
                          timeout=120, check=False)
    assert done.returncode == 2 and done.stderr == b"error: standard output is closed\n"


def test_the_tree_of_real_sessions_prints_as_text_and_json(run: Run) -> None:
    for path in PI_FILES.values():
        sid = run("import", str(path)).stdout.strip()
        entries = next(i["entries"] for i in json.loads(run("ls", "--json").stdout) if i["id"] == sid)
        text = run("tree", "--full", sid)
        assert text.exit_code == 0 and len(text.stdout.splitlines()) == entries + 1
        tree = run("tree", "--json", sid)
        assert tree.exit_code == 0 and tree.stdout.count('"onActivePath": ') == entries


def test_file_names_that_are_not_utf8_still_import_and_export(sqlite_url: str, tmp_path: Path) -> None:
    source = tmp_path / os.fsdecode(b"\xff.jsonl")
    shutil.copy(PI_FILES["large-session"], source)
    assert invoke("--db", sqlite_url, "import", str(source)).exit_code == 0
    broken = tmp_path / os.fsdecode(b"\xfe.jsonl")
    broken.write_text('{"type":"session","id":"q","timestamp":"t","cwd":"/"}\n{"type":"message",\n')
    assert_one_error_line(invoke("--db", sqlite_url, "import", str(broken)), "\\udcfe.jsonl:2: invalid JSON")
    target = tmp_path / os.fsdecode(b"\xfd.jsonl")
    done = invoke("--db", sqlite_url, "export", "d703", "-o", str(target))
    assert done.exit_code == 0 and target.read_bytes().startswith(b'{"type":"session"')

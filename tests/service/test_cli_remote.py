"""The CLI against a server (issue 23 point 7): ``--db http://HOST:PORT`` with ``$SESSIONSTORE_TOKEN``
makes every command of the issue's list print what it prints on a local database, byte for byte, with
the same exit status and error lines. The same pi fixtures are imported (by the CLI) into a local SQLite
file and into a real ``sessionstore serve`` (both backends); each command then runs on both sides.
Writes run on both sides too and are compared by ``export``, with the ids and times a write makes
itself renamed in order of appearance (they are random or the clock's on each side).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sessionstore.cli import cli
from tests.service.conftest import Server

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pi"
FILES = [FIXTURES / "before-compaction.v3.jsonl", FIXTURES / "large-session.v3.jsonl"]
BIG = "ffae836b-9420-4060-ac13-7745215f90ff"  # before-compaction
LARGE = "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"


@dataclass
class Sides:
    """One database reached two ways: ``local`` (a SQLite file's URL) and ``remote`` (a server's URL
    with ``token``); both hold the same sessions."""

    local: str
    remote: str
    token: str
    server: Server
    tmp: Path

    def run(self, db: str, *args: str, token: str | None = None, stdin: bytes | None = None,
            **env: str | None) -> Result:
        environ: dict[str, str | None] = {"SESSIONSTORE_TOKEN": token, "SESSIONSTORE_TENANT": None,
                                          "SESSIONSTORE_DB": None, "COLUMNS": None, **env}
        return CliRunner().invoke(cli, ["--db", db, *args], env=environ, input=stdin, catch_exceptions=False)

    def both(self, *args: str, stdin: bytes | None = None) -> tuple[Result, Result]:
        return (self.run(self.local, *args, stdin=stdin),
                self.run(self.remote, *args, token=self.token, stdin=stdin))

    def same(self, *args: str, stdin: bytes | None = None) -> Result:
        """Run ``args`` on both sides; their stdout, stderr and exit status are the same."""
        local, remote = self.both(*args, stdin=stdin)
        assert (remote.exit_code, remote.stderr) == (local.exit_code, local.stderr), args
        assert remote.stdout_bytes == local.stdout_bytes, args
        return local


@pytest.fixture(scope="module")
def sides(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sides]:
    tmp = tmp_path_factory.mktemp("cli-remote")
    s = Sides(local=f"sqlite:///{tmp / 'local.db'}", remote=server.base_url, token=server.token("default", "write"),
              server=server, tmp=tmp)
    imported = s.same("import", "--silent", "--json", *map(str, FILES))
    assert [item["status"] for item in json.loads(imported.stdout)] == ["imported", "imported"]
    yield s


READS = [
    ("ls",), ("ls", "--json"), ("ls", "--nl"), ("ls", "--sort", "modified", "--limit", "1", "--json"),
    ("ls", "--cwd", "/Users/badlogic/workspaces/pi-mono"),
    ("context", BIG), ("context", BIG, "--json"), ("context", BIG, "--json", "--provider-safe"),
    ("context", "ffae83", "--leaf", "00000040", "--json"), ("context", "--latest", "--json"),
    ("context", LARGE, "--full"),
    ("context", BIG, "--payload", "--provider", "anthropic", "--model", "claude-sonnet-4-5"),
    ("tree", BIG), ("tree", BIG, "--json"), ("tree", LARGE, "--full"),
    ("show", BIG, "00000005"), ("show", "d70", "0000002a"),
    ("export", BIG), ("export", LARGE, "--html"),
    ("search", "compaction"), ("search", "compaction", "--json"), ("search", "the", "--limit", "3", "--json"),
    ("stats", "--all"), ("stats", "--all", "--json"),
    ("stats", "--all", "--by", "model", "--json"), ("stats", BIG), ("stats", LARGE, "--json"),
    ("validate", BIG, "--json"), ("compact", BIG, "--plan", "--json"), ("compact", LARGE, "--plan"),
]


@pytest.mark.parametrize("args", READS, ids=" ".join)
def test_reads_print_the_same(sides: Sides, args: tuple[str, ...]) -> None:
    if args[0] == "stats" and not args[1].startswith("-") and "--json" not in args:
        return stats_name_their_database(sides, args)
    result = sides.same(*args)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes


def stats_name_their_database(sides: Sides, args: tuple[str, ...]) -> None:
    """``stats SESSION``'s text names the database it read: the file, or the server's URL."""
    local, remote = sides.both(*args)
    assert (remote.exit_code, remote.stderr) == (local.exit_code, local.stderr) == (0, "")
    assert f"File: In database {sides.remote}\n" in remote.stdout
    local_file = sides.local.removeprefix("sqlite:///")
    assert remote.stdout.replace(sides.remote, "DB") == local.stdout.replace(local_file, "DB")


FAILURES = [
    ("context", "no-such-session"), ("show", "no-such-session", "00000005"), ("show", BIG, "zzzzzzzz"),
    ("show", BIG, "0000"), ("show", BIG, "000"), ("tree", ""), ("export", "nope", "--html"), ("stats", "nope"),
    ("context", BIG, "--leaf", "nope", "--json"), ("rm", "nope", "--yes"), ("fork", BIG, "--leaf", "nope"),
    ("append", "nope", "--user", "hi"), ("edit", BIG, "nope", "--omit"),
    ("compact", BIG, "--summary", "s", "--first-kept", "nope"),
    ("append", BIG, "--type", "custom", "-", "<<", '{"customType": 5}'),
    ("append", BIG, "-", "<<", '{"role": "user", "content": 5}'),
    ("append", BIG, "--type", "label", "-", "<<", '{"targetId": "nope", "label": "x"}'),
    ("stats", "--all", "--by", "nothing"),
]


@pytest.mark.parametrize("args", FAILURES, ids=" ".join)
def test_errors_are_the_same_line(sides: Sides, args: tuple[str, ...]) -> None:
    result = sides.same(*args[:-2], stdin=args[-1].encode()) if "<<" in args else sides.same(*args)
    assert result.exit_code != 0
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr


# -- writes ------------------------------------------------------------------------------------
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def normalized(export: bytes, known: set[str]) -> list[Any]:
    """An export's lines with what a write makes itself (ids not in ``known``, and the times of the
    entries carrying them) renamed in order of appearance."""
    names: dict[str, str] = {}

    def rename(value: Any, new_entry: bool) -> Any:
        if isinstance(value, dict):
            return {k: ("<time>" if new_entry and k == "timestamp" else rename(v, new_entry)) for k, v in value.items()}
        if isinstance(value, list):
            return [rename(v, new_entry) for v in value]
        if isinstance(value, str) and value not in known and (re.fullmatch(r"[0-9a-f]{8}", value)
                                                               or re.fullmatch(r"[0-9a-f-]{36}", value)):
            return names.setdefault(value, f"<new {len(names)}>")
        return value

    lines = [json.loads(line) for line in export.splitlines()]
    return [rename(line, line.get("id") not in known or line.get("type") == "session") for line in lines]


@pytest.fixture(scope="module")
def work(sides: Sides) -> tuple[str, set[str]]:
    """A small session (the first lines of a fixture, under an id of its own) on both sides."""
    lines = FILES[0].read_text().splitlines()[:12]
    header = json.loads(lines[0])
    header["id"] = "cli-remote-work"
    path = sides.tmp / "work.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    imported = sides.same("import", "--silent", str(path))
    assert imported.stdout == "cli-remote-work\n"
    known = {"cli-remote-work", header["timestamp"], *(json.loads(line)["id"] for line in lines[1:])}
    return "cli-remote-work", known


def new_ids(text: str, known: set[str]) -> str:
    """``text`` with the entry ids a write made (not in ``known``) as ``<id>``."""
    return re.sub(r"'([0-9a-f]{8})'", lambda m: m.group(0) if m.group(1) in known else "'<id>'", text)


def compact(text: str) -> bytes:
    return json.dumps(json.loads(text)).encode()


def bare_ids(text: str, known: set[str]) -> str:
    return re.sub(r"\b[0-9a-f]{8}\b", lambda m: m.group(0) if m.group(0) in known else "<id>", text)


def exports_match(sides: Sides, session: str, known: set[str]) -> None:
    local, remote = sides.both("export", session)
    assert (local.exit_code, remote.exit_code) == (0, 0), (local.stderr, remote.stderr)
    assert normalized(remote.stdout_bytes, known) == normalized(local.stdout_bytes, known)


WRITES = [
    ("append", "{sid}", "--user", "hello from both sides"),
    ("append", "{sid}", "--assistant", "an answer", "--model", "anthropic/claude-sonnet-4-5"),
    ("append", "{sid}", "--custom", "note", "--text", "a note"),
    ("append", "{sid}", "--type", "custom", "-", "<<", '{"customType": "k", "data": {"a": 1}}'),
    ("append", "{sid}", "--type", "session_info", "-", "<<", '{"name": "the work"}'),
    ("append", "{sid}", "--expected-leaf", "none", "--user", "refused: the leaf is not none"),
    ("edit", "{sid}", "00000003", "--content", "edited text"),
    ("edit", "{sid}", "00000004", "--omit"),
    ("label", "{sid}", "00000002", "start"),
    ("name", "{sid}", "renamed"),
    ("branch", "{sid}", "00000005"),
    ("branch", "{sid}", "00000006", "--summary", "left a branch"),
    ("compact", "{sid}", "--summary", "compacted", "--first-kept", "00000006", "--keep-recent-tokens", "0"),
    ("compact", "{sid}", "--summary", "compacted by plan", "--keep-recent-tokens", "10"),
    ("append", "{sid}", "--bash", "ls", "--exit-code", "0"),
]


def test_writes_store_the_same(sides: Sides, work: tuple[str, set[str]]) -> None:
    sid, known = work
    for template in WRITES:
        args = [part.replace("{sid}", sid) for part in template]
        stdin = None
        if "<<" in args:
            at = args.index("<<")
            args, stdin = args[:at], args[at + 1].encode()
        local, remote = sides.both(*args, stdin=stdin)
        assert remote.exit_code == local.exit_code, args
        assert new_ids(remote.stderr, known) == new_ids(local.stderr, known), args
        if local.exit_code == 0:  # (the new entry's id: random on each side)
            assert re.fullmatch(r"[0-9a-f]{8}\n|", remote.stdout), (args, remote.stdout)
        else:
            assert remote.stdout == local.stdout == "", args
        exports_match(sides, sid, known)
    local, remote = sides.both("tree", sid)
    assert bare_ids(remote.stdout, known) == bare_ids(local.stdout, known)


def test_fork_and_rm(sides: Sides, work: tuple[str, set[str]]) -> None:
    sid, known = work
    local, remote = sides.both("fork", sid, "--leaf", "00000005", "--json")
    assert (local.exit_code, remote.exit_code) == (0, 0), (local.stderr, remote.stderr)
    local_id, remote_id = json.loads(local.stdout)["sessionId"], json.loads(remote.stdout)["sessionId"]
    assert normalized(compact(remote.stdout), known) == normalized(compact(local.stdout), known)
    local_export = sides.run(sides.local, "export", local_id).stdout_bytes
    remote_export = sides.run(sides.remote, "export", remote_id, token=sides.token).stdout_bytes
    assert normalized(remote_export, known) == normalized(local_export, known)
    local_rm = sides.run(sides.local, "rm", local_id, "--yes")
    remote_rm = sides.run(sides.remote, "rm", remote_id, "--yes", token=sides.token)
    assert remote_rm.exit_code == local_rm.exit_code == 0
    assert remote_rm.stderr.replace(remote_id, "X") == local_rm.stderr.replace(local_id, "X") == "deleted X\n"
    assert remote_rm.stdout.replace(remote_id, "X") == local_rm.stdout.replace(local_id, "X")
    for db, token, gone in ((sides.local, None, local_id), (sides.remote, sides.token, remote_id)):
        assert gone not in sides.run(db, "ls", token=token).stdout


def test_import_again(sides: Sides) -> None:
    """``--skip-existing``, ``--replace``, a session already there, and a file with a bad line."""
    sides.same("import", "--silent", "--json", "--skip-existing", str(FILES[0]))
    sides.same("import", "--silent", "--json", "--replace", str(FILES[1]))
    exists = sides.same("import", "--silent", str(FILES[0]))
    assert exists.exit_code != 0
    bad = sides.tmp / "bad.jsonl"
    bad.write_text(json.dumps({"type": "session", "version": 3, "id": "cli-remote-bad", "cwd": "/x",
                               "timestamp": "2026-01-01T00:00:00.000Z"}) + "\n{not json\n")
    failed = sides.same("import", "--silent", "--json", str(bad))
    assert failed.exit_code != 0
    sides.same("import", "--silent", "--lenient", "--json", str(bad))
    sides.same("export", "cli-remote-bad")
    sides.same("import", "--silent", "-", stdin=FILES[0].read_bytes())


# -- what a server URL refuses ------------------------------------------------------------------
@pytest.mark.parametrize("args", [("sync",), ("db", "current"), ("db", "upgrade"), ("token", "list"),
                                  ("token", "create", "--tenant", "x"), ("serve",), ("demo",)], ids=" ".join)
def test_local_commands_refuse_a_server(sides: Sides, args: tuple[str, ...]) -> None:
    result = sides.run(sides.remote, *args, token=sides.token)
    assert result.exit_code == 2
    assert result.stderr == (f"error: {args[0]} works on the database itself, not on a server: give it the"
                             " database's URL (--db sqlite:///... or postgresql://...) where it runs\n")
    assert result.stdout == ""


def test_tenant_goes_with_the_token_alone(sides: Sides) -> None:
    given = sides.run(sides.remote, "ls", token=sides.token, SESSIONSTORE_TENANT=None)
    assert given.exit_code == 0
    flag = CliRunner().invoke(cli, ["--db", sides.remote, "--tenant", "other", "ls"],
                              env={"SESSIONSTORE_TOKEN": sides.token, "SESSIONSTORE_TENANT": None})
    assert (flag.exit_code, flag.stdout) == (2, "")
    assert flag.stderr == ("error: --tenant cannot go with a server URL: the server takes the tenant from the"
                           " token alone ($SESSIONSTORE_TOKEN)\n")
    env = sides.run(sides.remote, "ls", token=sides.token, SESSIONSTORE_TENANT="other")
    assert (env.exit_code, env.stdout) == (2, "")
    assert env.stderr.startswith("error: $SESSIONSTORE_TENANT cannot go with a server URL")
    other = sides.server.token("cli-remote-other", "write")  # another tenant's token sees its own sessions only
    assert sides.run(sides.remote, "ls", "--json", token=other).stdout == "[]\n"
    denied = sides.run(sides.remote, "show", BIG, "00000005", token=other)
    assert denied.stderr == sides.run(sides.remote, "show", "no-such-session", "00000005", token=other).stderr \
        .replace("no-such-session", BIG)


@pytest.mark.parametrize("token", [None, "", "ss_nosuchtoken_secret", "not-a-token"])
def test_a_missing_or_bad_token_is_the_servers_401(sides: Sides, token: str | None) -> None:
    for args in (("ls",), ("context", BIG, "--json"), ("append", BIG, "--user", "x"),
                 ("import", str(FILES[0]), str(FILES[1]))):  # (one line: no file can be imported)
        result = sides.run(sides.remote, *args, token=token)
        assert (result.exit_code, result.stdout) == (2, ""), args
        assert re.fullmatch(r"error: 401 UNAUTHORIZED: [^\n]+\n", result.stderr), result.stderr
        assert "Traceback" not in result.stderr and (not token or token not in result.stderr)


def test_a_read_token_reads_and_cannot_write(sides: Sides) -> None:
    reader = sides.server.token("default", "read")
    assert sides.run(sides.remote, "tree", BIG, token=reader).stdout == sides.run(sides.local, "tree", BIG).stdout
    refused = sides.run(sides.remote, "append", BIG, "--user", "x", token=reader)
    assert refused.exit_code == 2 and re.fullmatch(r"error: 403 FORBIDDEN: [^\n]+\n", refused.stderr), refused.stderr


def test_no_server_there(sides: Sides) -> None:
    from tests.service.conftest import free_port

    result = sides.run(f"http://127.0.0.1:{free_port()}", "ls", token=sides.token)
    assert result.exit_code == 2 and result.stdout == ""
    assert re.fullmatch(r"error: [^\n]*127\.0\.0\.1[^\n]*\n", result.stderr), result.stderr


def test_help_names_the_server_form() -> None:
    text = CliRunner().invoke(cli, ["--help"], terminal_width=200).stdout
    assert "http://HOST:PORT" in text and "SESSIONSTORE_TOKEN" in text


def test_the_server_url_from_the_environment(sides: Sides) -> None:
    """``$SESSIONSTORE_DB`` may name the server as ``--db`` does."""
    runner = CliRunner()
    via_env = runner.invoke(cli, ["tree", BIG], env={"SESSIONSTORE_DB": sides.remote, "SESSIONSTORE_TOKEN": sides.token,
                                                     "SESSIONSTORE_TENANT": None})
    assert (via_env.exit_code, via_env.stdout) == (0, sides.run(sides.local, "tree", BIG).stdout)
    refused = runner.invoke(cli, ["sync"], env={"SESSIONSTORE_DB": sides.remote, "SESSIONSTORE_TENANT": None})
    assert refused.exit_code == 2 and refused.stderr.startswith("error: sync works on the database itself")


def test_https_to_a_plain_server_is_one_line(sides: Sides) -> None:
    result = sides.run(sides.remote.replace("http://", "https://"), "ls", token=sides.token)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr


@pytest.mark.parametrize("url", ["http://", "http://a b:1", "http://[::1", "http://127.0.0.1:99999", "https://:x",
                                 "http://x\n"])
def test_a_bad_server_url_is_one_line(url: str) -> None:
    result = CliRunner().invoke(cli, ["--db", url, "ls"], env={"SESSIONSTORE_TENANT": None})
    assert (result.exit_code, result.stdout) == (2, "")
    assert re.fullmatch(r"error: --db [^\n]+: not a server URL[^\n]*: give http://HOST:PORT\n", result.stderr)


def test_the_lookup_routes(sides: Sides) -> None:
    """The routes the CLI's prefixes and ``show`` read (``routes_lookup``), over HTTP: ids by prefix, one
    entry as the export holds it, and the library's errors."""
    lines = {json.loads(line)["id"]: json.loads(line) for line in FILES[1].read_text().splitlines()[1:]}
    with sides.server.client(sides.token) as http:
        found = http.get(f"/v1/sessions/{LARGE}/entry-ids", params={"prefix": "0000001", "limit": 3})
        assert found.status_code == 200, found.text
        assert found.json() == {"entries": [{"id": i, "type": lines[i]["type"]}
                                            for i in sorted(i for i in lines if i.startswith("0000001"))[:3]]}
        one = http.get(f"/v1/sessions/{LARGE}/entries/0000002a")
        assert one.status_code == 200 and one.json() == lines["0000002a"]
        missing = http.get(f"/v1/sessions/{LARGE}/entries/nope")
        assert (missing.status_code, missing.json()["storeCode"]) == (404, "ENTRY_NOT_FOUND")
        too_many = http.get(f"/v1/sessions/{LARGE}/entry-ids", params={"limit": 10**6})
        assert too_many.status_code == 422
        nobody = http.get("/v1/sessions/no-such/entry-ids")
        assert (nobody.status_code, nobody.json()["storeCode"]) == (404, "SESSION_NOT_FOUND")

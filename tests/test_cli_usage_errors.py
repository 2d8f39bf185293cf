"""click's own errors (an unknown option, a missing argument, a bad value, a file it cannot open) are
one ``error:`` line with a ``--help`` hint, exit 2, for every command: never click's usage block."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sessionstore.cli import cli

CASES = [
    (["show", "0194c2", "--leaf"], "No such option '--leaf'; an argument that starts with '-' goes after '--'"
     " (try 'sessionstore show --help')"),
    (["--bogus", "ls"], "No such option '--bogus'"),
    (["db", "bogus"], "No such command 'bogus' (try 'sessionstore db --help')"),
    (["context"], "Missing argument 'SESSION' (or give --latest) (try 'sessionstore context --help')"),
    (["ls", "--limit", "x"], "Invalid value for '--limit'"),
    (["payload", "/nonexistent/ctx.json", "--provider", "anthropic", "--model", "m"],
     "Invalid value for 'CONTEXT.json'"),
    (["stats", "a", "--all"], "give a SESSION or --all, not both"),
    (["nosuchcommand"], "No such command 'nosuchcommand'"),
    ([], "Missing command (try 'sessionstore --help')"),
    (["compact", "S", "--keep", "abc"], "No such option '--keep' (did you mean '--keep-recent-tokens'?); an argument"
     " that starts with '-' goes after '--' (try 'sessionstore compact --help')"),
    (["context", "S", "--leaf"], "Option '--leaf' requires an argument (try 'sessionstore context --help')"),
    (["db", "upgrade", "--hel"], "No such option '--hel' (did you mean '--help'?); an argument that starts with '-'"
     " goes after '--' (try 'sessionstore db upgrade --help')"),
]


@pytest.mark.parametrize(("args", "expected"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_usage_error_is_one_error_line(sqlite_url: str, args: list[str], expected: str) -> None:
    done = CliRunner().invoke(cli, ["--db", sqlite_url, *args], prog_name="sessionstore",
                                catch_exceptions=False)
    assert done.exit_code == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ") and expected in lines[0]
    assert "Usage:" not in done.stderr


def test_an_entry_id_that_looks_like_an_option_goes_after_two_dashes(sqlite_url: str) -> None:
    runner = CliRunner()
    sid = runner.invoke(cli, ["--db", sqlite_url, "new", "--cwd", "/w"]).stdout.strip()
    done = runner.invoke(cli, ["--db", sqlite_url, "show", sid, "--", "--leaf"])
    assert done.exit_code == 2 and done.stderr.strip() == f"error: session '{sid}' has no entry '--leaf'"


def test_no_arguments_still_shows_the_help() -> None:
    assert "Commands:" in CliRunner().invoke(cli, []).output


def test_a_group_without_its_command_shows_its_help_as_sessionstore_alone_does() -> None:
    alone, db = CliRunner().invoke(cli, []), CliRunner().invoke(cli, ["db"])
    assert (alone.exit_code, db.exit_code) == (2, 2) and alone.stdout == db.stdout == ""
    assert "Commands:" in alone.stderr and "Commands:" in db.stderr and "upgrade" in db.stderr

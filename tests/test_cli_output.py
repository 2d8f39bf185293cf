"""Output for scripts (issue 14, item 3): every ``--json`` is one shape whatever the arguments, times
in it are ISO 8601 (pi's own entries and messages are printed as pi wrote them), ``--nl`` prints the
same objects a line each, and every command that reads JSON shows an example in its help."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from tests.paths import PI_FILES

PI_DATA_KEYS = frozenset({"messages", "llm", "entry", "entries", "message", "header", "messagesToSummarize",
                          "turnPrefixMessages"})
"""Keys whose values are pi's own data, printed as pi writes them (epoch-ms message timestamps)."""
TIME_KEY = re.compile(r"(?i)(^|[a-z])(time|timestamp|date|created|modified|active|since|at)$")


def run(url: str, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--db", url, *args])
    assert result.exit_code in (0, 1), result.output
    return result


def times_in(value: Any, path: str = "$") -> Iterator[tuple[str, Any]]:
    """(path, value) of every time-like field outside pi's own data."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in PI_DATA_KEYS:
                continue
            if TIME_KEY.search(key) and not isinstance(item, dict | list):
                yield f"{path}.{key}", item
            yield from times_in(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from times_in(item, f"{path}[{index}]")


def is_iso_8601(text: str) -> bool:
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    url = f"sqlite:///{tmp_path_factory.mktemp('output') / 'sessions.db'}"
    with SessionStore(url) as store:
        ids = [store.import_jsonl(path).session_id for path in PI_FILES.values()]
        entry = store.entries(ids[0])[3]["id"]
    return url, ids[0], entry


def json_commands(session_id: str, entry_id: str) -> list[list[str]]:
    return [
        ["ls", "--json"], ["context", session_id, "--json"], ["context", "--latest", "--json"],
        ["validate", session_id, "--json"], ["tree", session_id, "--json"], ["show", session_id, entry_id],
        ["search", "the", "--json"], ["stats", session_id, "--json"], ["stats", "--all", "--by", "day", "--json"],
        ["compact", session_id, "--plan", "--json"],
    ]


def test_every_time_in_json_output_is_iso_8601(database: tuple[str, str, str]) -> None:
    url, session_id, entry_id = database
    for command in json_commands(session_id, entry_id):
        printed = json.loads(run(url, *command).stdout)
        for path, value in times_in(printed):
            assert value is None or (isinstance(value, str) and is_iso_8601(value)), (command, path, value)


def test_nl_prints_the_objects_of_the_json_array_a_line_each(database: tuple[str, str, str]) -> None:
    url, _session_id, _entry_id = database
    for command in (["search", "the"], ["ls"]):
        as_array = json.loads(run(url, *command, "--json").stdout)
        lines = run(url, *command, "--nl").stdout.splitlines()
        assert [json.loads(line) for line in lines] == as_array and len(lines) == len(as_array) > 0


def test_import_json_is_an_array_for_one_file_as_for_two(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    one = json.loads(run(url, "import", str(PI_FILES["large-session"]), "--json").stdout)
    two = json.loads(run(url, "import", *map(str, PI_FILES.values()), "--skip-existing", "--json").stdout)
    assert isinstance(one, list) and len(one) == 1 and one[0]["status"] == "imported"
    assert isinstance(two, list) and [o["status"] for o in two] == ["exists", "imported"]


def test_every_command_that_reads_json_shows_an_example_in_its_help() -> None:
    reads_json = {"append", "import"}  # a message or entry as JSON; pi's JSONL files
    for name in reads_json:
        command = cli.commands[name]
        assert isinstance(command, click.Command)
        shown = CliRunner().invoke(cli, [name, "--help"]).output
        assert "Example" in shown and "sessionstore " + name in shown, name

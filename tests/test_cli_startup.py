"""A command imports only what it needs (issue 14, item 1): help needs no database layer, and a read of
an existing SQLite file at the current schema needs neither SQLAlchemy (the file is opened with sqlite3)
nor the pydantic models, Alembic, the catalog it does not use or provider code; a URL that needs
SQLAlchemy's parser still works, with SQLAlchemy.
What each command loads is checked here, in a fresh interpreter; the times are benchmarks/cli.py's."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sessionstore.api import SessionStore
from tests.paths import PI_FILES

# A fresh interpreter runs the command in-process and prints the top-level packages and the
# sessionstore modules it has loaded.
PROBE = """
import json, sys
from sessionstore.cli import cli
try:
    cli.main(args=sys.argv[1:], prog_name="sessionstore", standalone_mode=True)
except SystemExit as exc:
    code = exc.code
else:
    code = 0
loaded = sorted({m.split(".")[0] for m in sys.modules} | {m for m in sys.modules if m.startswith("sessionstore.")})
print("\\n" + json.dumps({"code": code, "loaded": loaded}))
"""
HEAVY_FOR_HELP = {"sqlalchemy", "pydantic", "pydantic_core", "alembic", "psycopg", "sessionstore.api"}
NOT_FOR_A_READ = {
    "pydantic", "pydantic_core", "alembic", "sessionstore.models.entries", "sessionstore.models.content",
    "sessionstore.models.messages", "sessionstore.provider", "sessionstore.catalog.search",
    "sessionstore.catalog.sync", "sessionstore.catalog.stats", "sessionstore.wire.jsonl", "sessionstore.store.schema",
    "sqlalchemy", "sessionstore.store.migrate",
}


def loaded_by(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                          check=False)
    report = json.loads(done.stdout.rsplit("\n", 2)[-2])
    assert report["code"] in (0, None), done.stderr[-2000:]
    return set(report["loaded"])


def command_names() -> list[list[str]]:
    import click

    from sessionstore.cli import cli

    names: list[list[str]] = [[]]
    for name, command in sorted(cli.commands.items()):
        names.append([name])
        if isinstance(command, click.Group):
            names.extend([name, sub] for sub in sorted(command.commands))
    return names


@pytest.mark.slow
def test_help_of_every_command_loads_no_database_layer_and_no_models() -> None:
    for name in command_names():
        heavy = loaded_by(*name, "--help") & HEAVY_FOR_HELP
        assert not heavy, f"`sessionstore {' '.join(name)} --help` loads {sorted(heavy)}"


@pytest.fixture(scope="module")
def small_database(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    path = tmp_path_factory.mktemp("startup") / "sessions.db"
    url = f"sqlite:///{path}"
    with SessionStore(url) as store:
        session_id = store.import_jsonl(PI_FILES["before-compaction"]).session_id
    return url, session_id


@pytest.mark.slow
@pytest.mark.parametrize("command", [
    ["ls"], ["ls", "--json"], ["context", "{sid}"], ["context", "{sid}", "--json"], ["tree", "{sid}"],
    ["show", "{sid}", "{entry}"], ["export", "{sid}"], ["stats", "{sid}"], ["search", "read"],
], ids=" ".join)
def test_a_read_loads_neither_sqlalchemy_nor_the_models_alembic_or_the_catalog(
    small_database: tuple[str, str], command: list[str]
) -> None:
    url, session_id = small_database
    with SessionStore(url) as store:
        entry_id = store.entries(session_id)[0]["id"]
    args = [part.format(sid=session_id, entry=entry_id) for part in command]
    loaded = loaded_by("--db", url, *args)
    assert "sessionstore.store.sqlite" in loaded  # (the probe ran the command against the database)
    not_needed = NOT_FOR_A_READ - ({"sessionstore.catalog.stats"} if command[0] == "stats" else set()) - (
        {"sessionstore.catalog.search"} if command[0] == "search" else set())
    assert not loaded & not_needed, f"`sessionstore {' '.join(command)}` loads {sorted(loaded & not_needed)}"


@pytest.mark.slow
def test_a_url_that_needs_sqlalchemys_parser_opens_with_sqlalchemy(small_database: tuple[str, str]) -> None:
    url, _session_id = small_database
    loaded = loaded_by("--db", url + "?timeout=5", "ls")
    assert "sqlalchemy" in loaded and "sessionstore.store.sqlite" in loaded

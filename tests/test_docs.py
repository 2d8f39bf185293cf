"""The README documents what exists: every command, every code; its Python examples run (those marked
``# network:`` on their first line are compiled), its shell examples name commands, options, scripts and
extras that exist, and its test command is the one ``.ci/run`` runs."""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from pathlib import Path
from typing import Any

import click
import pytest

from sessionstore import AsyncSessionStore, SessionStore, errors
from sessionstore.cli import cli
from sessionstore.validate import DIAGNOSTIC_CODES
from tests.paths import FIXTURES, ROOT

README = (ROOT / "README.md").read_text()
NETWORK = "# network:"
"""The first line of a Python example that needs the network (a provider's API): it is compiled, not run,
and the rest of the line says what to install and which key to set."""


def code_blocks(language: str) -> list[tuple[int, str]]:
    """(line, code) of each fenced block whose info string starts with ``language``."""
    return [(README.count("\n", 0, m.start()) + 1, m[1])
            for m in re.finditer(rf"^```{language}\b[^\n]*\n(.*?)^```", README, re.S | re.M)]


PYTHON = code_blocks("python")
SHELL = [(line, command) for start, block in code_blocks("sh")
         for line, command in enumerate(block.splitlines(), start + 1)]


def command_names(group: click.Group, prefix: str = "") -> list[str]:
    names = []
    for name, command in group.commands.items():
        names.append(f"{prefix}{name}")
        if isinstance(command, click.Group):
            names.extend(command_names(command, f"{prefix}{name} "))
    return names


@pytest.mark.parametrize("name", command_names(cli))
def test_every_command_is_documented_in_the_readme(name: str) -> None:
    assert f"sessionstore {name}" in README


@pytest.mark.parametrize("code", sorted(DIAGNOSTIC_CODES))
def test_every_diagnostic_code_is_documented(code: str) -> None:
    assert f"| `{code}` |" in README


def error_classes() -> list[type[errors.SessionStoreError]]:
    return [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.SessionStoreError)
            and c is not errors.SessionStoreError]


@pytest.mark.parametrize("error", error_classes(), ids=lambda c: c.__name__)
def test_every_error_code_is_documented(error: type[errors.SessionStoreError]) -> None:
    assert f"| `{error.code}` | `{error.__name__}` |" in README


def test_error_codes_are_unique() -> None:
    codes = [c.code for c in error_classes()]
    assert len(codes) == len(set(codes))


def first_commands() -> list[str]:
    first_block = README.split("```sh", 1)[1].split("```", 1)[0]
    return [line for line in first_block.splitlines() if line and not line.startswith("#")]


def test_the_readme_starts_with_an_install_command_and_a_test_command() -> None:
    commands = first_commands()
    assert commands[0].startswith("pip install")
    assert "pytest" in commands[1]


def test_ci_runs_the_readmes_test_command_verbatim_as_its_last_command() -> None:
    ci_lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert ci_lines[-1] == first_commands()[1]


def test_the_readmes_test_command_installs_pi_where_node_is_present() -> None:
    assert ".ci/install-pi.sh --if-node && " in first_commands()[1]
    assert "--if-node" in (ROOT / ".ci" / "install-pi.sh").read_text()


# -- the Python examples ----------------------------------------------------------------------------
def run_example(code: str, line: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Runs an example as a reader would, from a directory of their own that has the repository's
    ``fixtures`` (the examples name them relatively), with the default database there too."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fixtures").symlink_to(FIXTURES)
    monkeypatch.setenv("SESSIONSTORE_DB", f"sqlite:///{tmp_path / 'default.db'}")
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    try:
        exec(compile(code, f"README.md:{line}", "exec"), namespace)
    finally:
        for value in namespace.values():
            if isinstance(value, SessionStore):
                value.close()
    return namespace


def imported_modules(code: str) -> set[str]:
    return {name.split(".")[0] for name in re.findall(r"^(?:from|import) ([\w.]+)", code, re.M)}


@pytest.mark.parametrize(("line", "code"), PYTHON, ids=[f"README.md:{line}" for line, _ in PYTHON])
def test_every_python_example_runs_or_is_marked_as_needing_the_network(
        line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if code.startswith(NETWORK):
        compile(code, f"README.md:{line}", "exec")
        assert "pip install" in code.splitlines()[0], "a network example names what to install"
        return
    # What runs needs nothing beyond the package: an example importing an SDK is marked.
    assert imported_modules(code) <= {"sessionstore"} | sys.stdlib_module_names
    run_example(code, line, tmp_path, monkeypatch)


def example(needle: str) -> tuple[int, str]:
    found = [(line, code) for line, code in PYTHON if needle in code]
    assert len(found) == 1, f"one README example holds {needle!r}"
    return found[0]


def test_the_python_api_example_gives_the_context_it_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    line, code = example("ctx = store.context(sid)")
    namespace = run_example(code, line, tmp_path, monkeypatch)
    ctx = namespace["ctx"]
    assert [m["role"] for m in ctx.messages] == ["user", "assistant", "toolResult"]
    assert ctx.diagnostics == []


def test_the_file_example_imports_a_v1_file_and_exports_it_as_v3(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    line, code = example("store.export_jsonl(")
    run_example(code, line, tmp_path, monkeypatch)
    source = (FIXTURES / "pi" / "before-compaction.jsonl").read_text().splitlines()
    exported = (tmp_path / "exported.jsonl").read_text().splitlines()
    assert '"version"' not in source[0] and exported[0].endswith(',"version":3}')
    assert len(exported) == len(source)


def test_the_readme_names_the_import_and_export_methods_of_the_python_api() -> None:
    python_section = README.split("## Python API", 1)[1].split("\n## ", 1)[0]
    for method in ("import_jsonl", "export_jsonl", "import_entries"):
        assert f"{method}(" in python_section and hasattr(SessionStore, method) and hasattr(AsyncSessionStore, method)


def test_the_agents_example_keeps_what_it_added(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    line, code = example("session.add_items(")
    namespace = run_example(code, line, tmp_path, monkeypatch)
    assert namespace["asyncio"].run(namespace["session"].get_items()) == [
        {"role": "user", "content": "What is 20 + 22?"}]


# -- the shell examples -----------------------------------------------------------------------------
def shell_commands(prefix: str = "") -> list[tuple[int, list[str]]]:
    """Each command of the README's ``sh`` blocks (whose argv[0] is ``prefix``, if given), as argv:
    comments, a trailing ``&`` and ``&&`` / ``|`` chains split off."""
    found = []
    for line, text in SHELL:
        for part in re.split(r"&&|\|", re.sub(r"\s+#.*$|^#.*$", "", text)):
            argv = shlex.split(part.strip().removesuffix("&"))
            if argv and argv[0] == (prefix or argv[0]):
                found.append((line, argv))
    return found


def parse_cli(argv: list[str]) -> click.Command:
    """Parses argv as ``sessionstore`` would, down to its command, running no command: an unknown
    command or option, a missing argument or a bad value is click's UsageError."""
    ctx = cli.make_context("sessionstore", argv)
    command: click.Command = cli
    while isinstance(command, click.Group):
        rest = [*ctx._protected_args, *ctx.args]  # what Group.invoke resolves (click 8.2+)
        name, found, rest = command.resolve_command(ctx, rest)
        assert name is not None and found is not None
        command, ctx = found, found.make_context(name, rest, parent=ctx)
    return command


SESSIONSTORE = shell_commands("sessionstore")


@pytest.mark.parametrize(("line", "argv"), SESSIONSTORE, ids=[f"README.md:{line}" for line, _ in SESSIONSTORE])
def test_every_sessionstore_command_of_a_shell_example_parses(
        line: int, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples name files of the repository relatively
    try:
        parse_cli(argv[1:])
    except click.UsageError as error:
        pytest.fail(f"README.md:{line}: {shlex.join(argv)}: {error.format_message()}")


def test_every_script_a_shell_example_runs_exists() -> None:
    scripts = [(line, argv[1]) for line, argv in shell_commands("python") + shell_commands("python3")
               if argv[1:] and argv[1].endswith(".py")]
    scripts += [(line, argv[0]) for line, argv in shell_commands() if argv[0].startswith(".ci/")]
    scripts += [(line, argv[1]) for line, argv in shell_commands("source")]
    assert scripts
    assert [(line, script) for line, script in scripts if not (ROOT / script).is_file()] == []


def test_every_extra_the_readme_installs_exists() -> None:
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    named = {name for group in re.findall(r"pip install -e '\.\[([\w,]+)\]'", README) for name in group.split(",")}
    named |= {name for group in re.findall(r"sessionstore\[([\w,]+)\]", README) for name in group.split(",")}
    assert {"dev", "postgres", "agents", "bench"} <= named
    assert named <= extras


def test_every_provider_error_code_is_documented() -> None:
    from sessionstore.provider import PROVIDER_ERROR_CODES

    for code in PROVIDER_ERROR_CODES:
        assert f"| `{code}` |" in README


def test_the_error_code_literal_lists_every_error_class_code() -> None:
    from typing import get_args

    assert {c.code for c in error_classes()} | {"SESSIONSTORE_ERROR"} == set(get_args(errors.ErrorCode))


def test_every_public_error_is_a_session_store_error_the_provider_adapters_included() -> None:
    from sessionstore.provider import FixtureProviderError

    assert issubclass(FixtureProviderError, errors.SessionStoreError)


@pytest.mark.parametrize("argv", [["nosuch"], ["ls", "--bogus"], ["ls", "--limit", "many"], ["db", "nosuch"],
                                  ["show"]])
def test_the_shell_check_refuses_an_unknown_command_an_unknown_option_or_a_bad_value(argv: list[str]) -> None:
    with pytest.raises(click.UsageError):
        parse_cli(argv)

"""The README documents what exists: every command, every code, and its Python example runs."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from sessionstore import errors
from sessionstore.cli.main import cli
from sessionstore.validate import DIAGNOSTIC_CODES
from tests.paths import ROOT

README = (ROOT / "README.md").read_text()


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


def test_the_readme_starts_with_an_install_command_and_a_test_command() -> None:
    first_block = README.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line for line in first_block.splitlines() if line and not line.startswith("#")]
    assert commands[0].startswith("pip install")
    assert "pytest" in commands[1]
    assert commands[1].split("&& ", 1)[1] in (ROOT / ".ci" / "run").read_text()


def test_the_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # The first block, the Python API's (the provider recipes after it call the providers over the
    # network; their payload -> response -> record -> payload round trip is tests/test_payloads_responses.py's).
    block = re.findall(r"```python\n(.*?)```", README, re.S)[0]
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    ctx = namespace["ctx"]
    assert [m["role"] for m in ctx.messages] == ["user", "assistant", "toolResult"]  # type: ignore[attr-defined]
    assert ctx.diagnostics == []  # type: ignore[attr-defined]
    namespace["store"].close()  # type: ignore[attr-defined]


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

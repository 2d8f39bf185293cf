"""The one rule for a missing optional part (``tests/requirements.py``): outside CI a skip naming the one
command that installs it, under CI a failure; and every part names a command that exists."""

from __future__ import annotations

import re
import tomllib

import pytest

from tests import requirements
from tests.paths import ROOT
from tests.requirements import (
    CHROMIUM,
    INSTALL_AGENTS,
    INSTALL_DEV,
    NODE,
    PI,
    POSTGRES,
    POSTGRES_SERVER,
    Part,
    module,
    require,
)

pytest_plugins = ["pytester"]

ABSENT = Part("a thing", "make thing", lambda: "the thing is not here")
PRESENT = Part("another thing", "make other", lambda: None)


@pytest.fixture
def outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture
def under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")


@pytest.mark.parametrize(("value", "ci"), [("", False), ("0", False), ("false", False), ("False", False),
                                           ("true", True), ("1", True), ("yes", True)])
def test_ci_is_the_ci_variable_set_to_anything_but_empty_0_or_false(
        monkeypatch: pytest.MonkeyPatch, value: str, ci: bool) -> None:
    monkeypatch.setenv("CI", value)
    assert requirements.in_ci() is ci


def test_a_missing_part_skips_outside_ci_naming_the_command_that_installs_it(outside_ci: None) -> None:
    with pytest.raises(pytest.skip.Exception, match=r"^the thing is not here; run: make thing$"):
        require(ABSENT)


def test_a_missing_part_fails_under_ci_with_the_same_reason(under_ci: None) -> None:
    with pytest.raises(pytest.fail.Exception, match=r"^the thing is not here; run: make thing \(under CI nothing"):
        require(ABSENT)


@pytest.mark.usefixtures("under_ci")
def test_a_present_part_neither_skips_nor_fails() -> None:
    require(PRESENT)


def test_a_missing_module_skips_outside_ci_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"no_such_sdk_xyz is not importable .*; run: pip install nothing$"):
        module("no_such_sdk_xyz", install="pip install nothing")
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match=r"no_such_sdk_xyz is not importable .*; run: pip install nothing "):
        module("no_such_sdk_xyz", install="pip install nothing")
    assert module("json", install="-") is __import__("json")


MARKED = """
import pytest
from tests.requirements import Part

ABSENT = Part("a thing", "make thing", lambda: "the thing is not here")
PRESENT = Part("another thing", "make other", lambda: None)

@pytest.mark.requires(ABSENT)
def test_marked_absent():
    pass

@pytest.mark.requires(PRESENT)
def test_marked_present():
    pass

@pytest.mark.parametrize("case", ["plain", pytest.param("needs", marks=pytest.mark.requires(ABSENT))])
def test_param(case):
    pass
"""


def run_marked(pytester: pytest.Pytester) -> pytest.RunResult:
    pytester.makeconftest("from tests.conftest import pytest_configure, pytest_runtest_setup  # noqa: F401\n")
    pytester.makepyfile(test_marked=MARKED)
    return pytester.runpytest_inprocess("-rs", "-p", "no:cacheprovider", "-p", "no:asyncio", "--strict-markers")


def test_the_requires_mark_skips_a_test_or_a_param_outside_ci(pytester: pytest.Pytester, outside_ci: None) -> None:
    result = run_marked(pytester)
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(["SKIPPED * the thing is not here; run: make thing"])


def test_the_requires_mark_fails_a_test_or_a_param_under_ci(pytester: pytest.Pytester, under_ci: None) -> None:
    result = run_marked(pytester)
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(["*the thing is not here; run: make thing (under CI nothing skips*"])


@pytest.mark.parametrize("part", [NODE, PI, POSTGRES, POSTGRES_SERVER, CHROMIUM], ids=str)
def test_every_part_names_a_script_of_the_repository(part: Part) -> None:
    script = next(word for word in part.install.split() if word.startswith(".ci/"))
    assert (ROOT / script).is_file()


@pytest.mark.parametrize("install", [INSTALL_DEV, INSTALL_AGENTS, "pip install -e '.[bench]'"])
def test_every_extra_a_skip_names_exists(install: str) -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    named = re.fullmatch(r"pip install -e '\.\[(\w+)\]'", install)
    assert named is not None and named[1] in extras


def test_whether_ci_is_set_is_decided_in_one_place() -> None:
    """A test asks tests/requirements.py for a part instead of deciding skip-or-fail itself."""
    deciding = [path.relative_to(ROOT).as_posix() for path in sorted((ROOT / "tests").rglob("*.py"))
                if path.name not in ("requirements.py", "test_requirements.py")
                and re.search(r"\bin_ci\(\)|importorskip\(|os\.environ(\.get)?\(\"CI\"", path.read_text())]
    assert deciding == []


SKIPS_NOT_FOR_A_PART = {
    "tests/test_cli_hostile.py": "root without setpriv: permission bits cannot hold (this machine and CI have it)",
    "tests/test_sync_integrity.py": "a device node cannot be made in this sandbox",
}
"""The skips that are not a missing part (which :func:`tests.requirements.require` decides)."""


def test_no_test_skips_for_a_missing_part_by_itself() -> None:
    """A plain pytest.skip would skip under CI too (test_concurrent_open's PostgreSQL fixture did)."""
    skipping = [path.relative_to(ROOT).as_posix() for path in sorted((ROOT / "tests").rglob("*.py"))
                if path.name not in ("requirements.py", "test_requirements.py")
                and re.search(r"pytest\.skip\(|mark\.skipif\(", path.read_text())]
    assert skipping == sorted(SKIPS_NOT_FOR_A_PART)

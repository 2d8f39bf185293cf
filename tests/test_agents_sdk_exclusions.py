"""The exclusion list of the SDK's own session tests (tests/agents_sdk/exclusions.py) stays honest: every
entry names a test of the copied module it names, with a reason, and most of the SDK's tests run."""

from __future__ import annotations

import importlib

import pytest

from tests.agents_sdk.exclusions import EXCLUSIONS, Exclusion
from tests.requirements import INSTALL_AGENTS, missing

try:
    import agents  # noqa: F401
except ImportError:  # pragma: no cover - .ci/run installs the agents extra
    missing("openai-agents is not installed", INSTALL_AGENTS)

MODULES = ("test_session", "test_session_limit", "test_sqlalchemy_session", "test_async_sqlite_session")


@pytest.mark.parametrize("rule", EXCLUSIONS, ids=[f"{rule.module}::{rule.test}" for rule in EXCLUSIONS])
def test_every_exclusion_names_a_test_of_its_module_and_says_why(rule: Exclusion) -> None:
    module = importlib.import_module(f"tests.agents_sdk.{rule.module}")
    assert callable(getattr(module, rule.test, None)), f"{rule.module} has no {rule.test}"
    assert len(rule.reason) > 40


def test_no_test_is_excluded_twice() -> None:
    names = [(rule.module, rule.test, rule.when) for rule in EXCLUSIONS]
    assert len(names) == len(set(names))


def test_most_of_the_sdks_session_tests_run() -> None:
    tests = {(name, attr) for name in MODULES for attr in vars(importlib.import_module(f"tests.agents_sdk.{name}"))
             if attr.startswith("test_")}
    excluded = {(rule.module, rule.test) for rule in EXCLUSIONS if rule.when is None}  # (not on any backend)
    assert excluded <= tests
    assert len(tests - excluded) >= 60, sorted(tests - excluded)

"""The context the store builds equals pi 1.6's ``buildSessionContext`` and ``convertToLlm`` at every
leaf: of sessions pi itself writes through its SessionManager (seeded random operations), and of the
repository's session files. pi runs live (``pi_oracle.mjs``); nothing of its output is kept here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessionstore.api import SessionStore
from tests.differential.compare import Comparison, compare_file, differences, list_difference, same
from tests.differential.conftest import FIXTURE_FILES, GROUPS, Generated
from tests.differential.features import EXPECTED_FEATURES, file_features
from tests.paths import FIXTURES

Json = dict[str, Any]

# -- the harness itself -------------------------------------------------------------------------


def test_comparison_counts_an_integral_float_equal_to_the_integer() -> None:
    assert same({"usage": {"input": 100}}, {"usage": {"input": 100.0}})
    assert not same({"cost": 0.5}, {"cost": 0.25})


def test_comparison_reads_numbers_as_javascript_does() -> None:
    assert same({"a": 1e2, "b": -0.0, "c": 12345678901234567000}, {"a": 100, "b": 0, "c": 12345678901234567890})
    assert not same({"c": 9007199254740993}, {"c": 9007199254740995})


def test_comparison_tells_true_from_one_and_an_absent_key_from_null() -> None:
    assert not same({"display": True}, {"display": 1})
    assert not same({"role": "custom"}, {"role": "custom", "details": None})


def test_list_difference_names_the_first_differing_message_and_its_fields() -> None:
    pi = [{"role": "user", "content": "a"}, {"role": "system", "content": "x", "sections": {"s": "t"}}]
    ours = [{"role": "user", "content": "a"}, {"role": "system", "content": "y"}]
    text = list_difference("llm", pi, ours)
    assert text is not None
    assert text.splitlines() == [
        "llm differ from pi's at [1] (2 from pi, 2 from us):",
        '    llm[1].content: pi "x", ours "y"',
        '    llm[1].sections: pi {"s":"t"}, ours <absent>',
    ]
    assert list_difference("llm", pi, pi) is None
    assert list(differences([1], [1, 2], "$")) == ["$[1]: pi <absent>, ours 2"]


def test_list_difference_shows_a_message_ours_lacks_as_missing_not_as_a_shifted_diff() -> None:
    system = {"role": "system", "content": "prompt", "timestamp": 1}
    rest = [{"role": "user", "content": f"u{i}", "timestamp": i} for i in range(3)]
    text = list_difference("llm", [system, *rest], rest)
    assert text is not None
    assert text.splitlines() == [
        "llm differ from pi's at [0] (4 from pi, 3 from us):",
        '    llm[0] of pi, missing from ours: {"role":"system","content":"prompt","timestamp":1}',
    ]


def test_generated_sessions_cover_every_entry_type_message_role_and_operation(generated: Generated) -> None:
    found = {f"profile:{g['profile']}" for g in generated.manifest["groups"]}
    for path in generated.pi:
        found |= file_features(path)
    assert EXPECTED_FEATURES - found == set()


def test_generated_sessions_give_several_hundred_leaves_and_pi_loads_every_file(generated: Generated) -> None:
    failed = {path.name: pi["error"] for path, pi in generated.pi.items() if "error" in pi}
    assert failed == {}
    leaves = [leaf for pi in generated.pi.values() for leaf in pi["leaves"]]
    assert len(leaves) >= 500
    assert [leaf["error"] for leaf in leaves if "error" in leaf] == []


# -- the store against pi ----------------------------------------------------------------------


@pytest.mark.parametrize("group", GROUPS)
def test_context_equals_pi_at_every_leaf_of_generated_sessions(
    store: SessionStore, generated: Generated, group: str
) -> None:
    result = Comparison()
    for path in generated.files(group):
        compare_file(store, path, generated.pi[path], name=f"{group}/{path.name}", into=result)
    assert result.leaves > 0
    assert not result.mismatches, f"[{generated.group(group)['profile']} session] {result.report()}"


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[str(p.relative_to(FIXTURES)) for p in FIXTURE_FILES])
def test_context_equals_pi_at_every_leaf_of_fixture_files(
    store: SessionStore, pi_on_fixtures: dict[Path, Json], path: Path
) -> None:
    result = Comparison()
    compare_file(store, path, pi_on_fixtures[path], name=str(path.relative_to(FIXTURES)), into=result)
    assert not result.mismatches, result.report()

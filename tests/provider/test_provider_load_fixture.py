"""load_fixture reads a fixture file; every problem is PROVIDER_INVALID_FIXTURE naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionstore.provider import FixtureProviderError, load_fixture
from tests.provider.provider_support import COURSE_FIXTURE_PATH, course_fixture


def invalid_file(path: Path) -> FixtureProviderError:
    with pytest.raises(FixtureProviderError) as raised:
        load_fixture(path)
    assert raised.value.code == "PROVIDER_INVALID_FIXTURE"
    assert str(path) in raised.value.message
    return raised.value


def test_load_fixture_reads_the_course_fixture_as_plain_data() -> None:
    assert load_fixture(COURSE_FIXTURE_PATH) == course_fixture()
    assert load_fixture(str(COURSE_FIXTURE_PATH)) == course_fixture()


def test_a_missing_fixture_file_is_invalid_and_named(tmp_path: Path) -> None:
    invalid_file(tmp_path / "missing.json")


def test_a_fixture_file_with_broken_json_is_invalid_and_named(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"schemaVersion": 1,', encoding="utf-8")

    invalid_file(path)


def test_a_fixture_file_that_is_not_utf8_is_invalid_and_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"a": "\xe9"}')

    invalid_file(path)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_a_fixture_file_with_non_finite_numbers_is_invalid(tmp_path: Path, literal: str) -> None:
    path = tmp_path / "nan.json"
    path.write_text(f'{{"schemaVersion": 1, "responses": [], "x": {literal}}}', encoding="utf-8")

    invalid_file(path)


def test_a_fixture_file_with_a_duplicate_key_is_invalid(tmp_path: Path) -> None:
    path = tmp_path / "duplicate.json"
    path.write_text('{"schemaVersion": 1, "schemaVersion": 2, "responses": []}', encoding="utf-8")

    assert "duplicate key 'schemaVersion'" in invalid_file(path).message


def test_a_fixture_file_whose_top_level_is_not_an_object_is_invalid(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text("[]", encoding="utf-8")

    invalid_file(path)


def test_a_directory_is_not_a_fixture_file(tmp_path: Path) -> None:
    invalid_file(tmp_path)

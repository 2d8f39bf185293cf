"""The diagnostic codes are a stable contract: the static Literal and the runtime table agree."""

from typing import get_args

from sessionstore.validate import (
    CONTEXT_CODES,
    DIAGNOSTIC_CODES,
    ENTRY_CODES,
    ERROR_CODES,
    LINKAGE_CODES,
    SHAPE_CODES,
    DiagnosticCode,
)


def test_the_literal_and_the_documentation_table_list_the_same_codes() -> None:
    assert set(get_args(DiagnosticCode)) == set(DIAGNOSTIC_CODES)
    assert len(get_args(DiagnosticCode)) == len(DIAGNOSTIC_CODES)


def test_every_code_is_documented_in_one_line() -> None:
    for code, doc in DIAGNOSTIC_CODES.items():
        assert code.isupper() and code.replace("_", "").isalpha(), code
        assert doc.strip() and "\n" not in doc, code


def test_the_four_families_partition_the_codes() -> None:
    families = [SHAPE_CODES, LINKAGE_CODES, CONTEXT_CODES, ENTRY_CODES]
    assert set(DIAGNOSTIC_CODES) == set().union(*families)
    assert sum(len(f) for f in families) == len(DIAGNOSTIC_CODES)


def test_linkage_codes_are_exactly_the_six_of_the_spec() -> None:
    assert {
        "DUPLICATE_TOOL_CALL_ID",
        "DUPLICATE_TOOL_RESULT",
        "ORPHAN_TOOL_RESULT",
        "TOOL_RESULT_BEFORE_CALL",
        "TOOL_NAME_MISMATCH",
        "MISSING_TOOL_RESULT",
    } == LINKAGE_CODES


def test_shape_codes_cover_every_shape_problem_of_the_spec() -> None:
    assert {
        "TRANSCRIPT_NOT_A_LIST",
        "MESSAGE_NOT_A_MAPPING",
        "UNKNOWN_ROLE",
        "INVALID_MESSAGE",
        "INVALID_CONTENT_BLOCK",
        "INVALID_TOOL_CALL",
        "TOOL_ARGUMENTS_NOT_OBJECT",
        "INVALID_TOOL_RESULT",
        "UNREADABLE_VALUE",
    } <= SHAPE_CODES


def test_context_building_codes_are_defined_for_the_other_modules() -> None:
    assert {
        "COMPACTION_FIRST_KEPT_NOT_ON_PATH",
        "COMPACTION_FIRST_KEPT_IS_TOOL_RESULT",
        "UNREGISTERED_ROLE",
        "TRANSFORM_CONTEXT_FAILED",
        "PROVIDER_SAFE_DROPPED_ASSISTANT",
        "PROVIDER_SAFE_SYNTHETIC_RESULT",
        "CONTEXT_EDIT_WITHOUT_REPLACEMENT",
        "CONTEXT_EDIT_TARGET_NOT_IN_CONTEXT",
        "CONTEXT_EDIT_NO_EFFECT",
        "MESSAGE_ENTRY_WITHOUT_MESSAGE",
    } == CONTEXT_CODES


def test_entry_codes_report_what_pi_reads_tolerantly_and_are_not_errors() -> None:
    assert {"INVALID_ENTRY", "PARENT_NOT_FOUND", "HEADER_VERSION_NEWER"} == ENTRY_CODES
    assert not ERROR_CODES & ENTRY_CODES


def test_shape_and_linkage_codes_are_errors_and_context_codes_are_not() -> None:
    assert ERROR_CODES == SHAPE_CODES | LINKAGE_CODES
    assert "MISSING_TOOL_RESULT" in ERROR_CODES
    assert not ERROR_CODES & CONTEXT_CODES

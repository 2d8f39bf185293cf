"""A diagnostic is an immutable value with a camelCase JSON form."""

import dataclasses

import pytest

from sessionstore.validate import Diagnostic, validate_transcript


def test_to_json_uses_wire_names_and_includes_the_entry_id_when_known() -> None:
    diagnostic = Diagnostic("MISSING_TOOL_RESULT", 3, "0000002a", "messages[3].content[0]: ...")
    assert diagnostic.to_json() == {
        "code": "MISSING_TOOL_RESULT",
        "messageIndex": 3,
        "entryId": "0000002a",
        "message": "messages[3].content[0]: ...",
    }
    assert list(diagnostic.to_json()) == ["code", "messageIndex", "entryId", "message"]


def test_to_json_omits_an_unknown_entry_id_and_keeps_a_null_message_index() -> None:
    diagnostic = Diagnostic("TRANSCRIPT_NOT_A_LIST", None, None, "messages: expected a list")
    assert diagnostic.to_json() == {
        "code": "TRANSCRIPT_NOT_A_LIST",
        "messageIndex": None,
        "message": "messages: expected a list",
    }


def test_to_json_returns_a_fresh_dict_each_time() -> None:
    diagnostic = Diagnostic("ORPHAN_TOOL_RESULT", 0, None, "m")
    diagnostic.to_json()["code"] = "changed"
    assert diagnostic.to_json()["code"] == "ORPHAN_TOOL_RESULT"


def test_diagnostics_are_frozen_and_slotted() -> None:
    diagnostic = Diagnostic("ORPHAN_TOOL_RESULT", 0, None, "m")
    with pytest.raises(dataclasses.FrozenInstanceError):
        diagnostic.code = "MISSING_TOOL_RESULT"  # type: ignore[misc]
    with pytest.raises((AttributeError, TypeError)):
        diagnostic.extra = 1  # type: ignore[attr-defined]
    assert not hasattr(diagnostic, "__dict__")


def test_validation_returns_a_tuple_of_frozen_diagnostics() -> None:
    result = validate_transcript([{"role": "toolResult"}, 7])
    assert type(result) is tuple
    assert result and all(type(d) is Diagnostic for d in result)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result[0].message = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        result[0] = result[1]  # type: ignore[index]


def test_equal_findings_are_equal_values() -> None:
    assert validate_transcript(None) == validate_transcript(None)
    assert hash(validate_transcript(None)[0]) == hash(validate_transcript(None)[0])

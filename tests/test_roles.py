"""Each of pi 1.6's message roles is declared once (``models.roles.BUILTIN``: what pi's algorithms ask of
it) and every list of roles is derived from that table (issue 25). These tests fail when a role is
missing from the wire TypedDicts, the models, the validator's rules or the unions, or when the table
and the derived sets disagree."""

from __future__ import annotations

from typing import Annotated, get_args, get_origin, get_type_hints

from sessionstore.models import messages, roles, wire
from sessionstore.models.wire_shape import MESSAGE_FIELDS


def _members(union: object) -> tuple[object, ...]:
    if get_origin(union) is Annotated:
        union = get_args(union)[0]
    return get_args(union)


def _role_literal(typed: object) -> str:
    hints = get_type_hints(typed) if not hasattr(typed, "model_fields") else None
    if hints is not None:
        (name,) = get_args(hints["role"])
        return str(name)
    return str(typed.model_fields["role"].default)  # type: ignore[attr-defined]


def test_the_role_table_names_each_role_once_and_the_sets_are_derived_from_it() -> None:
    names = [role.name for role in roles.BUILTIN]
    assert len(set(names)) == len(names)
    assert set(names) == roles.BUILTIN_ROLES
    assert {"system", "user", "assistant", "toolResult"} == roles.PROVIDER_ROLES  # pi-ai's Message roles
    assert roles.EDIT_TARGET_ROLES <= roles.EDITABLE_ROLES and roles.BLOCK_TEXT_ROLES <= roles.EDITABLE_ROLES
    assert roles.TURN_START_ROLES <= roles.CUT_POINT_ROLES


def test_every_role_has_its_typed_dict_model_and_rules() -> None:
    assert set(wire.MESSAGE_DICTS) == roles.BUILTIN_ROLES == set(MESSAGE_FIELDS)
    for name, typed in wire.MESSAGE_DICTS.items():
        assert _role_literal(typed) == name
    assert {_role_literal(m) for m in _members(messages.BuiltinAgentMessage)} == roles.BUILTIN_ROLES
    assert {_role_literal(m) for m in _members(messages.ProviderMessage)} == roles.PROVIDER_ROLES


def test_the_typed_dict_unions_are_the_roles_typed_dicts() -> None:
    assert set(get_args(wire.AgentMessageDict)) == set(wire.MESSAGE_DICTS.values())
    assert set(get_args(wire.ProviderMessageDict)) == {wire.MESSAGE_DICTS[r] for r in roles.PROVIDER_ROLES}


def test_a_registered_role_cannot_take_a_built_in_name() -> None:
    import pytest

    for name in roles.BUILTIN_ROLES:
        with pytest.raises(ValueError, match="built in"):
            roles.register_role(name, messages.UserMessage)

"""Message roles: pi's built-in ones and the roles an application registers (pi's declaration
merging). Cheap to import (no pydantic): context building and projection ask it which roles exist
and how a registered one is projected; the models a role is checked with live in
:mod:`sessionstore.models.messages`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessionstore.models.content import WireModel

@dataclass(frozen=True, slots=True)
class BuiltinRole:
    """One of pi 1.6's message roles and what pi's algorithms ask of it, declared once. Its wire shape is
    its TypedDict (``models.wire.MESSAGE_DICTS``) and its typed view its model (``models.messages``);
    ``tests/test_roles.py`` checks that those, the validator's rules and the unions name exactly these."""

    name: str
    provider: bool = False
    """A provider role: pi-ai sends it (``convertToLlm`` keeps it as it is)."""
    cut_point: bool = False
    """Compaction may keep from a message of it (pi's ``findValidCutPoints``)."""
    turn_start: bool = False
    """A message of it starts a turn (pi's ``findTurnStartIndex``)."""
    editable: bool = False
    """A context edit's replacement replaces its content (pi 1.6's ``projectContextEntry``)."""
    block_text: bool = False
    """...and a string replacement becomes one text block."""
    edit_target: bool = False
    """A ``message`` entry of it may be a context edit's target (pi 1.6's ``appendContextEdit``; a
    ``custom_message`` entry may be one too)."""


BUILTIN: tuple[BuiltinRole, ...] = (
    BuiltinRole("system", provider=True),
    BuiltinRole("user", provider=True, cut_point=True, turn_start=True, editable=True, edit_target=True),
    BuiltinRole("assistant", provider=True, cut_point=True, editable=True, block_text=True, edit_target=True),
    BuiltinRole("toolResult", provider=True, editable=True, block_text=True, edit_target=True),
    BuiltinRole("bashExecution", cut_point=True, turn_start=True),
    BuiltinRole("custom", cut_point=True, turn_start=True, editable=True),
    BuiltinRole("branchSummary", cut_point=True, turn_start=True),
    BuiltinRole("compactionSummary", cut_point=True, turn_start=True),
)
"""pi 1.6's roles: its four provider roles and its coding agent's."""

BUILTIN_ROLES = frozenset(role.name for role in BUILTIN)
PROVIDER_ROLES = frozenset(role.name for role in BUILTIN if role.provider)
CUT_POINT_ROLES = frozenset(role.name for role in BUILTIN if role.cut_point)
TURN_START_ROLES = frozenset(role.name for role in BUILTIN if role.turn_start)
EDITABLE_ROLES = frozenset(role.name for role in BUILTIN if role.editable)
BLOCK_TEXT_ROLES = frozenset(role.name for role in BUILTIN if role.block_text)
EDIT_TARGET_ROLES = frozenset(role.name for role in BUILTIN if role.edit_target)

#: A projection turns a registered message (wire data) into provider messages (wire data); [] = never sent.
Projection = Callable[[Mapping[str, Any]], list[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class RegisteredRole:
    name: str
    model: type[WireModel]
    project: Projection | None


_REGISTRY: dict[str, RegisteredRole] = {}


def role_of(message: Any) -> str | None:
    """The role pi dispatches ``message`` on: its ``role`` when the message is an object and the role a
    string, else ``None``. pi compares roles with ``===`` (``switch (m.role)``), so a role that is an
    object, a list or a number matches none of them, and a message that is not an object has none:
    every reader that branches on a role asks here (a set lookup of an object would raise)."""
    if isinstance(message, Mapping):
        role = message.get("role")
        if isinstance(role, str):
            return role
    return None


def register_role(name: str, model: type[WireModel], *, project: Projection | None = None) -> None:
    """Register an application role (pi's declaration merging). ``project=None`` means never sent."""
    if name in BUILTIN_ROLES:
        raise ValueError(f"role {name!r} is built in and cannot be registered again")
    _REGISTRY[name] = RegisteredRole(name, model, project)


def unregister_role(name: str) -> None:
    _REGISTRY.pop(name, None)


def registered_role(name: str) -> RegisteredRole | None:
    return _REGISTRY.get(name)


def known_roles() -> frozenset[str]:
    return BUILTIN_ROLES | frozenset(_REGISTRY)

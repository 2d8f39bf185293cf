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

PROVIDER_ROLES = frozenset({"system", "user", "assistant", "toolResult"})
BUILTIN_ROLES = PROVIDER_ROLES | {"bashExecution", "custom", "branchSummary", "compactionSummary"}

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

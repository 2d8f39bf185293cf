"""Tenants: who owns a session (SPEC 16). Every session, sync source and deleted source belongs to one
tenant; a store sees only its own tenant's (``SessionStore(tenant=...)``, ``for_tenant``). This module
is the one home of the rule for a tenant's name."""

from __future__ import annotations

import re
from typing import Any

from sessionstore.errors import InvalidInputError

DEFAULT_TENANT = "default"
"""The tenant of a store opened without one; a database from before tenants has all its sessions in it."""

ENV_TENANT = "SESSIONSTORE_TENANT"
"""The environment variable of the command line's ``--tenant``."""

MAX_TENANT_LENGTH = 64
_TENANT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")


def check_tenant(name: Any) -> str:
    """``name`` if it is a tenant name: 1-64 characters of ``A-Z a-z 0-9 . _ -``, not starting with
    ``.`` or ``-``; else :class:`InvalidInputError` naming it."""
    if not isinstance(name, str) or _TENANT_NAME.fullmatch(name) is None:
        raise InvalidInputError(
            f"bad tenant name {name!r}: 1-{MAX_TENANT_LENGTH} characters of A-Z, a-z, 0-9, '.', '_' and '-',"
            " not starting with '.' or '-'")
    return name

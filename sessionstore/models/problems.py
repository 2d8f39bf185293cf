"""One line out of a pydantic validation error, for the error messages that name a bad value."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


def format_validation_error(exc: ValidationError, *, tagged: bool = False) -> str:
    """One line out of a pydantic error: ``field.path: message``, first three problems.
    ``tagged``: the value was a tagged union member, whose tag leads every location."""
    parts = []
    for err in exc.errors()[:3]:
        path = err["loc"][1:] if tagged and err["loc"] else err["loc"]
        loc = ".".join(str(p) for p in path if not str(p).startswith(("tagged-union", "function-")))
        parts.append(f"{loc}: {err['msg']}" if loc else str(err["msg"]))
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")

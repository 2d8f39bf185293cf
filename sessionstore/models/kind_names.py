"""The names of the entry kinds, read without building their models: one module of
:mod:`sessionstore.models.kinds` per kind, named as the kind (a test checks that each declares the
kind of its name). For what must stay cheap to import, such as the command line's help."""

from __future__ import annotations

import pkgutil
from functools import cache
from pathlib import Path

_KINDS_DIR = Path(__file__).with_name("kinds")
_NOT_KINDS = frozenset({"base"})


@cache
def kind_names() -> tuple[str, ...]:
    """The entry kinds, by name."""
    return tuple(sorted(m.name for m in pkgutil.iter_modules([str(_KINDS_DIR)]) if m.name not in _NOT_KINDS))

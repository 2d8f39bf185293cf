"""Entry ids as pi generates them (no pydantic: the store draws them for every append)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable


def random_entry_id() -> str:
    """8 random hex characters, as pi generates entry ids."""
    return os.urandom(4).hex()


def new_entry_id(taken: Callable[[str], bool]) -> str:
    """An entry id as pi generates it: 8 hex characters, retried while ``taken`` (a full UUID after
    100 collisions)."""
    for _ in range(100):
        candidate = random_entry_id()
        if not taken(candidate):
            return candidate
    return str(uuid.uuid4())

"""Session entries and the file header (SPEC 3, 12.3), discriminated by ``type``: the typed view.

Each kind is declared once in :mod:`sessionstore.models.kinds` (its model, its TypedDict, its
builder and check); this module is where readers find the models and the two readings of an entry:

- :func:`parse_entry`, the strict form: what the store writes itself (appends are validated against it);
- :func:`entry_problems`, the tolerant reading pi does on load: a file entry whose fields are missing
  or of the wrong type is still stored verbatim and read as pi reads it; each problem is reported as
  a diagnostic, never a refusal. Unknown entry types become :class:`UnknownEntry` and keep every field.
"""

from __future__ import annotations

from sessionstore.models.kinds import *  # noqa: F403  (every kind's model, the union, the two readings)
from sessionstore.models.kinds import __all__ as __all__

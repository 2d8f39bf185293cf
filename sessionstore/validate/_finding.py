"""A finding: a diagnostic before the entry id of its message is attached."""

from __future__ import annotations

from typing import NamedTuple

from sessionstore.validate.codes import DiagnosticCode


class Finding(NamedTuple):
    """A problem at ``message_index`` (``None``: the whole transcript), with its code and prose."""

    message_index: int | None
    code: DiagnosticCode
    message: str

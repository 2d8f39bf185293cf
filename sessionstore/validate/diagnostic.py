"""The diagnostic value: one problem found in a transcript or while building context."""

from __future__ import annotations

from dataclasses import dataclass

from sessionstore.validate.codes import DiagnosticCode


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One immutable finding.

    ``code`` is the stable contract (see ``DIAGNOSTIC_CODES``); ``message`` is human-readable prose
    naming the path of the offending value (``messages[3].content[1].arguments: ...``) and may change
    between versions. ``message_index`` is the index of the message concerned, or ``None`` when the
    finding is about the whole transcript. ``entry_id`` is the id of the session entry the message came
    from, when known.
    """

    code: DiagnosticCode
    message_index: int | None
    entry_id: str | None
    message: str

    def to_json(self) -> dict[str, object]:
        """The wire form: ``{"code", "messageIndex", "entryId"?, "message"}``.

        ``messageIndex`` is always present (``None`` for whole-transcript findings); ``entryId`` only
        when it is not ``None``. The returned dict is a fresh copy the caller may mutate.
        """
        out: dict[str, object] = {"code": self.code, "messageIndex": self.message_index}
        if self.entry_id is not None:
            out["entryId"] = self.entry_id
        out["message"] = self.message
        return out

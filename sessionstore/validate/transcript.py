"""Transcript validation (SPEC 7): every problem of a message list, reported, never raised."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sessionstore.validate import _linkage, _shape
from sessionstore.validate._finding import Finding
from sessionstore.validate._linkage import ToolCallRecord, ToolResultRecord
from sessionstore.validate._read import Unreadable, describe_exception, exact_str, read_sequence
from sessionstore.validate.diagnostic import Diagnostic


def validate_transcript(
    value: object,
    *,
    entry_ids: Sequence[str | None] | None = None,
    known_roles: Iterable[str] | None = None,
) -> tuple[Diagnostic, ...]:
    """All shape and linkage diagnostics of the transcript ``value``; ``()`` when it is valid.

    ``value`` may be anything. A transcript is a list (any non-text sequence) of messages in pi's
    wire shape: mappings with camelCase keys, or objects with ``model_dump()`` (pydantic models,
    dumped once with ``by_alias=True``). The function never raises ``Exception``: values whose
    attribute, item, length or iteration access raises are reported as ``UNREADABLE_VALUE``, and a
    bug in the validator itself as ``VALIDATION_INTERNAL_ERROR`` after the findings made so far. Each
    field is read at most once, so values that change between reads cannot make it inconsistent.

    Result order: shape diagnostics by message index, then linkage diagnostics by message index.
    A valid tool round is a unique tool call id with exactly one later toolResult of the same
    ``toolCallId`` and ``toolName``; unanswered calls (e.g. aborted turns in real sessions) are
    reported as ``MISSING_TOOL_RESULT`` at the call's message.

    ``entry_ids``, parallel to the messages, gives the session entry each message came from; every
    diagnostic about message ``i`` carries ``entry_ids[i]`` (absent, unreadable or non-string ids
    give ``None``). ``known_roles`` names roles the application registered beyond the built-in ones
    (user, assistant, toolResult, bashExecution, custom, branchSummary, compactionSummary); their
    messages are not checked, and any other role is reported as ``UNKNOWN_ROLE``.
    """
    ids: tuple[str | None, ...] = ()
    scan: _shape.ShapeScan | None = None
    try:
        ids = _entry_ids(entry_ids)
        scan = _shape.ShapeScan(_roles(known_roles))
        _shape.scan_transcript(scan, value)
        findings = [*scan.findings, *_linkage.link_tool_rounds(scan.calls, scan.results)]
    except Exception as exc:
        findings = list(scan.findings) if scan is not None else []
        findings.append(
            Finding(None, "VALIDATION_INTERNAL_ERROR", f"validation stopped: {describe_exception(exc)}")
        )
    return tuple(_diagnostic(finding, ids) for finding in findings)


def validate_messages(
    messages: Sequence[object],
    verdicts: Sequence[_shape.Verdict | None],
    *,
    entry_ids: Sequence[str | None] | None = None,
    known_roles: Iterable[str] | None = None,
) -> tuple[tuple[Diagnostic, ...], list[_shape.Verdict | None]]:
    """:func:`validate_transcript` of a list of messages some of which were proved before: where
    ``verdicts[i]`` is not ``None``, message ``i`` is one the compiled rules accepted with that
    verdict (the same message: the caller vouches for it, e.g. by the stored text it was decoded from)
    and is not checked again; its tool records go to the linkage pass. Returns the diagnostics,
    exactly :func:`validate_transcript`'s, and every message's verdict (``None`` where the full rules
    read it: something to report, or not plain data), for the caller to remember."""
    scan: _shape.ShapeScan | None = None
    found: list[_shape.Verdict | None] = []
    try:
        scan = _shape.ShapeScan(_roles(known_roles))
        add_call, add_result, remember = scan.calls.append, scan.results.append, found.append
        plain_verdict = _shape.plain_verdict
        for index, message in enumerate(messages):
            verdict = verdicts[index]
            if verdict is None:
                verdict = plain_verdict(message)
                if verdict is None:
                    _shape.scan_message_fully(scan, index, message)
                    remember(None)
                    continue
            calls, result = verdict
            for block_index, call_id, name in calls:
                add_call(ToolCallRecord(index, block_index, call_id, name, True))
            if result is not None:
                add_result(ToolResultRecord(index, result[0], result[1], True))
            remember(verdict)
        findings = [*scan.findings, *_linkage.link_tool_rounds(scan.calls, scan.results)]
    except Exception as exc:
        findings = list(scan.findings) if scan is not None else []
        findings.append(
            Finding(None, "VALIDATION_INTERNAL_ERROR", f"validation stopped: {describe_exception(exc)}")
        )
        found.extend([None] * (len(messages) - len(found)))
    ids = _entry_ids(entry_ids) if findings else ()  # (read only for what has something to report)
    return tuple(_diagnostic(finding, ids) for finding in findings), found


def _diagnostic(finding: Finding, ids: tuple[str | None, ...]) -> Diagnostic:
    index = finding.message_index
    entry_id = ids[index] if index is not None and 0 <= index < len(ids) else None
    return Diagnostic(finding.code, index, entry_id, finding.message)


def _entry_ids(entry_ids: object) -> tuple[str | None, ...]:
    """The entry ids as exact strings (``None`` where absent or unusable)."""
    if entry_ids is None:
        return ()
    read = read_sequence(entry_ids)
    if read is None or type(read) is Unreadable:
        return ()
    return tuple(exact_str(entry_id) for entry_id in read.items)


def _roles(known_roles: object) -> frozenset[str]:
    """The registered role names as exact strings; a lone string is one role."""
    if known_roles is None:
        return frozenset()
    single = exact_str(known_roles)
    if single is not None:
        return frozenset({single})
    roles: set[str] = set()
    try:
        for role in known_roles:  # type: ignore[attr-defined]
            text = exact_str(role)
            if text is not None:
                roles.add(text)
    except Exception:
        pass  # roles read before the failure still count; the rest are reported as UNKNOWN_ROLE
    return frozenset(roles)


class TranscriptValidation:
    """:func:`validate_transcript` of a transcript given one message at a time (``add``), for a
    transcript too large to hold: the same shape rules per message (``_shape``) and the same linkage
    pass over the tool records at the end (``diagnostics``). Holds the findings, the tool call and
    result records and the entry ids of the messages they name, not the messages."""

    __slots__ = ("_count", "_failure", "_ids", "_scan")

    def __init__(self, known_roles: Iterable[str] | None = None) -> None:
        self._scan = _shape.ShapeScan(_roles(known_roles))
        self._failure: Finding | None = None
        self._ids: dict[int, str | None] = {}
        self._count = 0

    def add(self, message: object, entry_id: object = None) -> None:
        """Check the next message (``entry_id``: the entry it came from)."""
        if self._failure is not None:
            return
        index = self._count
        self._count = index + 1
        scan = self._scan
        verdict = _shape.plain_verdict(message)  # (never raises)
        if verdict is not None:
            calls, result = verdict
            for block_index, call_id, name in calls:
                scan.calls.append(ToolCallRecord(index, block_index, call_id, name, True))
            if result is not None:
                scan.results.append(ToolResultRecord(index, result[0], result[1], True))
            elif not calls:
                return
            self._ids[index] = exact_str(entry_id)
            return
        before = len(scan.findings) + len(scan.calls) + len(scan.results)
        try:
            _shape.scan_message_fully(scan, index, message)
        except Exception as exc:
            self._failure = Finding(None, "VALIDATION_INTERNAL_ERROR", f"validation stopped: {describe_exception(exc)}")
        if len(scan.findings) + len(scan.calls) + len(scan.results) != before:
            self._ids[index] = exact_str(entry_id)

    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """Every diagnostic of the messages added so far, in :func:`validate_transcript`'s order."""
        scan = self._scan
        findings = list(scan.findings)
        if self._failure is not None:
            findings.append(self._failure)
        else:
            try:
                findings.extend(_linkage.link_tool_rounds(scan.calls, scan.results))
            except Exception as exc:
                findings.append(
                    Finding(None, "VALIDATION_INTERNAL_ERROR", f"validation stopped: {describe_exception(exc)}")
                )
        ids = self._ids
        return tuple(
            Diagnostic(f.code, f.message_index, ids.get(f.message_index) if f.message_index is not None else None,
                       f.message)
            for f in findings
        )

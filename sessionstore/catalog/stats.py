"""Session stats as pi 1.6's ``/session`` shows them, read from the catalog's denormalised columns, never
from the payloads.

pi's ``AgentSession.getSessionStats`` walks every entry of the session (every branch, compacted history
included) and counts messages by role and ``toolCall`` blocks, and sums the usage of assistant
messages, tool results that have one, ``usage`` entries and compactions / branch summaries that have
one; ``getUsageCostBreakdown`` (``core/usage-totals.js``) sums the same usage per key. The store folds
both when an entry is written (``store.facts.SessionStats``: the counters on the session row;
``models.entry_catalog.usage_of``: the usage rows per key and UTC day, ``sessionstore_usage``), so a
report is the session row, its usage rows and, for the model pi would compare the breakdown with, one
payload.

Where the store differs from pi, on purpose:

- **Values that are not finite numbers** count 0 (``entry_catalog.usage_of``). pi throws on an
  assistant message without ``usage`` or a ``usage`` entry without ``usage`` (``/session`` then fails),
  concatenates a string token count (``0 + "5"`` is ``"05"``) and turns a missing one into ``NaN``.
- **Summation order**: pi adds entry by entry into one total; the store adds entry by entry into one
  bucket per key and day, then adds the buckets (:func:`math.fsum`, so the result does not depend on
  the order rows come back in). Token counts are integers (exact either way); a cost can differ from
  pi's in its last bits.
- **Breakdown ties**: keys of equal cost are in pi's order of first appearance; here by key.
- **Not shown**: pi's ``Cache Warming`` block and ``Cache Re-billed`` line (the live session's cache
  state and the model registry's prices); the Cost block is shown when the cost is above 0 (pi also
  shows it for cache misses).
- **Selected model**: pi prints the per-key lines unless there is one key and it is the selected
  model. The store has no live model: it takes the model a resume at the leaf would select (the last
  ``model_change`` or assistant message on the leaf's path, ``{provider}/{modelId}``); without one,
  the lines are printed. ``stats --all`` has no selected model: it always prints them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from sessionstore.errors import InvalidInputError, SessionNotFoundError
from sessionstore.models import js
from sessionstore.models.wire import JsonObject as Json
from sessionstore.store.backend import UsageSum
from sessionstore.store.dbtext import from_db, loaded, to_db
from sessionstore.wire.codec import json_loads

if TYPE_CHECKING:
    from sessionstore.store.entry_store import EntryStore

GroupBy = Literal["model", "day"]
GROUP_BY: tuple[GroupBy, ...] = ("model", "day")


# -- pi's number formats ------------------------------------------------------------------------
def js_fixed(value: float, digits: int) -> str:
    """JavaScript's ``value.toFixed(digits)``: the exact binary value rounded half away from zero
    (``(0.0625).toFixed(3)`` is ``"0.063"``; Python's format gives ``"0.062"``)."""
    if math.isnan(value):
        return "NaN"
    if abs(value) >= 1e21 or math.isinf(value):
        return js.number_to_string(value)
    if value == 0:
        value = 0.0  # (-0).toFixed() has no sign
    quantum = Decimal(1).scaleb(-digits)
    return f"{Decimal(value).quantize(quantum, rounding=ROUND_HALF_UP):f}"


_THOUSANDTH = Decimal("0.001")
_EVERY_DOUBLE = Context(prec=340, rounding=ROUND_HALF_UP)
"""Digits enough for any finite double to a thousandth (the largest has 309 before the point)."""


def js_locale(value: float) -> str:
    """``value.toLocaleString()`` in en-US (``Intl.NumberFormat`` defaults): thousands separators, at most
    three fraction digits, rounded half away from zero from the shortest decimal that reads back as
    ``value`` (``(1.0005).toLocaleString()`` is ``"1.001"``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-∞" if value < 0 else "∞"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    rounded = Decimal(repr(abs(value))).quantize(_THOUSANDTH, context=_EVERY_DOUBLE)
    whole, _, fraction = f"{rounded:f}".partition(".")
    fraction = fraction.rstrip("0")
    return f"{sign}{int(whole):,}" + (f".{fraction}" if fraction else "")


def _js_round(value: float) -> float:
    """``Math.round``: halves round up."""
    return value if not math.isfinite(value) else float(math.floor(value + 0.5))


def format_tokens(count: float) -> str:
    """pi's ``formatTokens`` (``modes/interactive/components/footer.js``): ``999``, ``1.2k``, ``12k``,
    ``1.2M``, ``12M``."""
    if count < 1000:
        return js.number_to_string(count)
    if count < 10000:
        return f"{js_fixed(count / 1000, 1)}k"
    if count < 1000000:
        return f"{js.number_to_string(_js_round(count / 1000))}k"
    if count < 10000000:
        return f"{js_fixed(count / 1000000, 1)}M"
    return f"{js.number_to_string(_js_round(count / 1000000))}M"


# -- the report -----------------------------------------------------------------------------------
class Tokens(NamedTuple):
    """Token sums; ``total`` as pi computes it: input + output + cacheRead + cacheWrite (not ``totalTokens``)."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    @property
    def total(self) -> float:
        return self.input + self.output + self.cache_read + self.cache_write

    def to_json(self) -> Json:
        return {"input": self.input, "output": self.output, "cacheRead": self.cache_read,
                "cacheWrite": self.cache_write, "total": self.total}

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> Tokens:
        """The inverse of :meth:`to_json` (``total`` is derived; JSON's ``1`` is ``1.0`` again)."""
        return cls(float(item["input"]), float(item["output"]), float(item["cacheRead"]), float(item["cacheWrite"]))


class BreakdownItem(NamedTuple):
    """One line of pi's ``getUsageCostBreakdown``: a key, its cost and its tokens (input + output +
    cacheRead + cacheWrite)."""

    key: str
    cost: float
    tokens: float

    def to_json(self) -> Json:
        return {"key": self.key, "cost": self.cost, "tokens": self.tokens}

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> BreakdownItem:
        return cls(item["key"], float(item["cost"]), float(item["tokens"]))


UsageBucket = UsageSum
"""Usage summed under one key on one day (a ``sessionstore_usage`` row, or several sessions' sum),
its key decoded from its stored form."""


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Usage of some buckets: token sums, cost and the per-key breakdown."""

    tokens: Tokens = field(default_factory=Tokens)
    cost: float = 0.0
    breakdown: tuple[BreakdownItem, ...] = ()
    entries: int = 0

    def to_json(self) -> Json:
        return {"tokens": self.tokens.to_json(), "cost": self.cost,
                "breakdown": [item.to_json() for item in self.breakdown]}

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> UsageTotals:
        """The inverse of :meth:`to_json`; ``entries`` where the item has it (a group's), else 0."""
        return cls(Tokens.from_json(item["tokens"]), float(item["cost"]),
                   tuple(BreakdownItem.from_json(b) for b in item["breakdown"]), item.get("entries", 0))


def fold_usage(buckets: Iterable[UsageBucket]) -> UsageTotals:
    """Tokens, cost and pi's breakdown of ``buckets``: each sum is :func:`math.fsum` of the buckets (the
    correctly rounded sum, whatever their order); the breakdown keeps keys with cost or tokens above 0,
    most costly first, equal costs by key."""
    rows = sorted(buckets, key=lambda b: (b.model_key, b.day))
    if not rows:
        return UsageTotals()
    by_key: dict[str, list[UsageBucket]] = {}
    for row in rows:
        by_key.setdefault(row.model_key, []).append(row)
    items = []
    for key, of_key in by_key.items():
        tokens = _tokens(of_key)
        items.append(BreakdownItem(key, math.fsum(b.cost for b in of_key), tokens.total))
    kept = [i for i in items if i.cost > 0 or i.tokens > 0]
    kept.sort(key=lambda i: (-i.cost, i.key))
    return UsageTotals(_tokens(rows), math.fsum(b.cost for b in rows), tuple(kept), sum(b.entries for b in rows))


def _tokens(rows: Sequence[UsageBucket]) -> Tokens:
    return Tokens(math.fsum(b.input for b in rows), math.fsum(b.output for b in rows),
                  math.fsum(b.cache_read for b in rows), math.fsum(b.cache_write for b in rows))


class Messages(NamedTuple):
    """pi's message counts: every ``message`` entry, by role, and the ``toolCall`` blocks of assistants."""

    total: int = 0
    user: int = 0
    assistant: int = 0
    tool_calls: int = 0
    tool_results: int = 0

    def to_json(self) -> Json:
        return {"userMessages": self.user, "assistantMessages": self.assistant, "toolCalls": self.tool_calls,
                "toolResults": self.tool_results, "totalMessages": self.total}

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> Messages:
        return cls(item["totalMessages"], item["userMessages"], item["assistantMessages"], item["toolCalls"],
                   item["toolResults"])

    def __add__(self, other: object) -> Messages:
        if not isinstance(other, Messages):
            return NotImplemented
        return Messages(*(a + b for a, b in zip(self, other, strict=True)))


class _UsageFigures:
    """The usage figures of a report, read through its ``usage``."""

    __slots__ = ()
    usage: UsageTotals

    @property
    def tokens(self) -> Tokens:
        return self.usage.tokens

    @property
    def cost(self) -> float:
        return self.usage.cost

    @property
    def breakdown(self) -> tuple[BreakdownItem, ...]:
        return self.usage.breakdown


@dataclass(frozen=True, slots=True)
class SessionStatsReport(_UsageFigures):
    """What pi's ``/session`` shows of one session (``getSessionStats`` and ``getUsageCostBreakdown``)."""

    session_id: str
    name: str | None
    messages: Messages
    usage: UsageTotals
    selected_model: str | None = None
    """The ``{provider}/{modelId}`` a resume at the leaf selects (see the module), ``None`` without one."""

    def to_json(self) -> Json:
        """pi's field names: ``{"sessionId", "userMessages", "assistantMessages", "toolCalls",
        "toolResults", "totalMessages", "tokens": {"input", "output", "cacheRead", "cacheWrite",
        "total"}, "cost", "breakdown": [{"key", "cost", "tokens"}]}``."""
        return {"sessionId": self.session_id, **self.messages.to_json(), **self.usage.to_json()}

    @classmethod
    def from_json(cls, item: Mapping[str, Any], *, name: str | None = None,
                  selected_model: str | None = None) -> SessionStatsReport:
        """The inverse of :meth:`to_json`, which leaves out what only :meth:`render` reads: the
        session's ``name`` and ``selected_model`` are given."""
        return cls(item["sessionId"], name, Messages.from_json(item), UsageTotals.from_json(item), selected_model)

    def render(self, *, location: str = "In database") -> str:
        """pi's ``/session`` text; ``location`` stands where pi prints the session's file."""
        lines = ["Session Info", ""]
        if self.name:
            lines.append(f"Name: {self.name}")
        lines += [f"File: {location}", f"ID: {self.session_id}", ""]
        lines += _message_lines(self.messages)
        lines += _token_lines(self.tokens)
        single_is_selected = len(self.breakdown) == 1 and self.breakdown[0].key == self.selected_model
        lines += _cost_lines(self.usage, per_key=not single_is_selected)
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class StatsGroup:
    """The usage of one model key or one UTC day (``""``: entries without a valid timestamp)."""

    by: GroupBy
    value: str
    usage: UsageTotals

    def to_json(self) -> Json:
        label: str | None = self.value if self.value or self.by == "model" else None
        return {self.by: label, "entries": self.usage.entries, **self.usage.to_json()}

    @classmethod
    def from_json(cls, item: Mapping[str, Any], by: GroupBy) -> StatsGroup:
        """The inverse of :meth:`to_json` (a day's ``null`` label back to ``""``)."""
        return cls(by, item[by] or "", UsageTotals.from_json(item))

    def label(self) -> str:
        return self.value if self.value or self.by == "model" else "(no date)"


@dataclass(frozen=True, slots=True)
class AllStatsReport(_UsageFigures):
    """``stats --all``: the sum over the chosen sessions, and per model key or day with ``by``. Message
    counts are per session (the store counts them on the session row), so groups carry usage only."""

    sessions: int
    messages: Messages
    usage: UsageTotals
    by: GroupBy | None = None
    groups: tuple[StatsGroup, ...] = field(default=())

    def to_json(self) -> Json:
        out: Json = {"sessions": self.sessions, **self.messages.to_json(), **self.usage.to_json()}
        if self.by is not None:
            out["groups"] = [g.to_json() for g in self.groups]
        return out

    @classmethod
    def from_json(cls, item: Mapping[str, Any], by: GroupBy | None = None) -> AllStatsReport:
        """The inverse of :meth:`to_json` for the ``by`` it was made with."""
        groups = () if by is None else tuple(StatsGroup.from_json(g, by) for g in item["groups"])
        return cls(item["sessions"], Messages.from_json(item), UsageTotals.from_json(item), by, groups)

    def render(self) -> str:
        lines = ["Session Stats", "", f"Sessions: {js_locale(self.sessions)}", ""]
        lines += _message_lines(self.messages)
        lines += _token_lines(self.usage.tokens)
        lines += _cost_lines(self.usage, per_key=True)
        if self.by is not None:
            lines += ["", f"By {self.by}"]
            if not self.groups:
                lines.append("(no usage)")
            for group in self.groups:
                t = group.usage.tokens
                lines.append(f"{group.label()}: ${js_fixed(group.usage.cost, 3)} ({js_locale(t.total)} tokens:"
                             f" {js_locale(t.input)} input, {js_locale(t.output)} output,"
                             f" {js_locale(t.cache_read)} cache read, {js_locale(t.cache_write)} cache write)")
                if self.by == "day":
                    lines += [_key_line(item) for item in group.usage.breakdown]
        return "\n".join(lines)


def _message_lines(m: Messages) -> list[str]:
    return ["Messages", f"Total: {m.total}", f"User: {m.user}", f"Assistant: {m.assistant}",
            f"Tools: {m.tool_calls} calls, {m.tool_results} results", ""]


def _token_lines(t: Tokens) -> list[str]:
    """pi's Tokens block: ``Input`` is the whole prompt (input + cacheRead + cacheWrite), split into
    cached and uncached when there is cache activity."""
    prompt = t.input + t.cache_read + t.cache_write
    lines = ["Tokens", f"Input: {js_locale(prompt)}"]
    if prompt > 0 and (t.cache_read > 0 or t.cache_write > 0):
        lines.append(f"  Cached: {js_locale(t.cache_read)} ({js_fixed(t.cache_read / prompt * 100, 1)}%)")
        written = f" ({js_locale(t.cache_write)} written to cache)" if t.cache_write > 0 else ""
        lines.append(f"  Uncached: {js_locale(t.input + t.cache_write)}{written}")
    lines += [f"Output: {js_locale(t.output)}", f"Total: {js_locale(t.total)}"]
    return lines


def _key_line(item: BreakdownItem) -> str:
    return f"  {item.key}: ${js_fixed(item.cost, 3)} ({format_tokens(item.tokens)} tokens)"


def _cost_lines(usage: UsageTotals, *, per_key: bool) -> list[str]:
    if not usage.cost > 0:
        return []
    lines = ["", "Cost", f"Total: ${js_fixed(usage.cost, 3)}"]
    if per_key:
        lines += [_key_line(item) for item in usage.breakdown]
    return lines


# -- reading ------------------------------------------------------------------------------------
def _bucket(row: Any) -> UsageBucket:
    return UsageSum(from_db(row.model_key), row.day, int(row.entries), float(row.input), float(row.output),
                    float(row.cache_read), float(row.cache_write), float(row.cost))


def session_stats(
    entries: EntryStore, session_id: str, *, model_key: Callable[[Mapping[str, Any]], str | None]
) -> SessionStatsReport:
    """The stats of one session: its row's counters, its usage rows and the entry that selects the model
    at the leaf (``model_key`` names it), in one read transaction. ``SessionNotFoundError`` when the
    store has no such session."""
    if not isinstance(session_id, str):
        raise InvalidInputError(f"a session id must be a string, got {type(session_id).__name__}")
    with entries.backend.read() as tx:
        row = loaded(tx.head(to_db(session_id), lock=False))
        if row is None or row.deleting:
            raise SessionNotFoundError(session_id)
        usage = tx.session_usage(row.key)
        model_text = None if row.leaf_model_seq is None else tx.payload_at(row.key, row.leaf_model_seq)
    selected = None
    if model_text is not None:
        model_entry = json_loads(model_text)
        selected = model_key(model_entry) if isinstance(model_entry, dict) else None
    messages = Messages(int(row.message_count), int(row.user_messages), int(row.assistant_messages),
                        int(row.tool_calls), int(row.tool_results))
    return SessionStatsReport(session_id, row.name, messages, fold_usage(map(_bucket, usage)), selected)


def check_group_by(by: Any) -> GroupBy | None:
    if by is None or (isinstance(by, str) and by in GROUP_BY):
        return by
    raise InvalidInputError(f"by must be one of {', '.join(map(repr, GROUP_BY))} or None, got {by!r}")


def all_stats(
    entries: EntryStore, *, cwd: str | None = None, since_ms: int | float | None = None, by: GroupBy | None = None
) -> AllStatsReport:
    """The stats summed over the sessions a listing of ``cwd`` since ``since_ms`` shows (the rule of
    ``list_sessions``: ``EntryStore.listed_sessions``), optionally per model key or per UTC day: the
    listing, one aggregate query of their counters and one grouped query of their usage rows, in one
    read transaction."""
    by = check_group_by(by)
    if cwd is not None and not isinstance(cwd, str):
        raise InvalidInputError(f"cwd must be a string, got {type(cwd).__name__}")
    if since_ms is not None and (isinstance(since_ms, bool) or not isinstance(since_ms, int | float)):
        raise InvalidInputError(f"since_ms must be a number of milliseconds, got {since_ms!r}")
    with entries.backend.read() as tx:
        keys = [key for key, _info in entries.listed_sessions(tx, cwd=cwd, since_ms=since_ms)]
        counts = tx.counter_sums(keys)
        sums = [_bucket(s) for s in tx.usage_sums(keys)]
    messages = Messages(counts.message_count, counts.user_messages, counts.assistant_messages, counts.tool_calls,
                        counts.tool_results)
    totals = fold_usage(sums)
    groups: tuple[StatsGroup, ...] = ()
    if by is not None:
        split: dict[str, list[UsageBucket]] = {}
        for bucket in sums:
            split.setdefault(bucket.model_key if by == "model" else bucket.day, []).append(bucket)
        made = [StatsGroup(by, value, fold_usage(of_group)) for value, of_group in split.items()]
        if by == "model":  # as the breakdown orders them
            made.sort(key=lambda g: (-g.usage.cost, g.value))
        else:
            made.sort(key=lambda g: g.value)
        groups = tuple(made)
    return AllStatsReport(len(keys), messages, totals, by, groups)

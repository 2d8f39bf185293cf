"""pi 1.6's session-picker search, ported rule for rule: ``parseSearchQuery``, ``matchSession``,
``filterAndSortSessions`` (pi-coding-agent ``session-selector-search.ts``) and ``fuzzyMatch``
(pi-tui ``fuzzy.ts``).

Pure functions over plain values: the session's message text is reached only through the
:class:`MessageSearch` protocol, so a database can answer the three questions pi asks of it.
Strings are JavaScript strings (see :mod:`sessionstore.models.js_text`): lengths and positions
count UTF-16 code units, whitespace is JavaScript's ``\\s``, lowercasing is ``toLowerCase``.
Scores are the same IEEE doubles pi computes (same operations, same order).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, Protocol, TypeVar

from sessionstore.catalog.js_regex import JsRegex, JsRegexSyntaxError, JsRegexUnsupported, compile_js_regex
from sessionstore.models.js_text import (
    JS_WHITESPACE,
    is_js_whitespace,
    js_lower,
    js_trim,
    normalize_whitespace_lower,
    split_js_whitespace,
    to_units,
)

__all__ = [
    "TIER_FUZZY",
    "TIER_NAME",
    "TIER_TEXT",
    "TIER_WEIGHT",
    "JsRegex",
    "MessageNeedle",
    "MessageSearch",
    "NameFilter",
    "ParsedQuery",
    "SearchFields",
    "SearchSession",
    "Searchable",
    "SortMode",
    "TextMessages",
    "Token",
    "filter_and_sort",
    "fuzzy_match",
    "has_session_name",
    "is_regex_query",
    "js_lower",
    "match_session",
    "needles",
    "normalize_whitespace_lower",
    "parse_query",
]

TIER_NAME = 0
"""The query text appears in the session name."""
TIER_TEXT = 1
"""The query text appears in the session id, messages or cwd."""
TIER_FUZZY = 2
"""The query characters appear scattered in the session name or cwd."""
TIER_WEIGHT = 1_000_000

SortMode = Literal["relevance", "recent", "threaded"]
"""pi's picker modes. With a query, ``threaded`` sorts as ``relevance`` does (filterAndSortSessions
tests only for ``recent``); the thread tree without a query is not this module's concern."""
NameFilter = Literal["all", "named"]


# --- parsed queries -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Token:
    """One token of a token-mode query: ``value`` is trimmed and non-empty."""

    kind: Literal["fuzzy", "phrase"]
    value: str


@dataclass(frozen=True)
class ParsedQuery:
    """pi's ``ParsedSearchQuery``. ``error`` set means nothing matches. ``unsupported`` marks an
    error that pi would not give: a valid JavaScript regex this port cannot run exactly."""

    mode: Literal["tokens", "regex"]
    tokens: tuple[Token, ...] = ()
    regex: JsRegex | None = None
    error: str | None = None
    unsupported: bool = False


REGEX_PREFIX = "re:"


def is_regex_query(query: str) -> bool:
    """Whether ``parseSearchQuery`` reads ``query`` in regex mode (``re:`` after trimming)."""
    return js_trim(query).startswith(REGEX_PREFIX)


def parse_query(query: str) -> ParsedQuery:
    """``parseSearchQuery(query)``: regex mode for ``re:<pattern>``, else fuzzy tokens and quoted phrases."""
    trimmed = js_trim(query)
    if not trimmed:
        return ParsedQuery("tokens")
    if is_regex_query(trimmed):
        return _parse_regex(js_trim(trimmed[len(REGEX_PREFIX):]))
    tokens = _scan_tokens(trimmed)
    if tokens is None:  # a quote left open: plain whitespace tokenization, quotes kept
        words = [word for word in split_js_whitespace(trimmed) if word]
        return ParsedQuery("tokens", tuple(Token("fuzzy", word) for word in words))
    return ParsedQuery("tokens", tuple(tokens))


def _parse_regex(pattern: str) -> ParsedQuery:
    if not pattern:
        return ParsedQuery("regex", error="Empty regex")
    try:
        return ParsedQuery("regex", regex=compile_js_regex(pattern))
    except JsRegexSyntaxError as error:
        return ParsedQuery("regex", error=str(error))
    except JsRegexUnsupported as error:
        return ParsedQuery("regex", error=str(error), unsupported=True)


def _scan_tokens(trimmed: str) -> list[Token] | None:
    """The quote-aware scan; None when a quote is left open."""
    tokens: list[Token] = []
    buffer: list[str] = []
    in_quote = False

    def flush(kind: Literal["fuzzy", "phrase"]) -> None:
        value = js_trim("".join(buffer))
        buffer.clear()
        if value:
            tokens.append(Token(kind, value))

    for char in trimmed:
        if char == '"':
            flush("phrase" if in_quote else "fuzzy")
            in_quote = not in_quote
        elif not in_quote and is_js_whitespace(char):
            flush("fuzzy")
        else:
            buffer.append(char)
    if in_quote:
        return None
    flush("fuzzy")
    return tokens


# --- fuzzy matching -----------------------------------------------------------------------------

_WORD_BOUNDARY = frozenset(JS_WHITESPACE + "-_./:")
_LETTERS_DIGITS = re.compile(r"([a-z]+)([0-9]+)")
_DIGITS_LETTERS = re.compile(r"([0-9]+)([a-z]+)")


def fuzzy_match(query: str, text: str) -> float | None:
    """pi-tui's ``fuzzyMatch(query, text)``: its score (lower is better) when it matches, else None."""
    matches, score = _fuzzy(_lower_units(query), to_units(js_lower(text)))
    return score if matches else None


@lru_cache(maxsize=4096)
def _lower_units(text: str) -> str:
    """The code units of ``text.toLowerCase()`` (cached: used for query values, which are short and repeat)."""
    return to_units(js_lower(text))


def _fuzzy(query_lower: str, text_lower: str) -> tuple[bool, float]:
    """``fuzzyMatch`` as pi returns it, (matches, score) with the score 0 when it does not match, given
    the code units of both arguments lowercased (lowercasing is idempotent, so an already lowercased
    argument is fine)."""
    primary = _match_query(query_lower, text_lower)
    if primary[0]:
        return primary
    swapped = _swapped(query_lower)
    if not swapped:
        return primary
    matches, score = _match_query(swapped, text_lower)
    return (True, score + 5) if matches else primary


def _swapped(query_lower: str) -> str:
    """``v2`` → ``2v`` and ``2v`` → ``v2`` (ASCII letters and digits only); else ""."""
    letters_digits = _LETTERS_DIGITS.fullmatch(query_lower)
    if letters_digits:
        return letters_digits.group(2) + letters_digits.group(1)
    digits_letters = _DIGITS_LETTERS.fullmatch(query_lower)
    if digits_letters:
        return digits_letters.group(2) + digits_letters.group(1)
    return ""


def _match_query(query: str, text: str) -> tuple[bool, float]:
    """``matchQuery`` on code-unit strings: the greedy alignment, improved by any contiguous occurrence."""
    if not query:
        return True, 0.0
    if len(query) > len(text):
        return False, 0.0
    positions: list[int] = []
    last = -1
    for char in query:
        index = text.find(char, last + 1)
        if index == -1:
            return False, 0.0
        positions.append(index)
        last = index
    score = _score_positions(text, positions)
    start = text.find(query)
    while start != -1:
        score = min(score, _score_positions(text, list(range(start, start + len(query)))))
        start = text.find(query, start + 1)
    if query == text:
        score -= 100
    return True, score


def _score_positions(text: str, positions: list[int]) -> float:
    score: float = 0
    last = -1
    consecutive = 0
    for i in positions:
        if last == i - 1:
            consecutive += 1
            score -= consecutive * 5
        else:
            consecutive = 0
            if last >= 0:
                score += (i - last - 1) * 2
        if i == 0 or text[i - 1] in _WORD_BOUNDARY:
            score -= 10
        score += i * 0.1
        last = i
    return score


# --- sessions -----------------------------------------------------------------------------------

class MessageSearch(Protocol):
    """The three questions pi asks of a session's ``allMessagesText``."""

    def contains_lower(self, value: str) -> bool:
        """``allMessagesText.toLowerCase().includes(value)``."""
        ...

    def contains_normalized(self, phrase: str) -> bool:
        """Whether ``normalize_whitespace_lower(allMessagesText)`` includes ``phrase`` (already normalised)."""
        ...

    def search_regex(self, regex: JsRegex) -> bool:
        """``regex.test(allMessagesText)`` on the raw text."""
        ...


class TextMessages:
    """:class:`MessageSearch` over the text itself; its code units and lowercased and normalised forms
    are made once, on first use."""

    def __init__(self, all_messages_text: str) -> None:
        self.text = all_messages_text
        self._units: str | None = None
        self._lower: str | None = None
        self._normalized: str | None = None

    def contains_lower(self, value: str) -> bool:
        if self._lower is None:
            self._lower = to_units(js_lower(self.text))
        return to_units(value) in self._lower

    def contains_normalized(self, phrase: str) -> bool:
        if self._normalized is None:
            self._normalized = to_units(normalize_whitespace_lower(self.text))
        return to_units(phrase) in self._normalized

    def search_regex(self, regex: JsRegex) -> bool:
        if self._units is None:
            self._units = to_units(self.text)
        return regex.test_units(self._units)


@dataclass(frozen=True)
class SearchFields:
    """The session fields pi searches besides the messages (``SessionInfo``'s ``id``, ``name``,
    ``cwd``) and ``modified`` (milliseconds since the epoch; a finite number) for tie-breaking."""

    id: str
    name: str | None
    cwd: str
    modified_ms: float

    # Each folded form is made on first use and kept in the instance's dict (``functools.cached_property``
    # takes a lock on every read in Python 3.11, which a search over every session pays thousands of times).
    def _kept(self, name: str, make: Callable[[], str]) -> str:
        kept: dict[str, str] = self.__dict__
        value = kept.get(name)
        if value is None:
            value = kept[name] = make()
        return value

    @property
    def name_lower(self) -> str:
        """Code units of ``(name ?? "").toLowerCase()``."""
        return self._kept("_name_lower", lambda: to_units(js_lower(self.name or "")))

    @property
    def id_lower(self) -> str:
        """Code units of ``id.toLowerCase()``."""
        return self._kept("_id_lower", lambda: to_units(js_lower(self.id)))

    @property
    def cwd_lower(self) -> str:
        """Code units of ``cwd.toLowerCase()``."""
        return self._kept("_cwd_lower", lambda: to_units(js_lower(self.cwd)))

    @property
    def name_normalized(self) -> str:
        """Code units of ``normalizeWhitespaceLower(name ?? "")``."""
        return self._kept("_name_normalized", lambda: to_units(normalize_whitespace_lower(self.name or "")))

    @property
    def cwd_normalized(self) -> str:
        """Code units of ``normalizeWhitespaceLower(cwd)``."""
        return self._kept("_cwd_normalized", lambda: to_units(normalize_whitespace_lower(self.cwd)))


class Searchable(Protocol):
    """What :func:`filter_and_sort` needs of each session."""

    @property
    def fields(self) -> SearchFields: ...

    @property
    def messages(self) -> MessageSearch: ...


@dataclass(frozen=True)
class SearchSession:
    """A plain :class:`Searchable`."""

    fields: SearchFields
    messages: MessageSearch


def has_session_name(fields: SearchFields) -> bool:
    """``hasSessionName``: the name is set and not blank (JavaScript whitespace)."""
    return bool(js_trim(fields.name or ""))


def match_session(fields: SearchFields, messages: MessageSearch, parsed: ParsedQuery) -> float | None:
    """``matchSession``: the session's score (lower is better; the sum of its tokens' scores), or None.

    Every token must match some field; each token is scored by the first field that holds it in
    the order name, id, messages, cwd (literal), then by the better fuzzy score of name and cwd.
    """
    if parsed.mode == "regex":
        return _match_regex(fields, messages, parsed.regex) if parsed.regex is not None else None
    total: float = 0
    for token in parsed.tokens:
        if token.kind == "phrase":
            phrase = normalize_whitespace_lower(token.value)
            if not phrase:
                continue
            score = _match_phrase(fields, messages, phrase)
        else:
            score = _match_fuzzy_token(fields, messages, token.value)
        if score is None:
            return None
        total += score
    return float(total)


def _tier(tier: int, score: float = 0) -> float:
    return tier * TIER_WEIGHT + score


def _match_literal(fields: SearchFields, messages: MessageSearch, value: str) -> float | None:
    """``matchLiteralToken``; ``value`` is lowercased."""
    units = to_units(value)
    if units in fields.name_lower:
        return _tier(TIER_NAME, _fuzzy(_lower_units(value), fields.name_lower)[1])
    if units in fields.id_lower or messages.contains_lower(value):
        return _tier(TIER_TEXT)
    if units in fields.cwd_lower:
        return _tier(TIER_TEXT)
    return None


def _match_fuzzy_token(fields: SearchFields, messages: MessageSearch, value: str) -> float | None:
    """``matchFuzzyToken``: literal first, else the better fuzzy match of name and cwd."""
    lowered = _lower_units(value)
    literal = _match_literal(fields, messages, js_lower(value))
    if literal is not None:
        return literal
    best: float | None = None
    for text_lower in (fields.name_lower, fields.cwd_lower):
        matches, score = _fuzzy(lowered, text_lower)
        if matches and (best is None or score < best):
            best = score
    return None if best is None else _tier(TIER_FUZZY, best)


def _match_phrase(fields: SearchFields, messages: MessageSearch, phrase: str) -> float | None:
    """``matchPhraseToken``; ``phrase`` is normalised."""
    units = to_units(phrase)
    if units in fields.name_normalized:
        return _tier(TIER_NAME, _fuzzy(_lower_units(phrase), fields.name_normalized)[1])
    if units in fields.id_lower or messages.contains_normalized(phrase):
        return _tier(TIER_TEXT)
    if units in fields.cwd_normalized:
        return _tier(TIER_TEXT)
    return None


def _match_regex(fields: SearchFields, messages: MessageSearch, regex: JsRegex) -> float | None:
    if fields.name and regex.test(fields.name):
        return _tier(TIER_NAME)
    if regex.test(fields.id) or messages.search_regex(regex) or regex.test(fields.cwd):
        return _tier(TIER_TEXT)
    return None


S = TypeVar("S", bound=Searchable)


def filter_and_sort(sessions: Sequence[S], query: str, sort: SortMode, name_filter: NameFilter = "all") -> list[S]:
    """``filterAndSortSessions``: ``sessions`` (in pi's list order) that match ``query``.

    A blank query keeps every session in order; a query that does not parse keeps none. ``recent``
    keeps the list order; otherwise the order is by score ascending, then ``modified_ms``
    descending, then list order (the sort is stable).
    """
    named = [s for s in sessions if name_filter == "all" or has_session_name(s.fields)]
    if not js_trim(query):
        return named
    parsed = parse_query(query)
    if parsed.error is not None:
        return []
    scored = [(score, s) for s in named if (score := match_session(s.fields, s.messages, parsed)) is not None]
    if sort == "recent":
        return [s for _, s in scored]
    scored.sort(key=lambda pair: (pair[0], -pair[1].fields.modified_ms))
    return [s for _, s in scored]


# --- narrowing candidates -----------------------------------------------------------------------

@dataclass(frozen=True)
class MessageNeedle:
    """What the messages must contain for token ``token`` to match through them: ``value`` as
    :meth:`MessageSearch.contains_lower` (``kind="lower"``) or :meth:`MessageSearch.contains_normalized`
    (``kind="normalized"``) takes it."""

    token: Token
    kind: Literal["lower", "normalized"]
    value: str


def needles(parsed: ParsedQuery) -> tuple[MessageNeedle, ...] | None:
    """The needles of a token-mode query, one per token that can match (phrases that normalise to
    nothing are skipped, as pi skips them); None for regex mode and errors.

    What holds: a session matches a token-mode query iff for every needle, the token matches the
    session's name, id or cwd (literally or, for fuzzy tokens, fuzzily), or the session's messages
    contain the needle. In particular a session none of whose name, id and cwd matches any token
    matches iff its messages contain every needle, and its score is then ``TIER_TEXT`` times the
    number of needles. So an index can narrow candidates to: the sessions whose messages hold all
    needles, plus those whose name/id/cwd match some token (then run :func:`match_session` on them).
    """
    if parsed.mode != "tokens" or parsed.error is not None:
        return None
    result: list[MessageNeedle] = []
    for token in parsed.tokens:
        if token.kind == "phrase":
            phrase = normalize_whitespace_lower(token.value)
            if phrase:
                result.append(MessageNeedle(token, "normalized", phrase))
        else:
            result.append(MessageNeedle(token, "lower", js_lower(token.value)))
    return tuple(result)

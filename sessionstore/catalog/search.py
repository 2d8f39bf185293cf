"""Session search in the database: pi 1.6's session-picker search over the store's sessions.

pi's rules (:mod:`sessionstore.catalog.search_rules`) decide which sessions match a query, their
score and their order; the database's search index (``sessionstore_search``, revision 0008) answers
the one question the rules ask of a session's messages, "does the message text contain this
needle", once per needle for every session, instead of the rules reading every message:

- a whitespace-free needle is in pi's lowercased ``allMessagesText`` exactly when one entry's folded
  ``text`` holds it (the index: on SQLite a vocabulary of the folded texts' terms, on PostgreSQL pg_trgm
  over the texts; see ``Tx.sessions_with_text``);
- a phrase with spaces may run across messages: the index finds the sessions with one entry holding
  all of it; the other sessions holding every word of it are read (their folded texts joined by
  spaces, pi's normalised ``allMessagesText``) and tested;
- a ``re:`` query tests pi's raw ``allMessagesText``, which the index does not keep: it reads each
  session's entries whose name, id and cwd do not decide the match.

The index is derived data, written after the entries it holds: an append writes none of it, an
import or a sync writes its own entries' rows. A search first indexes what lags (:func:`catch_up`:
every committed entry past its session's ``next_seq`` mark, in transactions of its own, each with the
mark), then reads in one snapshot the index and, for what is still past a mark (a catch-up that could
not write, one that another writer is doing, the index turned off), the entries themselves
(:class:`_Tails`). So a search finds every entry committed before it started, whatever the index holds.
:func:`set_search_index` turns the index off (its rows dropped; every search then reads every entry)
and on (indexed again by the next catch-up).

By default the messages are what pi searches (user and assistant text); ``everything`` adds the rest
of each entry (``models.entry_catalog``: thinking, tool calls and results, bash, summaries, custom and
system messages), in the same tier as the messages; the index holds only pi's part, so the rest is
scanned. Each result carries up to ``hits`` matching entries (entry id, role, a snippet of the
entry's own text).

An archived session (SPEC 18: its entries moved to a file, its search rows dropped) is searched only with
``archived=True``: its file is read for its entries' texts, which stand in for the index as a lagging
entry's do (:class:`_Tails`). Without it the search leaves archived sessions out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from sessionstore.catalog.defaults import HITS_PER_SESSION, SORT_ORDERS, SortOrder
from sessionstore.catalog.js_regex import JsRegex
from sessionstore.catalog.search_rules import (
    ParsedQuery,
    SearchFields,
    filter_and_sort,
    match_session,
    needles,
    parse_query,
)
from sessionstore.errors import ArchiveError, InvalidInputError, StoreError
from sessionstore.models.entry_catalog import SearchTexts, entry_texts, folded_texts, index_form, search_texts
from sessionstore.models.js_text import JS_WHITESPACE, js_trim, to_units
from sessionstore.store.archive import archive_files, archived_entries
from sessionstore.store.backend import HitRow, SearchRow, Tx, search_row
from sessionstore.store.dbtext import from_db, to_db
from sessionstore.store.records import SessionInfo
from sessionstore.wire.codec import json_loads

if TYPE_CHECKING:
    from sessionstore.store.entry_store import EntryStore

HIT_NEEDLES = 100
"""Needles of a query that pick its hits (every needle still decides which sessions match)."""
SNIPPET_CONTEXT = 40
"""Characters of the entry's text shown on each side of a hit."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """An entry that holds the query: its id, its role (an entry type for entries that are not
    messages) and a snippet of its text around the first match."""

    entry_id: str
    role: str
    snippet: str

    def to_json(self) -> dict[str, Any]:
        return {"entryId": self.entry_id, "role": self.role, "snippet": self.snippet}

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> SearchHit:
        """The inverse of :meth:`to_json`."""
        return cls(item["entryId"], item["role"], item["snippet"])


@dataclass(frozen=True, slots=True)
class SearchResult:
    """A session pi's picker shows for the query, its score (lower is better; 0 without a query) and
    its matching entries."""

    session: SessionInfo
    score: float
    hits: tuple[SearchHit, ...]
    archived: bool = False
    """The session is archived (found by a search with ``archived=True``)."""

    def to_json(self) -> dict[str, Any]:
        found = {"sessionId": self.session.id, "score": self.score, "hits": [h.to_json() for h in self.hits]}
        return {**found, "archived": True} if self.archived else found

    @classmethod
    def from_json(cls, item: Mapping[str, Any], session: SessionInfo) -> SearchResult:
        """The inverse of :meth:`to_json`, which names the session by its id only: ``session`` is its info."""
        if session.id != item["sessionId"]:
            raise InvalidInputError(f"search result of {item['sessionId']!r} given the info of {session.id!r}")
        return cls(session, item["score"], tuple(SearchHit.from_json(h) for h in item["hits"]),
                   item.get("archived") is True)


def search_sessions(
    store: EntryStore,
    query: str,
    *,
    cwd: str | None = None,
    limit: int | None = None,
    sort: SortOrder = "relevance",
    everything: bool = False,
    hits: int = HITS_PER_SESSION,
    archived: bool = False,
) -> list[SearchResult]:
    """The sessions pi's session picker shows for ``query`` (its query syntax: tokens, ``"phrases"``,
    ``re:``), by pi's relevance score or, with ``sort="recent"``, in list order (newest activity
    first); at most ``limit``. ``cwd``: only the sessions of that directory (as ``list_sessions``).
    ``archived``: archived sessions too, their files read (else they are left out).
    Raises :class:`InvalidInputError` for a query pi shows nothing for because it is not valid (an
    empty or invalid regex) or that this port cannot run as JavaScript would."""
    _check(query, limit, sort, hits)
    parsed = parse_query(query)
    if parsed.error is not None:
        raise InvalidInputError(f"bad query {query!r}: {parsed.error}")
    if js_trim(query):
        catch_up(store)
    files: dict[int, tuple[str, str]] = {}
    try:
        return _search(store, query, parsed, cwd, limit, sort, everything, hits, archived, files)
    except ArchiveError:
        with store.backend.read() as tx:
            if not archived or archive_files(tx, store.tenant) == files:
                raise
    # (a session was restored or archived again after the snapshot began, its file gone: once more, in a new one)
    return _search(store, query, parsed, cwd, limit, sort, everything, hits, archived, {})


def _search(store: EntryStore, query: str, parsed: ParsedQuery, cwd: str | None, limit: int | None,
            sort: SortOrder, everything: bool, hits: int, archived: bool, files: dict[int, tuple[str, str]]
            ) -> list[SearchResult]:
    """The search in one snapshot; ``files`` is filled with the snapshot's archived sessions."""
    with store.backend.read() as tx:
        files.update(archive_files(tx, store.tenant))
        listed = [(key, info) for key, info in store.listed_sessions(tx, cwd=cwd) if archived or key not in files]
        if not js_trim(query):
            return [SearchResult(info, 0, (), key in files) for key, info in listed[:limit]]
        archives = {key: files[key] for key, _info in listed if key in files}
        index = _MessageIndex(tx, everything, _Tails.read(tx, {key for key, _info in listed}, archives))
        sessions = [_candidate(key, info, index) for key, info in listed]
        shown = filter_and_sort(sessions, query, sort)[:limit]
        scored = [(c, match_session(c.fields, c.messages, parsed)) for c in shown]
        found = _hits(tx, index, parsed, [c.key for c in shown], hits)
    return [SearchResult(c.info, score or 0, tuple(found.get(c.key, ())), c.key in files) for c, score in scored]


CATCH_UP_ENTRIES = 2_000
"""Entries indexed per catch-up transaction at most (a session's are never split below this): on
PostgreSQL the sessions being indexed cannot take an append until it commits."""
SEARCH_INDEX = "search_index"
"""The setting that turns the index off (``off``) and on (``on``, and when unset)."""


def catch_up(store: EntryStore) -> int:
    """Index every committed entry of the store's tenant that the index does not hold yet (none when the
    index is off); returns how many entries were read. Concurrent catch-ups may index the same entries:
    a search row already there is kept, a mark only goes up. A failed write (a read-only file, a lock
    held too long) is not an error: the search reads those entries itself."""
    with store.backend.read() as tx:
        if tx.setting(SEARCH_INDEX) == "off":
            return 0
        lagging = tx.search_lag()
    done = 0
    while lagging:
        try:
            with store.backend.write() as tx:
                budget = CATCH_UP_ENTRIES
                while lagging and budget > 0:
                    key, _mark, _count = lagging.pop()
                    state = tx.lock_for_search(key)
                    if state is None:
                        continue  # deleted meanwhile
                    count, mark = state
                    rows: list[SearchRow] = []
                    for first in range(mark, count, CATCH_UP_ENTRIES):
                        for seq, payload in tx.payloads_between(key, first, min(count, first + CATCH_UP_ENTRIES) - 1):
                            row = search_row(key, seq, json_loads(payload))
                            if row is not None:
                                rows.append(row)
                        tx.add_search_rows(rows)
                        rows = []
                    tx.put_search_mark(key, count)
                    budget -= count - mark
                    done += max(0, count - mark)
        except StoreError:
            return done
    if done:
        store.backend.checkpoint()  # (the index's pages are copied now, not by an append later)
    return done


def search_index_on(store: EntryStore) -> bool:
    """Whether the database keeps a search index (setting ``search_index``)."""
    with store.backend.read() as tx:
        return tx.setting(SEARCH_INDEX) != "off"


def set_search_index(store: EntryStore, on: bool) -> int:
    """Turn the search index on or off, for every tenant of the database. Off: its rows and marks are
    deleted, no write makes them again, and a search reads every entry of the sessions it searches (the
    results are the same, slower). On: the index is built again for the store's tenant now (returns the
    entries read; other tenants' on their next search)."""
    with store.backend.write() as tx:
        was_on = tx.setting(SEARCH_INDEX) != "off"
        tx.put_setting(SEARCH_INDEX, "on" if on else "off")
        if not on and was_on:
            tx.clear_search()
    return catch_up(store) if on else 0


class _Tails:
    """The entries of a search's snapshot that the index does not hold (past their session's mark, or in
    an archive file), with their folded texts: what the search reads itself."""

    def __init__(self, rows: dict[int, list[tuple[int, str, SearchRow]]],
                 archives: Mapping[int, tuple[str, str]]) -> None:
        self.rows = rows
        """Session key -> ``(seq, stored entry id, search row)`` of its unindexed entries with search text."""
        self.archives = archives
        """Session key -> ``(session id, archive file)`` of the archived sessions searched."""
        self._archived: dict[int, dict[int, tuple[str, SearchTexts]]] = {}

    @classmethod
    def read(cls, tx: Tx, keys: set[int], archives: Mapping[int, tuple[str, str]]) -> _Tails:
        rows: dict[int, list[tuple[int, str, SearchRow]]] = {}
        for key, (session_id, file) in archives.items():
            rows[key] = [(seq, to_db(entry_id), SearchRow(key, seq, to_db(folded.role), folded.text, folded.extra))
                         for seq, (entry_id, texts) in _archived_texts(file, session_id).items()
                         if (folded := folded_texts(texts)) is not None]
        for key, mark, count in tx.search_lag():
            if key not in keys or key in archives:
                continue
            found = rows[key] = []
            for first in range(mark, count, CATCH_UP_ENTRIES):
                for seq, payload in tx.payloads_between(key, first, min(count, first + CATCH_UP_ENTRIES) - 1):
                    entry = json_loads(payload)
                    texts = search_texts(entry)
                    if texts is not None:
                        found.append((seq, to_db(str(entry.get("id"))),
                                      SearchRow(key, seq, to_db(texts.role), texts.text, texts.extra)))
        return cls(rows, archives)

    def archived_texts(self, key: int) -> dict[int, tuple[str, SearchTexts]] | None:
        """Seq -> ``(entry id, raw search texts)`` of an archived session's entries (its file read again,
        once per search), ``None`` for a session in the database."""
        if key not in self.archives:
            return None
        texts = self._archived.get(key)
        if texts is None:
            session_id, file = self.archives[key]
            texts = self._archived[key] = _archived_texts(file, session_id)
        return texts

    def holding(self, needle: str, *, everything: bool) -> set[int]:
        return {key for key, found in self.rows.items()
                if any(needle in row.text or (everything and needle in row.extra) for _s, _i, row in found)}

    def folded_texts(self, key: int, *, everything: bool) -> list[str]:
        found = self.rows.get(key, ())
        if everything:
            return [t for _s, _i, row in found for t in (row.text, row.extra) if t]
        return [row.text for _s, _i, row in found if row.text]

    def hits(self, key: int, needles: Sequence[str], *, everything: bool) -> list[HitRow]:
        return [HitRow(key, seq, entry_id, row.role) for seq, entry_id, row in self.rows.get(key, ())
                if any(n in row.text or (everything and n in row.extra) for n in needles)]


def _archived_texts(file: str, session_id: str) -> dict[int, tuple[str, SearchTexts]]:
    """Seq -> ``(entry id, raw search texts)`` of the archived session's entries that have search text."""
    found: dict[int, tuple[str, SearchTexts]] = {}
    for seq, entry in enumerate(archived_entries(file, session_id)):
        texts = entry_texts(entry)
        if texts is not None:
            found[seq] = (str(entry.get("id")), texts)
    return found


def _check(query: Any, limit: Any, sort: Any, hits: Any) -> None:
    if not isinstance(query, str):
        raise InvalidInputError(f"a query must be a string, got {type(query).__name__}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidInputError(f"limit must be a non-negative int, got {limit!r}")
    if sort not in SORT_ORDERS:
        raise InvalidInputError(f"sort must be one of {', '.join(SORT_ORDERS)}, got {sort!r}")
    if isinstance(hits, bool) or not isinstance(hits, int) or hits < 0:
        raise InvalidInputError(f"hits must be a non-negative int, got {hits!r}")


class _MessageIndex:
    """pi's questions about the sessions' message texts, answered for every session at once, one
    query per needle (kept for the search)."""

    def __init__(self, tx: Tx, everything: bool, tails: _Tails) -> None:
        self.tx = tx
        self.everything = everything
        self.tails = tails
        self._with: dict[str, set[int]] = {}
        self._with_phrase: dict[str, set[int]] = {}
        self._raw: dict[int, list[tuple[str, str, str]]] = {}

    def holding(self, needle: str) -> set[int]:
        """Sessions whose message text holds the whitespace-free ``needle`` (lowercased)."""
        found = self._with.get(needle)
        if found is None:
            stored = index_form(needle)
            found = self.tx.sessions_with_text(stored, everything=self.everything)
            found |= self.tails.holding(stored, everything=self.everything)
            self._with[needle] = found
        return found

    def folded_texts(self, key: int) -> list[str]:
        """The session's folded texts in append order: the index's, then those of the entries past its mark."""
        return (self.tx.folded_texts(key, everything=self.everything)
                + self.tails.folded_texts(key, everything=self.everything))

    def holding_phrase(self, phrase: str) -> set[int]:
        """Sessions whose normalised message text holds the normalised ``phrase``."""
        if " " not in phrase:
            return self.holding(phrase)
        found = self._with_phrase.get(phrase)
        if found is None:
            within = self.holding(phrase)  # one entry holds it all: the index says so
            across = set.intersection(*(self.holding(word) for word in phrase.split(" "))) - within
            stored = index_form(phrase)  # the others hold every word: read, joined as pi joins them
            found = within | {key for key in across
                              if stored in " ".join(self.folded_texts(key))}
            self._with_phrase[phrase] = found
        return found

    def raw_texts(self, key: int) -> list[tuple[str, str, str]]:
        """The session's entries' raw search texts ``(entry id, role, text)`` in append order (for
        ``re:``), non-empty ones only; ``text`` is what pi searches, plus the rest with ``everything``."""
        texts = self._raw.get(key)
        if texts is None:
            archived = self.tails.archived_texts(key)
            read: Iterator[tuple[str, SearchTexts | None]]
            if archived is not None:
                read = iter(archived.values())
            else:
                read = ((str(entry.get("id")), entry_texts(entry))
                        for entry in map(json_loads, self.tx.payloads(key)))
            texts = []
            for entry_id, found in read:
                if found is None:
                    continue
                text = " ".join(t for t in (found.text, found.extra) if t) if self.everything else found.text
                if text:
                    texts.append((entry_id, found.role, text))
            self._raw[key] = texts
        return texts


class _IndexedMessages:
    """One session's side of :class:`~sessionstore.catalog.search_rules.MessageSearch`."""

    def __init__(self, key: int, index: _MessageIndex) -> None:
        self.key = key
        self.index = index

    def contains_lower(self, value: str) -> bool:
        return self.key in self.index.holding(value)

    def contains_normalized(self, phrase: str) -> bool:
        return self.key in self.index.holding_phrase(phrase)

    def search_regex(self, regex: JsRegex) -> bool:
        return regex.test(" ".join(text for _id, _role, text in self.index.raw_texts(self.key)))


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A listed session as the rules see it (a :class:`~sessionstore.catalog.search_rules.Searchable`),
    with its key."""

    key: int
    info: SessionInfo
    fields: SearchFields
    messages: _IndexedMessages


def _candidate(key: int, info: SessionInfo, index: _MessageIndex) -> _Candidate:
    # (a session without a time sorts as the oldest: pi would take its file's mtime)
    fields = SearchFields(info.id, info.name, info.cwd, float(info.modified_ms or 0))
    return _Candidate(key, info, fields, _IndexedMessages(key, index))


def _hits(tx: Tx, index: _MessageIndex, parsed: ParsedQuery, keys: Sequence[int], per_session: int
          ) -> dict[int, list[SearchHit]]:
    """Up to ``per_session`` matching entries of each session in ``keys``."""
    if per_session == 0 or not keys:
        return {}
    found: dict[int, list[SearchHit]] = {}
    if parsed.mode == "regex":
        assert parsed.regex is not None
        for key in keys:
            matching = [(entry_id, role, text) for entry_id, role, text in index.raw_texts(key)
                        if parsed.regex.test(text)][:per_session]
            found[key] = [SearchHit(entry_id, role, _regex_snippet(parsed.regex, text))
                          for entry_id, role, text in matching]
        return found
    # (distinct needles, at most HIT_NEEDLES of them: a pasted paragraph is a query of hundreds of words)
    wanted = list(dict.fromkeys(n.value for n in needles(parsed) or ()))[:HIT_NEEDLES]
    stored = [index_form(n) for n in wanted]
    rows = tx.text_hits(keys, stored, everything=index.everything, per_session=per_session)
    if index.tails.rows:  # (the index's hits come before the tail's: its entries are the earlier ones)
        by_key: dict[int, list[HitRow]] = {}
        for row in rows:
            by_key.setdefault(row.session_key, []).append(row)
        for key in keys:
            by_key[key] = (by_key.get(key, []) + index.tails.hits(key, stored, everything=index.everything)
                           )[:per_session]
        rows = [row for key in sorted(by_key) for row in by_key[key]]
    for row in rows:
        archived = index.tails.archived_texts(row.session_key)
        if archived is not None:
            texts = archived[row.seq][1] if row.seq in archived else None
        else:
            payload = tx.payload_at(row.session_key, row.seq)
            texts = entry_texts(json_loads(payload)) if payload is not None else None
        text = ""
        if texts is not None:  # the part that matched: pi's text, else (with everything) the rest
            text = texts.text if texts.text and (not index.everything or _holds(texts.text, wanted)) else texts.extra
        hit = SearchHit(from_db(row.entry_id), from_db(row.role), _snippet(text, wanted))
        found.setdefault(row.session_key, []).append(hit)
    return found


@lru_cache(maxsize=256)
def _needle_pattern(needle: str) -> re.Pattern[str]:
    """``needle`` (folded) found case-insensitively in raw text, any whitespace run for a space."""
    spaces = f"[{re.escape(JS_WHITESPACE)}]+"
    return re.compile(spaces.join(re.escape(part) for part in needle.split(" ")), re.IGNORECASE)


def _holds(text: str, wanted: Sequence[str]) -> bool:
    return any(_needle_pattern(n).search(text) for n in wanted)


def _snippet(text: str, wanted: Sequence[str]) -> str:
    """The part of ``text`` around the earliest of the ``wanted`` needles (its start when none is found
    as written, e.g. where case folding changed the length)."""
    spans = [m.span() for m in (_needle_pattern(n).search(text) for n in wanted) if m is not None]
    start, end = min(spans) if spans else (0, 0)
    return _cut(text, start, end)


def _regex_snippet(regex: JsRegex, text: str) -> str:
    """The part of ``text`` around the regex's first match (found on its UTF-16 code units, as pi's)."""
    units = to_units(text)
    match = regex.python.search(units)
    start, end = match.span() if match is not None else (0, 0)
    return _cut(units, start, end).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


_WHITESPACE_RUN = re.compile(f"[{re.escape(JS_WHITESPACE)}]+")


def _cut(text: str, start: int, end: int) -> str:
    """``text[start:end]`` with :data:`SNIPPET_CONTEXT` characters on each side, whitespace runs made one
    space, ``…`` where it was cut."""
    end = min(max(end, start), start + 2 * SNIPPET_CONTEXT)  # (a long match is shown by its start)
    left, right = max(0, start - SNIPPET_CONTEXT), min(len(text), end + SNIPPET_CONTEXT)
    piece = _WHITESPACE_RUN.sub(" ", text[left:right]).strip(" ")
    return ("…" if left > 0 else "") + piece + ("…" if right < len(text) else "")

"""The picker search rules (``sessionstore.catalog.search_rules``) on examples whose answers pi 1.6
gave (the differential test runs pi itself on thousands more)."""

# ruff: noqa: RUF001  (the confusable letters are the point: Kelvin sign, long s, Greek sigma)

from __future__ import annotations

import random
import re

import pytest

from sessionstore.catalog.js_regex import compile_js_regex
from sessionstore.catalog.search_rules import (
    TIER_WEIGHT,
    MessageNeedle,
    ParsedQuery,
    SearchFields,
    SearchSession,
    TextMessages,
    Token,
    filter_and_sort,
    fuzzy_match,
    has_session_name,
    js_lower,
    match_session,
    needles,
    normalize_whitespace_lower,
    parse_query,
)
from sessionstore.models.js_text import JS_WHITESPACE, js_trim, utf16_units


def fuzzy(*values: str) -> tuple[Token, ...]:
    return tuple(Token("fuzzy", v) for v in values)


def session(id: str, name: str | None, cwd: str, text: str, modified: float) -> SearchSession:
    return SearchSession(SearchFields(id, name, cwd, modified), TextMessages(text))


SESSIONS = [
    session("a1", "Login flow", "/home/u/app", "we fixed the bug", 3),
    session("b2", None, "/srv/lgn", "login page\u00a0broke", 2),
    session("c3", "Other", "/tmp", "nothing here", 1),
]


def ids(found: list[SearchSession]) -> list[str]:
    return [s.fields.id for s in found]


def scores(query: str) -> list[float | None]:
    parsed = parse_query(query)
    return [match_session(s.fields, s.messages, parsed) for s in SESSIONS]


# --- parsing --------------------------------------------------------------------------------------

def test_tokens_phrases_and_the_text_before_an_opening_quote() -> None:
    assert parse_query('foo "bar baz" qux').tokens == (Token("fuzzy", "foo"), Token("phrase", "bar baz"),
                                                      Token("fuzzy", "qux"))
    assert parse_query('foo"bar baz"').tokens == (Token("fuzzy", "foo"), Token("phrase", "bar baz"))
    assert parse_query('"  padded  "').tokens == (Token("phrase", "padded"),)


def test_an_unclosed_quote_splits_the_whole_query_on_whitespace_keeping_quotes() -> None:
    assert parse_query('a "b c').tokens == fuzzy("a", '"b', "c")
    assert parse_query('\ufeff"x').tokens == fuzzy('"x')


def test_blank_and_empty_quoted_queries() -> None:
    assert parse_query(" \u00a0\u3000\ufeff") == ParsedQuery("tokens")
    assert parse_query('""') == ParsedQuery("tokens")  # no tokens: every session matches, score 0
    assert scores('""') == [0, 0, 0]
    assert ids(filter_and_sort(SESSIONS, '""', "relevance")) == ["a1", "b2", "c3"]


def test_whitespace_is_javascripts_not_pythons() -> None:
    # \u00a0 separates tokens; \x1c (which Python's str.split takes as whitespace) does not.
    assert parse_query("a\u00a0b\x1cc").tokens == fuzzy("a", "b\x1cc")
    assert parse_query("\x85").tokens == fuzzy("\x85")
    assert js_trim("\ufeff x \x1c") == "x \x1c"
    assert set(JS_WHITESPACE) == {c for c in map(chr, range(0x10000)) if c.isspace()} - set(
        "\x1c\x1d\x1e\x1f\x85") | {"\ufeff"}


def test_regex_mode_and_its_errors() -> None:
    assert parse_query("re:").error == "Empty regex"
    assert parse_query("re:   ").error == "Empty regex"
    assert parse_query("re:(").error == "Invalid regular expression: /(/i: Unterminated group"
    assert parse_query("re:a**").error == "Invalid regular expression: /a**/i: Nothing to repeat"
    assert parse_query("re:[z-a]").error == (
        "Invalid regular expression: /[z-a]/i: Range out of order in character class")
    assert parse_query("RE:log").mode == "tokens"
    regex = parse_query("re:  ^log ").regex
    assert regex is not None and regex.source == "^log"


def test_untranslatable_regexes_are_errors_that_say_so() -> None:
    for pattern in ("(a)\\1", "(?<n>a)\\k<n>", "(?<=a+)b"):
        parsed = parse_query("re:" + pattern)
        assert parsed.unsupported and parsed.error is not None and parsed.error.startswith("Regex not supported")
        assert filter_and_sort(SESSIONS, "re:" + pattern, "relevance") == []


# --- JavaScript regex semantics ---------------------------------------------------------------------

@pytest.mark.parametrize(("pattern", "text", "expected"), [
    ("k", "\u212a", False),  # Python's re.I would match the Kelvin sign; JavaScript's /i does not
    ("s", "\u017f", False),
    ("é", "É", True),
    ("ß", "SS", False),
    ("^.$", "😀", False),  # "." is one UTF-16 unit
    ("^..$", "😀", True),
    ("a$", "a\n", False),  # "$" is the end of input, not before a final newline
    ("\\s", "\ufeff", True),
    ("\\s", "\x1c", False),
    ("\\d", "٣", False),  # ASCII digits only
    ("\\w", "é", False),
    ("\\bé", "é", False),
    ("[^]", "\n", True),
    ("[]", "a", False),
    ("\\p{L}", "p{L}", True),  # without the u flag \p is a "p"
    ("\\u{2}", "uu", True),
    ("a{", "a{", True),
    ("\\cJ", "\n", True),
    ("\\c", "\\c", True),
    ("[\\d-z]", "-", True),
    ("\\012", "\n", True),
    ("\\8", "8", True),
    ("(?=a)*b", "b", True),
    ("\\B", "", True),  # Python's own \B never matches in an empty string
])
def test_js_regex_semantics(pattern: str, text: str, expected: bool) -> None:
    assert compile_js_regex(pattern).test(text) is expected


def test_regex_scores_name_first_then_id_messages_cwd() -> None:
    assert scores("re:^log") == [0, TIER_WEIGHT, None]
    assert scores("re:BUG") == [TIER_WEIGHT, None, None]


# --- fuzzy matching --------------------------------------------------------------------------------

def test_fuzzy_scores_are_pi_tuis() -> None:
    assert fuzzy_match("lgn", "lgn") == -139.7
    assert fuzzy_match("ab", "a-b") == -22.8
    assert fuzzy_match("opus", "openrouter openrouter/anthropic/claude-opus") == -23.8  # contiguous beats greedy
    assert fuzzy_match("x", "abc") is None
    assert fuzzy_match("abc", "ab") is None
    assert fuzzy_match("", "anything") == 0


def test_swapped_letters_and_digits_cost_five() -> None:
    assert fuzzy_match("v2", "2v") == -119.9
    assert fuzzy_match("2v", "v2 beta") == -19.9
    assert fuzzy_match("v2x", "2vx") is None  # only letters+digits or digits+letters swap


def test_fuzzy_positions_are_utf16_units() -> None:
    assert fuzzy_match("😀b", "a😀b") == -14.399999999999999
    assert len(utf16_units("a😀b")) == 4


# --- lowercasing ----------------------------------------------------------------------------------

def test_js_lower() -> None:
    assert js_lower("ΑΣ Β") == "ας β"
    assert js_lower("İ") == "i\u0307"
    assert js_lower("\ua7cb") == "\u0264"  # Unicode 16, which Python 3.11 does not know
    assert js_lower("Σ\ua7cdΣ") == "σ\ua7cdς"
    assert normalize_whitespace_lower(" A\u00a0\u2028B\x1cC ") == "a b\x1cc"


_TRICKY = ("ΑΣ", "Σ", "\ua7cb", "\ua7cd", "\U00010d50", "İ", "ß", "a", "B", " ", "\t", "\n", "\x0b", "\xa0",
           "\u2028", "\u3000", "\ufeff", "\x1c", "\x1f", "\x85", "\u200b", "\ud83d", "😀", ".")


def _tricky_texts(count: int) -> list[str]:
    rng = random.Random(25)
    pieces = [*_TRICKY, *(chr(rng.randrange(0x20, 0x3000)) for _ in range(200))]
    return ["".join(rng.choice(pieces) for _ in range(rng.randrange(13))) for _ in range(count)]


def test_the_fast_paths_of_lowercasing_and_whitespace_fold_as_the_rules_do() -> None:
    from sessionstore.models.js_text import JS_WHITESPACE, _lower_new, js_string

    # the rules written out: JavaScript's \s runs made one space and trimmed, after toLowerCase
    runs = re.compile(f"[{re.escape(JS_WHITESPACE)}]+")
    for text in _tricky_texts(3000):
        assert normalize_whitespace_lower(text) == runs.sub(" ", js_lower(text)).strip(JS_WHITESPACE), text
        if "\u03a3" not in text:  # (a capital sigma has its own rule, tested above)
            assert js_lower(text) == _lower_new(js_string(text)), text


# --- matching and sorting --------------------------------------------------------------------------

def test_token_tiers() -> None:
    assert scores("login") == [-84, TIER_WEIGHT, None]  # in the name; in the messages
    assert scores("lgn") == [2 * TIER_WEIGHT - 10.4, TIER_WEIGHT, None]  # scattered in the name; in the cwd
    assert scores('"page broke"') == [None, TIER_WEIGHT, None]  # \u00a0 in the messages normalises
    assert scores('"fixed  the"') == [TIER_WEIGHT, None, None]
    assert scores("zzz") == [None, None, None]


def test_relevance_recent_and_the_name_filter() -> None:
    assert ids(filter_and_sort(SESSIONS, "lgn", "relevance")) == ["b2", "a1"]
    assert ids(filter_and_sort(SESSIONS, "lgn", "threaded")) == ["b2", "a1"]
    assert ids(filter_and_sort(SESSIONS, "lgn", "recent")) == ["a1", "b2"]
    assert ids(filter_and_sort(SESSIONS, "lgn", "relevance", "named")) == ["a1"]
    assert ids(filter_and_sort(SESSIONS, " ", "relevance")) == ["a1", "b2", "c3"]
    assert filter_and_sort(SESSIONS, "re:(", "recent") == []


def test_ties_sort_by_modified_descending_then_list_order() -> None:
    tied = [session(f"s{i}", None, "/", "same text", m) for i, m in enumerate([1, 5, 5, 3])]
    assert ids(filter_and_sort(tied, "same", "relevance")) == ["s1", "s2", "s3", "s0"]


def test_has_session_name() -> None:
    assert not has_session_name(SearchFields("x", " \u00a0", "/", 0))
    assert has_session_name(SearchFields("x", "\x1c", "/", 0))  # not JavaScript whitespace
    assert not has_session_name(SearchFields("x", None, "/", 0))


# --- needles ---------------------------------------------------------------------------------------

class NoMessages:
    def contains_lower(self, value: str) -> bool:
        return False

    def contains_normalized(self, phrase: str) -> bool:
        return False

    def search_regex(self, regex: object) -> bool:
        return False


def test_needles_of_a_query() -> None:
    parsed = parse_query('Foo "A\u00a0 B"')
    assert needles(parsed) == (MessageNeedle(Token("fuzzy", "Foo"), "lower", "foo"),
                               MessageNeedle(Token("phrase", "A\u00a0 B"), "normalized", "a b"))
    assert needles(parse_query("re:x")) is None
    assert needles(parse_query("re:(")) is None


def test_a_session_matches_iff_each_needle_is_met_outside_the_messages_or_inside_them() -> None:
    rng = random.Random(7)
    words = ["login", "LGN", "v2", "2v", "fix bug", "ΑΣ", "straße", "a\u00a0b", "x"]
    for _ in range(400):
        fields = SearchFields("id-" + rng.choice(words), rng.choice([None, *words]), "/" + rng.choice(words), 0)
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 5)))
        query = " ".join(rng.choice([w, f'"{w}"'])[: rng.randint(1, 6)] for w in rng.sample(words, 2))
        parsed = parse_query(query)
        found = needles(parsed)
        assert found is not None
        messages = TextMessages(text)
        expected = all(
            match_session(fields, NoMessages(), ParsedQuery("tokens", (needle.token,))) is not None
            or (messages.contains_lower(needle.value) if needle.kind == "lower"
                else messages.contains_normalized(needle.value))
            for needle in found
        )
        assert (match_session(fields, messages, parsed) is not None) is expected, query

"""``sessionstore.catalog.search_rules`` equals pi 1.6's session-picker search, run live: one
``pi_search.mjs`` process per run gets seeded pseudo-random sessions, queries, fuzzy pairs, strings
and regexes (plus hand-picked ones) and answers with pi's parseSearchQuery, matchSession,
filterAndSortSessions (every sort mode and the name filter), fuzzyMatch, toLowerCase and
``new RegExp(pattern, "i").test``; every answer must be the port's, scores to the last bit."""

# ruff: noqa: RUF001  (the confusable letters are the point: Greek sigma, long s, Kelvin sign, dotless i)

from __future__ import annotations

import json
import os
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sessionstore.catalog.js_regex import JsRegexSyntaxError, JsRegexUnsupported, compile_js_regex
from sessionstore.catalog.search_rules import (
    SearchFields,
    SearchSession,
    TextMessages,
    filter_and_sort,
    fuzzy_match,
    js_lower,
    match_session,
    parse_query,
)
from sessionstore.models.js_text import ignore_case_classes
from tests.differential.oracle import Oracle, find_oracle

Json = dict[str, Any]

SCRIPT = Path(__file__).with_name("pi_search.mjs")
SEED = 1613
SESSIONS = 70
RANDOM_QUERIES = 1500
FUZZY_PAIRS = 6000
LOWER_STRINGS = 1500
RANDOM_REGEXES = 1500

WHITESPACE = [" ", " ", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u2028", "\u3000", "\ufeff", "\u200a"]
NOT_WHITESPACE = ["\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u200b", "\u180e"]
WORDS = [
    "login", "Login", "LGN", "lgn", "logs", "v2", "2v", "V2beta", "api2", "2fa", "fix-bug", "fix_bug",
    "src/main.py", "node.js", "a:b", "Über", "straße", "STRASSE", "İstanbul", "ΑΣ", "σοφός", "Kelvin",
    "\u212a", "ſtop", "emoji😀", "😀", "𐐀deseret", "naïve", "café", "CAFÉ", "résumé", "日本語", "テスト",
    "opus", "openrouter", "claude-opus", "anthropic", "quote\"d", "re:x", "re", "x", "q", "zz", "abc",
    "ABC", "a.b.c", "foo", "bar", "baz", "foobar", "FooBar", "deploy", "k8s", "tests", "\u1c89\u1c8a",
    "\ua7cb", "ƛ", "x\x1cy", "p\x85q", "\ufeffbom",
]
CWDS = ["/home/ana/proj-x", "/tmp/v2/app", "/srv/Login-Service", "C:\\Users\\Bob\\repo", "/home/ana/日本",
        "", "/x", "/home/ana/opus/openrouter", "/data/2v/node.js"]
REGEXES = [
    "log", "^log", "in$", "l.g", "a|b", "(foo|bar)+", "[a-z]+\\d", "\\bv2\\b", "\\w+\\s\\w+", "k", "K", "s",
    "stra(ss|ß)e", "\\u00e9", "caf\\xe9", "\\x", "\\u12", "\\u{4}", "u{2}", "a{2,}", "o{1,2}?", "(?=op)o",
    "(?!x)o", "(?<=f)o", "(?<!f)o", "(?<name>ab)c", "[^a-z]", "[\\d-z]", "[a-\\d]", "[\\b]", "\\cJ", "\\c",
    "[\\c1]", "\\0", "\\012", "\\8", "\\p{L}", "\\P", ".", "^.$", "^..$", "[😀]", "😀", "\\ud83d", "[^]",
    "[]", "(?:)", "a{", "a{1", "a{1,", "}", "]", "x*?y", "\\s", "\\S+", "\u00a0", "\\bß", "İ", "i\u0307",
    "ς", "Σ", "σ", "\\W", "[\\W]", "[^\\W]", "(?=a)*", "(?=o)+p", "\\/", "a/b", "(", ")", "*", "a**", "\\",
    "[", "[z-a]", "a{2,1}", "(?x)", "(?<1a>x)", "(?<a>x)(?<a>y)", "(?<a>x)\\k", "(?<a>x)\\k<b>", "{1}", "^*",
    "(?<=a)*", "\\b+", "(?i:a)", "(?<a>x)[\\k]", "(?<a>x)\\k<a", "a{99999999999}", "\\1(a)", "(a)\\1",
    "(?<a>x)\\k<a>", "(?<=a+)b", "\\k", "[\\k]", "\\2(a)", "(a)|\\2", "\\400", "\\377", "\\08", "(?<$a>x)",
    "x(?<é>y)", "(?<a\u200cb>x)", "[\\-]", "a{0}", "(?:a|b){3}", "(?<=ab|cd)e", "(?<=a|bc)d", "\\Bo",
    "\u212a", "\u017f", "[\u212a]", "[k-k]", "[^k]", "\\u212A", "[\\u0130]", "\u1c89", "\ua7cb", "[\u019b]",
]


@dataclass(frozen=True)
class Cases:
    sessions: list[Json]
    queries: list[str]
    fuzzy: list[tuple[str, str]]
    lower: list[str]
    regex: list[tuple[str, list[str]]]


def _phrase(rng: random.Random, words: int) -> str:
    parts = [rng.choice(WORDS) for _ in range(words)]
    return "".join(rng.choice(WHITESPACE + NOT_WHITESPACE[:2]) + p for p in parts).lstrip(" ")


def make_sessions(rng: random.Random) -> list[Json]:
    sessions = []
    for index in range(SESSIONS):
        name_kind = rng.random()
        name = None if name_kind < 0.25 else "" if name_kind < 0.3 else " \u00a0" if name_kind < 0.33 else (
            _phrase(rng, rng.randint(1, 4)))
        cwd = rng.choice(CWDS) + ("/" + rng.choice(WORDS) if rng.random() < 0.5 else "")
        text = _phrase(rng, rng.randint(0, 30)) if rng.random() < 0.9 else ""
        sessions.append({
            "id": f"{rng.getrandbits(32):08x}-{rng.choice(['abc', 'Lgn', 'v2', 'x'])}-{index:03d}",
            "name": name, "cwd": cwd, "allMessagesText": text,
            "modified": rng.choice([1_700_000_000_000, 1_700_000_000_001, 1_700_000_500_000]) + rng.randint(0, 2),
        })
    return sessions


def _token_like(rng: random.Random, source: str) -> str:
    """A token drawn from ``source``: a slice, a scattered subsequence, or swapped letters/digits."""
    if not source:
        return rng.choice(WORDS)
    choice = rng.random()
    if choice < 0.4:
        start = rng.randrange(len(source))
        return source[start:start + rng.randint(1, 8)]
    if choice < 0.7:
        picks = sorted(rng.sample(range(len(source)), min(len(source), rng.randint(1, 5))))
        return "".join(source[i] for i in picks)
    return rng.choice(["v2", "2v", "api2", "2api", "fa2", "lgn", "LGN", "k8s", "8k", "b2c"])


def make_query(rng: random.Random, sessions: list[Json]) -> str:
    session = rng.choice(sessions)
    field = rng.choice([session["name"] or "", session["cwd"], session["allMessagesText"], session["id"]])
    kind = rng.random()
    if kind < 0.12:
        return "re:" + rng.choice(["", " "]) + rng.choice([*REGEXES, _token_like(rng, field)])
    tokens = []
    for _ in range(rng.randint(1, 3)):
        token = _token_like(rng, field).strip('"') or "x"
        roll = rng.random()
        if roll < 0.2:
            token = '"' + token + rng.choice(WHITESPACE) + _token_like(rng, field) + '"'
        elif roll < 0.25:
            token = '"' + token  # an unclosed quote
        elif roll < 0.3:
            token = token.upper()
        tokens.append(token)
    return rng.choice(["", " ", "\u00a0", "\ufeff", "\x1c"]) + rng.choice(WHITESPACE).join(tokens)


HAND_QUERIES = [
    "", " ", "\u00a0\u3000", "\x1c", "\x85", '""', '"  "', '"', 'a "b', 'foo"bar baz"', '"bar  baz"qux',
    "lgn", "LGN", "v2", "2v", "login logs", '"fix-bug"', "re:", "re:   ", "re:(", "re:log", "RE:log",
    " re:log", "re:\u00a0log", "x\x1cy", "x\u00a0y", "p\x85q", "😀", "emoji", "ΑΣ", "ας", "straße", "İ",
    "i\u0307", "opus", "k", "\u212a", "ſ", "'quoted'", '"\u00a0login\u00a0"', '"login\u2028logs"',
    "re:^[0-9a-f]{8}-", "re:\\d{3}$", "re:(?<=ana/)proj", "/home", "c:\\users", "日本", "テ",
]


def make_cases() -> Cases:
    rng = random.Random(SEED)
    sessions = make_sessions(rng)
    queries = [*HAND_QUERIES, *(make_query(rng, sessions) for _ in range(RANDOM_QUERIES))]
    alphabet = "aAbBlLgGnN0123456789 -_./:😀éÉßİΣ\u00a0\u212ak"
    fuzzy = [("lgn", "lgn"), ("v2", "2v"), ("opus", "openrouter openrouter/anthropic/claude-opus"), ("", "x"),
             ("x", ""), ("😀", "a😀"), ("\ud83d", "😀")]
    for _ in range(FUZZY_PAIRS):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        query = _token_like(rng, text) if rng.random() < 0.7 else "".join(
            rng.choice(alphabet) for _ in range(rng.randint(0, 4)))
        fuzzy.append((query, text))
    cased = "ΑΣΒσςİIıiKkſSsß😀𐐀\u0301.  \u1c89\ua7ccAaÉé-"
    lower = ["".join(rng.choice(cased) for _ in range(rng.randint(0, 8))) for _ in range(LOWER_STRINGS)]
    texts = [_phrase(rng, rng.randint(0, 6)) for _ in range(12)] + ["", "k", "\u212a", "ſ", "S", "😀", "\ud83d"]
    regex = [(pattern, texts) for pattern in REGEXES]
    regex += [(random_regex(rng), texts) for _ in range(RANDOM_REGEXES)]
    return Cases(sessions, queries, fuzzy, lower, regex)


REGEX_ATOMS = ["a", "K", "k", "s", "ß", "é", ".", "\\d", "\\w", "\\s", "\\W", "\\b", "^", "$", "[a-z]",
               "[^ab]", "[\\d_]", "(", ")", "(?:", "(?=", "(?!", "(?<=", "|", "*", "+", "?", "{2}", "{1,3}",
               "{", "}", "[", "]", "\\", "\\x41", "\\u00E9", "😀", "\u00a0", "-", "\\c", "(?<g>"]


LEAVES = ["a", "K", "k", "s", "ß", "é", ".", "\\d", "\\w", "\\s", "\\W", "[a-z]", "[^ab]", "[\\d_]", "\\x41",
          "\\u00E9", "😀", "\u00a0", "-", "o", "g", "l", "n", "v2", "\\/", "[k-s]", "[^\\s]"]
QUANTIFIERS = ["", "", "", "*", "+", "?", "{2}", "{1,3}", "*?", "{0,}"]


def random_regex(rng: random.Random) -> str:
    """Half token soup (mostly invalid), half built from well-formed parts (mostly valid)."""
    if rng.random() < 0.5:
        return "".join(rng.choice(REGEX_ATOMS) for _ in range(rng.randint(1, 7)))
    return _well_formed(rng, 2)


def _well_formed(rng: random.Random, depth: int) -> str:
    parts = []
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if depth and roll < 0.25:
            opener = rng.choice(["(", "(?:", "(?=", "(?!", "(?<g>"])
            body = _well_formed(rng, depth - 1)
            # no quantified group around a quantifier: (a*)* backtracks exponentially, in pi too
            quantifier = "" if any(q in body for q in "*+?{") else rng.choice(QUANTIFIERS)
            parts.append(opener + body + ")" + quantifier)
        elif roll < 0.32:
            parts.append(rng.choice(["^", "$", "\\b", "\\B", "(?<=" + rng.choice(LEAVES) + ")"]))
        else:
            parts.append(rng.choice(LEAVES) + rng.choice(QUANTIFIERS))
    return ("|" if rng.random() < 0.2 else "").join(parts)


# --- the oracle ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cases() -> Cases:
    return make_cases()


@pytest.fixture(scope="module")
def pi(cases: Cases, tmp_path_factory: pytest.TempPathFactory) -> Json:
    oracle: Oracle = find_oracle(tmp_path_factory.mktemp("pi-agent-dir"))
    classes = {str(unit): list(members) for unit, members in ignore_case_classes().items()}
    payload = {"sessions": cases.sessions, "queries": cases.queries, "fuzzy": cases.fuzzy,
               "lower": cases.lower, "regex": cases.regex, "caseClasses": classes}
    done = subprocess.run(
        [oracle.node, str(SCRIPT)], input=json.dumps(payload), capture_output=True, text=True, check=False,
        env={**os.environ, "SESSIONSTORE_PI_DIR": str(oracle.pi_dir)}, timeout=300,
    )
    if done.returncode != 0:
        pytest.fail(f"pi_search.mjs exited with {done.returncode}:\n{done.stderr[-4000:]}")
    result: Json = json.loads(done.stdout)
    return result


def port_sessions(cases: Cases) -> list[SearchSession]:
    return [SearchSession(SearchFields(s["id"], s["name"], s["cwd"], s["modified"]), TextMessages(s["allMessagesText"]))
            for s in cases.sessions]


def same(ours: float | None, theirs: float | None) -> bool:
    """Equal as JSON numbers (pi's integral scores arrive as ints), or both absent."""
    return (ours is None and theirs is None) or (ours is not None and theirs is not None and ours == theirs)


# --- the comparisons -----------------------------------------------------------------------------

def test_queries_parse_as_pi_parses_them(cases: Cases, pi: Json) -> None:
    differences = []
    for query, theirs in zip(cases.queries, pi["parsed"], strict=True):
        parsed = parse_query(query)
        if parsed.unsupported:
            continue
        ours = {"mode": parsed.mode, "tokens": [{"kind": t.kind, "value": t.value} for t in parsed.tokens],
                "error": parsed.error}
        if ours != theirs:
            differences.append((query, ours, theirs))
    assert differences == []


def test_every_session_scores_as_pi_scores_it(cases: Cases, pi: Json) -> None:
    sessions = port_sessions(cases)
    differences = []
    compared = 0
    for query, theirs in zip(cases.queries, pi["scores"], strict=True):
        parsed = parse_query(query)
        if parsed.unsupported:
            continue
        for session, score in zip(sessions, theirs, strict=True):
            ours = match_session(session.fields, session.messages, parsed)
            compared += 1
            if not same(ours, score):
                differences.append((query, session.fields.id, ours, score))
    assert differences == []
    assert compared > 100_000


def test_every_query_lists_the_sessions_pi_lists_in_pi_order(cases: Cases, pi: Json) -> None:
    sessions = port_sessions(cases)
    differences = []
    matched = 0
    for query, theirs in zip(cases.queries, pi["sorted"], strict=True):
        if parse_query(query).unsupported:
            continue
        ours = {
            "relevance": [s.fields.id for s in filter_and_sort(sessions, query, "relevance")],
            "recent": [s.fields.id for s in filter_and_sort(sessions, query, "recent")],
            "threaded": [s.fields.id for s in filter_and_sort(sessions, query, "threaded")],
            "named": [s.fields.id for s in filter_and_sort(sessions, query, "relevance", "named")],
        }
        matched += bool(theirs["relevance"]) and len(theirs["relevance"]) < len(sessions)
        if ours != theirs:
            differences.append((query, ours, theirs))
    assert differences == []
    assert matched > RANDOM_QUERIES // 3, "most queries should select some sessions, not none or all"


def test_unsupported_regexes_are_rare(cases: Cases) -> None:
    unsupported = [q for q in cases.queries if parse_query(q).unsupported]
    assert len(unsupported) < len(cases.queries) // 20


def test_fuzzy_match_scores_as_pi_tui(cases: Cases, pi: Json) -> None:
    differences = [(q, t, fuzzy_match(q, t), theirs) for (q, t), theirs in zip(cases.fuzzy, pi["fuzzy"], strict=True)
                   if not same(fuzzy_match(q, t), theirs)]
    assert differences == []
    assert sum(score is not None for score in pi["fuzzy"]) > FUZZY_PAIRS // 2


def test_lowercasing_is_to_lower_case(cases: Cases, pi: Json) -> None:
    assert [js_lower(s) for s in cases.lower] == pi["lower"]


def test_regexes_test_as_javascript_tests_them(cases: Cases, pi: Json) -> None:
    differences: list[tuple[str, object, Json]] = []
    checked = 0
    for (pattern, texts), theirs in zip(cases.regex, pi["regex"], strict=True):
        try:
            regex = compile_js_regex(pattern)
        except JsRegexUnsupported:
            assert "error" not in theirs, f"{pattern!r} is refused as unsupported, but pi rejects it as invalid"
            continue
        except JsRegexSyntaxError as error:
            if theirs != {"error": str(error)}:
                differences.append((pattern, str(error), theirs))
            continue
        ours = {"tests": [regex.test(text) for text in texts]}
        checked += 1
        if ours != theirs:
            differences.append((pattern, ours, theirs))
    assert differences == []
    assert checked > RANDOM_REGEXES // 4


def test_case_insensitive_classes_are_v8s(pi: Json) -> None:
    """For every BMP code unit c, the units ``/c/i`` matches are the ones the translation puts in c's class."""
    classes = ignore_case_classes()
    theirs = {int(unit): members for unit, members in pi["caseMatches"].items()}
    ours = {unit: [m for m in members if m != unit] for unit, members in classes.items()}
    assert ours == theirs

"""``SessionStore.search`` and ``sessionstore search`` on both backends: what the index holds is
written with the entries (append and import, same transaction) and goes with its session; the index
narrows and pi's rules decide (the set and order against pi itself: tests/differential/
test_search_against_pi.py); ``--everything`` adds what pi does not search; hits name the entries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, text

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.errors import InvalidInputError
from tests.paths import FIXTURES, PI_FILES

Json = dict[str, Any]


def user(store: SessionStore, sid: str, content: Any) -> str:
    return store.append_message(sid, {"role": "user", "content": content, "timestamp": 1_700_000_000_000})


def assistant(store: SessionStore, sid: str, content: list[Json]) -> str:
    return store.append_message(sid, {
        "role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
        "model": "claude", "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
                                     "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop", "timestamp": 1_700_000_000_001})


def ids(results: list[Any]) -> list[str]:
    return [r.session.id for r in results]


@pytest.fixture
def two(store: SessionStore) -> tuple[str, str]:
    a = store.create_session(cwd="/home/u/alpha", session_id="aaaa-1")
    user(store, a, "Migrate the SQLite connection pool")
    assistant(store, a, [{"type": "thinking", "thinking": "ponder the WAL mode"},
                         {"type": "text", "text": "Done."},
                         {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "grep -r needle"}}])
    b = store.create_session(cwd="/home/u/beta", session_id="bbbb-2")
    user(store, b, [{"type": "text", "text": "connection"}, {"type": "text", "text": "pool sizes"}])
    return a, b


def test_an_appended_message_is_found_at_once_and_a_deleted_session_is_gone(
    store: SessionStore, two: tuple[str, str]
) -> None:
    a, b = two
    assert set(ids(store.search("connection"))) == {a, b}
    assert ids(store.search("migrate")) == [a]
    store.delete_session(a)
    assert ids(store.search("connection")) == [b]
    assert store.search("migrate") == []


def test_a_phrase_runs_across_messages_as_pis_joined_text_does(store: SessionStore, two: tuple[str, str]) -> None:
    a, b = two
    # b's text blocks join as "connection pool sizes"; a has "connection pool" inside one message
    assert set(ids(store.search('"connection pool"'))) == {a, b}
    assert ids(store.search('"pool sizes"')) == [b]
    c = store.create_session(cwd="/w", session_id="cccc-3")
    user(store, c, "first half ends with connection")
    user(store, c, "   pool\n\tstarts the second")
    assert set(ids(store.search('"connection pool"'))) == {a, b, c}
    assert ids(store.search('"connection   POOL starts"')) == [c]


def test_short_tokens_scan_and_match_as_pi_matches(store: SessionStore, two: tuple[str, str]) -> None:
    a, b = two
    assert set(ids(store.search("po"))) == {a, b}
    assert ids(store.search("o", cwd="/home/u/beta")) == [b]
    assert ids(store.search("zq")) == []


def test_everything_adds_thinking_tool_calls_bash_and_summaries(store: SessionStore, two: tuple[str, str]) -> None:
    a, _b = two
    assert store.search('"wal mode"') == []
    assert ids(store.search('"wal mode"', everything=True)) == [a]
    assert ids(store.search("needle", everything=True)) == [a]
    store.append_message(a, {"role": "bashExecution", "command": "make deploy", "output": "deployed to staging",
                             "exitCode": 0, "cancelled": False, "truncated": False, "timestamp": 1})
    assert store.search("staging") == []
    assert ids(store.search("staging", everything=True)) == [a]
    hit = store.search("staging", everything=True)[0].hits[-1]
    assert hit.role == "bashExecution" and "staging" in hit.snippet


def test_hits_name_the_matching_entries_with_a_snippet_of_their_own_text(
    store: SessionStore, two: tuple[str, str]
) -> None:
    a, _b = two
    first = store.entries(a)[0]["id"]
    [result] = store.search("sqlite")
    assert result.session.id == a
    assert [h.entry_id for h in result.hits] == [first]
    assert result.hits[0].role == "user"
    assert "SQLite" in result.hits[0].snippet  # the entry's text as written, not the folded form
    assert store.search("sqlite", hits=0)[0].hits == ()


@pytest.mark.parametrize("needle", ['"', "a*b", "x:y", "(or)", "NEAR", "50%", "under_score", "back\\slash", "'"])
def test_characters_that_mean_something_to_the_index_are_plain_text(store: SessionStore, needle: str) -> None:
    sid = store.create_session(cwd="/w")
    other = store.create_session(cwd="/w")
    user(store, sid, f"left {needle} right")
    user(store, other, "left right abxy or ne ar 50 underXscore backslash")
    query = needle if needle != '"' else 're:"'
    assert ids(store.search(query)) == [sid]


def test_case_folds_as_javascript_folds_it(store: SessionStore) -> None:
    sid = store.create_session(cwd="/w")
    user(store, sid, "ÉCOLE İstanbul ΟΔΟΣ straße")
    for query in ("école", "ÉCOLE", "i̇stanbul", "οδος", "STRASSE"[:0] + "straße"):
        assert ids(store.search(query)) == [sid], query
    assert store.search("strasse") == []  # toLowerCase does not fold ß to ss


def test_a_regex_reads_the_raw_text_and_bad_queries_are_refused(store: SessionStore, two: tuple[str, str]) -> None:
    a, b = two
    assert ids(store.search(r"re:^migrate\b")) == [a]
    assert ids(store.search(r"re:connection pool sizes$")) == [b]  # pi's " " join of b's blocks
    for bad in ("re:", "re:(", "re:[a-"):
        with pytest.raises(InvalidInputError, match="bad query"):
            store.search(bad)
    with pytest.raises(InvalidInputError):
        store.search("x", sort="best")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        store.search("x", limit=-1)


def test_an_empty_query_lists_every_session_in_list_order(store: SessionStore, two: tuple[str, str]) -> None:
    assert ids(store.search("   ")) == [i.id for i in store.list_sessions(sort="modified")]  # pi's picker: pi's order
    assert len(store.search("", limit=1)) == 1


def test_an_imported_file_is_indexed_and_replacing_it_indexes_it_again(store: SessionStore, db_engine: Engine) -> None:
    result = store.import_jsonl(PI_FILES["large-session"])
    with db_engine.connect() as conn:
        rows = conn.execute(text("SELECT count(*) FROM sessionstore_search")).scalar_one()
    assert rows > 100
    found = store.search("tui-renderer")
    assert ids(found) == [result.session_id]
    store.import_jsonl(PI_FILES["large-session"], replace=True)
    with db_engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM sessionstore_search")).scalar_one() == rows
    assert ids(store.search("tui-renderer")) == [result.session_id]


def test_cli_search_prints_pis_shape_and_refuses_bad_queries_without_a_traceback(
    store: SessionStore, two: tuple[str, str], db_url: str
) -> None:
    a, b = two
    runner = CliRunner()
    out = runner.invoke(cli, ["--db", db_url, "search", "connection", "--json", "--hits", "1"])
    assert out.exit_code == 0, out.output
    shown = json.loads(out.output)
    assert {r["sessionId"] for r in shown} == {a, b}
    assert all(set(r) == {"sessionId", "score", "hits"} for r in shown)
    assert all(set(h) == {"entryId", "role", "snippet"} for r in shown for h in r["hits"])
    text_out = runner.invoke(cli, ["--db", db_url, "search", "migrate"])
    assert text_out.exit_code == 0 and a in text_out.output and b not in text_out.output
    bad = runner.invoke(cli, ["--db", db_url, "search", "re:("])
    assert bad.exit_code == 2 and "Traceback" not in bad.output and "bad query" in bad.output
    none = runner.invoke(cli, ["--db", db_url, "search", "nothing-like-this"])
    assert none.exit_code == 0 and "no sessions match" in none.output


def test_the_search_help_shows_the_syntax_and_examples(tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["search", "--help"])
    assert out.exit_code == 0
    assert "re:REGEX" in out.output and "Examples" in out.output and "--everything" in out.output


def test_nul_and_lone_surrogates_are_not_found_by_the_letters_that_store_them(store: SessionStore) -> None:
    """(Found by review: the payload's escaped form of NUL and lone surrogates held letters and digits
    that plain needles matched.)"""
    result = store.import_jsonl(FIXTURES / "tolerant" / "OK-lone-surrogates-and-nul.jsonl")
    for needle in ("sd800", "dc00", '"0 end"', "fdd0", '"e0 a"'):
        assert result.session_id not in ids(store.search(needle)), needle
    assert ids(store.search('"nul \x00 end"')) == [result.session_id]  # (NUL itself is found: U+FFFD both sides)


def test_a_query_of_a_thousand_words_is_answered(store: SessionStore, two: tuple[str, str]) -> None:
    """(Found by review: one OR term per needle passed SQLite's expression depth of 1000.)"""
    a, _b = two
    assert ids(store.search(" ".join(["the"] * 1200))) == [a]
    assert ids(store.search(" ".join(f"w{i}" for i in range(600)) + " sqlite", everything=True)) == []

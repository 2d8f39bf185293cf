"""The one question the search index answers (``Tx.sessions_with_text``: which sessions have an entry whose
folded text holds a needle) against a reading of every folded text, on both backends; and SQLite's
vocabulary (revision 0018: terms, postings) kept in step with the search rows: a session's terms go with
it unless another session holds them, the index turned off empties it, and a database at 0017 is
indexed by the upgrade and back by the downgrade."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, text

from sessionstore.api import SessionStore
from sessionstore.models.entry_catalog import index_form
from sessionstore.models.js_text import normalize_whitespace_lower
from sessionstore.store import archive, erasure, migrate
from sessionstore.store.engine import make_engine
from sessionstore.store.revision import SCHEMA_REVISION
from tests.test_search_derived import old_session

WORDS = ["alpha", "beta", "gamma", "the", "then", "other", "file", "files", "profile", "e", "x", "qx",
         "naïve", "ÉCOLE", "straße", "日本語", "😀", "a.b", "foo(bar)", "path/to/file.ts", "--flag=1", '"q"',
         "x_y", "%", "50%", "tab\there", "line\nbreak", "\u00a0nbsp", "ǅ", "İi", "ΑΣ"]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8)))


def _needles(rng: random.Random) -> list[str]:
    """Needles as the search asks them: folded (lowercase, single spaces), no space or a phrase."""
    found = {"e", "x", "qx", "the", "file", "ile", "th", "a.b", "o(b", "h/to/f", "%", "日本", "😀", "ss", "naï",
             "the file", "alpha beta", "e f", "le p", "zzz", "gamma gamma"}
    for _ in range(20):
        text = normalize_whitespace_lower(_text(rng))
        start = rng.randrange(len(text))
        found.add(text[start:start + rng.randint(1, 12)].strip(" "))
    return sorted(n for n in found if n)


def _brute(store: SessionStore, needle: str) -> set[int]:
    with store._entries.backend.read() as tx:
        rows = tx.run("SELECT session_key, text FROM sessionstore_search").fetchall()
    return {int(key) for key, folded in rows if index_form(needle) in folded}


def _answer(store: SessionStore, needle: str) -> set[int]:
    with store._entries.backend.read() as tx:
        return tx.sessions_with_text(index_form(needle), everything=False)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_index_answers_as_a_reading_of_every_folded_text(store: SessionStore, seed: int) -> None:
    rng = random.Random(seed)
    for n in range(12):
        sid = store.create_session(cwd="/w", session_id=f"s{seed}-{n}")
        for _ in range(rng.randint(0, 6)):
            store.append_message(sid, {"role": "user", "content": _text(rng), "timestamp": 1})
    store.search("warm")  # (the catch-up indexes every entry)
    for needle in _needles(rng):
        assert _answer(store, needle) == _brute(store, needle), needle


def _vocabulary(engine: Engine) -> tuple[set[str], set[tuple[str, int]]]:
    with engine.connect() as conn:
        terms = {t for (t,) in conn.execute(text("SELECT term FROM sessionstore_search_terms"))}
        postings = {(t, int(k)) for t, k in conn.execute(text(
            "SELECT t.term, p.session_key FROM sessionstore_search_postings p"
            " JOIN sessionstore_search_terms t ON t.id = p.term_id"))}
        fts = conn.execute(text("SELECT count(*) FROM sessionstore_search_terms_fts"
                                " WHERE sessionstore_search_terms_fts MATCH '\"shared\"'")).scalar_one()
    assert fts == ("shared" in terms)  # (the FTS5 table follows the terms)
    return terms, postings


def _key(store: SessionStore, sid: str) -> int:
    with store._entries.backend.read() as tx:
        return int(tx.run("SELECT key FROM sessionstore_sessions WHERE id = :sid", {"sid": sid}).fetchone()[0])


@pytest.fixture
def sqlite_store(tmp_path: Any) -> Iterator[tuple[SessionStore, Engine]]:
    """A store on a SQLite file, with an engine of its own: the vocabulary is SQLite's (PostgreSQL indexes
    the rows' text with pg_trgm)."""
    url = f"sqlite:///{tmp_path / 'vocabulary.db'}"
    with SessionStore(url) as store:
        engine = make_engine(url)
        yield store, engine
        engine.dispose()


def test_a_sessions_terms_go_with_it_unless_another_holds_them(sqlite_store: tuple[SessionStore, Engine],
                                                                tmp_path: Any) -> None:
    store, db_engine = sqlite_store
    sids = {}
    for name, words in (("a", "shared only-a"), ("b", "shared only-b"), ("c", "shared only-c"), ("d", "only-d")):
        sids[name] = store.create_session(cwd="/w")
        store.append_message(sids[name], {"role": "user", "content": f"Some {words} words", "timestamp": 1})
    store.search("warm")
    terms, postings = _vocabulary(db_engine)
    assert {"some", "shared", "words", "only-a", "only-d"} <= terms
    assert ("shared", _key(store, sids["a"])) in postings and ("only-a", _key(store, sids["b"])) not in postings
    store.delete_session(sids["a"])
    erasure.erase_session(store._entries, sids["b"], by="test")
    archive.archive_session(store._entries, sids["c"], archive_dir=tmp_path)
    terms, postings = _vocabulary(db_engine)
    assert terms == {"some", "words", "only-d"} and {k for _t, k in postings} == {_key(store, sids["d"])}
    archive.restore_session(store._entries, sids["c"])
    assert [r.session.id for r in store.search("shared")] == [sids["c"]]
    assert {"shared", "only-c"} <= _vocabulary(db_engine)[0]
    store.set_search_index(False)
    assert _vocabulary(db_engine) == (set(), set())
    store.set_search_index(True)
    assert {"shared", "only-c", "only-d"} <= _vocabulary(db_engine)[0]


def test_a_database_at_0017_is_indexed_by_the_upgrade_and_back_by_the_downgrade(tmp_path: Any) -> None:
    """(SQLite: revision 0018 changes SQLite's index only.)"""
    from alembic import command

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    migrate.upgrade(engine, "0017")
    key = old_session(engine)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO sessionstore_search_marks (session_key, next_seq) VALUES (:key, 1)"),
                     {"key": key})
    assert migrate.upgrade(engine) == SCHEMA_REVISION
    terms, postings = _vocabulary(engine)
    assert terms == {"an", "old", "needle"} and postings == {(t, key) for t in terms}
    with SessionStore(url) as store:
        assert [r.session.id for r in store.search("ld need")] == ["old"]
    config = migrate.alembic_config()
    with engine.connect() as conn, migrate.foreign_keys_off(conn), conn.begin():
        config.attributes["connection"] = conn
        command.downgrade(config, "0017")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM sessionstore_search_fts"
                                 " WHERE sessionstore_search_fts MATCH '\"ld need\"'")).scalar_one() == 1
        assert conn.execute(text("SELECT count(*) FROM sqlite_master WHERE name LIKE 'sessionstore_search_terms%'"
                                 " OR name LIKE 'sessionstore_search_postings%'")).scalar_one() == 0
    engine.dispose()

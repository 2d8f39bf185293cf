"""Search and archived sessions (SPEC 18): an archived session is left out of a search unless it asks for
``archived``; then the session's archive file is read, and it is found exactly as it was found before it
was archived (same sessions, order, scores and hits), and it stays archived. On both backends."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessionstore import user_message
from sessionstore.api import SessionStore
from sessionstore.catalog import search as search_module
from sessionstore.cli import cli
from sessionstore.errors import ArchiveError
from sessionstore.store import archive
from tests.paths import PI_FILES

QUERIES = [
    "refactor",  # a word of the messages
    '"one big mess"',  # a phrase within one message
    '"nicer. i want"',  # a phrase with punctuation
    "mono sqlite",  # two words, each must match somewhere
    "qx",  # shorter than a trigram: a scan
    "re:untangl\\w+",  # a regex over the raw text
    "pimono",  # fuzzy on the cwd
    "on a branch",  # the appended message
    "",  # no query: the listing
]


def _results(store: SessionStore, query: str, **options: Any) -> list[dict[str, Any]]:
    return [r.to_json() for r in store.search(query, hits=3, **options)]


def _without_mark(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "archived"} for r in results]


@pytest.fixture
def sessions(store: SessionStore) -> list[str]:
    sids = [store.import_jsonl(PI_FILES[name]).session_id for name in ("large-session", "before-compaction")]
    store.branch(sids[1], store.entries(sids[1])[5]["id"])
    store.append_message(sids[1], user_message("on a branch"))
    third = store.create_session(cwd="/elsewhere")
    store.append_message(third, user_message("a live one about sqlite and refactoring"))
    return [*sids, third]


@pytest.mark.parametrize("everything", [False, True], ids=["messages", "everything"])
def test_archived_sessions_are_found_from_their_files_as_they_were_before(
        store: SessionStore, sessions: list[str], tmp_path: Path, everything: bool) -> None:
    sorts = ("relevance", "recent")
    before = {(q, s): _results(store, q, everything=everything, sort=s) for q in QUERIES for s in sorts}
    assert any(before.values()) and before[("refactor", "relevance")]
    archived = set(sessions[:2])
    for sid in archived:
        archive.archive_session(store._entries, sid, archive_dir=tmp_path)
    for (query, sort), expected in before.items():
        found = _results(store, query, everything=everything, sort=sort, archived=True)
        assert _without_mark(found) == expected, (query, sort)
        assert {r["sessionId"] for r in found if r.get("archived")} == archived & {r["sessionId"] for r in found}
        left_out = _results(store, query, everything=everything, sort=sort)
        assert left_out == [r for r in expected if r["sessionId"] not in archived], (query, sort)
    assert archive.archived_ids(store._entries) == archived  # still archived: the files were only read


def test_a_damaged_archive_fails_the_search_naming_its_file(
        store: SessionStore, sessions: list[str], tmp_path: Path, db_url: str) -> None:
    others = [r.session.id for r in store.search("refactor") if r.session.id != sessions[0]]
    info = archive.archive_session(store._entries, sessions[0], archive_dir=tmp_path)
    data = Path(info.file).read_bytes()
    Path(info.file).write_bytes(data[: len(data) // 2])  # cut short
    with pytest.raises(ArchiveError, match=info.file):
        store.search("refactor", archived=True)
    assert [r.session.id for r in store.search("refactor")] == others  # without it: the file is not read
    result = CliRunner().invoke(cli, ["--db", db_url, "search", "refactor", "--archived"])
    assert result.exit_code != 0 and info.file in result.stderr and "Traceback" not in result.output
    assert archive.archived_ids(store._entries) == {sessions[0]}


def test_a_session_restored_while_the_search_reads_it_is_searched_again_in_a_new_snapshot(
        store: SessionStore, sessions: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _results(store, "refactor")
    archive.archive_session(store._entries, sessions[0], archive_dir=tmp_path)
    read = search_module.archived_entries
    restored: list[str] = []

    def restore_first(file: str, session_id: str) -> Any:
        if not restored:  # another process restores the session after this search's snapshot began
            archive.restore_session(store._entries, session_id)
            restored.append(session_id)
        return read(file, session_id)

    monkeypatch.setattr(search_module, "archived_entries", restore_first)
    assert _results(store, "refactor", archived=True) == expected
    assert restored == [sessions[0]] and archive.archived_ids(store._entries) == set()


def test_the_cli_marks_archived_results(store: SessionStore, sessions: list[str], tmp_path: Path,
                                        db_url: str) -> None:
    archive.archive_session(store._entries, sessions[1], archive_dir=tmp_path)
    runner = CliRunner()
    shown = runner.invoke(cli, ["--db", db_url, "search", "refactor", "--archived"])
    assert shown.exit_code == 0, shown.output
    assert f"{sessions[1]}  " in shown.stdout and "[archived]" in shown.stdout
    left_out = json.loads(runner.invoke(cli, ["--db", db_url, "search", "refactor", "--json"]).stdout)
    assert sessions[1] not in [r["sessionId"] for r in left_out] and all("archived" not in r for r in left_out)
    found = json.loads(runner.invoke(cli, ["--db", db_url, "search", "refactor", "--archived", "--json"]).stdout)
    marks = {r["sessionId"]: r.get("archived", False) for r in found}
    assert marks[sessions[1]] is True and marks[sessions[2]] is False
    with gzip.open(next(tmp_path.rglob("*.gz")), "rb") as fp:  # the file is as it was: still a pi file
        assert json.loads(fp.readline())["id"] == sessions[1]

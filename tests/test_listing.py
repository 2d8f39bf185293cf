"""Listing sessions as pi lists them (issue 13, item 2): pi's facts and order, the directory compared as
pi resolves it, ``--since``/``--limit``, and resuming the most recent session (pi's ``--continue``).
The facts themselves are held to pi's own listing by ``tests/differential/test_listing_against_pi.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessionstore.api import SessionStore
from sessionstore.cli.main import cli
from sessionstore.models import js
from sessionstore.models.rules import resolve_path
from tests.builders import user

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z


def session(store: SessionStore, sid: str, cwd: str, at: int | None) -> str:
    store.create_session(cwd=cwd, session_id=sid, timestamp="2025-01-01T00:00:00.000Z")
    if at is not None:
        store.append_message(sid, user(f"hello from {sid}", ts=at))
    return sid


@pytest.mark.parametrize(("path", "base", "resolved"), [
    ("/w/repo", "/x", "/w/repo"),
    ("/w/repo/", "/x", "/w/repo"),
    ("/w//repo/./src/..", "/x", "/w/repo"),
    ("repo", "/w", "/w/repo"),
    (".", "/w/repo", "/w/repo"),
    ("../other", "/w/repo", "/w/other"),
    ("file:///w/my%20repo", "/x", "/w/my repo"),
    ("//w/repo", "/x", "/w/repo"),
])
def test_a_directory_resolves_as_pis_resolve_path_resolves_it(path: str, base: str, resolved: str) -> None:
    assert resolve_path(path, base) == resolved


def test_home_is_expanded_as_pi_expands_it() -> None:
    home = os.path.expanduser("~")
    assert resolve_path("~", "/x") == home
    assert resolve_path("~/repo", "/x") == f"{home}/repo"
    assert resolve_path("~repo", "/x") == "/x/~repo"


def test_sessions_list_newest_activity_first_and_without_activity_by_their_header_time(store: SessionStore) -> None:
    session(store, "old", "/w", T0 + 1_000)
    session(store, "new", "/w", T0 + 9_000)
    session(store, "quiet", "/w", None)  # no message: pi's modified is the header's time
    listed = store.list_sessions()
    assert [i.id for i in listed] == ["new", "old", "quiet"]
    assert [i.modified_ms for i in listed] == [T0 + 9_000, T0 + 1_000, T0]
    assert listed[0].first_message == "hello from new" and listed[0].message_count == 1


def test_the_directory_filter_matches_sessions_whatever_form_names_it(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    session(store, "here", f"{repo}/", T0)
    session(store, "there", str(tmp_path / "other"), T0)
    session(store, "nowhere", "", T0)
    monkeypatch.chdir(repo)
    for given in (str(repo), f"{repo}/", ".", f"{repo}/sub/..", f"../{repo.name}"):
        assert [i.id for i in store.list_sessions(cwd=given)] == ["here"], given
    assert [i.id for i in store.list_sessions(cwd="")] == ["here"]  # "" resolves to the current directory
    assert "nowhere" not in {i.id for i in store.list_sessions(cwd="/")}  # an empty cwd matches none


def test_since_and_limit_narrow_the_list(store: SessionStore) -> None:
    for n in range(5):
        session(store, f"s{n}", "/w", T0 + n * 1_000)
    assert [i.id for i in store.list_sessions(since_ms=T0 + 2_000)] == ["s4", "s3", "s2"]
    assert [i.id for i in store.list_sessions(limit=2)] == ["s4", "s3"]
    assert store.list_sessions(limit=0) == []


def test_the_most_recent_session_is_the_one_pis_continue_resumes(store: SessionStore) -> None:
    assert store.most_recent_session() is None
    session(store, "a", "/w/a", T0 + 5_000)
    session(store, "b", "/w/b", T0 + 1_000)
    assert store.most_recent_session() == "a"
    assert store.most_recent_session(cwd="/w/b/") == "b"
    assert store.most_recent_session(cwd="/w/c") is None


def test_ls_takes_cwd_since_and_limit(sqlite_url: str) -> None:
    with SessionStore(sqlite_url) as store:
        for n in range(3):
            session(store, f"s{n}", "/w", T0 + n * 1_000)
    runner = CliRunner()
    listed = runner.invoke(cli, ["--db", sqlite_url, "ls", "--json", "--cwd", "/w/", "--since",
                                 "2025-01-01T00:00:01Z", "--limit", "1"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert [(r["id"], r["modified"], r["messageCount"]) for r in rows] == [("s2", js.iso_string(T0 + 2_000), 1)]
    bad = runner.invoke(cli, ["--db", sqlite_url, "ls", "--since", "yesterday-ish"])
    assert bad.exit_code == 2 and bad.stderr.startswith("error: --since: not a date")


def test_context_latest_resumes_the_most_recent_session(sqlite_url: str) -> None:
    with SessionStore(sqlite_url) as store:
        session(store, "first", "/w/a", T0 + 5_000)
        session(store, "second", "/w/b", T0 + 1_000)
    runner = CliRunner()
    latest = runner.invoke(cli, ["--db", sqlite_url, "context", "--latest", "--json"])
    assert latest.exit_code == 0 and json.loads(latest.stdout)["sessionId"] == "first"
    of_b = runner.invoke(cli, ["--db", sqlite_url, "context", "--latest", "--cwd", "/w/b", "--json"])
    assert json.loads(of_b.stdout)["sessionId"] == "second"
    none = runner.invoke(cli, ["--db", sqlite_url, "context", "--latest", "--cwd", "/w/c"])
    assert none.exit_code == 2 and none.stderr == "error: no session yet in /w/c\n"
    both = runner.invoke(cli, ["--db", sqlite_url, "context", "first", "--latest"])
    assert both.exit_code == 2 and "not both" in both.stderr

"""Listing sessions (issue 13, item 2; issue 14, item 5): pi's facts, pi's order (``sort="modified"``) and
the default order by the last activity of any kind (creation, appends, forks, leaf moves; an imported
file's own times), the directory compared as pi resolves it, ``--since``/``--limit``, and resuming the
most recent session (pi's ``--continue``). The facts themselves are held to pi's own listing by
``tests/differential/test_listing_against_pi.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.cli.render import display_width, picker_text
from sessionstore.errors import InvalidInputError
from sessionstore.models import js
from sessionstore.models.rules import resolve_path
from tests.builders import user
from tests.conftest import Clock
from tests.paths import PI_FILES

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


def test_in_pis_order_sessions_list_newest_message_first_and_without_one_by_their_header_time(
    store: SessionStore,
) -> None:
    session(store, "old", "/w", T0 + 1_000)
    session(store, "new", "/w", T0 + 9_000)
    session(store, "quiet", "/w", None)  # no message: pi's modified is the header's time
    listed = store.list_sessions(sort="modified")
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
    assert [i.id for i in store.list_sessions(since_ms=T0 + 2_000, sort="modified")] == ["s4", "s3", "s2"]
    assert [i.id for i in store.list_sessions(limit=2, sort="modified")] == ["s4", "s3"]
    assert store.list_sessions(limit=0) == []


def test_the_most_recent_session_is_the_one_pis_continue_resumes_the_last_written_to(
    store: SessionStore, clock: Clock
) -> None:
    """pi's ``continueRecent`` takes the file with the newest mtime, the session written to last (not
    the newest message): here the session with the last activity."""
    assert store.most_recent_session() is None
    session(store, "a", "/w/a", T0 + 5_000)
    session(store, "b", "/w/b", T0 + 1_000)
    assert store.most_recent_session() == "b"  # written after a, though its message is older
    store.append_message("a", user("again", ts=T0 + 6_000))
    assert store.most_recent_session() == "a"
    assert store.most_recent_session(cwd="/w/b/") == "b"
    assert store.most_recent_session(cwd="/w/c") is None


def test_ls_takes_cwd_since_and_limit(sqlite_url: str) -> None:
    with SessionStore(sqlite_url) as store:
        for n in range(3):
            session(store, f"s{n}", "/w", T0 + n * 1_000)
    runner = CliRunner()
    listed = runner.invoke(cli, ["--db", sqlite_url, "ls", "--json", "--cwd", "/w/", "--since",
                                 "2025-01-01T00:00:01Z", "--limit", "1", "--sort", "modified"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert [(r["id"], r["modified"], r["messageCount"]) for r in rows] == [("s2", js.iso_string(T0 + 2_000), 1)]
    bad = runner.invoke(cli, ["--db", sqlite_url, "ls", "--since", "yesterday-ish"])
    assert bad.exit_code == 2 and bad.stderr.startswith("error: --since: not a date")


def test_context_latest_resumes_the_most_recent_session(sqlite_url: str, clock: Clock) -> None:
    with SessionStore(sqlite_url) as store:
        session(store, "second", "/w/b", T0 + 1_000)
        session(store, "first", "/w/a", T0 + 5_000)
    runner = CliRunner()
    latest = runner.invoke(cli, ["--db", sqlite_url, "context", "--latest", "--json"])
    assert latest.exit_code == 0 and json.loads(latest.stdout)["sessionId"] == "first"
    of_b = runner.invoke(cli, ["--db", sqlite_url, "context", "--latest", "--cwd", "/w/b", "--json"])
    assert json.loads(of_b.stdout)["sessionId"] == "second"
    none = runner.invoke(cli, ["--db", sqlite_url, "context", "--latest", "--cwd", "/w/c"])
    assert none.exit_code == 2 and none.stderr == "error: no session yet in /w/c\n"
    both = runner.invoke(cli, ["--db", sqlite_url, "context", "first", "--latest"])
    assert both.exit_code == 2 and "not both" in both.stderr


# -- the order of the last activity of any kind (issue 14, item 5) -------------------------------


def pi_file(path: Path, sid: str, header_ms: int, *stamps: int, label_at: int | None = None) -> Path:
    """A pi file: a header at ``header_ms`` and a user message per stamp (entry and message times
    alike), then a label at ``label_at`` (an entry that is no message: pi's modified ignores it)."""
    lines = [{"type": "session", "version": 3, "id": sid, "timestamp": js.iso_string(header_ms), "cwd": "/w"}]
    parent = None
    for n, stamp in enumerate(stamps):
        lines.append({"type": "message", "id": f"{sid}-{n}", "parentId": parent, "timestamp": js.iso_string(stamp),
                      "message": user(f"message {n}", ts=stamp)})
        parent = f"{sid}-{n}"
    if label_at is not None:
        lines.append({"type": "label", "id": f"{sid}-label", "parentId": parent, "timestamp": js.iso_string(label_at),
                      "targetId": parent, "label": "done"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def ids(store: SessionStore, **kwargs: object) -> list[str]:
    return [info.id for info in store.list_sessions(**kwargs)]  # type: ignore[arg-type]


def test_a_fork_and_a_new_session_list_first_though_their_messages_are_old(store: SessionStore, clock: Clock) -> None:
    session(store, "a", "/w", T0 + 1_000)
    session(store, "b", "/w", T0 + 2_000)
    forked = store.fork("a")
    assert ids(store) == [forked, "b", "a"]
    assert ids(store, sort="modified") == ["b", forked, "a"]  # pi: the fork's messages are a's (ties: creation)
    fresh = store.create_session(cwd="/w", timestamp="2025-01-01T00:00:00.000Z")
    assert ids(store) == [fresh, forked, "b", "a"]
    assert store.session(fresh).active_ms == clock.now  # made now, whatever its header says
    assert ids(store, sort="modified")[-1] == fresh  # pi: the header's time, the oldest


def test_an_append_of_any_entry_moves_a_session_up(store: SessionStore, clock: Clock) -> None:
    for sid in ("a", "b", "c"):
        session(store, sid, "/w", T0)
    assert ids(store) == ["c", "b", "a"]
    store.append_label("a", store.leaf("a") or "", "look")  # no message: pi's modified stays
    assert ids(store) == ["a", "c", "b"]
    assert ids(store, sort="modified") == ["c", "b", "a"]  # pi's ties: creation, then id
    store.append_message("b", user("an old message", ts=T0 - 5_000))
    assert ids(store) == ["b", "a", "c"]


def test_an_entry_time_later_than_the_write_is_the_activity(store: SessionStore, clock: Clock) -> None:
    session(store, "a", "/w", T0)
    later = clock.START + 10**9
    store.append_message("a", user("from the future", ts=later))
    session(store, "b", "/w", T0)
    assert store.session("a").active_ms == later
    assert ids(store) == ["a", "b"]


def test_a_leaf_move_moves_a_session_up(store: SessionStore, clock: Clock) -> None:
    session(store, "a", "/w", T0)
    first = store.leaf("a")
    assert first is not None
    store.append_message("a", user("second"))
    session(store, "b", "/w", T0)
    assert ids(store) == ["b", "a"]
    store.branch("a", first)
    assert ids(store) == ["a", "b"]
    session(store, "c", "/w", T0)
    store.reset_leaf("b")
    assert ids(store) == ["b", "c", "a"]


def test_imported_files_list_by_their_own_latest_time_not_by_when_they_were_imported(
    store: SessionStore, clock: Clock, tmp_path: Path
) -> None:
    # imported newest first: by import time they would list oldest first
    files = [pi_file(tmp_path / "late.jsonl", "late", T0, T0 + 1_000, label_at=T0 + 90_000),
             pi_file(tmp_path / "mid.jsonl", "mid", T0, T0 + 50_000),
             pi_file(tmp_path / "early.jsonl", "early", T0 + 10_000)]
    for file in files:
        store.import_jsonl(file)
    assert ids(store) == ["late", "mid", "early"]
    assert [store.session(s).active_ms for s in ("late", "mid", "early")] == [T0 + 90_000, T0 + 50_000, T0 + 10_000]
    assert ids(store, sort="modified") == ["mid", "early", "late"]  # pi's: the last message, else the header
    store.import_entries({"type": "session", "version": 3, "id": "entries", "timestamp": js.iso_string(T0),
                          "cwd": "/w"}, [])
    assert ids(store)[-1] == "entries"  # the header's time


def test_a_synced_file_lists_by_its_own_times_and_its_appended_lines(
    store: SessionStore, clock: Clock, tmp_path: Path
) -> None:
    directory = tmp_path / "sessions" / "--w--"
    directory.mkdir(parents=True)
    pi_file(directory / "a.jsonl", "sa", T0, T0 + 5_000)
    pi_file(directory / "b.jsonl", "sb", T0, T0 + 7_000)
    store.sync(tmp_path / "sessions")
    assert ids(store) == ["sb", "sa"]
    with (directory / "a.jsonl").open("a") as fp:  # pi appends to a
        fp.write(json.dumps({"type": "label", "id": "sa-l", "parentId": "sa-0", "timestamp": js.iso_string(T0 + 9_000),
                             "targetId": "sa-0", "label": "x"}) + "\n")
    store.sync(tmp_path / "sessions")
    assert ids(store) == ["sa", "sb"]
    assert store.session("sa").active_ms == T0 + 9_000


def test_the_activity_time_is_never_before_pis_modified(store: SessionStore, tmp_path: Path) -> None:
    # a message whose own time is later than its entry's: pi's modified takes the message's
    line = {"type": "message", "id": "m", "parentId": None, "timestamp": js.iso_string(T0),
            "message": user("hi", ts=T0 + 60_000)}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": js.iso_string(T0),
                                "cwd": "/w"}) + "\n" + json.dumps(line) + "\n")
    store.import_jsonl(path)
    info = store.session("s")
    assert info.modified_ms == info.active_ms == T0 + 60_000


def test_ls_lists_by_activity_shows_it_and_sorts_as_pi_with_sort_modified(sqlite_url: str, clock: Clock) -> None:
    with SessionStore(sqlite_url) as store:
        session(store, "old", "/w", T0 + 9_000)
        session(store, "new", "/w", T0 + 1_000)
    runner = CliRunner()
    listed = runner.invoke(cli, ["--db", sqlite_url, "ls", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert [r["id"] for r in rows] == ["new", "old"]
    assert rows[0]["active"] == js.iso_string(clock.now) and rows[0]["modified"] == js.iso_string(T0 + 1_000)
    pi_order = runner.invoke(cli, ["--db", sqlite_url, "ls", "--json", "--sort", "modified"])
    assert [r["id"] for r in json.loads(pi_order.stdout)] == ["old", "new"]
    text = runner.invoke(cli, ["--db", sqlite_url, "ls"]).stdout.splitlines()
    assert text[0].split() == ["ID", "MODIFIED", "ACTIVE", "MSGS", "CWD", "NAME", "OR", "FIRST", "MESSAGE"]
    assert text[1].startswith("new ") and "2031-01-01 00:00" in text[1]
    since = runner.invoke(cli, ["--db", sqlite_url, "ls", "--json", "--since", "2030-01-01"])
    assert [r["id"] for r in json.loads(since.stdout)] == ["new", "old"]  # by the activity
    assert runner.invoke(cli, ["--db", sqlite_url, "ls", "--sort", "name"]).exit_code == 2


def test_an_unknown_order_is_refused(store: SessionStore) -> None:
    with pytest.raises(InvalidInputError, match="sort must be one of"):
        store.list_sessions(sort="name")  # type: ignore[arg-type]


def test_ls_shows_what_pis_session_picker_shows_cut_to_the_terminal(sqlite_url: str) -> None:
    """pi 1.6's picker (session-selector): name, else first message (controls as spaces, trimmed),
    pi's message count, the modified time; the line cut to the terminal's width with an ellipsis."""
    with SessionStore(sqlite_url) as store:
        for file in (PI_FILES["before-compaction"], PI_FILES["large-session"]):
            store.import_jsonl(file)
        infos = {i.id: i for i in store.list_sessions()}
        new = store.create_session(cwd="/w", session_id="fresh")
        store.append_message(new, user("  line one\nline two\x1b[31m\u200f  "))
        store.create_session(cwd="/w", session_id="empty")
    runner = CliRunner()
    wide = runner.invoke(cli, ["--db", sqlite_url, "ls"], env={"COLUMNS": "1000"}).stdout.splitlines()
    assert wide[0].split()[:5] == ["ID", "MODIFIED", "ACTIVE", "MSGS", "CWD"]
    rows = {line.split()[0]: line for line in wide[1:]}
    for sid, info in infos.items():
        assert info.first_message and info.name is None
        cells = rows[sid].split("  ")
        assert str(info.message_count) in [c.strip() for c in cells], rows[sid]
        assert rows[sid].endswith("  " + picker_text(info)), rows[sid]
    assert rows["fresh"].endswith("  line one line two [31m\\u200f")
    assert rows["empty"].endswith("  (no messages)")
    narrow = runner.invoke(cli, ["--db", sqlite_url, "ls"], env={"COLUMNS": "100"}).stdout.splitlines()
    assert all(len(line) <= 100 for line in narrow), narrow
    assert any(line.endswith("…") for line in narrow[1:])
    tiny = runner.invoke(cli, ["--db", sqlite_url, "ls"], env={"COLUMNS": "20"}).stdout.splitlines()
    assert all(len(line) <= 20 for line in tiny) and tiny[1].endswith("…")
    with SessionStore(sqlite_url) as store:
        store.append_session_info("fresh", "named \x07session")
    named = runner.invoke(cli, ["--db", sqlite_url, "ls"], env={"COLUMNS": "1000"}).stdout
    assert "  named  session\n" in named  # the name wins over the first message, as in pi


@pytest.mark.parametrize("columns", [80, 100, 130])
def test_ls_at_ordinary_widths_cuts_the_paths_from_the_left_so_the_first_message_shows(
    sqlite_url: str, tmp_path: Path, columns: int,
) -> None:
    """A long cwd and a synced file's path are cut from the left (their ends stay), the ids shortened
    to unique prefixes and ACTIVE left out when room is short, before the name or first message is cut."""
    deep = tmp_path / "sessions" / ("--" + "a-very-long-project-folder-name" * 3 + "--")
    deep.mkdir(parents=True)
    cwd = "/home/someone/projects/" + "deeply/nested/" * 6 + "repository"
    lines = [{"type": "session", "version": 3, "id": "0194c2a1-0000-7000-8000-000000000001",
              "timestamp": "2025-01-01T00:00:00.000Z", "cwd": cwd},
             {"type": "message", "id": "m1", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
              "message": user("please refactor the frobnicator module so that it handles widgets", ts=T0)}]
    (deep / "2025-01-01T00-00-00-000Z_0194c2a1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    with SessionStore(sqlite_url) as store:
        store.sync(tmp_path / "sessions")
        store.create_session(cwd=cwd, session_id="0194c2b7-0000-7000-8000-000000000002")
    out = CliRunner().invoke(cli, ["--db", sqlite_url, "ls"], env={"COLUMNS": str(columns)}).stdout.splitlines()
    assert "NAME OR FIRST MESSAGE" in out[0] and "SOURCE" in out[0], out
    assert all(display_width(line) <= columns for line in out), out
    synced = next(line for line in out if "please" in line)
    assert "please refactor" in synced and "epository" in synced and ".jsonl" in synced, out
    assert "(no messages)" in out[-1] or "(no messages)" in out[-2], out
    assert "0194c2a1-0000-7000-8000-000000000001".startswith(synced.split()[0]) and len(synced.split()[0]) >= 8


def test_a_narrow_ls_of_the_only_session_shortens_its_id_to_eight_characters(sqlite_url: str) -> None:
    with SessionStore(sqlite_url) as store:
        session(store, "0194c2a1-0000-7000-8000-00000000000a", "/w/only", T0)
    done = CliRunner().invoke(cli, ["--db", sqlite_url, "ls"], env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.output  # (an internal error before: max() of one number)
    assert done.stdout.splitlines()[1].split()[0] == "0194c2a1"


def test_a_narrow_ls_shortens_ids_to_prefixes_unique_in_the_store_not_only_in_the_listing(sqlite_url: str) -> None:
    with SessionStore(sqlite_url) as store:
        session(store, "0194c2a1-0000-7000-8000-00000000000a", "/w/shown", T0)
        session(store, "0194c2a1-0000-7000-8000-00000000000b", "/w/other", T0)
        session(store, "0194c2ff-0000-7000-8000-00000000000c", "/w/third", T0)
    runner = CliRunner()
    listed = runner.invoke(cli, ["--db", sqlite_url, "ls", "--cwd", "/w/shown"], env={"COLUMNS": "80"}).stdout
    shown = listed.splitlines()[1].split()[0]
    assert shown == "0194c2a1-0000-7000-8000-00000000000a", listed  # (b shares all but the last character)
    everything = runner.invoke(cli, ["--db", sqlite_url, "ls"], env={"COLUMNS": "80"}).stdout.splitlines()
    assert {line.split()[0] for line in everything[1:]} == {
        "0194c2a1-0000-7000-8000-00000000000a", "0194c2a1-0000-7000-8000-00000000000b", "0194c2ff"}
    resolved = runner.invoke(cli, ["--db", sqlite_url, "tree", "0194c2ff"])
    assert resolved.exit_code == 0, resolved.output

"""The session list equals pi 1.6's ``SessionManager.listAll``: for each directory of session files
pi wrote (a generated session and its forks) and for the repository's fixture directories, the store
that imported those files lists the same sessions with pi's facts (name, message count, first
message, created, modified) in pi's order (``sort="modified"``; the default order, by the last
activity of any kind, is not pi's: ``tests/test_listing.py``). pi runs live (``pi_oracle.mjs list``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessionstore.api import SessionStore
from sessionstore.models.rules import resolve_path
from sessionstore.store.records import SessionInfo
from tests.differential.conftest import FIXTURE_DIRS, Generated
from tests.differential.oracle import Oracle, list_dirs
from tests.paths import FIXTURES

Json = dict[str, Any]

NO_MESSAGES = "(no messages)"
"""What pi shows as the first message of a session without one; the store gives ``None``."""


def facts(info: SessionInfo) -> Json:
    return {"id": info.id, "cwd": info.cwd, "name": info.name, "messageCount": info.message_count,
            "firstMessage": info.first_message if info.first_message is not None else NO_MESSAGES,
            "modified": info.modified_ms}


def pi_facts(row: Json) -> Json:
    return {key: row[key] for key in ("id", "cwd", "name", "messageCount", "firstMessage", "modified")}


def compare_dir(store: SessionStore, pi_rows: list[Json], files: list[Path]) -> list[str]:
    """Import ``files`` and compare the store's list with pi's; returns the differences."""
    for file in files:
        store.import_jsonl(file, replace=True)
    listed = {info.id: info for info in store.list_sessions(sort="modified")}
    problems: list[str] = []
    for row in pi_rows:
        ours = listed.get(row["id"])
        if ours is None:
            problems.append(f"{row['path']}: pi lists {row['id']!r}, the store does not")
            continue
        mine, theirs = facts(ours), pi_facts(row)
        if ours.modified_ms is None:  # pi then took the file's mtime, which the store does not know
            mine.pop("modified")
            theirs.pop("modified")
        if mine != theirs:
            problems.append(f"{row['path']}: pi {theirs}, ours {mine}")
    pi_order = [row["id"] for row in pi_rows if row["modified"] is not None]
    our_order = [info.id for info in store.list_sessions(sort="modified") if info.id in set(pi_order)]
    distinct = len({row["modified"] for row in pi_rows}) == len(pi_rows)
    if distinct and our_order != pi_order:
        problems.append(f"order: pi {pi_order}, ours {our_order}")
    return problems


def test_the_store_lists_pis_generated_sessions_as_pi_lists_them(
    oracle: Oracle, generated: Generated, store: SessionStore
) -> None:
    dirs = [generated.root / group["name"] for group in generated.manifest["groups"]]
    listings = list_dirs(oracle, dirs)
    problems: list[str] = []
    listed = 0
    for directory in dirs:
        rows = listings[directory]
        listed += len(rows)
        problems += compare_dir(store, rows, sorted(directory.glob("*.jsonl")))
    assert listed >= 50
    assert problems == [], "\n".join(problems[:20])


@pytest.mark.parametrize("name", FIXTURE_DIRS)
def test_the_store_lists_the_fixture_sessions_as_pi_lists_them(
    oracle: Oracle, name: str, store: SessionStore
) -> None:
    directory = FIXTURES / name
    rows = list_dirs(oracle, [directory])[directory]
    files = sorted(directory.glob("*.jsonl"))
    assert rows
    # pi drops a file from its list where reading it throws (a message entry whose message is null, a
    # content that is neither text nor a list, a non-string name); the store lists every session, and
    # only the sessions pi lists are compared.
    assert compare_dir(store, rows, files) == []


PATHS = ["", ".", "..", "repo", "repo/", "a//b/./c/..", "/", "/w/repo", "/w/repo/", "//w/repo", "/w/../x",
         "~", "~/", "~/repo", "~repo", "file:///w/my%20repo", "file:///w/r%C3%A9po/", "./~/x", " spaced "]


def test_directories_resolve_as_pis_resolve_path_resolves_them(oracle: Oracle) -> None:
    base = "/work/base/dir"
    (pi,) = [json.loads(line) for line in oracle.run("resolve", base, *PATHS).splitlines()]
    assert [resolve_path(path, base) for path in PATHS] == pi

"""The retention commands as a user runs them (issue 26): a held session is listed as held, `ls` marks an
archived one (text and --json), a read restores it, and an erasure is reported with its audit record."""

from __future__ import annotations

import json
from typing import Any

from tests.builders import user
from tests.test_cli import run  # noqa: F401  (the fixture)


def test_hold_archive_list_restore_and_erase_from_the_command_line(run: Any) -> None:  # noqa: F811
    sid = run("new", "--cwd", "/w").stdout.strip()
    run("append", sid, input=json.dumps(user("keep me")))
    assert run("retention", "set", "--archive-after", "30").exit_code == 0
    assert run("hold", sid).exit_code == 0
    shown = json.loads(run("retention", "show", "--json").stdout)
    assert shown["policy"]["archiveAfterDays"] == 30 and [h["sessionId"] for h in shown["held"]] == [sid]
    assert f"held {sid}" in run("retention", "show").stdout
    assert json.loads(run("unhold", "--json", sid).stdout) == {"sessionId": sid, "held": False, "changed": True}

    archived = run("archive", "--json", sid)
    assert archived.exit_code == 0, archived.stderr
    assert json.loads(archived.stdout)["entries"] == 1
    assert "[archived] keep me" in run("ls").stdout
    assert json.loads(run("ls", "--json").stdout)[0]["archived"] is True
    assert "keep me" in run("context", "--json", sid).stdout  # (restored first)
    assert "archived" not in json.loads(run("ls", "--json").stdout)[0]

    refused = run("erase", sid)  # (no terminal to ask on)
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    (record,) = json.loads(run("erase", "--yes", "--json", sid).stdout)
    assert record["sessionId"] == sid and record["entries"] == 1 and "keep me" not in json.dumps(record)
    assert json.loads(run("ls", "--json").stdout) == []

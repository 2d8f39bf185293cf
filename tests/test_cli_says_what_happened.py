"""Commands that succeed say what they did (issue 22): an import that found nothing to import, a file
left by --skip-existing, a message appended with a role no one declared (pi's roles, or one an
application registered: ``models.roles``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.models.roles import BUILTIN_ROLES, known_roles
from tests.paths import PI_FILES


@pytest.fixture
def run(db_url: str):  # type: ignore[no-untyped-def]
    runner = CliRunner()

    def invoke(*args: str, input: str | bytes | None = None) -> Result:
        return runner.invoke(cli, ["--db", db_url, *args], input=input, catch_exceptions=False)

    return invoke


def test_import_of_a_folder_without_session_files_says_so(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "empty").mkdir()
    done = run("import", str(tmp_path / "empty"))
    assert done.exit_code == 0 and done.stdout == ""
    assert done.stderr == f"warning: {tmp_path / 'empty'} holds no *.jsonl file: nothing imported from it\n"
    assert json.loads(run("import", str(tmp_path / "empty"), "--json").stdout) == []


def test_import_skip_existing_says_which_file_it_left(run) -> None:  # type: ignore[no-untyped-def]
    path = str(PI_FILES["before-compaction"])
    sid = run("import", path).stdout.strip()
    done = run("import", path, "--skip-existing")
    assert done.exit_code == 0 and done.stdout == ""
    assert done.stderr == f"skipped {path}: session {sid} is in the database already (--skip-existing)\n"
    outcome = json.loads(run("import", path, "--skip-existing", "--json").stdout)
    assert outcome == [{"file": path, "status": "exists", "sessionId": sid}]


def test_append_of_a_role_no_one_declared_warns_and_stores_it(run, db_url: str) -> None:  # type: ignore[no-untyped-def]
    sid = json.loads(run("new", "--json").stdout)["sessionId"]
    done = run("append", sid, input='{"role": "bogus", "content": "hi"}')
    assert done.exit_code == 0
    (warning,) = done.stderr.splitlines()
    assert warning.startswith('warning: role "bogus" is not a known role (assistant, bashExecution,')
    assert warning.endswith("stored as given")
    assert all(role in warning for role in known_roles())
    as_json = json.loads(run("append", sid, "--json", input='{"role": "bogus", "content": "again"}').stdout)
    assert as_json["warnings"] == [warning.removeprefix("warning: ")]
    with SessionStore(db_url) as store:
        assert [e["message"]["role"] for e in store.entries(sid)] == ["bogus", "bogus"]
    for role in sorted(BUILTIN_ROLES - {"system"}):
        body = {"role": role, "content": "x"}
        quiet = run("append", sid, input=json.dumps(body))
        assert "warning" not in quiet.stderr, (role, quiet.stderr)

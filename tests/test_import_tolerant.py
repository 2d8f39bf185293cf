"""Files pi 1.6 loads are stored whole, read as pi reads them, and every command can read them back.

Every ``fixtures/tolerant/<CODE>-<slug>.jsonl`` is picked up by glob. ``CODE`` is the diagnostic code
the file must produce (on import or in the context at some leaf); ``OK`` files produce none of the
entry or context-edit codes. The contexts themselves are checked against pi's own code by the
differential suite (``tests/differential``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.validate import ENTRY_CODES
from tests.paths import FIXTURES

TOLERANT_FILES = sorted((FIXTURES / "tolerant").glob("*.jsonl"))
by_name = pytest.mark.parametrize("path", TOLERANT_FILES, ids=[p.name for p in TOLERANT_FILES])
TOLERANT_CODES = ENTRY_CODES | {
    "CONTEXT_EDIT_WITHOUT_REPLACEMENT",
    "CONTEXT_EDIT_TARGET_NOT_IN_CONTEXT",
    "CONTEXT_EDIT_NO_EFFECT",
    "MESSAGE_ENTRY_WITHOUT_MESSAGE",
}


def every_leaf_context(store: SessionStore, session_id: str) -> list[dict[str, Any]]:
    return [store.context(session_id, leaf_id=entry["id"]).to_json() for entry in store.entries(session_id)]


def exported(store: SessionStore, session_id: str, tmp_path: Path) -> bytes:
    out = tmp_path / "out.jsonl"
    with out.open("wb") as fp:
        store.export_jsonl(session_id, fp)
    return out.read_bytes()


def test_the_tolerant_fixture_set_is_there() -> None:
    assert len(TOLERANT_FILES) >= 15


@by_name
def test_a_file_pi_loads_is_imported_whole_and_reports_what_it_is_named_after(store: SessionStore, path: Path) -> None:
    code = path.name.split("-", 1)[0]
    result = store.import_jsonl(path)
    assert result.skipped == ()
    entry_lines = [line for line in path.read_bytes().splitlines()[1:] if line.strip()]
    assert result.entries == len(entry_lines)
    codes = {d.code for d in result.diagnostics}
    for context in every_leaf_context(store, result.session_id):
        codes |= {d["code"] for d in context["diagnostics"]}
    if code == "OK":
        assert not codes & TOLERANT_CODES
    else:
        assert code in codes
    assert all(d.entry_id or d.message.startswith("line 1:") for d in result.diagnostics)  # else: the header


@by_name
def test_a_tolerant_file_exports_line_for_line_as_it_was_imported(
    store: SessionStore, path: Path, tmp_path: Path
) -> None:
    session_id = store.import_jsonl(path).session_id
    original = path.read_bytes().replace(b"\r\n", b"\n").splitlines()
    out = exported(store, session_id, tmp_path).splitlines()
    assert out[1:] == original[1:]
    header = json.loads(original[0])
    assert json.loads(out[0]) == {**header, "version": max(header.get("version", 1), 3)}


@by_name
def test_both_backends_give_the_same_answers_for_a_tolerant_file(
    store: SessionStore, path: Path, tmp_path: Path
) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'reference.db'}") as reference:
        expected_id = reference.import_jsonl(path).session_id
        expected = (every_leaf_context(reference, expected_id), exported(reference, expected_id, tmp_path),
                    [i.to_json() for i in reference.list_sessions()], reference.labels(expected_id))
    session_id = store.import_jsonl(path).session_id
    assert session_id == expected_id
    got = (every_leaf_context(store, session_id), exported(store, session_id, tmp_path),
           [i.to_json() for i in store.list_sessions()], store.labels(session_id))
    assert got == expected


@by_name
def test_every_command_reads_a_tolerant_file_after_its_import(db_url: str, path: Path, tmp_path: Path) -> None:
    runner = CliRunner()

    def run(*args: str) -> str:
        result = runner.invoke(cli, ["--db", db_url, *args], catch_exceptions=False)
        assert result.exit_code in (0, 1), (args, result.stderr)
        return result.stdout

    session_id = json.loads(run("import", "--json", str(path)))[0]["sessionId"]
    prefix = session_id[:6]
    for args in (["context", "--json"], ["context"], ["context", "--provider-safe", "--json"], ["tree", "--json"],
                 ["tree"], ["validate"], ["validate", "--json"], ["export"]):
        run(*args, prefix)
    run("ls")
    run("ls", "--json")
    context = json.loads(run("context", "--json", prefix))
    assert context["sessionId"] == session_id
    run("show", prefix, context["leafId"])

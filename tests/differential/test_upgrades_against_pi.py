"""A v1/v2 file exports as pi 1.6 upgrades it: pi's SessionManager opens the file, migrates it
(``migrateToCurrentVersion``) and rewrites it with ``JSON.stringify`` (``_rewriteFile``); the store's
export of the imported file is that rewrite, byte for byte (the ids pi draws counted, as the store's
deterministic ones are). Checked on seeded mutants (``tests/session_mutants.py``: numbers in every
spelling, escapes, repeated and array-index keys, shuffled keys, unknown fields, messy lines) and on
the repository's legacy files, whose ``*.v3.jsonl`` must stay pi's rewrite of them."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from sessionstore.api import SessionStore
from tests.differential.oracle import Oracle, upgrade_files
from tests.paths import FIXTURES
from tests.session_mutants import mutant

MUTANTS_PER_VERSION = 150
LEGACY = sorted(p for p in (FIXTURES / "legacy").glob("*.jsonl") if not p.name.endswith(".v3.jsonl"))


@pytest.fixture(scope="module")
def pi_rewrites(oracle: Oracle, tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Any]:
    """Path of each mutant (v1 and v2) and legacy file -> what pi left in its copy of it."""
    root = tmp_path_factory.mktemp("upgrade-mutants")
    files = []
    for version in (1, 2):
        for seed in range(MUTANTS_PER_VERSION):
            path = root / f"v{version}-{seed:03d}.jsonl"
            path.write_bytes(mutant(seed, version))
            files.append(path)
    return upgrade_files(oracle, files + LEGACY)


def exported(store: SessionStore, session_id: str) -> bytes:
    out = io.BytesIO()
    store.export_jsonl(session_id, out)
    return out.getvalue()


def first_difference(ours: bytes, pis: bytes) -> str:
    for number, (a, b) in enumerate(zip(ours.split(b"\n"), pis.split(b"\n"), strict=False), 1):
        if a != b:
            return f"line {number}:\n    ours {a[:300]!r}\n    pi's {b[:300]!r}"
    lines = ours.count(b"\n"), pis.count(b"\n")
    return f"{lines[0]} lines, pi's {lines[1]}"


def test_pi_opens_and_rewrites_every_mutant(pi_rewrites: dict[Path, Any]) -> None:
    failed = {path.name: pi["error"] for path, pi in pi_rewrites.items() if "error" in pi}
    assert failed == {}
    unchanged = [path.name for path, pi in pi_rewrites.items() if pi["text"].encode() == path.read_bytes()]
    assert unchanged == []  # every file is migrated (its version line changes at least)


def test_an_upgraded_file_exports_byte_for_byte_as_pi_rewrites_it(
    store: SessionStore, pi_rewrites: dict[Path, Any]
) -> None:
    mismatches = []
    for path, pi in pi_rewrites.items():
        sid = store.import_jsonl(path).session_id
        ours = exported(store, sid)
        if ours != pi["text"].encode():
            mismatches.append(f"{path.name} {first_difference(ours, pi['text'].encode())}")
    assert not mismatches, f"{len(mismatches)} of {len(pi_rewrites)} differ from pi's rewrite:\n" + "\n".join(
        mismatches[:8])


@pytest.mark.parametrize("path", LEGACY, ids=[p.name for p in LEGACY])
def test_the_upgraded_form_of_each_legacy_fixture_is_pis_rewrite_of_it(
    pi_rewrites: dict[Path, Any], path: Path
) -> None:
    assert path.with_suffix(".v3.jsonl").read_bytes() == pi_rewrites[path]["text"].encode()


def test_a_lenient_import_of_a_v1_file_numbers_its_entries_as_pi_does_past_falsy_lines(
    store: SessionStore, oracle: Oracle, tmp_path: Path
) -> None:
    """pi's loader drops a line that parses as null, false, 0 or "", so they take no v1 position: the
    compaction's firstKeptEntryIndex 2 names the second message, not the line after the first."""
    path = tmp_path / "falsy-v1.jsonl"
    path.write_text("\n".join([
        '{"type":"session","id":"falsy-v1","timestamp":"2024-11-01T08:00:00.000Z","cwd":"/w"}',
        '{"type":"message","timestamp":"2024-11-01T08:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}',
        "null", "0", '""', "false", "-0",
        '{"type":"message","timestamp":"2024-11-01T08:00:02.000Z","message":{"role":"user","content":"b","timestamp":2}}',
        '{"type":"compaction","timestamp":"2024-11-01T08:00:03.000Z","summary":"s","firstKeptEntryIndex":2,'
        '"tokensBefore":5}',
    ]) + "\n", encoding="utf-8")
    (pi,) = upgrade_files(oracle, [path]).values()
    result = store.import_jsonl(path, lenient=True)
    assert [skipped.line for skipped in result.skipped] == [3, 4, 5, 6, 7]
    assert exported(store, result.session_id) == pi["text"].encode()
    assert store.entries(result.session_id)[-1]["firstKeptEntryId"] == "00000002"

"""Bad session files are refused whole, with ``file:line: reason``; lenient mode skips and reports.

Every ``fixtures/invalid/<CODE>-<slug>.jsonl`` is picked up by glob. ``CODE`` is the error code the file
must produce; ``EXPECTED`` says, per file, the line and a word of the reason that strict reading must
report, and what lenient reading keeps (``None``: a file without a valid header is refused even then).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.errors import JsonlError
from sessionstore.store.engine import make_engine
from sessionstore.store.schema import entries, sessions
from sessionstore.wire import SessionFileReader

INVALID_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "invalid"
INVALID_FILES = sorted(INVALID_DIR.glob("*.jsonl"))
NO_LINE = {"JSONL_INVALID-empty-file.jsonl", "JSONL_INVALID-whitespace-only.jsonl"}


@dataclass(frozen=True)
class Lenient:
    """What a lenient import of the file keeps: the skipped lines and the ids of the imported entries."""

    skipped: tuple[int, ...]
    kept: tuple[str, ...]


@dataclass(frozen=True)
class Expected:
    line: int | None
    reason: str
    lenient: Lenient | None


EXPECTED: dict[str, Expected] = {
    "JSONL_INVALID-truncated-json-line.jsonl": Expected(4, "invalid JSON", Lenient((4,), ("u1", "a1"))),
    "JSONL_INVALID-first-line-not-header.jsonl": Expected(1, "session header", None),
    "JSONL_INVALID-duplicate-entry-id.jsonl": Expected(
        4, "duplicate entry id 'u1'", Lenient((4,), ("u1", "a1", "u2"))
    ),
    "JSONL_INVALID-parent-cycle.jsonl": Expected(4, "cycle", Lenient((4,), ("u1", "c1"))),
    "JSONL_INVALID-parent-after-child.jsonl": Expected(4, "parents must precede", Lenient((4,), ("u1", "u3"))),
    "JSONL_INVALID-self-parent.jsonl": Expected(3, "its own parent", Lenient((3,), ("u1", "a2"))),
    "JSONL_INVALID-line-not-an-object.jsonl": Expected(
        3, "expected a JSON object, got array", Lenient((3, 4), ("u1", "a1"))
    ),
    "JSONL_INVALID-empty-file.jsonl": Expected(None, "empty", None),
    "JSONL_INVALID-whitespace-only.jsonl": Expected(None, "no session header", None),
    "JSONL_INVALID-header-without-id.jsonl": Expected(1, "header: no id", None),
    "JSONL_INVALID-header-not-json.jsonl": Expected(1, "invalid JSON", None),
    "JSONL_INVALID-bom-before-header.jsonl": Expected(1, "byte order mark", None),
    "JSONL_INVALID-second-header.jsonl": Expected(3, "second session header", Lenient((3,), ("u1", "a1"))),
    "JSONL_INVALID-invalid-utf8.jsonl": Expected(3, "invalid UTF-8", Lenient((3,), ("u1", "a1"))),
    "JSONL_INVALID-lone-surrogate-as-raw-bytes.jsonl": Expected(3, "invalid UTF-8", Lenient((3,), ("u1",))),
    "JSONL_INVALID-bom-at-start-of-entry-line.jsonl": Expected(3, "byte order mark", Lenient((3,), ("u1",))),
    "JSONL_INVALID-nan-literal.jsonl": Expected(3, "NaN is not JSON", Lenient((3,), ("u1",))),
    "JSONL_INVALID-infinity-literal.jsonl": Expected(3, "Infinity is not JSON", Lenient((3,), ("u1",))),
    "JSONL_INVALID-nested-1000-levels.jsonl": Expected(3, "nested deeper than 200", Lenient((3,), ("u1",))),
    "JSONL_INVALID-nested-1024-levels.jsonl": Expected(3, "nested deeper than 200", Lenient((3,), ("u1",))),
    "JSONL_INVALID-entry-without-id.jsonl": Expected(3, "needs a non-empty string id", Lenient((3,), ("u1",))),
    "JSONL_INVALID-entry-id-is-a-number.jsonl": Expected(3, "needs a non-empty string id", Lenient((3,), ("u1",))),
    "JSONL_INVALID-bad-line-after-blank-lines.jsonl": Expected(
        6, "expected a JSON object, got boolean", Lenient((6,), ("u1",))
    ),
}

by_name = pytest.mark.parametrize("path", INVALID_FILES, ids=[p.name for p in INVALID_FILES])
with_header = [p for p in INVALID_FILES if EXPECTED.get(p.name, Expected(0, "", None)).lenient is not None]
without_header = [p for p in INVALID_FILES if p not in with_header]

HEADER = (
    '{"type":"session","version":3,"id":"%s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/work/demo"}\n'
)
USER = (
    '{"type":"message","id":"m%d","parentId":%s,"timestamp":"2025-01-01T00:00:01.000Z",'
    '"message":{"role":"user","content":"line %d","timestamp":1735689601000}}\n'
)


def user_line(n: int, parent: str | None) -> str:
    return USER % (n, "null" if parent is None else f'"{parent}"', n)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SessionStore]:
    store = SessionStore(f"sqlite:///{tmp_path / 's.db'}")
    try:
        yield store
    finally:
        store.close()


def rows_in(store: SessionStore) -> tuple[int, int]:
    """(sessions, entries) rows in the store's database, read past the API (on an engine of its own)."""
    engine = make_engine(store.url)
    try:
        with engine.connect() as conn:
            return (
                conn.execute(select(func.count()).select_from(sessions)).scalar_one(),
                conn.execute(select(func.count()).select_from(entries)).scalar_one(),
            )
    finally:
        engine.dispose()


def expected(path: Path) -> Expected:
    assert path.name in EXPECTED, f"add {path.name} to EXPECTED: which line fails, why, what lenient keeps"
    return EXPECTED[path.name]


HANG_GUARD_S = 120
"""How long a reader may take before a test calls it a hang (a loop, not a speed: generous, so that a
loaded machine does not fail it)."""


def finishes_within(seconds: float, work: Callable[[], Any]) -> Any:
    """Run ``work`` in a thread; fail, instead of hanging the suite, if it still runs after ``seconds``."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds}s: a loop?"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


# -- the fixture set ---------------------------------------------------------------------------
def test_the_invalid_fixture_set_covers_every_documented_bad_case() -> None:
    assert {p.name for p in INVALID_FILES} == set(EXPECTED)


@by_name
def test_an_invalid_file_is_named_after_the_error_code_it_produces(path: Path) -> None:
    code = path.name.split("-", 1)[0]
    with pytest.raises(JsonlError) as caught:
        list(SessionFileReader(path).entries())
    assert caught.value.code == code


def test_the_empty_file_fixture_has_zero_bytes() -> None:
    assert (INVALID_DIR / "JSONL_INVALID-empty-file.jsonl").stat().st_size == 0


# -- strict: refused, naming file, line and problem --------------------------------------------
@by_name
def test_an_invalid_file_is_refused_naming_the_file_the_line_and_the_problem(path: Path) -> None:
    want = expected(path)
    with pytest.raises(JsonlError) as caught:
        list(SessionFileReader(path).entries())
    error = caught.value
    assert Path(error.path).name == path.name
    assert error.line == want.line
    assert want.reason.lower() in error.reason.lower()
    assert path.name in str(error)
    if path.name in NO_LINE:
        assert str(error) == f"{error.path}: {error.reason}"
    else:
        assert str(error) == f"{error.path}:{want.line}: {error.reason}"


@by_name
def test_importing_an_invalid_file_leaves_no_session_and_no_entries(db: SessionStore, path: Path) -> None:
    with pytest.raises(JsonlError) as caught:
        db.import_jsonl(path)
    assert caught.value.line == expected(path).line
    assert db.list_sessions() == []
    assert rows_in(db) == (0, 0)


@by_name
def test_the_cli_prints_one_error_line_with_file_and_line_and_exits_2(tmp_path: Path, path: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", f"sqlite:///{tmp_path / 's.db'}", "import", str(path)])
    want = expected(path)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    where = path.name if want.line is None else f"{path.name}:{want.line}:"
    assert where in lines[0]
    assert want.reason.lower() in lines[0].lower()


# -- lenient: skip, report, import the rest ----------------------------------------------------
@pytest.mark.parametrize("path", with_header, ids=[p.name for p in with_header])
def test_lenient_import_skips_the_bad_lines_and_entries_below_them_and_keeps_the_rest(
    db: SessionStore, path: Path
) -> None:
    want = expected(path).lenient
    assert want is not None
    result = db.import_jsonl(path, lenient=True)
    assert tuple(s.line for s in result.skipped) == want.skipped
    assert all(s.reason for s in result.skipped)
    assert [e["id"] for e in db.entries(result.session_id)] == list(want.kept)
    assert result.entries == len(want.kept)
    assert result.leaf_id == want.kept[-1]


@pytest.mark.parametrize("path", with_header, ids=[p.name for p in with_header])
def test_lenient_mode_first_skips_the_line_strict_mode_refuses_for_the_same_reason(path: Path) -> None:
    with pytest.raises(JsonlError) as caught:
        list(SessionFileReader(path).entries())
    reader = SessionFileReader(path, lenient=True)
    list(reader.entries())
    first = reader.skipped[0]
    assert first.line == caught.value.line
    assert caught.value.reason.startswith(first.reason)  # strict mode may explain further (a cycle)


@pytest.mark.parametrize("path", without_header, ids=[p.name for p in without_header])
def test_lenient_import_still_refuses_a_file_without_a_valid_header(db: SessionStore, path: Path) -> None:
    with pytest.raises(JsonlError) as caught:
        db.import_jsonl(path, lenient=True)
    assert caught.value.line == expected(path).line
    assert rows_in(db) == (0, 0)


@pytest.mark.parametrize("path", with_header, ids=[p.name for p in with_header])
def test_the_cli_in_lenient_mode_reports_each_skipped_line_and_succeeds(tmp_path: Path, path: Path) -> None:
    want = expected(path).lenient
    assert want is not None
    result = CliRunner().invoke(
        cli, ["--db", f"sqlite:///{tmp_path / 's.db'}", "import", "--lenient", str(path)]
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == f"bad-{path.stem.split('-', 1)[1]}"
    reported = result.stderr.splitlines()
    assert len(reported) == len(want.skipped)
    for line, message in zip(want.skipped, reported, strict=True):
        assert message.startswith(f"skipped {path}:{line}: ")


# -- atomicity, scale, cycles ------------------------------------------------------------------
@pytest.mark.parametrize("bad_line", [501, 4_501], ids=["line-501", "line-4501-after-two-insert-batches"])
def test_a_bad_line_after_many_good_ones_leaves_nothing_behind(
    db: SessionStore, tmp_path: Path, bad_line: int
) -> None:
    path = tmp_path / "late-failure.jsonl"
    lines = [HEADER % "late-failure"]
    lines += [user_line(n, None if n == 2 else f"m{n - 1}") for n in range(2, bad_line)]
    lines.append('["late", "not an object"]\n')
    path.write_text("".join(lines))
    with pytest.raises(JsonlError) as caught:
        db.import_jsonl(path)
    assert caught.value.line == bad_line
    assert db.list_sessions() == []
    assert rows_in(db) == (0, 0)


def test_the_same_file_imports_once_the_bad_line_is_gone(db: SessionStore, tmp_path: Path) -> None:
    path = tmp_path / "fixed.jsonl"
    good = [HEADER % "fixed"] + [user_line(n, None if n == 2 else f"m{n - 1}") for n in range(2, 501)]
    path.write_text("".join([*good, "[]\n"]))
    with pytest.raises(JsonlError):
        db.import_jsonl(path)
    path.write_text("".join(good))
    assert db.import_jsonl(path).entries == 499
    assert rows_in(db) == (1, 499)


def test_lenient_import_of_200000_bad_lines_finishes_and_reports_them_all(
    db: SessionStore, tmp_path: Path
) -> None:
    path = tmp_path / "mostly-bad.jsonl"
    bad = [
        '{"type":"message","id":"x\n',  # truncated JSON
        "[1,2]\n",  # not an object
        '{"type":"message","id":"m2","parentId":null,"timestamp":"t%d"}\n',  # a duplicate id
        # its own parent
        '{"type":"message","id":"f%d","parentId":"f%d","timestamp":"t","message":{"role":"user"}}\n',
    ]
    with path.open("w") as fp:
        fp.write(HEADER % "mostly-bad")
        fp.write(user_line(2, None))
        for n in range(200_000):
            kind = n % 4
            fp.write(bad[kind] if kind < 2 else bad[kind] % ((n,) if kind == 2 else (n, n)))
        fp.write(user_line(200_003, "m2"))
    result = finishes_within(HANG_GUARD_S, lambda: db.import_jsonl(path, lenient=True))
    assert len(result.skipped) == 200_000
    assert result.skipped[0].line == 3
    assert result.skipped[-1].line == 200_002
    assert [e["id"] for e in db.entries(result.session_id)] == ["m2", "m200003"]


def test_a_long_parent_cycle_is_refused_without_looping(tmp_path: Path) -> None:
    path = tmp_path / "ring.jsonl"
    size = 2_000
    ring = [user_line(n, f"m{n + 1 if n < size else 1}") for n in range(1, size + 1)]
    path.write_text(HEADER % "ring" + "".join(ring))
    with pytest.raises(JsonlError) as caught:
        finishes_within(HANG_GUARD_S, lambda: list(SessionFileReader(path).entries()))
    assert caught.value.line == 3
    assert "cycle" in caught.value.reason
    reader = SessionFileReader(path, lenient=True)
    kept = finishes_within(HANG_GUARD_S, lambda: list(reader.entries()))
    assert len(kept) + len(reader.skipped) == size and reader.skipped


def test_a_forward_reference_that_is_not_a_cycle_is_refused_and_says_parents_come_first(
    tmp_path: Path,
) -> None:
    path = tmp_path / "forward.jsonl"
    path.write_text(HEADER % "forward" + user_line(1, "m2") + user_line(2, None))
    with pytest.raises(JsonlError) as caught:
        finishes_within(HANG_GUARD_S, lambda: list(SessionFileReader(path).entries()))
    assert caught.value.line == 3
    assert "named as parent by the entry on line 2" in caught.value.reason
    assert "cycle" not in caught.value.reason

"""The command line: data on stdout, one-line errors on stderr, --json on read commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.errors import InvalidInputError
from sessionstore.store.migrate import SCHEMA_REVISION
from sessionstore.store.records import TreeNode
from sessionstore.wire.jsjson import js_dumps
from tests.builders import assistant, user
from tests.paths import FIXTURES, PI_FILES

COMPACTED_ID = "ffae836b-9420-4060-ac13-7745215f90ff"


@pytest.fixture
def run(db_url: str) -> object:
    runner = CliRunner()

    def invoke(*args: str, input: str | bytes | None = None) -> Result:
        return runner.invoke(cli, ["--db", db_url, *args], input=input, catch_exceptions=False)

    return invoke


def test_import_prints_the_session_id_and_json_gives_counts(run) -> None:  # type: ignore[no-untyped-def]
    assert run("import", str(PI_FILES["large-session"])).stdout.strip() == "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"
    data = json.loads(run("import", "--json", str(PI_FILES["before-compaction"])).stdout)
    assert data == [{"file": str(PI_FILES["before-compaction"]), "status": "imported", "sessionId": COMPACTED_ID,
                     "entries": 1002, "skipped": [], "leafId": "000003ea", "diagnostics": []}]


def test_importing_the_same_session_twice_is_an_error_unless_replaced(run) -> None:  # type: ignore[no-untyped-def]
    run("import", str(PI_FILES["before-compaction"]))
    again = run("import", str(PI_FILES["before-compaction"]))
    assert again.exit_code == 2
    assert again.stderr.count("\n") == 1 and "already exists" in again.stderr
    assert run("import", "--replace", str(PI_FILES["before-compaction"])).exit_code == 0


def test_context_json_has_pi_field_names(run) -> None:  # type: ignore[no-untyped-def]
    run("import", str(PI_FILES["before-compaction"]))
    data = json.loads(run("context", "--json", "ffae").stdout)
    assert list(data) == ["sessionId", "leafId", "messages", "llm", "thinkingLevel", "model", "diagnostics"]
    assert len(data["messages"]) == 446
    assert data["messages"][0]["role"] == "compactionSummary"
    assert data["model"] == {"provider": "anthropic", "modelId": "claude-opus-4-5"}
    assert {"code", "messageIndex", "entryId", "message"} <= set(data["diagnostics"][0])


def test_context_text_shows_roles_tool_calls_and_diagnostics(run) -> None:  # type: ignore[no-untyped-def]
    run("import", str(PI_FILES["before-compaction"]))
    out = run("context", COMPACTED_ID).stdout
    assert "compactionSummary" in out and "→ bash(" in out and "MISSING_TOOL_RESULT" in out


def test_context_at_a_leaf_and_provider_safe(run) -> None:  # type: ignore[no-untyped-def]
    run("import", str(PI_FILES["large-session"]))
    at = json.loads(run("context", "--json", "--leaf", "00000005", "d703").stdout)
    assert at["leafId"] == "00000005" and len(at["messages"]) == 4
    safe = json.loads(run("context", "--json", "--provider-safe", "d703").stdout)
    assert all(m.get("stopReason") not in ("error", "aborted") for m in safe["llm"])


@pytest.mark.parametrize(("fixture", "session_id", "leaf", "repaired"), [
    ("large-session", "d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "000003fa", 18),
    ("before-compaction", COMPACTED_ID, "000003ea", 2),
])
def test_validate_calls_the_real_pi_sessions_valid_reporting_what_the_projection_repairs(
        run: Any, fixture: str, session_id: str, leaf: str, repaired: int) -> None:
    """Aborted turns leave calls without results (MISSING_TOOL_RESULT), which the provider-safe projection
    answers: repaired findings, exit 0 (validate exited 1 on both, with no verdict)."""
    run("import", str(PI_FILES[fixture]))
    text = run("validate", session_id[:6])
    assert text.exit_code == 0, text.stdout
    lines = text.stdout.splitlines()
    assert lines[0] == (f"repaired by the provider-safe projection (context --provider-safe, as pi-ai before each"
                        f" call): {repaired}")
    assert all(line.startswith("  MISSING_TOOL_RESULT (message ") for line in lines[1:-1])
    assert lines[-1] == f"session {session_id} at leaf {leaf}: valid ({repaired} repaired)"
    data = json.loads(run("validate", "--json", session_id).stdout)
    assert (data["valid"], data["errors"], data["repaired"], data["warnings"]) == (True, 0, repaired, 0)
    assert {d["severity"] for d in data["diagnostics"]} == {"repaired"}
    assert data["verdict"] == lines[-1] and list(data)[-1] == "verdict"


def test_validate_exits_1_for_what_the_projection_cannot_repair_and_0_when_clean(run: Any) -> None:
    sid = run("new", "--cwd", "/w", "--id", "v1").stdout.strip()
    run("append", sid, input=json.dumps(user("hi")))
    run("append", sid, input=json.dumps(assistant("hello")))
    clean = run("validate", sid)
    assert (clean.exit_code, clean.stdout) == (0, "session v1 at leaf " + json.loads(
        run("validate", "--json", sid).stdout)["leafId"] + ": valid (nothing found)\n")
    orphan = {"role": "toolResult", "toolCallId": "nosuch", "toolName": "bash",
              "content": [{"type": "text", "text": "x"}], "isError": False, "timestamp": 3}
    run("append", sid, input=json.dumps(orphan))
    done = run("validate", sid)
    assert done.exit_code == 1
    lines = done.stdout.splitlines()
    assert lines[0] == "errors (the provider-safe projection cannot repair them): 1"
    assert lines[1].startswith("  ORPHAN_TOOL_RESULT (message 2, entry ")
    assert lines[-1].startswith("session v1 at leaf ") and lines[-1].endswith(": invalid (1 error)")
    data = json.loads(run("validate", "--json", sid).stdout)
    assert (data["valid"], data["errors"], data["diagnostics"][0]["severity"]) == (False, 1, "error")


def test_validate_reports_a_result_left_orphaned_by_a_dropped_turn_as_an_error(run: Any) -> None:
    """The projection drops an aborted assistant turn; a result of its call is then an orphan, which a
    provider refuses: an error, though the messages as stored have none."""
    sid = run("new", "--cwd", "/w", "--id", "v2").stdout.strip()
    run("append", sid, input=json.dumps(user("hi")))
    aborted = {**assistant("calling"), "stopReason": "aborted"}
    aborted["content"] = [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}]
    run("append", sid, input=json.dumps(aborted))
    run("append", sid, input=json.dumps({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                                         "content": [], "isError": False, "timestamp": 3}))
    done = run("validate", sid)
    assert done.exit_code == 1, done.stdout
    assert "  ORPHAN_TOOL_RESULT (transcript): after the provider-safe projection: " in done.stdout
    assert done.stdout.splitlines()[-1].endswith(": invalid (1 error)")


def test_export_writes_pi_v3(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run("import", str(PI_FILES["large-session"]))
    out = tmp_path / "out.jsonl"
    assert run("export", "d703", "-o", str(out)).exit_code == 0
    expected = (PI_FILES["large-session"].parent / "large-session.v3.jsonl").read_bytes()
    assert run("export", "d703").stdout_bytes == out.read_bytes()
    assert out.read_bytes() == expected  # byte for byte as pi upgrades the file, on both backends


def test_ls_lists_sessions_with_json(run) -> None:  # type: ignore[no-untyped-def]
    run("import", str(PI_FILES["large-session"]))
    run("name", "d703", "theme work")
    text = run("ls").stdout
    assert "theme work" in text and "/Users/badlogic/workspaces/pi-mono" in text
    (row,) = json.loads(run("ls", "--json").stdout)
    assert row["name"] == "theme work" and row["entries"] == 1019 and row["messageCount"] == 914


def test_live_commands_append_branch_label_fork_compact_tree_and_rm(run) -> None:  # type: ignore[no-untyped-def]
    sid = run("new", "--cwd", "/w").stdout.strip()
    first = run("append", sid, input=json.dumps(user("hi"))).stdout.strip()
    second = run("append", sid, "--expected-leaf", first, input=json.dumps(assistant("yo"))).stdout.strip()
    conflict = run("append", sid, "--expected-leaf", first, input=json.dumps(user("late")))
    assert conflict.exit_code == 2 and "expected leaf" in conflict.stderr
    run("append", sid, "--type", "model_change", input='{"provider": "x", "modelId": "y"}')
    assert run("label", sid, first, "start").exit_code == 0
    summary_id = run("branch", sid, first, "--summary", "abandoned yo").stdout.strip()
    assert json.loads(run("show", sid, summary_id).stdout)["fromId"] != first
    tree = run("tree", sid).stdout
    assert "[start]" in tree and f"* {first}" in tree
    assert json.loads(run("tree", "--json", sid).stdout)[0]["label"] == "start"
    forked = json.loads(run("fork", sid, "--leaf", second, "--json").stdout)
    assert forked["parentSession"] == sid
    plan = json.loads(run("compact", sid, "--plan", "--json", "--keep-recent-tokens", "1").stdout)
    assert "firstKeptEntryId" in plan
    assert run("compact", sid, "--summary", "s", "--keep-recent-tokens", "1").exit_code == 0
    assert run("rm", sid, "--yes").exit_code == 0
    gone = run("context", sid)
    assert gone.exit_code == 2 and gone.stderr.startswith("error: no session")


def nested_json(node: TreeNode) -> dict[str, object]:
    """The tree's JSON shape, spelled recursively (fine for a small tree)."""
    out: dict[str, object] = {"entry": node.entry, "onActivePath": node.on_active_path}
    if node.label is not None:
        out["label"] = node.label
    out["children"] = [nested_json(child) for child in node.children]
    return out


def test_the_api_tree_nests_and_tree_json_lists_the_same_nodes_depth_first(run, db_url: str) -> None:  # type: ignore[no-untyped-def]
    sid = run("import", str(FIXTURES / "valid" / "tree-v3.jsonl")).stdout.strip()
    run("label", sid, "e02", "start")
    with SessionStore(db_url) as store:
        roots = store.tree(sid)
    nested = [nested_json(root) for root in roots]
    assert [root.to_json() for root in roots] == nested  # the API's shape: pi's getTree
    printed = run("tree", "--json", sid).stdout
    flat = json.loads(printed)
    assert printed == js_dumps(flat, indent=2) + "\n"  # key order too
    depth_first = walk_with_depth(nested)
    assert [node["entry"] for node in flat] == [node["entry"] for node, _depth in depth_first]
    assert [node["depth"] for node in flat] == [depth for _node, depth in depth_first]
    assert [node["children"] for node in flat] == [len(node["children"]) for node, _depth in depth_first]  # type: ignore[arg-type]
    assert list(flat[0]) == ["entry", "onActivePath", "depth", "children"]
    assert [list(node) for node in flat if node["entry"]["id"] == "e02"] == [
        ["entry", "onActivePath", "label", "depth", "children"]
    ]
    assert [n["onActivePath"] for n in flat] == [n["onActivePath"] for n, _depth in depth_first]
    assert '"cost": 0.000036' not in printed and '"input": 0.000036' in printed


def walk_with_depth(nodes: list[dict[str, object]]) -> list[tuple[dict[str, object], int]]:
    """Depth first, children in order, with each node's depth."""
    out: list[tuple[dict[str, object], int]] = []
    stack = [(node, 0) for node in reversed(nodes)]
    while stack:
        node, depth = stack.pop()
        out.append((node, depth))
        stack.extend((child, depth + 1) for child in reversed(node["children"]))  # type: ignore[call-overload]
    return out


def test_bad_input_gives_one_line_and_no_traceback(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"session","id":"s","timestamp":"t","cwd":"/"}\n{"type":"message",\n')
    result = run("import", str(bad))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {bad}:2: invalid JSON")
    assert "Traceback" not in result.output
    missing = run("import", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 2 and "Traceback" not in missing.output
    assert run("append", "nosuch", input="{}").exit_code == 2
    assert run("append", "x", input="not json").exit_code == 2


def test_help_names_the_default_database() -> None:
    out = CliRunner().invoke(cli, ["--help"]).output
    assert "SESSIONSTORE_DB" in out and "sessions.db" in out


def test_edit_replaces_or_omits_what_the_model_sees_of_an_entry(run) -> None:  # type: ignore[no-untyped-def]
    sid = run("new", "--cwd", "/w").stdout.strip()
    first = run("append", sid, input=json.dumps(user("a long tool dump"))).stdout.strip()
    second = run("append", sid, input=json.dumps(assistant("ok"))).stdout.strip()
    edit = json.loads(run("edit", sid, first, "--content", "(removed)", "--json").stdout)
    assert edit["sessionId"] == sid and edit["entryId"]
    messages = json.loads(run("context", "--json", sid).stdout)["messages"]
    assert messages[0]["content"] == "(removed)" and messages[1]["role"] == "assistant"
    run("edit", sid, second, "--omit")
    assert [m["role"] for m in json.loads(run("context", "--json", sid).stdout)["messages"]] == ["user"]
    assert json.loads(run("show", sid, first).stdout)["message"]["content"] == user("a long tool dump")["content"]


def test_edit_needs_exactly_one_of_content_and_omit_and_an_editable_target(run) -> None:  # type: ignore[no-untyped-def]
    sid = run("new", "--cwd", "/w").stdout.strip()
    first = run("append", sid, input=json.dumps(user("hi"))).stdout.strip()
    for args, needle in (([], "exactly one"), (["--omit", "--content", "x"], "exactly one")):
        result = run("edit", sid, first, *args)
        assert result.exit_code == 2 and needle in result.stderr and result.stderr.count("\n") == 1
    model = run("append", sid, "--type", "model_change", input='{"provider":"p","modelId":"m"}').stdout.strip()
    result = run("edit", sid, model, "--omit")
    assert result.exit_code == 2 and "does not contribute editable model content" in result.stderr


def test_append_context_edit_usage_and_label_go_through_the_api_checks(run) -> None:  # type: ignore[no-untyped-def]
    sid = run("new", "--cwd", "/w").stdout.strip()
    first = run("append", sid, input=json.dumps(user("hi"))).stdout.strip()
    edit = run("append", sid, "--type", "context_edit", input=json.dumps({"targetId": first, "replacement": None}))
    assert edit.exit_code == 0
    assert json.loads(run("context", "--json", sid).stdout)["messages"] == []
    usage = {"kind": "cache_warm", "provider": "p", "model": "m", "usage": {"input": 1}}
    entry_id = run("append", sid, "--type", "usage", input=json.dumps(usage)).stdout.strip()
    assert json.loads(run("show", sid, entry_id).stdout)["kind"] == "cache_warm"
    missing = run("append", sid, "--type", "label", input=json.dumps({"targetId": "nope", "label": "x"}))
    assert missing.exit_code == 2 and "nope" in missing.stderr
    no_replacement = run("append", sid, "--type", "context_edit", input=json.dumps({"targetId": first}))
    assert no_replacement.exit_code == 2 and "replacement" in no_replacement.stderr


def test_every_typed_append_goes_through_its_api_method(run) -> None:  # type: ignore[no-untyped-def]
    """model_change, thinking_level_change, custom, custom_message, session_info and branch_summary
    appends run their kind's checks and its pi 1.6 rules (the one append_entry call), as the labels and
    edits above do; a value of the wrong JSON type is refused, not converted."""
    sid = run("new", "--cwd", "/w").stdout.strip()
    run("append", sid, input=json.dumps(user("hi")))

    def show(entry_id: str) -> dict[str, object]:
        shown: dict[str, object] = json.loads(run("show", sid, entry_id).stdout)
        return shown

    named = run("append", sid, "--type", "session_info", input=json.dumps({"name": " two\r\nlines "})).stdout.strip()
    assert show(named)["name"] == "two lines"  # CR/LF runs fold into one space, then trimmed (pi 1.6)
    model = run("append", sid, "--type", "model_change", input=json.dumps({"provider": "p", "modelId": "m"}))
    assert show(model.stdout.strip())["modelId"] == "m"
    assert run("append", sid, "--type", "model_change", input=json.dumps({"provider": 5})).exit_code == 2
    level = run("append", sid, "--type", "thinking_level_change", input=json.dumps({"thinkingLevel": "high"}))
    assert json.loads(run("context", "--json", sid).stdout)["thinkingLevel"] == "high" and level.exit_code == 0
    custom = run("append", sid, "--type", "custom", input=b'{"customType": "x", "data": {"v": [1, 2]}}')
    assert show(custom.stdout.strip())["data"] == {"v": [1, 2]}
    bad_display = run("append", sid, "--type", "custom_message",
                      input=json.dumps({"customType": "x", "content": "c", "display": "yes"}))
    assert bad_display.exit_code == 2 and "display" in bad_display.stderr
    leaf = run("append", sid, "--type", "custom_message", input=json.dumps({"customType": "x", "content": "c"}))
    summary = run("append", sid, "--type", "branch_summary", input=json.dumps({"summary": "s", "fromId": "abandoned"}))
    stored = show(summary.stdout.strip())  # the entry as given (pi's type requires fromId), at the leaf
    assert stored["fromId"] == "abandoned" and stored["parentId"] == leaf.stdout.strip()
    no_from = run("append", sid, "--type", "branch_summary", input=json.dumps({"summary": "s"}))
    assert no_from.exit_code == 2 and "fromId" in no_from.stderr
    unplanned = run("append", sid, "--type", "compaction", input=json.dumps({"summary": "s", "tokensBefore": 1}))
    assert unplanned.exit_code == 2 and "sessionstore compact" in unplanned.stderr


def test_rm_refuses_short_prefixes_and_asks_for_yes_off_a_terminal(run: Any, store: SessionStore) -> None:
    """(Issue 14 item 6.) A prefix under 8 characters or no --yes without a terminal deletes nothing."""
    sid = store.create_session(cwd="/w", session_id="0123456789abcdef")
    short = run("rm", "0123", "--yes")
    assert short.exit_code == 2 and "at least 8 characters" in short.stderr
    unasked = run("rm", sid)
    assert unasked.exit_code == 2 and "--yes" in unasked.stderr
    assert [s.id for s in store.list_sessions()] == [sid]
    assert run("rm", "01234567", "--yes").exit_code == 0
    assert store.list_sessions() == []


def test_an_ambiguous_prefix_lists_its_candidates(run: Any, store: SessionStore) -> None:
    a = store.create_session(cwd="/w", session_id="abcd-1111")
    b = store.create_session(cwd="/w", session_id="abcd-2222")
    done = run("tree", "abcd")
    assert done.exit_code == 2 and a in done.stderr and b in done.stderr and "'" not in done.stderr


def test_db_upgrade_says_what_it_applied_and_history_lists_the_revisions(run: Any, tmp_path: Path) -> None:
    from sessionstore.store import migrate
    from sessionstore.store.engine import make_engine

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    migrate.upgrade(engine, "0007")
    engine.dispose()
    done = CliRunner().invoke(cli, ["--db", url, "db", "upgrade"])
    assert done.exit_code == 0, done.output
    assert "applied 0008:" in done.output and "applied 0009:" in done.output and "was 0007" in done.output
    again = CliRunner().invoke(cli, ["--db", url, "db", "upgrade"])
    assert "already current" in again.output
    listed = CliRunner().invoke(cli, ["--db", url, "db", "history"])
    lines = listed.output.splitlines()
    assert listed.exit_code == 0 and lines[0].startswith("  0001") and lines[-1].startswith(f"* {SCHEMA_REVISION}")
    fresh = CliRunner().invoke(cli, ["--db", f"sqlite:///{tmp_path / 'none.db'}", "db", "history"])
    assert fresh.exit_code == 0 and not (tmp_path / "none.db").exists() and "*" not in fresh.output


@pytest.mark.parametrize("command", [[], ["search"], ["stats"], ["sync"], ["rm"], ["db", "history"], ["ls"]])
def test_every_command_takes_dash_h(command: list[str]) -> None:
    done = CliRunner().invoke(cli, [*command, "-h"])
    assert done.exit_code == 0 and "Usage:" in done.output and "-h, --help" in done.output


def test_text_output_never_shows_pythons_none(run: Any, store: SessionStore) -> None:
    """(Issue 14 item 3.) Missing values read as ``-`` (``model None/None`` and ``leaf None`` before)."""
    empty = store.create_session(cwd="/w")
    for args in (["context", empty], ["tree", empty], ["ls"], ["stats", empty]):
        done = run(*args)
        assert done.exit_code == 0 and "None" not in done.stdout, (args, done.stdout)
    sid = store.create_session(cwd="/w")
    first = store.append_message(sid, {"role": "user", "content": "hello", "timestamp": 1})
    store.append_label(sid, first, "keep")
    store.append_label(sid, first, None)
    store.append_session_info(sid, "named")
    store.append_session_info(sid, "")
    store.append_message(sid, assistant("ok"))
    for args in (["context", sid], ["tree", sid], ["ls"], ["stats", sid], ["search", "hello"]):
        done = run(*args)
        assert done.exit_code == 0 and "None" not in done.stdout, (args, done.stdout)


def test_import_takes_directories_and_globs_goes_on_after_a_bad_file_and_sums_up(
    run: Any, store: SessionStore, tmp_path: Path
) -> None:
    """(Issue 14 item 5.) One JSON shape for any number of files; --skip-existing; a summary."""
    tree = tmp_path / "sessions" / "--w--"
    tree.mkdir(parents=True)
    for source in (FIXTURES / "valid" / "tree-v3.jsonl", FIXTURES / "legacy" / "compaction-v1.jsonl"):
        (tree / source.name).write_bytes(source.read_bytes())
    (tree / "a-bad.jsonl").write_text('{"type":"session","id":"bad","timestamp":"t","cwd":"/"}\n{"type":\n')
    good = sorted(p for p in tree.glob("*.jsonl") if p.name != "a-bad.jsonl")
    assert len(good) == 2
    done = run("import", str(tmp_path / "sessions"), "--json")
    assert done.exit_code == 2
    outcomes = json.loads(done.stdout)
    assert [o["status"] for o in outcomes] == ["failed"] + ["imported"] * len(good)
    assert outcomes[0]["error"].startswith(f"{tree / 'a-bad.jsonl'}:2:")
    assert f"{len(good)} imported, 0 already in the database, 1 failed" in done.stderr
    again = run("import", str(tree / "[ct]*.jsonl"), "--skip-existing", "--nl")
    assert again.exit_code == 0, again.stderr
    lines = [json.loads(line) for line in again.stdout.splitlines()]
    assert [o["status"] for o in lines] == ["exists"] * len(good)
    assert {o["sessionId"] for o in lines} == {s.id for s in store.list_sessions()}
    clash = run("import", str(good[0]))
    assert clash.exit_code == 2 and "already exists" in clash.stderr
    assert run("import", str(tmp_path / "none*.jsonl")).exit_code == 2


def test_append_writes_messages_from_options_with_their_timestamps(
    run: Any, store: SessionStore, tmp_path: Path
) -> None:
    """(Issue 14 item 4.) --user, --assistant, --custom and --bash need no hand-written JSON."""
    sid = store.create_session(cwd="/w")
    log = tmp_path / "test.log"
    log.write_bytes(b"1 failed\n")
    for args in (["--user", "Fix the failing test"], ["--bash", "make test", "--output", str(log), "--exit-code", "1"],
                 ["--assistant", "Fixed.", "--model", "anthropic/claude-x"], ["--custom", "note", "--text", "ok"]):
        done = run("append", sid, *args)
        assert done.exit_code == 0, done.stderr
    done = run("append", sid, input='{"role": "user", "content": "no timestamp"}')
    assert done.exit_code == 0, done.stderr
    messages = [e["message"] for e in store.entries(sid) if e["type"] == "message"]
    assert [m["role"] for m in messages] == ["user", "bashExecution", "assistant", "user"]
    assert all(isinstance(m["timestamp"], int) and m["timestamp"] > 1_700_000_000_000 for m in messages)
    assert messages[1]["output"] == "1 failed\n" and messages[1]["exitCode"] == 1
    assert (messages[2]["provider"], messages[2]["model"]) == ("anthropic", "claude-x")
    custom = [e for e in store.entries(sid) if e["type"] == "custom_message"]
    assert [(c["customType"], c["content"]) for c in custom] == [("note", "ok")]
    for bad in (["--user", "a", "--bash", "b"], ["--custom", "note"], ["--exit-code", "1", "--user", "x"],
                ["--assistant", "x", "--model", "nomodel"], ["--user", "x", "--type", "label"]):
        refused = run("append", sid, *bad)
        assert refused.exit_code == 2 and "Traceback" not in refused.output, bad


def test_compact_plan_says_why_there_is_nothing_to_compact(run: Any) -> None:
    """Nothing to compact is a plan's normal answer (exit 0, on stdout, --json an object with the
    reason); compacting for real when there is nothing to compact is an error."""
    run("import", str(PI_FILES["before-compaction"]))
    fits = run("compact", COMPACTED_ID, "--plan", "--keep-recent-tokens", "10000000")
    assert (fits.exit_code, fits.stdout, fits.stderr) == (
        0, "nothing to compact: everything since the last compaction fits in keep_recent_tokens 10000000"
           " (about 138516 tokens, estimated)\n", "")
    sid = run("new", "--cwd", "/w").stdout.strip()
    assert run("compact", sid, "--plan").stdout == "nothing to compact: the session has no entries\n"
    run("append", sid, "--user", "hi")
    assert run("compact", sid, "--plan").stdout == ("nothing to compact: everything in the session fits in"
                                                    " keep_recent_tokens 20000 (about 1 token, estimated)\n")
    written = run("compact", sid, "--summary", "s")
    assert written.exit_code == 2 and written.stderr == (
        f"error: session '{sid}': nothing to compact: everything in the session fits in"
        " keep_recent_tokens 20000 (about 1 token, estimated)\n")
    run("compact", COMPACTED_ID, "--summary", "s", "--keep-recent-tokens", "1000")
    leaf = run("compact", COMPACTED_ID, "--plan", "--json")
    assert (leaf.exit_code, json.loads(leaf.stdout)) == (
        0, {"compact": False, "reason": "the leaf is a compaction (nothing was added after it)"})
    run("append", COMPACTED_ID, "--user", "one more " * 2000)
    plan = json.loads(run("compact", COMPACTED_ID, "--plan", "--json", "--keep-recent-tokens", "10").stdout)
    assert plan["compact"] is True and plan["firstKeptEntryId"] and "messagesToSummarize" in plan


def test_compact_reads_its_summary_from_a_file_or_stdin(run: Any, store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(cwd="/w")
    for i in range(4):
        store.append_message(sid, {"role": "user", "content": f"m{i}", "timestamp": 1})
    summary = tmp_path / "summary.md"
    summary.write_text("We did four things.\n")
    done = run("compact", sid, "--summary-file", str(summary), "--keep-recent-tokens", "0")
    assert done.exit_code == 0, done.stderr
    assert store.entries(sid)[-1]["summary"] == "We did four things."
    store.append_message(sid, {"role": "user", "content": "m4", "timestamp": 1})
    piped = run("compact", sid, "--summary-file", "-", "--keep-recent-tokens", "0", input="Again.")
    assert piped.exit_code == 0 and store.entries(sid)[-1]["summary"] == "Again."
    assert run("compact", sid, "--summary", "x", "--summary-file", str(summary)).exit_code == 2


def test_tree_draws_forks_folds_long_runs_and_colours_only_a_terminal(run: Any, store: SessionStore) -> None:
    """(Issue 14 item 3.) A chain and a sibling no longer look the same."""
    from sessionstore.cli.render import render_tree

    sid = store.create_session(cwd="/w")
    ids = [store.append_message(sid, {"role": "user", "content": f"m{i}", "timestamp": 1}) for i in range(12)]
    store.append_label(sid, ids[0], "start")
    store.branch(sid, ids[0])
    side = store.append_message(sid, {"role": "user", "content": "side", "timestamp": 1})
    lines = run("tree", sid).stdout.splitlines()
    assert lines[0] == f"* {ids[0]} [start] user: m0"
    assert lines[1].startswith(f"  ├─ {ids[1]} ") and any(line.startswith("  │  ⋮ ") for line in lines)
    assert lines[-2] == f"* └─ {side} user: side" and lines[-1] == "(* = on the active path)"
    full = run("tree", "--full", sid).stdout.splitlines()
    assert len(full) == len(store.entries(sid)) + 1 and not any("⋮" in line for line in full)
    assert "\x1b" not in run("tree", sid).stdout  # not a terminal: no colour
    coloured = render_tree(store.tree(sid), color=True)
    assert "\x1b[1;32m*\x1b[0m" in coloured and coloured.count("\x1b[1;32m") == 2


# -- entry ids take unique prefixes (issue 14, item 6) --------------------------------------------


def _prefixed_session(store: SessionStore, sid: str = "prefixes-1") -> str:
    """A session whose entry ids share prefixes: abcd1111 -> abcd2222 -> ef01beef -> ef01cafe, and
    ids holding LIKE's wildcards (a_b%c-1, aXbYc-2) and one that is a prefix of another (abcd1, abcd12)."""
    from tests.builders import entry, msg

    ids = ["abcd1111", "abcd2222", "ef01beef", "ef01cafe", "a_b%c-1", "aXbYc-2", "abcd1", "abcd12"]
    entries, parent = [], None
    for n, eid in enumerate(ids):
        message = user(f"question {n}") if n % 2 == 0 else assistant(f"answer {n}")
        entries.append(msg(eid, parent, message) if n < 4 else entry(eid, parent, "custom", customType=f"k{n}"))
        parent = eid
    header = {"type": "session", "version": 3, "id": sid, "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    store.import_entries(header, entries)
    return sid


def test_entry_ids_take_a_unique_prefix_in_every_command_that_takes_one(run: Any, store: SessionStore) -> None:
    sid = _prefixed_session(store)
    assert json.loads(run("show", sid, "ef01b").stdout)["id"] == "ef01beef"
    assert json.loads(run("context", sid, "--leaf", "abcd2", "--json").stdout)["leafId"] == "abcd2222"
    assert json.loads(run("context", "--latest", "--leaf", "abcd2", "--json").stdout)["leafId"] == "abcd2222"
    assert run("validate", sid, "--leaf", "ef01c").exit_code == 0
    label = run("label", sid, "ef01b", "good").stdout.strip()
    assert store.labels(sid) == {"ef01beef": "good"} and label
    edited = json.loads(run("edit", sid, "ef01c", "--omit", "--json").stdout)["entryId"]
    assert store.entry(sid, edited)["targetId"] == "ef01cafe"
    assert run("branch", sid, "abcd2", "--expected-leaf", edited[:6]).exit_code == 0
    assert store.leaf(sid) == "abcd2222"
    appended = run("append", sid, "--user", "hi", "--expected-leaf", "abcd2").stdout.strip()
    assert store.entry(sid, appended)["parentId"] == "abcd2222"
    forked = json.loads(run("fork", sid, "--leaf", "ef01b", "--json").stdout)["sessionId"]
    assert [e["id"] for e in store.path(forked)][:3] == ["abcd1111", "abcd2222", "ef01beef"]  # (and its label)
    store.branch(sid, "ef01cafe")
    compacted = run("compact", sid, "--summary", "s", "--first-kept", "ef01c", "--json")
    assert compacted.exit_code == 0, compacted.stderr
    assert store.entry(sid, json.loads(compacted.stdout)["entryId"])["firstKeptEntryId"] == "ef01cafe"


def test_an_exact_entry_id_wins_over_the_longer_ids_it_starts(run: Any, store: SessionStore) -> None:
    sid = _prefixed_session(store)
    assert json.loads(run("show", sid, "abcd1").stdout)["id"] == "abcd1"  # though abcd12 and abcd1111 start so
    assert json.loads(run("show", sid, "abcd12").stdout)["id"] == "abcd12"


def test_an_ambiguous_entry_prefix_lists_its_candidates_with_type_and_preview(run: Any, store: SessionStore) -> None:
    sid = _prefixed_session(store)
    done = run("show", sid, "ef01")
    assert done.exit_code == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert done.stderr == ("error: entry prefix ef01 is ambiguous: 2 entries start with it:"
                           " ef01beef [message] user: question 2, ef01cafe [message] assistant: answer 3\n")
    assert "abcd1111 [message]" in run("branch", sid, "abcd", "--expected-leaf", "abcd").stderr
    custom = run("label", sid, "aXbY", "x")  # unique: a_b%c-1 does not match it, nor does it match a_b%
    assert custom.exit_code == 0
    assert json.loads(run("show", sid, "a_b%").stdout)["id"] == "a_b%c-1"  # % and _ are characters


def test_more_than_ten_candidates_are_counted_and_cut(run: Any, store: SessionStore) -> None:
    from tests.builders import msg

    header = {"type": "session", "version": 3, "id": "many", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    store.import_entries(header, [msg(f"same{n:02d}", None, user(f"q{n}")) for n in range(12)])
    done = run("show", "many", "same")
    assert done.exit_code == 2
    assert "12 entries start with it" in done.stderr and done.stderr.rstrip().endswith(", ...")
    assert done.stderr.count("[message]") == 10


def test_an_unknown_entry_prefix_is_not_found(run: Any, store: SessionStore) -> None:
    sid = _prefixed_session(store)
    for given in ("zzzz", "ef01beef0", "zz"):
        done = run("show", sid, given)
        assert (done.exit_code, done.stderr) == (2, f"error: session '{sid}' has no entry '{given}'\n"), given
    assert run("branch", sid, "none").exit_code == 0 and store.leaf(sid) is None  # 'none' is no leaf


def test_a_prefix_too_short_to_expand_says_so_and_how_many_it_starts(run: Any, store: SessionStore) -> None:
    sid = _prefixed_session(store)
    done = run("show", sid, "ef0")
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr == ("error: entry prefix ef0 is too short (an entry prefix needs at least 4 characters):"
                           " 2 entries start with it: ef01beef [message] user: question 2, ef01cafe [message]"
                           " assistant: answer 3\n")


def test_a_short_prefix_of_the_real_session_is_too_short_not_missing(run: Any) -> None:
    run("import", str(PI_FILES["before-compaction"]))
    done = run("show", COMPACTED_ID, "000")
    assert done.exit_code == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("error: entry prefix 000 is too short (an entry prefix needs at least 4"
                                  " characters): more than 1000 entries start with it: 00000001 [message] user:")
    assert done.stderr.count("[") == 3 and done.stderr.rstrip().endswith(", ...")
    ambiguous = run("show", COMPACTED_ID, "0000003").stderr
    assert ambiguous.startswith("error: entry prefix 0000003 is ambiguous: 16 entries start with it: 00000030")


def test_the_store_reads_entry_ids_by_prefix_taken_literally(store: SessionStore) -> None:
    sid = _prefixed_session(store)
    assert store.entry_ids_with_prefix(sid, "abcd") == [("abcd1", "custom"),
                                                        ("abcd1111", "message"), ("abcd12", "custom"),
                                                        ("abcd2222", "message")]
    assert store.entry_ids_with_prefix(sid, "a_b") == [("a_b%c-1", "custom")]
    assert store.entry_ids_with_prefix(sid, "a%") == []
    assert store.entry_ids_with_prefix(sid, "abcd", limit=2) == [("abcd1", "custom"), ("abcd1111", "message")]
    assert store.entry_ids_with_prefix(sid, "") != []


def test_the_store_reads_session_ids_by_prefix_taken_literally_in_its_tenant(store: SessionStore) -> None:
    for sid in ("abcd", "abcd-1111", "abcd-2222", "a_b%c", "abce", "zzz"):
        store.create_session(cwd="/w", session_id=sid)
    store.for_tenant("other").create_session(cwd="/w", session_id="abcd-3333")
    assert store.session_ids_with_prefix("abcd") == ["abcd", "abcd-1111", "abcd-2222"]  # (the exact id first)
    assert store.session_ids_with_prefix("abcd-", limit=1) == ["abcd-1111"]
    assert store.session_ids_with_prefix("a_b") == ["a_b%c"] and store.session_ids_with_prefix("a%") == []
    assert store.session_ids_with_prefix("abcd-3") == []  # (another tenant's)
    store.delete_session("abcd-2222")
    assert store.session_ids_with_prefix("abcd-") == ["abcd-1111"]
    assert len(store.session_ids_with_prefix("")) == 5
    with pytest.raises(InvalidInputError):
        store.session_ids_with_prefix("a", limit=-1)


def test_leaf_none_is_the_empty_context_before_the_first_entry(run: Any, store: SessionStore) -> None:
    sid = store.create_session(cwd="/w")
    store.append_message(sid, user("hello"))
    shown = json.loads(run("context", sid, "--leaf", "none", "--json").stdout)
    assert (shown["leafId"], shown["messages"], shown["llm"]) == (None, [], [])
    assert shown == store.context(sid, leaf_id=None).to_json()
    checked = run("validate", sid, "--leaf", "none", "--json")
    assert checked.exit_code == 0 and json.loads(checked.stdout)["valid"] is True
    assert json.loads(run("context", sid, "--json").stdout)["messages"]  # (not given: the session's leaf)


def test_an_ambiguous_session_prefix_counts_its_sessions(run: Any, store: SessionStore) -> None:
    for n in range(12):
        store.create_session(cwd="/w", session_id=f"same-{n:02d}")
    done = run("tree", "same")
    assert done.exit_code == 2, done.output
    assert "12 sessions start with it: same-00, same-01" in done.stderr and "same-09, ..." in done.stderr
    assert run("tree", "same-11").exit_code == 0 and run("tree", "same-1").exit_code == 2


@pytest.mark.parametrize(("prefix", "bound"), [
    ("ab", "ac"), ("a\U0010ffff", "b"), ("\ud7ff", "\ue000"), ("é", "ê"),
])
def test_the_prefix_bound_is_above_every_id_with_the_prefix(prefix: str, bound: str) -> None:
    from sessionstore.store.sqltx import prefix_upper_bound

    assert prefix_upper_bound(prefix) == bound
    assert prefix_upper_bound("\U0010ffff").startswith("\U0010ffff\U0010ffff")


def test_entry_ids_with_unicode_and_surrogates_resolve_by_prefix(run: Any, store: SessionStore) -> None:
    from tests.builders import msg

    header = {"type": "session", "version": 3, "id": "uni", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    store.import_entries(header, [msg("ünï\U0010ffffx", None, user("a")),
                                  msg("ünï\ud800y", "ünï\U0010ffffx", user("b")), msg("ünïz", "ünï\ud800y", user("c"))])
    assert store.entry_ids_with_prefix("uni", "ünï\U0010ffff") == [("ünï\U0010ffffx", "message")]
    assert store.entry_ids_with_prefix("uni", "ünï\ud800") == [("ünï\ud800y", "message")]
    assert len(store.entry_ids_with_prefix("uni", "ünï")) == 3
    assert json.loads(run("show", "uni", "ünïz").stdout)["id"] == "ünïz"

"""The hostile-values corpus (``tests/test_cli_hostile_values.py``) against pi 1.6 live: what
``context --json`` prints of each variant is pi's ``buildSessionContext`` + ``convertToLlm`` as
``JSON.stringify`` writes them, ``stats --json`` is pi's ``getSessionStats`` where the corpus records it,
and the numbers beyond doubles are read as node's ``JSON.parse`` reads them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessionstore.cli import cli
from sessionstore.models import js
from sessionstore.wire.codec import parse_line
from sessionstore.wire.jsjson import js_dumps
from tests.differential.compare import same
from tests.differential.oracle import ORACLE_TIMEOUT_S, Oracle, list_dirs
from tests.differential.test_stats_against_pi import run_stats_oracle
from tests.test_cli_hostile_values import INF_DIGITS, LONG_DIGITS, VARIANTS, expected_context, session_file, session_id

Json = dict[str, Any]


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("hostile-values-pi")
    return {name: session_file(directory, name) for name in VARIANTS}


@pytest.fixture(scope="module")
def pi_contexts(oracle: Oracle, corpus_files: dict[str, Path]) -> dict[str, Json]:
    files = list(corpus_files.values())
    return {name: pi for name, pi in zip(corpus_files, oracle.evaluate(files, max_leaves=2).values(), strict=True)}


def pi_default_leaf(pi: Json) -> Json | str:
    """pi's context at its own leaf after opening the file (messages, llm, thinking level, model), or
    pi's error."""
    leaf = next(leaf for leaf in pi["leaves"] if leaf["leaf"] == "default")
    if "error" in leaf:
        return str(leaf["error"])
    pool = pi["pool"]
    return {"messages": [pool[i] for i in leaf["context"]["messages"]], "llm": [pool[i] for i in leaf["llm"]],
            "thinkingLevel": leaf["context"]["thinkingLevel"], "model": leaf["context"]["model"]}


@pytest.mark.parametrize("name", VARIANTS)
def test_context_json_of_a_hostile_value_prints_what_pi_prints(
    db_url: str, corpus_files: dict[str, Path], pi_contexts: dict[str, Json], name: str
) -> None:
    runner = CliRunner()
    imported = runner.invoke(cli, ["--db", db_url, "import", str(corpus_files[name])], catch_exceptions=False)
    assert imported.exit_code == 0, imported.stderr
    result = runner.invoke(cli, ["--db", db_url, "context", session_id(name), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    pi = pi_default_leaf(pi_contexts[name])
    if isinstance(pi, str):  # pi throws (a null message): the store reads it as no message, and says so
        assert name == "message-null" and "Cannot read properties of null" in pi
        assert "MESSAGE_ENTRY_WITHOUT_MESSAGE" in {d["code"] for d in out["diagnostics"]}
    else:
        assert same(pi, {key: out[key] for key in pi}), (pi, out)
    expected = expected_context(VARIANTS[name])
    assert expected is None or (out["messages"], out["llm"]) == expected  # what the plain test records


def test_stats_of_huge_usage_are_pis(sqlite_url: str, oracle: Oracle, corpus_files: dict[str, Path]) -> None:
    names = [name for name, variant in VARIANTS.items() if variant.stats]
    lines = run_stats_oracle(oracle, "stats", *(str(corpus_files[n]) for n in names)).splitlines()
    runner = CliRunner()
    for name, line in zip(names, lines, strict=True):
        pi = json.loads(line)
        runner.invoke(cli, ["--db", sqlite_url, "import", str(corpus_files[name])], catch_exceptions=False)
        ours = json.loads(runner.invoke(cli, ["--db", sqlite_url, "stats", session_id(name), "--json"]).stdout)
        assert {key: ours[key] for key in ("tokens", "cost")} == {key: pi["stats"][key] for key in ("tokens", "cost")}
        assert {key: pi["stats"][key] for key in VARIANTS[name].stats} == VARIANTS[name].stats
        text = runner.invoke(cli, ["--db", sqlite_url, "stats", session_id(name)]).stdout
        pi_tokens = pi["text"].split("\n\nTokens\n", 1)[1]
        assert pi_tokens.rstrip() in text, (pi_tokens, text)


def test_ls_lists_the_hostile_sessions_as_pi_lists_them(
    sqlite_url: str, oracle: Oracle, corpus_files: dict[str, Path]
) -> None:
    directory = next(iter(corpus_files.values())).parent
    pi_rows = list_dirs(oracle, [directory])[directory]
    runner = CliRunner()
    for path in corpus_files.values():
        runner.invoke(cli, ["--db", sqlite_url, "import", str(path)], catch_exceptions=False)
    ours = {row["id"]: row for row in json.loads(runner.invoke(cli, ["--db", sqlite_url, "ls", "--json"]).stdout)}
    by_name = {session_id(name): variant for name, variant in VARIANTS.items()}
    # pi drops a file from its list where reading it throws: a null message, a name that is not a string,
    # a text block whose text is not a string (the store lists every session)
    assert {sid for sid in ours if sid.startswith("hv-")} - {row["id"] for row in pi_rows} == {
        session_id("message-null"), session_id("session-name-object"), session_id("assistant-blocks-of-objects")}
    for row in pi_rows:
        modified = None if row["modified"] is None else js.iso_string(row["modified"])
        mine = ours[row["id"]]
        assert (mine["modified"], mine["messageCount"], mine["firstMessage"]) == (
            modified, row["messageCount"], row["firstMessage"]), row["id"]
        assert by_name[row["id"]].modified == modified  # what the plain test records


NUMBER_LINES = [
    f'{{"a":{INF_DIGITS},"b":{LONG_DIGITS},"c":{10**30},"d":{2**64},"e":{2**64 - 1},"f":{"9" * 308}}}',
    f'{{"s":"\\ud800","a":{INF_DIGITS},"b":-{"1" * 4400},"c":{2**63},"d":-{2**63}}}',
]


def test_numbers_beyond_doubles_read_as_json_parse_reads_them(oracle: Oracle) -> None:
    script = "for (const l of JSON.parse(process.argv[1])) console.log(JSON.stringify(JSON.parse(l)))"
    done = subprocess.run([oracle.node, "-e", script, json.dumps(NUMBER_LINES)], capture_output=True, text=True,
                          timeout=ORACLE_TIMEOUT_S, check=True)
    node = done.stdout.splitlines()
    ours = [js_dumps(parse_line(line.encode())) for line in NUMBER_LINES]
    assert ours == node

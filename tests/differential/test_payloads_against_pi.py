"""sessionstore.payloads builds the request bodies pi-ai 1.6 builds, byte for byte as JSON (SPEC 14):
on the contexts of the real pi files at several leaves and on synthetic contexts covering every rule,
for the issue's four targets, and the synthetic ones for models whose compat flags take the other branches."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.errors import InvalidInputError
from sessionstore.payloads import build_payload
from sessionstore.wire.jsjson import js_dumps
from tests.differential.oracle import Oracle
from tests.differential.payload_cases import CONTEXTS, QUIRK_TARGETS, TARGETS
from tests.paths import FIXTURES

Json = dict[str, Any]
PAYLOAD_ORACLE = Path(__file__).with_name("pi_payloads.mjs")
PI_FILES = sorted((FIXTURES / "pi").glob("*.jsonl"))
LEAVES_PER_FILE = 5


def run_pi_payloads(oracle: Oracle, cases: list[Json]) -> list[Json]:
    done = subprocess.run(
        [oracle.node, str(PAYLOAD_ORACLE)], input=json.dumps({"cases": cases}), capture_output=True, text=True,
        env={"SESSIONSTORE_PI_DIR": str(oracle.pi_dir), "PATH": "/usr/bin:/bin"}, timeout=300, check=False)
    if done.returncode != 0:
        pytest.fail(f"pi_payloads.mjs exited with {done.returncode}:\n{done.stderr[-4000:]}")
    payloads: list[Json] = json.loads(done.stdout)["payloads"]
    assert len(payloads) == len(cases)
    return payloads


def real_contexts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Json]]:
    """The provider messages of each pi file at a few leaves spread over it (its last entry among them)."""
    contexts: dict[str, list[Json]] = {}
    for file in PI_FILES:  # a database each: a file and its .v3 twin hold the same session
        db = tmp_path_factory.mktemp("payloads") / "store.db"
        with SessionStore(f"sqlite:///{db}") as store:
            session = store.import_jsonl(file).session_id
            entries = store.entries(session)
            last = len(entries) - 1
            for index in sorted({last, *(last * k // LEAVES_PER_FILE for k in range(1, LEAVES_PER_FILE))}):
                leaf = entries[index]["id"]
                llm = store.context(session, leaf_id=leaf).llm
                contexts[f"{file.name}@{index}"] = [dict(message) for message in llm]
    return contexts


def all_cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Json]:
    cases: dict[str, Json] = {}
    for name, context in CONTEXTS.items():
        for provider, model in [*TARGETS, *QUIRK_TARGETS]:
            cases[f"{name}-{provider}-{model}"] = {"provider": provider, "model": model, "context": context}
    for name, messages in real_contexts(tmp_path_factory).items():
        for provider, model in TARGETS:
            context = {"systemPrompt": "You are pi.", "messages": messages, "tools": []}
            cases[f"{name}-{provider}-{model}"] = {"provider": provider, "model": model, "context": context}
    return cases


@pytest.fixture(scope="module")
def cases_and_pi(oracle: Oracle, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Json], dict[str, Json]]:
    cases = all_cases(tmp_path_factory)
    names = list(cases)
    payloads = run_pi_payloads(oracle, [cases[name] for name in names])
    return cases, dict(zip(names, payloads, strict=True))


def ours(case: Json) -> Json:
    """The port's payload as JSON text written as pi-ai's JSON.stringify writes it, or the error it raises."""
    context = case["context"]
    try:
        return {"text": js_dumps(build_payload(context, provider=case["provider"], model=case["model"]))}
    except InvalidInputError as exc:
        return {"error": str(exc)}


SYNTHETIC_CASES = [f"{name}-{provider}-{model}" for name in CONTEXTS for provider, model in [*TARGETS, *QUIRK_TARGETS]]


@pytest.mark.parametrize("name", SYNTHETIC_CASES)
def test_payload_of_a_synthetic_context_equals_pi_ais(name: str, cases_and_pi: tuple[dict[str, Json], dict[str, Json]]
                                                      ) -> None:
    cases, pi = cases_and_pi
    expected = pi[name]
    got = ours(cases[name])
    if "error" in expected:
        assert "error" in got, f"pi-ai refuses this context ({expected['error']}), the port built a payload"
    else:
        assert got == {"text": expected["text"]}


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: f"{t[0]}-{t[1]}")
def test_payloads_of_the_real_pi_files_at_several_leaves_equal_pi_ais(
        target: tuple[str, str], cases_and_pi: tuple[dict[str, Json], dict[str, Json]]) -> None:
    cases, pi = cases_and_pi
    names = [name for name, case in cases.items() if "@" in name and (case["provider"], case["model"]) == target]
    assert len(names) >= len(PI_FILES) * 2
    for name in names:
        assert "payload" in pi[name], pi[name]
        assert ours(cases[name]) == {"text": pi[name]["text"]}, name


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: f"{t[0]}-{t[1]}")
def test_the_payload_command_reads_null_content_as_pi_ai_does(
        target: tuple[str, str], cases_and_pi: tuple[dict[str, Json], dict[str, Json]]) -> None:
    """``sessionstore payload`` refused content ``null`` (``expected a list of content blocks``), which
    pi-ai reads as ``[]``: the command's payload is pi-ai's."""
    cases, pi = cases_and_pi
    name = f"null-and-absent-content-of-every-role-{target[0]}-{target[1]}"
    assert "text" in pi[name], pi[name]
    done = CliRunner().invoke(cli, ["payload", "--provider", target[0], "--model", target[1]],
                              input=json.dumps(cases[name]["context"]))
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(pi[name]["text"])

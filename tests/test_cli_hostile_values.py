"""What a store accepted, every command reads: a table of hostile entry values (a role that is an object
or a list, a message that is not an object, numbers beyond the double range, usage beyond what a
28-digit decimal holds) by every read command, through the command line.

Each variant is one entry ``x`` between two user messages (``u1`` -> ``x`` -> ``u2``). pi 1.6 loads every
one of these files; what it shows of ``x`` (``buildSessionContext`` + ``convertToLlm``, ``JSON.stringify``
of the result, ``/session``'s numbers) is written down here as pi's own code gives it
(``tests/differential/pi_oracle.mjs eval``, ``pi_stats.mjs stats``), so this file needs neither node nor
pi; ``tests/differential/test_hostile_values_against_pi.py`` checks these answers against pi live.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sessionstore.cli import cli

Json = dict[str, Any]
T = "2025-01-01T00:00:01.000Z"
ABSENT = object()
"""pi shows nothing of ``x`` (the entry contributes no message)."""
UNRECORDED = object()
"""pi's context for ``x`` is not written down here (an entry that is not a message: the differential
test compares the whole context with pi's live)."""

INF_DIGITS = "1" + "0" * 309  # 1e309 written as an integer: JSON.parse reads Infinity
LONG_DIGITS = "-" + "7" * 5000  # past Python's 4,300-digit int-string limit: JSON.parse reads -Infinity
USAGE = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def user(entry_id: str, parent: str | None) -> Json:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": T,
            "message": {"role": "user", "content": f"hi {entry_id}", "timestamp": 1735689601000}}


def message_entry(message: Any) -> str:
    return json.dumps({"type": "message", "id": "x", "parentId": "u1", "timestamp": T, "message": message})


def assistant(usage: Json) -> str:
    return message_entry({"role": "assistant", "content": [{"type": "text", "text": "ok"}],
                          "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                          "usage": usage, "stopReason": "stop", "timestamp": 1735689602000})


def with_number(line: str, digits: str) -> str:
    """``line`` with its ``"@N"`` string as the number ``digits`` (JSON that Python's json cannot write)."""
    return line.replace('"@N"', digits)


def user_x(timestamp: str) -> str:
    return with_number(message_entry({"role": "user", "content": "hi x", "timestamp": "@N"}), timestamp)


@dataclass(frozen=True)
class Variant:
    line: str
    """The entry ``x`` as its file line."""
    shown: Any = UNRECORDED
    """pi's ``context.messages`` item for ``x`` (``JSON.stringify``'s view), :data:`ABSENT` or
    :data:`UNRECORDED`."""
    sent: bool = False
    """Whether ``convertToLlm`` sends it (then as :attr:`shown`)."""
    stats: Json = field(default_factory=dict)
    """Fields of pi's ``getSessionStats`` (``stats --json``) to compare."""
    modified: str | None = "2025-01-01T00:00:01.000Z"
    """pi's ``modified`` of the listed session (``SessionManager.listAll``), ``None`` for an Invalid Date."""


ASSISTANT_AT = "2025-01-01T00:00:02.000Z"


def other(**fields: Any) -> Variant:
    """An entry ``x`` of any type; a ``"@N"`` string in it is written as 1e309 in digits."""
    entry = {"id": "x", "parentId": "u1", "timestamp": T, **fields}
    return Variant(with_number(json.dumps(entry), INF_DIGITS))


def plain(message: Any, *, sent: bool = False) -> Variant:
    return Variant(message_entry(message), message, sent)


VARIANTS: dict[str, Variant] = {
    "role-object": plain({"role": {"a": 1}, "content": "r"}),
    "role-list": plain({"role": ["user"], "content": "r"}),
    "role-number": plain({"role": 5, "content": "r"}),
    "role-null": plain({"role": None, "content": "r"}),
    "role-missing": plain({"content": "r"}),
    "message-list": plain([{"role": "user", "content": "l"}]),
    "message-string": plain("a string"),
    "message-number": plain(42),
    "message-true": plain(True),
    "message-false": plain(False),
    "message-empty-object": plain({}),
    # pi throws (TypeError: Cannot read properties of null); the store reads it as no message
    "message-null": Variant(message_entry(None), ABSENT, False),
    # pi's last activity is the latest raw timestamp, Infinity: its modified is an Invalid Date
    "timestamp-1e309-as-digits": Variant(user_x(INF_DIGITS), {"role": "user", "content": "hi x", "timestamp": None},
                                         True, modified=None),
    "timestamp-past-the-last-date": Variant(user_x("10000000000000000"),
                                            {"role": "user", "content": "hi x", "timestamp": 10**16}, True,
                                            modified=None),
    "timestamp-5000-digits": Variant(user_x(LONG_DIGITS), {"role": "user", "content": "hi x", "timestamp": None},
                                     True),
    "entry-timestamp-1e309-as-digits": Variant(
        with_number(json.dumps({"type": "message", "id": "x", "parentId": "u1", "timestamp": "@N", "message": {
            "role": "user", "content": "hi x", "timestamp": 1735689601000}}), INF_DIGITS),
        {"role": "user", "content": "hi x", "timestamp": 1735689601000}, True),
    "usage-huge-floats": Variant(
        assistant({**USAGE, "cacheRead": 1.797e308, "output": 1.797e308}),
        json.loads(assistant({**USAGE, "cacheRead": 1.797e308, "output": 1.797e308}))["message"], True,
        {"tokens": {"input": 1, "output": 1.797e308, "cacheRead": 1.797e308, "cacheWrite": 0, "total": None},
         "cost": 0}, modified=ASSISTANT_AT),
    "usage-integer-beyond-64-bits": Variant(
        assistant({**USAGE, "output": 10**30}),
        {**json.loads(assistant(USAGE))["message"], "usage": {**USAGE, "output": 1e30}}, True,
        {"tokens": {"input": 1, "output": 1e30, "cacheRead": 0, "cacheWrite": 0, "total": 1e30}, "cost": 0},
        modified=ASSISTANT_AT),
    "usage-huge-cost": Variant(
        assistant({**USAGE, "cost": {**USAGE["cost"], "input": 1.797e308, "total": 1.797e308}}),
        json.loads(assistant({**USAGE, "cost": {**USAGE["cost"], "input": 1.797e308, "total": 1.797e308}}))["message"],
        True, {"tokens": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "total": 2}, "cost": 1.797e308},
        modified=ASSISTANT_AT),
    # entries of other types, and messages of other roles, with values of the wrong kind
    "compaction-tokens-1e309-as-digits": other(type="compaction", summary="s", firstKeptEntryId="u1",
                                               tokensBefore="@N"),
    "compaction-of-objects": other(type="compaction", summary={"a": 1}, firstKeptEntryId={"a": 1}, tokensBefore=[1]),
    "compaction-huge-usage": Variant(
        other(type="compaction", summary="s", firstKeptEntryId="u1", tokensBefore=1,
              usage={"input": 1.797e308, "output": 10**30, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1,
                     "cost": {"total": 1.797e308}}).line,
        stats={"tokens": {"input": 1.797e308, "output": 1e30, "cacheRead": 0, "cacheWrite": 0, "total": 1.797e308},
               "cost": 1.797e308}),
    "branch-summary-of-objects": other(type="branch_summary", summary=["a"], fromId={"a": 1}),
    "usage-entry-of-objects": other(type="usage", kind={"k": 1}, provider=["p"], model=5,
                                    usage={"input": 1.797e308, "output": 10**30}),
    "model-change-of-objects": other(type="model_change", provider={"a": 1}, modelId=["m"]),
    "thinking-level-object": other(type="thinking_level_change", thinkingLevel={"a": 1}),
    "label-of-objects": other(type="label", targetId={"a": 1}, label=["l"]),
    "session-name-object": other(type="session_info", name={"a": 1}),
    "custom-message-of-objects": other(type="custom_message", customType={"a": 1}, content={"a": 1}, display=[1]),
    "context-edit-of-objects": other(type="context_edit", targetId={"a": 1}, replacement=[1]),
    "type-object": other(type={"a": 1}),
    "type-list": other(type=["message"], message={"role": "user", "content": "t"}),
    "bash-of-objects": other(type="message", message={"role": "bashExecution", "command": {"a": 1}, "output": ["o"],
                                                      "exitCode": {"c": 1}, "timestamp": "@N"}),
    "assistant-blocks-of-objects": other(type="message", message={
        "role": "assistant", "content": [{"type": {"a": 1}}, {"type": "toolCall", "id": {"a": 1}, "name": ["n"],
                                                             "arguments": "s"}, {"type": "text", "text": {"a": 1}}, 5,
                                         None],
        "api": {"a": 1}, "provider": ["p"], "model": {"m": 1}, "usage": USAGE, "stopReason": {"s": 1}, "timestamp": 1}),
    "tool-result-of-objects": other(type="message", message={
        "role": "toolResult", "toolCallId": {"a": 1}, "toolName": ["t"],
        "content": [{"type": "image", "data": {"a": 1}, "mimeType": 5}], "isError": {"a": 1}, "timestamp": 1}),
    "system-of-objects": other(type="message", message={"role": "system", "content": "s", "sections": [1],
                                                        "toolsAdded": {"a": 1}, "toolsRemoved": "x", "timestamp": 1}),
    "usage-of-the-wrong-kinds": other(type="message", message={
        "role": "assistant", "content": [{"type": "text", "text": "ok"}], "api": "anthropic-messages",
        "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop", "timestamp": 1,
        "usage": {"input": {"a": 1}, "output": [1], "cacheRead": "7", "cacheWrite": None, "totalTokens": 2,
                  "cost": {"total": {"a": 1}, "input": "x"}}}),
    "usage-not-an-object": other(type="message", message={
        "role": "assistant", "content": [{"type": "text", "text": "ok"}], "api": "anthropic-messages",
        "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": [1, 2], "stopReason": "stop", "timestamp": 1}),
}

HEADER = {"type": "session", "version": 3, "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
U1 = user("u1", None)
U2 = user("u2", "x")


def session_id(name: str) -> str:
    return f"hv-{name}"


def session_file(directory: Path, name: str) -> Path:
    path = directory / f"{name}.jsonl"
    lines = [json.dumps({**HEADER, "id": session_id(name)}), json.dumps(U1), VARIANTS[name].line, json.dumps(U2)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def invoke(db_url: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", db_url, *args], catch_exceptions=False)


def crashed(result: Result) -> str | None:
    """Why ``result`` is a crash (a traceback, an internal error, an exit status above 2), or None."""
    text = result.stdout + result.stderr
    if "Traceback" in text or "internal error" in text or result.exit_code not in (0, 1, 2):
        return f"exit {result.exit_code}: {result.stderr.strip()[-300:]}"
    return None


@dataclass(frozen=True)
class Corpus:
    url: str
    directory: Path
    imports: dict[str, Result]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """One SQLite database holding every variant, each imported once (strictly: pi loads them all)."""
    directory = tmp_path_factory.mktemp("hostile-values")
    url = f"sqlite:///{directory / 'sessions.db'}"
    imports = {name: invoke(url, "import", str(session_file(directory, name))) for name in VARIANTS}
    return Corpus(url, directory, imports)


def expected_context(variant: Variant) -> tuple[list[Any], list[Any]] | None:
    """pi's (messages, llm) at the leaf ``u2``, when recorded here."""
    if variant.shown is UNRECORDED:
        return None
    u1, u2 = U1["message"], U2["message"]
    shown = [] if variant.shown is ABSENT else [variant.shown]
    return [u1, *shown, u2], [u1, *(shown if variant.sent else []), u2]


Check = Callable[[Result], str | None]


def read_commands(name: str, directory: Path) -> dict[str, tuple[list[str], Check]]:
    """Every read command on the variant's session, and what its output must be (None: as expected)."""
    sid = session_id(name)
    variant = VARIANTS[name]
    expected = expected_context(variant)
    source = (directory / f"{name}.jsonl").read_bytes()

    def ok(result: Result) -> str | None:
        return None if result.exit_code == 0 else f"exit {result.exit_code}: {result.stderr.strip()}"

    def context_json(result: Result) -> str | None:
        if result.exit_code != 0:
            return ok(result)
        out = json.loads(result.stdout)
        if expected is not None and (out["messages"], out["llm"]) != expected:
            return f"context --json: messages {out['messages']}, llm {out['llm']}; pi: {expected}"
        return None

    def context_text(result: Result) -> str | None:
        lines = result.stdout.splitlines()
        counts = None if expected is None else f"{len(expected[0])} messages, {len(expected[1])} sent to the model"
        if result.exit_code != 0 or (counts is not None and counts not in lines):
            return f"exit {result.exit_code}: {result.stdout[:400]} {result.stderr}"
        if "{'" in result.stdout or "['" in result.stdout:
            return f"a Python repr in the text: {result.stdout[:400]}"
        return None

    def payload(result: Result) -> str | None:
        # pi-ai builds a payload for every one; a message the builders must not take is refused, one line
        if result.exit_code == 0:
            body = json.loads(result.stdout)
            return None if isinstance(body.get("messages") or body.get("input"), list) else f"payload {body}"
        lines = result.stderr.splitlines()
        if result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: messages["):
            return None
        return f"exit {result.exit_code}: {result.stderr}"

    def text(result: Result) -> str | None:
        if result.exit_code != 0:
            return ok(result)
        return f"a Python repr in the text: {result.stdout[:400]}" if "{'" in result.stdout else None

    def validate(result: Result) -> str | None:
        return None if result.exit_code in (0, 1) else f"exit {result.exit_code}: {result.stderr}"

    def show(result: Result) -> str | None:
        if result.exit_code != 0:
            return ok(result)
        entry = json.loads(result.stdout)
        if variant.shown not in (ABSENT, UNRECORDED) and entry.get("message") != variant.shown:
            return f"show: {entry.get('message')!r}, pi {variant.shown!r}"
        return None

    def stats_json(result: Result) -> str | None:
        if result.exit_code != 0:
            return ok(result)
        out = json.loads(result.stdout)
        differ = {key: (out.get(key), pi) for key, pi in variant.stats.items() if out.get(key) != pi}
        return f"stats --json differs from pi (ours, pi): {differ}" if differ else None

    def export(result: Result) -> str | None:
        if result.exit_code != 0:
            return ok(result)
        return None if result.stdout_bytes == source else "export is not the file byte for byte"

    def listed(result: Result) -> str | None:
        if result.exit_code != 0:
            return ok(result)
        row = next((row for row in json.loads(result.stdout) if row["id"] == sid), None)
        if row is None:
            return f"{sid} not listed"
        return None if row["modified"] == variant.modified else f"modified {row['modified']}, pi {variant.modified}"

    payload_args = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5.2", "openrouter": "openai/gpt-4.1"}
    commands: dict[str, tuple[list[str], Check]] = {
        "context": (["context", sid], context_text),
        "context --json": (["context", sid, "--json"], context_json),
        "context --provider-safe --json": (["context", sid, "--provider-safe", "--json"], ok),
        **{f"context --payload {provider}": (["context", sid, "--payload", "--provider", provider, "--model", model],
                                             payload) for provider, model in payload_args.items()},
        "validate": (["validate", sid], validate),
        "validate --json": (["validate", sid, "--json"], validate),
        "tree": (["tree", sid], text),
        "tree --json": (["tree", sid, "--json"], ok),
        "show": (["show", sid, "x"], show),
        "stats": (["stats", sid], text),
        "stats --json": (["stats", sid, "--json"], stats_json),
        "export": (["export", sid], export),
        "export --html": (["export", sid, "--html"], ok),
        "search": (["search", "hi"], ok),
        "search --json": (["search", "hi", "--json"], ok),
        "ls": (["ls"], ok),
        "ls --json": (["ls", "--json"], listed),
    }
    return commands


@pytest.mark.parametrize("name", VARIANTS)
def test_every_read_command_reads_a_hostile_value_as_pi_does(corpus: Corpus, name: str) -> None:
    imported = corpus.imports[name]
    assert imported.exit_code == 0 and crashed(imported) is None, imported.stderr
    problems = []
    for label, (args, check) in read_commands(name, corpus.directory).items():
        result = invoke(corpus.url, *args)
        problem = crashed(result) or check(result)
        if problem is not None:
            problems.append(f"{label}: {problem}")
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("name", VARIANTS)
def test_a_hostile_value_imports_strictly_and_leniently_and_its_context_reads_on_both_backends(
    db_url: str, tmp_path: Path, name: str
) -> None:
    path = session_file(tmp_path, name)
    for flags in ([], ["--lenient", "--replace"]):
        result = invoke(db_url, "import", *flags, str(path))
        assert result.exit_code == 0 and crashed(result) is None, (flags, result.stderr)
        assert result.stderr == "", result.stderr  # nothing skipped: pi loads every line
    context = invoke(db_url, "context", session_id(name), "--json")
    assert crashed(context) is None and context.exit_code == 0, context.stderr
    out = json.loads(context.stdout)
    expected = expected_context(VARIANTS[name])
    assert expected is None or (out["messages"], out["llm"]) == expected
    text = invoke(db_url, "context", session_id(name))
    assert crashed(text) is None and text.exit_code == 0, text.stderr

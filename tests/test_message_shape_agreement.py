"""The validator and the models agree on what a valid message is (issue 12, item 3).

One definition: pi 1.6's types, declared once as the TypedDicts of ``sessionstore.models.wire``.
For every built-in role, the messages of the fixture files and mutations of them (each key removed,
each value replaced by every other JSON type, unknown keys added, blocks retyped) are valid for
``validate_transcript`` (no shape diagnostic) exactly when ``parse_agent_message`` accepts them.
Linkage diagnostics (tool rounds) are out of scope: they are about a transcript, not a message.
"""

from __future__ import annotations

import copy
import glob
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_type_hints

import pytest
from pydantic import ValidationError

from sessionstore.models import AgentMessagesAdapter, message_dicts, message_models
from sessionstore.models.messages import BUILTIN_MESSAGE_ADAPTER, BUILTIN_ROLES, parse_agent_message
from sessionstore.models.roles import role_of
from sessionstore.models.wire import MESSAGE_DICTS
from sessionstore.models.wire_shape import MESSAGE_FIELDS
from sessionstore.validate import SHAPE_CODES, validate_transcript

ROOT = Path(__file__).resolve().parent.parent
Json = dict[str, Any]

KNOWN_DIFFERENCES: dict[str, str] = {}
"""Mutation kinds on which the two may disagree, each with its reason. Empty: they agree on all."""

WRONG_VALUES: tuple[Any, ...] = (None, True, 0, 1.5, "x", [], {}, [{"type": "text", "text": "t"}])
"""One value of every JSON type (and a block list), to replace each value with."""

USAGE: Json = {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
               "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.3}}

EVERY_KEY: list[Json] = [
    {"role": "system", "content": [{"type": "text", "text": "be brief", "textSignature": "s"}],
     "sections": {"style": "terse", "old": None},
     "toolsAdded": [{"name": "ls", "description": "list", "parameters": {"type": "object"}}],
     "toolsRemoved": [{"name": "rm"}], "timestamp": 1},
    {"role": "system", "content": "base prompt", "sections": None, "toolsAdded": None, "toolsRemoved": None,
     "timestamp": 1},
    {"role": "user", "content": [{"type": "text", "text": "look"},
                                 {"type": "image", "data": "iVBO", "mimeType": "image/png"}], "timestamp": 2},
    {"role": "assistant",
     "content": [{"type": "thinking", "thinking": "hm", "thinkingSignature": "sig", "redacted": False},
                 {"type": "text", "text": "ok"},
                 {"type": "toolCall", "id": "c1", "name": "ls", "arguments": {"path": "."},
                  "thoughtSignature": "t", "namespace": "fs", "argumentsError": "e"}],
     "api": "a", "provider": "p", "model": "m", "responseModel": "m2", "responseId": "r",
     "providerThinkingLevel": "high", "thinkingLevel": "high", "diagnostics": [], "usage": USAGE,
     "stopReason": "toolUse", "deferred": {"id": "d"}, "errorMessage": "boom", "rawStopReason": "tool_use",
     "endTurn": False, "timestamp": 3, "durationMs": 12.5},
    {"role": "toolResult", "toolCallId": "c1", "toolName": "ls",
     "content": [{"type": "text", "text": "a"}, {"type": "image", "data": "x", "mimeType": "image/png"}],
     "details": {"ui": [1]}, "usage": USAGE, "nestedCalls": {"calls": [], "complete": True}, "isError": False,
     "timestamp": 4, "durationMs": 3},
    {"role": "bashExecution", "command": "ls", "output": "a", "exitCode": 0, "cancelled": False,
     "truncated": True, "fullOutputPath": "/tmp/o", "timestamp": 5, "excludeFromContext": True},
    {"role": "bashExecution", "command": "sleep", "output": "", "exitCode": None, "cancelled": True,
     "truncated": False, "timestamp": 5},
    {"role": "custom", "customType": "note", "content": "remember", "display": True, "details": None,
     "timestamp": 6},
    {"role": "branchSummary", "summary": "tried X", "fromId": None, "timestamp": 7},
    {"role": "compactionSummary", "summary": "so far", "tokensBefore": 1234.0, "timestamp": 8},
]
"""A message of every built-in role holding every key its TypedDict declares."""


def fixture_messages() -> list[Json]:
    """The distinct messages of built-in roles in every fixture file (valid or not)."""
    seen: dict[str, Json] = {}
    for path in sorted(glob.glob(str(ROOT / "fixtures" / "**" / "*.jsonl"), recursive=True)):
        for line in Path(path).read_bytes().splitlines():
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):  # the invalid fixtures hold broken lines
                continue
            message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "message" else None
            if isinstance(message, dict) and role_of(message) in BUILTIN_ROLES:
                seen.setdefault(json.dumps(message, sort_keys=True), message)
    return list(seen.values())


FIXTURE_MESSAGES = fixture_messages()


def shape_ok(message: Json) -> bool:
    return not [d for d in validate_transcript([message]) if d.code in SHAPE_CODES]


def model_ok(message: Json) -> bool:
    try:
        parse_agent_message(message)
    except ValidationError:
        return False
    return True


def representatives() -> list[Json]:
    """Per role, the fixture messages of distinct key sets (the bases of mutation), and EVERY_KEY."""
    chosen: dict[tuple[str, ...], Json] = {}
    for message in FIXTURE_MESSAGES:
        blocks = message.get("content") if isinstance(message.get("content"), list) else []
        signature = (str(message.get("role")), *sorted(message),
                     *sorted({json.dumps(sorted(b)) for b in blocks if isinstance(b, dict)}))
        chosen.setdefault(signature, message)
    return [*EVERY_KEY, *chosen.values()]


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key or index path inside ``value`` (tool arguments and details: their top only)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            if key not in ("arguments", "details", "parameters", "data") or not path:
                yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):
            yield (*path, i)
            yield from _paths(item, (*path, i))


def _set(message: Json, path: tuple[Any, ...], value: Any, *, delete: bool = False) -> Json:
    out = copy.deepcopy(message)
    parent: Any = out
    for step in path[:-1]:
        parent = parent[step]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(value)
    return out


def mutations(message: Json) -> Iterator[tuple[str, Json]]:
    """``(description, mutated message)`` pairs. ``role`` itself is never changed: it picks the rule
    (an unknown role is kept by the models and reported as UNKNOWN_ROLE, by design)."""
    yield "unchanged", message
    yield "unknown key added", {**message, "someFutureField": {"x": [1]}}
    for path in _paths(message):
        if path == ("role",):
            continue
        where = ".".join(map(str, path))
        if isinstance(path[-1], str):
            yield f"{where} removed", _set(message, path, None, delete=True)
        for wrong in WRONG_VALUES:
            yield f"{where} = {json.dumps(wrong)}", _set(message, path, wrong)
        parent = message
        for step in path[:-1]:
            parent = parent[step]
        if isinstance(parent, dict) and path[-1] == "type":
            for other in ("text", "thinking", "image", "toolCall", "tool_use"):
                yield f"{where} = {other!r}", _set(message, path, other)
        if isinstance(parent, dict) and len(path) > 1:
            yield f"{'.'.join(map(str, path[:-1]))} unknown key added", _set(message, (*path[:-1], "extraKey"), 1)
    declared = {f.key for f in MESSAGE_FIELDS[message["role"]]}
    for key in sorted(declared - set(message)):
        for wrong in WRONG_VALUES:
            yield f"absent {key} = {json.dumps(wrong)}", {**message, key: wrong}


def test_the_fixtures_hold_messages_of_every_built_in_role() -> None:
    assert {m["role"] for m in FIXTURE_MESSAGES} == BUILTIN_ROLES
    assert {m["role"] for m in EVERY_KEY} == BUILTIN_ROLES


@pytest.mark.parametrize("role", sorted(BUILTIN_ROLES))
def test_the_validator_and_the_models_agree_on_every_fixture_message_and_its_mutations(role: str) -> None:
    disagreements: list[str] = []
    checked = 0
    for base in (m for m in representatives() if m["role"] == role):
        for description, message in mutations(base):
            checked += 1
            valid, parsed = shape_ok(message), model_ok(message)
            if valid != parsed and description not in KNOWN_DIFFERENCES:
                side = "validator accepts, models refuse" if valid else "models accept, validator refuses"
                disagreements.append(f"{description}: {side}: {json.dumps(message)[:300]}")
    assert checked > 50
    assert disagreements == [], "\n".join(disagreements[:20])


@pytest.mark.parametrize("message", FIXTURE_MESSAGES[:: max(1, len(FIXTURE_MESSAGES) // 400)],
                         ids=lambda m: str(m.get("role")))
def test_each_fixture_message_is_valid_for_both_or_for_neither(message: Json) -> None:
    assert shape_ok(message) == model_ok(message)


@pytest.mark.parametrize("role", sorted(BUILTIN_ROLES))
def test_each_model_declares_the_keys_its_typed_dict_declares(role: str) -> None:
    """The static half of the agreement: required keys equal, every checked key a model field."""
    model = BUILTIN_MESSAGE_ADAPTER.validate_python(next(m for m in EVERY_KEY if m["role"] == role)).__class__
    by_alias = {(info.alias or name): info for name, info in model.model_fields.items()}
    fields = {f.key: f for f in MESSAGE_FIELDS[role]}
    assert set(get_type_hints(MESSAGE_DICTS[role])) == set(fields)
    required = {key for key, info in by_alias.items() if info.is_required()}
    assert required == {key for key, f in fields.items() if f.required and key != "role"}
    checked = {key for key, f in fields.items() if not f.opaque}
    assert checked - set(by_alias) == set(), "keys the validator checks and the model does not declare"
    assert set(by_alias) - set(fields) == set(), "model fields pi's types do not declare"


def test_the_reported_message_of_the_review_is_refused_by_both() -> None:
    bare = {"role": "user", "content": "hi"}
    assert [d.message for d in validate_transcript([bare])] == ["messages[0].timestamp: required field is missing"]
    assert not model_ok(bare)


def test_typed_messages_give_back_the_wire_data_they_were_made_of() -> None:
    valid = [m for m in FIXTURE_MESSAGES if model_ok(m)] + EVERY_KEY
    models = message_models(valid)
    assert message_dicts(models) == valid
    assert AgentMessagesAdapter.dump_python(models, mode="json") == valid
    assert [type(m).__name__ for m in models[-len(EVERY_KEY):]][:3] == ["SystemMessage", "SystemMessage", "UserMessage"]


def test_the_adapter_refuses_what_the_validator_reports() -> None:
    with pytest.raises(ValidationError, match="timestamp"):
        message_models([{"role": "user", "content": "hi"}])


def test_messages_of_unknown_roles_become_unknown_messages_and_keep_every_key() -> None:
    (model,) = message_models([{"role": "reviewNote", "score": 0.5}])
    assert type(model).__name__ == "UnknownMessage"
    assert model.to_wire() == {"role": "reviewNote", "score": 0.5}


@pytest.mark.parametrize("role", sorted(BUILTIN_ROLES))
def test_the_compiled_rules_accept_a_message_only_when_the_full_rules_find_nothing(
    role: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The validator's fast path (``validate._fast``) answers "nothing to report" for plain data;
    every message it accepts must be one the full rules accept, and it must accept the valid ones."""
    from sessionstore.validate import _shape
    from sessionstore.validate._fast import plainly_valid

    accepted = wrongly = valid = 0
    for base in (m for m in representatives() if m["role"] == role):
        for description, message in mutations(base):
            fast = plainly_valid(message, [])
            with monkeypatch.context() as patched:
                patched.setattr(_shape, "plain_calls", lambda *_args: None)
                assert _shape.plain_verdict(message) is None  # (the full rules read it: not a vacuous comparison)
                full = shape_ok(message)
            accepted += fast
            valid += full
            if fast and not full:
                wrongly += 1
                print(description, json.dumps(message)[:300])
    assert wrongly == 0
    assert accepted == valid > 0

"""One home per entry kind (issue 25): each kind is declared once, in its module of
``sessionstore.models.kinds``, and every list of kinds is derived from those declarations. These tests
fail when a kind is missing from any of them, or when a kind's parts disagree.

A new kind also needs a sample in :data:`SAMPLES` below: the round trip through the one append path
(library, CLI), the tolerant reading, the tree's description and the export is checked with it."""

from __future__ import annotations

import io
import json
import typing
from typing import Any, Literal, get_args, get_type_hints

import pytest

import sessionstore.models as models_package
from sessionstore import SessionStore
from sessionstore.cli.render import describe_entry
from sessionstore.models import entries as entry_models
from sessionstore.models import kinds
from sessionstore.models.kind_names import kind_names
from sessionstore.models.wire_shape import wire_fields
from tests.builders import user
from tests.test_cli import run  # noqa: F401  (the fixture)

SAMPLES: dict[str, dict[str, Any]] = {
    "message": {"type": "message", "message": user("hi")},
    "context_edit": {"type": "context_edit", "targetId": "FIRST", "replacement": {"content": "shorter"}},
    "usage": {"type": "usage", "kind": "cache_warm", "provider": "p", "model": "m", "usage": {"input": 3}},
    "thinking_level_change": {"type": "thinking_level_change", "thinkingLevel": "high"},
    "model_change": {"type": "model_change", "provider": "p", "modelId": "m"},
    "compaction": {"type": "compaction", "summary": "s", "firstKeptEntryId": "FIRST", "tokensBefore": 10},
    "branch_summary": {"type": "branch_summary", "fromId": "FIRST", "summary": "left"},
    "custom": {"type": "custom", "customType": "ext", "data": {"k": [1]}},
    "custom_message": {"type": "custom_message", "customType": "ext", "content": "note", "display": True},
    "label": {"type": "label", "targetId": "FIRST", "label": "start"},
    "session_info": {"type": "session_info", "name": "the work"},
}
"""One well-formed entry object of each kind (``FIRST``: the id of a user message appended before)."""


def test_each_kind_module_declares_the_kind_of_its_name_and_every_list_is_derived() -> None:
    names = [kind.name for kind in kinds.KINDS]
    assert len(set(names)) == len(names)
    assert set(kind_names()) == set(names) == kinds.ENTRY_TYPES == set(kinds.APPENDABLE_TYPES)
    for name in kind_names():
        module = __import__(f"sessionstore.models.kinds.{name}", fromlist=["KIND"])
        assert module.KIND.name == name, f"kinds/{name}.py declares {module.KIND.name!r}"
    assert set(SAMPLES) == set(names), "a kind needs a sample in tests/test_entry_kinds.py"


def test_the_typed_dict_union_is_the_kinds_typed_dicts() -> None:
    """``SessionEntryDict`` is written out for type checkers; it must name each kind's TypedDict."""
    assert set(get_args(kinds.SessionEntryDict)) == {kind.typed_dict for kind in kinds.KINDS}


@pytest.mark.parametrize("kind", kinds.KINDS, ids=lambda k: k.name)
def test_a_kinds_model_and_typed_dict_agree(kind: kinds.EntryKind) -> None:
    hints = get_type_hints(kind.typed_dict)
    assert hints["type"] == Literal[kind.name]
    assert kind.model.model_fields["type"].default == kind.name
    model_keys = {field.alias or name for name, field in kind.model.model_fields.items()}
    assert model_keys == set(hints), f"{kind.name}: model {sorted(model_keys)} vs TypedDict {sorted(hints)}"
    required = {row.key for row in wire_fields(kind.typed_dict) if row.required}
    assert {"id", "parentId", "timestamp", "type"} <= required


@pytest.mark.parametrize("kind", kinds.KINDS, ids=lambda k: k.name)
def test_each_kind_is_exported_and_parsed_to_its_model(kind: kinds.EntryKind) -> None:
    assert getattr(models_package, kind.typed_dict.__name__) is kind.typed_dict
    assert getattr(entry_models, kind.model.__name__) is kind.model
    sample = {"id": "e1", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
              **{k: ("e0" if v == "FIRST" else v) for k, v in SAMPLES[kind.name].items()}}
    assert type(kinds.parse_entry(sample)) is kind.model
    assert kinds.entry_problems(sample) == []
    assert describe_entry(sample) != kind.name, f"the tree has no description of a {kind.name}"


@pytest.mark.parametrize("kind", kinds.KINDS, ids=lambda k: k.name)
def test_the_tolerant_reading_follows_the_typed_dict(kind: kinds.EntryKind) -> None:
    """A required field missing, and a field of the wrong JSON type, are each a problem named by key."""
    sample = {"id": "e1", "parentId": None, "timestamp": "t", **SAMPLES[kind.name]}
    for row in kind.lenient:
        if row.required:
            missing = {k: v for k, v in sample.items() if k != row.key}
            assert f"{row.key} is missing" in kinds.entry_problems(missing)
        wrong = True if "boolean" not in row.kind.types else "yes"
        assert any(p.startswith(f"{row.key} is ") for p in kinds.entry_problems({**sample, row.key: wrong}))


def test_every_kind_goes_through_the_one_append_path_and_back(tmp_path: Any) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        sid = store.create_session(cwd="/w")
        first = store.append_message(sid, user("first"))
        ids = {}
        for name, sample in SAMPLES.items():
            entry = {k: (first if v == "FIRST" else v) for k, v in sample.items()}
            ids[name] = store.append_entry(sid, entry)
        for name, entry_id in ids.items():
            stored = dict(store.entry(sid, entry_id))
            assert stored["type"] == name and kinds.entry_problems(stored) == []
        out = io.BytesIO()
        store.export_jsonl(sid, out)
        lines = [json.loads(line) for line in out.getvalue().splitlines()[1:]]
        assert [line["type"] for line in lines[1:]] == list(SAMPLES)


@pytest.mark.parametrize("name", list(SAMPLES))
def test_the_cli_append_maps_its_type_to_the_one_call(name: str, run: Any) -> None:  # noqa: F811
    sid = run("new", "--cwd", "/w").stdout.strip()
    first = run("append", sid, input=json.dumps(user("first"))).stdout.strip()
    sample = {k: (first if v == "FIRST" else v) for k, v in SAMPLES[name].items() if k != "type"}
    data = sample["message"] if name == "message" else sample
    result = run("append", sid, "--type", name, input=json.dumps(data))
    assert result.exit_code == 0, result.stderr
    assert json.loads(run("show", sid, result.stdout.strip()).stdout)["type"] == name


def test_a_value_of_the_wrong_json_type_is_refused_not_converted(tmp_path: Any) -> None:
    """pydantic's lax mode would read "5" as 5 and "yes" as true, and the entry is stored as given."""
    with SessionStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        sid = store.create_session(cwd="/w")
        first = store.append_message(sid, user("first"))
        for bad in ({"type": "custom_message", "customType": "x", "content": "c", "display": "yes"},
                    {"type": "compaction", "summary": "s", "firstKeptEntryId": first, "tokensBefore": "5"}):
            with pytest.raises(Exception, match="valid"):
                store.append_entry(sid, bad)
        assert len(store.entries(sid)) == 1


def test_the_entry_models_module_is_the_kinds_view() -> None:
    exported = {name for name in entry_models.__all__ if name.endswith("Entry") and name != "UnknownEntry"}
    assert exported == {kind.model.__name__ for kind in kinds.KINDS} | {"SessionEntry"}
    assert typing.get_origin(kinds.SessionEntry) is typing.Annotated

"""Validation accepts anything and never raises: hostile objects become diagnostics."""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NoReturn

import pytest

from sessionstore.validate import ERROR_CODES, Diagnostic, _linkage, _shape, validate_transcript


class Boom(Exception):
    pass


def boom(*_: object, **__: object) -> NoReturn:
    raise Boom("boom")


class Hostile:
    """Every protocol an inspector might touch raises."""

    __getattr__ = boom
    __eq__ = boom
    __hash__ = boom
    __len__ = boom
    __iter__ = boom
    __getitem__ = boom
    __bool__ = boom
    __repr__ = boom
    __str__ = boom

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        raise Boom("__class__")

    @property
    def model_dump(self) -> NoReturn:
        raise Boom("model_dump")


class EvilStr(str):
    """A real string whose comparison, hashing and conversion raise."""

    __eq__ = boom
    __hash__ = boom
    __str__ = boom


class RaisingMapping(Mapping[Any, Any]):
    """A mapping whose item access raises for ``raise_on`` keys, and whose iteration always raises."""

    def __init__(self, data: dict[str, Any], raise_on: frozenset[str] = frozenset()) -> None:
        self.data = data
        self.raise_on = raise_on

    def __getitem__(self, key: Any) -> Any:
        if key in self.raise_on:
            raise Boom(f"no {key} for you")
        return self.data[key]

    __iter__ = boom
    __len__ = boom
    keys = boom
    items = boom
    values = boom


class RaisingSequence(Sequence[Any]):
    def __init__(self, items: list[Any], *, fail_at: int | None = None, length: Any = None) -> None:
        self.items = items
        self.fail_at = fail_at
        self.length = length

    def __len__(self) -> int:
        if self.length is not None:
            return self.length  # type: ignore[no-any-return]
        return len(self.items)

    def __getitem__(self, index: Any) -> Any:
        if index == self.fail_at:
            raise Boom(f"item {index}")
        return self.items[index]


def user(content: Any = "hi") -> dict[str, Any]:
    return {"role": "user", "content": content, "timestamp": 1}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks), "api": "a", "provider": "p", "model": "m", "usage": {},
            "stopReason": "stop", "timestamp": 2}


def call(call_id: Any = "c1", arguments: Any = None) -> dict[str, Any]:
    return {
        "type": "toolCall",
        "id": call_id,
        "name": "read",
        "arguments": {} if arguments is None else arguments,
    }


def result(call_id: Any = "c1") -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "read", "content": [], "isError": False,
            "timestamp": 3}


def findings(diagnostics: tuple[Diagnostic, ...]) -> list[tuple[str, int | None]]:
    return [(d.code, d.message_index) for d in diagnostics]


class TestNotEvenData:
    @pytest.mark.parametrize(
        "value", [None, 0, -1, 3.5, math.nan, b"", b"abc", bytearray(b"x"), True, object()]
    )
    def test_scalars_and_bytes_are_not_transcripts(self, value: object) -> None:
        assert findings(validate_transcript(value)) == [("TRANSCRIPT_NOT_A_LIST", None)]

    def test_scalars_and_bytes_are_not_messages(self) -> None:
        transcript = [None, 0, b"bytes", 2.5, True, object()]
        assert findings(validate_transcript(transcript)) == [("MESSAGE_NOT_A_MAPPING", i) for i in range(6)]

    def test_a_fully_hostile_object_is_reported_wherever_it_appears(self) -> None:
        hostile = Hostile()
        assert findings(validate_transcript(hostile)) == [("TRANSCRIPT_NOT_A_LIST", None)]
        assert findings(validate_transcript([hostile])) == [("UNREADABLE_VALUE", 0)]
        assert findings(validate_transcript([{"role": hostile}])) == [("INVALID_MESSAGE", 0)]
        assert findings(validate_transcript([user([hostile])])) == [("UNREADABLE_VALUE", 0)]
        assert findings(validate_transcript([user(hostile)])) == [("INVALID_MESSAGE", 0)]
        assert findings(validate_transcript([assistant(call(arguments={"x": hostile})), result()])) == [
            ("TOOL_ARGUMENTS_NOT_OBJECT", 0)
        ]
        assert findings(validate_transcript([result(hostile)])) == [("INVALID_TOOL_RESULT", 0)]

    def test_the_hostile_object_as_entry_ids_or_known_roles_is_ignored(self) -> None:
        diagnostics = validate_transcript([result()], entry_ids=Hostile(), known_roles=Hostile())  # type: ignore[arg-type]
        assert findings(diagnostics) == [("ORPHAN_TOOL_RESULT", 0)]
        assert diagnostics[0].entry_id is None


class TestRaisingAccess:
    def test_a_property_that_raises_is_unreadable(self) -> None:
        class Model:
            @property
            def model_dump(self) -> NoReturn:
                raise Boom("lazy field failed")

        (diagnostic,) = validate_transcript([Model()])
        assert diagnostic.code == "UNREADABLE_VALUE"
        assert (
            diagnostic.message
            == "messages[0]: reading the value raised Boom: lazy field failed (in model_dump)"
        )

    def test_a_model_dump_that_raises_is_unreadable(self) -> None:
        class Model:
            def model_dump(self, **_: object) -> NoReturn:
                raise Boom("cannot serialise")

        (diagnostic,) = validate_transcript([Model()])
        assert diagnostic.code == "UNREADABLE_VALUE"
        assert "Boom: cannot serialise (in model_dump)" in diagnostic.message

    def test_getitem_raising_for_one_field_names_that_field(self) -> None:
        message = RaisingMapping({"role": "user", "content": "hi", "timestamp": 1}, raise_on=frozenset({"content"}))
        (diagnostic,) = validate_transcript([message])
        assert diagnostic.code == "UNREADABLE_VALUE"
        assert diagnostic.message == "messages[0].content: reading the value raised Boom: no content for you"

    def test_getitem_raising_for_every_field_stops_at_the_role(self) -> None:
        message = RaisingMapping({}, raise_on=frozenset({"role", "content"}))
        assert findings(validate_transcript([message])) == [("UNREADABLE_VALUE", 0)]

    def test_a_mapping_without_iteration_is_still_readable_by_key(self) -> None:
        message = RaisingMapping({"role": "user", "content": "hi", "timestamp": 1})
        assert validate_transcript([message]) == ()

    def test_arguments_whose_keys_len_and_iteration_raise_are_unreadable_without_cascades(self) -> None:
        arguments = RaisingMapping({"path": "x"})
        diagnostics = validate_transcript([assistant(call(arguments=arguments)), result()])
        assert findings(diagnostics) == [("UNREADABLE_VALUE", 0)]
        assert diagnostics[0].message.startswith(
            "messages[0].content[0].arguments: reading the value raised Boom"
        )
        assert findings(validate_transcript([assistant(call(arguments=arguments))])) == [
            ("UNREADABLE_VALUE", 0)
        ]

    def test_a_sequence_whose_len_raises_is_unreadable(self) -> None:
        assert findings(validate_transcript(RaisingSequence([], length=-1))) == [("UNREADABLE_VALUE", None)]
        assert findings(validate_transcript(RaisingSequence([], length=2**80))) == [
            ("UNREADABLE_VALUE", None)
        ]

    def test_a_sequence_whose_getitem_raises_keeps_what_came_before(self) -> None:
        transcript = RaisingSequence([result("x"), user(), user()], fail_at=1)
        assert findings(validate_transcript(transcript)) == [
            ("UNREADABLE_VALUE", 1),
            ("ORPHAN_TOOL_RESULT", 0),
        ]

    def test_a_list_subclass_with_raising_protocols_is_unreadable_not_fatal(self) -> None:
        class BadList(list[Any]):
            __len__ = boom
            __iter__ = boom
            __getitem__ = boom

        assert findings(validate_transcript(BadList([user()]))) == [("UNREADABLE_VALUE", None)]
        assert findings(validate_transcript([user(BadList([{"type": "text", "text": "x"}]))])) == [
            ("UNREADABLE_VALUE", 0)
        ]

    def test_a_dict_key_whose_equality_raises_makes_the_field_unreadable(self) -> None:
        class Collider:
            def __hash__(self) -> int:
                return hash("role")

            __eq__ = boom

        message = {Collider(): 1, "content": "hi"}
        assert findings(validate_transcript([message])) == [("UNREADABLE_VALUE", 0)]

    def test_an_exception_whose_str_raises_is_still_described(self) -> None:
        class Unprintable(Exception):
            __str__ = boom

        class Model:
            def model_dump(self, **_: object) -> NoReturn:
                raise Unprintable()

        (diagnostic,) = validate_transcript([Model()])
        assert diagnostic.message == "messages[0]: reading the value raised Unprintable (in model_dump)"

    def test_a_type_whose_name_cannot_be_read_is_called_object(self) -> None:
        class Meta(type):
            @property
            def __name__(cls) -> str:  # type: ignore[override]
                raise Boom("name")

        class Nameless(metaclass=Meta):
            pass

        (diagnostic,) = validate_transcript([Nameless()])
        assert diagnostic.message == "messages[0]: expected a message mapping, got object"

    def test_interrupts_raised_by_a_getter_are_not_swallowed(self) -> None:
        class Interrupting(Mapping[str, Any]):
            def __getitem__(self, key: str) -> Any:
                raise KeyboardInterrupt

            __iter__ = boom
            __len__ = boom

        with pytest.raises(KeyboardInterrupt):
            validate_transcript([Interrupting()])


class TestStringsThatMisbehave:
    def test_str_subclasses_with_raising_equality_are_read_as_their_text(self) -> None:
        transcript = [
            {**assistant(call(EvilStr("c1"))), "role": EvilStr("assistant")},
            {**result(EvilStr("c1")), "role": EvilStr("toolResult")},
        ]
        assert validate_transcript(transcript, entry_ids=[EvilStr("e0"), "e1"]) == ()
        diagnostics = validate_transcript(transcript[:1], entry_ids=[EvilStr("e0")])
        assert [(d.code, d.entry_id) for d in diagnostics] == [("MISSING_TOOL_RESULT", "e0")]
        assert type(diagnostics[0].entry_id) is str

    def test_an_unknown_role_is_quoted_and_shortened(self) -> None:
        (diagnostic,) = validate_transcript([{"role": "x" * 10_000}])
        assert diagnostic.code == "UNKNOWN_ROLE"
        assert len(diagnostic.message) < 200


class TestReadOnce:
    def test_each_field_is_read_once_even_when_it_changes_between_reads(self) -> None:
        reads: Counter[str] = Counter()

        class Shifty(Mapping[str, Any]):
            """Says ``assistant`` on the first read of ``role`` and ``toolResult`` after that."""

            def __getitem__(self, key: str) -> Any:
                reads[key] += 1
                if key == "role":
                    return "assistant" if reads[key] == 1 else "toolResult"
                if key == "content":
                    return [call("c1")] if reads[key] == 1 else 42
                return base[key]

            __iter__ = boom
            __len__ = boom

        base = assistant()
        diagnostics = validate_transcript([Shifty()])
        assert findings(diagnostics) == [("MISSING_TOOL_RESULT", 0)]
        assert reads["role"] == reads["content"] == 1
        assert set(reads.values()) == {1} and set(base) <= set(reads)

    def test_sequences_are_measured_once_and_each_item_read_once(self) -> None:
        reads: Counter[object] = Counter()

        class Growing(Sequence[Any]):
            def __len__(self) -> int:
                reads["len"] += 1
                return 2 + reads["len"]

            def __getitem__(self, index: Any) -> Any:
                reads[index] += 1
                return user()

        assert validate_transcript(Growing()) == ()
        assert reads == {"len": 1, 0: 1, 1: 1, 2: 1}

    def test_model_dump_is_called_once(self) -> None:
        calls: list[dict[str, object]] = []

        class Model:
            def model_dump(self, **kwargs: object) -> dict[str, Any]:
                calls.append(kwargs)
                return user() if len(calls) == 1 else {"role": 5}

        assert validate_transcript([Model()]) == ()
        assert calls == [{"by_alias": True}]


class TestCyclesAndDepth:
    def test_a_transcript_that_contains_itself_is_reported_not_followed(self) -> None:
        transcript: list[Any] = []
        transcript.append(transcript)
        assert findings(validate_transcript(transcript)) == [("MESSAGE_NOT_A_MAPPING", 0)]

    def test_a_message_whose_content_contains_the_message_is_a_bad_block(self) -> None:
        message: dict[str, Any] = {"role": "user", "timestamp": 1}
        message["content"] = [message]
        assert findings(validate_transcript([message])) == [("INVALID_CONTENT_BLOCK", 0)]

    def test_deeply_nested_arguments_are_walked_without_recursion(self) -> None:
        nested: Any = "leaf"
        for index in range(100_000):
            nested = [nested] if index % 2 else {"k": nested}
        started = time.perf_counter()
        assert validate_transcript([assistant(call(arguments={"deep": nested})), result()]) == ()
        assert time.perf_counter() - started < 5

    def test_a_problem_deep_inside_arguments_gets_a_shortened_path(self) -> None:
        nested: Any = math.inf
        for _ in range(50_000):
            nested = [nested]
        (diagnostic,) = validate_transcript([assistant(call(arguments={"deep": nested})), result()])
        assert diagnostic.code == "TOOL_ARGUMENTS_NOT_OBJECT"
        assert diagnostic.message.startswith("messages[0].content[0].arguments.deep[0][0]")
        assert "more)" in diagnostic.message
        assert diagnostic.message.endswith("[0][0]: expected a finite number, got inf")
        assert len(diagnostic.message) < 300

    def test_a_deeply_nested_transcript_is_one_bad_message(self) -> None:
        nested: Any = []
        for _ in range(100_000):
            nested = [nested]
        assert findings(validate_transcript(nested)) == [("MESSAGE_NOT_A_MAPPING", 0)]

    def test_generators_inside_a_transcript_are_never_consumed(self) -> None:
        def generator() -> Iterator[Any]:
            raise AssertionError("consumed")
            yield  # pragma: no cover

        transcript = [user(generator()), assistant(call(arguments={"lazy": generator()})), result()]
        assert findings(validate_transcript(transcript)) == [
            ("INVALID_MESSAGE", 0),
            ("TOOL_ARGUMENTS_NOT_OBJECT", 1),
        ]


class TestSafetyNet:
    def test_a_bug_in_linkage_becomes_a_diagnostic_after_the_shape_findings(self, monkeypatch: Any) -> None:
        monkeypatch.setattr(_linkage, "link_tool_rounds", boom)
        diagnostics = validate_transcript([{"role": "user", "timestamp": 1}, result()])
        assert findings(diagnostics) == [("INVALID_MESSAGE", 0), ("VALIDATION_INTERNAL_ERROR", None)]
        assert diagnostics[-1].message == "validation stopped: Boom: boom"

    def test_a_bug_in_a_shape_rule_keeps_the_findings_made_before_it(self, monkeypatch: Any) -> None:
        original = _shape._scan_message

        def fail_on_second(scan: Any, index: int, raw: object) -> None:
            if index == 1:
                boom()
            original(scan, index, raw)

        monkeypatch.setattr(_shape, "_scan_message", fail_on_second)
        diagnostics = validate_transcript([{"role": "user", "timestamp": 1}, user(), user()])
        assert findings(diagnostics) == [("INVALID_MESSAGE", 0), ("VALIDATION_INTERNAL_ERROR", None)]


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    pools: list[Any] = [
        None, True, 0, -7, 2.5, math.nan, math.inf, "", "text", "user", "assistant", "toolResult", "toolCall",
        "c1", "c2", b"x", object(), Hostile(), EvilStr("c1"), {1, 2},
    ]  # fmt: skip
    if depth > 3 or rng.random() < 0.5:
        return rng.choice(pools)
    if rng.random() < 0.5:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = [
        "role",
        "content",
        "type",
        "id",
        "name",
        "arguments",
        "toolCallId",
        "toolName",
        "isError",
        "text",
        1,
    ]
    return {rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _mutate(rng: random.Random, value: Any) -> Any:
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(list(value))
        copy = dict(value)
        if rng.random() < 0.3:
            del copy[key]
        else:
            copy[key] = _mutate(rng, value[key]) if rng.random() < 0.6 else _random_value(rng)
        return copy
    if isinstance(value, list) and value and rng.random() < 0.7:
        copy_list = list(value)
        index = rng.randrange(len(copy_list))
        copy_list[index] = _mutate(rng, copy_list[index])
        if rng.random() < 0.2:
            rng.shuffle(copy_list)
        return copy_list
    return _random_value(rng)


def test_fuzzed_transcripts_never_raise_and_never_hit_the_safety_net() -> None:
    rng = random.Random(20250601)
    base = [
        user(),
        assistant({"type": "text", "text": "x"}, call("c1", {"a": [1, {"b": None}]}), call("c2")),
        result("c1"),
        result("c2"),
        {"role": "bashExecution", "command": "ls", "output": ""},
    ]
    seen: Counter[str] = Counter()
    for _ in range(3_000):
        transcript = _mutate(rng, base)
        diagnostics = validate_transcript(transcript)
        assert type(diagnostics) is tuple
        for diagnostic in diagnostics:
            assert type(diagnostic) is Diagnostic
            assert diagnostic.code in ERROR_CODES and diagnostic.code != "VALIDATION_INTERNAL_ERROR"
            seen[diagnostic.code] += 1
    assert len(seen) >= 8  # the fuzzer reaches most codes, not just one

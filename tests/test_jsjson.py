"""js_dumps writes what JavaScript's JSON.stringify writes for the data pi would have read.

The plain tests run everywhere; the differential ones hand the same data to node's real
JSON.stringify and skip when node is not installed."""

from __future__ import annotations

import io
import json
import math
import random
import re
import shutil
import struct
import subprocess
from typing import Any

import pytest

from sessionstore.wire.jsjson import js_dumpb, js_dumpb_nested, js_dumps, js_item, newline_at
from tests.requirements import NODE as NODE_PART

NODE = shutil.which("node")
needs_node = pytest.mark.requires(NODE_PART)  # node's JSON.stringify to compare with


# -- plain tests ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "text"),
    [
        (12345678901234567890, "12345678901234567000"),
        (2**53, "9007199254740992"),
        (2**53 + 1, "9007199254740992"),
        (-(2**60), "-1152921504606847000"),
        (10**21, "1e+21"),
        (10**400, "null"),
        (100.0, "100"),
        (-0.0, "0"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (3e-6, "0.000003"),
        (1.5e-5, "0.000015"),
        (1.5e300, "1.5e+300"),
        (1e16, "10000000000000000"),
        (1e21, "1e+21"),
        (0.1, "0.1"),
        (5e-324, "5e-324"),
        (float("nan"), "null"),
        (float("inf"), "null"),
        (float("-inf"), "null"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
    ],
)
def test_numbers_and_constants_print_as_javascript_prints_them(value: Any, text: str) -> None:
    assert js_dumps(value) == text
    assert js_dumps([value]) == f"[{text}]"
    assert js_dumps({"k": [value]}, indent=2) == f'{{\n  "k": [\n    {text}\n  ]\n}}'


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ('a"b\\c', r'"a\"b\\c"'),
        ("\b\f\n\r\t", r'"\b\f\n\r\t"'),
        ("\x00\x01\x1b\x1f", r'"\u0000\u0001\u001b\u001f"'),
        ("\x7f\x80\u2028\u2029é", '"\x7f\x80\u2028\u2029é"'),
        ("\ud800", r'"\ud800"'),
        ("x\udfffy", r'"x\udfffy"'),
        ("\udc00\ud800", r'"\udc00\ud800"'),
        ("\ud83d\ude00", '"\U0001f600"'),
        ("\U0001f600", '"\U0001f600"'),
        ("\ud83d\ude00\ud83d", '"\U0001f600\\ud83d"'),
    ],
)
def test_strings_are_escaped_as_json_stringify_escapes_them(value: str, text: str) -> None:
    assert js_dumps(value) == text
    assert js_dumps({value: value}) == f"{{{text}:{text}}}"


def test_lone_surrogates_leave_utf8_bytes_that_decode_strictly() -> None:
    assert js_dumpb({"a": "\ud800", "b": "é"}).decode("utf-8") == '{"a":"\\ud800","b":"é"}'


def test_indentation_matches_json_stringify_and_empty_containers_stay_compact() -> None:
    value = {"a": [1, {}], "b": [], "c": {"d": ("x", None)}}
    assert js_dumps(value, indent=2) == (
        '{\n  "a": [\n    1,\n    {}\n  ],\n  "b": [],\n  "c": {\n    "d": [\n      "x",\n      null\n    ]\n  }\n}'
    )
    assert js_dumps(value, indent=4) == js_dumps(value, indent=2).replace("\n", "\n").replace("  ", "    ")
    assert js_dumps(value, indent=0) == js_dumps(value) == '{"a":[1,{}],"b":[],"c":{"d":["x",null]}}'
    assert js_dumps([1], indent=12) == "[\n          1\n]"  # JSON.stringify clamps the indent to 10


def test_key_order_is_kept_and_non_string_keys_are_spelled_as_javascript_would() -> None:
    assert js_dumps({"b": 1, "a": 2}) == '{"b":1,"a":2}'
    assert js_dumps({1: "i", 2.5: "f", None: "n", False: "b"}) == '{"1":"i","2.5":"f","null":"n","false":"b"}'
    with pytest.raises(TypeError):
        js_dumps({(1,): 2})


def test_values_that_are_not_json_are_refused() -> None:
    with pytest.raises(TypeError):
        js_dumps({"a": object()})
    with pytest.raises(TypeError):
        js_dumps([{"a": {1, 2}}] * 2 + ["\ud800"])


def test_a_value_that_contains_itself_is_refused() -> None:
    loop: list[Any] = ["\ud800"]
    loop.append(loop)
    with pytest.raises(ValueError, match="circular"):
        js_dumps(loop)


def test_shared_containers_are_written_each_time_they_appear() -> None:
    shared = {"x": 1.0}
    assert js_dumps([shared, shared, "\ud800"]) == '[{"x":1},{"x":1},"\\ud800"]'


@pytest.mark.parametrize(("tricky", "text"), [("", '""'), ("\ud800", '"\\ud800"'), (2**64, "18446744073709552000"),
                                             (1.0, "1"), ({1: 1}, '{"1":1}')])
def test_a_value_nested_100000_deep_is_written_without_recursion(tricky: Any, text: str) -> None:
    depth = 100_000
    nested: Any = tricky
    for _ in range(depth):
        nested = [nested]
    assert js_dumps(nested) == "[" * depth + text + "]" * depth
    chain: Any = tricky
    for _ in range(depth):
        chain = {"k": chain}
    assert js_dumps(chain) == '{"k":' * depth + text + "}" * depth
    indented: Any = "\ud800"
    for _ in range(2000):
        indented = {"k": indented}
    opening = "".join("{\n" + "  " * (level + 1) + '"k": ' for level in range(2000))
    closing = "".join("\n" + "  " * level + "}" for level in reversed(range(2000)))
    assert js_dumps(indented, indent=2) == opening + '"\\ud800"' + closing


def test_the_fast_path_and_the_iterative_writer_give_the_same_text() -> None:
    rng = random.Random(7)
    for _ in range(200):
        value = random_value(rng, allow_nan=True)
        plain = js_dumps(value, indent=2)
        # a lone surrogate at the end sends the whole value through the iterative writer
        slow = js_dumps([value, "\ud800"], indent=2)
        lines = plain.split("\n")
        assert slow == "[\n  " + "\n  ".join(lines) + ',\n  "\\ud800"\n]'


def test_an_array_item_is_the_nested_text_after_its_comma() -> None:
    """js_item (the streamed context's items, written by orjson inside a wrapper) is the text
    js_dumpb_nested gives, whatever the value: plain data, numbers JavaScript writes otherwise,
    what orjson refuses (lone surrogates, big integers, tuples, non-string keys), deep nesting."""
    deep: Any = 0
    for _ in range(300):
        deep = [deep]
    values: list[Any] = [*TRICKY, deep, {"a": deep}, {1: "x"}, {"usage": {"cost": {"input": 9e-06, "total": 0.0}}}]
    rng = random.Random(11)
    values += [random_value(rng, allow_nan=True) for _ in range(200)]
    for depth in (1, 2, 3, 4):
        for value in values:
            assert bytes(js_item(value, depth)) == b"," + newline_at(depth) + js_dumpb_nested(value, depth), value


def test_an_array_item_that_contains_itself_is_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="circular"):
        js_item({"a": loop}, 2)


# -- against node's JSON.stringify ---------------------------------------------------------------
TRICKY: list[Any] = [
    0, -0.0, 1, -1, 2**53, 2**53 + 1, 2**53 + 3, -(2**53) - 1, 2**63, 2**64 + 1, 12345678901234567890, 10**21 - 1,
    10**21, 10**22, 10**308, 10**309, 0.1, 0.5, 1.0, 100.0, 1e15, 1e16, 1e17, 123456789012345680000.0, 1e21, 1e22,
    1e-4, 1.5e-4, 1e-5, 1.5e-5, 1e-6, 1.5e-6, 1e-7, 1.2345e-7, 5e-324, 2.2250738585072014e-308,
    1.7976931348623157e308, -1.5e300, 0.30000000000000004, 1 / 3, 2 / 3 * 1e-10, float("nan"), float("inf"),
    float("-inf"), True, False, None, "", "plain", 'q"uote', "back\\slash", "\b\f\n\r\t\v", "\x00\x01\x1b\x1f\x7f",
    "\x80\x9f\u00a0", "\u2028\u2029", "\u202e\u2066", "\ufeff\uffff", "\ud800", "\udbff", "\udc00", "\udfff",
    "a\ud800b", "\udc00\ud800", "\ud83d\ude00", "\ud83d\ud83d\ude00", "\U0001f600", "\U0010ffff", "é中😀",
    [], {}, [[]], [{}], {"a": []}, {"a": {}}, [1, [2, [3, []]]], {"nested": {"deeper": {"deepest": [None]}}},
    {"": 1, " ": 2, "\ud800": 3, "é": 4, "\x1b": 5, "-1": 6, "01": 7, "4294967295": 8, "1.5": 9},
    ("tu", "ple"),
]


def node_stringify(cases: list[tuple[Any, int | None]]) -> list[str]:
    """What node's JSON.stringify writes for each ``(value, indent)``, read by JSON.parse from text
    that spells the value exactly (NaN and the infinities, which JSON cannot spell, as markers)."""
    script = r"""
const specials = {"\u0000NaN": NaN, "\u0000Inf": Infinity, "\u0000-Inf": -Infinity};
const cases = JSON.parse(require("fs").readFileSync(0, "utf8"), (k, v) => (v in specials ? specials[v] : v));
process.stdout.write(JSON.stringify(cases.map(([v, indent]) => JSON.stringify(v, null, indent))));
"""

    def spell(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return "\x00NaN" if math.isnan(value) else "\x00Inf" if value > 0 else "\x00-Inf"
        if isinstance(value, dict):
            return {k: spell(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [spell(v) for v in value]
        return value

    text = json.dumps([[spell(v), indent] for v, indent in cases], ensure_ascii=True)
    assert NODE is not None
    done = subprocess.run([NODE, "-e", script], input=text.encode(), capture_output=True, check=True, timeout=120)
    out: list[str] = json.loads(done.stdout)
    return out


@needs_node
def test_tricky_values_match_node() -> None:
    cases: list[tuple[Any, int | None]] = [(v, indent) for v in TRICKY for indent in (None, 2)]
    cases += [(TRICKY, None), (TRICKY, 2), (TRICKY, 4), (TRICKY, 0), (TRICKY, 12), ({"list": TRICKY}, 3)]
    for (value, indent), expected in zip(cases, node_stringify(cases), strict=True):
        assert js_dumps(value, indent=indent) == expected, (value, indent)


INDEX_KEY = re.compile(r"(0|[1-9][0-9]{0,9})")


def random_string(rng: random.Random) -> str:
    alphabet = ["a", "Z", " ", '"', "\\", "/", "\n", "\t", "\x00", "\x1b", "\x7f", "\x85", "é", "\u2028", "中",
                "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d\ude00", "\U0001f600", "\ufffd", "1", "e", "."]
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))


def random_number(rng: random.Random, *, allow_nan: bool) -> int | float:
    kind = rng.randrange(6)
    if kind == 0:
        return rng.randrange(-(2**70), 2**70) >> rng.randrange(70)
    if kind == 1:
        return rng.choice([2**53, 2**53 + 1, 2**64, 10**21, 10**rng.randrange(30)]) * rng.choice([1, -1])
    if kind == 2:
        value = float(struct.unpack("<d", rng.randbytes(8))[0])
        return value if allow_nan or math.isfinite(value) else 0.5
    if kind == 3:
        return float(f"{rng.choice(['-', ''])}{rng.choice(['1', '5', '2.5'])}e{rng.randrange(-330, 310)}")
    if kind == 4:
        return round(rng.uniform(-1000, 1000), rng.randrange(0, 8))
    return rng.random() * 10.0 ** rng.randrange(-12, 25)


def random_value(rng: random.Random, depth: int = 0, *, allow_nan: bool = False) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind in (1, 2):
        return random_number(rng, allow_nan=allow_nan)
    if kind in (3, 4):
        return random_string(rng)
    if kind == 5:
        return [random_value(rng, depth + 1, allow_nan=allow_nan) for _ in range(rng.randrange(4))]
    if kind == 6:
        return tuple(random_value(rng, depth + 1, allow_nan=allow_nan) for _ in range(rng.randrange(3)))
    value: dict[str, Any] = {}
    for _ in range(rng.randrange(5)):
        key = random_string(rng)
        if INDEX_KEY.fullmatch(key) and int(key) < 2**32 - 1:
            key = "k" + key  # JavaScript moves array-index keys to the front; js_dumps keeps the order
        value[key] = random_value(rng, depth + 1, allow_nan=allow_nan)
    return value


@needs_node
def test_seeded_random_values_match_node() -> None:
    rng = random.Random(20240601)
    cases = [(random_value(rng, allow_nan=True), rng.choice([None, 2, 3])) for _ in range(3000)]
    for (value, indent), expected in zip(cases, node_stringify(cases), strict=True):
        assert js_dumps(value, indent=indent) == expected, (value, indent)


@needs_node
def test_random_doubles_match_node_number_to_string() -> None:
    rng = random.Random(53)
    numbers = [random_number(rng, allow_nan=True) for _ in range(20000)]
    (expected,) = node_stringify([(numbers, None)])
    assert js_dumps(numbers) == expected


_DIGIT_KEYED = [
    {"role": "user", "content": "x", "1": 2, "b": 1, "timestamp": 5},
    {"role": "user", "content": "x", "timestamp": 5, "meta": {"z": 1, "10": "ten", "2": "two", "02": "not an index",
                                                            "4294967295": "too big", "4294967294": "last index"}},
    {"role": "user", "content": [{"type": "text", "text": "y", "0": [{"b": 1, "7": 7}]}], "timestamp": 5},
]


@needs_node
@pytest.mark.parametrize("message", _DIGIT_KEYED, ids=range(len(_DIGIT_KEYED)))
def test_an_appended_message_is_stored_with_its_keys_in_javascripts_order(tmp_path: Any, message: Any) -> None:
    """pi's appendMessage writes ``JSON.stringify`` of a JavaScript object, which holds its array-index keys
    first: the stored line's message is what node writes for the same object."""
    from sessionstore.api import SessionStore

    with SessionStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        sid = store.create_session(cwd="/w")
        store.append_message(sid, message)
        out = io.BytesIO()
        store.export_jsonl(sid, out)
    line = out.getvalue().splitlines()[-1].decode()
    stored = line[line.index('"message":') + len('"message":'):-1]
    node = subprocess.run([str(NODE), "-e", "process.stdout.write(JSON.stringify(JSON.parse(require('fs')"
                           ".readFileSync(0, 'utf8'))))"], input=json.dumps(message), capture_output=True, text=True,
                          check=True).stdout
    assert stored == node

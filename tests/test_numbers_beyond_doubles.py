"""Numbers pi reads, the store reads the same: an integer beyond the double range (``1`` and 309 zeros)
is ``Infinity`` to ``JSON.parse``, one of more than 4,300 digits too (Python's ``int()`` refuses such a
string; the codec never asks it), and one beyond 64 bits the nearest double. What JavaScript writes
of them (``JSON.stringify(Infinity)`` is ``null``) is what the store writes where it writes JSON;
``tests/differential/test_hostile_values_against_pi.py`` checks these against node's ``JSON.parse``."""

from __future__ import annotations

import math
import sys

import pytest

from sessionstore.catalog.stats import js_locale
from sessionstore.validate import validate_transcript
from sessionstore.wire.codec import dump_line, js_integer, json_loads, parse_line
from sessionstore.wire.jsjson import js_dumps

INF_DIGITS = "1" + "0" * 309
LONG = "7" * 5000

READ_AS_JSON_PARSE = {
    INF_DIGITS: math.inf,
    "-" + INF_DIGITS: -math.inf,
    LONG: math.inf,
    "-" + LONG: -math.inf,
    str(10**30): 1e30,
    "9" * 308: float("9" * 308),  # finite: the nearest double
    str(2**64): float(2**64),
}


@pytest.mark.parametrize("digits", READ_AS_JSON_PARSE, ids=lambda d: f"{len(d)} chars")
def test_an_integer_beyond_64_bits_is_the_double_json_parse_reads(digits: str) -> None:
    expected = READ_AS_JSON_PARSE[digits]
    line = f'{{"n":{digits},"s":"\\ud800"}}'.encode()  # a lone surrogate: read by the strict path too
    for raw in (f'{{"n":{digits}}}'.encode(), line):
        value = parse_line(raw)["n"]
        assert type(value) is float and value == expected
        assert json_loads(raw)["n"] == expected
    assert sys.get_int_max_str_digits() in (0, 4300)  # the interpreter's limit was left alone


@pytest.mark.parametrize("number", [0, -1, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1])
def test_an_integer_within_64_bits_stays_exact_as_orjson_reads_it(number: int) -> None:
    assert js_integer(str(number)) == number and type(js_integer(str(number))) is int
    assert parse_line(f'{{"n":{number},"s":"\\ud800"}}'.encode())["n"] == number


def test_what_is_written_of_an_infinity_is_null_as_json_stringify_writes_it() -> None:
    entry = parse_line(f'{{"a":{INF_DIGITS},"b":-{LONG},"c":{10**30}}}'.encode())
    assert js_dumps(entry) == '{"a":null,"b":null,"c":1e+30}'
    assert dump_line(entry) == b'{"a":null,"b":null,"c":1e+30}\n'


def test_a_timestamp_read_as_infinity_is_named_so_by_validate() -> None:
    message = parse_line(f'{{"role":"user","content":"x","timestamp":{INF_DIGITS}}}'.encode())
    [finding] = validate_transcript([message])
    assert finding.message == "messages[0].timestamp: expected a number, got Infinity (written as null)"


@pytest.mark.parametrize(("value", "text"), [
    (1.797e308, f"{1797 * 10**305:,}"),  # the shortest digits, padded with zeros
    (1e30, "1" + ",000" * 10),
    (math.inf, "∞"),
])
def test_to_locale_string_of_numbers_beyond_28_digits(value: float, text: str) -> None:
    assert js_locale(value) == text  # (pi_stats.mjs formats: (1.797e308).toLocaleString())


@pytest.mark.parametrize(("number", "text"), [
    (10**30, b"1e+30"), (2**64, b"18446744073709552000"), (10**400, b"null"), (-(10**5000), b"null"),
], ids=["10**30", "2**64", "10**400", "-10**5000"])
def test_an_integer_beyond_64_bits_is_written_as_json_stringify_writes_the_double_pi_reads(
    number: int, text: bytes
) -> None:
    assert dump_line({"n": number}) == b'{"n":' + text + b"}\n"
    assert dump_line({"n": number, "s": "\ud800"}) == b'{"n":' + text + b',"s":"\\ud800"}\n'


def test_an_api_append_of_an_integer_of_5000_digits_is_stored_as_pi_reads_it(sqlite_url: str) -> None:
    from sessionstore.api import SessionStore

    with SessionStore(sqlite_url) as store:
        sid = store.create_session(cwd="/w")
        store.append_custom(sid, "t", {"v": 10**5000, "w": 10**30})
        assert store.entries(sid)[-1]["data"] == {"v": None, "w": 1e30}

"""Seeded session files of every version whose text takes the forms JSON allows and pi's readers meet:
numbers in every spelling that reads as the same double (``1e3``, ``1000.0``, ``-0``, ``1e308``, digits
beyond 2**53), strings with every escape (``\\u00e9``, ``\\/``, surrogate pairs, lone surrogates, control
characters), duplicated keys, array-index keys (which a JavaScript object puts first), shuffled key
orders, unknown fields in entries and headers, whitespace inside and around lines, CRLF and CR CR LF
line ends, blank lines and a last line without its newline.

``mutant(seed, version)`` gives one file's bytes; the same seed always gives the same bytes. The files
are sessions the store imports strictly (every entry has the ids its version needs, parents precede
children), so a difference in what is exported is a difference in the upgrade or the round trip.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

# -- values with a chosen spelling ----------------------------------------------------------------


@dataclass(frozen=True)
class Num:
    """A number written as ``token`` exactly."""

    token: str


@dataclass(frozen=True)
class Obj:
    """An object written with its pairs in this order (a key may repeat: the last value counts)."""

    pairs: tuple[tuple[str, Any], ...]


ODD_NUMBERS = (
    "1e3", "1E3", "1e+3", "1000.0", "10e2", "1.000e3", "-0", "-0.0", "0e0", "-0e5", "0.0", "1e308", "1E308",
    "1.7976931348623157e308", "5e-324", "4.9e-324", "1e-7", "0.0000001", "0.000001", "1e-6", "1e21", "1e+21",
    "1e20", "100000000000000000000", "123456789012345678901234567890", "9007199254740993",
    "18446744073709551616", "-9223372036854775809", "0.1", "1.10", "2.50e-3", "0.30000000000000004",
    "1.0000000000000000001", "123.456e-2", "1e400", "-1e400", "1e-400", "-1e-400", "1" + "0" * 320,
)
TEXTS = (
    "héllo", "a/b/c", "emoji 😀 and 𝄞", "tab\there", 'quote"s', "back\\slash", "ctl\x01\x1f\x00", "\u2028\u2029",
    "del\x7f", "lone \ud800 high", "lone \udc00 low", "", "日本語", "new\nline\r\n", "\ufeffbom", "plain text",
)
INDEX_KEYS = ("10", "2", "0", "01", "-1", "4294967294", "4294967295", "1.5", "007", "9", "")
WHITESPACE = ("", "", "", " ", "\t", "  ", " \t", "\r")


class Writer:
    """Writes values as JSON text with seeded variation in escapes, number forms and whitespace."""

    def __init__(self, rng: random.Random, *, spaced: bool) -> None:
        self.rng = rng
        self.spaced = spaced

    def space(self) -> str:
        return self.rng.choice(WHITESPACE) if self.spaced else ""

    def string(self, text: str) -> str:
        rng = self.rng
        out = ['"']
        i = 0
        while i < len(text):
            char = text[i]
            code = ord(char)
            i += 1
            if char == '"':
                out.append(rng.choice(['\\"', "\\u0022"]))
            elif char == "\\":
                out.append(rng.choice(["\\\\", "\\u005c", "\\u005C"]))
            elif code < 0x20:
                short = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char)
                out.append(short if short and rng.random() < 0.6 else self.escape(code))
            elif 0xD800 <= code <= 0xDFFF:
                out.append(self.escape(code))  # a lone surrogate: only an escape can hold it
            elif char == "/" and rng.random() < 0.5:
                out.append("\\/")
            elif code > 0xFFFF and rng.random() < 0.5:
                high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
                out.append(self.escape(high) + self.escape(low))
            elif (code > 0x7E and rng.random() < 0.4) or rng.random() < 0.03:
                out.append(self.escape(code))
            else:
                out.append(char)
        out.append('"')
        return "".join(out)

    def escape(self, code: int) -> str:
        text = f"\\u{code:04x}"
        return text.upper().replace("\\U", "\\u") if self.rng.random() < 0.3 else text

    def value(self, value: Any) -> str:
        if isinstance(value, Num):
            return value.token
        if value is True:
            return "true"
        if value is False:
            return "false"
        if value is None:
            return "null"
        if isinstance(value, int):
            return self.integer(value)
        if isinstance(value, float):
            return self.rng.choice([repr(value), f"{value:e}", f"{value * 10:.6f}e-1"])
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, list):
            items = [self.space() + self.value(item) + self.space() for item in value]
            return "[" + ",".join(items) + "]" if items else "[" + self.space() + "]"
        pairs = value.pairs if isinstance(value, Obj) else tuple(value.items())
        parts = [f"{self.space()}{self.string(k)}{self.space()}:{self.space()}{self.value(v)}{self.space()}"
                 for k, v in pairs]
        return "{" + ",".join(parts) + "}" if parts else "{" + self.space() + "}"

    def integer(self, value: int) -> str:
        """An integer in one of the spellings that read as it."""
        forms = [str(value), str(value), f"{value}.0", f"{value}e0", f"{value * 10}e-1", f"{value}.000"]
        if value and value % 10 == 0:
            forms.append(f"{value // 10}E1")
        if value == 0:
            forms += ["-0", "0e5"]
        return self.rng.choice(forms)


# -- sessions ---------------------------------------------------------------------------------------


def _odd(rng: random.Random) -> Any:
    """A value for an unknown field: odd numbers, odd strings, index keys, nested and repeated keys."""
    kind = rng.randrange(6)
    if kind == 0:
        return Num(rng.choice(ODD_NUMBERS))
    if kind == 1:
        return rng.choice(TEXTS)
    if kind == 2:
        return [Num(rng.choice(ODD_NUMBERS)), rng.choice(TEXTS), rng.random() < 0.5, None]
    keys = [*rng.sample(INDEX_KEYS, 4), "b", "a"]
    rng.shuffle(keys)
    pairs: list[tuple[str, Any]] = [(key, Num(rng.choice(ODD_NUMBERS)) if rng.random() < 0.5 else rng.choice(TEXTS))
                                    for key in keys]
    if kind >= 4:  # a repeated key: first place, last value
        key = rng.choice(keys)
        pairs.append((key, rng.choice(TEXTS)))
    if kind == 5:
        pairs.append(("nested", Obj(tuple(pairs[:3]))))
    return Obj(tuple(pairs))


def _shuffled(rng: random.Random, pairs: list[tuple[str, Any]], *, extra: bool = True) -> Obj:
    """``pairs`` in a seeded order, with unknown fields and a repeated key now and then."""
    pairs = list(pairs)
    if extra:
        for _ in range(rng.choice([0, 0, 1, 2])):
            key = rng.choice(["x-ext", "meta", "7", "10", "ünï"])
            if all(k != key for k, _v in pairs):
                pairs.insert(rng.randrange(len(pairs) + 1), (key, _odd(rng)))
    if rng.random() < 0.4:
        head, tail = pairs[:1], pairs[1:]
        rng.shuffle(tail)
        pairs = tail + head if rng.random() < 0.3 else head + tail
    if rng.random() < 0.2:  # a known key given twice: a decoy first (first place, last value)
        where = rng.randrange(len(pairs))
        if pairs[where][0] not in ("type", "id", "parentId", "role"):
            pairs.insert(where, (pairs[where][0], Num(rng.choice(ODD_NUMBERS))))
    return Obj(tuple(pairs))


def _usage(rng: random.Random) -> Obj:
    return _shuffled(rng, [
        ("input", rng.randrange(0, 5000)), ("output", rng.randrange(0, 900)), ("cacheRead", 0), ("cacheWrite", 0),
        ("totalTokens", rng.randrange(0, 6000)),
        ("cost", _shuffled(rng, [("input", 0.5), ("output", 0.25), ("cacheRead", 0), ("cacheWrite", 0),
                                 ("total", 0.75)], extra=False)),
    ], extra=False)


def _message(rng: random.Random, version: int, ts: int) -> Obj:
    role = rng.choice(["user", "user", "assistant", "toolResult", "hook"])
    stamp = ("timestamp", ts)
    if role == "user":
        content: Any = rng.choice(TEXTS) if rng.random() < 0.5 else [
            _shuffled(rng, [("type", "text"), ("text", rng.choice(TEXTS))])]
        return _shuffled(rng, [("role", "user"), ("content", content), stamp])
    if role == "assistant":
        blocks = [_shuffled(rng, [("type", "text"), ("text", rng.choice(TEXTS))])]
        if rng.random() < 0.4:
            blocks.append(_shuffled(rng, [("type", "toolCall"), ("id", "call_1"), ("name", "bash"),
                                          ("arguments", _shuffled(rng, [("command", "ls /tmp"), ("n", 3)]))]))
        return _shuffled(rng, [("role", "assistant"), ("content", blocks), ("api", "anthropic-messages"),
                               ("provider", "anthropic"), ("model", "claude-x"), ("usage", _usage(rng)),
                               ("stopReason", "stop"), stamp])
    if role == "toolResult":
        return _shuffled(rng, [("role", "toolResult"), ("toolCallId", "call_1"), ("toolName", "bash"),
                               ("content", [_shuffled(rng, [("type", "text"), ("text", rng.choice(TEXTS))])]),
                               ("isError", rng.random() < 0.2), stamp])
    name = "hookMessage" if version < 3 else "custom"
    return _shuffled(rng, [("role", name), ("customType", "ext"), ("content", rng.choice(TEXTS)),
                           ("display", rng.random() < 0.5), stamp])


def _entry_pairs(rng: random.Random, version: int, position: int, ts: int) -> list[tuple[str, Any]]:
    kind = rng.choice(["message"] * 6 + ["model_change", "thinking_level_change", "compaction", "custom", "x-unknown"])
    stamp = ("timestamp", f"2025-03-0{1 + position % 9}T10:00:{position % 60:02d}.000Z")
    if kind == "message":
        return [("type", "message"), stamp, ("message", _message(rng, version, ts))]
    if kind == "model_change":
        return [("type", "model_change"), stamp, ("provider", "anthropic"), ("modelId", rng.choice(TEXTS[:4]))]
    if kind == "thinking_level_change":
        return [("type", "thinking_level_change"), stamp, ("thinkingLevel", rng.choice(["high", "low", "off"]))]
    if kind == "custom":
        return [("type", "custom"), stamp, ("customType", "ext.state"), ("data", _odd(rng))]
    if kind == "x-unknown":
        return [("type", "x-unknown"), stamp, ("payload", _odd(rng))]
    pairs: list[tuple[str, Any]] = [("type", "compaction"), stamp, ("summary", rng.choice(TEXTS)),
                                    ("tokensBefore", rng.randrange(100, 90000))]
    if version < 2:
        # an earlier entry, the entry itself, the header, or what names none (pi deletes a number)
        target = rng.choice([max(1, position - 2), position, 1, 0, -1, 1.5, "2", None])
        if target is None:
            return pairs
        if isinstance(target, int) and target > 0:
            value: Any = Num(rng.choice([str(target), f"{target}.0", f"{target}e0", f"{target * 10}e-1"]))
        else:
            value = Num(str(target)) if not isinstance(target, str) else target
        pairs.append(("firstKeptEntryIndex", value))
    return pairs


def _line_end(rng: random.Random, *, messy: bool) -> str:
    if not messy:
        return "\n"
    end = rng.choice(["\n"] * 6 + ["\r\n", "\r\r\n", " \n", "\t\n", " \t\r\n", "  \r\r\n"])
    if rng.random() < 0.08:  # blank lines after it (pi skips them)
        end += rng.choice(["\n", "   \n", "\t\r\n", "\u00a0\n"])
    return end


def mutant(seed: int, version: int) -> bytes:
    """One session file of ``version`` (1, 2 or 3), the same bytes for the same ``seed``."""
    rng = random.Random(f"{seed}:{version}")
    messy = rng.random() < 0.6
    writer = Writer(rng, spaced=rng.random() < 0.5)
    count = rng.randrange(2, 9)
    ids = [f"e{seed:04x}{i:03x}" if version >= 2 else f"{i:08x}" for i in range(1, count + 1)]
    header: list[tuple[str, Any]] = [("type", "session"), ("id", f"mutant-{version}-{seed}"),
                                     ("timestamp", "2025-03-01T10:00:00.000Z"), ("cwd", rng.choice(["/w", "/tmp/å b"]))]
    version_forms = {1: [None, None, "1", "1.0", "1e0", "null", '"1"', "0"], 2: ["2", "2.0", "2e0", "2.5", "20e-1"],
                     3: ["3", "3.0", "3e0", "4", '"3"']}[version]
    form = rng.choice(version_forms)
    if form is not None:
        header.insert(rng.randrange(1, len(header) + 1), ("version", Num(form)))
    if rng.random() < 0.5:
        header.append((rng.choice(["parentSession", "x-origin", "10", "2"]), _odd(rng)))
    if version == 3 and rng.random() < 0.5:  # the leaf an export records (pi ignores it)
        leaf: Any = rng.choice([ids[-1], ids[0], ids[len(ids) // 2], "names-none", None, 5])
        header.insert(rng.randrange(1, len(header) + 1), ("leafId", leaf))
    lines = [writer.value(_shuffled(rng, header, extra=False))]
    for position, entry_id in enumerate(ids, start=1):
        pairs = _entry_pairs(rng, version, position, 1_740_000_000_000 + position * 1000)
        if version >= 2:
            parent = ids[position - 2] if position > 1 else None
            if version == 3 and position > 2 and rng.random() < 0.2:
                parent = ids[rng.randrange(position - 1)]  # a branch
            pairs[1:1] = [("id", entry_id), ("parentId", parent)]
        elif rng.random() < 0.15:  # a v1 entry that has ids already (pi overwrites them in place)
            pairs[1:1] = [("id", "stale"), ("parentId", "older")]
        lines.append(writer.value(_shuffled(rng, pairs)))
    text = "".join((rng.choice(["", "", "", " ", "\t"]) if messy else "") + line + (writer.space() if messy else "")
                   + _line_end(rng, messy=messy) for line in lines)
    if messy and rng.random() < 0.15:
        text = text.rstrip("\n")  # a last line without its newline
    return text.encode("utf-8")


def v3_export_of(data: bytes) -> bytes:
    """What a v3 file exports as (the README's round-trip rule): each line byte for byte, without the
    carriage returns before its newline; blank lines (pi skips them) dropped; every line ends with a
    newline."""
    out = []
    for raw in data.split(b"\n"):
        line = raw.rstrip(b"\r")
        if line.decode("utf-8").strip(" \t\r\n\u00a0\ufeff"):
            out.append(line + b"\n")
    return b"".join(out)

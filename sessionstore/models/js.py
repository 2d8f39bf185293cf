"""JavaScript's reading of JSON values, where pi's behaviour depends on it.

pi works on whatever ``JSON.parse`` gave it: a missing key is ``undefined`` (dropped again by
``JSON.stringify``), ``null`` is a value, and conditions test truthiness. Context building follows
pi to the letter on odd data, so these few rules live here, once.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from sessionstore.models.js_text import JS_WHITESPACE


class _Missing:
    """``undefined``: the key is absent (``JSON.stringify`` leaves it out)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()


def get(value: Any, key: str) -> Any:
    """``value[key]`` as JavaScript reads a property: :data:`MISSING` when ``value`` is not an object
    or has no such key."""
    if isinstance(value, Mapping):
        return value.get(key, MISSING)
    return MISSING


def obj(*pairs: tuple[str, Any]) -> dict[str, Any]:
    """An object literal whose :data:`MISSING` members are left out, as ``JSON.stringify`` does."""
    return {key: value for key, value in pairs if value is not MISSING}


def json_type(value: Any) -> str:
    """The JSON type of a parsed value, as error messages name it: object, array, string, boolean, null, number."""
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "array", str: "string", type(None): "null"}.get(type(value), "number")


def set_key(value: Any) -> Any:
    """The key under which a JavaScript ``Set`` or ``Map`` holds ``value`` (SameValueZero): a string, a
    number, a boolean or null by its value (``true`` is not ``1``), an object or an array by identity
    (two parsed objects are never the same key). Hashable, whatever ``value`` is."""
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, str | int | float) or value is None or value is MISSING:
        return value
    return ("object", id(value))


def truthy(value: Any) -> bool:
    """JavaScript truthiness: ``undefined``, ``null``, ``false``, ``0``, ``NaN`` and ``""`` are false;
    every object and array (even empty) is true."""
    if value is MISSING or value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def nullish(value: Any) -> bool:
    """``value == null``: ``undefined`` or ``null``."""
    return value is MISSING or value is None


def to_string(value: Any) -> str:
    """``String(value)``, as a template literal or ``+`` turns a value into text."""
    if value is MISSING:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return number_to_string(value)
    if isinstance(value, list | tuple):
        return ",".join("" if nullish(item) else to_string(item) for item in value)
    return "[object Object]"


def js_number(token: bytes) -> bytes:
    """How JavaScript's ``JSON.stringify`` writes the number that the JSON ``token`` spells."""
    value = Decimal(token.decode())
    if value == value.to_integral_value() and abs(value) < Decimal("1e21"):
        return str(int(value)).encode()
    if Decimal("1e-6") <= abs(value) < Decimal("1e21"):
        return format(value.normalize(), "f").encode()
    mantissa, _, exponent = format(value.normalize(), "e").partition("e")
    exp = int(exponent)
    return f"{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp)}".encode()


def number_to_string(value: int | float) -> str:
    """``Number#toString`` of the double JavaScript reads for ``value``."""
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if isinstance(value, int) and abs(value) <= 2**53:
        return str(value)
    return js_number(repr(number).encode()).decode()


_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)", re.ASCII)
_RADIX = re.compile(r"0([xXoObB])([0-9a-fA-F]+)")


def to_number(value: Any) -> float:
    """``Number(value)``, as a comparison like ``version < 3`` reads a JSON value (NaN where JS has NaN)."""
    if value is MISSING:
        return math.nan
    if value is None:
        return 0.0
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip("".join(JS_SPACE))
        if not text:
            return 0.0
        if _DECIMAL.fullmatch(text):
            return float(text.replace("Infinity", "inf"))
        radix = _RADIX.fullmatch(text)
        if radix is not None:
            base = {"x": 16, "o": 8, "b": 2}[radix.group(1).lower()]
            try:
                return float(int(radix.group(2), base))
            except ValueError:
                return math.nan
        return math.nan
    if isinstance(value, list | tuple):
        return 0.0 if not value else to_number(to_string(value[0])) if len(value) == 1 else math.nan
    return math.nan


JS_SPACE = frozenset(JS_WHITESPACE)
"""What JavaScript's ``String#trim`` (and ``Number()``) skip around a value."""


_MAX_TIME_MS = 8.64e15


def date_ms(value: Any) -> int | None:
    """``new Date(value).getTime()``; ``None`` for NaN (an invalid date, ``null`` in JSON)."""
    if value is MISSING:
        return None
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        number = float(value)
        if not math.isfinite(number) or abs(number) > _MAX_TIME_MS:
            return None
        return int(number)  # TimeClip truncates toward zero
    if isinstance(value, str):
        return date_parse(value)
    if isinstance(value, list | tuple):
        return date_parse(to_string(value))
    return None


_ISO_DATE = re.compile(
    r"([+-]\d{6}|\d{4})(?:-(\d{2})(?:-(\d{2}))?)?"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?"
    r"([Zz]|[+-]\d{2}:?\d{2})?",
    re.ASCII,
)
_SLASH_DATE = re.compile(r"(\d{1,4})/(\d{1,2})/(\d{1,4})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?", re.ASCII)


def iso_string(ms: int) -> str:
    """``new Date(ms).toISOString()`` for a valid time (years outside 0000-9999 as ``+YYYYYY``/``-YYYYYY``)."""
    days, in_day = divmod(ms, 86_400_000)
    seconds, millis = divmod(in_day, 1000)
    return f"{_civil(days)}T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{millis:03d}Z"


def _civil(days: int) -> str:
    """The proleptic Gregorian date ``days`` after 1970-01-01 (Howard Hinnant's ``civil_from_days``)."""
    z = days + 719_468
    era = z // 146_097  # (Python's // floors: no adjustment for negative days, unlike C's division)
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return f"{year:04d}-{month:02d}-{day:02d}" if 0 <= year <= 9999 else f"{year:+07d}-{month:02d}-{day:02d}"


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year; ``day`` may run past the month)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    mp = (month + 9) % 12
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _clip(ms: int) -> int | None:
    return ms if abs(ms) <= _MAX_TIME_MS else None


def _local_offset_ms(utc_ms: int) -> int:
    """The local zone's offset at about ``utc_ms`` (JavaScript reads a date-time without a zone as local)."""
    try:
        return int(time.localtime(utc_ms / 1000).tm_gmtoff) * 1000
    except (OverflowError, OSError, ValueError):
        return -time.timezone * 1000


def date_parse(text: str) -> int | None:
    """``Date.parse(text)`` as V8 reads it: the ECMAScript date-time format (``YYYY[-MM[-DD]]`` with an
    optional ``THH:mm[:ss[.sss]]`` and ``Z``/``±HH:mm``; expanded years ``±YYYYYY``; a day up to 31 runs
    into the next month; 24:00 is the next day; date-only forms are UTC, date-times without a zone local
    time), RFC 2822 dates and ``YYYY/MM/DD`` / ``MM/DD/YYYY``; ``None`` for NaN. Other forms V8's legacy
    parser accepts are not read."""
    text = text.strip()
    match = _ISO_DATE.fullmatch(text)
    if match is not None:
        return _iso_ms(match)
    match = _SLASH_DATE.fullmatch(text)
    if match is not None:
        a, b, c = (int(g) for g in match.groups()[:3])
        year, month, day = (a, b, c) if len(match.group(1)) > 2 else (c, a, b)
        if year < 100:  # (the legacy parser's two-digit years, however many digits are written)
            year += 2000 if year < 50 else 1900
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return None
        hour, minute, second = (int(g or 0) for g in match.groups()[3:])
        if not _legacy_time(hour, minute, second):
            return None
        utc = ((_days_from_civil(year, month, day) * 24 + hour) * 60 + minute) * 60_000 + second * 1000
        return _clip(utc - _local_offset_ms(utc))
    import email.utils  # (the RFC 2822 forms only: few dates get this far)

    try:
        parsed = email.utils.parsedate_tz(text)
    except (TypeError, ValueError, IndexError):
        parsed = None
    if parsed is None or not re.search(r"[A-Za-z]{3}", text):
        return None
    year, month, day, hour, minute, second = parsed[:6]
    if not (1 <= day <= 31 and _legacy_time(hour, minute, second)):
        return None
    utc = ((_days_from_civil(year, month, day) * 24 + hour) * 60 + minute) * 60_000 + second * 1000
    offset = parsed[9]
    return _clip(utc - offset * 1000 if offset is not None else utc - _local_offset_ms(utc))


def _legacy_time(hour: int, minute: int, second: int) -> bool:
    """Whether V8's legacy parser takes the time of day (24:00:00 is the next day's start)."""
    return minute <= 59 and second <= 59 and (hour < 24 or (hour == 24 and minute == second == 0))


def _iso_ms(match: re.Match[str]) -> int | None:
    year_text, month, day, hour, minute, second, fraction, zone = match.groups()
    if year_text == "-000000":
        return None
    year = int(year_text)
    month_n, day_n = int(month or 1), int(day or 1)
    if not (1 <= month_n <= 12 and 1 <= day_n <= 31):
        return None
    if hour is None:
        return _clip(_days_from_civil(year, month_n, day_n) * 86_400_000)
    h, m, sec = int(hour), int(minute), int(second or 0)
    ms = int((fraction or "0")[:3].ljust(3, "0"))
    if m > 59 or sec > 59 or h > 24 or (h == 24 and (m or sec or ms)):
        return None
    utc = ((_days_from_civil(year, month_n, day_n) * 24 + h) * 60 + m) * 60_000 + sec * 1000 + ms
    if zone is None:
        return _clip(utc - _local_offset_ms(utc))
    if zone in ("Z", "z"):
        return _clip(utc)
    digits = zone[1:].replace(":", "")
    offset = (int(digits[:2]) * 60 + int(digits[2:])) * 60_000
    if int(digits[:2]) > 23 or int(digits[2:]) > 59:
        return None
    return _clip(utc - offset if zone[0] == "+" else utc + offset)

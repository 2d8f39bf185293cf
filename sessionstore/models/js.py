"""JavaScript's reading of JSON values, where pi's behaviour depends on it.

pi works on whatever ``JSON.parse`` gave it: a missing key is ``undefined`` (dropped again by
``JSON.stringify``), ``null`` is a value, and conditions test truthiness. Context building follows
pi to the letter on odd data, so these few rules live here, once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from sessionstore.models.timestamps import iso_to_ms


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


def to_number(value: Any) -> float:
    """``Number(value)``, as a comparison like ``version < 3`` reads a JSON value (NaN where JS has NaN)."""
    if value is MISSING:
        return math.nan
    if value is None:
        return 0.0
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return 0.0
        try:
            return float(text) if text.lower() not in ("nan", "inf", "+inf", "-inf", "infinity") else math.nan
        except ValueError:
            return math.nan
    if isinstance(value, list | tuple):
        return 0.0 if not value else to_number(value[0]) if len(value) == 1 else math.nan
    return math.nan


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
        return iso_to_ms(value)
    if isinstance(value, list | tuple):
        return iso_to_ms(to_string(value))
    return None

"""Reading a fixture document: schema version 1 and its finite list of responses.

A fixture is ``{"schemaVersion": 1, "responses": [{"records": RECORDS}, ...]}`` where RECORDS is
either a list of transport records or an async iterable of them. :func:`parse_fixture` checks that
shape and snapshots it; every problem is ``PROVIDER_INVALID_FIXTURE``, never another exception:

- the document, each response, and each record list must be plain JSON data (see
  :mod:`sessionstore.provider.snapshot`): cycles, tuples, sets, generators, custom classes,
  ``dict`` subclasses, non-string keys and non-finite floats are all rejected; ``schemaVersion`` must
  be the int ``1`` (not ``True``, ``1.0`` or ``"1"``);
- record lists are deep-copied here, so later changes to the caller's data do not reach queued
  responses; the records themselves are validated later, one by one, as the stream reads them;
- ``records`` may instead be an object whose type defines ``__aiter__`` (an async generator, say):
  it is kept as-is, not snapshotted, and opened only when a call takes its response;
- other keys of the document and of a response are ignored but must be plain JSON data too.

:func:`load_fixture` reads such a document from a JSON file.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterable
from dataclasses import dataclass
from typing import TypeAlias, cast

from sessionstore.provider.errors import FixtureProviderError
from sessionstore.provider.snapshot import (
    JsonObject,
    JsonValue,
    NotPlainJsonError,
    snapshot_json,
    type_name,
)

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class SnapshotRecords:
    """A queued response whose records were given as a list (deep-copied at construction)."""

    records: tuple[JsonValue, ...]


@dataclass(frozen=True, slots=True)
class AsyncRecords:
    """A queued response whose records come from an async iterable, taken as-is."""

    iterable: AsyncIterable[object]


ResponseScript: TypeAlias = SnapshotRecords | AsyncRecords
"""One queued response."""


def parse_fixture(fixture: object) -> list[ResponseScript]:
    """Validate and snapshot a fixture document; return its responses in queue order."""
    document = _as_object(fixture, "$", "the fixture")
    version = document.get("schemaVersion")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise _invalid(f"$.schemaVersion must be {SCHEMA_VERSION}, got {_describe(version)}")
    responses = document.get("responses")
    if type(responses) is not list:
        raise _invalid(f"$.responses must be a list, got {_describe(responses)}")
    _require_json({key: value for key, value in document.items() if key != "responses"}, "$")
    return [_parse_response(response, f"$.responses[{index}]") for index, response in enumerate(responses)]


def _parse_response(response: object, path: str) -> ResponseScript:
    fields = _as_object(response, path, "a response")
    if "records" not in fields:
        raise _invalid(f"{path}.records is missing")
    records = fields["records"]
    _require_json({key: value for key, value in fields.items() if key != "records"}, path)
    if type(records) is list:
        snapshot = _require_json(records, f"{path}.records")
        assert isinstance(snapshot, list)
        return SnapshotRecords(tuple(snapshot))
    if _is_async_iterable(records):
        return AsyncRecords(cast("AsyncIterable[object]", records))
    raise _invalid(f"{path}.records must be a list or an async iterable, got {_describe(records)}")


def _is_async_iterable(value: object) -> bool:
    # Judged on the type (``isinstance`` would read the instance's own ``__class__``, which may raise).
    try:
        return issubclass(type(value), AsyncIterable)
    except Exception:
        return False


def _as_object(value: object, path: str, what: str) -> dict[str, object]:
    if type(value) is not dict:
        raise _invalid(f"{what} ({path}) must be a dict, got {_describe(value)}")
    fields = cast("dict[object, object]", value)
    for key in fields:
        if type(key) is not str:
            raise _invalid(f"{path}: object key of type {type_name(key)} is not a string")
    return cast("dict[str, object]", fields)


def _require_json(value: object, path: str) -> JsonValue:
    try:
        return snapshot_json(value, path=path)
    except NotPlainJsonError as exc:
        raise _invalid(f"not plain JSON data: {exc}") from None


def _describe(value: object) -> str:
    if value is None or any(type(value) is kind for kind in (bool, int, float, str)):
        return repr(value)
    return f"a {type_name(value)} object"


def _invalid(message: str) -> FixtureProviderError:
    return FixtureProviderError("PROVIDER_INVALID_FIXTURE", message)


def load_fixture(path: str | os.PathLike[str]) -> JsonObject:
    """Read a fixture JSON file into plain data (not yet checked against the fixture schema).

    Rejected with ``PROVIDER_INVALID_FIXTURE`` naming the file: unreadable files, invalid UTF-8 or
    JSON, ``NaN``/``Infinity`` literals, duplicate keys in one object, and a top level that is not
    an object.
    """
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8") as file:
            document = json.load(file, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _invalid(f"cannot load fixture {name}: {exc}") from exc
    if type(document) is not dict:
        raise _invalid(f"fixture {name} must hold a JSON object, got {_describe(document)}")
    result: JsonObject = document
    return result


def _reject_constant(literal: str) -> JsonValue:
    raise ValueError(f"{literal} is not valid JSON")


def _unique_keys(pairs: list[tuple[str, JsonValue]]) -> JsonObject:
    fields: JsonObject = {}
    for key, value in pairs:
        if key in fields:
            raise ValueError(f"duplicate key {key!r}")
        fields[key] = value
    return fields

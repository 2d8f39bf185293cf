"""pi-ai's constrained sampling of tool calls (``api/constrained-sampling``): whether a tool that asks
for it (``constrainedSampling``) is sent with a strict JSON schema or as a grammar tool, and that schema.

A tool without ``constrainedSampling`` is sent as it is, strict or not as each api's default says."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from sessionstore.errors import InvalidInputError
from sessionstore.models import js
from sessionstore.models.js_text import js_trim
from sessionstore.models.wire import JsonObject as Json

UnsupportedKeyword = Callable[[str, Any], bool]


class _NotStrictable(Exception):
    """The schema is outside the strict subset (pi-ai's ``UnsupportedStrictJsonSchemaError``)."""


_UNSUPPORTED_STRICT_SCHEMA_KEYS = (
    "$ref", "$defs", "definitions", "allOf", "oneOf", "patternProperties", "dependentSchemas", "dependencies",
    "unevaluatedProperties", "propertyNames", "contains", "prefixItems", "not", "if", "then", "else",
)


def _is_object(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, Mapping)


def _types(schema: Mapping[str, Any]) -> list[Any]:
    kind = schema.get("type")
    return [kind] if isinstance(kind, str) else list(kind) if isinstance(kind, list) else []


def _is_structured(schema: Any) -> bool:
    if not _is_object(schema):
        return False
    types = _types(schema)
    return "object" in types or "array" in types or "properties" in schema or "items" in schema


def _allows_null(schema: Any) -> bool:
    if not _is_object(schema):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if ("const" in schema and schema["const"] is None) or (isinstance(schema.get("enum"), list)
                                                            and None in schema["enum"]):
        return True
    return isinstance(schema.get("anyOf"), list) and any(_allows_null(variant) for variant in schema["anyOf"])


def _make_strict(schema: Any, unsupported: UnsupportedKeyword | None) -> None:
    """Makes ``schema`` (a deep copy) strict in place, as pi-ai's ``makeJsonSchemaNodeStrict``."""
    if not _is_object(schema):
        raise _NotStrictable("boolean schemas are unsupported")
    for key in _UNSUPPORTED_STRICT_SCHEMA_KEYS:
        if key in schema:
            raise _NotStrictable(f"{key} schemas are unsupported")
    if unsupported is not None:
        for key, value in schema.items():
            if unsupported(key, value):
                raise _NotStrictable(f"{key} is unsupported")
    if "type" not in schema and "anyOf" not in schema and "enum" not in schema:
        raise _NotStrictable("schemas without a type are unsupported")
    if "anyOf" in schema:
        variants = schema["anyOf"]
        if not isinstance(variants, list) or not variants:
            raise _NotStrictable("anyOf must contain at least one schema")
        for variant in variants:
            if _is_structured(variant):
                raise _NotStrictable("object and array unions are unsupported")
            _make_strict(variant, unsupported)
    if "items" in schema:
        if isinstance(schema["items"], list):
            raise _NotStrictable("tuple schemas are unsupported")
        _make_strict(schema["items"], unsupported)
    is_object = schema.get("type") == "object"
    if "properties" in schema and not is_object:
        raise _NotStrictable("properties require type object")
    if not is_object:
        return
    assert isinstance(schema, dict)  # a deep copy of parsed JSON
    if "additionalProperties" in schema and schema["additionalProperties"] is not False:
        raise _NotStrictable("schema-valued or true additionalProperties is unsupported")
    if "properties" in schema and not _is_object(schema["properties"]):
        raise _NotStrictable("object properties must be a schema map")
    required_raw = schema.get("required", js.MISSING)
    if required_raw is not js.MISSING and (
            not isinstance(required_raw, list) or any(not isinstance(key, str) for key in required_raw)):
        raise _NotStrictable("object required must be a string array")
    properties = schema.get("properties") or {}
    names = list(properties)
    required = set(required_raw) if isinstance(required_raw, list) else set()
    if any(key not in names for key in required):
        raise _NotStrictable("required contains an unknown property")
    for key in names:
        _make_strict(properties[key], unsupported)
        if key not in required and not _allows_null(properties[key]):
            properties[key] = {"anyOf": [properties[key], {"type": "null"}]}
    schema["required"] = names
    schema["additionalProperties"] = False


def make_strict_json_schema(schema: Any, unsupported: UnsupportedKeyword | None = None) -> Json:
    """pi-ai's ``makeStrictJsonSchema``: a copy of ``schema`` in the strict subset (every property
    required, optional ones nullable, no additional properties)."""
    cloned = copy.deepcopy(schema)
    if not _is_object(cloned):
        raise _NotStrictable("root schema must have type object")
    _make_strict(cloned, unsupported)
    if cloned.get("type") != "object":
        raise _NotStrictable("root schema must have type object")
    return dict(cloned)


def resolve_strict(tool: Mapping[str, Any], supports_strict: bool,
                   unsupported: UnsupportedKeyword | None = None) -> bool | None:
    """pi-ai's ``resolveJsonSchemaStrictSampling``: ``True`` when a ``json_schema`` tool is sent strict,
    ``None`` otherwise; a tool that requires strict sampling the model cannot give raises
    ``InvalidInputError``."""
    config = tool.get("constrainedSampling")
    if not _is_object(config) or config.get("type") != "json_schema":
        return None
    if supports_strict:
        try:
            make_strict_json_schema(tool.get("parameters"), unsupported)
            return True
        except _NotStrictable as exc:
            if config.get("strict") != "require":
                return None
            raise InvalidInputError(
                f'Tool "{tool.get("name")}" requires JSON-schema constrained sampling, but {exc}.') from None
    if config.get("strict") == "require":
        raise InvalidInputError(
            f'Tool "{tool.get("name")}" requires JSON-schema constrained sampling, but strict tools are unsupported.')
    return None


def tool_parameters(tool: Mapping[str, Any], strict: bool | None) -> Any:
    """pi-ai's ``getJsonSchemaToolParameters``."""
    return make_strict_json_schema(tool.get("parameters")) if strict is True else tool.get("parameters", js.MISSING)


@dataclass(frozen=True, slots=True)
class Grammar:
    format: str  # "lark" | "regex"
    definition: str
    input_property: str


def _grammar_input_property(tool: Mapping[str, Any]) -> str:
    schema = tool.get("parameters") or {}
    if schema.get("type") != "object":
        raise ValueError("grammar constrained sampling requires an object parameter schema")
    required = schema.get("required")
    if not isinstance(required, list) or len(required) != 1 or not isinstance(required[0], str):
        raise ValueError("grammar constrained sampling requires exactly one required string property")
    name = required[0]
    prop = (schema.get("properties") or {}).get(name)
    if not prop:
        raise ValueError(f"grammar constrained sampling requires a properties entry for {name}")
    if prop.get("type") != "string":
        raise ValueError(f"grammar constrained sampling property {name} must have type string")
    return name


def resolve_grammar(tool: Mapping[str, Any], supports_grammar_tools: bool) -> Grammar | None:
    """pi-ai's ``resolveGrammarConstrainedSampling``: the grammar a ``grammar`` tool is sent with, if the
    model takes grammar tools."""
    config = tool.get("constrainedSampling")
    if not _is_object(config) or config.get("type") != "grammar" or not supports_grammar_tools:
        return None
    variants = config.get("variants") or {}
    lark, regex = variants.get("openai_lark"), variants.get("openai_regex")
    has_lark = isinstance(lark, str) and js_trim(lark) != ""
    has_regex = isinstance(regex, str) and js_trim(regex) != ""
    if not has_lark and not has_regex:
        raise InvalidInputError(f'Tool "{tool.get("name")}" cannot use grammar constrained sampling: '
                                "no supported grammar variant was provided.")
    try:
        definition = str(lark if has_lark else regex)
        return Grammar("lark" if has_lark else "regex", definition, _grammar_input_property(tool))
    except ValueError as exc:
        raise InvalidInputError(
            f'Tool "{tool.get("name")}" cannot use grammar constrained sampling: {exc}.') from None


def grammar_input_properties(tools: list[Json], supports_grammar_tools: bool) -> dict[str, str]:
    """pi-ai's ``createGrammarToolInputProperties``: tool name -> the one string argument its grammar fills."""
    out: dict[str, str] = {}
    for tool in tools:
        grammar = resolve_grammar(tool, supports_grammar_tools)
        if grammar is not None:
            out[tool["name"]] = grammar.input_property
    return out


def grammar_tool_input(name: str, arguments: Any, input_property: str) -> str:
    """pi-ai's ``getGrammarToolInput``: a grammar tool call's input text."""
    value = arguments.get(input_property) if isinstance(arguments, Mapping) else None
    if not isinstance(value, str):
        raise InvalidInputError(f'Grammar tool call "{name}" requires argument "{input_property}" to be a string.')
    return value

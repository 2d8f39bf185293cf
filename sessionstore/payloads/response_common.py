"""What pi-ai 1.6's stream functions share when they turn a provider response into an AssistantMessage:
the message they start from, ``calculateCost`` (from the registry's prices in ``models.json``),
OpenRouter's reported cost, and ``parseToolCallArguments``. Used by ``response_anthropic`` and
``response_openai``; see ``responses`` for the public converters."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from typing import Any

from sessionstore.errors import InvalidInputError
from sessionstore.models import js
from sessionstore.models.timestamps import now_ms
from sessionstore.models.wire import JsonObject as Json
from sessionstore.payloads.facts import ModelFacts, _registry, model_facts


def response_json(response: Any, what: str) -> Json:
    """The response as JSON data: a mapping (copied), JSON text, or an SDK model (pydantic's
    ``model_dump`` of the fields the provider sent, extras included). The SDKs are never imported."""
    if isinstance(response, str | bytes | bytearray):
        try:
            parsed: Any = json.loads(response)
        except ValueError as exc:
            raise InvalidInputError(f"the {what} is not JSON: {exc}") from None
    elif isinstance(response, Mapping):
        parsed = copy.deepcopy(dict(response))
    elif callable(getattr(response, "model_dump", None)):
        parsed = response.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False)
    else:
        raise InvalidInputError(f"expected the {what} as an SDK object, a mapping or JSON text, "
                                f"not {type(response).__name__}")
    if not isinstance(parsed, dict):
        raise InvalidInputError(f"the {what} must be a JSON object")
    return parsed


def response_model(provider: str, model: str | None, response: Json, api: str) -> ModelFacts:
    """The registry model a response is recorded under: ``model`` if given, else the response's own."""
    model_id = model if model is not None else response.get("model")
    if not isinstance(model_id, str) or not model_id:
        raise InvalidInputError("the response names no model: pass model=")
    facts = model_facts(provider, model_id)
    if facts.api != api:
        raise InvalidInputError(f"{provider} {model_id} uses the {facts.api} api, not {api}")
    return facts


def registry_cost(facts: ModelFacts) -> Json:
    """The model's prices (pi-ai's ``Model.cost``: dollars per million tokens, optional ``tiers``)."""
    cost: Json = _registry()["models"][facts.provider][facts.id].get("cost") or {}
    return cost


def start_message(facts: ModelFacts, timestamp: int | None) -> Json:
    """The AssistantMessage every ported stream function starts from (keys in its order)."""
    return {
        "role": "assistant",
        "content": [],
        "api": facts.api,
        "provider": facts.provider,
        "model": facts.id,
        "usage": zero_usage(),
        "stopReason": "pending",
        "timestamp": now_ms() if timestamp is None else timestamp,
    }


def zero_usage() -> Json:
    return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def number(value: Any) -> int | float:
    """JavaScript's ``value || 0`` for a token count."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) and js.truthy(value) else 0


def calculate_cost(cost: Mapping[str, Any], usage: Json) -> None:
    """pi-ai's ``calculateCost(model, usage)``: fills ``usage.cost`` from the prices (the highest tier
    whose ``inputTokensAbove`` the prompt exceeds; 1 h cache writes at twice the input price)."""
    input_tokens = usage["input"] + usage["cacheRead"] + usage["cacheWrite"]
    rates: Mapping[str, Any] = cost
    matched = -1
    for tier in cost.get("tiers") or []:
        above = tier["inputTokensAbove"]
        if input_tokens > above and above > matched:
            rates, matched = tier, above
    long_write = usage.get("cacheWrite1h") or 0
    short_write = usage["cacheWrite"] - long_write
    out = usage["cost"]
    out["input"] = (rates["input"] / 1000000) * usage["input"]
    out["output"] = (rates["output"] / 1000000) * usage["output"]
    out["cacheRead"] = (rates["cacheRead"] / 1000000) * usage["cacheRead"]
    out["cacheWrite"] = (rates["cacheWrite"] * short_write + rates["input"] * 2 * long_write) / 1000000
    out["total"] = out["input"] + out["output"] + out["cacheRead"] + out["cacheWrite"]
    out["totalFromProvider"] = False


def is_openrouter(facts: ModelFacts) -> bool:
    return facts.provider == "openrouter" or "openrouter.ai" in facts.base_url


def _valid_cost(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def apply_openrouter_cost(usage: Json, reported: Any) -> None:
    """pi-ai's ``applyOpenRouterReportedCost``: OpenRouter's billed total replaces the catalog's."""
    if not isinstance(reported, Mapping) or not _valid_cost(reported.get("cost")):
        return
    if reported.get("is_byok") is False:
        usage["cost"]["total"] = reported["cost"]
        usage["cost"]["totalFromProvider"] = True
        return
    if reported.get("is_byok") is True:
        details = reported.get("cost_details")
        if not js.truthy(details) or not isinstance(details, Mapping):
            return
        upstream: Any = details.get("upstream_inference_cost", js.MISSING)
        if upstream is None:
            prompt: Any = details.get("upstream_inference_prompt_cost")
            completion: Any = details.get("upstream_inference_completions_cost")
            if not _valid_cost(prompt) or not _valid_cost(completion):
                return
            upstream = prompt + completion
        if not _valid_cost(upstream):
            return
        usage["cost"]["total"] = reported["cost"] + upstream
        usage["cost"]["totalFromProvider"] = True


_VALID_ESCAPES = frozenset('"\\/bfnrt')
_CONTROL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_HEX = frozenset("0123456789abcdefABCDEF")


def repair_json(text: str) -> str:
    """pi-ai's ``repairJson``: inside strings, raw control characters are escaped and a backslash before
    a character that starts no JSON escape is doubled."""
    out: list[str] = []
    in_string = False
    index, end = 0, len(text)
    while index < end:
        char = text[index]
        if not in_string:
            out.append(char)
            in_string = char == '"'
        elif char == '"':
            out.append(char)
            in_string = False
        elif char == "\\":
            following = text[index + 1] if index + 1 < end else None
            if following is None:
                out.append("\\\\")
            elif following == "u" and len(digits := text[index + 2:index + 6]) == 4 and set(digits) <= _HEX:
                out.append("\\u" + digits)
                index += 5
            elif following in _VALID_ESCAPES:
                out.append("\\" + following)
                index += 1
            else:
                out.append("\\\\")
        elif ord(char) <= 0x1F:
            out.append(_CONTROL_ESCAPES.get(char) or f"\\u{ord(char):04x}")
        else:
            out.append(char)
        index += 1
    return "".join(out)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # Python's json reads NaN and Infinity; JSON.parse does not


def _json_parse(text: str) -> Any:
    """``JSON.parse`` as far as the value goes (the error's wording is Python's)."""
    return json.loads(text, parse_constant=_no_constant)


def parse_json_with_repair(text: str) -> Any:
    """pi-ai's ``parseJsonWithRepair``: the text's JSON value, else the value of the repaired text."""
    try:
        return _json_parse(text)
    except ValueError:
        repaired = repair_json(text)
        if repaired == text:
            raise
    return _json_parse(repaired)


def tool_arguments(text: Any) -> Json:
    """pi-ai's ``parseToolCallArguments`` of a tool call's complete argument text: ``{arguments}``, or
    ``{arguments: {}, argumentsError}`` for text that is not a JSON object even after ``repairJson``.
    A parse error is worded as Python's ``json`` words it (pi-ai's is V8's ``JSON.parse`` message);
    the rest of ``argumentsError`` is pi-ai's."""
    if not isinstance(text, str) or not text.strip():
        return {"arguments": {}}
    try:
        parsed = parse_json_with_repair(text)
        if not isinstance(parsed, dict):
            raise ValueError("Tool arguments must be a JSON object")
    except ValueError as exc:
        return {"arguments": {}, "argumentsError": f"{exc}\n\nReceived arguments:\n{text}"}
    return {"arguments": parsed}


def append_diagnostic(message: Json, kind: str, transformations: list[Json]) -> None:
    """pi-ai's ``appendAssistantMessageDiagnostic`` of an input-transformations report. pi-ai stamps it
    with ``Date.now()`` when the event arrives; the port with the message's own timestamp."""
    diagnostic = {"type": kind, "timestamp": message["timestamp"], "details": {"transformations": transformations}}
    message["diagnostics"] = [*(message.get("diagnostics") or []), diagnostic]


def fail(message: Json, error: str) -> Json:
    """The stream's catch block: the message so far, stopped with ``error`` and its message."""
    message["stopReason"] = "error"
    message["errorMessage"] = error
    return message

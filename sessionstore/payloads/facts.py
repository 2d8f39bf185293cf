"""The facts of pi-ai's model registry that a request payload depends on, read from ``models.json``
(written by ``registry/refresh.mjs`` from pi-ai's ``models.generated.js``; run it again to refresh)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from sessionstore.errors import InvalidInputError
from sessionstore.models.wire import JsonObject as Json


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """One model of pi-ai's registry as the request builders see it (pi-ai's ``Model`` fields of the same names).

    ``compat`` is the registry's ``compat`` object verbatim: each api applies its own defaults to it."""

    provider: str
    id: str
    api: str
    base_url: str
    reasoning: bool
    input: tuple[str, ...]
    max_tokens: int
    compat: Json = field(default_factory=dict)
    thinking_level_map: Json | None = None

    @property
    def images(self) -> bool:
        """Whether the model takes image input (``model.input.includes("image")``)."""
        return "image" in self.input

    def to_json(self) -> Json:
        out: Json = {"provider": self.provider, "id": self.id, "api": self.api, "baseUrl": self.base_url,
                     "reasoning": self.reasoning, "input": list(self.input), "maxTokens": self.max_tokens}
        if self.compat:
            out["compat"] = self.compat
        if self.thinking_level_map is not None:
            out["thinkingLevelMap"] = self.thinking_level_map
        return out


@cache
def _registry() -> Json:
    text = resources.files("sessionstore.payloads").joinpath("models.json").read_text(encoding="utf-8")
    registry: Json = json.loads(text)
    return registry


def registry_version() -> str:
    """The pi-ai version ``models.json`` was generated from."""
    return str(_registry()["piAi"])


def providers() -> list[str]:
    """The registry's providers, in its order."""
    return list(_registry()["models"])


def model_ids(provider: str) -> list[str]:
    """The ids of one provider's models, in the registry's order (``[]`` for an unknown provider)."""
    return list(_registry()["models"].get(provider, {}))


def model_facts(provider: str, model: str) -> ModelFacts:
    """The registry's facts of ``model`` of ``provider``, both named as pi-ai names them
    (``anthropic`` ``claude-opus-4-5``, ``openrouter`` ``openai/gpt-4.1``).

    Raises ``InvalidInputError`` for a provider or model the registry does not have."""
    by_id = _registry()["models"].get(provider)
    if by_id is None:
        raise InvalidInputError(f"pi-ai {registry_version()}'s registry has no provider {provider!r}")
    raw = by_id.get(model)
    if raw is None:
        raise InvalidInputError(f"pi-ai {registry_version()}'s registry has no model {model!r} of {provider!r}")
    return ModelFacts(
        provider=provider,
        id=model,
        api=raw["api"],
        base_url=raw["baseUrl"],
        reasoning=bool(raw["reasoning"]),
        input=tuple(raw["input"]),
        max_tokens=int(raw["maxTokens"]),
        compat=dict(raw.get("compat", {})),
        thinking_level_map=raw.get("thinkingLevelMap"),
    )

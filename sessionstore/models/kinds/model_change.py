"""``model_change``: the provider and model from here on (pi's ``ModelChangeEntry``)."""

from collections.abc import Mapping
from typing import Any, Literal

from sessionstore.models.kinds.base import EntryBase, EntryBaseDict, EntryKind
from sessionstore.models.wire import JsonObject as Json


class ModelChangeEntryDict(EntryBaseDict):
    type: Literal["model_change"]
    provider: str
    modelId: str


class ModelChangeEntry(EntryBase):
    type: Literal["model_change"] = "model_change"
    provider: str
    model_id: str


def build(entry: Mapping[str, Any], where: str) -> Json:
    return {"type": "model_change", "provider": entry.get("provider"), "modelId": entry.get("modelId")}


KIND = EntryKind("model_change", ModelChangeEntryDict, ModelChangeEntry, build)

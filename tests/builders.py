"""Small builders of pi wire data for hand-made session trees in tests."""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]
TS = "2025-01-01T00:00:00.000Z"
TS_MS = 1735689600000


def user(text: str, ts: int = TS_MS) -> Json:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def assistant(text: str = "", *calls: tuple[str, str, Json], stop: str | None = None, model: str = "m1",
              provider: str = "p1") -> Json:
    content: list[Json] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "toolCall", "id": cid, "name": name, "arguments": args} for cid, name, args in calls]
    return {
        "role": "assistant",
        "content": content,
        "api": "test-api",
        "provider": provider,
        "model": model,
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": stop or ("toolUse" if calls else "stop"),
        "timestamp": TS_MS,
    }


def result(call_id: str, name: str, text: str = "ok", *, is_error: bool = False) -> Json:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name,
            "content": [{"type": "text", "text": text}], "isError": is_error, "timestamp": TS_MS}


def entry(entry_id: str, parent: str | None, kind: str = "message", **fields: Any) -> Json:
    return {"type": kind, "id": entry_id, "parentId": parent, "timestamp": TS, **fields}


def msg(entry_id: str, parent: str | None, message: Json) -> Json:
    return entry(entry_id, parent, "message", message=message)

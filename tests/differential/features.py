"""What a set of session files exercises, so that a match against pi means something."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

Json = dict[str, Any]

# Every entry type, message role and operation the oracle's generator must have produced (a word list
# is easier to read and extend than a list literal, hence the noqa).
EXPECTED_FEATURES = frozenset(
    """
    entry:message entry:thinking_level_change entry:model_change entry:compaction entry:branch_summary
    entry:custom entry:custom_message entry:label entry:session_info entry:context_edit entry:usage
    role:user role:assistant role:toolResult role:bashExecution role:custom role:system
    user:string user:blocks user:image
    assistant:thinking-signed assistant:thinking-unsigned assistant:redacted-thinking assistant:toolCall
    assistant:stop-stop assistant:stop-length assistant:stop-toolUse assistant:stop-error assistant:stop-aborted
    toolResult:isError toolResult:image toolResult:details
    bash:nonzero-exit bash:no-exit-code bash:cancelled bash:truncated-with-path bash:excluded
    custom-role:string custom-role:blocks
    system:string system:blocks system:section-text system:section-null system:toolsAdded system:toolsRemoved
    compaction:systemMessage compaction:no-systemMessage compaction:keeps-nothing compaction:keeps-some
    compaction:details compaction:usage compaction:first-kept-off-path
    branch_summary:empty branch_summary:new-root branch_summary:from-root
    custom_message:string custom_message:blocks custom_message:hidden custom_message:details
    label:set label:clear
    context_edit:null context_edit:string context_edit:blocks
    usage:note
    tree:branched tree:several-roots fork profile:classic profile:pi16
    """.split()  # noqa: SIM905
)


def when(named: dict[str, Any]) -> set[str]:
    """The names whose condition holds."""
    return {name for name, condition in named.items() if condition}


def message_features(m: Json) -> set[str]:
    role = m["role"]
    content = m.get("content")
    blocks = content if isinstance(content, list) else []
    types = {b.get("type") for b in blocks}
    thinking = [b for b in blocks if b.get("type") == "thinking"]
    sections = m.get("sections", {}).values() if role == "system" else []
    kind = "string" if isinstance(content, str) else "blocks"
    return {f"role:{role}"} | when(
        {
            f"user:{kind}": role == "user",
            "user:image": role == "user" and "image" in types,
            f"custom-role:{kind}": role == "custom",
            "assistant:thinking-signed": any(b.get("thinkingSignature") and not b.get("redacted") for b in thinking),
            "assistant:thinking-unsigned": any(not b.get("thinkingSignature") for b in thinking),
            "assistant:redacted-thinking": any(b.get("redacted") for b in thinking),
            "assistant:toolCall": "toolCall" in types,
            f"assistant:stop-{m.get('stopReason')}": role == "assistant",
            "toolResult:isError": role == "toolResult" and m["isError"],
            "toolResult:image": role == "toolResult" and "image" in types,
            "toolResult:details": role == "toolResult" and "details" in m,
            "bash:nonzero-exit": role == "bashExecution" and m.get("exitCode") not in (None, 0),
            "bash:no-exit-code": role == "bashExecution" and "exitCode" not in m,
            "bash:cancelled": role == "bashExecution" and m["cancelled"],
            "bash:truncated-with-path": role == "bashExecution" and m["truncated"] and "fullOutputPath" in m,
            "bash:excluded": role == "bashExecution" and m.get("excludeFromContext") is True,
            f"system:{kind}": role == "system",
            "system:section-text": any(v is not None for v in sections),
            "system:section-null": any(v is None for v in sections),
            "system:toolsAdded": role == "system" and "toolsAdded" in m,
            "system:toolsRemoved": role == "system" and "toolsRemoved" in m,
        }
    )


def features(entry: Json) -> set[str]:
    """The features of one entry, as named in ``EXPECTED_FEATURES``."""
    kind = entry.get("type")
    found = {f"entry:{kind}"}
    if kind == "message":
        found |= message_features(entry["message"])
    elif kind == "compaction":
        found |= when(
            {
                "compaction:systemMessage": "systemMessage" in entry,
                "compaction:no-systemMessage": "systemMessage" not in entry,
                "compaction:keeps-nothing": entry["firstKeptEntryId"] == entry["id"],
                "compaction:keeps-some": entry["firstKeptEntryId"] != entry["id"],
                "compaction:details": "details" in entry,
                "compaction:usage": "usage" in entry,
            }
        )
    elif kind == "branch_summary":
        found |= when(
            {
                "branch_summary:empty": entry["summary"] == "",
                "branch_summary:new-root": entry["parentId"] is None,
                "branch_summary:from-root": entry["fromId"] == "root",
            }
        )
    elif kind == "custom_message":
        found |= when(
            {
                "custom_message:string": isinstance(entry["content"], str),
                "custom_message:blocks": isinstance(entry["content"], list),
                "custom_message:hidden": not entry["display"],
                "custom_message:details": "details" in entry,
            }
        )
    elif kind == "label":
        found.add("label:set" if entry.get("label") else "label:clear")
    elif kind == "context_edit":
        replacement = entry["replacement"]
        content = None if replacement is None else replacement["content"]
        found |= when(
            {
                "context_edit:null": replacement is None,
                "context_edit:string": isinstance(content, str),
                "context_edit:blocks": isinstance(content, list),
            }
        )
    elif kind == "usage":
        found |= when({"usage:note": "note" in entry})
    return found


def file_features(path: Path) -> set[str]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    header, entries = lines[0], lines[1:]
    found = {"fork"} if "parentSession" in header else set()
    children = Counter(e["parentId"] for e in entries)
    if any(n > 1 for parent, n in children.items() if parent is not None):
        found.add("tree:branched")
    if children[None] > 1:
        found.add("tree:several-roots")
    parents = {e["id"]: e["parentId"] for e in entries}
    for entry in entries:
        found |= features(entry)
        if entry["type"] == "compaction" and entry["firstKeptEntryId"] not in (entry["id"], *ancestors(parents, entry)):
            found.add("compaction:first-kept-off-path")
    return found


def ancestors(parents: dict[str, str | None], entry: Json) -> list[str]:
    out: list[str] = []
    current = entry["parentId"]
    while current is not None and current in parents:
        out.append(current)
        current = parents[current]
    return out

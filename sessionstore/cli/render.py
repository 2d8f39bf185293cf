"""Readable renderings of contexts, trees, sessions and diagnostics for people (not parsed).

Session data can hold anything, so every rendering goes through :func:`safe_text`: characters that a
terminal would act on or show as nothing (escape sequences, other C0 and C1 controls, DEL, the line and
paragraph separators U+2028/U+2029, every format character: bidirectional marks, embeddings, overrides
and isolates, zero-width characters, the BOM, tag characters) are shown as escapes (``\\x1b``,
``\\u202e``, ``\\u2028``, ``\\U000e0041``) instead of being sent to the terminal, and lone surrogates as
``\\udxxx`` (they cannot be encoded). ``--json`` output is JSON and keeps them as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sessionstore.models.js import json_type
from sessionstore.models.roles import role_of
from sessionstore.wire.jsjson import js_dumps

if TYPE_CHECKING:
    from sessionstore.api import ContextResult
    from sessionstore.store.records import SessionInfo, TreeNode
    from sessionstore.validate import Diagnostic

# What a terminal acts on or shows as nothing, besides newline and tab: C0 controls, DEL, C1 controls
# (NEL among them), the line and paragraph separators (U+2028/9: a line break to some terminals and
# viewers), every format character (Unicode category Cf: the bidi marks, embeddings, overrides and
# isolates, zero-width spaces, the soft hyphen, word joiner and invisible operators, the BOM,
# interlinear annotations, the tag characters U+E0000-E007F: invisible, so text could hide in them),
# and surrogates (a pair held as two code points is one character; a lone one cannot be encoded).
# One list, for every text output (tests/test_cli_hostile.py holds it to unicodedata's Cf). The two
# joiners U+200C/U+200D are not in it: emoji sequences and Indic and Persian text need them to render.
_FORMAT_CHARACTERS = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b\u200e\u200f"
                      "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
                      "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
_TERMINAL_ACTS_ON = f"\x7f-\x9f\u2028\u2029{_FORMAT_CHARACTERS}"
_SURROGATES = "[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]"
_UNSAFE = re.compile(f"\r\n|[\x00-\x08\x0b-\x1f{_TERMINAL_ACTS_ON}]|{_SURROGATES}")
_UNSAFE_IN_LINE = re.compile(f"[\x00-\x1f{_TERMINAL_ACTS_ON}]|{_SURROGATES}")
_SHORT = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    text = match.group()
    if text == "\r\n":
        return "\n"
    if len(text) == 2:  # a surrogate pair
        return chr(0x10000 + ((ord(text[0]) - 0xD800) << 10) + (ord(text[1]) - 0xDC00))
    code = ord(text)
    if text in _SHORT:
        return _SHORT[text]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogates(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def safe_text(text: str) -> str:
    """``text`` with nothing a terminal acts on but newlines and tabs (CRLF becomes a newline; other
    controls, bidi overrides and lone surrogates become visible escapes). Applying it twice changes
    nothing more."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def safe_line(text: str) -> str:
    """:func:`safe_text` for one line of a table or a header: newlines and tabs are escaped too."""
    return _UNSAFE_IN_LINE.sub(_escape, text) if _UNSAFE_IN_LINE.search(text) else text


def clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more chars]"


def _blocks(content: Any, limit: int | None) -> list[str]:
    if isinstance(content, str):
        return [clip(content, limit)]
    lines: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            lines.append(f"<{type(block).__name__}>")
            continue
        kind = block.get("type")
        if kind == "text":
            lines.append(clip(text_of(block.get("text", "")), limit))
        elif kind == "thinking":
            lines.append("(thinking) " + clip(text_of(block.get("thinking", "")), limit))
        elif kind == "toolCall":
            args = js_dumps(block.get("arguments"))
            lines.append(f"→ {shown(block.get('name'))}({clip(args, limit)})  [call {shown(block.get('id'))}]")
        elif kind == "image":
            lines.append(f"<image {shown(block.get('mimeType'))}>")
        else:
            lines.append(f"<{shown(kind)}>")
    return lines


def shown(value: Any) -> str:
    """A value in text output: ``-`` for one that is missing (never Python's ``None``)."""
    return "-" if value is None else text_of(value)


def text_of(value: Any) -> str:
    """A value of the session's data as text: a string as it is, anything else as its JSON (a role, a
    name or a text that is an object reads as JSON, never as a Python repr)."""
    return value if isinstance(value, str) else js_dumps(value)


def role_label(message: Any) -> str:
    """How text output names a message's role: the role when it is a string, else its JSON, and a
    message that is not an object (pi keeps it in the context, and sends nothing of it) by its type."""
    if not isinstance(message, Mapping):
        return f"({json_type(message)}, not a message)"
    if "role" not in message:
        return "(no role)"
    role = message["role"]
    return role if isinstance(role, str) else js_dumps(role)


def _quoted(value: Any) -> str:
    """A label or name as text output quotes it (a string as Python's repr, else its JSON)."""
    return repr(value) if isinstance(value, str) else js_dumps(value)


def message_lines(message: Any, limit: int | None) -> list[str]:
    """A message's head line and indented body (a message that is not an object: its JSON)."""
    if not isinstance(message, Mapping):
        return [role_label(message), "    " + clip(js_dumps(message), limit)]
    role = role_of(message)
    if role == "assistant":
        head = (f"assistant ({shown(message.get('provider'))}/{shown(message.get('model'))},"
                f" stop: {shown(message.get('stopReason'))})")
        body = _blocks(message.get("content"), limit)
        if message.get("errorMessage"):
            body.append(f"error: {text_of(message['errorMessage'])}")
    elif role == "toolResult":
        head = f"toolResult {shown(message.get('toolName'))} [call {shown(message.get('toolCallId'))}]" + (
            " (error)" if message.get("isError") else ""
        )
        body = _blocks(message.get("content"), limit)
    elif role == "bashExecution":
        head = f"bashExecution $ {shown(message.get('command'))} (exit {shown(message.get('exitCode'))})"
        body = [clip(text_of(message.get("output", "")), limit)]
    elif role in ("compactionSummary", "branchSummary"):
        head = str(role)
        body = [clip(text_of(message.get("summary", "")), limit)]
    elif role == "custom":
        head = f"custom {shown(message.get('customType'))}"
        body = _blocks(message.get("content"), limit)
    else:
        head = role_label(message)
        body = _blocks(message.get("content"), limit)
    return [head] + ["    " + line.replace("\n", "\n    ") for line in body]


def render_context(result: ContextResult, *, limit: int | None = 400) -> str:
    model = result.model
    named = "-" if not model else f"{shown(model.get('provider'))}/{shown(model.get('modelId'))}"
    out = [
        safe_line(f"session {result.session_id}  leaf {shown(result.leaf_id)}"),
        safe_line(f"model {named}  thinking {shown(result.thinking_level)}"),
        f"{len(result.messages)} messages, {len(result.llm)} sent to the model",
        "",
    ]
    for index, message in enumerate(result.messages):
        lines = message_lines(message, limit)
        entry = result.entry_ids[index] if index < len(result.entry_ids) else None
        out.append(safe_line(f"[{index}] {lines[0]}  ({shown(entry)})"))
        out.extend(lines[1:])
    out.append("")
    out.append(render_diagnostics(result.diagnostics))
    return safe_text("\n".join(out))


def render_diagnostics(diagnostics: Sequence[Diagnostic]) -> str:
    if not diagnostics:
        return "diagnostics: none"
    return "\n".join([f"diagnostics: {len(diagnostics)}", *(_diagnostic_line(d) for d in diagnostics)])


_SEVERITY_HEADINGS = {
    "error": "errors (the provider-safe projection cannot repair them)",
    "repaired": "repaired by the provider-safe projection (context --provider-safe, as pi-ai before each call)",
    "warning": "warnings",
}


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def validation_verdict(session_id: str, leaf_id: str | None, *, errors: int, repaired: int, warnings: int) -> str:
    """``validate``'s last line: the session, the leaf, valid or not, and what was found."""
    found = [part for n, part in ((errors, _count(errors, "error")), (repaired, f"{repaired} repaired"),
                                  (warnings, _count(warnings, "warning"))) if n]
    state = "invalid" if errors else "valid"
    return safe_line(f"session {session_id} at leaf {shown(leaf_id)}: {state}"
                     + (f" ({', '.join(found)})" if found else " (nothing found)"))


def render_validation(findings: Sequence[tuple[str, Diagnostic]], verdict: str) -> str:
    """``validate``'s text: the findings grouped by severity (errors first), then the verdict line."""
    lines: list[str] = []
    for severity, heading in _SEVERITY_HEADINGS.items():
        group = [d for s, d in findings if s == severity]
        if group:
            lines.append(f"{heading}: {len(group)}")
            lines.extend(_diagnostic_line(d) for d in group)
    lines.append(verdict)
    return "\n".join(lines)


def _diagnostic_line(d: Diagnostic) -> str:
    where = f"message {d.message_index}" if d.message_index is not None else "transcript"
    entry = f", entry {d.entry_id}" if d.entry_id else ""
    return safe_line(f"  {d.code} ({where}{entry}): {d.message}")


def describe_entry(entry: dict[str, Any]) -> str:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        head = role_label(message)
        text = clip(" ".join(" ".join(message_lines(message, None)[1:]).split()), 70)
        return f"{head}: {text}" if text else head
    if kind == "model_change":
        return f"model → {shown(entry.get('provider'))}/{shown(entry.get('modelId'))}"
    if kind == "thinking_level_change":
        return f"thinking → {shown(entry.get('thinkingLevel'))}"
    if kind == "compaction":
        return (f"compaction (keeps from {shown(entry.get('firstKeptEntryId'))},"
                f" {shown(entry.get('tokensBefore'))} tokens before)")
    if kind == "branch_summary":
        return f"branch summary (from {shown(entry.get('fromId'))}): {clip(text_of(entry.get('summary', '')), 60)}"
    if kind == "label":
        label, target = entry.get("label"), shown(entry.get("targetId"))
        return f"label {target} cleared" if label is None else f"label {target} = {_quoted(label)}"
    if kind == "session_info":
        return "name cleared" if entry.get("name") is None else f"name = {_quoted(entry.get('name'))}"
    if kind == "custom":
        return f"custom {shown(entry.get('customType'))}"
    if kind == "custom_message":
        return f"custom message {shown(entry.get('customType'))}"
    if kind == "context_edit":
        target = shown(entry.get("targetId"))
        return f"context edit: {target} omitted" if entry.get("replacement") is None else f"context edit of {target}"
    if kind == "usage":
        return f"usage {shown(entry.get('kind'))} ({shown(entry.get('provider'))}/{shown(entry.get('model'))})"
    return shown(kind)


FOLD_AT = 8
"""A run of more entries than this, each the only child of the one before (none labelled, all on the
active path or all off it), is folded to its first and last :data:`FOLD_KEEP` (``tree --full`` shows all)."""
FOLD_KEEP = 2
ACTIVE_STYLE = "\x1b[1;32m"
RESET_STYLE = "\x1b[0m"


def render_tree(roots: Iterable[TreeNode], *, full: bool = False, color: bool = False) -> str:
    """The tree, one line per entry: ``*`` marks the active path, ``├─``/``└─`` start the branches of a
    fork (a chain of single children stays at one indent, ``│`` continues a branch that has a sibling
    below), labels in brackets; long linear runs are folded unless ``full``. ``color``: the active path
    in bold green (for a terminal). Entry text is escaped here: the result may be written as it is."""
    lines: list[str] = []
    # (node, prefix of its line, prefix of the lines below it), depth first with an explicit stack
    stack: list[tuple[TreeNode, str, str]] = [(node, "", "") for node in reversed(list(roots))]
    while stack:
        node, first, rest = stack.pop()
        run = [node]
        while not full and _continues(run[-1]):
            run.append(run[-1].children[0])
        shown: list[TreeNode | int] = [*run[:FOLD_KEEP], len(run) - 2 * FOLD_KEEP, *run[-FOLD_KEEP:]] \
            if len(run) > FOLD_AT else list(run)
        for i, item in enumerate(shown):
            prefix = first if i == 0 else rest
            if isinstance(item, int):
                lines.append(_tree_line(run[FOLD_KEEP].on_active_path, prefix, f"⋮ {item} more entries", color))
            else:
                label = f" [{item.label}]" if item.label else ""
                text = safe_line(f"{item.entry.get('id')}{label} {describe_entry(item.entry)}")
                lines.append(_tree_line(item.on_active_path, prefix, text, color))
        children = run[-1].children
        for index in range(len(children) - 1, -1, -1):
            if len(children) == 1:
                stack.append((children[index], rest, rest))
            elif index == len(children) - 1:
                stack.append((children[index], rest + "└─ ", rest + "   "))
            else:
                stack.append((children[index], rest + "├─ ", rest + "│  "))
    lines.append("(* = on the active path)")
    return "\n".join(lines)


def _continues(node: TreeNode) -> bool:
    """Whether a foldable run goes on past ``node``: its only child, unlabelled as it is, on the same side
    of the active path (the leaf, a label and a fork end a run)."""
    if len(node.children) != 1 or node.label is not None:
        return False
    child = node.children[0]
    return child.label is None and child.on_active_path == node.on_active_path


def _tree_line(active: bool, prefix: str, text: str, color: bool) -> str:
    mark = "*" if active else " "
    if color and active:
        mark = f"{ACTIVE_STYLE}*{RESET_STYLE}"
    return f"{mark} {prefix}{text}"


def ms_to_iso(ms: int | None) -> str:
    if ms is None:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, ValueError, OSError):  # a timestamp from the data beyond what datetime holds
        return str(ms)


_PICKER_CONTROLS = re.compile("[\x00-\x1f\x7f]")


def picker_text(info: SessionInfo) -> str:
    """What pi 1.6's session picker shows of a session: its name, else its first message (``(no
    messages)`` without one), C0 controls and DEL as spaces, trimmed (``session-selector``)."""
    text = info.name or info.first_message or "(no messages)"
    return safe_line(_PICKER_CONTROLS.sub(" ", text).strip())


def display_width(text: str) -> int:
    """Terminal columns of ``text``: wide and fullwidth characters take two, combining marks and
    zero-width format characters none."""
    import unicodedata

    width = 0
    for char in text:
        if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def truncate_to_width(text: str, width: int, ellipsis: str = "…") -> str:
    """``text`` cut to fit ``width`` columns with ``ellipsis`` at the end (pi-tui's ``truncateToWidth``)."""
    if display_width(text) <= width:
        return text
    room = max(0, width - display_width(ellipsis))
    out, used = [], 0
    for char in text:
        w = display_width(char)
        if used + w > room:
            break
        out.append(char)
        used += w
    return "".join(out) + ellipsis


PICKER_MIN_WIDTH = 10
"""The fewest columns the message column gets however narrow the terminal (pi's picker: 10)."""
PATH_MIN_WIDTH = 10
"""The fewest columns CWD and SOURCE are cut to (from the left, with ``…``) to make room for the message."""
MESSAGE_GOAL = 20
"""The columns the message column should get before the ID is shortened and ACTIVE dropped."""
SHORT_ID = 8
"""The shortest ID prefix a narrow ``ls`` shows (``rm`` takes a prefix of this length)."""


def _source_cell(path: str | None, gone: Container[str]) -> str:
    if path is None:
        return "-"
    return f"{path} (gone)" if path in gone else path


def cut_left(text: str, width: int, ellipsis: str = "…") -> str:
    """``text`` cut to fit ``width`` columns by dropping its start, ``ellipsis`` first (a path keeps its end)."""
    if display_width(text) <= width:
        return text
    room = max(0, width - display_width(ellipsis))
    out: list[str] = []
    used = 0
    for char in reversed(text):
        w = display_width(char)
        if used + w > room:
            break
        out.append(char)
        used += w
    return ellipsis + "".join(reversed(out))


def _short_ids(ids: Sequence[str], known: Sequence[str]) -> list[str]:
    """Each of ``ids`` as its shortest prefix of at least :data:`SHORT_ID` characters that no other of
    ``ids`` and ``known`` starts with (what a SESSION argument resolves)."""
    ordered = sorted({*ids, *known})
    place = {sid: index for index, sid in enumerate(ordered)}

    def common(a: str, b: str) -> int:
        return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))

    out = []
    for sid in ids:
        index = place[sid]
        neighbours = ordered[max(0, index - 1):index] + ordered[index + 1:index + 2]
        out.append(sid[:max([SHORT_ID, *(common(sid, other) + 1 for other in neighbours)])])  # (none: the only one)
    return out


def _fit_paths(widths: list[int], floors: list[int], room: int) -> list[int]:
    """``widths`` of the path columns cut (the widest first, none below its floor) to fit ``room``."""
    widths = list(widths)
    while sum(widths) > room:
        widest = max(range(len(widths)), key=lambda c: widths[c] - floors[c])
        if widths[widest] <= floors[widest]:
            break
        widths[widest] -= 1
    return widths


def render_sessions(infos: Sequence[SessionInfo], *, width: int | None = None, gone: Container[str] = (),
                    known_ids: Callable[[], Sequence[str]] = tuple) -> str:
    """The ``ls`` table, with what pi's session picker shows of each session: MODIFIED is pi's (the
    last message), ACTIVE the last activity of any kind, MSGS pi's message count, and last the name or
    else the first message (:func:`picker_text`). SOURCE, the synced file, only when a session has one,
    ``(gone)`` after it when it is in ``gone``.

    Cut to fit ``width`` columns (``None``: nothing is cut): first CWD and SOURCE are cut from the left
    (``…``, down to :data:`PATH_MIN_WIDTH`) so the message shows whole; when the message would still get
    fewer than :data:`MESSAGE_GOAL` columns the IDs are shortened to prefixes (at least :data:`SHORT_ID`
    characters) unique among them and ``known_ids()`` (the store's others), then ACTIVE is left out.
    The message is then cut to the room left (at least :data:`PICKER_MIN_WIDTH`), and each line to
    ``width``, as pi's picker does."""
    if not infos:
        return "no sessions"
    synced = any(i.source_path is not None for i in infos)
    ids = [safe_line(i.id) for i in infos]
    messages = ["NAME OR FIRST MESSAGE", *(picker_text(i) for i in infos)]
    paths = [["CWD", *(safe_line(i.cwd) for i in infos)]]
    if synced:
        paths.append(["SOURCE", *(safe_line(_source_cell(i.source_path, gone)) for i in infos)])
    times = [["MODIFIED", *(ms_to_iso(i.modified_ms) for i in infos)],
             ["ACTIVE", *(ms_to_iso(i.active_ms) for i in infos)]]
    counts = ["MSGS", *(str(i.message_count) for i in infos)]
    natural = [max(display_width(cell) for cell in column) for column in paths]
    wanted = max(display_width(m) for m in messages)
    short: list[str] = []

    def shortened() -> list[str]:
        if not short:
            short.extend(["ID", *_short_ids(ids, [safe_line(sid) for sid in known_ids()])])
        return short

    layouts = [(False, times), (True, times), (True, times[:1])]
    for attempt, (shorten, shown_times) in enumerate(layouts):
        fixed = [shortened() if shorten else ["ID", *ids], *shown_times, counts]
        lead = sum(max(display_width(c) for c in column) for column in fixed) + 2 * (len(fixed) + len(paths))
        if width is None:
            path_widths = natural
            break
        floors = [min(n, PATH_MIN_WIDTH) for n in natural]
        path_widths = _fit_paths(natural, floors, width - lead - wanted)
        if width - lead - sum(path_widths) >= min(wanted, MESSAGE_GOAL) or attempt == len(layouts) - 1:
            break
    columns = [*fixed, *([cut_left(cell, w) for cell in column] for column, w in zip(paths, path_widths, strict=True))]
    widths = [max(display_width(cell) for cell in column) for column in columns]
    room = None if width is None else max(PICKER_MIN_WIDTH, width - sum(widths) - 2 * len(columns))
    lines: list[str] = []
    for r in range(len(messages)):
        padded = [column[r] + " " * (widths[c] - display_width(column[r])) for c, column in enumerate(columns)]
        last = messages[r] if room is None else truncate_to_width(messages[r], room)
        line = ("  ".join(padded) + "  " + last).rstrip()
        lines.append(line if width is None else truncate_to_width(line, width))  # (as pi cuts each line)
    return "\n".join(lines)

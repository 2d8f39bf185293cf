"""Paths of the data the tests use (all inside the repository)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
PI_FILES = {
    "large-session": FIXTURES / "pi" / "large-session.jsonl",
    "before-compaction": FIXTURES / "pi" / "before-compaction.jsonl",
}

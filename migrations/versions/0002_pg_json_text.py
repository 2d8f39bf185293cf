"""PostgreSQL keeps payloads as ``json`` (the text as written) instead of ``jsonb``.

``jsonb`` reorders keys and re-spaces the text, so an export had to decode and re-encode every
entry (about 0.1x the speed of writing the lines) and was equal to the imported file only object
for object. ``json`` stores the line pi wrote, as SQLite does: exports write it back byte for byte,
imports skip the binary conversion, and reads get the text without a server-side re-encode. The
store queries no field inside a payload, so nothing needs ``jsonb``'s operators. SQLite: no change.

Entries stored before this revision come out of ``jsonb`` as PostgreSQL prints it (spaces after
``:`` and ``,``, numbers in numeric form); they are rewritten once as pi writes lines (``dump_line``),
in the key order ``jsonb`` kept. Going back to ``jsonb`` is refused, naming the entries, when a
payload holds ``\\u0000`` (``json`` stores it; ``jsonb`` cannot).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from typing import Any

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

BATCH = 2_000


def _retype(to: str) -> None:
    # The append-only trigger refuses UPDATE of rows, not a change of column type (no row trigger
    # fires for ALTER TABLE); the rewrite keeps each stored value, re-rendered by the new type.
    op.execute(f"ALTER TABLE entries ALTER COLUMN payload TYPE {to} USING payload::text::{to}")
    op.execute(f"ALTER TABLE sessions ALTER COLUMN header TYPE {to} USING header::text::{to}")
    op.execute(
        """DO $$ BEGIN
             ALTER TABLE entries ALTER COLUMN payload SET COMPRESSION lz4;
           EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN NULL;
           END $$"""
    )


def _rewrite_as_pi_lines() -> None:
    """Every payload as the line pi would write (the export writes stored text as it is)."""
    from sessionstore.wire.codec import json_loads
    from sessionstore.wire.jsonl import dump_line

    driver: Any = op.get_bind().connection.driver_connection
    op.execute("ALTER TABLE entries DISABLE TRIGGER entries_append_only")
    with driver.cursor(name="sessionstore_0002_payloads") as rows, driver.cursor() as update:
        rows.execute("SELECT session_id, seq, payload::text FROM entries")
        while batch := rows.fetchmany(BATCH):
            changed = []
            for session_id, seq, text in batch:
                line = dump_line(json_loads(text))[:-1].decode("utf-8", "surrogatepass")
                if line != text:
                    changed.append((line, session_id, seq))
            update.executemany("UPDATE entries SET payload = CAST(%s AS json) WHERE session_id = %s AND seq = %s",
                               changed)
    op.execute("ALTER TABLE entries ENABLE TRIGGER entries_append_only")


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(v) for v in value)
    return False


def _refuse_nul_for_jsonb() -> None:
    import json

    found = []
    for session_id, entry_id, text in op.get_bind().exec_driver_sql(
        "SELECT session_id, entry_id, payload::text FROM entries WHERE strpos(payload::text, '\\u0000') > 0"
        " UNION ALL SELECT id, NULL, header::text FROM sessions WHERE strpos(header::text, '\\u0000') > 0"
    ):
        if _holds_nul(json.loads(text)):
            found.append(f"{session_id}/{entry_id or 'header'}")
    if found:
        raise RuntimeError(
            f"cannot go back below revision 0002: {len(found)} payload(s) hold \\u0000, which jsonb cannot store"
            f" (session/entry: {', '.join(found[:10])}{' ...' if len(found) > 10 else ''})"
        )


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _retype("json")
    _rewrite_as_pi_lines()


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _refuse_nul_for_jsonb()
    _retype("jsonb")

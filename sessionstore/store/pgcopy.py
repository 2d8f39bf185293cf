"""PostgreSQL: a session's stored payloads streamed out with ``COPY ... (FORMAT binary)`` (export)."""

from __future__ import annotations

from typing import IO

from sessionstore.errors import StoreError
from sessionstore.store.rawtx import RawTx

_PGCOPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"


def copy_payloads_out(tx: RawTx, session_id: str, fp: IO[bytes]) -> int:
    """PostgreSQL: stream the session's payloads in append order with ``COPY ... (FORMAT binary)``,
    writing each stored text and a newline; returns the entries written.

    About twice as fast as fetching rows: no per-row result objects, and the binary format needs no
    unescaping (a ``json`` value is sent as its text). Format: signature, flags, header extension,
    then per row a field count (1), the length and the bytes; a field count of -1 ends the data."""
    buf = bytearray()
    pos = 0
    count = 0
    started = False
    with tx.cursor.copy(
        "COPY (SELECT payload FROM entries WHERE session_id = %s ORDER BY seq) TO STDOUT (FORMAT binary)",
        (session_id,),
    ) as copy:
        for chunk in copy:
            buf += chunk
            if len(buf) - pos < 1 << 20:
                continue
            if not started:
                pos, started = _pgcopy_header(buf), True
            out, rows, pos = _pgcopy_rows(buf, pos)
            fp.write(out)
            count += rows
            del buf[:pos]
            pos = 0
    if not started:
        pos = _pgcopy_header(buf)
    out, rows, pos = _pgcopy_rows(buf, pos)
    if buf[pos : pos + 2] != b"\xff\xff":
        raise StoreError("PostgreSQL COPY ended without its trailer")
    fp.write(out)
    return count + rows


def _pgcopy_header(buf: bytearray) -> int:
    if buf[:11] != _PGCOPY_SIGNATURE:
        raise StoreError("PostgreSQL COPY did not start with the binary signature")
    return 19 + int.from_bytes(buf[15:19], "big")


def _pgcopy_rows(buf: bytearray, pos: int) -> tuple[bytes, int, int]:
    """The complete rows from ``pos`` on, each as its text and a newline; how many; where the rest starts."""
    view = memoryview(buf)
    try:
        parts: list[memoryview] = []
        end = len(buf)
        while pos + 6 <= end and buf[pos : pos + 2] == b"\x00\x01":
            length = int.from_bytes(buf[pos + 2 : pos + 6], "big")
            if pos + 6 + length > end:
                break
            parts.append(view[pos + 6 : pos + 6 + length])
            pos += 6 + length
        out = b"\n".join(parts) + b"\n" if parts else b""
        rows = len(parts)
        for part in parts:
            part.release()
    finally:
        view.release()
    return out, rows, pos

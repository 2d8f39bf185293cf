"""Memory a worker freed, given back to the system.

A body built from a whole session (a context, an export) allocates many medium-sized objects (strings of
a message's size) in its worker thread. glibc's ``malloc`` keeps what is freed in the thread's arena for
later use, and with several writer threads each arena keeps the peak of the largest body it wrote: the
worker's RSS climbs with the largest sessions read, and stays there. ``malloc_trim(0)`` returns the free
pages of every arena to the system (it walks the heaps: a few milliseconds), so :func:`give_back` is
called after a large body only. Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from typing import Any

_lock = threading.Lock()
_libc: Any = None
_looked = False


def _glibc() -> Any:
    global _libc, _looked
    if not _looked:
        _looked = True
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                _libc = libc if hasattr(libc, "malloc_trim") else None
            except OSError:
                _libc = None
    return _libc


def give_back() -> bool:
    """Return the free memory of every malloc arena to the system; whether it could (glibc only)."""
    with _lock:  # (one trim at a time: they would walk the same heaps)
        libc = _glibc()
        if libc is None:
            return False
        libc.malloc_trim(0)
        return True

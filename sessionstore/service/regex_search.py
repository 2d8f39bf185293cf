"""A ``re:`` search of the service, run in a child process with a deadline.

A JavaScript regex may backtrack for longer than anyone waits (``re:(a+)+b`` against forty ``a``): pi
runs it as it is, and so does the library. In a service one tenant's pattern must not hold a worker: a
Python ``re`` match keeps the GIL, so in a thread it would stall every request of the worker's event
loop, and it cannot be interrupted. So ``serve`` runs a ``re:`` search in a child process (spawned: no
fork of a threaded server) that opens the database itself, and kills it at the deadline (``serve
--regex-timeout``); the request then fails with ``INVALID_INPUT``, naming the time. At most
:data:`CHILDREN` such searches run at once per worker; the others wait their turn.
"""

from __future__ import annotations

import multiprocessing
import threading
from typing import Any

from sessionstore.errors import InvalidInputError, SessionStoreError, StoreError

CHILDREN = 2
"""``re:`` searches one worker runs at a time."""
_turns = threading.BoundedSemaphore(CHILDREN)


def search_in_child(url: str, tenant: str, query: str, options: dict[str, Any], timeout_s: float
                    ) -> list[dict[str, Any]]:
    """``SessionStore(url, tenant=tenant).search(query, **options)`` as JSON (``SearchResult.to_json``),
    computed in a child process that is killed after ``timeout_s`` seconds. The library's errors come
    back as themselves; the deadline is :class:`InvalidInputError`."""
    context = multiprocessing.get_context("spawn")
    with _turns:
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=_search, args=(url, tenant, query, options, send), daemon=True,
                                name="sessionstore-regex-search")
        child.start()
        send.close()
        try:
            if not receive.poll(timeout_s):
                raise InvalidInputError(f"the search {query!r} ran for {timeout_s:g} s and was stopped (a regex"
                                        " that backtracks, or too much text for it): narrow the pattern")
            kind, value = receive.recv()
        except EOFError:
            raise StoreError("the search's process ended without an answer") from None
        finally:
            if child.is_alive():
                child.kill()
            child.join()
            receive.close()
    if kind == "error":
        raise value
    return list(value)


def _search(url: str, tenant: str, query: str, options: dict[str, Any], send: Any) -> None:
    from sessionstore.api import SessionStore

    try:
        with SessionStore(url, tenant=tenant) as store:
            found = [r.to_json() for r in store.search(query, **options)]
        send.send(("ok", found))
    except SessionStoreError as exc:
        send.send(("error", _portable(exc)))
    except Exception as exc:  # (anything else: an error of the store, by its text)
        send.send(("error", StoreError(f"the search failed: {exc}")))
    finally:
        send.close()


def _portable(exc: SessionStoreError) -> SessionStoreError:
    """``exc`` if it survives pickling (the library's errors take their message), else a StoreError."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return StoreError(str(exc))
    return exc

"""The per-store cache of checked entries and the scoped GC pause that resumes use (issue 25): the cache
is bounded, cannot go stale, and hands out nothing a caller could corrupt it through; the pause is
re-entrant and never turns collection on for a caller who had it off."""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Any

import pytest

from sessionstore import SessionStore
from sessionstore.context.entry_cache import EntryCache
from sessionstore.wire.jsjson import gc_paused
from tests.builders import assistant, user


def _texts(n: int, size: int = 100) -> list[str]:
    return [f'{{"type":"message","id":"e{i}","parentId":null,"timestamp":"t","message":'
            f'{{"role":"user","content":"{"x" * size}","timestamp":{i}}}}}' for i in range(n)]


def test_the_cache_is_bounded_by_bytes_and_drops_the_least_recently_used_first() -> None:
    cache = EntryCache(max_bytes=2_000)
    texts = _texts(20)
    decoded = cache.decode(texts)
    messages = [entry["message"] for entry in decoded.entries]
    cache.learn(decoded, messages, [(0,)] * len(messages))  # type: ignore[list-item]  # (any verdict)
    assert 0 < cache.bytes <= 2_000 and len(cache) < 20
    kept = [t for t in texts if cache.decode([t]).known]
    assert kept == texts[-len(kept):]  # the last learnt stayed
    assert EntryCache(max_bytes=0).decode(texts).known == {}
    with pytest.raises(ValueError, match="non-negative"):
        EntryCache(max_bytes=-1)


def test_decoded_entries_are_new_objects_each_time_so_a_caller_cannot_corrupt_the_cache() -> None:
    cache = EntryCache()
    texts = _texts(3)
    first = cache.decode(texts)
    cache.learn(first, [e["message"] for e in first.entries], [(1,), (2,), (3,)])  # type: ignore[list-item]
    first.entries[0]["message"]["content"] = "changed by the caller"
    again = cache.decode(texts)
    assert again.entries[0]["message"]["content"] == "x" * 100
    assert again.entries[0] is not first.entries[0] and len(again.known) == 3


def _store(tmp_path: Path, name: str = "s.db", **options: Any) -> SessionStore:
    return SessionStore(f"sqlite:///{tmp_path / name}", **options)


def test_a_resume_again_gives_the_same_context_and_a_replaced_session_is_read_as_it_now_is(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        sid = store.create_session(cwd="/w", session_id="s1")
        store.append_message(sid, user("hello"))
        store.append_message(sid, assistant("hi"))
        first = store.context(sid)
        again = store.context(sid)
        assert again.to_json() == first.to_json()
        again.messages[0]["content"] = "the caller's edit"  # type: ignore[index]
        assert store.context(sid).to_json() == first.to_json()
        # the same session id and key, other entries: nothing keyed by session can go stale
        store.import_entries({"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00.000Z",
                              "cwd": "/w"},
                             [{"type": "message", "id": "a", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
                               "message": user("replaced")}], replace=True)
        shown = str(store.context(sid).messages)
        assert "replaced" in shown and "hello" not in shown


def test_a_resume_with_the_cache_off_and_on_gives_the_same_context_and_diagnostics(tmp_path: Path) -> None:
    with _store(tmp_path, entry_cache_bytes=0) as off, _store(tmp_path) as on:
        sid = off.create_session(cwd="/w")
        off.append_message(sid, user("go"))
        off.append_message(sid, {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "ls",
                                                                   "arguments": {}}],
                                 "api": "x", "provider": "p", "model": "m", "usage": {}, "stopReason": "toolUse",
                                 "timestamp": 2})
        for _ in range(2):  # (the second read of ``on`` is answered by its cache)
            assert on.context(sid).to_json() == off.context(sid).to_json()
            assert [d.code for d in on.context(sid).diagnostics] == [d.code for d in off.context(sid).diagnostics]


def test_the_pause_is_re_entrant_and_restores_collection_as_it_found_it() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("the body fails")
    assert gc.isenabled()


def test_the_pause_never_turns_collection_on_for_a_caller_who_had_it_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_pauses_of_two_threads_overlap_and_the_last_one_out_restores_collection() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with gc_paused():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(5)
    with gc_paused():
        pass
    assert not gc.isenabled()  # the other thread's pause is still on
    release.set()
    thread.join(5)
    assert gc.isenabled()

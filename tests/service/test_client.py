"""The remote client against a real ``sessionstore serve`` over TCP: writes, errors back to the
library's classes, and retries through a proxy that cuts every first answer (each entry stored once)."""

from __future__ import annotations

import asyncio
import io
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from sessionstore.api import SessionStore
from sessionstore.client import AsyncRemoteSessionStore, RemoteSessionStore, error_from_problem
from sessionstore.errors import (
    DuplicateIdError,
    EntryNotFoundError,
    InvalidInputError,
    LeafConflictError,
    SessionExistsError,
    SessionNotFoundError,
)
from sessionstore.store import archive
from sessionstore.store.records import UNSET
from tests.builders import assistant, user
from tests.paths import FIXTURES
from tests.service.conftest import Server


@pytest.fixture(scope="module")
def remote(no_auth_server: Server) -> Iterator[RemoteSessionStore]:
    with RemoteSessionStore(no_auth_server.base_url) as store:
        yield store


def test_typed_appends_store_what_the_library_stores(remote: RemoteSessionStore, no_auth_server: Server) -> None:
    sid = remote.create_session(cwd="/w")
    ids = [remote.append_message(sid, user("hi")), remote.append_message(sid, assistant("hello")),
           remote.append_session_info(sid, "name")]
    with SessionStore(no_auth_server.url) as local:
        assert [e["id"] for e in local.path(sid)] == ids
        assert local.leaf(sid) == ids[-1]
        assert local.session(sid).name == "name"


def test_problems_come_back_as_the_library_errors(remote: RemoteSessionStore) -> None:
    sid = remote.create_session(cwd="/w", session_id="errs/1")
    with pytest.raises(SessionExistsError):
        remote.create_session(cwd="/w", session_id="errs/1")
    assert remote.create_session(cwd="/w", session_id="errs/1", exist_ok=True) == sid
    first = remote.append_message(sid, user("a"))
    remote.append_message(sid, user("b"))
    with pytest.raises(LeafConflictError) as raised:
        remote.append_message(sid, user("c"), expected_leaf=first)
    assert raised.value.actual != first
    with pytest.raises(InvalidInputError, match="toolCallId"):
        remote.append_message(sid, {"role": "toolResult", "toolName": "x", "content": [], "isError": False,
                                    "timestamp": 1})
    with pytest.raises(DuplicateIdError):
        remote.append_message(sid, user("other"), entry_id=first)
    with pytest.raises(EntryNotFoundError):
        remote.branch(sid, "nope")
    with pytest.raises(SessionNotFoundError):
        remote.delete_session("no such session")


def test_error_from_problem_keeps_the_attributes() -> None:
    exc = error_from_problem(412, {"code": "LEAF_CONFLICT", "storeCode": "LEAF_CONFLICT", "currentLeafId": "ab",
                                   "detail": "moved"}, "s")
    assert isinstance(exc, LeafConflictError) and exc.actual == "ab" and exc.session_id == "s"


class CuttingProxy:
    """Forwards each connection to the server; of every request it forwards, the first answer is cut
    (the connection closed before a byte of it reaches the client), so the client must retry."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.cut = 0
        self.seen: set[bytes] = set()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client, socket.create_connection(("127.0.0.1", self.target)) as upstream:
            client.settimeout(2.0)
            try:
                request = client.recv(1 << 20)
                while b"\r\n\r\n" in request and _missing(request) > 0:
                    request += client.recv(1 << 20)
            except OSError:
                return
            upstream.sendall(request)
            answer = b""
            upstream.settimeout(10.0)
            while b"\r\n\r\n" not in answer or _missing(answer) > 0:
                chunk = upstream.recv(1 << 20)
                if not chunk:
                    break
                answer += chunk
            if request not in self.seen and request.startswith((b"POST", b"PUT", b"DELETE")):
                self.seen.add(request)
                self.cut += 1
                return  # (the server did the work; the client never hears of it)
            client.sendall(answer)

    def close(self) -> None:
        self.listener.close()


def _missing(message: bytes) -> int:
    head, _, body = message.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value) - len(body)
    return 0


def test_every_write_is_done_exactly_once_when_every_first_answer_is_lost(no_auth_server: Server) -> None:
    port = int(no_auth_server.base_url.rsplit(":", 1)[1])
    proxy = CuttingProxy(port)
    try:
        with RemoteSessionStore(f"http://127.0.0.1:{proxy.port}", retries=3) as store:
            store._http.headers["Connection"] = "close"
            sid = store.create_session(cwd="/retry")
            ids = [store.append_message(sid, user(f"m{n}")) for n in range(5)]
            ids += store.append_entries(sid, [{"type": "custom", "customType": "c", "data": n} for n in range(3)])
            store.branch(sid, ids[6])  # (a leaf move and a delete are retried by their Idempotency-Key)
            doomed = store.create_session(cwd="/retry-doomed")
            store.delete_session(doomed)
        assert proxy.cut == 10  # (each write was done by its first attempt, whose answer was lost)
        with SessionStore(no_auth_server.url) as local:
            stored = [e["id"] for e in local.entries(sid)]
            assert stored == ids
            assert local.leaf(sid) == ids[6]
            assert len([s for s in local.list_sessions(cwd="/retry")]) == 1
            assert not local.list_sessions(cwd="/retry-doomed")
    finally:
        proxy.close()


def test_the_async_twin_awaits_the_same_calls(no_auth_server: Server) -> None:
    async def run() -> list[str]:
        async with AsyncRemoteSessionStore(no_auth_server.base_url) as store:
            sid = await store.create_session(cwd="/async")
            return [await store.append_message(sid, user("x")), sid]

    entry_id, sid = asyncio.run(run())
    with SessionStore(no_auth_server.url) as local:
        assert local.leaf(sid) == entry_id


def test_sync_is_refused_with_a_reason(remote: RemoteSessionStore) -> None:
    with pytest.raises(InvalidInputError, match="local pi directory"):
        remote.sync()


def _bytes(write: Callable[[IO[bytes]], object]) -> bytes:
    buffer = io.BytesIO()
    write(buffer)
    return buffer.getvalue()


def _usage_message(text: str) -> dict[str, object]:
    message = dict(assistant(text))
    message["usage"] = {"input": 10, "output": 5, "cacheRead": 1, "cacheWrite": 0, "totalTokens": 16,
                        "cost": {"input": 0.01, "output": 0.02, "cacheRead": 0, "cacheWrite": 0, "total": 0.03}}
    return message


def test_the_streamed_bodies_are_the_librarys_bytes(remote: RemoteSessionStore, no_auth_server: Server) -> None:
    sid = remote.create_session(cwd="/bytes")
    first = remote.append_message(sid, user("one"))
    remote.append_message(sid, _usage_message("two"))
    remote.append_label(sid, first, "start")
    with SessionStore(no_auth_server.url) as local:
        for leaf in (UNSET, first, None):
            assert (_bytes(lambda fp, leaf=leaf: remote.write_context_json(sid, fp, leaf_id=leaf))
                    == _bytes(lambda fp, leaf=leaf: local.write_context_json(sid, fp, leaf_id=leaf)))
        assert (_bytes(lambda fp: remote.write_context_json(sid, fp, provider_safe=True))
                == _bytes(lambda fp: local.write_context_json(sid, fp, provider_safe=True)))
        assert _bytes(lambda fp: remote.write_tree_json(sid, fp)) == _bytes(lambda fp: local.write_tree_json(sid, fp))
        exported = io.BytesIO()
        assert remote.export_jsonl(sid, exported) == local.export_jsonl(sid, io.BytesIO()) == 3
        assert exported.getvalue() == _bytes(lambda fp: local.export_jsonl(sid, fp))
    with pytest.raises(SessionNotFoundError):
        remote.write_tree_json("no such session", io.BytesIO())
    with pytest.raises(EntryNotFoundError):
        remote.write_context_json(sid, io.BytesIO(), leaf_id="nope")


def test_search_and_stats_are_the_librarys_results(remote: RemoteSessionStore, no_auth_server: Server) -> None:
    sid = remote.create_session(cwd="/numbers")
    remote.append_model_change(sid, provider="anthropic", model_id="claude")
    remote.append_message(sid, user("find the zebra"))
    remote.append_message(sid, _usage_message("a zebra found"))
    remote.append_session_info(sid, "zoo")
    with SessionStore(no_auth_server.url) as local:
        for kwargs in ({}, {"cwd": "/numbers"}, {"limit": 1, "sort": "recent"}, {"everything": True, "hits": 1}):
            assert remote.search("zebra", **kwargs) == local.search("zebra", **kwargs)  # type: ignore[arg-type]
        assert remote.search("zebra")[0].session.id == sid
        ours, theirs = remote.stats(sid), local.stats(sid)
        assert ours.to_json() == theirs.to_json() and ours.render() == theirs.render()
        assert ours.name == "zoo" and ours.selected_model == theirs.selected_model
        for by in (None, "model", "day"):
            for cwd in (None, "/numbers"):
                ours_all, theirs_all = remote.stats_all(by=by, cwd=cwd), local.stats_all(by=by, cwd=cwd)
                assert ours_all.to_json() == theirs_all.to_json() and ours_all.render() == theirs_all.render()
                assert ours_all.groups == theirs_all.groups
        assert remote.stats_all(since_ms=0).sessions == local.stats_all(since_ms=0).sessions
        assert remote.stats_all(since_ms=2**41).sessions == 0
    with pytest.raises(SessionNotFoundError):
        remote.stats("no such session")


def test_session_ids_by_prefix_are_the_librarys(remote: RemoteSessionStore, no_auth_server: Server) -> None:
    made = [remote.create_session(cwd="/p", session_id=f"pre_%-{n}") for n in range(3)]
    with SessionStore(no_auth_server.url) as local:
        for prefix, limit in (("pre_%", 10), ("pre_%-1", 10), ("pre_", 2), ("pre%", 10), ("", 10_000)):
            assert remote.session_ids_with_prefix(prefix, limit=limit) == local.session_ids_with_prefix(
                prefix, limit=limit)
    assert remote.session_ids_with_prefix("pre_%") == made
    with pytest.raises(InvalidInputError):
        remote.session_ids_with_prefix(3)  # type: ignore[arg-type]


def test_search_of_archived_sessions_is_the_librarys(remote: RemoteSessionStore, no_auth_server: Server,
                                                    tmp_path: Path) -> None:
    sid = remote.create_session(cwd="/shelf")
    remote.append_message(sid, user("an okapi on the shelf"))
    with SessionStore(no_auth_server.url) as local:
        archive.archive_session(local._entries, sid, archive_dir=tmp_path)
        try:
            found = remote.search("okapi", archived=True)
            assert found == local.search("okapi", archived=True)
            assert [(r.session.id, r.archived, [h.snippet for h in r.hits]) for r in found] == [
                (sid, True, ["an okapi on the shelf"])]
            assert remote.search("okapi") == [] and archive.is_archived(local._entries, sid)
        finally:
            archive.restore_session(local._entries, sid)
    with pytest.raises(InvalidInputError):
        remote.stats_all(by="week")


def test_the_tenant_is_what_the_caller_states(no_auth_server: Server) -> None:
    with RemoteSessionStore(no_auth_server.base_url) as store:
        assert store.tenant == "default"
        with pytest.raises(InvalidInputError, match="token"):
            store.for_tenant("other")
    with RemoteSessionStore(no_auth_server.base_url, token="ss_x_y") as store, pytest.raises(InvalidInputError,
                                                                                          match="tenant="):
        _ = store.tenant
    with RemoteSessionStore(no_auth_server.base_url, token="ss_x_y", tenant="team-a") as store:
        assert store.tenant == "team-a"
    with pytest.raises(InvalidInputError):
        RemoteSessionStore(no_auth_server.base_url, tenant="../bad")
    twin = AsyncRemoteSessionStore(no_auth_server.base_url)
    assert twin.tenant == "default"
    with pytest.raises(InvalidInputError):
        twin.for_tenant("other")
    asyncio.run(twin.close())


def test_a_missing_target_is_the_typed_appends_error_over_http(remote: RemoteSessionStore,
                                                                no_auth_server: Server) -> None:
    sid = remote.create_session(cwd="/targets")
    first = remote.append_message(sid, user("a"))
    for entry in ({"type": "label", "targetId": "nope", "label": "x"},
                  {"type": "context_edit", "targetId": "nope", "replacement": None}):
        with no_auth_server.client() as http:
            answer = http.post(f"/v1/sessions/{sid}/entries", json=[{"type": "custom", "customType": "c"}, entry])
        assert answer.status_code == 404
        assert answer.json()["code"] == "NOT_FOUND" and answer.json()["storeCode"] == "ENTRY_NOT_FOUND"
        assert answer.json()["detail"].startswith("entries[1]: ")
        with pytest.raises(EntryNotFoundError):
            remote.append_entries(sid, [entry])
    with pytest.raises(EntryNotFoundError):
        remote.append_label(sid, "nope", "x")
    with pytest.raises(EntryNotFoundError):
        remote.append_context_edit(sid, "nope", None)
    assert remote.leaf(sid) == first


def test_an_import_from_a_pipe_is_streamed_and_stored_whole(remote: RemoteSessionStore,
                                                             no_auth_server: Server) -> None:
    source = FIXTURES / "pi" / "large-session.jsonl"
    read_fd, write_fd = os.pipe()

    def feed() -> None:
        with open(write_fd, "wb") as pipe:
            pipe.write(source.read_bytes())

    feeder = threading.Thread(target=feed)
    feeder.start()
    seen: list[int] = []
    with open(read_fd, "rb") as pipe:
        result = remote.import_jsonl(pipe, replace=True, progress=seen.append)
    feeder.join()
    assert seen[-1] == source.stat().st_size and seen == sorted(seen)
    with SessionStore(no_auth_server.url) as local:
        assert local.session(result.session_id).entry_count == result.entries

"""Writes over TCP against a real ``sessionstore serve`` (issue 23 point 3, SPEC 15-16): every pi v3
entry type through the append route stored as the typed appends store it, client-chosen ids,
``Idempotency-Key`` replays of every write route, tokens of each kind, CORS, and ``--workers 2``
(compare-and-set and replays across worker processes)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import delete

from sessionstore.api import SessionStore
from sessionstore.service import tokens
from sessionstore.service.config import ServiceConfig
from sessionstore.store import schema
from tests.service.conftest import Server, StartServer, sessionstore_command
from tests.service.test_server_core import assert_problem, path_of

JSONL = {"Content-Type": "application/jsonl"}
REPLAYED = ("content-type", "etag", "location")


_STORES: dict[str, SessionStore] = {}


def mint(server: Server, tenant: str, scope: str) -> str:
    """A token of ``tenant`` with ``scope`` (one per pair), made by the library: the CLI's ``token create``
    is tested elsewhere, and a process per token would cost seconds here."""
    if (tenant, scope) not in server.tokens:
        store = _STORES.get(server.url) or _STORES.setdefault(server.url, SessionStore(server.url))
        server.tokens[tenant, scope] = tokens.create_token(store, tenant=tenant, scope=scope)[1]
    return server.tokens[tenant, scope]


@pytest.fixture(scope="module", autouse=True)
def _close_stores() -> Iterator[None]:
    yield
    while _STORES:
        _STORES.popitem()[1].close()


def message(text: str, role: str = "user") -> dict[str, Any]:
    return {"type": "message", "message": {"role": role, "content": text, "timestamp": 1}}


def new_session(client: httpx.Client, session_id: str | None = None) -> str:
    body = {"cwd": "/writes", **({"id": session_id} if session_id else {})}
    response = client.post("/v1/sessions", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def lines(client: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    """The session's stored entries (its export without the header)."""
    response = client.get(path_of(session_id) + "/export?format=jsonl")
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines()[1:]]


@pytest.fixture(scope="module")
def http(server: Server) -> Iterator[httpx.Client]:
    with server.client(mint(server, "writes", "write")) as client:
        yield client


# -- every entry type --------------------------------------------------------------------------
USAGE = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
         "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.3}}


def typed_session(store: SessionStore) -> str:
    """A session holding one entry of every appendable type, written by the typed appends."""
    sid = store.create_session(cwd="/typed")
    first = store.append_message(sid, {"role": "system", "content": "be brief", "timestamp": 0})
    store.append_message(sid, {"role": "user", "content": "hi", "timestamp": 1})
    assistant = store.append_message(sid, {
        "role": "assistant", "content": [{"type": "text", "text": "hello"}], "api": "anthropic-messages",
        "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": USAGE, "stopReason": "stop",
        "timestamp": 2})
    store.append_tool_result(sid, tool_call_id="call-1", tool_name="read", content="file text")
    store.append_custom(sid, "ext.state", {"n": 1})
    store.append_custom_message(sid, "ext.note", "a note", display=False, details={"k": [1, 2]})
    store.append_label(sid, first, "start")
    store.append_session_info(sid, "named\nsession")
    store.append_model_change(sid, provider="openai", model_id="gpt-5")
    store.append_thinking_level_change(sid, "high")
    store.append_usage(sid, kind="summary", provider="anthropic", model="claude-sonnet-4-5", usage=USAGE,
                       note="side call")
    store.append_context_edit(sid, assistant, {"content": "edited"})
    store.branch_with_summary(sid, store.leaf(sid), "what the branch did", details={"files": []})
    store.compact(sid, summary="so far", first_kept_entry_id=assistant, tokens_before=100)
    return sid


@pytest.fixture(scope="module")
def typed_lines(server: Server) -> list[dict[str, Any]]:
    with SessionStore(server.url, tenant="writes") as store:
        sid = typed_session(store)
    with server.client(mint(server, "writes", "read")) as reader:
        return lines(reader, sid)


def test_the_typed_session_holds_every_appendable_type(typed_lines: list[dict[str, Any]]) -> None:
    from sessionstore.models.kinds import APPENDABLE_TYPES

    assert {e["type"] for e in typed_lines} == set(APPENDABLE_TYPES)
    assert {e["message"]["role"] for e in typed_lines if e["type"] == "message"} == {
        "system", "user", "assistant", "toolResult"}


def test_a_batch_of_every_type_is_stored_as_the_typed_appends_store_it(
        http: httpx.Client, typed_lines: list[dict[str, Any]]) -> None:
    sid = new_session(http)
    response = http.post(path_of(sid) + "/entries", json=typed_lines, headers={"If-Match": '"root"'})
    assert response.status_code == 201, response.text
    assert [r["id"] for r in response.json()["entries"]] == [e["id"] for e in typed_lines]
    assert lines(http, sid) == typed_lines
    raw = http.get(path_of(sid) + "/entries").text.splitlines()
    assert [json.loads(line) for line in raw] == typed_lines


def test_one_entry_per_request_without_places_is_stored_as_the_typed_appends_store_it(
        http: httpx.Client, typed_lines: list[dict[str, Any]]) -> None:
    sid = new_session(http)
    tag = '"root"'
    renamed: dict[str, str] = {}
    for entry in typed_lines:
        body = {k: v for k, v in entry.items() if k not in ("id", "parentId", "timestamp")}
        for key in ("targetId", "firstKeptEntryId", "fromId"):  # (the server chose other ids)
            if body.get(key) in renamed:
                body[key] = renamed[body[key]]
        response = http.post(path_of(sid) + "/entries", json=body, headers={"If-Match": tag})
        assert response.status_code == 201, (entry["type"], response.text)
        renamed[entry["id"]] = response.json()["leafId"]
        tag = response.headers["etag"]
    stored = lines(http, sid)
    assert len(stored) == len(typed_lines)
    for mine, theirs in zip(stored, typed_lines, strict=True):
        assert list(mine) == list(theirs)  # (the same keys in the same order)
        for key, value in theirs.items():
            if key in ("id", "parentId", "timestamp"):
                continue
            assert mine[key] == renamed.get(value, value) if isinstance(value, str) else mine[key] == value, key
        assert mine["parentId"] == renamed.get(theirs["parentId"], theirs["parentId"])


@pytest.mark.parametrize("bad", [
    {"type": "session_info", "name": 3},
    {"type": "message", "message": {"role": "user"}},
    {"type": "label", "targetId": "no-such-entry", "label": "x"},
    {"type": "context_edit", "targetId": "no-such-entry", "replacement": None},
    {"type": "compaction", "summary": "s", "firstKeptEntryId": "no-such-entry", "tokensBefore": 1},
    {"type": "session", "version": 3},
    {"type": "bogus"},
])
def test_a_bad_entry_in_a_batch_is_named_and_nothing_is_written(http: httpx.Client, bad: dict[str, Any]) -> None:
    sid = new_session(http)
    response = http.post(path_of(sid) + "/entries", json=[message("a"), message("b"), bad])
    assert response.status_code in (404, 422), response.text
    assert "entries[2]" in response.json()["detail"] and response.json()["entry"] == 2
    assert "Traceback" not in response.text
    assert lines(http, sid) == []


# -- client-chosen ids --------------------------------------------------------------------------
def test_a_repeated_append_with_its_own_ids_is_not_written_twice(http: httpx.Client) -> None:
    sid = new_session(http)
    batch = [{**message("one"), "id": "own-1", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z"},
             {**message("two"), "id": "own-2", "parentId": "own-1", "timestamp": "2026-01-01T00:00:01.000Z"}]
    first = http.post(path_of(sid) + "/entries", json=batch)
    assert first.status_code == 201, first.text
    again = http.post(path_of(sid) + "/entries", json=batch)
    assert again.status_code == 201, again.text  # (SPEC 15: the retry succeeds, without a second write)
    assert again.json() == first.json() and again.headers["etag"] == first.headers["etag"] == '"own-2"'
    single = http.post(path_of(sid) + "/entries", json=batch[1])
    assert single.status_code == 201 and single.json()["leafId"] == "own-2"
    assert [e["id"] for e in lines(http, sid)] == ["own-1", "own-2"]
    other = [batch[0], {**batch[1], "message": {"role": "user", "content": "changed", "timestamp": 1}}]
    problem = assert_problem(http.post(path_of(sid) + "/entries", json=other), 409, "DUPLICATE_ID")
    assert "own-2" in str(problem["detail"])
    assert_problem(http.post(path_of(sid) + "/entries", json={**batch[0], "timestamp": "2026-02-02T00:00:00.000Z"}),
                   409, "DUPLICATE_ID")
    assert [e["message"]["content"] for e in lines(http, sid)] == ["one", "two"]


def test_ids_without_places_repeat_as_a_no_op_too(http: httpx.Client) -> None:
    sid = new_session(http)
    entry = {**message("solo"), "id": "solo-1"}
    assert http.post(path_of(sid) + "/entries", json=entry).status_code == 201
    again = http.post(path_of(sid) + "/entries", json=entry)
    assert again.status_code == 201 and again.json()["entries"] == [{"id": "solo-1", "parentId": None}]
    assert [e["id"] for e in lines(http, sid)] == ["solo-1"]


# -- Idempotency-Key ----------------------------------------------------------------------------
def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def assert_replay(first: httpx.Response, again: httpx.Response) -> None:
    assert again.status_code == first.status_code
    assert again.content == first.content
    for name in REPLAYED:
        assert again.headers.get(name) == first.headers.get(name), name
    assert again.headers.get("idempotent-replayed") == "true"
    assert first.headers.get("idempotent-replayed") is None


def test_a_replayed_create_is_the_first_answer_and_one_session(http: httpx.Client) -> None:
    key = uuid.uuid4().hex
    body = {"cwd": "/idem-create"}
    first = http.post("/v1/sessions", json=body, headers=keyed(key))
    assert first.status_code == 201 and first.headers["location"]
    assert_replay(first, http.post("/v1/sessions", json=body, headers=keyed(key)))
    listed = http.get("/v1/sessions?cwd=/idem-create").json()["sessions"]
    assert [s["id"] for s in listed] == [first.json()["id"]]


def test_a_replayed_append_leaf_move_compact_and_delete_write_once(http: httpx.Client) -> None:
    sid = new_session(http)
    url = path_of(sid)
    key = uuid.uuid4().hex
    first = http.post(url + "/entries", json=message("once"), headers=keyed(key))
    assert first.status_code == 201
    assert_replay(first, http.post(url + "/entries", json=message("once"), headers=keyed(key)))
    assert len(lines(http, sid)) == 1
    leaf_one = first.json()["leafId"]
    leaf_two = http.post(url + "/entries", json=message("twice")).json()["leafId"]

    key = uuid.uuid4().hex
    moved = http.put(url + "/leaf", json={"leafId": leaf_one}, headers=keyed(key))
    assert moved.status_code == 200
    assert http.put(url + "/leaf", json={"leafId": leaf_two}).status_code == 200
    assert_replay(moved, http.put(url + "/leaf", json={"leafId": leaf_one}, headers=keyed(key)))
    assert http.get(url).json()["leafId"] == leaf_two  # (the replay moved nothing)

    key = uuid.uuid4().hex
    body = {"summary": "sum", "firstKeptEntryId": leaf_two}
    compacted = http.post(url + "/compact", json=body, headers=keyed(key))
    assert compacted.status_code == 201, compacted.text
    assert_replay(compacted, http.post(url + "/compact", json=body, headers=keyed(key)))
    assert [e["type"] for e in lines(http, sid)].count("compaction") == 1

    key = uuid.uuid4().hex
    gone = http.delete(url, headers=keyed(key))
    assert gone.status_code == 204
    assert_replay(gone, http.delete(url, headers=keyed(key)))  # (204 again, not 404)
    assert_problem(http.delete(url), 404, "NOT_FOUND")


def count(client: httpx.Client, cwd: str) -> int:
    return len(client.get(f"/v1/sessions?cwd={cwd}&limit=1000").json()["sessions"])


def test_a_replayed_fork_makes_one_new_session(http: httpx.Client) -> None:
    source = http.post("/v1/sessions", json={"cwd": "/idem-fork"}).json()["id"]
    http.post(path_of(source) + "/entries", json=message("x"))
    key = uuid.uuid4().hex
    forked = http.post(path_of(source) + "/fork", json={}, headers=keyed(key))
    assert forked.status_code == 201, forked.text
    assert_replay(forked, http.post(path_of(source) + "/fork", json={}, headers=keyed(key)))
    assert count(http, "/idem-fork") == 2
    assert http.get(path_of(forked.json()["id"])).status_code == 200


def test_a_replayed_import_is_the_first_answer(http: httpx.Client) -> None:
    sid = f"idem-import-{uuid.uuid4().hex[:8]}"
    header = {"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/i"}
    entry = {"type": "message", "id": "e1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
             "message": {"role": "user", "content": "hi", "timestamp": 1}}
    body = (json.dumps(header) + "\n" + json.dumps(entry) + "\n").encode()
    key = uuid.uuid4().hex
    first = http.post("/v1/imports", content=body, headers={**JSONL, **keyed(key)})
    assert first.status_code == 201, first.text
    assert_replay(first, http.post("/v1/imports", content=body, headers={**JSONL, **keyed(key)}))
    assert_problem(http.post("/v1/imports", content=body, headers=JSONL), 409, "SESSION_EXISTS")
    other = body.replace(b'"hi"', b'"ho"')
    assert_problem(http.post("/v1/imports?replace=true", content=other, headers={**JSONL, **keyed(key)}),
                   422, "IDEMPOTENCY_KEY_REUSED")
    assert [e["message"]["content"] for e in lines(http, sid)] == ["hi"]


@pytest.mark.parametrize("key", [None, "bad-line-key"])
def test_an_import_error_names_the_request_body_and_its_line(http: httpx.Client, key: str | None) -> None:
    header = {"type": "session", "version": 3, "id": f"bad-{uuid.uuid4().hex[:8]}", "cwd": "/i",
              "timestamp": "2026-01-01T00:00:00.000Z"}
    body = (json.dumps(header) + "\n{not json\n").encode()
    headers = {**JSONL, **(keyed(f"{key}-{uuid.uuid4().hex}") if key else {})}
    answer = assert_problem(http.post("/v1/imports", content=body, headers=headers), 422, "INVALID_INPUT")
    assert answer["detail"].startswith("request body:2:") and answer["line"] == 2, answer


def test_retries_racing_the_first_request_write_once(server: Server) -> None:
    """Retries sent while the first request with their key still runs (a client that timed out): one
    of them runs, every other answers with its response (or 409 IDEMPOTENCY_KEY_IN_USE), none writes."""
    token = mint(server, "writes", "write")
    with server.client(token) as client:
        sid = new_session(client)
    for round_ in range(3):
        key = uuid.uuid4().hex
        answers = at_once(server, token, 6, lambda client, _, key=key, text=f"race-{round_}": client.post(
            path_of(sid) + "/entries", json=message(text), headers=keyed(key)))
        done = [a for a in answers if a.status_code == 201]
        assert done and {a.content for a in done} == {done[0].content}, [a.text for a in answers]
        assert all(a.status_code == 201 or a.json()["code"] == "IDEMPOTENCY_KEY_IN_USE" for a in answers)
    with server.client(token) as client:
        assert [e["message"]["content"] for e in lines(client, sid)] == ["race-0", "race-1", "race-2"]


def test_a_key_with_another_request_is_422_and_writes_nothing(http: httpx.Client) -> None:
    sid = new_session(http)
    key = uuid.uuid4().hex
    assert http.post(path_of(sid) + "/entries", json=message("first"), headers=keyed(key)).status_code == 201
    assert_problem(http.post(path_of(sid) + "/entries", json=message("other"), headers=keyed(key)),
                   422, "IDEMPOTENCY_KEY_REUSED")
    tag = f'"{lines(http, sid)[-1]["id"]}"'
    assert_problem(http.post(path_of(sid) + "/entries", json=message("first"), headers={**keyed(key), "If-Match": tag}),
                   422, "IDEMPOTENCY_KEY_REUSED")  # (a condition is part of the request)
    other = new_session(http)
    assert_problem(http.post(path_of(other) + "/entries", json=message("first"), headers=keyed(key)),
                   422, "IDEMPOTENCY_KEY_REUSED")
    assert [e["message"]["content"] for e in lines(http, sid)] == ["first"]
    assert lines(http, other) == []
    assert_problem(http.post(path_of(sid) + "/entries", json=message("x"), headers=keyed("")), 400, "INVALID_INPUT")


def test_keys_are_per_tenant(server: Server, http: httpx.Client) -> None:
    shared = f"idem-shared-{uuid.uuid4().hex[:8]}"
    new_session(http, shared)
    key = uuid.uuid4().hex
    assert http.post(path_of(shared) + "/entries", json=message("a"), headers=keyed(key)).status_code == 201
    with server.client(mint(server, "writes-b", "write")) as b:
        new_session(b, shared)
        mine = b.post(path_of(shared) + "/entries", json=message("a"), headers=keyed(key))
        assert mine.status_code == 201 and mine.headers.get("idempotent-replayed") is None
        other = b.post(path_of(shared) + "/entries", json=message("b"), headers=keyed(uuid.uuid4().hex))
        assert other.status_code == 201
        assert [e["message"]["content"] for e in lines(b, shared)] == ["a", "b"]
    assert [e["message"]["content"] for e in lines(http, shared)] == ["a"]


def test_a_refused_first_request_is_replayed_as_that_refusal(http: httpx.Client) -> None:
    """SPEC 15: the same key and body "returns the first response again and writes nothing", a
    refusal too (the server keeps every answer below 500)."""
    sid = new_session(http)
    leaf = http.post(path_of(sid) + "/entries", json=message("one")).json()["leafId"]
    key = uuid.uuid4().hex
    stale = {**keyed(key), "If-Match": '"root"'}
    first = http.post(path_of(sid) + "/entries", json=message("late"), headers=stale)
    assert assert_problem(first, 412, "LEAF_CONFLICT")["currentLeafId"] == leaf
    http.put(path_of(sid) + "/leaf", json={"leafId": None})  # (now "root" would match)
    again = http.post(path_of(sid) + "/entries", json=message("late"), headers=stale)
    assert_replay(first, again)
    assert [e["message"]["content"] for e in lines(http, sid)] == ["one"]

    missing = f"idem-missing-{uuid.uuid4().hex[:8]}"
    key = uuid.uuid4().hex
    first = http.post(path_of(missing) + "/entries", json=message("x"), headers=keyed(key))
    assert_problem(first, 404, "NOT_FOUND")
    new_session(http, missing)
    assert_replay(first, http.post(path_of(missing) + "/entries", json=message("x"), headers=keyed(key)))
    assert lines(http, missing) == []


# -- tokens ------------------------------------------------------------------------------------
def _refused(server: Server, token: str) -> None:
    secret = token.rsplit("_", 1)[-1]
    secret = secret if len(secret) > 16 else token  # (a short one could be in any request id)
    with server.client(token) as client:
        for method, path in (("GET", "/v1/sessions"), ("POST", "/v1/sessions")):
            response = client.request(method, path, json={})
            problem = assert_problem(response, 401, "UNAUTHORIZED")
            assert response.headers["www-authenticate"].startswith("Bearer")
            assert 'error="invalid_token"' in response.headers["www-authenticate"]
            assert secret not in response.text and token not in json.dumps(problem)
    time.sleep(0.1)
    assert secret not in server.log()


def test_revoked_expired_deleted_unknown_and_malformed_tokens_are_401(server: Server) -> None:
    with SessionStore(server.url) as store:
        past = datetime.now(UTC) - timedelta(days=2)
        _, expired = tokens.create_token(store, tenant="tok", scope="admin", expires=past + timedelta(hours=1),
                                         now=past)
        _, deleted = tokens.create_token(store, tenant="tok", scope="admin")
        with tokens._engine(store).begin() as conn:
            conn.execute(delete(schema.tokens).where(schema.tokens.c.id == deleted.split("_")[1]))
    revoked = mint(server, "tok", "admin")
    with server.client(revoked) as client:
        assert client.get("/v1/sessions").status_code == 200
    import subprocess

    done = subprocess.run([*sessionstore_command(), "--db", server.url, "token", "revoke", revoked.split("_")[1]],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    revoked_at = time.monotonic()
    with server.client(revoked) as client:  # (trusted for at most --token-cache seconds after its last lookup)
        while client.get("/v1/sessions").status_code == 200:
            assert time.monotonic() - revoked_at < ServiceConfig.token_cache + 0.5
            time.sleep(0.05)
    unknown = "ss_" + "q" * 16 + "_" + revoked.rsplit("_", 1)[-1]
    for token in (revoked, expired, deleted, unknown, "ss_short_abc", revoked + "x", revoked.upper()):
        _refused(server, token)


def test_with_token_cache_0_a_revocation_is_refused_at_once(service_db_url: str, start_server: StartServer) -> None:
    uncached = start_server(service_db_url, "--token-cache", "0")
    with SessionStore(uncached.url) as store:
        info, token = tokens.create_token(store, tenant="uncached", scope="read")
        with uncached.client(token) as client:
            assert client.get("/v1/sessions").status_code == 200
            tokens.revoke_token(store, info.id)
            assert_problem(client.get("/v1/sessions"), 401, "UNAUTHORIZED")


def test_a_cached_token_still_expires_on_time() -> None:
    with SessionStore("sqlite://") as store:
        now = datetime.now(UTC)
        _, token = tokens.create_token(store, tenant="t", scope="read", expires=now + timedelta(hours=1), now=now)
        verified = tokens.VerifiedTokens(60.0)
        assert verified.authenticate(store, token, now=now).tenant == "t"
        assert verified.known(token, now=now + timedelta(minutes=59)) is not None  # (no lookup)
        assert verified.known(token, now=now + timedelta(hours=1)) is None
        with pytest.raises(tokens.TokenRefused, match="expired"):
            verified.authenticate(store, token, now=now + timedelta(hours=1))
        assert tokens.VerifiedTokens(0).known(token) is None  # (0: nothing is kept)


def test_each_scope_may_do_what_it_should(server: Server) -> None:
    with server.client(mint(server, "scopes", "admin")) as admin:
        sid = new_session(admin, "scoped")
        leaf = admin.post(path_of(sid) + "/entries", json=message("a")).json()["leafId"]
        admin.post(path_of(sid) + "/entries", json=message("b"))
        assert admin.put(path_of(sid) + "/leaf", json={"leafId": leaf}).status_code == 200
        assert admin.post(path_of(sid) + "/fork", json={"id": "scoped-fork"}).status_code == 201
        assert admin.post(path_of(sid) + "/compact", json={"summary": "s", "firstKeptEntryId": leaf}).status_code == 201
        assert admin.delete(path_of("scoped-fork")).status_code == 204
        exported = admin.get(path_of(sid) + "/export?format=jsonl").content
        assert admin.post("/v1/imports?replace=true", content=exported, headers=JSONL).status_code == 201
        for route in ("", "/tree", "/context", "/stats", "/export?format=jsonl"):
            assert admin.get(path_of(sid) + route).status_code == 200, route
    with server.client(mint(server, "scopes", "write")) as writer:
        assert writer.post(path_of(sid) + "/entries", json=message("w")).status_code == 201
        assert writer.get(path_of(sid)).status_code == 200
    with server.client(mint(server, "scopes", "read")) as reader:
        assert reader.get(path_of(sid) + "/tree").status_code == 200
        assert_problem(reader.post("/v1/sessions", json={}, headers=keyed(uuid.uuid4().hex)), 403, "FORBIDDEN")
        assert_problem(reader.post("/v1/imports", content=b"{}\n", headers=JSONL), 403, "FORBIDDEN")
    with server.client(mint(server, "scopes-other", "admin")) as stranger:
        assert_problem(stranger.delete(path_of(sid)), 404, "NOT_FOUND")


# -- CORS --------------------------------------------------------------------------------------
ORIGIN = "https://ui.example"
PREFLIGHT = {"Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization, if-match, idempotency-key, content-type"}


def test_cors_allows_only_the_named_origin(service_db_url: str, start_server: StartServer, server: Server) -> None:
    cors = start_server(service_db_url, "--cors-origin", ORIGIN)
    token = mint(server, "cors", "write")
    with cors.client(token) as client:
        sid = new_session(client)
        pre = client.options(path_of(sid) + "/entries", headers={"Origin": ORIGIN, **PREFLIGHT})
        assert pre.status_code == 200, pre.text
        assert pre.headers["access-control-allow-origin"] == ORIGIN
        methods = {m.strip() for m in pre.headers["access-control-allow-methods"].split(",")}
        assert {"GET", "POST", "PUT", "DELETE"} <= methods
        allowed = {h.strip().lower() for h in pre.headers["access-control-allow-headers"].split(",")}
        assert {"authorization", "if-match", "idempotency-key", "content-type"} <= allowed
        got = client.post(path_of(sid) + "/entries", json=message("x"), headers={"Origin": ORIGIN})
        assert got.status_code == 201 and got.headers["access-control-allow-origin"] == ORIGIN
        exposed = {h.strip().lower() for h in got.headers["access-control-expose-headers"].split(",")}
        assert {"etag", "x-request-id", "x-last-seq", "location"} <= exposed
        evil = "https://evil.example"
        bad = client.options(path_of(sid) + "/entries", headers={"Origin": evil, **PREFLIGHT})
        assert "access-control-allow-origin" not in bad.headers
        plain = client.get(path_of(sid), headers={"Origin": evil})
        assert plain.status_code == 200 and "access-control-allow-origin" not in plain.headers
    with server.client(token) as client:
        pre = client.options(path_of(sid) + "/entries", headers={"Origin": ORIGIN, **PREFLIGHT})
        got = client.get(path_of(sid), headers={"Origin": ORIGIN})
        for response in (pre, got):
            assert not [h for h in response.headers if h.lower().startswith("access-control-")]


# -- --workers 2 -------------------------------------------------------------------------------
def worker_of(server: Server, request_id: str) -> str:
    """The pid of the worker whose access-log line carries ``request_id``."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        for line in server.log().splitlines():
            if line.startswith("{") and f'"requestId": "{request_id}"' in line:
                return str(json.loads(line)["pid"])
        time.sleep(0.05)
    raise AssertionError(f"no access-log line for {request_id}")


def fresh(server: Server, token: str) -> httpx.Client:
    """A client opening a new connection per request (a kept-alive one stays with one worker)."""
    return httpx.Client(base_url=server.base_url, timeout=30.0, headers={"Authorization": f"Bearer {token}",
                        "Connection": "close"})


@pytest.fixture(scope="module")
def workers(service_db_url: str, start_server: StartServer) -> Server:
    return start_server(service_db_url, "--workers", "2")


def at_once(server: Server, token: str, count: int,
            send: Callable[[httpx.Client, int], httpx.Response]) -> list[httpx.Response]:
    """``send(client, n)`` from ``count`` threads at the same moment, each on a new connection."""
    answers: list[httpx.Response] = []
    barrier = threading.Barrier(count)

    def one(n: int) -> None:
        with fresh(server, token) as mine:
            barrier.wait()
            answers.append(send(mine, n))

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def race(server: Server, token: str, sid: str, leaf: str, round_: int) -> list[httpx.Response]:
    """Two clients append with ``If-Match: "<leaf>"`` at the same moment."""
    return at_once(server, token, 2, lambda client, who: client.post(
        path_of(sid) + "/entries", json=message(f"r{round_}c{who}"),
        headers={"If-Match": f'"{leaf}"', "X-Request-Id": f"cas-{round_}-{who}"}))


def test_two_workers_serve_requests_and_compare_and_set_holds_across_them(workers: Server, server: Server) -> None:
    token = mint(server, "workers", "write")
    seen: set[str] = set()
    with fresh(workers, token) as client:
        sid = new_session(client)
        for n in range(60):
            response = client.get(path_of(sid), headers={"X-Request-Id": f"spread-{sid}-{n}"})
            assert response.status_code == 200
            if n >= 9 and n % 10 == 9:
                seen = {worker_of(workers, f"spread-{sid}-{i}") for i in range(n + 1)}
                if len(seen) == 2:
                    break
    assert len(seen) == 2, "one worker served every request"

    by_worker: list[set[str]] = []
    leaf = "root"
    for round_ in range(8):
        answers = race(workers, token, sid, leaf, round_)
        statuses = sorted(a.status_code for a in answers)
        assert statuses == [201, 412], [a.text for a in answers]
        won = next(a for a in answers if a.status_code == 201)
        lost = next(a for a in answers if a.status_code == 412)
        assert lost.json()["code"] == "LEAF_CONFLICT" and lost.json()["currentLeafId"] == won.json()["leafId"]
        leaf = won.json()["leafId"]
        by_worker.append({worker_of(workers, f"cas-{round_}-{who}") for who in (0, 1)})
    assert set().union(*by_worker) == seen  # (both workers took part)
    with fresh(workers, token) as client:
        assert len(lines(client, sid)) == 8


def test_an_idempotency_key_replays_on_the_other_worker(workers: Server, server: Server) -> None:
    token = mint(server, "workers", "write")
    key = uuid.uuid4().hex
    with fresh(workers, token) as client:
        sid = new_session(client)
        first = client.post(path_of(sid) + "/entries", json=message("once"),
                            headers={**keyed(key), "X-Request-Id": f"idem-{key}-0"})
        assert first.status_code == 201
        home = worker_of(workers, f"idem-{key}-0")
        for n in range(1, 40):
            again = client.post(path_of(sid) + "/entries", json=message("once"),
                                headers={**keyed(key), "X-Request-Id": f"idem-{key}-{n}"})
            assert_replay(first, again)
            if worker_of(workers, f"idem-{key}-{n}") != home:
                break
        else:
            raise AssertionError("every replay went to the first worker")
        assert len(lines(client, sid)) == 1


def test_openapi_names_the_headers_each_write_route_reads(http: httpx.Client) -> None:
    paths = http.get("/openapi.json").json()["paths"]
    for path, method, conditional in [
            ("/v1/sessions", "post", False), ("/v1/sessions/{session_id}", "delete", True),
            ("/v1/sessions/{session_id}/entries", "post", True), ("/v1/sessions/{session_id}/leaf", "put", True),
            ("/v1/sessions/{session_id}/fork", "post", False), ("/v1/sessions/{session_id}/compact", "post", True),
            ("/v1/imports", "post", False)]:
        headers = {p["name"] for p in paths[path][method]["parameters"] if p["in"] == "header"}
        assert headers == ({"If-Match", "Idempotency-Key"} if conditional else {"Idempotency-Key"}), path


def test_retries_racing_across_workers_write_once(workers: Server, server: Server) -> None:
    token = mint(server, "workers", "write")
    with fresh(workers, token) as client:
        sid = new_session(client)
    for round_ in range(3):
        key = uuid.uuid4().hex
        answers = at_once(workers, token, 4, lambda client, n, key=key, round_=round_: client.post(
            path_of(sid) + "/entries", json=message(f"w{round_}"),
            headers={**keyed(key), "X-Request-Id": f"wrace-{key}-{n}"}))
        done = [a for a in answers if a.status_code == 201]
        assert done and {a.content for a in done} == {done[0].content}, [a.text for a in answers]
    with fresh(workers, token) as client:
        assert [e["message"]["content"] for e in lines(client, sid)] == ["w0", "w1", "w2"]

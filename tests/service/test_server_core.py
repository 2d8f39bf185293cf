"""The server core over TCP against a real ``sessionstore serve``: write routes, ETags and If-Match,
problem+json errors, request ids and the access log, ids in paths, body limits and the slow-body timeout,
start-up refusals, /openapi.json and /docs."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.service.conftest import Server, StartServer, free_port, sessionstore_command

JSON = {"Content-Type": "application/json"}


def message(text: str) -> dict[str, object]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


def path_of(session_id: str) -> str:
    segment = quote(session_id, safe="")
    return "/v1/sessions/" + (segment.replace(".", "%2E") if segment in (".", "..") else segment)


def create(client: httpx.Client, session_id: str | None = None, **fields: object) -> httpx.Response:
    body = {**({"id": session_id} if session_id else {}), "cwd": "/work", **fields}
    return client.post("/v1/sessions", json=body)


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["code"] == code and body["type"] == "about:blank"
    assert "Traceback" not in response.text
    return dict(body)


@pytest.fixture(scope="module")
def http(no_auth_server: Server) -> httpx.Client:
    with no_auth_server.client() as client:
        yield client


def test_create_returns_the_item_location_and_etag(http: httpx.Client) -> None:
    response = create(http, "created-1", name="first")
    assert response.status_code == 201
    item = response.json()
    assert item["id"] == "created-1" and item["name"] == "first" and item["cwd"] == "/work"
    assert response.headers["location"] == "/v1/sessions/created-1"
    assert response.headers["etag"] == f'"{item["leafId"]}"'
    assert response.text.endswith("}\n") and response.text.startswith("{\n  ")  # the CLI's --json text
    assert_problem(create(http, "created-1"), 409, "SESSION_EXISTS")


def test_append_one_and_a_batch_with_etags_and_if_match(http: httpx.Client) -> None:
    create(http, "app-1")
    url = path_of("app-1") + "/entries"
    tag = create(http, "app-2").headers["etag"]
    assert tag == '"root"'
    first = http.post(path_of("app-2") + "/entries", json=message("one"), headers={"If-Match": tag})
    assert first.status_code == 201, first.text
    one = first.json()
    assert one["entries"][0]["parentId"] is None and one["leafId"] == one["entries"][0]["id"]
    assert first.headers["etag"] == f'"{one["leafId"]}"'
    batch = http.post(path_of("app-2") + "/entries", json=[message("two"), message("three")],
                      headers={"If-Match": first.headers["etag"]})
    assert batch.status_code == 201
    refs = batch.json()["entries"]
    assert refs[0]["parentId"] == one["leafId"] and refs[1]["parentId"] == refs[0]["id"]
    stale = http.post(path_of("app-2") + "/entries", json=message("four"), headers={"If-Match": first.headers["etag"]})
    problem = assert_problem(stale, 412, "LEAF_CONFLICT")
    assert problem["currentLeafId"] == refs[1]["id"] and problem["storeCode"] == "LEAF_CONFLICT"
    assert http.post(url, json=message("plain")).status_code == 201


def test_bad_entries_are_refused_and_nothing_written(http: httpx.Client) -> None:
    create(http, "bad-1")
    url = path_of("bad-1") + "/entries"
    assert_problem(http.post(url, json=[message("ok"), {"type": "bogus"}]), 422, "INVALID_INPUT")
    assert_problem(http.post(url, json=[message("ok"), 3]), 422, "INVALID_ENTRY")
    assert_problem(http.post(url, json=[]), 422, "INVALID_INPUT")
    assert http.post(url, json=message("after")).json()["entries"][0]["parentId"] is None  # (nothing written)


def test_leaf_fork_compact_delete(http: httpx.Client) -> None:
    create(http, "flow")
    url = path_of("flow")
    ids = [http.post(url + "/entries", json=message(f"m{i}")).json()["leafId"] for i in range(4)]
    moved = http.put(url + "/leaf", json={"leafId": ids[1]}, headers={"If-Match": f'"{ids[3]}"'})
    assert moved.status_code == 200 and moved.json() == {"leafId": ids[1]}
    assert moved.headers["etag"] == f'"{ids[1]}"'
    assert_problem(http.put(url + "/leaf", json={"leafId": ids[2]}, headers={"If-Match": f'"{ids[3]}"'}),
                   412, "LEAF_CONFLICT")
    assert_problem(http.put(url + "/leaf", json={"leafId": "nope"}), 404, "NOT_FOUND")
    assert http.put(url + "/leaf", json={"leafId": ids[3]}).status_code == 200
    fork = http.post(url + "/fork", json={"entryId": ids[2], "id": "flow-fork"})
    assert fork.status_code == 201 and fork.json()["id"] == "flow-fork"
    assert fork.headers["location"] == "/v1/sessions/flow-fork"
    compacted = http.post(url + "/compact", json={"summary": "so far", "firstKeptEntryId": ids[2]})
    assert compacted.status_code == 201, compacted.text
    entry = compacted.json()
    assert entry["type"] == "compaction" and entry["summary"] == "so far"
    assert compacted.headers["etag"] == f'"{entry["id"]}"'
    assert_problem(http.delete(url, headers={"If-Match": '"root"'}), 412, "LEAF_CONFLICT")
    assert http.delete(url, headers={"If-Match": compacted.headers["etag"]}).status_code == 204
    assert_problem(http.delete(url), 404, "NOT_FOUND")
    assert_problem(http.post(url + "/entries", json=message("x")), 404, "NOT_FOUND")


def test_import_streams_jsonl(http: httpx.Client) -> None:
    header = {"type": "session", "version": 3, "id": "imported-1", "timestamp": "2026-01-01T00:00:00.000Z",
              "cwd": "/w"}
    entry = {"type": "message", "id": "e1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
             "message": {"role": "user", "content": "hi", "timestamp": 1}}
    body = (json.dumps(header) + "\n" + json.dumps(entry) + "\n").encode()

    def chunks() -> object:
        for start in range(0, len(body), 7):
            yield body[start:start + 7]

    response = http.post("/v1/imports", content=chunks(), headers={"Content-Type": "application/jsonl"})
    assert response.status_code == 201, response.text
    assert response.json()["sessionId"] == "imported-1" and response.json()["entries"] == 1
    again = http.post("/v1/imports", content=body, headers={"Content-Type": "application/x-ndjson"})
    assert_problem(again, 409, "SESSION_EXISTS")
    replaced = http.post("/v1/imports?replace=true", content=body, headers={"Content-Type": "application/jsonl"})
    assert replaced.status_code == 201
    assert_problem(http.post("/v1/imports", content=b"{not json\n", headers={"Content-Type": "application/jsonl"}),
                   422, "INVALID_INPUT")
    assert_problem(http.post("/v1/imports", content=body, headers=JSON), 415, "UNSUPPORTED_MEDIA_TYPE")


@pytest.mark.parametrize("session_id", ["a/b", "100%", "with space", "ünï", "..", "a%2Fb", ".", "x?y#z"])
def test_hostile_ids_are_addressable(http: httpx.Client, session_id: str) -> None:
    created = create(http, session_id)
    assert created.status_code == 201, created.text
    assert created.headers["location"] == path_of(session_id)
    appended = http.post(path_of(session_id) + "/entries", json=message("hi"))
    assert appended.status_code == 201, appended.text
    assert http.delete(path_of(session_id)).status_code == 204


@pytest.mark.parametrize("segment", ["nul%00id", "lone%ED%A0%80"])
def test_nul_and_lone_surrogates_are_a_clear_4xx(http: httpx.Client, segment: str) -> None:
    assert_problem(http.post(f"/v1/sessions/{segment}/entries", json=message("x")), 400, "INVALID_INPUT")


def test_bad_json_names_line_and_column(http: httpx.Client) -> None:
    create(http, "json-1")
    body = assert_problem(http.post(path_of("json-1") + "/entries", content=b'{\n  "type": ,\n}', headers=JSON),
                          400, "BAD_JSON")
    assert body["line"] == 2 and "line 2" in str(body["detail"])
    deep = b"[" * 300 + b"]" * 300
    assert "nested deeper" in str(assert_problem(http.post(path_of("json-1") + "/entries", content=deep,
                                                           headers=JSON), 400, "BAD_JSON")["detail"])
    assert_problem(http.post(path_of("json-1") + "/entries", content=b"{}", headers={"Content-Type": "text/plain"}),
                   415, "UNSUPPORTED_MEDIA_TYPE")
    assert_problem(http.post(path_of("json-1") + "/entries", content=b"{}"), 415, "UNSUPPORTED_MEDIA_TYPE")


def test_framework_errors_are_problems(http: httpx.Client) -> None:
    assert_problem(http.get("/v1/no-such-route"), 404, "NOT_FOUND")
    assert_problem(http.patch("/v1/sessions"), 405, "METHOD_NOT_ALLOWED")
    assert_problem(http.post("/v1/sessions", json={"cwd": 3}), 422, "INVALID_INPUT")
    assert_problem(http.post("/v1/sessions", json={"bogus": 1}), 422, "INVALID_INPUT")
    assert_problem(http.put(path_of("x") + "/leaf", json=[]), 422, "INVALID_INPUT")


def test_request_ids_are_echoed_when_sane_and_logged(http: httpx.Client, no_auth_server: Server) -> None:
    mine = http.get("/v1/nothing", headers={"X-Request-Id": "client-id.42"})
    assert mine.headers["x-request-id"] == "client-id.42"
    odd = http.get("/v1/nothing", headers={"X-Request-Id": "bad id\twith tab" + "x" * 300})
    assert odd.headers["x-request-id"] != "" and " " not in odd.headers["x-request-id"]
    made = http.get("/v1/nothing").headers["x-request-id"]
    time.sleep(0.2)
    log = no_auth_server.log()
    assert "client-id.42" in log and made in log and '"path": "/v1/nothing", "status": 404' in log


def test_entries_over_the_limit_are_413(http: httpx.Client) -> None:
    create(http, "many")
    response = http.post(path_of("many") + "/entries", json=[message("x")] * 1001)
    assert_problem(response, 413, "PAYLOAD_TOO_LARGE")


def test_openapi_lists_every_write_route_with_schemas_and_docs_answer(http: httpx.Client) -> None:
    spec = http.get("/openapi.json").json()
    paths = spec["paths"]
    for path, method in [("/v1/sessions", "post"), ("/v1/sessions/{session_id}", "delete"),
                         ("/v1/sessions/{session_id}/entries", "post"), ("/v1/sessions/{session_id}/leaf", "put"),
                         ("/v1/sessions/{session_id}/fork", "post"), ("/v1/sessions/{session_id}/compact", "post"),
                         ("/v1/imports", "post")]:
        operation = paths[path][method]
        assert operation["responses"], path
        if method != "delete":
            assert operation["requestBody"]["content"], path
    assert http.get("/docs").status_code == 200


# -- servers of their own ----------------------------------------------------------------------
def test_body_limits_and_the_slow_body(tmp_path: Path, start_server: StartServer) -> None:
    server = start_server(f"sqlite:///{tmp_path / 'limits.db'}", "--no-auth", "--max-body", "1000",
                          "--body-timeout", "1")
    with server.client() as client:
        create(client, "lim")
        big = json.dumps([message("x" * 2000)]).encode()
        assert_problem(client.post(path_of("lim") + "/entries", content=big, headers=JSON), 413, "PAYLOAD_TOO_LARGE")

        def streamed() -> object:  # (no Content-Length: the limit holds while the body streams)
            for _ in range(10):
                yield b" " * 500

        assert_problem(client.post(path_of("lim") + "/entries", content=streamed(), headers=JSON),
                       413, "PAYLOAD_TOO_LARGE")
        port = int(server.base_url.rsplit(":", 1)[1])
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(b"POST /v1/sessions/lim/entries HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n")
        started = time.monotonic()
        answered = b""
        slow.settimeout(0.05)
        sent = 0
        while time.monotonic() - started < 8 and not answered:
            if sent < 20:
                try:
                    slow.sendall(b" ")
                    sent += 1
                except OSError:
                    break
            other = client.get("/openapi.json")  # another client is served meanwhile
            assert other.status_code == 200
            try:
                answered = slow.recv(4096)
            except TimeoutError:
                time.sleep(0.3)
        slow.close()
        # a byte every ~0.35 s keeps the gap under the timeout: the body completes or the timeout is per chunk
        assert answered.startswith(b"HTTP/1.1 "), answered


def test_a_stalled_body_is_dropped_after_the_timeout(tmp_path: Path, start_server: StartServer) -> None:
    server = start_server(f"sqlite:///{tmp_path / 'slow.db'}", "--no-auth", "--body-timeout", "1")
    port = int(server.base_url.rsplit(":", 1)[1])
    with server.client() as client:
        create(client, "slow")
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(b"POST /v1/sessions/slow/entries HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{")
        slow.settimeout(20)
        started = time.monotonic()
        for _ in range(3):
            assert client.get("/openapi.json").status_code == 200
        answered = b""
        while chunk := slow.recv(4096):  # (the head and the body may come in two packets)
            answered += chunk
        assert time.monotonic() - started < 10  # (1 s timeout; the slack is for a loaded machine)
        assert b" 408 " in answered.split(b"\r\n", 1)[0] and b"REQUEST_TIMEOUT" in answered
        slow.close()


def run_serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*sessionstore_command(), *args], capture_output=True, text=True, timeout=60)


def test_no_auth_off_loopback_is_refused(tmp_path: Path) -> None:
    done = run_serve("--db", str(tmp_path / "x.db"), "serve", "--host", "0.0.0.0", "--no-auth", "--port", "1")
    assert done.returncode == 2 and done.stderr.startswith("error: --no-auth is refused")
    assert len(done.stderr.splitlines()) == 1


def test_a_port_in_use_and_a_bad_database_are_one_error_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = run_serve("--db", str(tmp_path / "x.db"), "serve", "--port", port)
    assert done.returncode == 2 and done.stderr.startswith("error: cannot listen on 127.0.0.1:")
    assert len(done.stderr.splitlines()) == 1
    (tmp_path / "dir.db").mkdir()
    done = run_serve("--db", str(tmp_path / "dir.db"), "serve", "--port", str(free_port()))
    assert done.returncode == 2 and done.stderr.startswith("error:") and len(done.stderr.splitlines()) == 1


def test_missing_and_malformed_credentials_are_401(server: Server) -> None:
    with server.client() as client:
        missing = client.post("/v1/sessions", json={})
        assert_problem(missing, 401, "UNAUTHORIZED")
        assert missing.headers["www-authenticate"].startswith("Bearer")
        assert "invalid_token" not in missing.headers["www-authenticate"]
        secret = "Basic c2VjcmV0LXRva2VuLXRleHQ="
        malformed = client.post("/v1/sessions", json={}, headers={"Authorization": secret})
        assert_problem(malformed, 401, "UNAUTHORIZED")
        assert 'error="invalid_token"' in malformed.headers["www-authenticate"]
        assert "c2VjcmV0" not in malformed.text
    time.sleep(0.2)
    assert "c2VjcmV0" not in server.log()

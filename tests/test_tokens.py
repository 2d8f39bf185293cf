"""The service's tokens and idempotency records (SPEC 15-16), on both backends, and ``sessionstore token``."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from sessionstore.api import SessionStore
from sessionstore.errors import InvalidInputError
from sessionstore.service import idempotency, tokens
from sessionstore.store import schema


def test_a_token_authenticates_as_its_tenant_and_scope(store: SessionStore) -> None:
    info, text = tokens.create_token(store, tenant="acme", scope="read", name="ci")
    assert text.startswith("ss_") and text.count("_") == 2
    assert len(text.rsplit("_", 1)[1]) * 5 >= 128  # (base32: 5 bits a character)
    found = tokens.authenticate(store, text)
    assert (found.id, found.tenant, found.scope, found.name) == (info.id, "acme", "read", "ci")
    assert [t.id for t in tokens.list_tokens(store, tenant="acme")] == [info.id]
    assert tokens.list_tokens(store, tenant="other") == []


def test_only_a_hash_of_the_secret_is_stored(store: SessionStore) -> None:
    _, text = tokens.create_token(store, tenant="acme")
    secret = text.rsplit("_", 1)[1]
    with tokens._engine(store).connect() as conn:
        rows = [tuple(str(v) for v in row) for row in conn.execute(select(schema.tokens))]
    assert rows and not any(secret in value for row in rows for value in row)
    listed = json.dumps([t.to_json() for t in tokens.list_tokens(store)])
    assert secret not in listed and text not in listed


@pytest.mark.parametrize("presented", [
    "", "ss_", "ss__", "ss_a_b", "ss_a_b_c", "xx_0123456789abcdef_" + "a" * 39, "ss_0123456789abcdef_" + "a" * 38,
    "ss_0123456789ABCDEF_" + "a" * 39, "ss_\u00e9\u00e9_\u00e9", "x" * 10_000, "ss_0123456789abcdef_" + "a" * 39,
])
def test_malformed_and_unknown_tokens_are_refused_without_their_text(store: SessionStore, presented: str) -> None:
    with pytest.raises(tokens.TokenRefused) as refused:
        tokens.authenticate(store, presented)
    assert refused.value.reason in ("malformed", "unknown")
    if presented:
        assert presented not in str(refused.value)


def test_a_wrong_secret_revoked_and_expired_tokens_are_refused(store: SessionStore) -> None:
    info, text = tokens.create_token(store, tenant="acme")
    wrong = text[:-1] + ("a" if text[-1] != "a" else "b")
    with pytest.raises(tokens.TokenRefused, match="unknown"):
        tokens.authenticate(store, wrong)
    later = datetime.now(UTC) + timedelta(hours=1)
    _, expiring = tokens.create_token(store, tenant="acme", expires=later)
    assert tokens.authenticate(store, expiring).expires is not None
    with pytest.raises(tokens.TokenRefused, match="expired"):
        tokens.authenticate(store, expiring, now=later)
    revoked = tokens.revoke_token(store, info.id)
    assert revoked.revoked is not None
    assert tokens.revoke_token(store, info.id).revoked == revoked.revoked  # (the first time stays)
    with pytest.raises(tokens.TokenRefused, match="revoked"):
        tokens.authenticate(store, text)
    with pytest.raises(tokens.TokenNotFoundError):
        tokens.revoke_token(store, "nosuchtoken")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"tenant": ".bad"}, "tenant"), ({"tenant": "acme", "scope": "root"}, "scope"),
    ({"tenant": "acme", "expires": datetime(2001, 1, 1, tzinfo=UTC)}, "not in the future"),
])
def test_bad_token_requests_are_refused(store: SessionStore, kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        tokens.create_token(store, **kwargs)  # type: ignore[arg-type]
    assert tokens.list_tokens(store) == []


def test_idempotency_replays_the_first_answer_and_refuses_another_body(store: SessionStore) -> None:
    records = idempotency.IdempotencyRecords(store)
    assert records.replay("acme", "k1", "f1") is None
    assert records.remember("acme", "k1", "f1", 201, {"etag": '"x"'}, b"first")
    stored = records.replay("acme", "k1", "f1")
    assert stored is not None and (stored.status, stored.headers, stored.body) == (201, {"etag": '"x"'}, b"first")
    with pytest.raises(idempotency.KeyReused):
        records.replay("acme", "k1", "f2")
    assert records.replay("other", "k1", "f2") is None  # (per tenant)
    assert not records.remember("acme", "k1", "f1", 201, {}, b"second")  # (the first stays)
    assert records.replay("acme", "k1", "f1").body == b"first"  # type: ignore[union-attr]


def test_idempotency_records_expire_after_a_day(store: SessionStore) -> None:
    records = idempotency.IdempotencyRecords(store)
    records.remember("acme", "old", "f1", 200, {}, b"old", now=1_000)
    day = idempotency.WINDOW_MS
    assert records.replay("acme", "old", "f2", now=1_000 + day) is None  # (past the window: a new key)
    assert records.remember("acme", "old", "f2", 200, {}, b"new", now=2_000 + day)  # (the old one purged)
    assert records.replay("acme", "old", "f2", now=2_000 + day).body == b"new"  # type: ignore[union-attr]


def test_racing_remembers_of_one_key_keep_one(store: SessionStore) -> None:
    records = idempotency.IdempotencyRecords(store)
    results: list[bool] = []
    lock = threading.Lock()

    def remember(n: int) -> None:
        kept = records.remember("acme", "race", f"f{n}", 201, {}, f"answer {n}".encode())
        with lock:
            results.append(kept)

    threads = [threading.Thread(target=remember, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 5 + [True]


def test_a_claimed_key_is_held_until_its_answer_is_remembered_or_the_key_released(store: SessionStore) -> None:
    records = idempotency.IdempotencyRecords(store)
    assert records.claim("acme", "k", "f1") is True
    assert records.claim("acme", "k", "f1") is False  # (held by the first: wait)
    assert records.replay("acme", "k", "f1") is None
    with pytest.raises(idempotency.KeyReused):
        records.claim("acme", "k", "f2")
    assert records.claim("other", "k", "f2") is True  # (per tenant)
    assert records.remember("acme", "k", "f1", 201, {"etag": '"x"'}, b"first")
    stored = records.claim("acme", "k", "f1")
    assert isinstance(stored, idempotency.Stored) and (stored.status, stored.body) == (201, b"first")
    records.release("other", "k", "f2")
    assert records.claim("other", "k", "f2") is True  # (released: the next request runs)
    late = idempotency.CLAIM_EXPIRES_MS + 1
    assert records.claim("other", "k", "f2", now=idempotency.now_ms() + late) is True  # (abandoned: taken over)


def _cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    script = str(Path(sys.executable).parent / "sessionstore")
    return subprocess.run([script, "--db", db, *args], capture_output=True, text=True, timeout=60)


def test_the_token_commands(db_url: str) -> None:
    made = _cli(db_url, "--tenant", "acme", "token", "create", "--scope", "read", "--name", "bot", "--expires", "30d")
    assert made.returncode == 0, made.stderr
    text = made.stdout.strip()
    assert text.startswith("ss_") and "shown only now" in made.stderr
    made_json = _cli(db_url, "token", "create", "--tenant", "beta", "--json")
    info = json.loads(made_json.stdout)
    assert info["tenant"] == "beta" and info["scope"] == "write" and info["token"].startswith("ss_")
    listed = _cli(db_url, "token", "list", "--json")
    assert listed.returncode == 0 and text not in listed.stdout and info["token"] not in listed.stdout
    assert [t["tenant"] for t in json.loads(listed.stdout)] == ["acme", "beta"]
    table = _cli(db_url, "token", "list", "--tenant", "acme")
    assert "bot" in table.stdout and "read" in table.stdout and text not in table.stdout
    revoked = _cli(db_url, "token", "revoke", info["id"], "--json")
    assert revoked.returncode == 0 and json.loads(revoked.stdout)["revoked"]
    for args, needle in ((("token", "revoke", "nope"), "no token 'nope'"),
                         (("token", "create", "--expires", "yesterday"), "--expires"),
                         (("token", "create", "--expires", "2001-01-01"), "not in the future"),
                         (("token", "create", "--tenant", "-x"), "tenant")):
        failed = _cli(db_url, *args)
        assert failed.returncode == 2, (args, failed.stdout, failed.stderr)
        assert failed.stderr.startswith("error:") and needle in failed.stderr and "Traceback" not in failed.stderr

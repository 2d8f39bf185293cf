"""The service's tokens (SPEC 16): who may call it, for which tenant, with which scope.

A token's text is ``ss_<public id>_<secret>``: the public id is 16 characters of ``a-z0-9`` (the primary
key of ``sessionstore_tokens``), the secret 192 random bits from :mod:`secrets` in lowercase base32
(``a-z2-7``, no ``_``, so the text splits one way only). The database keeps only the SHA-256 of the
secret; :func:`authenticate` compares hashes with :func:`hmac.compare_digest`, and an unknown public id
costs the same comparison (against a hash no secret has), so the answer's timing does not tell which ids
exist. ``read`` may call every GET, ``write`` also POST, PUT and DELETE, ``admin`` also tenant-wide
deletes. The tenant comes from the token alone.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Engine, insert, select, update

from sessionstore.errors import InvalidInputError, SessionStoreError
from sessionstore.protocol import SCOPES, Scope
from sessionstore.store import schema
from sessionstore.store.tenant import check_tenant

PREFIX = "ss_"
_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_ID_LENGTH = 16
_SECRET_BYTES = 24
_TOKEN_TEXT = re.compile(r"ss_([a-z0-9]{16})_([a-z2-7]{39})")
_NO_SECRET_HASH = hashlib.sha256(b"no token has this secret").hexdigest()


class TokenRefused(SessionStoreError):
    """A presented token is not valid: ``reason`` is ``malformed``, ``unknown``, ``revoked`` or
    ``expired`` (never the token's text)."""

    code = "UNAUTHORIZED"

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"token refused: {reason}")


class TokenNotFoundError(SessionStoreError, LookupError):
    code = "TOKEN_NOT_FOUND"

    def __init__(self, token_id: str) -> None:
        self.token_id = token_id
        super().__init__(f"no token {token_id!r}")


@dataclass(frozen=True)
class TokenInfo:
    """What is known of a token, never its secret. Times are ISO 8601 UTC (``...Z``) or ``None``."""

    id: str
    tenant: str
    scope: Scope
    name: str | None
    created: str
    expires: str | None
    revoked: str | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "tenant": self.tenant, "scope": self.scope, "name": self.name,
                "created": self.created, "expires": self.expires, "revoked": self.revoked}


def _engine(store: Any) -> Engine:
    """The SQLAlchemy engine of a :class:`~sessionstore.api.SessionStore` (its database, any tenant)."""
    engine: Engine = store._entries.engine
    return engine


def iso_utc(moment: datetime) -> str:
    """``moment`` as pi writes times: ISO 8601 UTC with milliseconds and ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def _row_info(row: Any) -> TokenInfo:
    return TokenInfo(id=row.id, tenant=row.tenant, scope=cast(Scope, row.scope), name=row.name,
                     created=row.created, expires=row.expires, revoked=row.revoked)


def check_scope(scope: Any) -> Scope:
    if scope not in SCOPES:
        raise InvalidInputError(f"bad scope {scope!r}: one of {', '.join(SCOPES)}")
    return cast(Scope, scope)


def create_token(store: Any, *, tenant: str, scope: str = "write", name: str | None = None,
                 expires: datetime | None = None, now: datetime | None = None) -> tuple[TokenInfo, str]:
    """A new token of ``tenant``: its info and its text (``ss_<id>_<secret>``), which is shown only here.
    ``expires`` must be later than ``now`` (timezone-aware; a naive time is taken as UTC)."""
    check_tenant(tenant)
    checked = check_scope(scope)
    now = now or datetime.now(UTC)
    if expires is not None:
        if expires.tzinfo is None:
            expires = expires.replace(tzinfo=UTC)
        if expires <= now:
            raise InvalidInputError(f"the expiry {iso_utc(expires)} is not in the future")
    if name is not None and not isinstance(name, str):
        raise InvalidInputError("a token's name must be a string")
    token_id = "".join(secrets.choice(_ID_ALPHABET) for _ in range(_ID_LENGTH))
    secret = base64.b32encode(secrets.token_bytes(_SECRET_BYTES)).decode("ascii").lower().rstrip("=")
    info = TokenInfo(id=token_id, tenant=tenant, scope=checked, name=name, created=iso_utc(now),
                     expires=None if expires is None else iso_utc(expires), revoked=None)
    with _engine(store).begin() as conn:
        conn.execute(insert(schema.tokens).values(
            id=info.id, tenant=info.tenant, scope=info.scope, name=info.name, created=info.created,
            expires=info.expires, revoked=None, secret_sha256=_hash(secret)))
    return info, f"{PREFIX}{token_id}_{secret}"


def list_tokens(store: Any, *, tenant: str | None = None) -> list[TokenInfo]:
    """Every token (of ``tenant`` when given), oldest first; never a secret."""
    query = select(schema.tokens).order_by(schema.tokens.c.created, schema.tokens.c.id)
    if tenant is not None:
        query = query.where(schema.tokens.c.tenant == check_tenant(tenant))
    with _engine(store).connect() as conn:
        return [_row_info(row) for row in conn.execute(query)]


def revoke_token(store: Any, token_id: str, *, now: datetime | None = None) -> TokenInfo:
    """Revoke the token ``token_id`` (its public id); a token revoked before keeps its first time.
    Raises :class:`TokenNotFoundError` for an unknown id."""
    stamp = iso_utc(now or datetime.now(UTC))
    table = schema.tokens
    with _engine(store).begin() as conn:
        conn.execute(update(table).where(table.c.id == token_id, table.c.revoked.is_(None)).values(revoked=stamp))
        row = conn.execute(select(table).where(table.c.id == token_id)).first()
    if row is None:
        raise TokenNotFoundError(token_id)
    return _row_info(row)


def authenticate(store: Any, presented: str, *, now: datetime | None = None) -> TokenInfo:
    """The info of the valid token ``presented`` (its whole text); :class:`TokenRefused` otherwise."""
    match = _TOKEN_TEXT.fullmatch(presented) if isinstance(presented, str) else None
    if match is None:
        raise TokenRefused("malformed")
    token_id, secret = match.groups()
    table = schema.tokens
    with _engine(store).connect() as conn:
        row = conn.execute(select(table).where(table.c.id == token_id)).first()
    stored = row.secret_sha256 if row is not None else _NO_SECRET_HASH
    if not hmac.compare_digest(stored, _hash(secret)) or row is None:
        raise TokenRefused("unknown")
    if row.revoked is not None:
        raise TokenRefused("revoked")
    if row.expires is not None and _parse(row.expires) <= (now or datetime.now(UTC)):
        raise TokenRefused("expired")
    return _row_info(row)


class VerifiedTokens:
    """Tokens :func:`authenticate` accepted in the last ``seconds``, kept by the SHA-256 of their text, so
    that the requests of one caller cost one lookup per ``seconds``, not one each. A revoked token is
    refused again at most ``seconds`` after its revocation (per worker); an expired one at once (its
    expiry is checked on every use). ``seconds`` 0 looks every request up. At most ``size`` are kept."""

    def __init__(self, seconds: float, *, size: int = 4096) -> None:
        self.seconds = seconds
        self.size = size
        self._known: dict[bytes, tuple[float, datetime | None, TokenInfo]] = {}
        self._lock = threading.Lock()

    def known(self, presented: str, *, now: datetime | None = None) -> TokenInfo | None:
        """The info of ``presented`` if it was accepted less than ``seconds`` ago and has not expired
        since; ``None``: it must be looked up (:meth:`authenticate`). No database access."""
        if self.seconds <= 0:
            return None
        key = hashlib.sha256(presented.encode("utf-8", "surrogatepass")).digest()
        found = self._known.get(key)
        if found is None:
            return None
        checked, expires, info = found
        if time.monotonic() - checked > self.seconds or (
                expires is not None and expires <= (now or datetime.now(UTC))):
            with self._lock:
                self._known.pop(key, None)
            return None
        return info

    def authenticate(self, store: Any, presented: str, *, now: datetime | None = None) -> TokenInfo:
        """:meth:`known`'s info, else :func:`authenticate`'s (kept when it accepts the token)."""
        info = self.known(presented, now=now)
        if info is not None:
            return info
        info = authenticate(store, presented, now=now)
        if self.seconds > 0:
            key = hashlib.sha256(presented.encode("utf-8", "surrogatepass")).digest()
            expires = _parse(info.expires) if info.expires is not None else None
            with self._lock:
                if len(self._known) >= self.size:
                    self._known.pop(next(iter(self._known)))
                self._known[key] = (time.monotonic(), expires, info)
        return info

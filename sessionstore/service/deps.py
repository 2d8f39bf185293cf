"""FastAPI dependencies: who is calling (from the token alone) and that caller's tenant's store.

The application keeps one :class:`SessionStore` (``app.state.store``, one engine); each request gets the
caller's tenant's view of it (``for_tenant``: same engine, cheap). The caller is resolved once per request
and kept on ``request.state.caller``. The dependencies are coroutines: a token verified a moment ago
(:class:`~sessionstore.service.tokens.VerifiedTokens`) costs no worker thread; a lookup runs in one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from sessionstore.api import SessionStore
from sessionstore.protocol import Scope
from sessionstore.service import tokens
from sessionstore.service.config import ServiceConfig
from sessionstore.service.problems import ProblemError
from sessionstore.service.ratelimit import RateLimiter


@dataclass(frozen=True)
class Caller:
    """An authenticated caller: its tenant, its scope and its token's public id (None under --no-auth)."""

    tenant: str
    scope: Scope
    token_id: str | None


def _unauthorized(detail: str, *, presented: bool) -> ProblemError:
    challenge = 'Bearer realm="sessionstore"'
    if presented:
        challenge += ', error="invalid_token"'
    return ProblemError(401, "UNAUTHORIZED", detail, headers={"WWW-Authenticate": challenge})


async def _authenticate(request: Request) -> Caller:
    config: ServiceConfig = request.app.state.config
    if config.no_auth:
        return Caller(tenant="default", scope="admin", token_id=None)
    header = request.headers.get("authorization")
    if header is None:
        raise _unauthorized("this request needs a token: Authorization: Bearer ss_...", presented=False)
    scheme, _, presented = header.partition(" ")
    presented = presented.strip()
    if scheme.lower() != "bearer" or not presented:
        raise _unauthorized("the Authorization header is not 'Bearer <token>'", presented=True)
    verified: tokens.VerifiedTokens = request.app.state.verified_tokens
    info = verified.known(presented)  # (a token seen a moment ago: no database, no worker thread)
    if info is None:
        try:
            info = await run_in_threadpool(verified.authenticate, request.app.state.store, presented)
        except tokens.TokenRefused as exc:
            raise _unauthorized(f"the token was refused: {exc.reason}", presented=True) from None
    return Caller(tenant=info.tenant, scope=info.scope, token_id=info.id)


async def caller(request: Request) -> Caller:
    """The authenticated caller; 401 UNAUTHORIZED (with ``WWW-Authenticate: Bearer``) otherwise, and
    429 RATE_LIMITED when its tenant is over the rate limit (which counts this request)."""
    known: Caller | None = getattr(request.state, "caller", None)
    if known is None:
        known = await _authenticate(request)
        request.state.caller = known
        limiter: RateLimiter | None = getattr(request.app.state, "rate_limiter", None)
        if limiter is not None:  # (once per request: the caller is resolved once; a database write)
            await run_in_threadpool(limiter.hit, known.tenant)
    return known


def _store_for(request: Request, who: Caller) -> SessionStore:
    base: SessionStore = request.app.state.store
    return base.for_tenant(who.tenant)


async def reader(request: Request) -> SessionStore:
    """The caller's tenant's store, for any scope."""
    return _store_for(request, await caller(request))


async def writer(request: Request) -> SessionStore:
    """The caller's tenant's store for a write: scope ``write`` or ``admin``, else 403 FORBIDDEN."""
    who = await caller(request)
    if who.scope not in ("write", "admin"):
        raise ProblemError(403, "FORBIDDEN", f"a {who.scope!r} token may not write")
    return _store_for(request, who)


CallerDep = Annotated[Caller, Depends(caller)]
ReaderStore = Annotated[SessionStore, Depends(reader)]
WriterStore = Annotated[SessionStore, Depends(writer)]

"""``sessionstore token create|list|revoke``: the service's tokens (SPEC 16, :mod:`sessionstore.service.tokens`)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import click

from sessionstore.cli.app import TEXT, Ctx, emit_json, fail, handle_errors, json_option, pass_ctx, say
from sessionstore.protocol import SCOPES

_DURATION = re.compile(r"([1-9][0-9]{0,5})([dhm])")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


def expiry(given: str, *, now: datetime | None = None) -> datetime:
    """``--expires``: a duration from now (``30d``, ``12h``, ``90m``), or an ISO 8601 date or date-time
    (UTC unless it names its offset; a date alone is its midnight UTC)."""
    now = now or datetime.now(UTC)
    match = _DURATION.fullmatch(given.strip())
    if match is not None:
        return now + timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    try:
        moment = datetime.fromisoformat(given.strip().replace("Z", "+00:00"))
    except ValueError:
        fail(f"--expires: {given!r} is neither a date (2027-01-31), a date-time (2027-01-31T12:00:00Z)"
             " nor a duration (30d, 12h, 90m)")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@click.group("token")
def token() -> None:
    """Tokens of the HTTP service (sessionstore serve): each grants one tenant's sessions with a scope:
    read (every GET), write (also POST, PUT, DELETE) or admin (also tenant-wide deletes). Only a hash
    of a token's secret is stored: its text is shown once, by create."""


@token.command("create")
@click.option("--tenant", "tenant", default=None, type=TEXT, metavar="T",
              help="The tenant the token grants (default: the global --tenant).")
@click.option("--scope", type=click.Choice(SCOPES), default="write", show_default=True,
              help="What the token may do.")
@click.option("--name", default=None, type=TEXT, help="A name to tell tokens apart in token list.")
@click.option("--expires", default=None, type=TEXT, metavar="DATE",
              help="When it stops working: a date, a date-time, or a duration from now (30d, 12h, 90m).")
@json_option
@pass_ctx
@handle_errors
def create(ctx: Ctx, tenant: str | None, scope: str, name: str | None, expires: str | None, as_json: bool) -> None:
    """Make a token and print its text (once: it is not stored and cannot be shown again)."""
    from sessionstore.service import tokens  # (lazily: --help loads no database layer)

    when = None if expires is None else expiry(expires)
    info, text = tokens.create_token(ctx.local_store, tenant=tenant or ctx.tenant, scope=scope, name=name, expires=when)
    if as_json:
        emit_json({**info.to_json(), "token": text})
        return
    say(f"token {info.id} for tenant {info.tenant} ({info.scope}); it is shown only now:", err=True)
    say(text)


@token.command("list")
@click.option("--tenant", "tenant", default=None, type=TEXT, metavar="T",
              help="Only this tenant's tokens (default: every tenant's).")
@json_option
@pass_ctx
@handle_errors
def list_cmd(ctx: Ctx, tenant: str | None, as_json: bool) -> None:
    """List tokens (never their secrets), oldest first: ID, TENANT, SCOPE, NAME, CREATED, EXPIRES, REVOKED."""
    from sessionstore.service import tokens  # (lazily: --help loads no database layer)

    found = tokens.list_tokens(ctx.local_store, tenant=tenant)
    if as_json:
        emit_json([info.to_json() for info in found])
        return
    if not found:
        say("no tokens", err=True)
        return
    rows = [("ID", "TENANT", "SCOPE", "NAME", "CREATED", "EXPIRES", "REVOKED")]
    rows += [(i.id, i.tenant, i.scope, i.name or "-", i.created, i.expires or "-", i.revoked or "-") for i in found]
    widths = [max(len(row[n]) for row in rows) for n in range(len(rows[0]))]
    for row in rows:
        say("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


@token.command("revoke")
@click.argument("token_id", metavar="ID", type=TEXT)
@json_option
@pass_ctx
@handle_errors
def revoke(ctx: Ctx, token_id: str, as_json: bool) -> None:
    """Revoke the token ID (its public id, as token list shows it): it is refused from now on."""
    from sessionstore.service import tokens  # (lazily: --help loads no database layer)

    info = tokens.revoke_token(ctx.local_store, token_id)
    if as_json:
        emit_json(info.to_json())
    else:
        say(f"revoked {info.id} (tenant {info.tenant})")

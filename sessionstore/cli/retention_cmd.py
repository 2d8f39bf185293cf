"""``sessionstore retention set|show|clear|run``, ``hold``/``unhold``, ``archive``/``restore`` and ``erase``
(SPEC 18, issue 26; :mod:`sessionstore.store.retention`, ``archive``, ``erasure``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sessionstore.cli.app import TEXT, Ctx, emit_json, fail, handle_errors, json_option, pass_ctx, say

if TYPE_CHECKING:
    from sessionstore.store.entry_store import EntryStore

archive_dir_option = click.option(
    "--archive-dir", "archive_dir", default=None, type=click.Path(file_okay=False, path_type=Path),
    help="Where archive files go (default: $SESSIONSTORE_ARCHIVE_DIR, else beside the database: NAME-archive"
         " for the SQLite file NAME.db).")
tenant_option = click.option("--tenant", "tenant", default=None, type=TEXT, metavar="T",
                             help="The tenant (default: the global --tenant).")


def _entries(ctx: Ctx, tenant: str | None = None) -> EntryStore:
    store = ctx.local_store if tenant is None or tenant == ctx.tenant else ctx.local_store.for_tenant(tenant)
    return store._entries


def _archive_dir(ctx: Ctx, given: Path | None) -> Path:
    from sessionstore.store.archive import default_archive_dir

    return given.expanduser().absolute() if given is not None else default_archive_dir(ctx.resolved_url)


def _days(value: float | None) -> str:
    return "never" if value is None else f"{value:g} days"


@click.group("retention")
def retention() -> None:
    """Per-tenant retention: archive sessions after some days without activity (their entries move to a
    compressed, checksummed pi file; the session stays listed) and delete them after more. serve applies
    the policies on a schedule; retention run applies them now. Held sessions (hold) are left alone."""


@retention.command("set")
@tenant_option
@click.option("--archive-after", "archive_after", type=click.FloatRange(min=0), default=None, metavar="DAYS",
              help="Archive a session after this many days without activity.")
@click.option("--delete-after", "delete_after", type=click.FloatRange(min=0), default=None, metavar="DAYS",
              help="Delete a session after this many days without activity (archived or not).")
@json_option
@pass_ctx
@handle_errors
def set_cmd(ctx: Ctx, tenant: str | None, archive_after: float | None, delete_after: float | None,
            as_json: bool) -> None:
    """Set the tenant's policy (replacing the one it had)."""
    from sessionstore.store import retention as policies

    policy = policies.set_policy(_entries(ctx, tenant), archive_after_days=archive_after,
                                 delete_after_days=delete_after)
    if as_json:
        emit_json(policy.to_json())
    else:
        say(f"tenant {policy.tenant}: archive after {_days(policy.archive_after_days)},"
            f" delete after {_days(policy.delete_after_days)}", err=True)


@retention.command("show")
@tenant_option
@json_option
@pass_ctx
@handle_errors
def show_cmd(ctx: Ctx, tenant: str | None, as_json: bool) -> None:
    """Show the tenant's policy, its held sessions and its archived ones."""
    from sessionstore.store import archive
    from sessionstore.store import retention as policies

    entries = _entries(ctx, tenant)
    policy, held, archived = policies.get_policy(entries), policies.held(entries), archive.archived_ids(entries)
    if as_json:
        emit_json({"tenant": entries.tenant, "policy": None if policy is None else policy.to_json(),
                   "held": [{"sessionId": sid, "heldAt": at} for sid, at in held.items()],
                   "archived": sorted(archived)})
        return
    if policy is None:
        say(f"tenant {entries.tenant}: no retention policy (sessions are kept)")
    else:
        say(f"tenant {entries.tenant}: archive after {_days(policy.archive_after_days)},"
            f" delete after {_days(policy.delete_after_days)} (set {policy.updated_at})")
    for sid, at in held.items():
        say(f"held {sid} (since {at})")
    say(f"{len(archived)} archived session{'s' if len(archived) != 1 else ''}")


@retention.command("clear")
@tenant_option
@json_option
@pass_ctx
@handle_errors
def clear_cmd(ctx: Ctx, tenant: str | None, as_json: bool) -> None:
    """Remove the tenant's policy (its sessions are kept; archived ones stay archived)."""
    from sessionstore.store import retention as policies

    entries = _entries(ctx, tenant)
    had = policies.clear_policy(entries)
    if as_json:
        emit_json({"tenant": entries.tenant, "cleared": had})
    else:
        say(f"tenant {entries.tenant}: {'policy removed' if had else 'had no policy'}", err=True)


@retention.command("run")
@click.option("--tenant", "tenant", default=None, type=TEXT, metavar="T",
              help="Only this tenant's policy (default: every tenant that has one).")
@click.option("--dry-run", is_flag=True, help="List what would be archived and deleted; change nothing.")
@archive_dir_option
@json_option
@pass_ctx
@handle_errors
def run_cmd(ctx: Ctx, tenant: str | None, dry_run: bool, archive_dir: Path | None, as_json: bool) -> None:
    """Apply the retention policies now: archive, then delete, by each session's last activity (what ls
    lists by). Held sessions are listed and left alone. Exit 1 when a session failed (the others go on)."""
    from sessionstore.store import retention as policies

    directory = _archive_dir(ctx, archive_dir)
    base = ctx.local_store._entries
    tenants = [tenant] if tenant is not None else [p.tenant for p in policies.all_policies(base)]
    reports = [policies.run(_entries(ctx, t), archive_dir=directory, dry_run=dry_run) for t in tenants]
    if as_json:
        emit_json([r.to_json() for r in reports])
    else:
        if not reports:
            say("no tenant has a retention policy (retention set adds one)", err=True)
        verb = ("would archive", "would delete") if dry_run else ("archived", "deleted")
        for report in reports:
            for sid in report.archived:
                say(f"{verb[0]} {sid} ({report.tenant})")
            for sid in report.deleted:
                say(f"{verb[1]} {sid} ({report.tenant})")
            for item in report.held:
                say(f"held {item.session_id} ({report.tenant}): not {item.action}d")
            for sid, error in report.failures:
                say(f"error: {sid} ({report.tenant}): {error}", err=True)
            say(f"tenant {report.tenant}: {len(report.archived)} {verb[0]}, {len(report.deleted)} {verb[1]},"
                f" {len(report.held)} held", err=True)
    if any(r.failures for r in reports):
        sys.exit(1)


@click.command("hold")
@click.argument("session", type=TEXT)
@json_option
@pass_ctx
@handle_errors
def hold(ctx: Ctx, session: str, as_json: bool) -> None:
    """Exempt SESSION from the retention policy (never archived or deleted by it) until unhold."""
    _set_hold(ctx, session, True, as_json)


@click.command("unhold")
@click.argument("session", type=TEXT)
@json_option
@pass_ctx
@handle_errors
def unhold(ctx: Ctx, session: str, as_json: bool) -> None:
    """Let the retention policy apply to SESSION again."""
    _set_hold(ctx, session, False, as_json)


def _set_hold(ctx: Ctx, session: str, held: bool, as_json: bool) -> None:
    from sessionstore.store import retention as policies

    sid = ctx.session_id(session)
    changed = (policies.hold if held else policies.unhold)(_entries(ctx), sid)
    if as_json:
        emit_json({"sessionId": sid, "held": held, "changed": changed})
    elif held:
        say(f"held {sid}" if changed else f"{sid} was held already", err=True)
    else:
        say(f"released {sid}" if changed else f"{sid} was not held", err=True)


@click.command("archive")
@click.argument("session", type=TEXT)
@archive_dir_option
@json_option
@pass_ctx
@handle_errors
def archive_cmd(ctx: Ctx, session: str, archive_dir: Path | None, as_json: bool) -> None:
    """Archive SESSION now: its entries move into a compressed, checksummed pi v3 file; it stays listed
    (ls marks it) and context, export, append and fork restore it first."""
    from sessionstore.store import archive

    sid = ctx.session_id(session)
    info = archive.archive_session(_entries(ctx), sid, archive_dir=_archive_dir(ctx, archive_dir))
    if as_json:
        emit_json(info.to_json())
    else:
        say(f"archived {sid}: {info.entries} entries in {info.file} ({info.bytes} bytes)", err=True)


@click.command("restore")
@click.argument("session", type=TEXT)
@json_option
@pass_ctx
@handle_errors
def restore_cmd(ctx: Ctx, session: str, as_json: bool) -> None:
    """Put an archived SESSION's entries back into the database (after checking its file's SHA-256)."""
    from sessionstore.store import archive

    sid = ctx.session_id(session)
    entries = _entries(ctx)
    if archive.archive_info(entries, sid) is None:
        fail(f"session {sid} is not archived")
    info = archive.restore_session(entries, sid)
    if as_json:
        emit_json({**info.to_json(), "restored": True})
    else:
        say(f"restored {sid}: {info.entries} entries", err=True)


@click.command("erase")
@click.argument("session", type=TEXT, required=False)
@click.option("--all", "everything", is_flag=True, help="Erase every session of the tenant (--tenant).")
@tenant_option
@click.option("--yes", is_flag=True, help="Do not ask (needed when stdin is not a terminal).")
@json_option
@pass_ctx
@handle_errors
def erase(ctx: Ctx, session: str | None, everything: bool, tenant: str | None, yes: bool, as_json: bool) -> None:
    """Erase SESSION with every trace of it: entries, search and usage rows, its sync source (sync does
    not import its file again unless --include-deleted), idempotency records, its archive file; on SQLite
    the freed pages are overwritten and the WAL truncated, on PostgreSQL the tables are vacuumed. An
    audit record (session id, when, who) is kept, without any of its content. --all: every session of
    the tenant. SESSION must be the full id."""
    from sessionstore.store import erasure

    if everything == (session is not None):
        fail("erase takes SESSION or --all (with --tenant T), not both" if everything
             else "erase takes SESSION, or --all to erase every session of the tenant")
    entries = _entries(ctx, tenant)
    what = f"every session of tenant {entries.tenant}" if everything else f"session {session}"
    if not yes:
        if not sys.stdin.isatty():
            fail(f"not erasing {what} without --yes (stdin is not a terminal to ask on)")
        click.confirm(f"erase {what}? this cannot be undone", abort=True)
    done: list[Any]
    if everything:
        done = erasure.erase_tenant(entries)
    else:
        assert session is not None
        done = [erasure.erase_session(entries, session)]
    if as_json:
        emit_json([record.to_json() for record in done])
    else:
        for record in done:
            say(f"erased {record.session_id} ({record.entries} entries)", err=True)
        if everything:
            say(f"tenant {entries.tenant}: {len(done)} sessions erased", err=True)

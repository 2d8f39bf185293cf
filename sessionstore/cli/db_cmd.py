"""``db``: schema management (Alembic): ``upgrade``, ``history``, ``current``, ``check``; the database's
settings: ``search-index``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from sessionstore.cli.app import Ctx, database_errors, handle_errors, parsed_url, pass_ctx, say


@click.group()
def db() -> None:
    """Schema management (Alembic)."""


@contextmanager
def _engine(ctx: Ctx, *, create: bool = False) -> Iterator[Any]:
    """An engine on the database (``create``: a missing SQLite file is made); any failure to reach or
    read it names the database."""
    from sessionstore.store.engine import make_engine

    url = ctx.resolved_url
    with database_errors(url):
        engine = make_engine(url, durability=ctx.durability, create=create)  # type: ignore[arg-type]
        try:
            yield engine
        finally:
            engine.dispose()


def _missing_sqlite_file(ctx: Ctx) -> bool:
    url = parsed_url(ctx.resolved_url)
    return bool(url.get_backend_name() == "sqlite" and url.database and not url.database.startswith("file:")
                and url.database != ":memory:" and not Path(url.database).expanduser().exists())


@db.command()
@pass_ctx
@handle_errors
def upgrade(ctx: Ctx) -> None:
    """Upgrade the schema to this version's head (the only way on PostgreSQL) and say which revisions
    were applied."""
    from sessionstore.store import migrate

    with _engine(ctx, create=True) as engine:
        before = migrate.database_revision(engine)
        revision = migrate.upgrade(engine)
    applied = migrate.applied_between(before, revision)
    if before == revision:
        say(f"schema at {revision}: already current")
        return
    if before is None:
        say(f"created the schema at {revision}")
        return
    for step in applied:
        say(f"applied {step.revision}: {step.title}")
    say(f"schema at {revision} (was {before})")


@db.command()
@pass_ctx
@handle_errors
def history(ctx: Ctx) -> None:
    """List the schema revisions this version knows, oldest first; '*' marks the database's (when it
    has a schema)."""
    from sessionstore.store import migrate

    current = None
    if not _missing_sqlite_file(ctx):
        with _engine(ctx) as engine:
            current = migrate.database_revision(engine)
    for step in migrate.history():
        say(f"{'*' if step.revision == current else ' '} {step.revision}  {step.title}")


@db.command()
@pass_ctx
@handle_errors
def current(ctx: Ctx) -> None:
    """Print the schema revision of the database ('none' before the first upgrade); exit 2 when this
    version of sessionstore does not know it (a newer one wrote the database)."""
    from sessionstore.store import migrate

    if _missing_sqlite_file(ctx):  # no schema, and nothing to create for saying so
        say("none")
        return
    with _engine(ctx) as engine:
        revision = migrate.database_revision(engine)
        if revision is not None and revision not in migrate.known_revisions():
            say(revision)
            migrate.check_database(engine)  # raises SchemaTooNewError, naming the database
    say(revision or "none")


@db.command()
@pass_ctx
@handle_errors
def check(ctx: Ctx) -> None:
    """Exit 0 when the schema is current, else say what to run and exit 2."""
    from sessionstore.store import migrate

    with _engine(ctx) as engine:
        migrate.check_database(engine)
    say("schema is current")


@db.command("search-index")
@click.argument("state", required=False, type=click.Choice(["on", "off"]))
@pass_ctx
@handle_errors
def search_index(ctx: Ctx, state: str | None) -> None:
    """Show, or turn on or off, the database's search index (on by default). Off: its rows are deleted
    and searches read every entry instead (the same results, slower; for a database never searched).
    On: it is built now."""
    store = ctx.local_store
    if state is None:
        say(f"search index: {'on' if store.search_index_on() else 'off'}")
    elif state == "off":
        store.set_search_index(False)
        say("search index: off (searches read every entry)")
    else:
        say(f"search index: on ({store.set_search_index(True):,} entries indexed)")

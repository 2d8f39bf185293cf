"""The `sessionstore` command line: :func:`main` runs it (the console script's entry point).

:mod:`sessionstore.cli.app` holds what the commands share (the :data:`cli` group, its options, output
and errors); each ``*_cmd`` module holds one group of commands and imports from ``app`` only. The
commands are added to :data:`cli` here, one line each, so importing any module of the package gives
the whole command line. A new command: a module beside these, and its line below (one that only
reads, or that needs the database itself rather than a server, is also named in ``app``'s
``READ_ONLY_COMMANDS`` or ``LOCAL_ONLY_COMMANDS``)."""

from sessionstore.cli.app import cli
from sessionstore.cli.db_cmd import db
from sessionstore.cli.demo_cmd import demo
from sessionstore.cli.payload_cmd import payload
from sessionstore.cli.read_cmd import context, export, ls_cmd, show, tree, validate
from sessionstore.cli.retention_cmd import archive_cmd, erase, hold, restore_cmd, retention, unhold
from sessionstore.cli.search_cmd import search
from sessionstore.cli.serve_cmd import serve
from sessionstore.cli.stats_cmd import stats
from sessionstore.cli.sync_cmd import sync
from sessionstore.cli.tail_cmd import tail
from sessionstore.cli.token_cmd import token
from sessionstore.cli.write_cmd import append, branch, compact, edit, fork, import_cmd, label, name, new, rm_cmd

__all__ = ["cli", "main"]

# reading
cli.add_command(context)
cli.add_command(export)
cli.add_command(validate)
cli.add_command(ls_cmd)
cli.add_command(tree)
cli.add_command(show)
cli.add_command(tail)
cli.add_command(payload)
# writing
cli.add_command(import_cmd)
cli.add_command(new)
cli.add_command(append)
cli.add_command(edit)
cli.add_command(branch)
cli.add_command(fork)
cli.add_command(label)
cli.add_command(name)
cli.add_command(compact)
cli.add_command(rm_cmd)
# the catalog
cli.add_command(search)
cli.add_command(stats)
cli.add_command(sync)
# retention (SPEC 18)
cli.add_command(retention)
cli.add_command(hold)
cli.add_command(unhold)
cli.add_command(archive_cmd)
cli.add_command(restore_cmd)
cli.add_command(erase)
# the database, the server and the demo
cli.add_command(db)
cli.add_command(serve)
cli.add_command(token)
cli.add_command(demo)


def main() -> None:
    cli()

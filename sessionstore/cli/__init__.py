"""The `sessionstore` command line: :func:`main` runs it (the console script's entry point); the
commands are in :mod:`sessionstore.cli.app`."""

from sessionstore.cli.app import cli


def main() -> None:
    cli()

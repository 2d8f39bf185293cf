"""The `sessionstore` command line: :func:`main` runs it (the console script's entry point); the
commands are in :mod:`sessionstore.cli.main`.

The submodule is imported here, before ``main`` is defined: importing a submodule sets the package's
attribute of its name, so a ``main`` function defined first would be replaced by the module
``sessionstore.cli.main`` once something imported it."""

from sessionstore.cli.main import cli


def main() -> None:
    cli()

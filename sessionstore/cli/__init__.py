"""The `sessionstore` command line (placeholder until the CLI module lands)."""


def main() -> None:
    from sessionstore.cli.main import cli

    cli()

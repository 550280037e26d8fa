"""The command line: a thin Typer shell over :mod:`finops_cli.api`. The only place with exit codes."""

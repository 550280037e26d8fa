"""finops validate / stack / netc — placeholder until implemented."""

from __future__ import annotations

import typer

from finops_cli.errors import InputError


def register(app: typer.Typer) -> None:
    @app.command("validate")
    def _validate() -> None:
        """Not implemented yet."""
        raise InputError("finops validate is not implemented yet")

    @app.command("stack")
    def _stack() -> None:
        """Not implemented yet."""
        raise InputError("finops stack is not implemented yet")

    @app.command("netc")
    def _netc() -> None:
        """Not implemented yet."""
        raise InputError("finops netc is not implemented yet")

"""finops waste — placeholder until implemented."""

from __future__ import annotations

import typer

from finops_cli.errors import InputError


def register(app: typer.Typer) -> None:
    @app.command("waste")
    def _waste() -> None:
        """Not implemented yet."""
        raise InputError("finops waste is not implemented yet")

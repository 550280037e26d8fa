"""finops prices — placeholder until implemented."""

from __future__ import annotations

import typer

from finops_cli.errors import InputError


def register(app: typer.Typer) -> None:
    @app.command("prices")
    def _prices() -> None:
        """Not implemented yet."""
        raise InputError("finops prices is not implemented yet")

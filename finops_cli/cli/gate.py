"""finops gate — placeholder until implemented."""

from __future__ import annotations

import typer

from finops_cli.errors import InputError


def register(app: typer.Typer) -> None:
    @app.command("gate")
    def _gate() -> None:
        """Not implemented yet."""
        raise InputError("finops gate is not implemented yet")

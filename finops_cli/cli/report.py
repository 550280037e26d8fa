"""finops report — placeholder until implemented."""

from __future__ import annotations

import typer

from finops_cli.errors import InputError


def register(app: typer.Typer) -> None:
    @app.command("report")
    def _report() -> None:
        """Not implemented yet."""
        raise InputError("finops report is not implemented yet")

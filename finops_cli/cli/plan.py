"""finops plan — placeholder until implemented."""

from __future__ import annotations

import typer

from finops_cli.errors import InputError


def register(app: typer.Typer) -> None:
    @app.command("plan")
    def _plan() -> None:
        """Not implemented yet."""
        raise InputError("finops plan is not implemented yet")

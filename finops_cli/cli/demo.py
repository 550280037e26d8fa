"""finops demo — placeholder until implemented."""

from __future__ import annotations

import typer

from finops_cli.errors import InputError


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def _demo() -> None:
        """Not implemented yet."""
        raise InputError("finops demo is not implemented yet")

"""finops simulate — placeholder until implemented."""

from __future__ import annotations

import typer

from finops_cli.errors import InputError


def register(app: typer.Typer) -> None:
    @app.command("dispatch")
    def _dispatch() -> None:
        """Not implemented yet."""
        raise InputError("finops dispatch is not implemented yet")

    @app.command("market")
    def _market() -> None:
        """Not implemented yet."""
        raise InputError("finops market is not implemented yet")

"""ingest billing — placeholder until implemented."""

from __future__ import annotations

import typer

from finops_cli.errors import InputError


def register(app: typer.Typer) -> None:
    @app.command("billing")
    def _billing() -> None:
        """Not implemented yet."""
        raise InputError("finops billing is not implemented yet")

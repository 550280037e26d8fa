"""ingest utilization / spot-prices — placeholder until implemented."""

from __future__ import annotations

import typer

from finops_cli.errors import InputError


def register(app: typer.Typer) -> None:
    @app.command("utilization")
    def _utilization() -> None:
        """Not implemented yet."""
        raise InputError("finops utilization is not implemented yet")

    @app.command("spot-prices")
    def _spot_prices() -> None:
        """Not implemented yet."""
        raise InputError("finops spot-prices is not implemented yet")

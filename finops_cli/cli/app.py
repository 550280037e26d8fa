"""The ``finops`` Typer application: wires the verb modules together and maps errors to exit codes.

Exit codes: 0 ok; 1 gate failed; 2 invalid input or usage; 3 infeasible. A user's mistake is a
:class:`~finops_cli.errors.FinopsError` and prints one clear message, never a traceback.
"""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from finops_cli import __version__
from finops_cli.cli.output import stderr_console
from finops_cli.errors import FinopsError


class _ErrorMappingGroup(TyperGroup):
    """Turn domain errors into a one-line message and their exit code, at every nesting level."""

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except FinopsError as exc:
            console = stderr_console()
            for line in str(exc).splitlines() or ["error"]:
                console.print(f"[bold red]error:[/] {escape(line)}", soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None


def _new_app(**kwargs: Any) -> typer.Typer:
    return typer.Typer(
        cls=_ErrorMappingGroup,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        rich_markup_mode="rich",
        **kwargs,
    )


app = _new_app(help="GPU-fleet FinOps: what you wasted, one merit-order supply curve, and the cheapest compliant plan.")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"finops {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    """finops — point it at a month of billing exports, GPU traces and spot prices."""


def _register() -> None:
    from finops_cli.cli import (
        demo,
        estate,
        gate,
        ingest,
        ingest_traces,
        plan,
        prices,
        report,
        simulate,
        waste,
    )

    ingest_app = _new_app(help="Load billing exports, utilisation traces and spot prices into the store.")
    app.add_typer(ingest_app, name="ingest")
    ingest.register(ingest_app)
    ingest_traces.register(ingest_app)
    simulate_app = _new_app(help="Request-level dispatch and continuous-renegotiation market simulators.")
    app.add_typer(simulate_app, name="simulate")
    simulate.register(simulate_app)
    for module in (prices, waste, estate, plan, report, gate, demo):
        module.register(app)


_register()


def main() -> None:
    """Console-script entry point."""
    app()

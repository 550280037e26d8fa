"""Options shared by several commands, declared once as ``Annotated`` aliases."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"


class Mode(StrEnum):
    cost = "cost"
    reliability = "reliability"


StoreOpt = Annotated[
    Path | None,
    typer.Option("--store", envvar="FINOPS_STORE", help="Store directory (default .finops/).", show_default=False),
]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="Output format.")]


def check_out(value: Path | None) -> Path | None:
    """``--out`` callback: refuse an unwritable target before the command does any work (or writes the store)."""
    if value is not None:
        from finops_cli.atomic import check_writable

        check_writable(value)
    return value


OutOpt = Annotated[
    Path | None,
    typer.Option("--out", help="Write the output to this file instead of stdout.", callback=check_out),
]
FleetOpt = Annotated[Path, typer.Option("--fleet", help="fleet.yaml: the substrates.")]
WorkloadsOpt = Annotated[Path, typer.Option("--workloads", help="workloads.yaml: the demand.")]
OptionalWorkloadsOpt = Annotated[Path | None, typer.Option("--workloads", help="workloads.yaml: the demand.")]
ModeOpt = Annotated[
    Mode,
    typer.Option("--mode", help="cost: price alone decides; reliability: penalise latency-critical work on spot."),
]
FxOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--fx",
        help="Exchange rate FROM:TO=RATE (1 FROM = RATE TO, e.g. USD:CAD=1.37) for USD feeds and reference prices "
        "in a non-USD fleet; over fleet.yaml's fx:. Repeatable.",
    ),
]

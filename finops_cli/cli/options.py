"""Options shared by several commands, declared once as ``Annotated`` aliases."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
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


def store_option(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
    """``--store`` callback: given after the command it wins; else ``finops --store DIR <command>`` (the global
    option, as ``--pricebook``); else ``$FINOPS_STORE``; else None (the default ``.finops/``)."""
    source = ctx.get_parameter_source(param.name or "store")
    if source is not None and source.name == "COMMANDLINE":
        return value
    root = ctx.find_root().params.get("store")
    return Path(root) if root else value


StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--store",
        envvar="FINOPS_STORE",
        help="Store directory or bucket URI (default .finops/; also 'finops --store DIR <command>' or $FINOPS_STORE).",
        show_default=False,
        callback=store_option,
    ),
]
FormatOpt = Annotated[
    OutputFormat | None,
    typer.Option(
        "--format",
        help="Output format: table, json or markdown (default: from --out's extension, else table).",
        show_default=False,
    ),
]

_EXTENSION_FORMATS = {".json": OutputFormat.json, ".md": OutputFormat.markdown, ".markdown": OutputFormat.markdown}


def output_format(
    fmt: OutputFormat | None, out: Path | None, default: OutputFormat = OutputFormat.table
) -> OutputFormat:
    """The one rule for ``--format``: as given; else from ``--out``'s extension (.json, .md); else ``default``.

    ``--format`` always names the *output* format and ``--out`` always means "write it here instead of stdout",
    on every command, so ``finops plan ... --out plan.json`` writes the JSON document and prints no table.
    """
    if fmt is not None:
        return fmt
    if out is not None:
        return _EXTENSION_FORMATS.get(out.suffix.lower(), default)
    return default


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
HorizonOpt = Annotated[
    str | None,
    typer.Option(
        "--horizon",
        help="YYYY-MM or START:HOURS (default: the latest month with GPU usage in the store, else the profiles' "
        "month, else this month).",
    ),
]
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


class SummaryFormat(StrEnum):
    """Output formats of the ingest summaries."""

    table = "table"
    json = "json"


IngestFormatOpt = Annotated[
    str | None,
    typer.Option("--format", help="Summary output format: table or json.", show_default=False),
]
JsonFlagOpt = Annotated[bool, typer.Option("--json", hidden=True, help="Same as --format json.")]


def ingest_formats(
    fmt: str | None,
    input_format: str | None,
    *,
    out: Path | None = None,
    as_json: bool = False,
    legacy_output: str | None = None,
) -> tuple[SummaryFormat, str]:
    """Split an ingest command's ``--format`` (output) from ``--input-format`` (what the files are).

    Before the convention was unified, ``--format`` named the input format on ingest commands and the output
    was ``-o/--output`` or ``--json``. Those spellings still work: an input-format name given to ``--format``
    is taken as the input format with a warning naming the new spelling (an unknown name is then refused by
    the format registry, which lists the valid ones). Without any of them the output follows ``--out``'s
    extension, as on every command.
    """
    from finops_cli.errors import InputError

    output: SummaryFormat | None = SummaryFormat.json if as_json else None
    if legacy_output is not None:
        if legacy_output.lower() not in SummaryFormat.__members__:
            raise InputError(f"-o/--output {legacy_output!r}: expected table or json")
        output = SummaryFormat(legacy_output.lower())
    if fmt is not None:
        if fmt.lower() in SummaryFormat.__members__ and output is None:
            output = SummaryFormat(fmt.lower())
        elif input_format is None:
            from finops_cli.cli.output import log

            log.warning(
                f"--format {fmt} names an input format; use --input-format {fmt} (--format is the output format)"
            )
            input_format = fmt
        else:
            raise InputError(f"--format {fmt!r}: the output format is table or json (input formats: --input-format)")
    if output is None:
        output = SummaryFormat.json if out is not None and out.suffix.lower() == ".json" else SummaryFormat.table
    return output, input_format or "auto"


class Engine(StrEnum):
    local = "local"
    spark = "spark"


EngineOpt = Annotated[
    Engine,
    typer.Option(
        "--engine",
        help="Where the work runs: local (this process, DuckDB) or spark (Apache Spark; pip install "
        "'gpu-fleet-finops[spark]', Java 17+). Same code, same store, same results.",
    ),
]
SparkMasterOpt = Annotated[
    str | None,
    typer.Option(
        "--spark-master",
        "--spark-remote",
        envvar="FINOPS_SPARK_MASTER",
        help="Spark master URL for --engine spark (default: the spark-submit/Databricks session, else local[*]); "
        "a Spark Connect server as --spark-remote sc://HOST:PORT (or $SPARK_REMOTE).",
        show_default=False,
    ),
]


@contextmanager
def command_engine(engine: Engine = Engine.local, spark_master: str | None = None) -> Iterator[None]:
    """The command's query engine: DuckDB in this process (one connection, opened at the first query), or Spark
    SQL with ``--engine spark``; every store query of the block runs on it, and it is closed when the block ends."""
    from finops_cli.engines import query_engine

    with query_engine(engine.value, spark_master):
        yield


def parse_as_of(value: str | None) -> datetime | None:
    """``--as-of``: an ISO-8601 date or instant (a date is its midnight UTC; no zone is UTC)."""
    if value is None:
        return None
    text = value.strip()
    try:
        instant = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        from finops_cli.errors import InputError

        raise InputError(
            f"--as-of {value!r}: expected an ISO-8601 date or time, e.g. 2026-11-01 or 2026-11-01T12:00Z"
        ) from None
    return instant.replace(tzinfo=instant.tzinfo or UTC).astimezone(UTC)


AsOfOpt = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        envvar="FINOPS_AS_OF",
        help="The instant price ages, staleness and 'the current month' are counted from (ISO-8601 date or time, "
        "UTC unless a zone is given; default now). Recorded in plan.json, so a plan never depends on the clock.",
        show_default=False,
    ),
]


MaxPriceAgeOpt = Annotated[
    float | None,
    typer.Option(
        "--max-price-age",
        metavar="DAYS",
        help="Warn when a price is older than DAYS at --as-of (default: 30 for a spot-price feed, 180 for a "
        "reference list price); feeds whose data covers less than their window are called out too.",
        show_default=False,
    ),
]

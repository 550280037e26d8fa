"""finops ingest utilization | spot-prices: parse arguments, call the API, print a summary.

The summary (what was stored) goes to stdout as a table, or JSON with ``--format json``; the files' own
format is ``--input-format``. Progress and warnings go to stderr.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from finops_cli.cli.helptext import example
from finops_cli.cli.options import (
    Engine,
    EngineOpt,
    IngestFormatOpt,
    JsonFlagOpt,
    SparkMasterOpt,
    StoreOpt,
    SummaryFormat,
    ingest_formats,
)
from finops_cli.cli.output import emit_json, live_progress, log, stderr_console, stdout_console
from finops_cli.cli.render import Col, money_table
from finops_cli.errors import InputError

_MAP = "Column mapping (generic CSV)"


class UtilFormat(StrEnum):
    auto = "auto"
    dcgm = "dcgm"
    prometheus = "prometheus"
    csv = "csv"


def _parse_since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"--since {value!r}: expected ISO-8601 such as 2026-10-01 or 2026-10-01T00:00:00Z") from None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def _metric_label(metric: str) -> str:
    return metric.removeprefix("DCGM_FI_PROF_").removeprefix("DCGM_FI_DEV_")


def _short_path(path: str) -> str:
    """The path relative to the working directory when that is shorter (tables stay narrow)."""
    import os

    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if len(rel) < len(path) else path


def register(app: typer.Typer) -> None:
    @app.command(
        "utilization", epilog=example("finops ingest utilization dcgm-scrapes/ gpu_util.csv --input-format auto")
    )
    def _utilization(
        paths: Annotated[list[Path], typer.Argument(help="Trace files or directories (dcgm scrapes, JSON, CSV).")],
        input_format: Annotated[
            UtilFormat | None, typer.Option("--input-format", help="Input format; auto sniffs each source.")
        ] = None,
        fmt: IngestFormatOpt = None,
        timestamp_col: Annotated[
            str | None, typer.Option("--timestamp-col", help="Timestamp column.", rich_help_panel=_MAP)
        ] = None,
        device_col: Annotated[
            str | None, typer.Option("--device-col", help="Device id column.", rich_help_panel=_MAP)
        ] = None,
        util_col: Annotated[
            str | None, typer.Option("--util-col", help="Utilisation column.", rich_help_panel=_MAP)
        ] = None,
        team_col: Annotated[str | None, typer.Option("--team-col", help="Team column.", rich_help_panel=_MAP)] = None,
        workload_col: Annotated[
            str | None, typer.Option("--workload-col", help="Workload column.", rich_help_panel=_MAP)
        ] = None,
        resource_col: Annotated[
            str | None,
            typer.Option("--resource-col", help="Billing ResourceId column (for pricing).", rich_help_panel=_MAP),
        ] = None,
        host_col: Annotated[
            str | None,
            typer.Option("--host-col", help="Host column (with a gpu column: the device id).", rich_help_panel=_MAP),
        ] = None,
        util_scale: Annotated[
            float | None,
            typer.Option(
                "--util-scale", help="1 (values 0–1) or 100 (0–100); default: detected.", rich_help_panel=_MAP
            ),
        ] = None,
        replace: Annotated[
            bool,
            typer.Option(
                "--replace", help="Replace stored sources that cover the same GPUs at the same time (else exit 2)."
            ),
        ] = False,
        store: StoreOpt = None,
        as_json: JsonFlagOpt = False,
        engine: EngineOpt = Engine.local,
        spark_master: SparkMasterOpt = None,
    ) -> None:
        """Load GPU utilisation traces into the store (dataset utilization, partitioned by month).

        dcgm-exporter scrapes (a file, or a directory of timestamped scrape files), Prometheus
        /api/v1/query_range JSON, or a generic CSV with one row per device and sample. Prefers
        DCGM_FI_PROF_GR_ENGINE_ACTIVE (0–1) and falls back to DCGM_FI_DEV_GPU_UTIL (0–100); the summary
        says which was used. Re-ingesting the same file replaces it (idempotent). A sample is never stored
        twice: a source covering the same GPU at the same time as a stored one (the same trace with other
        options, a copy with an extra column) is refused unless --replace removes the stored one.
        """
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        from finops_cli import api
        from finops_cli.ingest.utilization import CsvMapping

        output, in_fmt = ingest_formats(fmt, input_format.value if input_format else None, as_json=as_json)
        if in_fmt not in UtilFormat.__members__:
            raise InputError(f"unknown utilisation format {in_fmt!r}; expected one of: {', '.join(UtilFormat)}")

        mapping = CsvMapping(timestamp_col, device_col, util_col, team_col, workload_col, resource_col, host_col)
        err = stderr_console()
        with Progress(
            TextColumn("ingesting utilisation"),
            BarColumn(),
            TextColumn("{task.completed:,.0f} samples"),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            disable=not live_progress(err),
        ) as progress:
            task = progress.add_task("ingest", total=None)
            result = api.ingest_utilization(
                paths,
                store=store,
                fmt=in_fmt,
                mapping=mapping,
                util_scale=util_scale,
                on_rows=lambda n: progress.advance(task, n),
                replace=replace,
                engine=engine.value,
                spark_master=spark_master,
            )
        for r in result.replaced:
            log.warning(
                f"replaced stored source {r['key']} ({r['source']}): it covered "
                f"{r['devices']:,} of the same GPUs at the same time"
            )
        if output == SummaryFormat.json:
            emit_json(result.to_dict())
            return
        rows = []
        for s in result.sources:
            named = sorted(s.metrics.items(), key=lambda kv: -kv[1])
            metric = ", ".join(_metric_label(m) + (f" ({n:,})" if len(named) > 1 else "") for m, n in named)
            scale = f"0–{s.util_scale:g}" + ("" if s.util_scale_detected else " (flag)")
            rows.append([_short_path(s.source), s.format, s.samples, s.devices, ", ".join(s.months), metric, scale,
                         s.coverage])  # fmt: skip
        cols = [
            Col("source"),
            Col("format"),
            Col("samples", "number"),
            Col("GPUs", "number"),
            Col("months"),
            Col("metric"),
            Col("scale"),
            Col("coverage", "pct"),
        ]
        stdout_console().print(
            money_table(
                "Utilisation ingested",
                cols,
                rows,
                caption="GR_ENGINE_ACTIVE = DCGM_FI_PROF_GR_ENGINE_ACTIVE (preferred), "
                "GPU_UTIL = DCGM_FI_DEV_GPU_UTIL. Coverage = seconds observed ÷ each device's span "
                "(gaps over 1.5× the cadence are not counted).",
            )
        )
        for s in result.sources:
            if s.duplicates_dropped:
                log.info(f"{s.source}: {s.duplicates_dropped:,} duplicate (device, timestamp) samples dropped")

    @app.command(
        "spot-prices",
        epilog=example(
            "finops ingest spot-prices --aws-region us-east-1 --instance-type p5.48xlarge",
            "finops ingest spot-prices --file spot.csv",
        ),
    )
    def _spot_prices(
        file: Annotated[
            list[Path] | None,
            typer.Option("--file", help="AWS CLI describe-spot-price-history JSON, or a CSV/TSV feed."),
        ] = None,
        aws_region: Annotated[
            list[str] | None, typer.Option("--aws-region", help="Fetch from AWS in this region (repeatable).")
        ] = None,
        instance_type: Annotated[
            list[str] | None, typer.Option("--instance-type", help="Instance type (repeatable), e.g. p5.48xlarge.")
        ] = None,
        since: Annotated[str | None, typer.Option("--since", help="ISO-8601 start (AWS keeps ~90 days).")] = None,
        product_description: Annotated[
            list[str] | None, typer.Option("--product-description", help="AWS product (default Linux/UNIX).")
        ] = None,
        aws_profile: Annotated[str | None, typer.Option("--aws-profile", help="Named AWS profile.")] = None,
        gcp: Annotated[bool, typer.Option("--gcp", help="List GPU SKUs from the GCP Cloud Billing Catalog.")] = False,
        gcp_region: Annotated[
            list[str] | None, typer.Option("--gcp-region", help="Keep only these GCP regions (repeatable).")
        ] = None,
        store: StoreOpt = None,
        fmt: IngestFormatOpt = None,
        as_json: JsonFlagOpt = False,
    ) -> None:
        """Load spot prices into the store (dataset spot_prices, by provider and month).

        AWS through boto3 (describe_spot_price_history with its paginator; standard credential chain or
        --aws-profile), the GCP Cloud Billing Catalog (Compute Engine GPU SKUs, spot and on-demand, priced
        per GPU-hour), or files. Prices are stored per instance-hour with the GPU count and accelerator
        from pricebooks/instance_types.csv. A region that fails is reported; the others are kept.
        """
        from finops_cli import api

        output, _ = ingest_formats(fmt, "auto", as_json=as_json)
        result = api.ingest_spot_prices(
            store=store,
            files=file,
            aws_regions=aws_region,
            instance_types=instance_type,
            since=_parse_since(since),
            product_descriptions=product_description,
            aws_profile=aws_profile,
            gcp=gcp,
            gcp_regions=gcp_region,
        )
        for where, reason in result.failures.items():
            log.warning(f"{where}: {reason} (skipped; other sources kept)")
        if result.unknown_instance_types:
            from finops_cli.catalog.gpus import unknown_types_line

            log.warning(unknown_types_line(result.unknown_instance_types, result.unlisted_gpu_types))
        if output == SummaryFormat.json:
            emit_json(result.to_dict())
            return
        rows = [[_short_path(src), n] for src, n in result.sources.items()]
        stdout_console().print(
            money_table(
                "Spot prices ingested",
                [Col("source"), Col("price changes", "number")],
                rows,
                totals=True,
                caption=f"{result.rows_new:,} new rows in "
                + ", ".join(f"{p['provider']}/{p['month']}" for p in result.partitions),
            )
        )

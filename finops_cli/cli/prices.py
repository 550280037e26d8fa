"""finops prices: time-weighted spot-price statistics from the store."""

from __future__ import annotations

from typing import Annotated

import typer

from finops_cli.cli.options import FormatOpt, OutOpt, OutputFormat, StoreOpt
from finops_cli.cli.output import emit_json, emit_text, stdout_console
from finops_cli.cli.render import Col, money_table, table_text

CAPTION = (
    "Time-weighted: a price holds until the next change (not a plain mean of change events). n = price changes. "
    "USD per instance-hour; $/GPU-h = mean ÷ GPUs."
)


def register(app: typer.Typer) -> None:
    @app.command("prices")
    def _prices(
        instance_type: Annotated[
            list[str] | None, typer.Option("--instance-type", help="Only these instance types (repeatable).")
        ] = None,
        region: Annotated[list[str] | None, typer.Option("--region", help="Only these regions or zones.")] = None,
        since: Annotated[str | None, typer.Option("--since", help="Window start, ISO-8601 (default: all).")] = None,
        fmt: FormatOpt = OutputFormat.table,
        out: OutOpt = None,
        store: StoreOpt = None,
    ) -> None:
        """Spot-price statistics per provider × region/zone × instance type: changes, min, mean, p50, p90,
        max, latest and the mean per GPU-hour. Time-weighted: each price holds until the next change."""
        from finops_cli import api
        from finops_cli.cli.ingest_traces import _parse_since
        from finops_cli.report.prices import to_markdown

        table = api.prices(store=store, instance_types=instance_type, regions=region, since=_parse_since(since))
        if fmt is OutputFormat.json:
            records = table.astype(object).where(table.notna(), None).to_dict(orient="records")
            emit_json({"time_weighted": True, "unit": "usd_per_instance_hour", "rows": records}, out)
            return
        if fmt is OutputFormat.markdown:
            emit_text(to_markdown(table), out)
            return
        cols = [
            Col("provider · zone"),
            Col("instance type"),
            Col("n", "number"),
            *(Col(s, "money") for s in ("min", "mean", "p50", "p90", "max", "latest")),
            Col("GPUs", "number"),
            Col("$/GPU-h", "money", 3),
        ]
        rows = [
            [f"{r.provider} {r.zone or r.region}", r.instance_type + ("" if r.price_kind == "spot" else " (on-demand)"),
             r.samples, r.min, r.mean, r.p50, r.p90, r.max, r.latest, r.gpus, r.usd_per_gpu_hour_mean]
            for r in table.itertuples(index=False)
        ]  # fmt: skip
        rendered = money_table("Spot prices", cols, rows, caption=CAPTION)
        if out is None:
            stdout_console().print(rendered)
        else:
            emit_text(table_text(rendered, width=200), out)

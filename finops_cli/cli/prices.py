"""finops prices: time-weighted spot-price statistics from the store."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from finops_cli.cli.helptext import example
from finops_cli.cli.options import FormatOpt, OutOpt, OutputFormat, StoreOpt, command_engine, output_format
from finops_cli.cli.output import emit_json, emit_text, stdout_console
from finops_cli.cli.render import Col, money_table, table_text

CAPTION = (
    "Time-weighted: a price holds until the next change (not a plain mean of change events).\n"
    "n = price changes. USD per instance-hour; $/GPU-h = mean ÷ GPUs. A feed prices one product."
)


def register(app: typer.Typer) -> None:
    @app.command(
        "prices", epilog=example("finops prices --instance-type p5.48xlarge --region us-east-1 --since 2026-10-01")
    )
    def _prices(
        instance_type: Annotated[
            list[str] | None, typer.Option("--instance-type", help="Only these instance types (repeatable).")
        ] = None,
        region: Annotated[list[str] | None, typer.Option("--region", help="Only these regions or zones.")] = None,
        since: Annotated[str | None, typer.Option("--since", help="Window start, ISO-8601 (default: all).")] = None,
        fmt: FormatOpt = None,
        out: OutOpt = None,
        store: StoreOpt = None,
    ) -> None:
        """Spot-price statistics per provider × region/zone × instance type × product: changes, min, mean, p50,
        p90, max, latest and the mean per GPU-hour. Time-weighted: each price holds until the next change."""
        fmt = output_format(fmt, out)
        from finops_cli import api
        from finops_cli.cli.ingest_traces import _parse_since
        from finops_cli.report.prices import to_markdown

        with command_engine():
            table = api.prices(store=store, instance_types=instance_type, regions=region, since=_parse_since(since))
        if fmt is OutputFormat.json:
            records = table.astype(object).where(table.notna(), None).to_dict(orient="records")
            emit_json({"time_weighted": True, "unit": "usd_per_instance_hour", "rows": records}, out)
            return
        if fmt is OutputFormat.markdown:
            emit_text(to_markdown(table), out)
            return
        tables = price_tables(table, wide=out is not None or stdout_console().width >= WIDE)
        console = stdout_console()
        if out is None:
            for t in tables:
                console.print(t)
            console.print(CAPTION, soft_wrap=False)
        else:
            emit_text("\n".join(table_text(t, width=200).rstrip() for t in tables) + "\n" + CAPTION, out)


#: from this terminal width on, min and max are shown too (JSON and markdown always carry them)
WIDE = 100


def price_tables(table: object, *, wide: bool) -> list[Table]:
    """One small table per provider × instance type × price kind: zone, product, changes and statistics.

    Grouping keeps every row to zone + product + numbers, so the table reads at 80 columns and piped.
    """
    import pandas as pd

    df: pd.DataFrame = table
    stats = ("min", "mean", "p50", "p90", "max", "latest") if wide else ("mean", "p50", "p90", "latest")
    out = []
    keys = ["provider", "instance_type", "price_kind"]
    for (provider, itype, kind), g in df.groupby(keys, sort=True, dropna=False):
        gpus = g["gpus"].dropna()
        gpu_text = f", {gpus.iloc[0]:g} GPUs" if len(gpus) else ""
        title = f"{provider} {itype} ({'spot' if kind == 'spot' else 'on-demand'}{gpu_text})"
        cols = [Col("zone"), Col("product"), Col("n", "number"), *(Col(s, "money") for s in stats),
                Col("$/GPU-h", "money", 3)]  # fmt: skip
        rows = [
            [r.zone or r.region, short_product(r.product_description), r.samples,
             *(getattr(r, s) for s in stats), r.usd_per_gpu_hour_mean]
            for r in g.itertuples(index=False)
        ]  # fmt: skip
        out.append(money_table(title, cols, rows))
    return out


#: long AWS product descriptions, shortened for the terminal table (JSON and markdown keep the full text)
SHORT_PRODUCTS = {
    "Red Hat Enterprise Linux": "RHEL",
    "Linux/UNIX (Amazon VPC)": "Linux (VPC)",
    "Red Hat Enterprise Linux (Amazon VPC)": "RHEL (VPC)",
    "SUSE Linux (Amazon VPC)": "SUSE (VPC)",
    "Windows (Amazon VPC)": "Windows (VPC)",
}


def short_product(product: str | None) -> str:
    """``Red Hat Enterprise Linux`` → ``RHEL``; ``None`` (a feed without products) → ``—``."""
    if not product:
        return "—"
    return SHORT_PRODUCTS.get(product, product)

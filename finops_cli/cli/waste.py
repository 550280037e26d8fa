"""finops waste: idle GPU-hours and dollars, by team, substrate, instance type or device."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from finops_cli.cli.helptext import example
from finops_cli.cli.options import (
    Engine,
    EngineOpt,
    FormatOpt,
    OutOpt,
    OutputFormat,
    SparkMasterOpt,
    StoreOpt,
    command_engine,
    output_format,
)
from finops_cli.cli.output import cli_words, emit_json, emit_text, log, stdout_console
from finops_cli.cli.render import Col, money_table, table_text

if TYPE_CHECKING:
    from rich.console import RenderableType

    from finops_cli.report.waste import WasteReport


class WasteBy(StrEnum):
    team = "team"
    substrate = "substrate"
    instance_type = "instance_type"
    device = "device"


def _billed_table(report: WasteReport) -> RenderableType:
    """Billing only: billed GPU spend and GPU-hours per group, and why there is no idle column."""
    from rich.console import Group
    from rich.text import Text

    t, cur = report.totals, report.currency
    cols = [
        Col(report.by),
        Col("resources", "number"),
        Col("GPU-hours", "number"),
        Col("billed (BilledCost)", "money"),
        Col("amortised (EffectiveCost)", "money"),
        Col("per GPU-h", "money"),
    ]
    rows = [
        [g["key"], g["resources"], g["gpu_hours"], g["billed_cost"], g["effective_cost"], g["effective_per_gpu_hour"]]
        for g in report.groups
    ]
    totals = ["Total", t["resources"], t["gpu_hours"], t["billed_cost"], t["effective_cost"],
              t["effective_per_gpu_hour"]]  # fmt: skip
    table = money_table(f"Billed GPU spend by {report.by} — {t.get('month', '')}", cols, rows, totals=totals,
                        currency=cur)  # fmt: skip
    return Group(table, Text(""), *(Text(f"Note: {n}.") for n in report.notes))


def render_table(report: WasteReport) -> RenderableType:
    if report.basis == "billing":
        return _billed_table(report)
    from rich.console import Group
    from rich.text import Text

    from finops_cli.cli.render import pct
    from finops_cli.report.waste import UNOBSERVED
    from finops_cli.text import one_line

    t, cur = report.totals, report.currency
    cols = [
        Col(report.by),
        Col("GPUs", "number"),
        Col("GPU-hours", "number"),
        Col("busy h", "number"),
        Col("idle h", "number"),
        Col("idle", "pct"),
        Col("idle $", "money"),
    ]
    rows = [
        [
            g["key"],
            g["devices"],
            g["device_hours"],
            g["busy_hours"],
            g["idle_hours"],
            g["idle_fraction"],
            g["idle_cost"],
        ]
        for g in report.groups
    ]
    totals = ["Total", t["devices"], t["device_hours"], t["busy_hours"], t["idle_hours"], t["idle_fraction"],
              t["idle_cost"]]  # fmt: skip
    table = money_table(f"Idle GPU waste by {report.by} — {t.get('month', '')}", cols, rows, totals=totals,
                        currency=cur)  # fmt: skip
    parts: list[RenderableType] = [table]
    if report.unobserved:
        unobs = money_table(
            f"{UNOBSERVED} paid GPU capacity with no samples (neither idle nor busy: unmeasured)",
            [Col(report.by), Col("resources", "number"), Col("GPU-hours", "number"), Col("paid", "money")],
            [[one_line(u["key"], 60), u["resources"], u["gpu_hours"], u["cost"]] for u in report.unobserved],
            totals=True,
            currency=cur,
        )
        parts += [Text(""), unobs]
    d = report.distribution
    lines = [
        f"Mean utilisation {pct(t['mean_utilization'])} (Philly baseline ~52 %: Jeon et al., USENIX ATC 2019).",
        f"Coverage {pct(t['coverage'])} of {t['coverage_basis']}; "
        + ", ".join(f"priced by {k}: {v:,.0f} GPU-h" for k, v in report.priced_by.items() if v)
        + ".",
    ]
    if d.get("deciles"):
        lines.append(
            f"Samples at 0 %: {pct(d['share_at_zero'])}; deciles p10…p90: "
            + " ".join(f"{x * 100:.0f}%" for x in d["deciles"])
        )
    parts += [Text(""), *(Text(line) for line in lines)]
    return Group(*parts)


def register(app: typer.Typer) -> None:
    @app.command("waste", epilog=example("finops waste --fleet fleet.yaml --by team --month 2026-10"))
    def _waste(
        by: Annotated[WasteBy, typer.Option("--by", help="Group rows by this.")] = WasteBy.team,
        fleet: Annotated[
            Path | None, typer.Option("--fleet", help="fleet.yaml: substrate prices where billing has none.")
        ] = None,
        price_per_gpu_hour: Annotated[
            float | None,
            typer.Option("--price-per-gpu-hour", min=0, help="Last-resort cost per GPU-hour (USD)."),
        ] = None,
        month: Annotated[
            str | None, typer.Option("--month", help="YYYY-MM (default: the latest month with GPU usage in the store).")
        ] = None,
        fmt: FormatOpt = None,
        out: OutOpt = None,
        store: StoreOpt = None,
        engine: EngineOpt = Engine.local,
        spark_master: SparkMasterOpt = None,
    ) -> None:
        """Idle GPU waste: device-hours, busy hours (Σ util × interval), idle hours and idle dollars.

        With billing but no utilisation for the month: billed GPU spend (BilledCost and amortised
        EffectiveCost) and GPU-hours per group; idle needs a utilisation trace.

        Cost per GPU-hour: billing EffectiveCost ÷ GPU-hours of the device's ResourceId, else the fleet
        substrate's price, else --price-per-gpu-hour. Paid capacity without samples is shown separately
        as unobserved. Compared with the ~52 % mean utilisation of Microsoft's Philly cluster.
        With --engine spark the same queries run on Spark SQL.
        """
        fmt = output_format(fmt, out)
        from finops_cli import api
        from finops_cli.report.waste import to_markdown

        with command_engine(engine, spark_master):  # every store query of the report runs there
            report = api.waste(
                store=store, by=by.value, fleet=fleet, price_per_gpu_hour=price_per_gpu_hour, month=month
            )
        log.info(f"month: {report.totals.get('month')}: {report.month_reason}")
        if fmt is OutputFormat.json:
            emit_json(report.to_dict(), out)
        elif fmt is OutputFormat.markdown:
            emit_text(cli_words(to_markdown(report), ("price_per_gpu_hour",)), out)
        elif out is None:
            stdout_console().print(render_table(report))
        else:
            emit_text(table_text(render_table(report), width=140), out)

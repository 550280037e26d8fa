"""``finops savings``, ``finops budget check`` and ``finops anomalies``: parse → :mod:`finops_cli.alerts` → table,
JSON or markdown. ``budget check`` exits 1 when a threshold is crossed, 2 on bad input, like ``gate``."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from finops_cli.cli.helptext import example
from finops_cli.cli.options import AsOfOpt, OutOpt, StoreOpt, command_engine, parse_as_of
from finops_cli.cli.output import cli_words, emit_json, emit_text, log


class AlertFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"


FormatOpt = Annotated[AlertFormat, typer.Option("--format", help="Output format: table, json or markdown.")]
WhereOpt = Annotated[
    list[str] | None,
    typer.Option("--where", help="NAME=VALUE[,VALUE] filter on a dimension or tag; repeat to AND them."),
]
CostOpt = Annotated[str, typer.Option("--cost", help="effective (EffectiveCost, amortised) or billed (BilledCost).")]
AllLinesOpt = Annotated[bool, typer.Option("--all-lines", help="Every billing line, not only GPU lines.")]


def _cell(kind: str, value: Any, currency: str) -> str:
    from finops_cli.report.format import money, number
    from finops_cli.text import cell_safe

    if value is None:
        return "—"
    if kind == "money":
        return money(value, currency)
    if kind == "pct":
        return f"{value:.1f} %"
    if kind == "number":
        return number(value, 1)
    return cell_safe(value)


def render_rows(
    title: str,
    columns: Sequence[tuple[str, str]],
    rows: Sequence[dict[str, Any]],
    fmt: AlertFormat,
    tail: Sequence[str] = (),
) -> str:
    """A table (or GFM markdown) of ``rows``: ``columns`` are (name, kind) with kind text, money, pct or number."""
    cells = [[_cell(kind, r.get(name), r.get("currency", "USD")) for name, kind in columns] for r in rows]
    names = [name for name, _ in columns]
    if fmt == AlertFormat.markdown:
        from finops_cli.report.escape import md_table, md_text

        align = ["left" if kind == "text" else "right" for _, kind in columns]
        return f"### {md_text(title)}\n\n" + md_table(names, cells, align) + "".join(f"\n\n{md_text(t)}" for t in tail)  # type: ignore[arg-type]
    from rich.markup import escape
    from rich.table import Table

    from finops_cli.cli.render import table_text

    table = Table(title=escape(title), title_justify="left", header_style="bold", box=None, pad_edge=False)
    for name, kind in columns:
        table.add_column(name, justify="left" if kind == "text" else "right")
    for row in cells:
        table.add_row(*(escape(c) for c in row))
    return table_text(table, width=200).rstrip() + "".join(f"\n{t}" for t in tail)


def _emit(doc: dict[str, Any], text: Any, fmt: AlertFormat, out: Path | None) -> None:
    if fmt == AlertFormat.json:
        emit_json(doc, out)
    else:
        emit_text(text(), out)


def register(app: typer.Typer) -> None:
    @app.command(
        "savings",
        epilog=example("finops savings --by tag:run_id", "finops savings --by team --month 2026-10 --format json"),
    )
    def _savings(
        by: Annotated[
            str,
            typer.Option(
                "--by",
                help="Comma-separated dimensions or tags, as 'finops costs --by' (tag:run_id, team, "
                "workload, provider, ...).",
            ),
        ] = "team",
        where: WhereOpt = None,
        month: Annotated[
            list[str] | None, typer.Option("--month", help="Only this billing month (YYYY-MM); repeatable.")
        ] = None,
        cost: CostOpt = "effective",
        all_lines: AllLinesOpt = False,
        interruptions: Annotated[
            Path | None,
            typer.Option(
                "--interruptions",
                help="Spot preemption CSV (timestamp, resource_id[, lost_minutes]): "
                "the work they threw away is redone, so it leaves the on-demand reference.",
            ),
        ] = None,
        checkpoint_minutes: Annotated[
            float,
            typer.Option(
                "--checkpoint-minutes",
                help="Checkpoint interval where a preemption does not say what it lost (it loses half of it).",
            ),
        ] = 30.0,
        fmt: FormatOpt = AlertFormat.table,
        store: StoreOpt = None,
        out: OutOpt = None,
    ) -> None:
        """Realised savings per run, team or workload: cost against the same usage at on-demand price, by lever.

        The reference is the bill's own list price where the export carries one (FOCUS ListCost, CUR
        publicOnDemandCost, Azure PayGPrice), else the pricebook's on-demand price (the reference column says which).
        Totals equal 'finops costs' over the same lines.
        """
        from finops_cli.alerts.interruptions import read_interruptions
        from finops_cli.alerts.savings import LEVERS, realised_savings
        from finops_cli.alerts.scope import parse_where
        from finops_cli.errors import InputError
        from finops_cli.store import open_store

        if checkpoint_minutes <= 0:
            raise InputError("--checkpoint-minutes must be > 0")
        events = read_interruptions(interruptions) if interruptions is not None else None
        with command_engine():
            result = realised_savings(
                open_store(store), by.split(","), where=parse_where(where), months=month, cost=cost,
                all_lines=all_lines, interruptions=events, checkpoint_minutes=checkpoint_minutes,
            )  # fmt: skip
        result.notes = [cli_words(n) for n in result.notes]
        columns = [
            *[(b, "text") for b in result.by],
            ("currency", "text"),
            ("cost", "money"),
            ("reference_cost", "money"),
            ("savings", "money"),
            ("savings_pct", "pct"),
            *[(lv, "money") for lv in LEVERS],
            *([("redone_gpu_hours", "number"), ("redone_cost", "money")] if events is not None else []),
            ("reference", "text"),
        ]
        totals = [
            f"total {c}: cost {_cell('money', t['cost'], c)}, savings {_cell('money', t['savings'], c)}"
            for c, t in sorted(result.totals.items())
        ]
        title = f"Realised savings by {', '.join(result.by)}, {', '.join(result.months)} ({result.cost} cost)"
        _emit(
            result.as_json(), lambda: render_rows(title, columns, result.rows, fmt, [*totals, *result.notes]), fmt, out
        )

    @app.command(
        "anomalies",
        epilog=example(
            "finops anomalies --by team --min-impact 500", "finops anomalies --format json > anomalies.json"
        ),
    )
    def _anomalies(
        by: Annotated[
            str | None,
            typer.Option("--by", help="Scopes: comma-separated dimensions or tags (default: all spend as one scope)."),
        ] = None,
        where: WhereOpt = None,
        days: Annotated[int, typer.Option("--days", help="Report anomalies of the last DAYS complete days.")] = 30,
        min_impact: Annotated[
            float,
            typer.Option("--min-impact", help="Smallest impact (actual − expected, in the bill's currency) reported."),
        ] = 100.0,
        sensitivity: Annotated[float, typer.Option("--sensitivity", help="Robust z-score a day must reach.")] = 4.0,
        warmup_days: Annotated[
            int, typer.Option("--warmup-days", help="Days of spend a new scope needs before it is alerted on.")
        ] = 14,
        contributors: Annotated[str, typer.Option("--contributors", help="Dimensions or tags to name causes by.")] = (
            "service,instance_type,account,team"
        ),
        direction: Annotated[str, typer.Option("--direction", help="up (spend spikes) or both.")] = "up",
        hourly: Annotated[
            bool, typer.Option("--hourly", help="Score hours (daily season) instead of days (weekly season).")
        ] = False,
        fail: Annotated[bool, typer.Option("--fail-on-anomaly", help="Exit 1 when any anomaly is found.")] = False,
        cost: CostOpt = "effective",
        all_lines: AllLinesOpt = False,
        fmt: FormatOpt = AlertFormat.table,
        store: StoreOpt = None,
        out: OutOpt = None,
    ) -> None:
        """Cost anomalies: days whose spend departs from its expected value, with impact and top contributors.

        Expected spend is a robust STL fit with a weekly season; a day is anomalous when its robust z-score reaches
        --sensitivity and its impact --min-impact, after a scope's first --warmup-days (docs/alerts.md).
        """
        from finops_cli.alerts.anomalies import detect_anomalies
        from finops_cli.alerts.scope import parse_where
        from finops_cli.store import open_store

        with command_engine():
            doc = detect_anomalies(
                open_store(store),
                (by or "").split(","),
                parse_where(where),
                days=days,
                min_impact=min_impact,
                sensitivity=sensitivity,
                warmup_days=warmup_days,
                contributors=contributors.split(","),
                cost=cost,
                all_lines=all_lines,
                direction=direction,
                hourly=hourly,
            )
        rows = [
            {
                **a,
                "top": "; ".join(
                    f"{c['dimension']}={c['value']} +{_cell('money', c['impact'], a['currency'])}"
                    for c in a["contributors"][:3]
                ),
            }
            for a in doc["anomalies"]
        ]
        columns = [
            ("day", "text"),
            ("scope", "text"),
            ("currency", "text"),
            ("actual", "money"),
            ("expected", "money"),
            ("impact", "money"),
            ("score", "number"),
            ("top", "text"),
        ]
        window = f"{doc['window']['start']} – {doc['window']['end']}"
        title = f"Cost anomalies {window}: {len(rows)}"
        _emit(doc, lambda: render_rows(title, columns, rows, fmt, doc["notes"]), fmt, out)
        if fail and doc["anomalies"]:
            from finops_cli.alerts.budgets import ThresholdCrossed

            raise ThresholdCrossed(f"{len(doc['anomalies'])} cost anomalies in {window}")


def register_group(app: typer.Typer) -> None:
    @app.command(
        "check",
        epilog=example("finops budget check --budgets budgets.yaml", "finops budget check --format json > check.json"),
    )
    def _check(
        budgets: Annotated[Path, typer.Option("--budgets", help="budgets.yaml (docs/alerts.md).")] = Path(
            "budgets.yaml"
        ),
        month: Annotated[
            str | None,
            typer.Option(
                "--month", help="Evaluate the period holding this month (YYYY-MM) instead of the latest billed day's."
            ),
        ] = None,
        as_of: AsOfOpt = None,
        fmt: FormatOpt = AlertFormat.table,
        store: StoreOpt = None,
        out: OutOpt = None,
    ) -> None:
        """Evaluate every budget against the store: exit 0 all within, 1 a threshold crossed, 2 bad input.

        Actual spend is period to date; the forecast adds the days left (ETS with a weekly season, with a 90 %
        interval); a period with too little history says so instead of guessing.
        """
        from finops_cli.alerts.budgets import Budgets, ThresholdCrossed, check_budgets
        from finops_cli.atomic import check_not_an_input
        from finops_cli.estate.load import load_model
        from finops_cli.store import open_store

        check_not_an_input(out, budgets)
        model = load_model(budgets, Budgets)
        with command_engine():
            doc = check_budgets(open_store(store), model, month=month, as_of=parse_as_of(as_of))
        rows = []
        for r in doc["budgets"]:
            f = r["forecast"]
            rows.append(
                {
                    **r,
                    "period": f"{r['period']['start']} – {r['period']['end']}",
                    "forecast": f["expected"],
                    "interval": "—"
                    if f["low"] is None or f["remaining_days"] == 0
                    else f"{_cell('money', f['low'], r['currency'])} – {_cell('money', f['high'], r['currency'])}",
                    "crossed": ", ".join(f"{c['spend']} {c['percent']:g} %" for c in r["crossed"]) or "—",
                }
            )
        columns = [
            ("name", "text"),
            ("scope", "text"),
            ("period", "text"),
            ("currency", "text"),
            ("amount", "money"),
            ("actual", "money"),
            ("actual_pct", "pct"),
            ("forecast", "money"),
            ("interval", "text"),
            ("crossed", "text"),
            ("status", "text"),
        ]
        notes = [f"{r['name']}: {n}" for r in doc["budgets"] for n in r["notes"]]
        notes += [f"{r['name']}: {r['forecast']['reason']}" for r in doc["budgets"] if r["forecast"]["reason"]]
        title = f"Budgets as of {doc['as_of'][:16].replace('T', ' ')} UTC"
        _emit(doc, lambda: render_rows(title, columns, rows, fmt, notes), fmt, out)
        over = [r["name"] for r in doc["budgets"] if r["crossed"]]
        if over:
            raise ThresholdCrossed(f"{len(over)} of {len(doc['budgets'])} budgets over a threshold: {', '.join(over)}")
        log.info(f"all {len(doc['budgets'])} budgets within their thresholds")

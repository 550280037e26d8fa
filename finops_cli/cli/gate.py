"""finops gate — the CI cost gate: exit 1 when any rule fails, 2 on invalid or mismatched plans."""

from __future__ import annotations

from collections import defaultdict
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from finops_cli.cli.helptext import example
from finops_cli.cli.options import OutOpt
from finops_cli.cli.output import cli_words, emit_text, log, stdout_console
from finops_cli.errors import GateFailed

if TYPE_CHECKING:
    from rich.console import RenderableType

    from finops_cli.report.gate import GateResult

#: Rows of the per-workload table shown in the terminal (largest changes first); JSON has them all.
TEXT_DETAIL_ROWS = 20


class GateFormat(StrEnum):
    table = "table"
    text = "text"  # the old name of table, kept so existing CI jobs run unchanged
    json = "json"
    markdown = "markdown"
    github = "github"


def render_text(result: GateResult) -> RenderableType:
    """The terminal rendering: verdict, rules, cost by kind and the biggest per-workload changes (rich is imported
    here: ``--format json``/``markdown``/``github``, what CI runs, never loads it)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from finops_cli.cli.render import BAD, GOOD, Col, money_table
    from finops_cli.report.gate import summary_line, threshold_text

    cur = result.currency
    parts: list[RenderableType] = [Text(summary_line(result), style=("bold " + (GOOD if result.passed else BAD)))]
    if result.unserved_units > 0:
        parts.append(Text(f"warning: {result.unserved_units:,.1f} units of demand unserved in the new plan", style=BAD))
    if result.rules:
        rules = Table(title="Rules", title_justify="left", box=None, header_style="bold", pad_edge=False)
        for header, justify in (("rule", "left"), ("threshold", "right"), ("actual", "right"), ("result", "left")):
            rules.add_column(header, justify=justify)  # type: ignore[arg-type]
        for rule in result.rules:
            threshold, actual = threshold_text(rule, cur)
            verdict = Text("PASS", style=GOOD) if rule.passed else Text("FAIL", style="bold " + BAD)
            rules.add_row(rule.name, threshold, actual, verdict)
        parts += [Text(""), rules]
    with_base = result.baseline_source == "baseline-plan"
    by_kind: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in result.breakdown:
        by_kind[row.kind][0] += row.baseline_cost or 0.0
        by_kind[row.kind][1] += row.planned_cost
    if with_base:
        cols = [Col("substrate kind"), Col("baseline", "money"), Col("new", "money"), Col("Δ", "delta")]
        kind_rows = [[k, b, p, p - b] for k, (b, p) in sorted(by_kind.items())]
        detail_cols = [Col("workload"), Col("kind"), Col("baseline", "money"), Col("new", "money"), Col("Δ", "delta")]
        detail = [[r.workload, r.kind, r.baseline_cost, r.planned_cost, r.delta] for r in result.breakdown]
    else:
        cols = [Col("substrate kind"), Col("planned", "money")]
        kind_rows = [[k, p] for k, (_, p) in sorted(by_kind.items())]
        detail_cols = [Col("workload"), Col("kind"), Col("planned", "money")]
        detail = [[r.workload, r.kind, r.planned_cost] for r in result.breakdown]
    totals = (
        ["Total", result.baseline_cost, result.planned_cost, result.delta]
        if with_base
        else ["Total", result.planned_cost]
    )
    parts += [Text(""), money_table("Cost by substrate kind", cols, kind_rows, totals=totals, currency=cur)]
    shown = detail[:TEXT_DETAIL_ROWS]
    caption = f"… {len(detail) - len(shown)} more rows (--format json)" if len(detail) > len(shown) else None
    title = "Cost by workload and substrate kind" + (" (largest changes)" if with_base else "")
    parts.append(money_table(title, detail_cols, shown, currency=cur, caption=caption))
    return Group(*parts)


def register(app: typer.Typer) -> None:
    @app.command(
        "gate",
        epilog=example(
            "finops gate --plan head.json --baseline base.json --max-increase-pct 10 --budget 250000 --format github"
        ),
    )
    def _gate(
        plan: Annotated[Path, typer.Option("--plan", help="The new plan JSON (`finops plan --out new.json`).")],
        baseline: Annotated[
            Path | None, typer.Option("--baseline", help="The baseline plan JSON (e.g. from the PR's target branch).")
        ] = None,
        budget: Annotated[float | None, typer.Option("--budget", help="Fail if the planned cost exceeds this.")] = None,
        max_increase_pct: Annotated[
            float | None, typer.Option("--max-increase-pct", help="Fail if the cost rises more than P percent.")
        ] = None,
        max_increase_usd: Annotated[
            float | None,
            typer.Option("--max-increase-usd", help="Fail if the cost rises more than U (in the plan's currency)."),
        ] = None,
        max_spot_share: Annotated[
            float | None,
            typer.Option("--max-spot-share", help="Fail if spot carries more than this fraction (0-1) of the cost."),
        ] = None,
        max_price_age: Annotated[
            float | None,
            typer.Option(
                "--max-price-age",
                metavar="DAYS",
                help="A price older than DAYS (the age plan.json recorded at its --as-of) is stale (default: 30 for "
                "a spot-price feed, 180 for a reference price). Warned about; a failure with --fail-on-stale-prices.",
                show_default=False,
            ),
        ] = None,
        fail_on_stale_prices: Annotated[
            bool, typer.Option("--fail-on-stale-prices", help="Fail if any price of the plan is stale.")
        ] = False,
        max_node_rounding_pct: Annotated[
            float | None,
            typer.Option(
                "--max-node-rounding-pct",
                metavar="P",
                help="Fail if rounding the plan's fractional nodes up to whole nodes would add more than P percent "
                "of its cost (without it: a warning above 10 %).",
                show_default=False,
            ),
        ] = None,
        fmt: Annotated[
            GateFormat, typer.Option("--format", help="Output format (text is the old name of table).")
        ] = GateFormat.table,
        out: OutOpt = None,
    ) -> None:
        """CI cost gate: compare a new plan with a baseline plan and a budget; exit 1 if any rule fails.

        Every failed rule is listed. Plans in different currencies or over different horizons, or of
        another schema version, are refused (exit 2). --format github writes a PR comment with a hidden
        marker so a workflow can update it in place (docs/ci.md).
        """
        from finops_cli import api
        from finops_cli.atomic import check_not_an_input
        from finops_cli.report.gate import Thresholds, render, summary_line

        check_not_an_input(out, plan, baseline)
        thresholds = Thresholds(
            budget,
            max_increase_pct,
            max_increase_usd,
            max_spot_share,
            max_price_age=max_price_age,
            fail_on_stale_prices=fail_on_stale_prices,
            max_node_rounding_pct=max_node_rounding_pct,
        )
        result = api.gate(plan, baseline, thresholds)
        result.warnings = [cli_words(w) for w in result.warnings]
        for warning in result.warnings:
            log.warning(warning)
        if fmt in (GateFormat.text, GateFormat.table):
            renderable = render_text(result)
            if out is None:
                stdout_console().print(renderable)
            else:
                from finops_cli.cli.render import table_text

                emit_text(table_text(renderable), out)
        else:
            emit_text(render(result, fmt.value), out)
        if not result.passed:
            failed = ", ".join(r.name for r in result.failed)
            raise GateFailed(f"{summary_line(result)}; failed: {failed}")
        if out is not None or fmt not in (GateFormat.text, GateFormat.table):
            log.info(summary_line(result))

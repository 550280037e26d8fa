"""finops report — the leadership report: markdown plus PNG charts beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from finops_cli.cli.helptext import example
from finops_cli.cli.options import FormatOpt, OptionalWorkloadsOpt, OutputFormat, StoreOpt, check_out, command_engine
from finops_cli.cli.output import emit_json, emit_text, log, stdout_console
from finops_cli.cli.render import Col, money_table


def register(app: typer.Typer) -> None:
    @app.command(
        "report",
        epilog=example("finops report --plan plan.json --fleet fleet.yaml --workloads workloads.yaml --out report.md"),
    )
    def _report(
        plan: Annotated[Path, typer.Option("--plan", help="The plan JSON (`finops plan --out plan.json`).")],
        store: StoreOpt = None,
        fleet: Annotated[
            Path | None, typer.Option("--fleet", help="fleet.yaml: for the supply curve and waste pricing.")
        ] = None,
        workloads: OptionalWorkloadsOpt = None,
        out: Annotated[
            Path | None,
            typer.Option(
                "--out",
                help="Write report.md here, charts beside it (without it: markdown to stdout).",
                callback=check_out,
            ),
        ] = None,
        title: Annotated[str | None, typer.Option("--title", help="Report title.")] = None,
        fmt: FormatOpt = OutputFormat.markdown,
    ) -> None:
        """Leadership report: executive summary, idle waste, supply curve, the plan, spot/NETC, risks.

        With --out, the markdown and its PNG charts (<stem>-*.png) are written atomically beside each other;
        --format table|json then prints a summary of what was written instead of the markdown.
        """
        from finops_cli import api
        from finops_cli.atomic import check_not_an_input

        check_not_an_input(out, plan, fleet, workloads)
        with command_engine():
            if workloads is not None and fleet is None:
                api.workloads(workloads)  # a file the user names must be valid
            target = api.estate(fleet, workloads) if fleet and workloads else api.fleet(fleet) if fleet else None
            result = api.report(plan, store, estate=target, out_path=out, title=title)
        log.info(result.horizon_note)
        for w in result.warnings:
            log.warning(w)
        for what in result.unavailable:
            log.info(f"note: not available: {what}")
        if out is None and fmt is OutputFormat.markdown:
            emit_text(result.markdown)
            log.info("note: charts are written only with --out")
            return
        summary = {
            "markdown": None if result.markdown_path is None else str(result.markdown_path),
            "charts": [str(p) for p in result.chart_paths],
            "unavailable": result.unavailable,
        }
        if fmt is OutputFormat.json:
            emit_json(summary)
        elif fmt is OutputFormat.table:
            doc = result.plan
            assert doc is not None
            t = doc.totals
            rows: list[list[object]] = [["baseline", t.baseline_cost], ["plan", t.planned_cost], ["savings", t.savings]]
            stdout_console().print(
                money_table("Report", [Col("figure"), Col("cost", "money")], rows, currency=doc.currency)
            )
            for path in [result.markdown_path, *result.chart_paths]:
                if path is not None:
                    stdout_console().print(f"wrote {path}", highlight=False, soft_wrap=True)
        else:
            log.info(f"wrote {result.markdown_path} and {len(result.chart_paths)} charts")

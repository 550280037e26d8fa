"""finops demo — the main job end to end on the bundled samples (the README's first command)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from finops_cli.cli.helptext import example
from finops_cli.cli.options import AsOfOpt, command_engine, parse_as_of
from finops_cli.cli.output import cli_words, log, status, stdout_console


def _show_notify(document: dict[str, Any], plan_path: Path) -> None:
    """What ``finops notify --to slack --dry-run`` would post about the plan: the alerts' one payload the demo shows."""
    import json

    from finops_cli.alerts.notify import notify

    (payload,) = notify(document, "slack", dry_run=True, command="finops demo").payloads
    console = stdout_console()
    console.print(f"\n$ finops notify --to slack --result {plan_path} --dry-run", markup=False, highlight=False)
    console.print(json.dumps(payload, indent=2, ensure_ascii=False), markup=False, highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    @app.command("demo", epilog=example("finops demo --out finops-demo"))
    def demo(
        out: Annotated[Path, typer.Option("--out", help="Directory for plan.json, report.md and charts.")] = Path(
            "finops-demo"
        ),
        samples: Annotated[
            Path | None,
            typer.Option("--samples", help="Samples directory (default: the samples shipped with the package)."),
        ] = None,
        keep_store: Annotated[
            Path | None, typer.Option("--keep-store", help="Keep the demo's store in this directory.")
        ] = None,
        as_of: AsOfOpt = None,
    ) -> None:
        """Ingest the sample exports, traces and spot prices, then stack, plan and report (Kestrel AI, Oct 2026)."""
        from finops_cli.cli.plan import render_plan
        from finops_cli.demo import run_demo

        with status("finops demo: ingest, plan, report") as step, command_engine():
            result = run_demo(
                out, samples=samples, store_dir=keep_store, log=step, as_of=parse_as_of(as_of), words=cli_words
            )
        document = result.plan.document.model_dump(mode="json")
        render_plan(document, stdout_console())
        _show_notify(document, result.plan_path)
        log.info(f"plan: {result.plan_path}   report: {result.report_path}   charts: {len(result.charts)}")

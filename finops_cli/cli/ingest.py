"""``finops ingest billing``: billing exports → the store, then a summary (table or JSON) on stdout.

``--input-format`` names what the files are (auto | aws-cur | aws-cur2 | gcp | azure | focus); ``--format``
is the summary's output format (table | json), as on every command. Progress goes to stderr, only when it
is a terminal.
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Group
from rich.table import Table
from rich.text import Text

from finops_cli.cli.helptext import example
from finops_cli.cli.options import (
    Engine,
    EngineOpt,
    IngestFormatOpt,
    OutOpt,
    SparkMasterOpt,
    StoreOpt,
    SummaryFormat,
    ingest_formats,
)
from finops_cli.cli.output import (
    emit_json,
    emit_text,
    error_text,
    live_progress,
    log,
    stderr_console,
    stdout_console,
)
from finops_cli.cli.render import money, number, table_text

if TYPE_CHECKING:
    from finops_cli.ingest.billing import IngestSummary


_HELP = (
    "Load billing exports into the store's FOCUS [bold]billing[/] dataset: atomic, idempotent, money-checked.\n\n"
    "All files land in one transaction: nothing is written unless every file parses and, per currency, the "
    "cost in equals the BilledCost written, to the cent. Re-ingesting an export (same format, billing account "
    "and period) replaces it; other accounts' data is untouched."
)
_FORMATS_HELP = "Input format: auto (sniff each file's header), aws-cur, aws-cur2, gcp, azure, focus."


def register(app: typer.Typer) -> None:
    @app.command(
        "billing",
        help=_HELP,
        epilog=example(
            "finops ingest billing exports/ --input-format auto",
            "finops ingest billing cur.csv.gz --format json --out ingest.json",
            "finops ingest billing cur-export/ --jobs 2",
        ),
    )
    def _billing(
        paths: Annotated[
            list[Path], typer.Argument(help="Export files (CSV, CSV.gz, Parquet, JSONL) or directories of them.")
        ],
        input_format: Annotated[str | None, typer.Option("--input-format", "-f", help=_FORMATS_HELP)] = None,
        fmt: IngestFormatOpt = None,
        store: StoreOpt = None,
        legacy_output: Annotated[
            str | None, typer.Option("--output", "-o", hidden=True, help="Old spelling of --format.")
        ] = None,
        out: OutOpt = None,
        engine: EngineOpt = Engine.local,
        spark_master: SparkMasterOpt = None,
        jobs: Annotated[
            int | None,
            typer.Option(
                "--jobs",
                "-j",
                min=1,
                help="Worker processes converting the export's files in parallel (default: one per core for a "
                "multi-file export of 64 MB or more, else 1). The store gets the same bytes whatever it is.",
                show_default=False,
            ),
        ] = None,
    ) -> None:
        """Load billing exports into the store (see the command help)."""
        from finops_cli import api
        from finops_cli.atomic import check_not_an_input
        from finops_cli.errors import InputError
        from finops_cli.store import resolve_store_root

        output, in_fmt = ingest_formats(fmt, input_format, out=out, legacy_output=legacy_output)

        check_not_an_input(out, *paths, store=resolve_store_root(store))

        with _progress() as progress:
            summary = api.ingest_billing(
                list(paths),
                in_fmt,
                store,
                progress=progress,
                engine=engine.value,
                spark_master=spark_master,
                jobs=jobs,
            )
        for line in summary.warnings:
            log.warning(line)
        try:
            if output == SummaryFormat.json:
                emit_json(summary.to_dict(), out)
            elif out is not None:
                emit_text(table_text(render_summary(summary)), out)
            else:
                stdout_console().print(render_summary(summary))
        except InputError as exc:  # the store already holds the ingest: say so, or the user re-runs it for nothing
            raise InputError(f"{error_text(exc)} (the ingest itself was committed to the store)") from None


class _Bar:
    """A rich progress bar per file on stderr (rows so far); a no-op when stderr is not a terminal."""

    def __init__(self) -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TextColumn("{task.fields[rows]:>12,} rows"),
            TimeElapsedColumn(),
            console=stderr_console(),
            transient=True,
        )
        self.tasks: dict[Path, Any] = {}

    def __call__(self, path: Path, rows: int, index: int, count: int) -> None:
        task = self.tasks.get(path)
        if task is None:
            task = self.progress.add_task(f"[{index + 1}/{count}] {path.name}", total=None, rows=0)
            self.tasks[path] = task
        self.progress.update(task, rows=rows)

    def __enter__(self) -> _Bar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


def _progress() -> Any:
    return _Bar() if live_progress(stderr_console()) else nullcontext(None)


def render_summary(summary: IngestSummary) -> Group:
    """The human summary: files and chosen formats, money per provider and currency, GPU-hours, checks."""
    files = Table(title="Billing ingest", title_justify="left", header_style="bold")
    for name, justify in (("file", "left"), ("format", "left"), ("chosen by", "left"), ("rows", "right")):
        files.add_column(name, justify=justify)  # type: ignore[arg-type]
    for f in summary.files:
        how = "sniffed header" if f.sniffed else "--input-format"
        fmt = f.format + (f" ({f.azure_export})" if f.azure_export else "")
        fmt += f" {f.focus_version}" if f.focus_version else ""
        files.add_row(Path(f.path).name, fmt, how, number(f.rows))
    contracts = summary.contract_commitments
    if contracts:
        for path, n in contracts["files"].items():
            files.add_row(Path(path).name, "focus contract commitments", "sniffed header", number(n))

    cost = Table(title="Cost by provider", title_justify="left", header_style="bold")
    for name, justify in (
        ("provider", "left"),
        ("currency", "left"),
        ("billed", "right"),
        ("effective (amortized)", "right"),
        ("lines", "right"),
    ):
        cost.add_column(name, justify=justify)  # type: ignore[arg-type]
    for c in summary.cost:
        cur = c["currency"]
        cost.add_row(
            c["provider"], cur, money(c["billed_cost"], cur), money(c["effective_cost"], cur), number(c["rows"])
        )
    currencies = sorted({c["currency"] for c in summary.cost})
    if len(summary.cost) > 1:
        cost.add_section()
        for cur in currencies:  # totals per currency: never summed across currencies
            rows = [c for c in summary.cost if c["currency"] == cur]
            cost.add_row(
                Text("Total", style="bold"), cur,
                Text(money(sum(r["billed_cost"] for r in rows), cur), style="bold"),
                Text(money(sum(r["effective_cost"] for r in rows), cur), style="bold"),
                number(sum(r["rows"] for r in rows)),
            )  # fmt: skip

    gpu = Table(title="GPU-hours by accelerator × pricing", title_justify="left", header_style="bold")
    for name, justify in (("accelerator", "left"), ("pricing", "left"), ("GPU-hours", "right")):
        gpu.add_column(name, justify=justify)  # type: ignore[arg-type]
    for g in summary.gpu_hours:
        gpu.add_row(g["accelerator"], g["pricing_category"], number(g["gpu_hours"], 1))

    checks = []
    for c in summary.conservation:
        checks.append(
            f"conserved {c['currency']}: cost in {money(c['cost_in'], c['currency'])} = "
            f"billed in store {money(c['billed_cost_written'], c['currency'])}; effective "
            f"{money(c['effective_cost_in'], c['currency'])} = {money(c['effective_cost_written'], c['currency'])}"
        )
    replaced = [s for s in summary.sources if s.get("replaced_rows") is not None]
    lines = [
        f"{summary.rows:,} lines · billing periods {', '.join(summary.billing_periods)} · store {summary.store}",
        *checks,
    ]
    if replaced:
        lines.append(
            "replaced earlier ingests: "
            + ", ".join(f"{s['format']} {s['billing_account']} {s['billing_period']}" for s in replaced)
        )
    parts: list[Any] = [files, cost]
    if summary.gpu_hours:
        parts.append(gpu)
    parts.append(Text("\n".join(lines)))
    return Group(*parts)

"""``finops costs``: parse → :func:`finops_cli.api.costs` → table, JSON, markdown or CSV."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from finops_cli.cli.helptext import example
from finops_cli.cli.options import OutOpt, StoreOpt, command_engine
from finops_cli.cli.output import cli_words, emit_json, emit_text, log


class CostsFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"


def _cell(kind: str, value: Any, currency: str) -> str:
    from finops_cli.report.format import money, number, pct, unit_price
    from finops_cli.text import cell_safe

    if value is None:
        return "—"
    if kind == "money":
        return money(value, currency)
    if kind == "delta":
        return money(value, currency, signed=True)
    if kind == "delta_pct":
        return pct(value, signed=True)
    if kind == "price":
        return unit_price(value, currency)
    if kind == "number":
        return number(value, 0 if isinstance(value, int) else 1)
    return cell_safe(value)  # a tag value: one line, inert


def _text_rows(result: Any) -> list[list[str]]:
    return [[_cell(kind, row.get(name), row["currency"]) for name, kind in result.columns] for row in result.rows]


def _title(result: Any) -> str:
    basis = "amortised (EffectiveCost)" if result.cost == "effective" else "as billed (BilledCost)"
    spend = "Spend, all lines" if result.all_lines else "GPU spend"
    what = {
        "groups": spend,
        "compare": f"{spend} {result.months[0]} vs {result.months[-1]}",
        "chargeback": "Chargeback",
    }[result.mode]
    months = "" if result.mode == "compare" else f", {', '.join(result.months)}"
    return f"{what}{months}, {basis}"


def _totals(result: Any) -> str:
    from finops_cli.report.format import money

    return "total: " + ", ".join(money(v, c) for c, v in sorted(result.totals.items())) if result.totals else ""


#: A spreadsheet evaluates a cell that starts with one of these as a formula (OWASP "CSV Injection")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(kind: str, value: Any) -> object:
    """A text cell from the data that a spreadsheet would run (``=HYPERLINK(…)``) gets a leading ``'``, as OWASP
    advises; numbers are ours and stay numbers (a credit's ``-12.5`` is not a formula)."""
    if value is None:
        return ""
    if kind != "text" and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.6f}" if isinstance(value, float) else value
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _csv(result: Any) -> str:
    """RFC 4180 CSV by the standard library's writer (quotes, separators and line ends inside values)."""
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([name for name, _ in result.columns])
    for row in result.rows:
        writer.writerow([_csv_cell(kind, row.get(name)) for name, kind in result.columns])
    return buf.getvalue()


def render(result: Any, fmt: CostsFormat) -> str:
    """The result in ``fmt`` (JSON and CSV carry raw numbers; table and markdown format money per currency)."""
    if fmt == CostsFormat.json:
        import json

        return json.dumps(result.as_json(), indent=2, allow_nan=False)
    names = [name for name, _ in result.columns]
    if fmt == CostsFormat.csv:
        return _csv(result)
    tail = [t for t in (_totals(result), *result.notes) if t]
    if fmt == CostsFormat.markdown:
        from finops_cli.report.escape import md_table

        align = ["left" if kind == "text" else "right" for _, kind in result.columns]
        text = f"### {_title(result)}\n\n" + md_table(names, _text_rows(result), align)  # type: ignore[arg-type]
        return text + "".join(f"\n\n{t}" for t in tail)
    from rich.markup import escape
    from rich.table import Table

    from finops_cli.cli.render import table_text

    table = Table(title=escape(_title(result)), title_justify="left", header_style="bold", box=None, pad_edge=False)
    for name, kind in result.columns:
        table.add_column(name, justify="left" if kind == "text" else "right")
    for row in _text_rows(result):
        table.add_row(*(escape(c) for c in row))
    return table_text(table, width=200).rstrip() + "".join(f"\n{t}" for t in tail)


def register(app: typer.Typer) -> None:
    @app.command(
        "costs",
        epilog=example(
            "finops costs --by team,month", "finops costs --by team --compare 2026-09 --format markdown --out costs.md"
        ),
    )
    def _costs(
        by: Annotated[
            str | None,
            typer.Option(
                "--by",
                help="Comma-separated: month, provider, account, region, instance_type, pricing_category, resource, "
                "service, substrate (needs --fleet) or any tag key (team, workload, ...); at most 32. Default: team.",
            ),
        ] = None,
        where: Annotated[
            list[str] | None,
            typer.Option("--where", help="NAME=VALUE[,VALUE] filter on the same names; repeat to AND them."),
        ] = None,
        month: Annotated[str | None, typer.Option("--month", help="Only this billing month (YYYY-MM).")] = None,
        compare: Annotated[
            str | None,
            typer.Option(
                "--compare",
                help="Month over month: --month (default: the latest month with GPU usage in the store) against "
                "this YYYY-MM; a partial month is called out.",
            ),
        ] = None,
        cost: Annotated[
            str, typer.Option("--cost", help="effective (EffectiveCost, amortised) or billed (BilledCost).")
        ] = "effective",
        chargeback: Annotated[
            str | None,
            typer.Option(
                "--chargeback",
                help="Charge idle and untagged GPU cost back to teams: proportional (to usage) or even.",
            ),
        ] = None,
        team_tag: Annotated[str, typer.Option("--team-tag", help="Tag (and utilisation column) naming the team.")] = (
            "team"
        ),
        fleet: Annotated[Path | None, typer.Option("--fleet", help="fleet.yaml, for --by substrate.")] = None,
        all_lines: Annotated[
            bool,
            typer.Option(
                "--all-lines",
                help="Every billing line, not only GPU lines (GPU-hours, or usage of a GPU instance type).",
            ),
        ] = False,
        fmt: Annotated[CostsFormat, typer.Option("--format", help="Output format.")] = CostsFormat.table,
        store: StoreOpt = None,
        out: OutOpt = None,
    ) -> None:
        """GPU spend from the store by any dimension or tag; month over month; chargeback to teams."""
        from finops_cli import api

        with command_engine():
            result = api.costs(
                store=store,
                by=by.split(",") if by is not None else (None if chargeback else ["team"]),
                where=where,
                month=month,
                compare=compare,
                cost=cost,
                fleet=fleet,
                all_lines=all_lines,
                chargeback=chargeback,
                team_tag=team_tag,
            )
        result.notes = [cli_words(n) for n in result.notes]
        if result.month_reason is not None:
            log.info(f"month: {result.months[0]}: {result.month_reason}")
        for warning in result.warnings:
            log.warning(warning)
        if fmt == CostsFormat.json:
            emit_json(result.as_json(), out)
            return
        if fmt == CostsFormat.csv:
            for note in result.notes:
                log.info(f"note: {note}")
        emit_text(render(result, fmt), out)

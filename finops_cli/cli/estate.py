"""``finops validate`` / ``finops stack`` / ``finops netc``: parse → api → render."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from finops_cli.cli.helptext import example
from finops_cli.cli.options import (
    AsOfOpt,
    FleetOpt,
    FormatOpt,
    FxOpt,
    HorizonOpt,
    MaxPriceAgeOpt,
    ModeOpt,
    OptionalWorkloadsOpt,
    OutOpt,
    OutputFormat,
    StoreOpt,
    WorkloadsOpt,
    check_out,
    command_engine,
    output_format,
    parse_as_of,
)
from finops_cli.cli.output import emit_json, emit_text, error_text, log, log_notes
from finops_cli.report.escape import md_table
from finops_cli.report.format import unit_price


def _num(value: float | None, decimals: int = 2) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "∞" if value is not None else "—"
    return f"{value:,.{decimals}f}"


def _stack_rows(stack: Any, currency: str) -> list[list[str]]:
    rows = []
    for i, e in enumerate(stack.steps):
        mark = "◀ marginal" if stack.marginal_step == i else ""
        label = e.substrate + (" (purchasable)" if e.purchasable else "")
        seg = (
            "base"
            if e.segment == 0 and not e.purchasable
            else ("commit" if e.purchasable else f"congested {e.segment}")
        )
        rows.append(
            [
                str(i + 1),
                label,
                e.kind,
                seg,
                unit_price(e.cost_per_unit, currency),
                _num(e.capacity_units, 1),
                _num(e.cumulative_units, 1),
                mark,
            ]
        )
    return rows


_STACK_HEADERS = ["#", "substrate", "kind", "segment", "cost/unit", "capacity/h", "cumulative/h", ""]


def _stack_summary(stack: Any, currency: str) -> str:
    if stack.demand_units is None:
        return ""
    basis = {"mean_hourly": "mean hour (deferrable)", "peak_hourly": "peak hour"}.get(stack.demand_basis or "", "")
    text = f"demand {stack.demand_units:,.2f} {stack.unit}/h ({basis})"
    if stack.clearing_price is not None:
        text += f", clearing price {unit_price(stack.clearing_price, currency)} per {stack.unit}"
    elif stack.shortfall_units:
        text += f", SHORT by {stack.shortfall_units:,.2f} {stack.unit}/h: no compliant capacity left"
    return text


def _render_stack_table(result: Any) -> str:
    from rich.markup import escape
    from rich.table import Table

    from finops_cli.cli.render import table_text

    parts = []
    for stack in result.stacks:
        title = f"Merit order: {stack.workload or 'fleet'} [{stack.unit}], {stack.mode} mode"
        table = Table(title=escape(title), title_justify="left", header_style="bold", box=None, pad_edge=False)
        for h in _STACK_HEADERS:
            table.add_column(h, justify="left" if h in ("substrate", "kind", "segment", "") else "right")
        for row in _stack_rows(stack, result.currency):
            table.add_row(*row)
        text = table_text(table).rstrip()
        summary = _stack_summary(stack, result.currency)
        if summary:
            text += "\n" + summary
        if stack.excluded:
            text += "\nexcluded:" + "".join(f"\n  {sid}: {'; '.join(r)}" for sid, r in stack.excluded.items())
        parts.append(text)
    notes = _price_notes(result.prices, result.stacks)
    if notes:
        parts.append("prices: " + "\n        ".join(notes))
    if result.demand_sources:
        parts.append("demand: " + "\n        ".join(o.note() for o in result.demand_sources))
    return "\n\n".join(parts)


def _price_notes(prices: list[Any], stacks: list[Any] | None = None) -> list[str]:
    """Feed and reference-price notes, only for substrates that appear on the shown curves."""
    from finops_cli.estate.prices import reference_price_notes

    if stacks is not None:
        shown = {st.substrate for stack in stacks for st in stack.steps}
        prices = [p for p in prices if p.substrate in shown]
    return reference_price_notes(prices)


def _render_stack_markdown(result: Any) -> str:
    """Merit-order stacks as GitHub markdown; every id and every sentence holding one is escaped."""
    from finops_cli.report.escape import md_text

    parts = []
    for stack in result.stacks:
        title = md_text(f"{stack.workload or 'fleet (GPU-hours)'} ({stack.unit}, {stack.mode} mode)", None)
        parts.append(f"### Merit order: {title}\n")
        parts.append(md_table([*_STACK_HEADERS[:-1], "note"], _stack_rows(stack, result.currency)))
        summary = _stack_summary(stack, result.currency)
        if summary:
            parts.append("\n" + md_text(f"{summary[0].upper()}{summary[1:]}.", None))
        if stack.excluded:
            parts.append("\nExcluded:\n")
            parts.extend(f"- {md_text(sid)}: {md_text(', '.join(r), None)}" for sid, r in stack.excluded.items())
        parts.append("")
    notes = _price_notes(result.prices, result.stacks)
    if notes:
        parts.append("Prices:\n")
        parts.extend(f"- {md_text(n, None)}" for n in notes)
    if result.demand_sources:
        parts.append("\nDemand:\n")
        parts.extend(f"- {md_text(o.note(), None)}" for o in result.demand_sources)
    return "\n".join(parts)


def _netc_rows(result: Any) -> list[list[str]]:
    from finops_cli.cli.render import money

    rows = []
    cur = result.currency
    for r in result.rows:
        alt = r.stable_alternative
        alt_text = f"{alt['substrate']} {money(float(alt['cost']), cur)}" if alt else "—"
        if r.refused:
            rows.append([r.workload, r.substrate, _num(r.preemptions_per_hour, 4), "refused", "", "", "", "", "", "",
                         "", alt_text])  # fmt: skip
            continue
        rows.append(
            [
                r.workload,
                r.substrate,
                _num(r.preemptions_per_hour, 4),
                _num(r.multiplier, 4),
                _num(r.expected_preemptions, 1),
                _num(r.expected_lost_hours, 1),
                unit_price(r.netc, cur),
                unit_price(r.cost_per_unit, cur),
                _num(r.tau_minutes, 1),
                _num(r.tau_star_minutes, 1),
                unit_price(r.netc_at_tau_star, cur),
                alt_text,
            ]
        )
    return rows


_NETC_HEADERS = [
    "workload",
    "spot substrate",
    "λ/h",
    "W",
    "preemptions",
    "lost h",
    "NETC",
    "per unit",
    "τ min",
    "τ* min",
    "NETC at τ*",
    "stable alternative",
]


def _netc_notes(result: Any) -> list[str]:
    notes = []
    for r in result.rows:
        if r.refused:
            notes.append(f"{r.workload} on {r.substrate}: spot refused: {r.refused}")
        if r.replay and "realised_cost" in r.replay:
            rp = r.replay
            cur = result.currency
            notes.append(
                f"{r.workload} on {r.substrate}: replay on {r.trace['name'] if r.trace else 'trace'}: realised "
                f"{unit_price(rp['realised_cost'], cur)} vs NETC {unit_price(rp['predicted_netc'], cur)}"
                f" ({rp['error_pct']:+.2f}%), {rp['preemptions']} preemptions, W {rp['multiplier']:.4f}"
            )
    if result.trace is not None:
        notes.insert(0, f"trace {result.trace.name}: {result.trace.rate.describe()}")
    return notes


def emit_validation(doc: dict[str, Any], fmt: OutputFormat, out: Path | None) -> None:
    """``finops validate``'s verdict as JSON or markdown (warnings and errors listed, one line each)."""
    if fmt is OutputFormat.json:
        emit_json(doc, out)
        return
    from finops_cli.report.escape import md_text

    files = doc["fleet"] + (f" and {doc['workloads']}" if doc["workloads"] else "")
    lines = [f"### finops validate: {'valid' if doc['valid'] else 'INVALID'}", "", md_text(files, None)]
    for kind in ("errors", "warnings"):
        if doc[kind]:
            lines += ["", f"{kind.capitalize()}:", "", *(f"- {md_text(line, None)}" for line in doc[kind])]
    emit_text("\n".join(lines), out)


def register(app: typer.Typer) -> None:
    @app.command("validate", epilog=example("finops validate --fleet fleet.yaml --workloads workloads.yaml --strict"))
    def _validate(
        fleet: FleetOpt,
        workloads: OptionalWorkloadsOpt = None,
        strict: Annotated[bool, typer.Option("--strict", help="Treat warnings as errors.")] = False,
        fmt: FormatOpt = None,
        out: OutOpt = None,
    ) -> None:
        """Check fleet.yaml (and workloads.yaml) before any math: exit 0 if valid, 2 if not.

        --format json prints {"valid", "fleet", "workloads", "warnings", "errors"} for a CI step to read, also
        when the files are invalid (the exit code says so too).
        """
        fmt = output_format(fmt, out)
        from finops_cli import api
        from finops_cli.errors import FinopsError

        doc: dict[str, Any] = {
            "valid": True,
            "fleet": str(fleet),
            "workloads": None if workloads is None else str(workloads),
        }
        try:
            warnings = api.validate(fleet, workloads, strict=strict)
        except FinopsError as exc:
            if fmt is OutputFormat.table:
                raise
            emit_validation(doc | {"valid": False, "warnings": [], "errors": error_text(exc).splitlines()}, fmt, out)
            raise
        doc |= {"warnings": warnings, "errors": []}
        if fmt is not OutputFormat.table:
            emit_validation(doc, fmt, out)
            return
        for w in warnings:
            log.warning(w)
        what = f"{fleet}" + (f" and {workloads}" if workloads else "")
        emit_text(f"valid: {what} ({len(warnings)} warning{'s' if len(warnings) != 1 else ''})", out)

    @app.command(
        "stack",
        epilog=example(
            "finops stack --fleet fleet.yaml --workloads workloads.yaml --workload chat-serving --chart stack.png"
        ),
    )
    def _stack(
        fleet: FleetOpt,
        workloads: OptionalWorkloadsOpt = None,
        workload: Annotated[str | None, typer.Option("--workload", help="Only this workload's merit order.")] = None,
        mode: ModeOpt = "cost",  # type: ignore[assignment]
        fmt: FormatOpt = None,
        chart: Annotated[
            Path | None,
            typer.Option("--chart", help="Write the step-curve PNG here (one per workload).", callback=check_out),
        ] = None,
        store: StoreOpt = None,
        horizon: HorizonOpt = None,
        fx: FxOpt = None,
        as_of: AsOfOpt = None,
        max_price_age: MaxPriceAgeOpt = None,
        out: OutOpt = None,
    ) -> None:
        """The merit-order supply curve: compliant substrates by cost per unit of usable output."""
        fmt = output_format(fmt, out)
        from finops_cli import api
        from finops_cli.estate.prices import parse_fx

        with command_engine():
            target = api.estate(fleet, workloads) if workloads is not None else api.fleet(fleet)
            result = api.stack(
                target,
                workload=workload,
                mode=str(mode),
                store=store,
                horizon=horizon,
                fx=parse_fx(fx),
                as_of=parse_as_of(as_of),
                max_price_age=max_price_age,
            )
        log_notes(result.horizon_note, result.warnings)
        if chart is not None:
            from finops_cli.report.charts import merit_order_chart

            for st in result.stacks:
                path = (
                    chart if len(result.stacks) == 1 else chart.with_name(f"{chart.stem}.{st.workload}{chart.suffix}")
                )
                merit_order_chart(st, path, currency=result.currency)
                log.info(f"chart: {path}")
        if fmt == OutputFormat.json:
            emit_json(result.as_json(), out)
        elif fmt == OutputFormat.markdown:
            emit_text(_render_stack_markdown(result), out)
        else:
            emit_text(_render_stack_table(result), out)

    @app.command(
        "netc",
        epilog=example(
            "finops netc --fleet fleet.yaml --workloads workloads.yaml --trace us-east-1f.json --substrate aws-p4d-spot"
        ),
    )
    def _netc(
        fleet: FleetOpt,
        workloads: WorkloadsOpt,
        trace: Annotated[
            Path | None,
            typer.Option(
                "--trace",
                help="Spot trace: Can't Be Late JSON (1 = unavailable; multi-node: unavailable-node counts) or CSV "
                "of preemption times. Needs --substrate when the fleet has several spot pools.",
            ),
        ] = None,
        substrate: Annotated[
            str | None, typer.Option("--substrate", help="Only this spot substrate (the one the trace describes).")
        ] = None,
        fmt: FormatOpt = None,
        store: StoreOpt = None,
        horizon: HorizonOpt = None,
        fx: FxOpt = None,
        as_of: AsOfOpt = None,
        out: OutOpt = None,
    ) -> None:
        """Net Expected Training Cost of interruptible work on each compliant spot substrate."""
        fmt = output_format(fmt, out)
        from finops_cli import api
        from finops_cli.estate.prices import parse_fx

        with command_engine():
            result = api.netc(
                api.estate(fleet, workloads),
                trace=trace,
                substrate=substrate,
                store=store,
                horizon=horizon,
                fx=parse_fx(fx),
                as_of=parse_as_of(as_of),
            )
        log_notes(result.horizon_note, result.warnings)
        if fmt == OutputFormat.json:
            emit_json([r.as_dict() for r in result.rows], out)
            return
        priced = dict.fromkeys(f"{r.substrate}: price from {r.price_note}" for r in result.rows if r.price_note)
        notes = _netc_notes(result) + list(priced)
        if fmt == OutputFormat.markdown:
            text = "### NETC: interruptible work on spot\n\n" + md_table(_NETC_HEADERS, _netc_rows(result))
            if notes:
                from finops_cli.report.escape import md_text

                text += "\n\n" + "\n".join(f"- {md_text(n, None)}" for n in notes)
            emit_text(text, out)
            return
        from rich.table import Table

        from finops_cli.cli.render import table_text

        table = Table(
            title=f"NETC: interruptible work on spot, {result.horizon.start:%Y-%m-%d} + {result.horizon.hours} h",
            title_justify="left",
            header_style="bold",
            box=None,
            pad_edge=False,
        )
        for h in _NETC_HEADERS:
            table.add_column(
                h, justify="left" if h in ("workload", "spot substrate", "stable alternative") else "right"
            )
        for row in _netc_rows(result):
            table.add_row(*row)
        text = table_text(table, width=200).rstrip()
        if not result.rows:
            text += "\n(no interruptible workload has a compliant spot substrate)"
        if notes:
            text += "\n" + "\n".join(notes)
        emit_text(text, out)


def register_group(app: typer.Typer) -> None:
    """``finops estate …`` subcommands."""

    @app.command("draft", epilog=example("finops estate draft --out estate/ --month 2026-10"))
    def _draft(
        out: Annotated[Path, typer.Option("--out", help="Directory for fleet.yaml and workloads.yaml.")],
        store: StoreOpt = None,
        month: Annotated[
            str | None,
            typer.Option(
                "--month",
                help="Billing month YYYY-MM (default: the latest month with GPU usage in the store, the rule "
                "plan and costs use).",
            ),
        ] = None,
        currency: Annotated[
            str | None, typer.Option("--currency", help="Only GPU lines in this currency (needed when mixed).")
        ] = None,
        force: Annotated[bool, typer.Option("--force", help="Overwrite an existing draft.")] = False,
    ) -> None:
        """Draft fleet.yaml (one substrate per account/region/instance type/pricing) and workloads.yaml
        (one per workload/team tag) from the store's GPU billing lines; assumptions are marked NOT INFERRED."""
        from finops_cli import api

        with command_engine():
            draft, paths = api.estate_draft(store=store, out=out, month=month, currency=currency, force=force)
        log.info(f"month: {draft.month}: {draft.month_reason}")
        basis = sorted(set(draft.demand_basis.values()))
        emit_text(
            f"drafted {paths[0]} ({draft.substrates} substrates, {draft.currency} {draft.gpu_effective_cost:,.2f} "
            f"of {draft.month} GPU spend) and {paths[1]} ({draft.workloads} workloads, demand from "
            f"{' and '.join(basis) or 'nothing'}); check every line marked NOT INFERRED, then "
            f"'finops validate --fleet {paths[0]} --workloads {paths[1]}'"
        )

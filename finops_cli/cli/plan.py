"""finops plan — the cheapest compliant substrate mix (MILP), with commitments and savings against the bill.

Thin: parse options → :func:`finops_cli.api.plan` → render (rich tables, markdown or the JSON document).
``--out`` receives the output instead of stdout, in ``--format`` (default: from the extension, so
``--out plan.json`` writes the JSON document); ``--save-plan`` also writes the JSON document, whatever
``--format`` prints.
"""

from __future__ import annotations

import json
import time
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console, Group

from finops_cli.cli.helptext import example
from finops_cli.cli.options import (
    AsOfOpt,
    FleetOpt,
    FormatOpt,
    FxOpt,
    HorizonOpt,
    MaxPriceAgeOpt,
    ModeOpt,
    OutOpt,
    OutputFormat,
    StoreOpt,
    WorkloadsOpt,
    check_out,
    command_engine,
    output_format,
    parse_as_of,
)
from finops_cli.cli.options import Mode as ModeEnum
from finops_cli.cli.output import cli_words, emit_text, log, log_notes, status, stdout_console
from finops_cli.cli.render import Col, money, money_table, pct, table_text
from finops_cli.report.escape import md_text
from finops_cli.report.format import unit_price

if TYPE_CHECKING:
    from rich.table import Table


class SolverChoice(StrEnum):
    auto = "auto"
    cbc = "cbc"
    highs = "highs"


def _tables(doc: dict[str, Any]) -> list[Any]:
    cur = doc["currency"]
    tables = []
    # allocation by workload × substrate kind (GPU-hours and cost)
    kinds = ["owned", "reserved", "spot", "on_demand", "api"]
    by_w: dict[str, dict[str, float]] = {}
    for a in doc["allocations"]:
        row = by_w.setdefault(a["workload"], {})
        row[a["kind"]] = row.get(a["kind"], 0.0) + a["cost"]
        row["_gpuh"] = row.get("_gpuh", 0.0) + (a["gpu_hours"] if a["kind"] != "api" else 0.0)
    present = [k for k in kinds if any(k in r for r in by_w.values())]
    rows = [
        [w, r.get("_gpuh", 0.0), *[r.get(k, 0.0) for k in present], sum(r.get(k, 0.0) for k in present)]
        for w, r in sorted(by_w.items())
    ]
    tables.append(
        money_table(
            "Allocation by workload × substrate kind (usage cost)",
            [Col("Workload"), Col("GPU-hours", "number"), *[Col(k, "money") for k in present], Col("Total", "money")],
            rows,
            totals=True,
            currency=cur,
        )
    )
    tables.append(
        money_table(
            "Allocations (price per unit: the merit order's, uncongested, as in finops stack / netc)",
            [
                Col("Workload"),
                Col("Substrate"),
                Col("Units", "number"),
                Col("Price per unit", "money"),
                Col("Cost", "money"),
            ],
            [
                [a["workload"], a["substrate"], a["units"], unit_price(a.get("price_per_unit"), cur), a["cost"]]
                for a in sorted(doc["allocations"], key=lambda a: (a["workload"], a["substrate"]))
            ],
            currency=cur,
        )
    )
    if doc["commitments"]:
        tables.append(
            money_table(
                "Commitments to buy",
                [Col("Substrate"), Col("Blocks", "number"), Col("GPUs", "number"), Col("Cost", "money")],
                [[c["substrate"], c["blocks"], c["gpus"], c["cost"]] for c in doc["commitments"]],
                totals=True,
                currency=cur,
            )
        )
    subs = doc.get("by_substrate") or []
    t = doc["totals"]
    base_label = {"billing": "Amortised (EffectiveCost)", "merit_order": "Estimate (merit order)"}.get(
        t.get("baseline_source") or "", ""
    )
    if base_label:
        tables.append(
            money_table(
                f"Cost vs baseline ({base_label})",
                [
                    Col("Substrate"),
                    Col("Kind"),
                    Col(base_label, "money"),
                    Col("Planned", "money"),
                    Col("Saving", "saving"),
                ],
                [
                    [
                        s["substrate"],
                        s["kind"],
                        s["baseline_cost"],
                        s["planned_cost"],
                        (s["baseline_cost"] or 0) - s["planned_cost"],
                    ]
                    for s in subs
                    if s["planned_cost"] or s["baseline_cost"]
                ],
                totals=True,
                currency=cur,
            )
        )
    else:  # no baseline: the reference left work unserved; show it beside the plan, claim no saving
        tables.append(
            money_table(
                "Cost by substrate (no baseline: the merit-order reference leaves work unserved)",
                [Col("Substrate"), Col("Kind"), Col("Merit order (incomplete)", "money"), Col("Planned", "money")],
                [
                    [s["substrate"], s["kind"], s.get("merit_order_cost"), s["planned_cost"]]
                    for s in subs
                    if s["planned_cost"] or s.get("merit_order_cost")
                ],
                totals=True,
                currency=cur,
            )
        )
    lines = [
        ["Planned cost", t["planned_cost"]],
        ["  of which usage (incl. NETC overhead)", t.get("usage_cost")],
        ["  of which NETC overhead", t.get("netc_overhead")],
        ["  of which commitments bought", t.get("commitment_cost")],
        ["  of which prepaid (sunk)", t["sunk_cost"]],
        [f"Baseline ({base_label or 'none'})", t["baseline_cost"]],
        *(
            [["Baseline as billed (BilledCost)", t["baseline_billed_cost"]]]
            if t.get("baseline_billed_cost") is not None
            else []
        ),
        ["Merit-order reference", t.get("merit_order_cost")],
    ]
    tables.append(money_table("Totals", [Col("Item"), Col("Amount", "money")], lines, currency=cur))
    by_lever = doc.get("savings_by_lever")
    if by_lever:
        rows = [
            [r["lever"].replace("_", " "), r["saving"], r["evidence"].replace("_", " ")] for r in by_lever["levers"]
        ]
        if by_lever.get("price_difference") is not None:
            rows.append(["price difference (bill's rates vs fleet's)", by_lever["price_difference"], "measured"])
            rows.append(["placement on the bill's own pools", by_lever["placement"], "modelled"])
        else:
            rows.append(["not attributed (bill vs model)", by_lever["residual"], "residual"])
        how = "Shapley" if by_lever["method"] == "shapley" else "ordered: " + ", ".join(by_lever.get("order") or [])
        tables.append(
            money_table(
                f"Savings by lever ({how}, {by_lever['solves']} re-solves)",
                [Col("Lever"), Col("Saving", "saving"), Col("Evidence")],
                rows,
                totals=["Savings", t["savings"], ""],
                currency=cur,
            )
        )
    change = doc.get("cost_change_by_kind")
    if change:
        tables.append(
            money_table(
                "Cost change by substrate kind (plan − baseline: where cost lands, not a lever)",
                [Col("Kind"), Col("Change", "saving")],
                [[k.replace("_", "-"), v] for k, v in change.items()],
                currency=cur,
            )
        )
    used = _prices_used_table(doc)
    if used is not None:
        tables.append(used)
    prices = _clearing_rows(doc)
    if prices:
        tables.append(
            money_table(
                "Clearing price per unit (demand duals: the cost of one more unit)",
                [
                    Col("Workload"),
                    Col("Unit"),
                    Col("Peak block", "money", 4),
                    Col("Lowest", "money", 4),
                    Col("Highest", "money", 4),
                ],
                prices,
                currency=cur,
            )
        )
    return tables


def _prices_used_table(doc: dict[str, Any]) -> Table | None:
    """The substrate prices the plan used (``prices`` in plan.json), as the report prints them."""
    from finops_cli.report.markdown import PRICES_HEADERS, prices_rows
    from finops_cli.schema.plan import PlanDocument

    plan = PlanDocument.model_validate(doc)
    if not plan.prices:
        return None
    shown = [p for p in plan.prices if p.source != "fleet" or p.fx_rate not in (None, 1.0)]
    if not shown:
        return None
    rows = prices_rows(plan.model_copy(update={"prices": shown}))
    cols = [Col(h) for h in PRICES_HEADERS]
    return money_table(
        "Prices from feeds and reference tables (plan.json prices[])", cols, rows, currency=doc["currency"]
    )


def _clearing_rows(doc: dict[str, Any]) -> list[list[Any]]:
    """Per workload: price in block 0 (the peak hour) and the range over blocks; deferrable work: one price."""
    by_w: dict[str, dict[int, float]] = {}
    for p in doc.get("clearing_prices") or []:
        by_w.setdefault(p["workload"], {})[p["block"]] = p["price_per_unit"]
    units = {a["workload"]: a.get("unit", "") for a in doc["allocations"]}
    rows = []
    for w, prices in sorted(by_w.items()):
        values = list(prices.values())
        peak = prices.get(0, prices.get(-1))
        rows.append([w, units.get(w, ""), peak, min(values), max(values)])
    return rows


def _summary(doc: dict[str, Any]) -> str:
    t, s, h = doc["totals"], doc["solver"], doc["horizon"]
    cur = doc["currency"]
    sav = t["savings"]
    word = "saves" if (sav or 0) >= 0 else "costs"
    versus = (
        f"vs baseline {money(t['baseline_cost'], cur)} — {word} {money(abs(sav or 0), cur)} "
        f"({pct(abs(t['savings_pct'] or 0) / 100)})"
        if t["baseline_cost"] is not None
        else "no baseline, no saving claimed (see the note below)"
    )
    return (
        f"Plan {h['start'][:10]} +{h['hours']} h ({h['blocks']} blocks, mode {doc['mode']}): "
        f"{money(t['planned_cost'], cur)} {versus}; reliability penalty (not money) "
        f"{money(t['penalty'], cur)}. Solver {s['name']} {s['status']}, gap {pct(s['mip_gap'] or 0, decimals=3)}, "
        f"{s['seconds']:.2f} s." + _certified(doc)
    )


def _certified(doc: dict[str, Any]) -> str:
    """The certificate in one sentence: the bound the plan proved on its own distance from the hourly optimum."""
    c = doc.get("certification")
    if not c:
        return ""
    cur = doc["currency"]
    verdict = "Certified" if c["certified"] else "NOT certified"
    return (
        f" {verdict} within {pct(c['gap'], decimals=3)} of the hourly optimum (tolerance "
        f"{pct(c['tolerance'], decimals=3)}; bounds {money(c['lower_bound'], cur)}–{money(c['upper_bound'], cur)}, "
        f"{c['blocks']} blocks, {c['rounds']} refinements); the hourly schedule costs {money(c['schedule_cost'], cur)}."
    )


def _markdown(doc: dict[str, Any]) -> str:
    """The plan as GitHub markdown: ids come from the user's estate files, so every cell and the summary
    go through :mod:`finops_cli.report.escape` (no HTML, mention, image or broken table)."""
    from finops_cli.report.escape import md_table

    cur = doc["currency"]
    t = doc["totals"]
    num = [False, False, False, True, True, True, True]
    out = ["# Plan", "", md_text(_summary(doc), None), ""]
    out += [f"- note: {md_text(n, None)}" for n in doc.get("notes") or []]
    out += [""] if doc.get("notes") else []
    out.append(
        md_table(
            ["Workload", "Substrate", "Kind", "GPU-hours", "Units", "Price per unit", "Cost"],
            [
                [
                    a["workload"],
                    a["substrate"],
                    a["kind"],
                    f"{a['gpu_hours']:,.1f}",
                    f"{a['units']:,.1f}",
                    unit_price(a.get("price_per_unit"), cur),
                    money(a["cost"], cur),
                ]
                for a in doc["allocations"]
            ],
            ["left", "left", "left", "right", "right", "right", "right"],
            trusted=num,
        )
    )
    if doc["commitments"]:
        out += [
            "",
            md_table(
                ["Commitment", "Blocks", "GPUs", "Cost"],
                [
                    [c["substrate"], str(c["blocks"]), f"{c['gpus']:g}", money(c["cost"], cur)]
                    for c in doc["commitments"]
                ],
                ["left", "right", "right", "right"],
                trusted=[False, True, True, True],
            ),
        ]
    totals = [
        [key.replace("_", " "), money(t.get(key), cur)]
        for key in ("planned_cost", "sunk_cost", "baseline_cost", "savings", "merit_order_cost", "penalty")
    ]
    out += ["", md_table(["Total", "Amount"], totals, ["left", "right"], trusted=[True, False])]
    return "\n".join(out) + "\n"


def register(app: typer.Typer) -> None:
    @app.command(
        "plan",
        epilog=example(
            "finops plan --fleet fleet.yaml --workloads workloads.yaml --out plan.json --schedule schedule.parquet"
        ),
    )
    def _plan(
        fleet: FleetOpt,
        workloads: WorkloadsOpt,
        store: StoreOpt = None,
        horizon: HorizonOpt = None,
        blocks: Annotated[
            int | None, typer.Option("--blocks", help="Load-duration blocks (default 48; >= hours = hourly).", min=1)
        ] = None,
        mode: ModeOpt = ModeEnum.cost,
        solver: Annotated[SolverChoice, typer.Option("--solver", help="cbc (default if present) or highs.")] = (
            SolverChoice.auto
        ),
        time_limit: Annotated[float | None, typer.Option("--time-limit", help="Solver time limit, seconds.")] = None,
        gap: Annotated[
            float | None, typer.Option("--gap", help="Relative MIP gap (default 0.0001; 0.001 with --integer-nodes).")
        ] = None,
        integer_nodes: Annotated[
            bool,
            typer.Option(
                "--integer-nodes", help="Provision on-demand/spot substrates with gpus_per_node in whole nodes."
            ),
        ] = False,
        fx: FxOpt = None,
        as_of: AsOfOpt = None,
        max_price_age: MaxPriceAgeOpt = None,
        tolerance: Annotated[
            float | None,
            typer.Option("--tolerance", help="Certified gap to reach by refining blocks (default 0.001 = 0.1 %)."),
        ] = None,
        schedule: Annotated[
            Path | None,
            typer.Option(
                "--schedule",
                help="Write the certified hourly schedule (GPUs per hour per workload × substrate) "
                "to FILE.parquet or FILE.csv.",
            ),
        ] = None,
        fmt: FormatOpt = None,
        out: OutOpt = None,
        save_plan: Annotated[
            Path | None,
            typer.Option(
                "--save-plan",
                help="Also write the JSON plan document here, whatever --format prints (for report and gate).",
                callback=check_out,
            ),
        ] = None,
    ) -> None:
        """Plan the cheapest compliant substrate mix for the workloads' demand, with savings against the bill."""
        fmt = output_format(fmt, out)
        from finops_cli import api
        from finops_cli.atomic import check_not_an_input
        from finops_cli.estate.prices import parse_fx
        from finops_cli.planner.schedule import check_schedule_path, write_schedule
        from finops_cli.store import store_exists

        check_not_an_input(out, fleet, workloads)
        if schedule is not None:
            check_schedule_path(schedule)
            check_not_an_input(schedule, fleet, workloads, out)
        check_not_an_input(save_plan, fleet, workloads)
        est = api.estate(fleet, workloads)
        st = api.open_store(store) if (store is not None or store_exists(None)) else None
        started = time.perf_counter()
        planning = f"planning {len(est.workloads.workloads)} workloads on {len(est.fleet.substrates)} substrates"
        with command_engine(), status(planning):
            result = api.plan(
                est,
                st,
                horizon=horizon,
                blocks=blocks,
                mode=mode.value,
                solver=solver.value,
                time_limit=time_limit,
                gap=gap,
                integer_nodes=integer_nodes,
                fx=parse_fx(fx),
                tolerance=tolerance,
                as_of=parse_as_of(as_of),
                max_price_age=max_price_age,
            )
        log.debug(f"plan: solved in {time.perf_counter() - started:.2f} s ({solver.value})")
        log_notes(result.horizon_note, result.warnings)
        result.document.notes = [cli_words(n) for n in result.document.notes]
        doc = result.document.model_dump(mode="json")
        text_json = json.dumps(doc, indent=2, allow_nan=False)
        if save_plan is not None:
            emit_text(text_json, save_plan)
            log.info(f"wrote {save_plan}")
        if schedule is not None:
            write_schedule(result.schedule(), schedule)
            log.info(f"wrote {schedule}")
        for note in result.price_notes:
            log.info(f"price: {note}")
        if fmt == OutputFormat.json:
            emit_text(text_json, out)
        elif fmt == OutputFormat.markdown:
            emit_text(_markdown(doc), out)
        elif out is not None:
            emit_text(table_text(Group(_summary(doc), *_tables(doc)), width=140), out)
        else:
            render_plan(doc, stdout_console())
        if out is not None:
            log.info(f"wrote {out}")


def render_plan(doc: dict[str, Any], console: Console) -> None:
    """Print a plan document's summary line and tables (shared with ``finops demo``)."""
    if not console.is_terminal:
        console.width = max(console.width, 140)  # piped: do not squeeze columns to ellipses
    console.print(_summary(doc))
    for note in doc.get("notes") or []:
        console.print(f"note: {note}", markup=False, soft_wrap=True)
    for source in doc.get("demand_sources", []):
        console.print(f"Demand {source['workload']}: {_demand_words(source)}", markup=False, soft_wrap=True)
    for table in _tables(doc):
        console.print(table)


def _demand_words(source: dict[str, Any]) -> str:
    """A ``demand_sources`` entry in words: which GPU-hours, and how the horizon was filled."""
    quantity = "busy GPU-hours" if source["quantity"] == "busy_gpu_hours" else "allocated GPU-hours"
    text = (
        f"{source['gpu_hours']:,.1f} {quantity} observed ({source['source']}, {source['tag']}={source['value']}) "
        f"over {source['observed_hours']} of {source['horizon_hours']} hours"
    )
    extension = {"none": "", "repeat": "; repeated over the horizon", "zero": "; no demand in the other hours"}
    return text + extension[source["extension"]]


__all__ = ["register", "render_plan", "table_text"]

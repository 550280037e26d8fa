"""The leadership report's markdown (``finops report``; docs/report.md lists the sections): pure, inputs → text.

Every number about the plan is read from the plan document, so the report and plan.json agree by construction;
a section whose inputs are missing says so ("not available: ...") rather than disappearing.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from finops_cli.report.escape import Align, left_then_right, md_table, md_text
from finops_cli.report.format import money, number, pct, unit_price
from finops_cli.report.metrics import (
    BASELINE_LABEL,
    KIND_LABEL,
    RESIDUAL_LABEL,
    ReportInputs,
    bill_coverage,
    clearing_price_rows,
    cost_by_kind,
    evidence_words,
    extra_field,
    gpu_hours_by_kind,
    horizon_bounds,
    latency_critical_on_spot,
    period_label,
)
from finops_cli.report.waste import PHILLY_MEAN_UTILIZATION
from finops_cli.schema.plan import PlanDocument


def _pm(value: float | None, cur: str, signed: bool = False) -> str:
    """Money in prose: ``\\$`` so that two amounts in one paragraph can never pair up as GitHub inline maths
    (``$…$``); table cells are separate inline contexts and keep a plain ``$``."""
    return money(value, cur, signed=signed).replace("$", "\\$")


def _pu(value: float | None, cur: str) -> str:
    """A unit price in prose (see :func:`_pm`)."""
    return unit_price(value, cur).replace("$", "\\$")


def _summary(inp: ReportInputs, cur: str) -> list[str]:
    plan, t = inp.plan, inp.plan.totals
    period = period_label(plan)
    source = extra_field(t, "baseline_source")
    parts = []
    if t.baseline_cost is not None and source == "billing":
        text = f"In {period} the estate's GPU work cost **{_pm(t.baseline_cost, cur)}** amortised (EffectiveCost)"
        billed = extra_field(t, "baseline_billed_cost")
        text += f"; {_pm(billed, cur)} as billed (BilledCost)." if billed is not None else " from the bill."
        parts.append(text)
    elif t.baseline_cost is not None and source == "merit_order":
        parts.append(
            f"No billing covers {period}: the baseline of **{_pm(t.baseline_cost, cur)}** is an estimate (a greedy "
            "merit-order dispatch of the same demand), not what was paid."
        )
    elif t.baseline_cost is not None:
        parts.append(f"The baseline for {period} is **{_pm(t.baseline_cost, cur)}** (source not stated in the plan).")
    coverage = bill_coverage(plan)
    if coverage is not None:
        parts.append(
            f"The bill is partial: {_of_substrates(coverage)} no billing lines and "
            f"{'carries' if len(coverage['unbilled']) == 1 else 'carry'} {_pm(coverage['planned_cost'], cur)} "
            f"({pct(coverage['share'])}) of the planned cost."
        )
    other = waste_month(inp)
    if other is not None:
        parts.append(f"Idle waste below is measured in {other}, the latest month with utilisation, not in {period}.")
    waste_totals = _waste_totals(inp)
    if waste_totals is not None:
        idle_cost = waste_totals.get("idle_cost")
        idle_fraction = waste_totals.get("idle_fraction")
        philly = f"Philly's production cluster ran at {pct(PHILLY_MEAN_UTILIZATION, decimals=0)} utilisation"
        if idle_cost is not None:
            parts.append(
                f"**{_pm(idle_cost, cur)}** of spend paid for idle GPUs "
                f"({pct(idle_fraction)} of measured GPU-hours were idle; {philly})."
            )
        else:
            parts.append(
                f"**{pct(idle_fraction)}** of measured GPU-hours ({number(waste_totals.get('idle_hours'))}) were idle "
                f"({philly}); they are not priced because no billing line or fleet price matched the devices."
            )
    else:
        parts.append("Idle waste was not measured (no utilisation in the store).")
    plan_text = f"The plan serves the same demand for **{_pm(t.planned_cost, cur)}**"
    if t.savings is not None:
        verb = "saving" if t.savings >= 0 else "costing"
        share = f" ({pct(abs(t.savings_pct) / 100)})" if t.savings_pct is not None else ""
        plan_text += f", {verb} **{_pm(abs(t.savings), cur)}{share}**"
        plan_text += "" if t.savings >= 0 else " more"
    parts.append(plan_text + f", of which {_pm(t.sunk_cost, cur)} is sunk or prepaid capacity.")
    short = float(extra_field(t, "merit_order_unserved_units", 0.0) or 0.0)
    if t.baseline_cost is None and short > 0:
        parts.append(
            f"No saving is claimed: without billing, the only reference is a greedy merit-order dispatch, and it "
            f"leaves {number(short, 1)} units of demand unserved, so its cost ({_pm(t.merit_order_cost, cur)}) "
            "is for less work than the plan does."
        )
    by = plan.savings_by_lever
    if by is not None and t.savings is not None:
        # levers only: the residual is no lever, and idle waste above is a measurement, not a second lever
        top = sorted((r for r in by.levers if r.applied and r.saving > 0), key=lambda r: -r.saving)[:3]
        if top:
            listed = "; ".join(
                f"{i}. {r.label} ({_pm(r.saving, cur)}, {evidence_words(r.evidence, r.measured_share)})"
                for i, r in enumerate(top, 1)
            )
            parts.append(f"The levers that earned it: {listed}.")
        if by.residual:
            if by.price_difference is not None and by.placement is not None:
                parts.append(
                    f"{_pm(by.residual, cur)} of the difference is no lever: {_pm(by.price_difference, cur)} is the "
                    f"price difference (the bill's rates vs the fleet's prices) and {_pm(by.placement, cur)} "
                    "placement (the bill's work moved to cheaper pools it already used, at fleet prices)."
                )
            else:
                parts.append(
                    f"{_pm(by.residual, cur)} of the difference is not attributed to a lever: "
                    f"{md_text(by.residual_basis, None)}."
                )
    if plan.commitments:
        buys = ", ".join(
            f"{c.blocks} block(s) ({number(c.gpus)} GPUs) of {md_text(c.substrate)}" for c in plan.commitments
        )
        parts.append(f"It buys {buys} for {_pm(sum(c.cost for c in plan.commitments), cur)}.")
    unserved = sum(u.units for u in plan.unserved)
    if unserved > 0:
        parts.append(f"⚠️ {number(unserved, 1)} units of demand are left unserved.")
    risky = latency_critical_on_spot(plan)
    if risky and extra_field(plan, "mode", "cost") == "cost":
        names = ", ".join(md_text(w) for w in risky)
        parts.append(f"⚠️ Latency-critical work runs on spot ({names}): see Risks.")
    return ["## Executive summary", "", " ".join(parts), ""]


def _of_substrates(coverage: dict[str, Any], *, verb: bool = True) -> str:
    n, m = len(coverage["unbilled"]), coverage["substrates"]
    text = f"{n} of {m} substrate{'s' if m != 1 else ''}"
    return text + (" has" if n == 1 else " have") if verb else text


def waste_month(inp: ReportInputs) -> str | None:
    """The utilisation month when it is not the plan's (then every idle number must say so)."""
    start, _ = horizon_bounds(inp.plan)
    if inp.waste is None or inp.waste.month is None or start is None or inp.waste.month == f"{start:%Y-%m}":
        return None
    return inp.waste.month


def _waste_totals(inp: ReportInputs) -> dict[str, Any] | None:
    if inp.waste is None:
        return None
    for doc in inp.waste.by.values():
        totals: dict[str, Any] | None = doc.get("totals")
        if totals:
            return totals
    return None


def _waste_table(doc: dict[str, Any], label: str, cur: str) -> str:
    groups = sorted(doc.get("groups", []), key=lambda g: (-(g.get("idle_cost") or 0.0), -(g.get("idle_hours") or 0.0)))

    def cells(g: dict[str, Any]) -> list[str]:
        hours = [number(g.get("device_hours")), number(g.get("idle_hours"))]
        return [*hours, pct(g.get("idle_fraction")), money(g.get("idle_cost"), cur)]

    rows = [[md_text(g.get("key")), *cells(g)] for g in groups]
    rows.append(["**Total**", *(f"**{x}**" for x in cells(doc.get("totals", {})))])
    headers = [label, "GPU-hours", "Idle GPU-hours", "Idle share", "Idle cost"]
    return md_table(headers, rows, left_then_right(1, 4), trusted=True)


def _waste_section(inp: ReportInputs, cur: str, charts: dict[str, str]) -> list[str]:
    other = waste_month(inp)
    out = ["## Idle waste" + (f" ({other}, not the plan's month)" if other else ""), ""]
    if inp.waste is None:
        return [*out, f"_Not available: {md_text(inp.waste_note, None)}._", ""]
    out += [
        "Idle cost = cost per GPU-hour × idle GPU-hours (1 − utilisation) over allocated device-hours; "
        "paid capacity with no samples at all is listed as unobserved, not counted as idle.",
        "",
    ]
    if "idle" in charts:
        out += [f"![Idle GPUs by team]({charts['idle']})", ""]
    for by, label in (("team", "Team"), ("substrate", "Substrate")):
        if by in inp.waste.by:
            out += [f"### By {by}", "", _waste_table(inp.waste.by[by], label, cur), ""]
    return out


def _supply_section(inp: ReportInputs, cur: str, charts: dict[str, str]) -> list[str]:
    out = ["## Supply curve", ""]
    if inp.supply is not None and "supply" in charts:
        s = inp.supply
        unit = md_text(s.unit)
        text = (
            f"Every compliant destination of **{md_text(s.workload)}** (the workload with the largest planned cost), "
            f"priced in {cur} per {unit} of usable output (price × preference × NETC multiplier ÷ throughput), "
            "cheapest first: sunk and prepaid capacity fills first, spot sits in the middle, on-demand and PAYG APIs "
            "are the peakers."
        )
        if s.clearing_price is not None and s.demand_units is not None:
            text += (
                f" Alone on the fleet at {number(s.demand_units, 1)} {unit} per hour, it clears at "
                f"**{_pu(s.clearing_price, cur)} per {unit}**; the plan's clearing prices below also account "
                "for the other workloads competing for the same capacity."
            )
        out += [text, "", f"![Merit-order supply curve for {md_text(s.workload)}]({charts['supply']})", ""]
    else:
        out += [f"_Supply-curve chart not available: {md_text(inp.supply_note, None)}._", ""]
    prices = clearing_price_rows(inp.plan)
    if prices:
        rows = [[md_text(w), unit_price(mean, cur), unit_price(peak, cur)] for w, mean, peak in prices]
        headers = ["Workload", "Clearing price per unit (mean)", "Peak block"]
        out += [
            "Clearing prices from the plan: the dual of each workload's demand constraint, i.e. what one more unit "
            "of its output would cost (deferrable work has one price for the horizon):",
            "",
            md_table(headers, rows, left_then_right(1, 2), trusted=True),
            "",
        ]
    return out


def _plan_section(inp: ReportInputs, cur: str, charts: dict[str, str]) -> list[str]:
    plan, t = inp.plan, inp.plan.totals
    by_kind = cost_by_kind(plan)
    hours = gpu_hours_by_kind(plan)
    has_base = all(b is not None for b, _ in by_kind.values()) and bool(plan.by_substrate)
    base_label = f"Baseline, {BASELINE_LABEL.get(extra_field(t, 'baseline_source'), 'source unknown')}"
    out = ["## The plan", "", "### Mix by substrate kind", ""]
    rows = []
    for kind, (base, planned) in by_kind.items():
        share = planned / t.planned_cost if t.planned_cost else None
        row = [md_text(KIND_LABEL.get(kind, kind)), number(hours.get(kind, 0.0))]
        if has_base:
            assert base is not None  # has_base: every kind has a baseline
            row += [money(base, cur), money(planned, cur), money(planned - base, cur, signed=True)]
        else:
            row += [money(planned, cur)]
        rows.append([*row, pct(share)])
    total = ["**Total**", f"**{number(sum(hours.values()))}**"]
    if has_base:
        base_total = sum(b or 0.0 for b, _ in by_kind.values())
        total += [f"**{money(base_total, cur)}**", f"**{money(t.planned_cost, cur)}**"]
        total += [f"**{money(t.planned_cost - base_total, cur, signed=True)}**"]
    else:
        total += [f"**{money(t.planned_cost, cur)}**"]
    rows.append([*total, "**100.0%**"])
    headers = (
        ["Substrate kind", "GPU-hours"] + ([base_label, "Plan", "Δ"] if has_base else ["Plan"]) + ["Share of plan"]
    )
    out += [md_table(headers, rows, left_then_right(1, len(headers) - 1), trusted=True), ""]
    if "mix" in charts:
        out += [f"![Cost by substrate kind: baseline vs plan]({charts['mix']})", ""]

    out += ["### Commitments to buy", ""]
    if plan.commitments:
        crow = [[md_text(c.substrate), str(c.blocks), number(c.gpus), money(c.cost, cur)] for c in plan.commitments]
        gpus, cost = sum(c.gpus for c in plan.commitments), sum(c.cost for c in plan.commitments)
        crow.append(["**Total**", "", f"**{number(gpus)}**", f"**{money(cost, cur)}**"])
        headers = ["Substrate", "Blocks", "GPUs", "Cost over the horizon"]
        out += [md_table(headers, crow, left_then_right(1, 3), trusted=True), ""]
    else:
        out += ["The plan buys no new commitments.", ""]

    out += ["### Savings", ""]
    if t.baseline_cost is not None and t.savings is not None:
        out += [
            f"Baseline {_pm(t.baseline_cost, cur)} − plan {_pm(t.planned_cost, cur)} = "
            f"**{_pm(t.savings, cur)}** ({pct(None if t.savings_pct is None else t.savings_pct / 100)})."
            + (" Reliability penalties steer the plan but are not money." if t.penalty else ""),
            "",
        ]
        by = plan.savings_by_lever
        if by is not None:
            srows = [
                [md_text(r.label), money(r.saving, cur), md_text(evidence_words(r.evidence, r.measured_share), None)]
                for r in sorted(by.levers, key=lambda r: (not r.applied, -r.saving))
            ]
            srows.append([md_text(RESIDUAL_LABEL), money(by.residual, cur), md_text(by.residual_basis, None)])
            attributed = by.residual + sum(r.saving for r in by.levers)
            srows.append(["**Total**", f"**{money(attributed, cur)}**", ""])
            how = (
                "Shapley values over the levers the plan uses"
                if by.method == "shapley"
                else "levers switched on one at a time (" + ", ".join(by.order) + ")"
            )
            out += [
                f"Savings by the lever that earned them ({how}; {by.solves} re-solves of the plan, "
                "docs/economics.md §6):",
                "",
                md_table(["Lever", "Saving", "Evidence"], srows, ["left", "right", "left"], trusted=True),
                "",
            ]
        elif plan.savings_breakdown is not None:
            out += ["_Savings by lever not available: the plan predates the attribution._", ""]
        change = plan.cost_change_by_kind
        if change:
            krows = [[md_text(KIND_LABEL.get(k, k)), money(v, cur, signed=True)] for k, v in change.items()]
            out += [
                "Cost change by substrate kind (where the cost lands, not what earned it):",
                "",
                md_table(["Substrate kind", "Plan − baseline"], krows, left_then_right(1, 1), trusted=True),
                "",
            ]
        if "waterfall" in charts:
            out += [f"![Savings waterfall from baseline to plan]({charts['waterfall']})", ""]
    else:
        out += ["_Not available: the plan has no baseline cost._", ""]

    out += ["### Workloads", ""]
    per: dict[str, dict[str, Any]] = defaultdict(lambda: {"units": 0.0, "gpu_hours": 0.0, "cost": 0.0, "subs": set()})
    for a in plan.allocations:
        w = per[a.workload]
        w["units"] += a.units
        w["gpu_hours"] += a.gpu_hours
        w["cost"] += a.cost
        w["subs"].add(a.substrate)
    wrows = []
    for name, w in sorted(per.items(), key=lambda kv: -kv[1]["cost"]):
        unit_cost = w["cost"] / w["units"] if w["units"] else None
        subs = ", ".join(md_text(s) for s in sorted(w["subs"])[:4]) + (" …" if len(w["subs"]) > 4 else "")
        numbers = [number(w["units"]), number(w["gpu_hours"]), money(w["cost"], cur), unit_price(unit_cost, cur)]
        wrows.append([md_text(name), *numbers, subs])
    headers = ["Workload", "Units", "GPU-hours", "Usage cost", "Cost per unit", "Runs on"]
    out += [
        md_table(headers, wrows, [*left_then_right(1, 4), "left"], trusted=True),
        "",
        "Usage cost is the marginal cost of the GPU-hours and API units each workload uses (congestion and NETC "
        "included); commitments and sunk capacity are shown in the mix above.",
        "",
    ]
    return out


def _spot_section(inp: ReportInputs, cur: str) -> list[str]:
    plan = inp.plan
    out = ["## Spot exposure and NETC", ""]
    spot = [a for a in plan.allocations if a.kind == "spot"]
    total_hours = sum(a.gpu_hours for a in plan.allocations)
    total_cost = sum(a.cost for a in plan.allocations)
    if not spot:
        return [*out, "The plan puts no work on spot capacity.", ""]
    spot_hours = sum(a.gpu_hours for a in spot)
    spot_cost = sum(a.cost for a in spot)
    overhead = sum(float(extra_field(a, "netc_overhead", 0.0)) for a in spot)
    out += [
        f"Spot carries {number(spot_hours)} GPU-hours ({pct(spot_hours / total_hours if total_hours else None)} of "
        f"planned GPU-hours) and {_pm(spot_cost, cur)} ({pct(spot_cost / total_cost if total_cost else None)} of usage "
        f"cost). Preemptions add an expected **{_pm(overhead, cur)}** of lost work, checkpoint writes, resumes and "
        "resume fees (NETC: a useful GPU-hour costs C·W + λ·W·F instead of C, with W = (1 + δ/τ) / (1 − λ·(t_lost + "
        "R)); see docs/economics.md §5); the price per unit is the one `finops stack` and `finops netc` print.",
        "",
    ]
    rows = []
    for a in sorted(spot, key=lambda a: -a.cost):
        over = float(extra_field(a, "netc_overhead", 0.0))
        clean = a.cost - over
        w = a.cost / clean if clean > 0 else None
        price = unit_price(extra_field(a, "price_per_unit"), cur)
        amounts = [price, money(a.cost, cur), money(over, cur), "—" if w is None else f"{w:.3f}"]
        rows.append([md_text(a.workload), md_text(a.substrate), number(a.gpu_hours), *amounts])
    headers = ["Workload", "Spot substrate", "GPU-hours", "Price per unit", "Cost", "NETC overhead", "× base price"]
    return [*out, md_table(headers, rows, left_then_right(2, 5), trusted=True), ""]


def _risks_section(inp: ReportInputs, cur: str) -> list[str]:
    plan, s = inp.plan, inp.plan.solver
    items = []
    waste_totals = _waste_totals(inp)
    coverage = None if waste_totals is None else waste_totals.get("coverage")
    if coverage is not None and waste_totals is not None:
        basis = waste_totals.get("coverage_basis")
        text = f"**Utilisation coverage:** {pct(coverage)} of GPU-hours are covered by the utilisation trace"
        text += f" (basis: {md_text(basis)})" if basis else ""
        unobserved = waste_totals.get("unobserved_gpu_hours") or 0.0
        if unobserved:
            text += (
                f"; {number(unobserved)} paid GPU-hours had no samples at all "
                f"({_pm(waste_totals.get('unobserved_cost'), cur)}), reported as unobserved, not as idle"
            )
        unpriced = waste_totals.get("unpriced_device_hours") or 0.0
        if unpriced:
            text += f"; {number(unpriced)} device-hours could not be priced"
        items.append(text + ".")
    else:
        items.append("**Utilisation coverage:** not measured (no utilisation trace in the store).")
    _, end = horizon_bounds(plan)
    if inp.price_feeds:
        ages = []
        for provider, ts in sorted(inp.price_feeds.items()):
            age = "" if end is None else f", {(end - ts).total_seconds() / 86400:.1f} days before the horizon ends"
            ages.append(f"{md_text(provider)} {ts:%Y-%m-%d %H:%M} UTC{age}")
        items.append("**Price-feed age:** latest spot-price sample per provider: " + "; ".join(ages) + ".")
    else:
        items.append("**Price-feed age:** no spot-price feed in the store; spot prices are fleet.yaml's fixed prices.")
    gap = "unknown" if s.mip_gap is None else pct(s.mip_gap, decimals=2)
    items.append(
        f"**Solver:** {md_text(s.name)} finished {md_text(s.status)} in {s.seconds:.1f} s with MIP gap {gap}"
        + ("" if s.best_bound is None else f" (best bound {_pm(s.best_bound, cur)})")
        + "; the plan's cost is within that gap of the cheapest compliant plan."
    )
    source = extra_field(plan.totals, "baseline_source")
    if source == "merit_order":
        items.append(
            "**Baseline (estimate):** no billing matched the fleet in the horizon, so the baseline is an estimate — a "
            "greedy merit-order dispatch of the same demand — not what was actually paid."
        )
    elif source == "billing":
        billed = extra_field(plan.totals, "baseline_billed_cost")
        items.append(
            "**Baseline:** amortised cost (EffectiveCost) of the billing lines matched to the fleet's substrates over "
            "the horizon (prepaid commitments counted where consumed)"
            + (f"; as billed (BilledCost) the same lines come to {_pm(billed, cur)}." if billed is not None else ".")
        )
    coverage = bill_coverage(plan)
    if coverage is not None:
        ws = "; ".join(f"{md_text(w)} {_pm(c, cur)}" for w, c in list(coverage["workloads"].items())[:5])
        items.append(
            f"**Partial bill:** no billing line matched {', '.join(md_text(x) for x in coverage['unbilled'])} "
            f"({_of_substrates(coverage, verb=False)}), which "
            f"{'carries' if len(coverage['unbilled']) == 1 else 'carry'} "
            f"{_pm(coverage['planned_cost'], cur)} ({pct(coverage['share'])}) of the planned cost that the baseline "
            f"has no bill for, so the savings compare unlike amounts by that much. Workloads there: {ws}."
        )
    risky = latency_critical_on_spot(plan)
    if risky and extra_field(plan, "mode", "cost") == "cost":
        rows = "; ".join(f"{md_text(w)} {number(h)} GPU-hours ({_pm(c, cur)})" for w, (h, c) in risky.items())
        items.append(
            f"⚠️ **Latency-critical work on spot:** {rows}. The plan was solved in cost mode, which lets "
            "latency-critical work run on preemptible capacity; a preemption interrupts it. Plan with "
            "`--mode reliability` to steer it off spot."
        )
    short = float(extra_field(plan.totals, "merit_order_unserved_units", 0.0) or 0.0)
    if short > 0:
        items.append(
            f"**Merit-order reference:** the greedy dispatch leaves {number(short, 1)} units unserved (it honours "
            "capacity, congestion, parallelism caps and compliance but fills cheapest-first without looking ahead); "
            "it is never a baseline while it leaves work undone, and no saving is computed against it."
        )
    unserved = sum(u.units for u in plan.unserved)
    if unserved:
        items.append(f"**Unserved demand:** {number(unserved, 1)} units could not be served by compliant capacity.")
    if plan.totals.penalty:
        items.append(
            f"**Reliability mode:** {_pm(plan.totals.penalty, cur)} of penalties steer latency-critical work off "
            "spot; they are not money and are not in the planned cost."
        )
    items.append(
        f"**Horizon:** {md_text(plan.horizon.start)} + {plan.horizon.hours} h in {plan.horizon.blocks} "
        "load-duration blocks; demand is the workloads file's, prices the fleet file's (resolved from feeds where "
        "configured)."
    )
    items += [md_text(n, None) for n in inp.notes]
    return ["## Risks and assumptions", "", *[f"- {i}" for i in items], ""]


def prices_rows(plan: PlanDocument) -> list[list[str]]:
    """One row per substrate price the plan used (``plan.prices``), as the report and ``finops plan`` show it."""
    rows = []
    for p in plan.prices:
        window = ""
        if p.window_start and p.window_end:
            window = f"{p.window_start[:16].replace('T', ' ')} → {p.window_end[:16].replace('T', ' ')}"
        fx = f"{p.quoted:.4f} {p.quoted_currency} × {p.fx_rate:g}" if p.fx_rate not in (None, 1.0) else ""
        value = "per unit" if p.value is None else f"{p.value:,.4f}"
        samples = "" if p.samples is None else f"{p.samples:,}"
        age = "" if p.age_days is None else f"{p.age_days:,}"
        source = p.source.replace("_", " ")
        rows.append(
            [p.substrate, source, value, p.currency, p.statistic or "", window, samples, p.product or "", age, fx]
        )
    return rows


PRICES_HEADERS = ["Substrate", "Source", "Price/GPU-h", "Currency", "Statistic", "Window (UTC)", "Samples",
                  "Product", "Age (days)", "FX"]  # fmt: skip


def _prices_section(inp: ReportInputs) -> list[str]:
    plan = inp.plan
    if not plan.prices:
        return []
    align: list[Align] = ["left", "left", "right", "left", "left", "left", "right", "left", "right", "left"]
    out = ["## Prices used", "", md_table(PRICES_HEADERS, prices_rows(plan), align), ""]
    if plan.fx:
        rates = ", ".join(f"1 {k[:3]} = {v:g} {k[4:]}" for k, v in sorted(plan.fx.items()))
        out += [f"Exchange rates applied: {md_text(rates)}.", ""]
    out += [
        "One price per substrate for every command (stack, netc, plan, dispatch, this report): a feed's window "
        "ends at the earlier of the horizon's end and its newest price.",
        "",
    ]
    return out


def render_markdown(inp: ReportInputs, charts: dict[str, str] | None = None) -> str:
    """The report as markdown. ``charts`` maps chart keys (``supply``, ``idle``, ``mix``, ``waterfall``) to the
    relative file names to link; keys absent → that chart is not shown."""
    charts = charts or {}
    plan = inp.plan
    cur = plan.currency.upper()
    title = md_text(inp.title, 200) if inp.title else f"GPU fleet FinOps report — {period_label(plan)}"
    gap = "" if plan.solver.mip_gap is None else f", gap {pct(plan.solver.mip_gap, decimals=2)}"
    header = (
        f"_Horizon {md_text(plan.horizon.start)} + {plan.horizon.hours} h ({plan.horizon.blocks} blocks) · "
        f"currency {md_text(cur)} · mode {md_text(extra_field(plan, 'mode', 'cost'))} · "
        f"solver {md_text(plan.solver.name)} ({md_text(plan.solver.status)}{gap})_"
    )
    lines = [f"# {title}", "", header, ""]
    lines += _summary(inp, cur)
    lines += _waste_section(inp, cur, charts)
    lines += _supply_section(inp, cur, charts)
    lines += _plan_section(inp, cur, charts)
    lines += _spot_section(inp, cur)
    lines += _prices_section(inp)
    lines += _risks_section(inp, cur)
    return "\n".join(lines).rstrip("\n") + "\n"

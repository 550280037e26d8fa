"""The leadership report: one markdown document plus PNG charts beside it (``finops report``).

Sections: executive summary (spend, idle waste, planned cost, savings, the three biggest levers), idle
waste by team and substrate, the supply curve, the plan (mix by substrate kind, commitments to buy,
savings waterfall, workloads), spot exposure and NETC, risks and assumptions (utilisation coverage,
price-feed age, solver gap).

Every number about the plan is read from the plan document (``finops plan --out plan.json``), so the
report and the JSON agree by construction; idle waste comes from the store (``report.waste``) and the
supply curve from the merit order (``report.charts``) when those inputs are given. A section whose
inputs are missing says so ("not available: ...") rather than disappearing.

:func:`render_markdown` is pure (inputs → text); :func:`write_report` draws the charts and writes all
files atomically: charts first into a staging directory, then renamed into place, the report last.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from finops_cli.atomic import check_output
from finops_cli.errors import InputError
from finops_cli.report.escape import Align, left_then_right, md_table, md_text
from finops_cli.report.format import money, number, pct, unit_price
from finops_cli.schema.plan import PlanDocument

#: Philly (Jeon et al., USENIX ATC 2019): ~52 % mean GPU utilisation in a production DL cluster.
PHILLY_UTILIZATION = 0.52
KIND_ORDER = ["owned", "reserved", "spot", "on_demand", "api"]
KIND_LABEL = {"owned": "owned", "reserved": "reserved", "spot": "spot", "on_demand": "on-demand", "api": "API (PAYG)"}
LEVER_SHORT = {
    "right_sizing": "right-sizing",
    "commitments": "commitments",
    "spot": "spot",
    "api": "APIs",
    "reliability": "reliability",
    "residual": "prices + placement",
}
#: How a lever's figure is described in prose, by its evidence (docs/economics.md §6)
EVIDENCE_WORDS = {
    "measured": "idle measured from utilisation",
    "inferred": "idle inferred from demand profiles, not measured",
    "modelled": "modelled by re-solving the plan",
    "not_measured": "not measured",
    "not_applied": "not used by this plan",
}
#: Wording of the baseline by ``totals.baseline_source``: what the data is, never more.
BASELINE_LABEL = {"billing": "amortised (EffectiveCost)", "merit_order": "estimate (merit order)"}
CHART_NAMES = {
    "supply": "supply-curve",
    "idle": "idle-by-team",
    "mix": "baseline-vs-plan",
    "waterfall": "savings-waterfall",
}


@dataclass
class WasteInputs:
    """Idle waste from the store, in ``finops waste --format json``'s shape, per grouping (``team``, ``substrate``)."""

    by: dict[str, dict[str, Any]]  # grouping → {totals{...}, groups[{key, device_hours, idle_fraction, idle_cost}]}
    month: str | None = None  # YYYY-MM the utilisation is from (may differ from the plan's month)


@dataclass
class SupplyInputs:
    """The merit-order chart of one workload, drawn by :func:`finops_cli.report.charts.merit_order_chart`."""

    stack: Mapping[str, Any]  # the workload's merit order in ``Stack.as_dict()``'s shape (plain data: it is pickled)
    currency: str
    workload: str
    unit: str
    clearing_price: float | None
    demand_units: float | None


@dataclass
class PriceFeedInfo:
    """Latest spot-price sample per provider in the store (price-feed age)."""

    latest: dict[str, datetime]


@dataclass
class ReportInputs:
    plan: PlanDocument
    title: str | None = None
    waste: WasteInputs | None = None
    waste_note: str = "no utilisation trace in the store (run finops ingest utilization, and billing for prices)"
    supply: SupplyInputs | None = None
    supply_note: str = "needs --fleet and --workloads"
    price_feeds: PriceFeedInfo | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class ReportResult:
    """What ``finops report`` wrote: the markdown file and the charts beside it (paths)."""

    markdown_path: Path | None
    chart_paths: list[Path]
    markdown: str
    unavailable: list[str]
    plan: PlanDocument | None = None
    horizon_note: str = ""  # the plan's horizon, for stderr (every command says which month it describes)
    warnings: list[str] = field(default_factory=list)  # utilisation / billing / horizon in different months


# --- numbers from the plan -------------------------------------------------------------------------


def horizon_bounds(plan: PlanDocument) -> tuple[datetime | None, datetime | None]:
    try:
        start = datetime.fromisoformat(plan.horizon.start.replace("Z", "+00:00"))
    except ValueError:
        return None, None
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    return start, start + timedelta(hours=plan.horizon.hours)


def period_label(plan: PlanDocument) -> str:
    start, _ = horizon_bounds(plan)
    if start is None:
        return md_text(plan.horizon.start)
    if plan.horizon.hours in (672, 696, 720, 744) and start.day == 1 and start.hour == 0:
        return f"{start:%B %Y}"
    return f"{start:%Y-%m-%d} + {plan.horizon.hours} h"


def cost_by_kind(plan: PlanDocument) -> dict[str, tuple[float | None, float]]:
    """(baseline, planned) cost per substrate kind: from ``by_substrate`` (sunk and commitments included)
    when the planner wrote it, else from allocations + commitments."""
    out: dict[str, list[float | None]] = defaultdict(lambda: [0.0, 0.0])
    if plan.by_substrate:
        for row in plan.by_substrate:
            cell = out[row.kind]
            cell[0] = None if row.baseline_cost is None or cell[0] is None else cell[0] + row.baseline_cost
            cell[1] = (cell[1] or 0.0) + row.planned_cost
    else:
        kinds = {a.substrate: a.kind for a in plan.allocations}
        for a in plan.allocations:
            out[a.kind][0] = None
            out[a.kind][1] = (out[a.kind][1] or 0.0) + a.cost
        for c in plan.commitments:
            kind = kinds.get(c.substrate, "reserved")
            out[kind][0] = None
            out[kind][1] = (out[kind][1] or 0.0) + c.cost
    order = {k: i for i, k in enumerate(KIND_ORDER)}
    return {k: (v[0], float(v[1] or 0.0)) for k, v in sorted(out.items(), key=lambda kv: (order.get(kv[0], 99), kv[0]))}


def gpu_hours_by_kind(plan: PlanDocument) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for a in plan.allocations:
        out[a.kind] += a.gpu_hours
    return dict(out)


def levers(plan: PlanDocument) -> list[tuple[str, float]]:
    """The saving by lever, biggest first (``savings_by_lever``; Σ with the residual = ``totals.savings``).

    Only levers the plan applied are listed (a lever it did not use saves exactly 0), each named with the
    evidence it rests on; the residual (what the bill paid beyond the model of it) is its own row. A plan
    written before the attribution has none: its per-kind deltas are where cost landed, never levers.
    """
    by = plan.savings_by_lever
    if by is None:
        return []
    items = [(lever_label(r.label, r.evidence, r.measured_share), float(r.saving)) for r in by.levers if r.applied]
    items.sort(key=lambda kv: -kv[1])
    if by.residual:
        items.append((RESIDUAL_LABEL, float(by.residual)))
    return items


RESIDUAL_LABEL = "not a lever: the bill's prices and placement"


def lever_label(label: str, evidence: str, share: float | None = None) -> str:
    """A lever in words with its evidence: ``right-sizing … (idle measured from utilisation)``."""
    return f"{label} ({evidence_words(evidence, share)})"


def evidence_words(evidence: str, share: float | None = None) -> str:
    """What a lever rests on, in words; idle partly measured says how much (never "measured" for all of it)."""
    if evidence == "inferred" and share is not None and share > 0:
        return f"idle measured from utilisation on {pct(share, decimals=0)} of the paid GPU-hours, inferred on the rest"
    return EVIDENCE_WORDS.get(evidence, evidence)


def non_interruptible_spot(plan: PlanDocument) -> float:
    """Planned cost of work not marked interruptible that the plan puts on spot (unknown flag: not counted)."""
    return sum(a.cost for a in plan.allocations if a.kind == "spot" and _extra(a, "interruptible") is False)


def latency_critical_on_spot(plan: PlanDocument) -> dict[str, tuple[float, float]]:
    """Latency-critical workloads on spot: workload → (GPU-hours, cost)."""
    out: dict[str, tuple[float, float]] = {}
    for a in plan.allocations:
        if a.kind == "spot" and _extra(a, "slo") == "latency_critical":
            h, c = out.get(a.workload, (0.0, 0.0))
            out[a.workload] = (h + a.gpu_hours, c + a.cost)
    return out


def bill_coverage(plan: PlanDocument) -> dict[str, Any] | None:
    """When the baseline is billing: how much of the plan sits on substrates no billing line matched.

    Returns None when the baseline is not billing or every substrate the plan uses was billed; else
    ``{unbilled: [substrate], planned_cost, share, workloads: {workload: cost}}``: the comparison is
    partial by that much (the baseline has no bill for those substrates, the plan pays for them).
    """
    if _extra(plan.totals, "baseline_source") != "billing" or not plan.by_substrate:
        return None
    flags = {s.substrate: _extra(s, "billed") for s in plan.by_substrate}
    if all(v is None for v in flags.values()):  # plan written before the flag: a zero baseline means no bill
        flags = {s.substrate: bool(s.baseline_cost) for s in plan.by_substrate}
    unbilled = sorted(s.substrate for s in plan.by_substrate if s.planned_cost and flags.get(s.substrate) is False)
    if not unbilled:
        return None
    cost = sum(s.planned_cost for s in plan.by_substrate if s.substrate in unbilled)
    workloads: dict[str, float] = defaultdict(float)
    for a in plan.allocations:
        if a.substrate in unbilled:
            workloads[a.workload] += a.cost
    total = plan.totals.planned_cost
    return {
        "unbilled": unbilled,
        "planned_cost": cost,
        "share": cost / total if total else None,
        "workloads": dict(sorted(workloads.items(), key=lambda kv: -kv[1])),
        "substrates": len(flags),
    }


def _extra(obj: Any, name: str, default: Any = None) -> Any:
    """A field the planner may add (extra fields are allowed in plan schema 1)."""
    return getattr(obj, name, None) if getattr(obj, name, None) is not None else default


# --- sections ---------------------------------------------------------------------------------------


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
    source = _extra(t, "baseline_source")
    parts = []
    if t.baseline_cost is not None and source == "billing":
        text = f"In {period} the estate's GPU work cost **{_pm(t.baseline_cost, cur)}** amortised (EffectiveCost)"
        billed = _extra(t, "baseline_billed_cost")
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
    other = _waste_month(inp)
    if other is not None:
        parts.append(f"Idle waste below is measured in {other}, the latest month with utilisation, not in {period}.")
    waste_totals = _waste_totals(inp)
    if waste_totals is not None:
        idle_cost = waste_totals.get("idle_cost")
        idle_fraction = waste_totals.get("idle_fraction")
        philly = f"Philly's production cluster ran at {pct(PHILLY_UTILIZATION, decimals=0)} utilisation"
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
    short = float(_extra(t, "merit_order_unserved_units", 0.0) or 0.0)
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
    if risky and _extra(plan, "mode", "cost") == "cost":
        names = ", ".join(md_text(w) for w in risky)
        parts.append(f"⚠️ Latency-critical work runs on spot ({names}): see Risks.")
    return ["## Executive summary", "", " ".join(parts), ""]


def _of_substrates(coverage: dict[str, Any], *, verb: bool = True) -> str:
    n, m = len(coverage["unbilled"]), coverage["substrates"]
    text = f"{n} of {m} substrate{'s' if m != 1 else ''}"
    return text + (" has" if n == 1 else " have") if verb else text


def _waste_month(inp: ReportInputs) -> str | None:
    """The utilisation month when it is not the plan's (then every idle number must say so)."""
    start, _ = horizon_bounds(inp.plan)
    if inp.waste is None or inp.waste.month is None or start is None or inp.waste.month == f"{start:%Y-%m}":
        return None
    return inp.waste.month


def _waste_totals(inp: ReportInputs) -> dict[str, Any] | None:
    if inp.waste is None:
        return None
    for doc in inp.waste.by.values():
        if doc.get("totals"):
            return doc["totals"]
    return None


def _waste_table(doc: dict[str, Any], label: str, cur: str) -> str:
    groups = sorted(doc.get("groups", []), key=lambda g: (-(g.get("idle_cost") or 0.0), -(g.get("idle_hours") or 0.0)))
    rows = [
        [
            md_text(g.get("key")),
            number(g.get("device_hours")),
            number(g.get("idle_hours")),
            pct(g.get("idle_fraction")),
            money(g.get("idle_cost"), cur),
        ]
        for g in groups
    ]
    t = doc.get("totals", {})
    total = [number(t.get("device_hours")), number(t.get("idle_hours")), pct(t.get("idle_fraction"))]
    rows.append(["**Total**", *(f"**{x}**" for x in [*total, money(t.get("idle_cost"), cur)])])
    return md_table(
        [label, "GPU-hours", "Idle GPU-hours", "Idle share", "Idle cost"],
        rows,
        ["left", "right", "right", "right", "right"],
        trusted=True,
    )


def _waste_section(inp: ReportInputs, cur: str, charts: dict[str, str]) -> list[str]:
    other = _waste_month(inp)
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


def clearing_price_rows(plan: PlanDocument) -> list[tuple[str, float, float]]:
    """(workload, mean, peak) clearing price per unit: the horizon price (block −1) of deferrable work, else the
    hours-weighted mean and the highest of the per-block prices."""
    per: dict[str, list[tuple[float, float]]] = defaultdict(list)
    horizon: dict[str, float] = {}
    for p in plan.clearing_prices:
        if p.block == -1:
            horizon[p.workload] = p.price_per_unit
        else:
            per[p.workload].append((p.hours, p.price_per_unit))
    rows = []
    for w in sorted(set(per) | set(horizon)):
        if w in horizon:
            rows.append((w, horizon[w], horizon[w]))
        else:
            hours = sum(h for h, _ in per[w])
            mean = sum(h * v for h, v in per[w]) / hours if hours else sum(v for _, v in per[w]) / len(per[w])
            rows.append((w, mean, max(v for _, v in per[w])))
    return rows


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
        out += [
            "Clearing prices from the plan: the dual of each workload's demand constraint, i.e. what one more unit "
            "of its output would cost (deferrable work has one price for the horizon):",
            "",
            md_table(
                ["Workload", "Clearing price per unit (mean)", "Peak block"],
                rows,
                ["left", "right", "right"],
                trusted=True,
            ),
            "",
        ]
    return out


def _plan_section(inp: ReportInputs, cur: str, charts: dict[str, str]) -> list[str]:
    plan, t = inp.plan, inp.plan.totals
    by_kind = cost_by_kind(plan)
    hours = gpu_hours_by_kind(plan)
    has_base = all(b is not None for b, _ in by_kind.values()) and bool(plan.by_substrate)
    base_label = f"Baseline, {BASELINE_LABEL.get(_extra(t, 'baseline_source'), 'source unknown')}"
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
        crow.append(["**Total**", "", f"**{number(sum(c.gpus for c in plan.commitments))}**", ""])
        crow[-1][3] = f"**{money(sum(c.cost for c in plan.commitments), cur)}**"
        out += [
            md_table(
                ["Substrate", "Blocks", "GPUs", "Cost over the horizon"],
                crow,
                ["left", "right", "right", "right"],
                trusted=True,
            ),
            "",
        ]
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
                md_table(["Substrate kind", "Plan − baseline"], krows, ["left", "right"], trusted=True),
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
        wrows.append(
            [
                md_text(name),
                number(w["units"]),
                number(w["gpu_hours"]),
                money(w["cost"], cur),
                unit_price(unit_cost, cur),
                subs,
            ]
        )
    out += [
        md_table(
            ["Workload", "Units", "GPU-hours", "Usage cost", "Cost per unit", "Runs on"],
            wrows,
            ["left", "right", "right", "right", "right", "left"],
            trusted=True,
        ),
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
    overhead = sum(float(_extra(a, "netc_overhead", 0.0)) for a in spot)
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
        over = float(_extra(a, "netc_overhead", 0.0))
        clean = a.cost - over
        w = a.cost / clean if clean > 0 else None
        rows.append(
            [
                md_text(a.workload),
                md_text(a.substrate),
                number(a.gpu_hours),
                unit_price(_extra(a, "price_per_unit"), cur),
                money(a.cost, cur),
                money(over, cur),
                "—" if w is None else f"{w:.3f}",
            ]
        )
    out += [
        md_table(
            ["Workload", "Spot substrate", "GPU-hours", "Price per unit", "Cost", "NETC overhead", "× base price"],
            rows,
            ["left", "left", "right", "right", "right", "right", "right"],
            trusted=True,
        ),
        "",
    ]
    return out


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
    if inp.price_feeds is not None and inp.price_feeds.latest:
        ages = []
        for provider, ts in sorted(inp.price_feeds.latest.items()):
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
    source = _extra(plan.totals, "baseline_source")
    if source == "merit_order":
        items.append(
            "**Baseline (estimate):** no billing matched the fleet in the horizon, so the baseline is an estimate — a "
            "greedy merit-order dispatch of the same demand — not what was actually paid."
        )
    elif source == "billing":
        billed = _extra(plan.totals, "baseline_billed_cost")
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
    if risky and _extra(plan, "mode", "cost") == "cost":
        rows = "; ".join(f"{md_text(w)} {number(h)} GPU-hours ({_pm(c, cur)})" for w, (h, c) in risky.items())
        items.append(
            f"⚠️ **Latency-critical work on spot:** {rows}. The plan was solved in cost mode, which lets "
            "latency-critical work run on preemptible capacity; a preemption interrupts it. Plan with "
            "`--mode reliability` to steer it off spot."
        )
    short = float(_extra(plan.totals, "merit_order_unserved_units", 0.0) or 0.0)
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
        rows.append(
            [
                p.substrate,
                p.source.replace("_", " "),
                "per unit" if p.value is None else f"{p.value:,.4f}",
                p.currency,
                p.statistic or "",
                window,
                "" if p.samples is None else f"{p.samples:,}",
                p.product or "",
                "" if p.age_days is None else f"{p.age_days:,}",
                fx,
            ]
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
        f"currency {md_text(cur)} · mode {md_text(_extra(plan, 'mode', 'cost'))} · "
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


# --- writing ---------------------------------------------------------------------------------------


def _chart_calls(inp: ReportInputs) -> dict[str, tuple[Any, tuple[Any, ...], dict[str, Any]]]:
    """Every chart whose inputs exist: {key: (drawing function, arguments, keyword arguments)}, in report order."""
    from finops_cli.report import charts, figures  # matplotlib (~0.6 s): only when a report draws

    plan, cur = inp.plan, inp.plan.currency.upper()
    calls: dict[str, tuple[Any, tuple[Any, ...], dict[str, Any]]] = {}
    if inp.waste is not None and inp.waste.by.get("team", {}).get("groups"):
        groups = inp.waste.by["team"]["groups"]
        priced = any(g.get("idle_cost") is not None for g in groups)
        calls["idle"] = (
            figures.idle_by_team_chart,
            (
                [str(g.get("key")) for g in groups],
                [float(g.get("idle_cost" if priced else "idle_hours") or 0.0) for g in groups],
            ),
            {"currency": cur if priced else None, "period": _waste_month(inp) or period_label(plan)},
        )
    if inp.supply is not None:
        calls["supply"] = (charts.merit_order_chart, (inp.supply.stack,), {"currency": inp.supply.currency})
    by_kind = cost_by_kind(plan)
    if by_kind:
        known = all(b is not None for b, _ in by_kind.values())
        base_label = f"baseline, {BASELINE_LABEL.get(_extra(plan.totals, 'baseline_source'), 'source unknown')}"
        calls["mix"] = (
            figures.baseline_vs_plan_chart,
            (
                [KIND_LABEL.get(k, k) for k in by_kind],
                [b or 0.0 for b, _ in by_kind.values()] if known else None,
                [p for _, p in by_kind.values()],
            ),
            {"currency": cur, "baseline_label": base_label},
        )
    t = plan.totals
    if t.baseline_cost is not None:
        calls["waterfall"] = (
            figures.savings_waterfall_chart,
            (t.baseline_cost, waterfall_steps(plan), t.planned_cost),
            {"currency": cur},
        )
    return calls


def waterfall_steps(plan: PlanDocument) -> list[tuple[str, float]]:
    """The savings waterfall's steps: levers the plan applied and the residual (older plans: none)."""
    by = plan.savings_by_lever
    if by is None:
        return []
    steps = [(LEVER_SHORT[r.lever], float(r.saving)) for r in by.levers if r.applied]
    if by.residual:
        steps.append((LEVER_SHORT["residual"], float(by.residual)))
    return steps


def _draw_charts(inp: ReportInputs, stage: Path, stem: str) -> tuple[dict[str, str], list[str]]:
    """Draw the charts into ``stage``: {key: file name} drawn, and what was unavailable (a supply curve that could
    not be drawn says why; any other failure is raised)."""
    drawn: dict[str, str] = {}
    for key, (draw, args, kwargs) in _chart_calls(inp).items():
        name = f"{stem}-{CHART_NAMES[key]}.png"
        try:
            draw(*args, **kwargs, path=stage / name)
        except InputError as exc:
            if key != "supply":
                raise
            inp.supply_note = str(exc)
            continue
        drawn[key] = name
    unavailable = []
    if "supply" not in drawn:
        unavailable.append(f"supply curve: {inp.supply_note}")
    if "idle" not in drawn:
        unavailable.append(f"idle waste: {inp.waste_note}")
    return {key: drawn[key] for key in CHART_NAMES if key in drawn}, unavailable  # in the report's order


def check_report_path(out: Path) -> None:
    """``out`` can take the report and its charts beside it (not a device or a pipe)."""
    if check_output(out) == "stream":
        raise InputError(
            "is a device or pipe; report --out writes charts beside the report, so give a file path", path=out
        )


def write_report(inp: ReportInputs, out: Path | None) -> ReportResult:
    """Draw the charts and write the report atomically beside ``out`` (charts named ``<stem>-<chart>.png``).

    The charts and the report are written into a private staging folder beside ``out`` first, then renamed into
    place: the charts, then the report. With ``out=None`` nothing is written and no charts are linked (markdown
    to stdout only).
    """
    if out is None:
        return ReportResult(None, [], render_markdown(inp), [], inp.plan)
    out = Path(out)
    check_report_path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f".{out.stem}-", dir=out.parent))
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=out) from None
    try:
        charts, unavailable = _draw_charts(inp, stage, out.stem)
        text = render_markdown(inp, charts)
        (stage / out.name).write_text(text, encoding="utf-8")
        for name in charts.values():
            check_output(out.parent / name)  # a chart must not replace an input either (before any move)
        paths = []
        for name in charts.values():  # charts first, the report last: a reader never sees dangling links
            os.replace(stage / name, out.parent / name)
            paths.append(out.parent / name)
        os.replace(stage / out.name, out)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=out) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return ReportResult(out, paths, text, unavailable, inp.plan)

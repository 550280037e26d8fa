"""The leadership report's inputs and the plan's figures it reads (pure: a plan document in, numbers out).

:mod:`finops_cli.report.markdown` renders them, :mod:`finops_cli.report.write` draws the charts and writes the files.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from finops_cli.report.escape import md_text
from finops_cli.report.format import pct
from finops_cli.schema.plan import PlanDocument

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
class ReportInputs:
    plan: PlanDocument
    title: str | None = None
    waste: WasteInputs | None = None
    waste_note: str = "no utilisation trace in the store (run finops ingest utilization, and billing for prices)"
    supply: SupplyInputs | None = None
    supply_note: str = "needs the fleet and the workloads"
    price_feeds: dict[str, datetime] | None = None  # latest spot-price sample per provider in the store
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


RESIDUAL_LABEL = "not a lever: the bill's prices and placement"


def evidence_words(evidence: str, share: float | None = None) -> str:
    """What a lever rests on, in words; idle partly measured says how much (never "measured" for all of it)."""
    if evidence == "inferred" and share is not None and share > 0:
        return f"idle measured from utilisation on {pct(share, decimals=0)} of the paid GPU-hours, inferred on the rest"
    return EVIDENCE_WORDS.get(evidence, evidence)


def latency_critical_on_spot(plan: PlanDocument) -> dict[str, tuple[float, float]]:
    """Latency-critical workloads on spot: workload → (GPU-hours, cost)."""
    out: dict[str, tuple[float, float]] = {}
    for a in plan.allocations:
        if a.kind == "spot" and extra_field(a, "slo") == "latency_critical":
            h, c = out.get(a.workload, (0.0, 0.0))
            out[a.workload] = (h + a.gpu_hours, c + a.cost)
    return out


def bill_coverage(plan: PlanDocument) -> dict[str, Any] | None:
    """When the baseline is billing: how much of the plan sits on substrates no billing line matched.

    Returns None when the baseline is not billing or every substrate the plan uses was billed; else
    ``{unbilled: [substrate], planned_cost, share, workloads: {workload: cost}}``: the comparison is
    partial by that much (the baseline has no bill for those substrates, the plan pays for them).
    """
    if extra_field(plan.totals, "baseline_source") != "billing" or not plan.by_substrate:
        return None
    flags = {s.substrate: extra_field(s, "billed") for s in plan.by_substrate}
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


def extra_field(obj: Any, name: str, default: Any = None) -> Any:
    """A field the planner may add (extra fields are allowed in plan schema 1)."""
    return getattr(obj, name, None) if getattr(obj, name, None) is not None else default


# --- sections ---------------------------------------------------------------------------------------


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

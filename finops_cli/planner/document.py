"""Assemble the plan document (:class:`~finops_cli.schema.plan.PlanDocument`, docs/planner.md) from a solved plan."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import pandas as pd

from finops_cli.core.baseline import BilledBaseline, cost_change_by_kind
from finops_cli.core.pricing import cost_per_unit
from finops_cli.core.rounding import percent_of
from finops_cli.planner import PlannerOutput
from finops_cli.planner.baseline import DispatchResult, sunk_by_substrate
from finops_cli.planner.frame import PlanFrame
from finops_cli.planner.levers import LeverAttribution
from finops_cli.schema.estate import Fleet
from finops_cli.schema.plan import (
    Allocation,
    Certification,
    ClearingPrice,
    Commitment,
    Horizon,
    LeverSaving,
    PlanDocument,
    SavingsByLever,
    SolverInfo,
    SubstrateCost,
    Totals,
    Unserved,
)


def _r(x: float, nd: int = 6) -> float:
    return round(float(x), nd)


def _node_sum(sums: pd.DataFrame | None, sid: str, column: str) -> float | None:
    """A node substrate's total ``column`` (None for substrates not provisioned in whole nodes)."""
    return _r(sums.loc[sid, column], 4) if sums is not None and sid in sums.index else None


def cents(values: list[float], total: float) -> list[float]:
    """``values`` rounded to cents so that they add up to ``total`` (itself rounded to cents) exactly.

    Largest remainder: each value is rounded down to the cent, and the cents still missing go one each to the
    values that lost most in rounding (ties: the earlier value)."""
    target = round(total * 100)
    floors = [math.floor(v * 100 + 1e-9) for v in values]
    rest = sorted(range(len(values)), key=lambda i: (-(values[i] * 100 - floors[i]), i))
    missing = target - sum(floors)
    step = 1 if missing >= 0 else -1
    order = rest if missing >= 0 else rest[::-1]
    whole, extra = divmod(abs(missing), len(order))  # whole cents to every value, then one each to the first
    for k, i in enumerate(order):
        floors[i] += step * (whole + (k < extra))
    return [f / 100 for f in floors]


RESIDUAL_BASIS = {
    "billing": (
        "the bill minus the cheapest plan with every lever off (the bill's own pools, its idle paid, its spot use): "
        "the price difference (the bill's rates vs the fleet's prices) plus placement (the bill's work moved to "
        "cheaper pools it already used, at fleet prices)"
    ),
    "merit_order": (
        "the greedy merit-order reference minus the cheapest plan with the same options: better placement "
        "(deferrable work, shared capacity), not a lever"
    ),
}


def lever_document(attr: LeverAttribution, savings: float | None, source: str = "billing") -> SavingsByLever:
    """The attribution as plan.json carries it: terms in cents adding up to ``totals.savings`` exactly."""
    total = attr.savings if savings is None else savings
    parts = cents([attr.price_difference, attr.placement, *(t.saving for t in attr.terms)], total)
    rounded = [round(parts[0] + parts[1], 2), *parts[2:]]
    return SavingsByLever(
        method=attr.method,
        order=list(attr.order),
        levers=[
            LeverSaving(
                lever=t.lever,
                label=t.label,
                saving=r,
                evidence=t.evidence,
                basis=t.basis,
                applied=t.applied,
                measured_share=None if t.measured_share is None else round(t.measured_share, 4),
            )
            for t, r in zip(attr.terms, rounded[1:], strict=True)
        ],
        residual=rounded[0],
        residual_basis=RESIDUAL_BASIS.get(source, RESIDUAL_BASIS["billing"]),
        price_difference=parts[0],
        placement=parts[1],
        model_baseline_cost=_r(attr.model_baseline_cost, 2),
        solves=attr.solves,
        seconds=round(attr.seconds, 3),
        notes=attr.notes,
    )


def merit_unserved_note(merit: DispatchResult, frame: PlanFrame, use_billing: bool) -> str:
    """The words the plan and the report print when the greedy reference could not do all the work."""
    by_w = merit.unserved.groupby("workload")["units"].sum().sort_values(ascending=False)
    parts = ", ".join(f"{w} {u:,.4g} {frame.workloads[w].unit}" for w, u in by_w.head(5).items())
    more = f" and {len(by_w) - 5} more" if len(by_w) > 5 else ""
    tail = (
        "it is shown for reference only"
        if use_billing
        else "so it is not a baseline: no saving is claimed (give billing data for one)"
    )
    return (
        f"the greedy merit-order reference leaves {merit.unserved_units:,.4g} units of demand unserved "
        f"({parts}{more}); its cost covers less work than the plan, {tail}"
    )


def plan_document(
    out: PlannerOutput,
    fleet: Fleet,
    *,
    start: datetime,
    mode: str = "cost",
    billed: BilledBaseline | None = None,
) -> PlanDocument:
    """The JSON contract of ``finops plan``: totals, allocations, commitments, shortages, prices."""
    sol, frame = out.solution, out.frame
    planned = sol.planned_cost
    plan_by_s = sol.cost_by_substrate().add(sunk_by_substrate(frame), fill_value=0.0)  # with prepaid capacity
    merit = out.merit_order
    use_billing = billed is not None and billed.lines_matched > 0
    # a reference that leaves work unserved did less work than the plan: never a baseline, never a saving
    use_merit = not use_billing and merit.serves_all
    base_by_s: pd.Series | None = None
    if use_billing and billed is not None:
        base_by_s = billed.cost_by_substrate
    elif use_merit:
        base_by_s = merit.cost_by_substrate
    baseline = None if base_by_s is None else float(base_by_s.sum())
    savings = None if baseline is None else baseline - planned
    by_kind = None if base_by_s is None else cost_change_by_kind(base_by_s, plan_by_s, fleet)
    notes = []
    if not merit.serves_all:
        notes.append(merit_unserved_note(merit, frame, use_billing))
    kinds = {s.id: s.kind for s in fleet.substrates}
    base_ids = set() if base_by_s is None else set(base_by_s.index)
    ids = sorted(set(plan_by_s.index) | base_ids | set(merit.cost_by_substrate.index))
    node_sums = sol.nodes.groupby("substrate")[["node_hours", "rounding_cost"]].sum() if len(sol.nodes) else None
    by_substrate = [
        SubstrateCost(
            substrate=sid,
            kind=kinds.get(sid, "?"),
            planned_cost=_r(plan_by_s.get(sid, 0.0)),
            baseline_cost=None if base_by_s is None else _r(base_by_s.get(sid, 0.0)),
            merit_order_cost=_r(merit.cost_by_substrate.get(sid, 0.0)),
            billed=(sid in billed.cost_by_substrate.index) if use_billing and billed is not None else None,
            node_hours=_node_sum(node_sums, sid, "node_hours"),
            node_rounding_cost=_node_sum(node_sums, sid, "rounding_cost"),
        )
        for sid in ids
    ]
    info = sol.solve
    solver = SolverInfo(
        name=info.name,
        status=info.status,
        objective=None if info.objective is None else _r(info.objective),
        mip_gap=info.mip_gap,
        seconds=round(info.seconds, 4),
        best_bound=None if info.best_bound is None else _r(info.best_bound),
        build_seconds=round(out.build_seconds, 4),
        dual_status=None if sol.dual_solve is None else sol.dual_solve.status,
        variables=len(frame.rows),
        groups=len(frame.groups),
    )
    totals = Totals(
        planned_cost=_r(planned, 2),
        baseline_cost=None if baseline is None else _r(baseline, 2),
        savings=None if savings is None else _r(savings, 2),
        savings_pct=percent_of(savings, baseline) if savings is not None and baseline is not None else None,
        sunk_cost=_r(sol.sunk_cost, 2),
        penalty=_r(sol.penalty, 2),
        usage_cost=_r(sol.usage_cost, 2),
        commitment_cost=_r(sol.commitment_cost, 2),
        netc_overhead=_r(float(sol.allocations["netc_overhead"].sum()) if len(sol.allocations) else 0.0, 2),
        baseline_source="billing" if use_billing else ("merit_order" if use_merit else None),
        baseline_billed_cost=_r(billed.billed_cost, 2)
        if use_billing and billed is not None and billed.billed_cost is not None
        else None,
        merit_order_cost=_r(merit.cost, 2),
        merit_order_unserved_units=_r(merit.unserved_units, 4),
        node_rounding_cost=_r(sol.node_rounding_cost, 2) if not frame.nodes.empty else None,
        **_fractional(sol.fractional_nodes, frame.nodes.empty),
    )
    allocations = [
        Allocation(
            workload=r.workload,
            substrate=r.substrate,
            kind=r.kind,
            gpu_hours=_r(r.gpu_hours, 4),
            units=_r(r.units, 4),
            cost=_r(r.cost, 4),
            penalty=_r(r.penalty, 4),
            netc_overhead=_r(r.netc_overhead, 4),
            unit=frame.workloads[r.workload].unit,
            price_per_unit=_r(cost_per_unit(frame.substrates[r.substrate], frame.workloads[r.workload], fleet), 6),
            slo=frame.workloads[r.workload].slo,
            interruptible=frame.workloads[r.workload].interruptible,
            team=frame.workloads[r.workload].team,
        )
        for r in sol.allocations.itertuples()
    ]
    commitments = [
        Commitment(substrate=r.substrate, blocks=int(r.blocks), gpus=float(r.gpus), cost=_r(r.cost, 2))
        for r in sol.commitments.itertuples()
        if r.blocks > 0
    ]
    unserved = [
        Unserved(workload=r.workload, block=int(r.block), units=_r(r.units, 4), hours=r.hours)
        for r in sol.unserved.itertuples()
    ]
    prices = [
        ClearingPrice(workload=r.workload, block=int(r.block), hours=r.hours, price_per_unit=_r(r.usd_per_unit, 6))
        for r in sol.clearing_prices.itertuples()
    ]
    return PlanDocument(
        certification=_certification(out),
        currency=fleet.currency,
        horizon=Horizon(
            start=start.isoformat().replace("+00:00", "Z"),
            hours=frame.horizon_hours,
            blocks=frame.blocks.n,
            block_hours=[int(h) for h in frame.blocks.hours],
        ),
        solver=solver,
        totals=totals,
        allocations=allocations,
        commitments=commitments,
        unserved=unserved,
        mode=mode,  # type: ignore[arg-type]
        cost_change_by_kind=None if by_kind is None else {k: _r(v, 2) + 0.0 for k, v in by_kind.items()},
        by_substrate=by_substrate,
        clearing_prices=prices,
        merit_order_unserved=[
            Unserved(workload=r.workload, block=int(r.block), units=_r(r.units, 4)) for r in merit.unserved.itertuples()
        ],
        notes=notes
        + [f"{pair}: {'; '.join(reasons)}" for pair, reasons in sorted(frame.refused.items())]
        + _fractional_note(sol.fractional_nodes, fleet.currency),
    )


def _certification(out: PlannerOutput) -> Certification | None:
    cert = out.certificate
    if cert is None:
        return None
    penalty = float(cert.schedule["penalty"].sum()) if len(cert.schedule) else 0.0
    return Certification(
        lower_bound=_r(cert.lower_bound, 4),
        upper_bound=_r(cert.upper_bound, 4),
        gap=max(0.0, float(f"{cert.gap:.6g}")),
        tolerance=cert.tolerance,
        certified=cert.certified,
        schedule_cost=_r(cert.upper_bound - penalty + out.frame.sunk_cost, 2),
        blocks=out.frame.blocks.n,
        rounds=cert.rounds,
        repaired_hours=len(cert.repaired_hours),
        unserved_units=_r(cert.unserved_units, 4),
        seconds=round(cert.seconds, 4),
    )


def _fractional(frac: pd.DataFrame, applies: bool) -> dict[str, Any]:
    """Totals fields for the fractional nodes a plan without ``--integer-nodes`` assumed."""
    if not applies:
        return {}
    return {
        "fractional_nodes": len(frac),
        "fractional_node_hours": _r((frac["nodes"] * frac["hours"]).sum(), 4) if len(frac) else 0.0,
        "fractional_node_rounding_cost": _r(frac["rounding_cost"].sum(), 2) if len(frac) else 0.0,
    }


def _fractional_note(frac: pd.DataFrame, currency: str) -> list[str]:
    if frac.empty:
        return []
    subs = frac["substrate"].nunique()
    return [
        f"fractional nodes assumed: {len(frac)} block(s) on {subs} node-billed substrate(s) run a fraction of a node "
        f"({(frac['nodes'] * frac['hours']).sum():,.1f} node-hours); whole nodes would add about "
        f"{frac['rounding_cost'].sum():,.2f} {currency} — plan with `integer_nodes` to provision whole nodes"
    ]

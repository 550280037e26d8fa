"""A priced estate planned (``finops plan``): the solve, the billed baseline, the savings by lever and the plan
document with its provenance (prices, fx, demand sources, notes)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pandas as pd

from finops_cli.errors import InputError

if TYPE_CHECKING:
    from finops_cli.core.baseline import BilledBaseline
    from finops_cli.core.demand import Horizon
    from finops_cli.estate.demand_io import ObservedDemand
    from finops_cli.estate.priced import PricedEstate
    from finops_cli.planner import PlannerOutput
    from finops_cli.schema.plan import PlanDocument, SavingsByLever


@dataclass
class PlanResult:
    """``finops plan``'s answer: the JSON document plus the solved model's frames for rich rendering."""

    document: PlanDocument
    output: PlannerOutput
    horizon: Horizon
    price_notes: list[str]
    horizon_note: str = ""
    warnings: list[str] = field(default_factory=list)

    def schedule(self) -> pd.DataFrame:
        """The certified hourly schedule with each hour's UTC start (``time``): GPUs per hour per (workload,
        substrate), feasible in every hour; its objective is the certificate's upper bound."""
        cert = self.output.certificate
        if cert is None:
            raise ValueError("this plan was made without certification: it has no hourly schedule")
        sched = cert.schedule.copy()
        start = pd.Timestamp(self.horizon.start)
        start = start.tz_localize("UTC") if start.tzinfo is None else start.tz_convert("UTC")
        sched.insert(0, "time", start + pd.to_timedelta(sched["hour"], unit="h"))
        return sched


def check_plan_options(
    mode: str,
    solver: str,
    blocks: int | None,
    gap: float | None,
    time_limit: float | None,
    tolerance: float | None,
) -> None:
    """The planner's options, checked before any pricing or solving."""
    if mode not in ("cost", "reliability"):
        raise InputError(f"{mode!r}: expected cost or reliability", param="mode")
    if solver not in ("auto", "cbc", "highs"):
        raise InputError(f"{solver!r}: expected cbc or highs", param="solver")
    if blocks is not None and blocks < 1:
        raise InputError(f"{blocks}: expected an integer >= 1", param="blocks")
    if gap is not None and not 0 <= gap < 1:
        raise InputError(f"{gap}: expected a fraction in [0, 1)", param="gap")
    if time_limit is not None and not (math.isfinite(time_limit) and time_limit > 0):
        raise InputError(f"{time_limit}: expected seconds > 0", param="time_limit")
    if tolerance is not None and not (math.isfinite(tolerance) and 0 <= tolerance < 1):
        raise InputError(f"{tolerance}: expected a fraction in [0, 1)", param="tolerance")


def plan_priced(
    p: PricedEstate,
    *,
    blocks: int | None,
    mode: str,
    solver: str,
    time_limit: float | None,
    gap: float | None,
    allow_unserved: bool,
    demand: pd.DataFrame | None,
    integer_nodes: bool,
    tolerance: float | None,
    max_price_age: float | None,
) -> PlanResult:
    """Solve ``p``'s demand (or ``demand``) on its fleet and document the plan against the store's bill."""
    from finops_cli.core.baseline import billed_baseline
    from finops_cli.core.price_checks import price_warnings
    from finops_cli.estate.prices import fx_used, reference_price_notes
    from finops_cli.planner import DEFAULT_TOLERANCE, plan_demand
    from finops_cli.planner.document import plan_document
    from finops_cli.planner.solve import DEFAULT_GAP, NODES_GAP
    from finops_cli.schema.plan import DemandSource, PriceUsed
    from finops_cli.store import engine
    from finops_cli.store.cost_query import actual_cost_notes

    hz, sources, store, resolved = p.horizon, p.sources, p.store, p.resolved
    observed: list[ObservedDemand] = []
    if demand is None:
        demand, observed = p.demand_sources
        demand = demand.copy()
    elif len(demand) != hz.hours:
        raise InputError(f"has {len(demand)} hours, the horizon {hz.hours}", param="demand")
    workloads = list(resolved.workloads.workloads)
    out = plan_demand(
        resolved.fleet,
        workloads,
        demand,
        n_blocks=blocks,
        mode=mode,  # type: ignore[arg-type]
        solver=solver,  # type: ignore[arg-type]
        time_limit=time_limit,
        gap=(NODES_GAP if integer_nodes else DEFAULT_GAP) if gap is None else gap,
        allow_unserved=allow_unserved,
        integer_nodes=integer_nodes,
        tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance,
    )
    billed = None
    actual_only: list[str] = []
    if store is not None and store.has("billing"):
        groups = engine.baseline_groups(store, resolved.fleet, hz.start, hz.end)
        if groups is not None:
            billed = billed_baseline(groups, resolved.fleet)
            actual_only = actual_cost_notes(store, _horizon_months(hz))
    document = plan_document(out, resolved.fleet, start=hz.start, mode=mode, billed=billed)
    if document.totals.baseline_cost is not None:
        document.savings_by_lever = _savings_by_lever(out, p, workloads, demand, document, billed, mode, solver)
    document.as_of = p.as_of
    document.notes.extend(actual_only)  # the billed baseline's effective cost leaves a commitment out
    document.notes.extend(r.note() for r in resolved.rates)
    document.demand_sources.extend(DemandSource.model_validate(o.as_dict()) for o in observed)
    document.prices = [PriceUsed.model_validate(src.as_dict()) for src in sources]
    document.notes.extend(src.note() for src in sources)
    document.fx = fx_used(sources)
    warnings = [*p.choice.warnings, *price_warnings(sources, max_price_age), *actual_only]
    return PlanResult(document, out, hz, reference_price_notes(sources), p.choice.line, warnings)


def _horizon_months(hz: Horizon) -> list[str]:
    """The billing periods (``YYYY-MM``) a horizon touches."""
    last = hz.end - timedelta(microseconds=1)
    return [f"{m:%Y-%m}" for m in pd.period_range(f"{hz.start:%Y-%m}", f"{last:%Y-%m}", freq="M")]


def _measured_utilization(p: PricedEstate, month: str) -> dict[str, float]:
    """Busy ÷ device-hours per fleet substrate from the store's utilisation of ``month`` (empty without it)."""
    from finops_cli.report.waste_query import store_waste_reports

    store = p.store
    if store is None or not store.has("utilization") or month not in store.partition_values("utilization", "month"):
        return {}
    report = store_waste_reports(
        store, ["substrate"], fleet=p.loaded_fleet, price_per_gpu_hour=None, month=month, reason="`month`"
    )["substrate"]
    ids = {s.id for s in p.fleet.substrates}
    return {
        str(g["key"]): float(g["busy_hours"]) / float(g["device_hours"])
        for g in report.groups
        if str(g.get("key")) in ids and g.get("device_hours") and g.get("busy_hours") is not None
    }


def _savings_by_lever(
    out: PlannerOutput,
    p: PricedEstate,
    workloads: list[Any],
    demand: pd.DataFrame,
    document: PlanDocument,
    billed: BilledBaseline | None,
    mode: str,
    solver: str,
) -> SavingsByLever:
    """The plan's saving attributed to the levers that earned it (:mod:`finops_cli.planner.levers`)."""
    from finops_cli.planner.document import lever_document
    from finops_cli.planner.levers import attribute_savings, billing_use, dispatch_use

    baseline = document.totals.baseline_cost
    assert baseline is not None
    if document.totals.baseline_source == "billing":
        assert billed is not None
        allocs = out.solution.allocations
        plan_hours = float(allocs.loc[allocs["kind"] != "api", "gpu_hours"].sum()) if len(allocs) else 0.0
        measured = _measured_utilization(p, f"{p.horizon.start:%Y-%m}")
        use = billing_use(billed.cost_by_substrate, billed.gpu_hours_by_substrate, p.fleet, plan_hours, measured)
    else:
        merit = out.merit_order
        use = dispatch_use(merit.cost_by_substrate, merit.gpu_hours_by_substrate)
    attribution = attribute_savings(
        out,
        p.fleet,
        workloads,
        demand,
        use,
        baseline,
        mode="reliability" if mode == "reliability" else "cost",
        solver=solver,
    )
    return lever_document(attribution, document.totals.savings, document.totals.baseline_source or "billing")

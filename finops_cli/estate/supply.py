"""The supply side of a priced estate: each workload's merit order (``finops stack``) and the NETC of its
interruptible demand on each spot substrate (``finops netc``); docs/economics.md §5 has the economics."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from finops_cli.core.netc_report import netc_rows
from finops_cli.core.price_checks import price_warnings
from finops_cli.core.stack import build_stack
from finops_cli.errors import InputError
from finops_cli.estate.checks import check_profile_coverage
from finops_cli.estate.prices import reference_price_notes
from finops_cli.estate.traces import read_trace

if TYPE_CHECKING:
    from finops_cli.core.demand import Horizon
    from finops_cli.core.netc_report import NetcRow, Trace
    from finops_cli.core.stack import Stack
    from finops_cli.estate.demand_io import ObservedDemand
    from finops_cli.estate.load import Estate
    from finops_cli.estate.priced import PricedEstate
    from finops_cli.estate.prices import PriceSource
    from finops_cli.report.build import SupplyCurve
    from finops_cli.report.metrics import ReportResult
    from finops_cli.schema.estate import Fleet
    from finops_cli.schema.plan import PlanDocument
    from finops_cli.store import Store


@dataclass
class StackResult:
    """``finops stack``: one merit order per workload (or a generic GPU-hour one), with price provenance."""

    stacks: list[Stack]
    currency: str
    prices: list[PriceSource]
    horizon: Horizon | None
    warnings: list[str] = field(default_factory=list)
    horizon_note: str = ""  # the horizon and why (the default-month rule), for stderr
    #: what each from_store demand measured (busy vs allocated GPU-hours) and how it filled the horizon
    demand_sources: list[ObservedDemand] = field(default_factory=list)

    def as_json(self) -> object:
        """One object for a single stack (the issue's shape), else a list of them."""
        notes = reference_price_notes(self.prices)
        used = [p.as_dict() for p in self.prices]
        by_workload = {d.workload: d.as_dict() for d in self.demand_sources}
        docs = [
            s.as_dict()
            | {"currency": self.currency, "price_notes": notes, "prices": used}
            | ({"demand_source": by_workload[s.workload]} if s.workload in by_workload else {})
            for s in self.stacks
        ]
        return docs[0] if len(docs) == 1 else docs


@dataclass
class NetcResult:
    """``finops netc``: one row per (interruptible workload, compliant spot substrate)."""

    rows: list[NetcRow]
    currency: str
    horizon: Horizon
    prices: list[PriceSource]
    trace: Trace | None = None
    warnings: list[str] = field(default_factory=list)
    horizon_note: str = ""


def check_max_price_age(days: float | None) -> None:
    """A number of days >= 0 (exit 2 otherwise)."""
    if days is not None and not (math.isfinite(days) and days >= 0):
        raise InputError(f"{days}: expected a number of days >= 0", param="max_price_age")


def demand_warnings(p: PricedEstate) -> list[str]:
    """Where ``stack`` and ``netc`` start: the horizon's warnings (month mismatch) and profile coverage."""
    return [*p.choice.warnings, *check_profile_coverage(p.resolved, p.horizon)]


def stack_estate(p: PricedEstate, workload: str | None, mode: str, max_price_age: float | None) -> StackResult:
    """The merit order of each workload (or of ``workload``), cleared against its mean hourly demand when
    deferrable, else its peak hour; a fleet on its own gives one generic stack in GPU-hours."""
    if p.estate is None:
        if workload is not None:
            raise InputError("needs `workloads`", param="workload", mentions=("workloads",))
        return StackResult(
            [build_stack(None, p.fleet, mode)],  # type: ignore[arg-type]
            p.fleet.currency,
            p.sources,
            p.horizon,
            [*p.choice.warnings, *price_warnings(p.sources, max_price_age)],
            p.choice.line,
        )
    est = p.estate
    chosen = est.workloads.workloads
    if workload is not None:
        chosen = [w for w in chosen if w.id == workload]
        if not chosen:
            known = ", ".join(w.id for w in est.workloads.workloads)
            raise InputError(f"{workload!r} is not in {est.workloads_path} (known: {known})", param="workload")
    demand, observed = p.demand_sources
    warnings = [
        *demand_warnings(p),
        *(r.note() for r in est.rates if r.estimate.too_small),
        *price_warnings(p.sources, max_price_age),
    ]
    stacks = []
    for w in chosen:
        col = demand[w.id]
        units, basis = (float(col.mean()), "mean_hourly") if w.deferrable else (float(col.max()), "peak_hourly")
        stacks.append(build_stack(w, p.fleet, mode, units, basis))  # type: ignore[arg-type]
    return StackResult(stacks, est.fleet.currency, p.sources, p.horizon, warnings, p.choice.line, observed)


def netc_substrate(est: Estate, substrate: str | None, trace: str | Path | None) -> str | None:
    """The spot substrate NETC is limited to: ``substrate`` checked, else the one a ``trace`` measures."""
    if substrate is not None:
        try:
            s = est.fleet.substrate(substrate)
        except KeyError:
            raise InputError(f"{substrate!r} is not in {est.fleet_path}", param="substrate") from None
        if s.kind != "spot":
            raise InputError(f"{substrate}: kind {s.kind}, NETC is for spot substrates", param="substrate")
        return substrate
    if trace is None:
        return None
    # a trace measures ONE pool: never apply it to every spot substrate, never guess which
    spot = [s.id for s in est.fleet.substrates if s.kind == "spot"]
    if len(spot) > 1:
        raise InputError(
            f"{Path(trace).name}: the fleet has {len(spot)} spot substrates ({', '.join(spot)}); "
            "give `substrate` ID to say which pool the trace measures",
            param="trace",
            mentions=("substrate",),
        )
    return spot[0] if spot else None


def netc_estate(p: PricedEstate, substrate: str | None, trace: str | Path | None) -> NetcResult:
    """NETC of every interruptible workload's demand on each compliant spot substrate (or ``substrate``), with
    λ estimated from ``trace`` and the job replayed on it when given."""
    est = p.resolved
    demand, observed = p.demand_sources
    warnings = [
        *demand_warnings(p),
        *(r.note() for r in est.rates if r.estimate.too_small),
        *(o.note() for o in observed),
    ]
    totals = {w: float(demand[w].sum()) for w in demand.columns}
    tr = read_trace(trace) if trace is not None else None
    if tr is not None and tr.rate.too_small:
        warnings.append(f"trace {tr.name}: {tr.rate.describe()}")
    rows = netc_rows(est.workloads.workloads, p.fleet, totals, tr, substrate, p.horizon.hours)
    notes = {src.substrate: src.detail for src in p.sources if src.method in ("price_feed", "price_ref")}
    for row in rows:
        row.price_note = notes.get(row.substrate)
    return NetcResult(rows, est.fleet.currency, p.horizon, p.sources, tr, warnings, p.choice.line)


def supply_curves(estate: Estate | PricedEstate, st: Store, doc: PlanDocument) -> Callable[[str], SupplyCurve]:
    """The report's supply curve of a workload: its merit order with ``estate`` priced as the plan ``doc`` was
    (its horizon, fx and as-of instant, from ``st``); an estate priced otherwise is priced again."""
    from finops_cli.core.demand import Horizon
    from finops_cli.estate.priced import PricedEstate, price_estate
    from finops_cli.report.build import SupplyCurve
    from finops_cli.report.metrics import horizon_bounds

    start, _ = horizon_bounds(doc)
    hz = Horizon(start, doc.horizon.hours) if start is not None else None

    def supply(workload: str) -> SupplyCurve:
        target: Estate | PricedEstate | None = estate
        if isinstance(target, PricedEstate) and (
            hz is None
            or (target.horizon.start, target.horizon.hours) != (hz.start, hz.hours)
            or (target.fx or None) != (doc.fx or None)
            or target.store is not st
        ):
            target = target.estate  # priced for another horizon: price again for the plan's
        if not isinstance(target, PricedEstate):
            assert target is not None
            target = price_estate(target, st, horizon=hz, fx=doc.fx or None, as_of=doc.as_of)
        curve = stack_estate(target, workload, getattr(doc, "mode", "cost"), None)
        return SupplyCurve(curve.stacks[0], curve.currency, {p.substrate: p.value for p in curve.prices})

    return supply


def report_estate(
    doc: PlanDocument,
    st: Store,
    estate: Estate | PricedEstate | Fleet | None,
    out: Path | None,
    *,
    title: str | None,
    plan_path: Path | str | None,
) -> ReportResult:
    """:func:`finops_cli.api.report`: the fleet prices idle devices, the estate priced as the plan was draws the
    supply curve (:func:`supply_curves`)."""
    from finops_cli.estate.load import Estate
    from finops_cli.estate.priced import PricedEstate
    from finops_cli.report.build import build_report
    from finops_cli.report.metrics import ReportInputs

    est = estate.estate if isinstance(estate, PricedEstate) else estate
    fleet = estate.loaded_fleet if isinstance(estate, PricedEstate) else est.fleet if isinstance(est, Estate) else est
    priced_or_estate = estate if isinstance(estate, Estate | PricedEstate) else None
    return build_report(
        ReportInputs(plan=doc, title=title),
        st,
        out,
        fleet=fleet,
        fleet_name=est.fleet_path if isinstance(est, Estate) else None,
        plan_path=plan_path,
        supply=supply_curves(priced_or_estate, st, doc) if priced_or_estate is not None else None,
        supply_missing="needs the workloads as well as the fleet" if estate is not None else None,
    )

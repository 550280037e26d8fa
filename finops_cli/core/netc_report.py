"""``finops netc``: NETC per (interruptible workload, compliant spot substrate), beside the NETC at the Young/Daly
interval, the cheapest stable alternative and, with a trace, the job replayed on it (docs/economics.md §5).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from finops_cli.core.compliance import gate
from finops_cli.core.netc import RateEstimate, SpotNeverFinishes, netc_breakdown, replay, young_daly_interval_hours
from finops_cli.core.pricing import (
    base_price_per_gpu_hour,
    segments,
    spot_terms,
    units_per_gpu_hour,
    useful_gpu_hour_price,
)
from finops_cli.schema.estate import Fleet, Substrate, Workload


@dataclass(frozen=True)
class Trace:
    """A spot trace reduced to what NETC needs: the rate estimate and the available runs (hours)."""

    name: str
    rate: RateEstimate
    intervals_hours: np.ndarray = field(repr=False)


@dataclass
class NetcRow:
    """One (workload, spot substrate) line of ``finops netc`` (money in the fleet currency)."""

    workload: str
    substrate: str
    multiplier: float | None
    expected_preemptions: float | None
    expected_lost_hours: float | None
    netc: float | None
    tau_minutes: float
    tau_star_minutes: float | None
    netc_at_tau_star: float | None
    stable_alternative: dict[str, object] | None
    unit: str = ""
    demand_units: float = 0.0
    useful_gpu_hours: float = 0.0
    usd_per_gpu_hour: float = 0.0
    cost_per_unit: float | None = None  # (C·W + λ·W·F) × preference / θ: the merit order's price (stack, plan)
    preemptions_per_hour: float = 0.0
    rate_source: str = "fleet"  # fleet | trace
    refused: str | None = None
    trace: dict[str, object] | None = None
    replay: dict[str, object] | None = None
    price_note: str | None = None  # where the spot price came from when not a fixed number (feed, reference)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def stable_alternative(
    workload: Workload, fleet: Fleet, demand_units: float, horizon_hours: float | None = None
) -> dict[str, object] | None:
    """The cheapest compliant non-spot way to serve the same demand: ``{substrate, kind, cost_per_unit, cost}``.

    With ``horizon_hours`` only destinations that carry the whole demand alone qualify (a purchasable commitment
    costs the blocks it needs for the whole horizon); if none does, the cheapest per unit, ``covers_demand: false``.
    """
    options: list[tuple[float, float, str, str, bool]] = []  # (cost, per_unit, id, kind, covers)
    for s in gate(workload, fleet).compliant:
        if s.kind == "spot":
            continue
        theta = units_per_gpu_hour(s, workload)
        segs = [g for g in segments(s, workload, fleet) if g.capacity_gpus is None or g.capacity_gpus > 0]
        if segs and (s.gpus or s.kind in ("api", "on_demand")):
            per_unit = segs[0].usd_per_gpu_hour / theta
            cap = None if any(g.capacity_gpus is None for g in segs) else sum(g.capacity_gpus or 0 for g in segs)
            covers = horizon_hours is None or cap is None or cap * horizon_hours * theta >= demand_units
            options.append((per_unit * demand_units, per_unit, s.id, s.kind, covers))
        p = s.purchasable
        if p is not None and p.max_blocks > 0 and horizon_hours:
            block_units = p.block_gpus * horizon_hours * theta
            blocks = max(math.ceil(demand_units / block_units - 1e-12), 1)
            covers = blocks <= p.max_blocks
            blocks = min(blocks, p.max_blocks)
            cost = blocks * p.block_gpus * horizon_hours * p.price_per_gpu_hour * s.preference
            options.append((cost, cost / demand_units if demand_units else 0.0, s.id, "reserved", covers))
    if not options:
        return None
    covering = [o for o in options if o[4]]
    best = min(covering) if covering else min(options, key=lambda o: (o[1], o[2]))
    return {"substrate": best[2], "kind": best[3], "cost_per_unit": best[1], "cost": best[0], "covers_demand": best[4]}


def netc_row(
    workload: Workload,
    substrate: Substrate,
    fleet: Fleet,
    demand_units: float,
    trace: Trace | None = None,
    horizon_hours: float | None = None,
) -> NetcRow:
    """NETC of ``workload``'s demand on spot ``substrate`` (λ from ``trace`` when given)."""
    lam = trace.rate.preemptions_per_hour if trace is not None else None
    terms = spot_terms(substrate, workload, lam)
    lam, tau, delta = terms.preemptions_per_hour, terms.interval_hours, terms.write_hours
    theta = units_per_gpu_hour(substrate, workload)
    useful = demand_units / theta
    price = base_price_per_gpu_hour(substrate) * substrate.preference
    # preference scales the fee as it scales the price: NETC / demand is the merit order's cost per unit
    r_h, fee = terms.resume_hours, terms.resume_fee * substrate.preference
    tau_star = young_daly_interval_hours(delta, lam)
    row = NetcRow(
        workload=workload.id,
        substrate=substrate.id,
        multiplier=None,
        expected_preemptions=None,
        expected_lost_hours=None,
        netc=None,
        tau_minutes=tau * 60,
        tau_star_minutes=tau_star * 60 if math.isfinite(tau_star) else None,
        netc_at_tau_star=None,
        stable_alternative=stable_alternative(workload, fleet, demand_units, horizon_hours),
        unit=workload.unit,
        demand_units=demand_units,
        useful_gpu_hours=useful,
        usd_per_gpu_hour=price,
        preemptions_per_hour=lam,
        rate_source="trace" if trace is not None else "fleet",
    )
    if trace is not None:
        row.trace = {
            "name": trace.name,
            "preemptions": trace.rate.preemptions,
            "available_hours": trace.rate.available_hours,
            "observed_hours": trace.rate.observed_hours,
            "preemptions_per_hour": lam,
            "preemptions_per_hour_95": list(trace.rate.interval()),
            "nodes": trace.rate.nodes,
            "sample_too_small": trace.rate.too_small,
            "configured_preemptions_per_hour": substrate.interruptions_per_hour,
        }
    if not math.isfinite(lam):
        row.refused = "the trace has no available time: spot never runs"
        return row
    try:
        b = netc_breakdown(price, useful, lam, tau, delta, r_h, fee)
    except SpotNeverFinishes as exc:
        row.refused = str(exc)
        return row
    unit = useful_gpu_hour_price(substrate, workload, lam)
    row.multiplier, row.netc, row.cost_per_unit = b.multiplier, unit.total * useful, unit.total / theta
    row.expected_preemptions, row.expected_lost_hours = b.expected_preemptions, b.expected_lost_hours
    if math.isfinite(tau_star):
        try:
            row.netc_at_tau_star = netc_breakdown(price, useful, lam, tau_star, delta, r_h, fee).netc
        except SpotNeverFinishes:
            row.netc_at_tau_star = None
    else:
        row.netc_at_tau_star = row.netc  # λ = 0: no preemptions, any interval is optimal
    if trace is not None and useful > 0:
        try:
            rp = replay(trace.intervals_hours, useful, tau, delta, r_h, price, fee)
            row.replay = {
                "realised_cost": rp.realised_cost,
                "predicted_netc": row.netc,
                "error_pct": 100 * (rp.realised_cost - row.netc) / row.netc if row.netc else None,
                "billed_gpu_hours": rp.billed_gpu_hours,
                "preemptions": rp.preemptions,
                "lost_hours": rp.lost_hours,
                "multiplier": rp.multiplier,
            }
        except SpotNeverFinishes as exc:
            row.replay = {"refused": str(exc)}
    return row


def netc_rows(
    workloads: list[Workload],
    fleet: Fleet,
    demand_units: dict[str, float],
    trace: Trace | None = None,
    substrate_id: str | None = None,
    horizon_hours: float | None = None,
) -> list[NetcRow]:
    """Every (interruptible workload, compliant spot substrate) pair, gate first; ``substrate_id`` narrows."""
    rows = []
    for w in workloads:
        if not w.interruptible:
            continue
        for s in gate(w, fleet).compliant:
            if s.kind != "spot" or (substrate_id is not None and s.id != substrate_id):
                continue
            rows.append(netc_row(w, s, fleet, demand_units.get(w.id, 0.0), trace, horizon_hours))
    return rows

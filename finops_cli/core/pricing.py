"""Marginal prices of one GPU-hour (or API unit) for a workload on a substrate: the one place the merit order,
the planner, ``finops netc`` and the dispatch simulator get them from (docs/economics.md §2-§3).

Prices must be resolved first (:mod:`finops_cli.estate.prices`): every substrate here has ``price_per_gpu_hour``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from finops_cli.core.compliance import gate
from finops_cli.core.netc import SpotNeverFinishes, wall_hours_per_useful_hour
from finops_cli.schema.estate import Fleet, Substrate, Workload

Mode = Literal["cost", "reliability"]
T = TypeVar("T")

#: Checkpoint assumed for interruptible work that does not configure one (30 min, no write time).
DEFAULT_CHECKPOINT_MINUTES = 30.0


@dataclass(frozen=True)
class Segment:
    """A slice of a substrate's capacity (GPUs; None: unbounded) with its own price per GPU-hour (APIs: per unit)."""

    index: int
    capacity_gpus: float | None
    usd_per_gpu_hour: float  # money (what the bill says), before penalties
    penalty_per_gpu_hour: float  # not money: reliability penalty, steers but is reported apart


def capacity_gpus(substrate: Substrate, fleet: Fleet) -> float | None:
    """Usable GPUs: ``gpus`` (× degraded factor when degraded), 0 when down, None when unbounded."""
    if substrate.status == "down":
        return 0.0
    if substrate.kind == "api" or substrate.gpus is None:
        return None
    cap = substrate.gpus
    if substrate.status == "degraded":
        cap *= substrate.degraded_capacity_factor or fleet.degraded_capacity_factor
    return cap


@dataclass(frozen=True)
class SpotTerms:
    """The NETC inputs of one (workload, spot substrate) pair, in hours: λ, τ, δ, R and the fee F; the planner,
    ``finops netc`` and the plan replay all read them here."""

    preemptions_per_hour: float
    interval_hours: float
    write_hours: float
    resume_hours: float
    resume_fee: float  # currency per preemption, before preference

    @property
    def multiplier(self) -> float:
        """``W = (1 + δ/τ) / (1 − λ(t_lost + R))``; raises :class:`SpotNeverFinishes`."""
        return wall_hours_per_useful_hour(
            self.preemptions_per_hour, self.interval_hours, self.write_hours, self.resume_hours
        )


def spot_terms(substrate: Substrate, workload: Workload, preemptions_per_hour: float | None = None) -> SpotTerms:
    """λ, τ, δ, R and F of ``workload`` on the spot ``substrate`` (``preemptions_per_hour`` overrides λ).

    Without a ``checkpoint``: interruptible work 30 minutes, no write time; non-interruptible work restarts from
    scratch, modelled as a one-hour interval.
    """
    lam = (substrate.interruptions_per_hour or 0.0) if preemptions_per_hour is None else preemptions_per_hour
    if workload.checkpoint is not None:
        tau_h = workload.checkpoint.interval_minutes / 60
        delta_h = workload.checkpoint.write_minutes / 60
    else:
        tau_h = (DEFAULT_CHECKPOINT_MINUTES if workload.interruptible else 60.0) / 60
        delta_h = 0.0
    return SpotTerms(lam, tau_h, delta_h, substrate.resume_minutes / 60, substrate.resume_cost)


def spot_multiplier(substrate: Substrate, workload: Workload, preemptions_per_hour: float | None = None) -> float:
    """NETC multiplier W for ``workload`` on ``substrate`` (1 off spot); ``preemptions_per_hour`` overrides λ."""
    if substrate.kind != "spot":
        return 1.0
    return spot_terms(substrate, workload, preemptions_per_hour).multiplier


@dataclass(frozen=True)
class UsefulHourPrice:
    """Money for one *useful* GPU-hour (preference included): ``base`` C, ``billed`` C·W, ``fees`` λ·W·F;
    ``total − base`` is the NETC overhead."""

    base: float
    multiplier: float
    fees: float

    @property
    def billed(self) -> float:
        return self.base * self.multiplier

    @property
    def total(self) -> float:
        return self.billed + self.fees

    @property
    def overhead_share(self) -> float:
        """Share of the money that preemptions add (W − 1 and fees): ``1 − C / (C·W + λ·W·F)``."""
        return 1 - self.base / self.total if self.total > 0 else 0.0


def useful_gpu_hour_price(
    substrate: Substrate, workload: Workload, preemptions_per_hour: float | None = None
) -> UsefulHourPrice:
    """``(C·W + λ·W·F) × preference`` per useful GPU-hour: THE price every command ranks and bills by.

    ``preemptions_per_hour`` overrides λ (``finops netc --trace``); raises :class:`SpotNeverFinishes`.
    """
    base = base_price_per_gpu_hour(substrate) * substrate.preference
    if substrate.kind != "spot":
        return UsefulHourPrice(base, 1.0, 0.0)
    terms = spot_terms(substrate, workload, preemptions_per_hour)
    w = terms.multiplier
    return UsefulHourPrice(base, w, terms.preemptions_per_hour * w * terms.resume_fee * substrate.preference)


def base_price_per_gpu_hour(substrate: Substrate) -> float:
    """The resolved marginal price; raises if the estate was not resolved first."""
    if substrate.price_per_gpu_hour is None:
        if substrate.kind == "reserved":
            return 0.0
        raise ValueError(f"substrate {substrate.id}: price not resolved (price_feed/price_ref)")
    return substrate.price_per_gpu_hour


def reliability_penalty(substrate: Substrate, workload: Workload, fleet: Fleet, mode: Mode) -> float:
    """Finite penalty per GPU-hour for latency-critical work on spot in reliability mode; else 0."""
    if mode != "reliability" or substrate.kind != "spot":
        return 0.0
    if workload.slo != "latency_critical" or workload.interruptible:
        return 0.0
    return fleet.reliability_penalty_per_gpu_hour


def segments(substrate: Substrate, workload: Workload, fleet: Fleet, mode: Mode = "cost") -> list[Segment]:
    """Convex piecewise-linear price of ``workload``'s GPU-hours on ``substrate``: :func:`useful_gpu_hour_price`
    up to ``comfortable_utilization``, times each congestion step above it; an API is one unbounded segment per unit.
    """
    penalty = reliability_penalty(substrate, workload, fleet, mode)
    if substrate.kind == "api":
        price = (substrate.price_per_unit or {})[workload.unit] * substrate.preference
        return [Segment(0, None, price, 0.0)]
    cap = capacity_gpus(substrate, fleet)
    price = useful_gpu_hour_price(substrate, workload).total
    if cap is None:
        return [Segment(0, None, price, penalty)]
    out = [Segment(0, cap * substrate.comfortable_utilization, price, penalty)]
    lower = substrate.comfortable_utilization
    for step in fleet.congestion:
        if step.up_to <= lower:
            continue
        out.append(Segment(len(out), cap * (step.up_to - lower), price * step.multiplier, penalty))
        lower = step.up_to
    return [s for s in out if s.capacity_gpus is None or s.capacity_gpus > 0] or [Segment(0, 0.0, price, penalty)]


def units_per_gpu_hour(substrate: Substrate, workload: Workload) -> float:
    """Throughput of ``workload`` on ``substrate``; APIs serve units directly (1 unit per unit bought)."""
    if substrate.kind == "api":
        return 1.0
    return workload.throughput[substrate.accelerator or ""]


def cost_per_unit(substrate: Substrate, workload: Workload, fleet: Fleet, mode: Mode = "cost") -> float:
    """Uncongested merit-order price: currency (+ penalty) per unit of usable output."""
    seg = segments(substrate, workload, fleet, mode)[0]
    return (seg.usd_per_gpu_hour + seg.penalty_per_gpu_hour) / units_per_gpu_hour(substrate, workload)


def priced_destinations(
    workload: Workload, fleet: Fleet, price: Callable[[Substrate], T]
) -> tuple[list[tuple[Substrate, T]], dict[str, list[str]]]:
    """Each compliant substrate with ``price(substrate)``, and the excluded ones with their reasons (spot the
    workload would never finish on: ``spot refused: …``); the one place the gate is applied before pricing."""
    result = gate(workload, fleet)
    excluded = dict(result.excluded)
    priced: list[tuple[Substrate, T]] = []
    for s in result.compliant:
        try:
            priced.append((s, price(s)))
        except SpotNeverFinishes as exc:
            excluded[s.id] = [f"spot refused: {exc}"]
    return priced, excluded

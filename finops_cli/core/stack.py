"""The merit order: one workload's compliant supply, cheapest unit of usable output first, cleared against its
demand (docs/economics.md §2). The gate runs first, so only compliant substrates reach the steps.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from finops_cli.core.compliance import NoCompliantDestination
from finops_cli.core.pricing import Mode, priced_destinations, segments, units_per_gpu_hour
from finops_cli.schema.estate import Fleet, Substrate, Workload


@dataclass(frozen=True)
class StackStep:
    """One step of the supply curve in the workload's unit: ``cost_per_unit`` (money + penalty) ranks,
    ``usd_per_unit`` is money; capacities are units per hour (None: unbounded)."""

    substrate: str
    kind: str
    cost_per_unit: float
    capacity_units: float | None
    cumulative_units: float | None
    segment: int
    usd_per_unit: float
    penalty_per_unit: float = 0.0
    capacity_gpus: float | None = None
    purchasable: bool = False

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Stack:
    """The merit order of one workload (``workload`` None: a generic GPU-hour view of the fleet)."""

    workload: str | None
    mode: Mode
    unit: str
    steps: list[StackStep]
    excluded: dict[str, list[str]] = field(default_factory=dict)
    demand_units: float | None = None
    demand_basis: str | None = None  # "mean_hourly" (deferrable) | "peak_hourly" | "given"
    clearing_price: float | None = None
    marginal_step: int | None = None
    shortfall_units: float | None = None

    @property
    def capacity_units(self) -> float | None:
        """Total capacity per hour (None when some step is unbounded)."""
        return self.steps[-1].cumulative_units if self.steps else 0.0

    def as_dict(self) -> dict[str, object]:
        """The JSON shape of ``finops stack``: entries, excluded, demand, clearing price (+ extras)."""
        return {
            "workload": self.workload,
            "mode": self.mode,
            "unit": self.unit,
            "entries": [s.as_dict() for s in self.steps],
            "excluded": [{"substrate": sid, "reasons": r} for sid, r in self.excluded.items()],
            "demand_units": self.demand_units,
            "demand_basis": self.demand_basis,
            "clearing_price": self.clearing_price,
            "marginal_step": self.marginal_step,
            "shortfall_units": self.shortfall_units,
        }


#: The pseudo-workload behind ``finops stack --fleet F`` without workloads: one GPU-hour on any accelerator.
GPU_HOURS_UNIT = "gpu_hours"


def generic_workload(fleet: Fleet) -> Workload:
    """A workload that runs anywhere at 1 unit per GPU-hour, interruptible with the default checkpoint."""
    accelerators = sorted({s.accelerator for s in fleet.substrates if s.accelerator})
    return Workload.model_validate(
        {
            "id": "*",
            "unit": GPU_HOURS_UNIT,
            "demand": {"total": 0},
            "interruptible": True,
            "slo": "offline",
            "throughput": dict.fromkeys(accelerators, 1.0),
        }
    )


def _substrate_steps(s: Substrate, workload: Workload, fleet: Fleet, mode: Mode) -> list[StackStep]:
    theta = units_per_gpu_hour(s, workload)
    out: list[StackStep] = []
    for seg in segments(s, workload, fleet, mode):
        if seg.capacity_gpus is not None and seg.capacity_gpus <= 0:
            continue
        usd, pen = seg.usd_per_gpu_hour / theta, seg.penalty_per_gpu_hour / theta
        cap_units = None if seg.capacity_gpus is None else seg.capacity_gpus * theta
        cap_gpus = None if s.kind == "api" else seg.capacity_gpus
        out.append(StackStep(s.id, s.kind, usd + pen, cap_units, None, seg.index, usd, pen, cap_gpus))
    if s.purchasable is not None and s.purchasable.max_blocks > 0:
        gpus = s.purchasable.block_gpus * s.purchasable.max_blocks
        usd = s.purchasable.price_per_gpu_hour * s.preference / theta
        out.append(StackStep(s.id, s.kind, usd, gpus * theta, None, len(out), usd, 0.0, gpus, purchasable=True))
    return out


def merit_order(workload: Workload, fleet: Fleet, mode: Mode = "cost") -> tuple[list[StackStep], dict[str, list[str]]]:
    """Compliant steps sorted cheapest first (with cumulative capacity) and the exclusions with reasons."""
    priced, excluded = priced_destinations(workload, fleet, lambda s: _substrate_steps(s, workload, fleet, mode))
    steps = [step for _s, substrate_steps in priced for step in substrate_steps]
    steps.sort(key=lambda st: (st.cost_per_unit, st.purchasable, st.substrate, st.segment))
    cumulative: float | None = 0.0
    out = []
    for st in steps:
        if cumulative is not None:
            cumulative = None if st.capacity_units is None else cumulative + st.capacity_units
        out.append(StackStep(**{**asdict(st), "cumulative_units": cumulative}))
    return out, excluded


def clear(steps: list[StackStep], demand_units: float) -> tuple[int | None, float | None, float | None]:
    """``(marginal step index, clearing price, shortfall)`` for ``demand_units`` per hour: the marginal step is
    the first whose cumulative capacity reaches the demand."""
    if demand_units <= 0 or not steps:
        return None, None, (demand_units if demand_units > 0 else None)
    for i, st in enumerate(steps):
        if st.cumulative_units is None or st.cumulative_units >= demand_units * (1 - 1e-12):
            return i, st.cost_per_unit, None
    return None, None, demand_units - (steps[-1].cumulative_units or 0.0)


def build_stack(
    workload: Workload | None,
    fleet: Fleet,
    mode: Mode = "cost",
    demand_units: float | None = None,
    demand_basis: str | None = None,
) -> Stack:
    """The merit order of ``workload`` on ``fleet`` (None: generic GPU-hours), cleared against ``demand_units``.

    Raises :class:`NoCompliantDestination` (exit 3) when ``workload`` may run nowhere: an empty curve is no answer.
    """
    w = workload or generic_workload(fleet)
    steps, excluded = merit_order(w, fleet, mode)
    if workload is not None and len(excluded) == len(fleet.substrates):
        raise NoCompliantDestination(workload.id, excluded)
    if workload is None:
        excluded = {
            sid: (["api: priced per unit of output, not per GPU-hour"] if fleet.substrate(sid).kind == "api" else r)
            for sid, r in excluded.items()
        }
    marginal = price = shortfall = None
    if demand_units is not None and math.isfinite(demand_units):
        marginal, price, shortfall = clear(steps, demand_units)
    return Stack(
        workload=None if workload is None else workload.id,
        mode=mode,
        unit=w.unit,
        steps=steps,
        excluded=excluded,
        demand_units=demand_units,
        demand_basis=demand_basis if demand_units is not None else None,
        clearing_price=price,
        marginal_step=marginal,
        shortfall_units=shortfall,
    )

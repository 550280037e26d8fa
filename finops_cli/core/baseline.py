"""The billed baseline: what the bill says the fleet's substrates cost over the horizon (``EffectiveCost`` of the
lines matched to them, docs/planner.md "Billed baseline"), and the cost change by substrate kind.

The cost change by kind says *where the cost lands*; what *earned* the saving is the attribution by lever
(:mod:`finops_cli.planner.levers`, docs/economics.md §6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from finops_cli.errors import InputError
from finops_cli.schema.estate import Fleet, SubstrateKind

PRICING_CATEGORY_KIND: dict[str, SubstrateKind] = {
    "Dynamic": "spot",
    "Committed": "reserved",
    "Other": "owned",
    "Standard": "on_demand",
}

#: substrate kinds in the order the cost change by kind lists them
KINDS: tuple[SubstrateKind, ...] = ("owned", "reserved", "spot", "on_demand", "api")


@dataclass(frozen=True)
class BilledBaseline:
    """Amortised cost (EffectiveCost) per substrate over the horizon, the invoice amount (BilledCost) of the
    same lines, and the lines it rests on."""

    cost_by_substrate: pd.Series
    lines_matched: int
    lines_in_horizon: int
    currencies: tuple[str, ...]
    billed_cost: float | None = None  # Σ BilledCost of the matched lines (None: the input had no BilledCost)
    gpu_hours_by_substrate: pd.Series | None = None  # Σ x_GpuHours of the matched lines (None: not in the input)

    @property
    def cost(self) -> float:
        return float(self.cost_by_substrate.sum())


#: billing columns :func:`match_billing` reads besides the names of the fleet's ``match`` rules
MATCH_COLUMNS = ("provider", "RegionId", "x_InstanceType", "PricingCategory")


def match_billing(billing: pd.DataFrame, fleet: Fleet) -> pd.Series:
    """Substrate id of every billing line (``None`` where nothing matches), first match in fleet order: provider,
    region, instance type, pricing category → kind and ``match`` columns, each (column, value) test made once."""
    n = len(billing)
    texts: dict[str | None, np.ndarray] = {}  # column -> its values as text (a missing one equals nothing)
    if "PricingCategory" in billing:  # None: each line's substrate kind
        texts[None] = billing["PricingCategory"].map(PRICING_CATEGORY_KIND).to_numpy(dtype=object)
    tests: dict[tuple[str | None, str], np.ndarray] = {}

    def equals(column: str | None, value: str) -> np.ndarray:
        if (column, value) not in tests:
            if column not in texts:
                texts[column] = billing[column].astype(str).to_numpy(dtype=object)
            tests[column, value] = np.asarray(texts[column] == value, dtype=bool)
        return tests[column, value]

    out = np.full(n, None, dtype=object)
    open_ = np.ones(n, dtype=bool)  # lines no substrate has matched yet
    for s in fleet.substrates:
        mask = open_.copy()
        if "provider" in billing:
            mask &= equals("provider", s.provider)
        if s.region and "RegionId" in billing:
            mask &= equals("RegionId", s.region)
        if s.instance_type and "x_InstanceType" in billing:
            mask &= equals("x_InstanceType", s.instance_type)
        if None in texts:
            mask &= equals(None, s.kind)
        for col, value in (s.match or {}).items():
            if col not in billing:
                mask[:] = False
            else:
                mask &= equals(col, str(value))
        out[mask] = s.id
        open_ &= ~mask
    return pd.Series(out, index=billing.index, dtype=object)


def billed_baseline(groups: pd.DataFrame, fleet: Fleet) -> BilledBaseline:
    """Sum EffectiveCost of the lines matched to ``fleet``'s substrates; ``groups`` are the horizon's lines summed
    by what matches them (:data:`finops_cli.store.queries.BILLED_BASELINE`)."""
    if groups is None or groups.empty:
        return BilledBaseline(pd.Series(dtype=float), 0, 0, ())
    substrate = match_billing(groups, fleet)
    matched = groups[substrate.notna()]
    currencies = tuple(sorted(matched["BillingCurrency"].astype(str).unique())) if "BillingCurrency" in matched else ()
    if currencies and currencies != (fleet.currency,):
        raise InputError(
            f"billing lines matched to the fleet are in {', '.join(currencies)} but fleet.yaml's currency is "
            f"{fleet.currency}: mixed currencies are never summed; plan with a fleet in the bill's currency"
        )
    cost = matched["cost"].astype(float).groupby(substrate[substrate.notna()]).sum()
    billed = float(matched["billed_cost"].astype(float).sum()) if "billed_cost" in matched else None
    gpu_hours = None
    if "gpu_hours" in matched:
        gpu_hours = matched["gpu_hours"].astype(float).fillna(0.0).groupby(substrate[substrate.notna()]).sum()
    return BilledBaseline(cost, int(matched["lines"].sum()), int(groups["lines"].sum()), currencies, billed, gpu_hours)


def cost_by_kind(cost_by_substrate: pd.Series, fleet: Fleet) -> dict[str, float]:
    kinds = {s.id: s.kind for s in fleet.substrates}
    out: dict[str, float] = {}
    for sid, cost in cost_by_substrate.items():
        k = kinds.get(str(sid), "on_demand")
        out[k] = out.get(k, 0.0) + float(cost)
    return out


def cost_change_by_kind(
    baseline_by_substrate: pd.Series, planned_by_substrate: pd.Series, fleet: Fleet
) -> dict[str, float]:
    """Planned − baseline cost per substrate kind of the fleet (negative: the plan spends less there; Σ = −savings)."""
    base, plan = cost_by_kind(baseline_by_substrate, fleet), cost_by_kind(planned_by_substrate, fleet)
    present = {s.kind for s in fleet.substrates} | set(base) | set(plan)
    return {k: plan.get(k, 0.0) - base.get(k, 0.0) for k in KINDS if k in present}

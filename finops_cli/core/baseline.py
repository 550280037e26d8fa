"""The billed baseline: what the bill says the fleet's substrates cost over the horizon, and savings.

A billing line (FOCUS columns in the store) belongs to substrate ``s`` when all of these hold:

- its ``provider`` partition equals ``s.provider``;
- ``RegionId`` equals ``s.region`` (when the substrate has a region);
- ``x_InstanceType`` equals ``s.instance_type`` (when set);
- ``PricingCategory`` maps to ``s.kind``: Dynamic → spot, Committed → reserved, Other → owned,
  Standard → on_demand;
- every column/value pair of ``s.match`` (e.g. ``{ResourceId: cw-node-01}``) equals.

A line is counted once (first matching substrate in fleet order); lines charged outside the horizon
(``ChargePeriodStart``) or matching no substrate are not in the baseline. The store sums the horizon's
lines by these columns first (:data:`finops_cli.store.queries.BILLED_BASELINE`), so matching runs on a few
groups rather than on every line. The baseline is the sum of ``EffectiveCost`` (amortised: prepaid
commitments appear where they are consumed); the invoice amount of the same lines (``BilledCost``, "as
billed") is kept beside it.

Savings ``= baseline − planned``. Two different quantities explain it, and they keep different names:

- :func:`cost_change_by_kind`: planned − baseline cost per substrate kind (owned, reserved, spot, on_demand,
  api). It says *where the cost lands*: moving work from on-demand to spot shows as a fall on the on-demand
  row and a rise on the spot row. It is not a lever.
- the savings by lever (:mod:`finops_cli.planner.levers`): what *earned* the saving (right-sizing, spot,
  commitments, APIs, reliability), by re-solving the plan with levers switched off (docs/economics.md §6).
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
    """Substrate id of every billing line (``None`` where nothing matches), first match in fleet order.

    A column is compared as text (``astype(str)``), each column converted and each (column, value) test made
    once, however many substrates share it: 15 substrates over a few hundred groups cost ~28 ms of pandas
    overhead per call when each substrate converted and compared every column again.
    """
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
    """Sum EffectiveCost of the lines matched to ``fleet``'s substrates.

    ``groups`` holds the horizon's lines summed by what matches them (the columns :func:`match_billing`
    reads, ``BillingCurrency``, and ``lines``/``cost`` per group): the result of
    :data:`finops_cli.store.queries.BILLED_BASELINE`, so the month's lines never reach pandas one by one.
    """
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
    """Planned − baseline cost per substrate kind (every kind of the fleet, in :data:`KINDS` order).

    Negative = the plan spends less there. The values add up to ``−savings``. Where the cost lands, not what
    earned the saving: that is the attribution by lever (:mod:`finops_cli.planner.levers`).
    """
    base, plan = cost_by_kind(baseline_by_substrate, fleet), cost_by_kind(planned_by_substrate, fleet)
    present = {s.kind for s in fleet.substrates} | set(base) | set(plan)
    return {k: plan.get(k, 0.0) - base.get(k, 0.0) for k in KINDS if k in present}

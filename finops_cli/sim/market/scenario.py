"""The market scenario file: accelerators for rent and the tenants who want them (YAML, validated).

.. code-block:: yaml

    version: 1
    accelerators:
      - {type: A10, count: 1, base_price_per_hour: 0.606}
    tenants:
      - id: app-a
        arrival_hours: 0
        work: 1.0                              # units of work (execution_hours are per unit)
        execution_hours: {A10: 0.35, L4: 0.51} # a missing type = cannot run there
        checkpoint_interval_hours: 0.2         # wall time between checkpoints while running
        checkpoint_restart_cost: 0.0088        # USD paid per migration (restore, transfer)
        restart_hours: 0                       # wall time to restore on the new accelerator (billed there)
        budget: null                           # USD; caps the tenant's bids when set
        value_per_hour: 0                      # USD an hour earlier is worth (0: the break-even agent)
        deadline: {hours: 2.0, kind: soft, penalty_per_hour: 5.0}   # or {hours, kind: hard, penalty}
        overhead_estimate: 1.0                 # the agent's estimate of its migration cost ÷ the true one
        stateless: false                       # true: a service whose moves lose no work
        lifetime_hours: null                   # a service: ends this long after arrival; work = its requests
        agent: null                            # planner | fixed (null: planner iff it has a budget)
    launch_table: [{type: A10, max_price: 0.9}, {type: L4}]   # ranked; omitted: by cost
    options: {bid_clip: null, floor_fall_per_hour: null, incumbent_migration: add}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class LoadPricing(_Strict):
    r"""An operator constraint expressed only as a price: the pool's floor rises with its load.

    .. math::

        \text{floor}(u) = \text{base} \cdot \left(1 + (m - 1)\,\frac{\max(0, u - k)}{1 - k}\right)

    with :math:`u` the share of the pool's accelerators held, :math:`k` = ``knee`` and :math:`m` =
    ``multiple_at_full``. Only ``renegotiate`` reprices running allocations; the fixed-price policies
    ignore it (their contracts cannot change a running price). See docs/market.md, *operator*.
    """

    knee: float = Field(ge=0, lt=1)
    multiple_at_full: float = Field(ge=1)
    cap: float | None = Field(default=None, gt=0, le=1)  # the load the operator wants to stay under (reported)


class AcceleratorPool(_Strict):
    """``count`` identical accelerators of one ``type`` with a base (floor) price per hour."""

    type: str = Field(min_length=1)
    count: int = Field(ge=1)
    base_price_per_hour: float = Field(ge=0)
    load_pricing: LoadPricing | None = None


class Deadline(_Strict):
    """When the tenant wants to be done, ``hours`` after its arrival, and what missing it costs.

    ``soft``: ``penalty_per_hour`` USD for every hour late. ``hard``: ``penalty`` USD (the job's value)
    forfeited when it finishes late. The simulators never kill a late job; the penalty is reported.
    """

    hours: PositiveFloat
    kind: Literal["hard", "soft"] = "soft"
    penalty: float | None = Field(default=None, ge=0)
    penalty_per_hour: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _penalty_matches_kind(self) -> Deadline:
        if self.kind == "hard":
            if self.penalty is None:
                raise ValueError("a hard deadline needs `penalty` (USD forfeited when late)")
            if self.penalty_per_hour is not None:
                raise ValueError("`penalty_per_hour` is for soft deadlines; a hard one takes `penalty`")
        else:
            if self.penalty_per_hour is None:
                raise ValueError("a soft deadline needs `penalty_per_hour` (USD per hour late)")
            if self.penalty is not None:
                raise ValueError("`penalty` is for hard deadlines; a soft one takes `penalty_per_hour`")
        return self

    def penalty_at(self, late_hours: float) -> float:
        """USD owed for finishing ``late_hours`` after the deadline (≤ 0: on time)."""
        if late_hours <= 1e-9:
            return 0.0
        return float(self.penalty or 0.0) if self.kind == "hard" else late_hours * float(self.penalty_per_hour or 0.0)


class ValueRamp(_Strict):
    """Time-varying value (the paper's Fig. 2): the tenant's value of time rises linearly from its
    ``value_per_hour`` at arrival to ``to_value_per_hour`` at ``over_hours`` after arrival, then stays."""

    to_value_per_hour: float = Field(ge=0)
    over_hours: PositiveFloat


class LaunchEntry(_Strict):
    """One row of a tenant's launch table: a compatible type and the most it will pay for it (USD/h)."""

    type: str = Field(min_length=1)
    max_price: float | None = Field(default=None, gt=0)


class Tenant(_Strict):
    """A job that wants accelerator time; its agent bids on its behalf under ``renegotiate``.

    ``launch_table`` (the paper's user request): a ranked list of compatible types with a maximum price
    each. When given, it *is* the tenant's preference order (only the listed types are used); when
    omitted, the order is :meth:`preference`'s least generalized cost at base prices, with no maximum.
    """

    id: str = Field(min_length=1)
    arrival_hours: float = Field(default=0.0, ge=0)
    work: PositiveFloat = 1.0
    execution_hours: dict[str, PositiveFloat] = Field(min_length=1)
    checkpoint_interval_hours: PositiveFloat
    checkpoint_restart_cost: float = Field(default=0.0, ge=0)
    restart_hours: float = Field(default=0.0, ge=0)
    budget: PositiveFloat | None = None
    value_per_hour: float = Field(default=0.0, ge=0)  # USD: what finishing an hour earlier is worth
    value_ramp: ValueRamp | None = None  # the value of time rises after arrival (None: constant)
    deadline: Deadline | None = None
    overhead_estimate: PositiveFloat = 1.0  # the agent's migration cost estimate ÷ the true cost
    stateless: bool = False  # a service: a move loses no work (checkpoint_interval_hours: its agent's period)
    launch_table: list[LaunchEntry] | None = Field(default=None, min_length=1)
    spot_opt_in: bool | None = None  # under ``spot``: buy the spot class (None: iff no value of time, no deadline)
    agent: Literal["planner", "fixed"] | None = None  # under ``renegotiate`` (None: planner iff it has a budget)
    lifetime_hours: PositiveFloat | None = None  # a service that lives this long from arrival (see below)

    def plans(self) -> bool:
        """Whether its agent re-plans its type at live prices within its remaining budget at every update
        (``planner``) rather than bidding for the type it ranked at launch (``fixed``, a budget only caps
        the bid)."""
        return self.agent == "planner" if self.agent is not None else self.budget is not None

    def opts_into_spot(self) -> bool:
        """Whether this tenant buys the spot class under the ``spot`` baseline."""
        if self.spot_opt_in is not None:
            return self.spot_opt_in
        return self.value_per_hour == 0 and self.deadline is None and self.value_ramp is None

    def value_at(self, t: float) -> float:
        """USD an hour earlier is worth at simulation time ``t`` (rises along ``value_ramp``)."""
        r = self.value_ramp
        if r is None:
            return self.value_per_hour
        share = min(1.0, max(0.0, (t - self.arrival_hours) / r.over_hours))
        return self.value_per_hour + (r.to_value_per_hour - self.value_per_hour) * share

    def time_value(self, finish: float) -> float:
        """∫ value of time dt from arrival to ``finish`` (USD): ``value_per_hour`` × hours when constant."""
        took = max(0.0, finish - self.arrival_hours)
        r = self.value_ramp
        if r is None:
            return took * self.value_per_hour
        ramp = min(took, r.over_hours)
        v0, v1 = self.value_per_hour, self.value_at(self.arrival_hours + ramp)
        return (v0 + v1) / 2 * ramp + r.to_value_per_hour * (took - ramp)

    def max_price(self, accelerator_type: str) -> float | None:
        """The launch table's maximum price for a type (None: no maximum)."""
        for e in self.launch_table or []:
            if e.type == accelerator_type:
                return e.max_price
        return None

    def hours_on(self, accelerator_type: str) -> float:
        """Wall hours to do all the work on one accelerator of this type.

        A service with ``lifetime_hours`` receives ``work`` units of requests evenly over its lifetime (its
        request rate: ``work ÷ lifetime_hours``) and serves at most that rate: on a type fast enough it takes
        the whole lifetime; on a slower one, ``work × execution_hours`` (it falls behind, and whatever is
        not served when its lifetime ends is lost: the throughput it did not retain)."""
        hours = self.work * self.execution_hours[accelerator_type]
        return hours if self.lifetime_hours is None else max(hours, self.lifetime_hours)

    def penalty_at(self, finish_hours: float) -> float:
        """USD the deadline charges for finishing at ``finish_hours`` (simulation clock); 0 without one."""
        d = self.deadline
        return 0.0 if d is None else d.penalty_at(finish_hours - self.arrival_hours - d.hours)

    def preference(self, base_prices: Mapping[str, float]) -> list[str]:
        """Compatible types, best first: least generalized cost to do all the work at base prices
        (hours × (price + ``value_per_hour``) + deadline penalty), then fastest, then listing order.

        With ``value_per_hour`` 0 and no deadline: cheapest to finish. Every policy and the generated
        scenario families rank types with this one rule. A ``launch_table`` overrides it: its order.
        """
        if self.launch_table is not None:
            return [e.type for e in self.launch_table if e.type in base_prices]
        order = {k: n for n, k in enumerate(base_prices)}

        def key(k: str) -> tuple[float, float, int]:
            h = self.hours_on(k)
            return (h * (base_prices[k] + self.value_per_hour) + self.penalty_at(self.arrival_hours + h), h, order[k])

        return sorted((k for k in self.execution_hours if k in base_prices), key=key)


class MarketOptions(_Strict):
    """Volatility controls and the sign of the incumbent's migration adjustment (see docs/market.md)."""

    bid_clip: float | None = Field(default=None, ge=0)  # a bid may exceed the current price by at most this share
    floor_fall_per_hour: float | None = Field(default=None, gt=0)  # USD/h per hour the price may fall
    incumbent_migration: Literal["subtract", "add"] = "add"
    max_bid_multiple: PositiveFloat = 10.0
    spot_price_share: float = Field(
        default=0.3, gt=0, le=1
    )  # spot price ÷ base price (``spot`` policy)  # bid (× base) of a tenant with no alternative and no budget


class Scenario(_Strict):
    """``scenario.yaml`` for ``finops simulate market``."""

    version: Literal[1]
    name: str | None = None
    accelerators: list[AcceleratorPool] = Field(min_length=1)
    tenants: list[Tenant] = Field(min_length=1)
    options: MarketOptions = Field(default_factory=MarketOptions)

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        types: set[str] = set()
        for i, a in enumerate(self.accelerators):
            if a.type in types:
                raise ValueError(f"accelerators[{i}].type: duplicate type {a.type!r} (give one pool per type)")
            types.add(a.type)
        seen: set[str] = set()
        for i, t in enumerate(self.tenants):
            if t.id in seen:
                raise ValueError(f"tenants[{i}].id: duplicate id {t.id!r}")
            seen.add(t.id)
            for k in t.execution_hours:
                if k not in types:
                    raise ValueError(f"tenants[{i}].execution_hours.{k}: no accelerator of type {k!r} in accelerators")
            listed: set[str] = set()
            for n, e in enumerate(t.launch_table or []):
                if e.type not in t.execution_hours:
                    where = f"tenants[{i}].launch_table[{n}].type"
                    raise ValueError(f"{where}: {e.type!r} is not in the tenant's execution_hours")
                if e.type in listed:
                    raise ValueError(f"tenants[{i}].launch_table[{n}].type: {e.type!r} listed twice")
                listed.add(e.type)
        return self

    def base_price(self, accelerator_type: str) -> float:
        for a in self.accelerators:
            if a.type == accelerator_type:
                return a.base_price_per_hour
        raise KeyError(accelerator_type)

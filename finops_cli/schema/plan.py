"""The plan document (``finops plan --format json`` / ``--out plan.json``), schema version 1: the contract between
the planner and its readers (report, gate, CI), published as ``docs/plan.schema.json``. Money is in ``currency``;
GPU-hours and units are totals over the horizon. Extra fields are allowed so minor additions break no reader.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from finops_cli.schema.currency import check_iso4217

SCHEMA_VERSION: Final = 1


class _Doc(BaseModel):
    # A plan holds finite amounts; NaN/Infinity in a hand-edited plan.json is refused (the field is named).
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)


class Horizon(_Doc):
    start: str  # ISO-8601 UTC
    hours: int = Field(gt=0)
    blocks: int = Field(gt=0)


class SolverInfo(_Doc):
    name: str
    status: str
    objective: float | None
    mip_gap: float | None
    seconds: float = Field(ge=0)
    best_bound: float | None = None


class Totals(_Doc):
    planned_cost: float
    baseline_cost: float | None
    savings: float | None
    savings_pct: float | None  # percent of the baseline (56.9 means 56.9 %), like the gate's delta_pct
    sunk_cost: float
    penalty: float = 0.0  # reliability penalties: steer the plan, are not money
    usage_cost: float | None = None  # GPU-hours (and API units) at marginal price, congestion + NETC included
    commitment_cost: float | None = None  # commitments bought by the plan, whole horizon
    netc_overhead: float | None = None  # part of usage_cost that preemptions add on spot: C·(W − 1) + λ·W·F
    baseline_source: Literal["billing", "merit_order"] | None = None  # merit_order: an estimate, not a bill
    baseline_billed_cost: float | None = None  # billing baseline: Σ BilledCost (as billed) of the same lines
    merit_order_cost: float | None = None  # greedy merit-order dispatch of the same demand (always shown)
    # units the greedy reference could not place; > 0: it is no baseline and no saving is claimed against it
    merit_order_unserved_units: float | None = None
    node_rounding_cost: float | None = None  # --integer-nodes: idle GPUs of whole nodes provisioned, at base price
    # without --integer-nodes: (substrate, block) pairs where the plan assumed a fractional number of nodes of a
    # node-billed substrate, their node-hours, and what rounding them up to whole nodes would add
    fractional_nodes: int | None = None
    fractional_node_hours: float | None = None
    fractional_node_rounding_cost: float | None = None


class Allocation(_Doc):
    workload: str
    substrate: str
    kind: str
    gpu_hours: float = Field(ge=0)
    units: float = Field(ge=0)
    cost: float
    netc_overhead: float | None = None  # part of cost that spot preemptions add; typed so the report can sum it
    unit: str | None = None  # the workload's unit of output
    # merit-order money per unit, uncongested: (C·W + λ·W·F) × preference / throughput (stack and netc print it)
    price_per_unit: float | None = None
    slo: str | None = None  # the workload's slo (latency_critical, standard, offline)
    interruptible: bool | None = None  # the workload may be preempted and resumed
    team: str | None = None  # the workload's team (workloads.yaml), for showback against `finops costs --by team`


class Commitment(_Doc):
    substrate: str
    blocks: int = Field(ge=0)
    gpus: float = Field(ge=0)
    cost: float


class Unserved(_Doc):
    workload: str
    block: int
    units: float


class SavingsBreakdown(_Doc):
    """Read-only: plans written before the lever attribution carried baseline − plan by substrate kind under
    this name. New plans write ``cost_change_by_kind`` and ``savings_by_lever`` instead."""

    idle_reclaimed: float  # owned + on_demand
    spot_shift: float  # spot, interruptible work only
    commitment_sizing: float  # reserved (prepaid + bought)
    api_overflow: float  # api
    spot_non_interruptible: float = 0.0  # minus the planned cost of non-interruptible work on spot (a risk)


LeverName = Literal["right_sizing", "commitments", "spot", "api", "reliability"]
#: measured: idle from utilisation; inferred: idle from the demand profiles; modelled: a re-solve of the plan;
#: not_measured: no data to say; not_applied: the plan does not use the lever (its saving is 0)
LeverEvidence = Literal["measured", "inferred", "modelled", "not_measured", "not_applied"]


class LeverSaving(_Doc):
    """One lever's share of the saving (docs/economics.md §6)."""

    lever: LeverName
    label: str  # in words, as the report prints it
    saving: float  # negative: the lever costs money (the cost of reliability)
    evidence: LeverEvidence
    basis: str  # what the figure rests on, one sentence
    applied: bool
    measured_share: float | None = None  # right_sizing: share of the paid GPU-hours whose idle was measured


class SavingsByLever(_Doc):
    """``totals.savings = residual + Σ levers[].saving``, to the cent.

    ``model_baseline_cost`` is the cheapest plan with every lever off (the baseline's own options); the
    ``residual`` (``baseline_cost − model_baseline_cost``) is what the baseline paid beyond it, which no lever
    explains: ``price_difference`` (the bill's rates vs the fleet's prices) + ``placement`` (the bill's work moved to
    cheaper pools the bill already used, at fleet prices).
    """

    method: Literal["shapley", "ordered"]
    order: list[LeverName] = Field(default_factory=list)  # the ordered method's order (empty for Shapley)
    levers: list[LeverSaving]
    residual: float
    residual_basis: str
    price_difference: float | None = None  # part of the residual: the bill's rates vs the fleet's prices
    placement: float | None = None  # the rest of it: the bill's work re-placed on its own pools, at fleet prices
    model_baseline_cost: float
    solves: int = Field(ge=0)
    seconds: float = Field(ge=0)
    notes: list[str] = Field(default_factory=list)


class SubstrateCost(_Doc):
    substrate: str
    kind: str
    planned_cost: float
    baseline_cost: float | None = None
    merit_order_cost: float | None = None
    billed: bool | None = None  # billing baseline: billing lines matched this substrate (None: no billing baseline)
    node_hours: float | None = None  # --integer-nodes: Σ_b nodes × block hours provisioned
    node_rounding_cost: float | None = None  # --integer-nodes: idle remainder of those nodes (in planned_cost)


class ClearingPrice(_Doc):
    """Dual of a demand row: marginal cost of one more unit of the workload's output (block −1: horizon)."""

    workload: str
    block: int
    hours: float
    price_per_unit: float


class PriceUsed(_Doc):
    """One substrate's marginal price as the plan used it (``finops_cli.estate.prices.resolve_fleet``).

    ``value`` is per GPU-hour in ``currency`` (the plan's); ``quoted`` × ``fx_rate`` = ``value`` when the
    price was quoted in another currency (``quoted_currency``). Feed prices name the ``statistic``, the
    window (``window_start``..``window_end``), the price changes in it (``samples``) and the ``product``.
    """

    substrate: str
    value: float | None  # None: an API substrate, priced per unit (price_per_unit in fleet.yaml)
    currency: str
    source: Literal["fleet", "price_ref", "price_feed"]
    statistic: str | None = None
    window_start: str | None = None  # ISO-8601 UTC
    window_end: str | None = None
    samples: int | None = None
    product: str | None = None
    age_days: int | None = None  # days from read_on (price_ref) or the newest price used (price_feed)
    quoted: float | None = None
    quoted_currency: str | None = None
    fx_rate: float | None = None
    method: str | None = None  # fixed | price_feed | price_ref | api | committed
    detail: str | None = None  # one line: where the price came from
    read_on: str | None = None  # price_ref: the date the pricebook row was read or fetched
    unit_prices: dict[str, float] | None = None  # api substrates: price per unit served, by unit
    ref: str | None = None  # price_ref: the pricebook row, provider/offering/term
    pricebook_region: str | None = None
    pricebook_source: str | None = None  # the row's own source (a provider's page or price API call)
    pricebook: str | None = None  # "shipped" or the user pricebook file the row came from
    fetched_at: str | None = None  # ISO-8601 UTC, rows written by finops pricebook refresh
    covered_hours: float | None = None  # price_feed: hours of the window its data covers (a young feed: fewer)
    window_days: float | None = None  # price_feed: the window the statistic was asked over


class Certification(_Doc):
    """The plan's own bound on its distance from the hourly optimum (docs/planner.md, "Certified accuracy").

    Bounds are on the objective (money that can still change plus reliability penalty; sunk cost excluded):
    ``lower_bound`` ≤ hourly optimum ≤ ``upper_bound``, the objective of the hourly schedule
    (``finops plan --schedule``), which is feasible in every hour.
    """

    lower_bound: float
    upper_bound: float
    gap: float = Field(ge=0)  # (upper − lower) / upper
    tolerance: float = Field(ge=0)
    certified: bool  # gap <= tolerance
    schedule_cost: float  # the schedule's money (upper bound − its penalty + sunk), comparable to planned_cost
    blocks: int = Field(ge=1)  # after refinement
    rounds: int = Field(ge=0)  # refinements of the blocks
    repaired_hours: int = Field(ge=0)  # hours where the block plan spread over the hours broke a row
    unserved_units: float = Field(ge=0)
    seconds: float = Field(ge=0)


class DemandSource(_Doc):
    """What a ``from_store`` demand measured and how it filled the horizon (``extension``)."""

    workload: str
    tag: str
    value: str
    quantity: Literal["busy_gpu_hours", "allocated_gpu_hours"]
    source: Literal["utilization", "billing"]
    gpu_hours: float = Field(ge=0)  # observed in the horizon, before any extension
    observed_hours: int = Field(ge=0)  # horizon hours the observations cover
    horizon_hours: int = Field(gt=0)
    extension: Literal["none", "repeat", "zero"]


class PlanDocument(_Doc):
    schema_version: Literal[1] = SCHEMA_VERSION
    currency: Annotated[str, AfterValidator(check_iso4217)]
    horizon: Horizon
    # the instant price ages and "the current month" were counted from (--as-of, default the time of planning)
    as_of: datetime | None = None
    solver: SolverInfo
    totals: Totals
    allocations: list[Allocation]
    commitments: list[Commitment]
    unserved: list[Unserved]
    mode: Literal["cost", "reliability"] = "cost"
    savings_breakdown: SavingsBreakdown | None = None  # older plans only (read, never written)
    # planned − baseline cost per substrate kind: where the cost lands (not a lever; Σ = −totals.savings)
    cost_change_by_kind: dict[str, float] | None = None
    savings_by_lever: SavingsByLever | None = None  # what earned the saving (None without a baseline)
    by_substrate: list[SubstrateCost] = Field(default_factory=list)
    clearing_prices: list[ClearingPrice] = Field(default_factory=list)
    merit_order_unserved: list[Unserved] = Field(default_factory=list)  # the greedy reference's shortfall
    notes: list[str] = Field(default_factory=list)  # e.g. spot refused for a workload (it would never finish)
    prices: list[PriceUsed] = Field(default_factory=list)  # per substrate: the price used and where it came from
    fx: dict[str, float] = Field(default_factory=dict)  # exchange rates applied, {"USD:CAD": 1.37}
    certification: Certification | None = None

    demand_sources: list[DemandSource] = Field(default_factory=list)  # from_store workloads only


def json_schema_text() -> str:
    """The published ``docs/plan.schema.json`` (``python -m finops_cli.schema.plan > docs/plan.schema.json``)."""
    import json

    schema = PlanDocument.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://finops.example/plan.schema.json"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(json_schema_text(), end="")

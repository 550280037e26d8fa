"""The estate contract, ``fleet.yaml`` and ``workloads.yaml`` version 1: what a valid estate is (loading and error
formatting: :mod:`finops_cli.estate.load`). Unknown keys are errors, so a typo (``gpu: 8``) fails loudly; units are
in the field names.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PositiveFloat, model_validator

from finops_cli.schema.currency import check_iso4217

SubstrateKind = Literal["owned", "reserved", "on_demand", "spot", "api"]
Isolation = Literal["dedicated", "shared"]
Status = Literal["up", "degraded", "down"]
Slo = Literal["latency_critical", "standard", "offline"]
Statistic = Literal["mean", "p50", "p90", "latest"]
#: an exchange-rate key: ``FROM:TO`` ISO 4217 codes
FX_PAIR = re.compile(r"[A-Z]{3}:[A-Z]{3}")


#: Bounds that keep every valid estate a solvable model: a price of 1e308 or a throughput of 1e-308
#: validates as a number but overflows or underflows the solver's coefficients. Each is far beyond any
#: real fleet (docs/security.md).
MAX_PRICE = 1e6  # currency per GPU-hour, per unit served, or per resume
MAX_GPUS = 1e7
MIN_THROUGHPUT, MAX_THROUGHPUT = 1e-6, 1e9  # units per GPU-hour
MAX_INTERRUPTIONS_PER_HOUR = 60.0  # one preemption a minute
MIN_CHECKPOINT_MINUTES, MAX_MINUTES = 0.1, 525_600.0  # six seconds .. a year
MAX_DEMAND = 1e15
Price = Annotated[float, Field(ge=0, le=MAX_PRICE)]
Currency = Annotated[str, AfterValidator(check_iso4217)]
Throughput = Annotated[float, Field(ge=MIN_THROUGHPUT, le=MAX_THROUGHPUT)]


class _Strict(BaseModel):
    # allow_inf_nan=False: a price, capacity or demand of .inf/.nan in YAML is a typo, never a value.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class PriceFeed(_Strict):
    """Resolve a substrate's price from the spot-price store instead of a fixed number."""

    provider: str
    region: str
    instance_type: str
    gpus_per_instance: PositiveFloat | None = Field(default=None, le=1e4)  # default: the pricebook's instance table
    statistic: Statistic = "p90"
    window_days: PositiveFloat = Field(default=30.0, le=3650)
    product: str | None = Field(default=None, min_length=1)  # default: Linux/UNIX on AWS, else the only one


class Interruption(_Strict):
    """Where a spot substrate's preemption rate λ comes from instead of a fixed ``interruptions_per_hour``."""

    trace: str = Field(min_length=1)  # Can't Be Late JSON or preemption CSV, relative to fleet.yaml
    nodes: int | None = Field(default=None, ge=1)  # nodes a multi-node Can't Be Late trace watched


class Purchasable(_Strict):
    """A commitment the planner may buy in whole blocks, paid for the whole horizon used or not."""

    block_gpus: PositiveFloat = Field(le=MAX_GPUS)
    price_per_gpu_hour: float = Field(ge=0, le=MAX_PRICE)
    max_blocks: int = Field(ge=0, le=1_000_000)


class CongestionStep(_Strict):
    """Above the previous step's utilisation and up to ``up_to``, each GPU-hour costs ``multiplier`` × price."""

    up_to: float = Field(gt=0, le=1)
    multiplier: float = Field(ge=1, le=1000)


def _check_unique_ids(field: str, ids: list[str]) -> None:
    seen: set[str] = set()
    for i, item_id in enumerate(ids):
        if item_id in seen:
            raise ValueError(f"{field}[{i}].id: duplicate id {item_id!r}")
        seen.add(item_id)


def _default_congestion() -> list[CongestionStep]:
    return [CongestionStep(up_to=0.95, multiplier=1.25), CongestionStep(up_to=1.0, multiplier=1.6)]


class Substrate(_Strict):
    """One place work can run: a pool of GPUs under one billing model, or a model API."""

    id: str = Field(min_length=1)
    provider: str = Field(min_length=1)
    kind: SubstrateKind
    accelerator: str | None = None
    region: str | None = None
    jurisdiction: str = Field(min_length=1)
    isolation: Isolation = "dedicated"
    gpus: float | None = Field(default=None, ge=0, le=MAX_GPUS)
    gpus_per_node: PositiveFloat | None = Field(default=None, le=1e4)
    price_per_gpu_hour: float | None = Field(default=None, ge=0, le=MAX_PRICE)
    price_feed: PriceFeed | None = None
    # "<provider>/<offering>/<term>[/<region>]" in the pricebook (reference_prices.csv, shipped + user); an api
    # substrate may map its units to per-unit refs instead: {Mtokens: anthropic/claude-sonnet-output/api}
    price_ref: str | dict[str, str] | None = None
    committed_per_gpu_hour: float = Field(default=0.0, ge=0, le=MAX_PRICE)
    comfortable_utilization: float = Field(default=0.85, gt=0, le=1)
    preference: PositiveFloat = Field(default=1.0, le=1e6)
    status: Status = "up"
    degraded_capacity_factor: float | None = Field(default=None, gt=0, le=1)
    interruptions_per_hour: float | None = Field(default=None, ge=0, le=MAX_INTERRUPTIONS_PER_HOUR)
    interruption: Interruption | None = None  # measure λ from a trace (resolved when the fleet is loaded)
    resume_minutes: float = Field(default=0.0, ge=0, le=MAX_MINUTES)
    resume_cost: float = Field(default=0.0, ge=0, le=MAX_PRICE)
    purchasable: Purchasable | None = None
    price_per_unit: dict[str, Price] | None = None  # api: currency per unit served, e.g. {Mtokens: 15.0}
    instance_type: str | None = None  # for matching billing lines to this substrate
    match: dict[str, str] | None = None  # extra billing-line matchers, e.g. {ResourceId: "cw-..."}

    @model_validator(mode="after")
    def _kind_rules(self) -> Substrate:
        if self.kind == "api":
            if not self.price_per_unit and not self.price_ref:
                raise ValueError(
                    "an api substrate needs price_per_unit (e.g. {Mtokens: 15.0}) or price_ref "
                    "(e.g. anthropic/claude-sonnet-output/api)"
                )
            if self.price_per_unit and self.price_ref:
                raise ValueError("give one of price_per_unit, price_ref")
            if any(v < 0 for v in (self.price_per_unit or {}).values()):
                raise ValueError("price_per_unit values must be >= 0")
            return self
        if isinstance(self.price_ref, dict):
            raise ValueError("price_ref maps units to refs only for api substrates; give provider/offering/term")
        if not self.accelerator:
            raise ValueError(f"a {self.kind} substrate needs an accelerator")
        if self.price_per_unit:
            raise ValueError("price_per_unit is only for api substrates")
        n_prices = sum(x is not None for x in (self.price_per_gpu_hour, self.price_feed, self.price_ref))
        if n_prices > 1:
            raise ValueError("give one of price_per_gpu_hour, price_feed, price_ref")
        if n_prices == 0 and self.kind != "reserved":
            raise ValueError(f"a {self.kind} substrate needs price_per_gpu_hour, price_feed or price_ref")
        if self.interruption is not None and self.kind != "spot":
            raise ValueError("interruption is only for spot substrates")
        if self.interruption is not None and self.interruptions_per_hour is not None:
            raise ValueError("give one of interruptions_per_hour, interruption (a trace to measure it from)")
        if self.kind == "spot" and self.interruptions_per_hour is None and self.interruption is None:
            raise ValueError("a spot substrate needs interruptions_per_hour or interruption: {trace: FILE}")
        if self.kind in ("owned", "reserved", "spot") and self.gpus is None and self.purchasable is None:
            raise ValueError(f"a {self.kind} substrate needs gpus (its capacity)")
        if self.kind == "reserved" and not (self.gpus or self.purchasable):
            raise ValueError("a reserved substrate needs gpus > 0 or a purchasable block")
        if self.purchasable is not None and self.kind != "reserved":
            raise ValueError("purchasable is only for reserved substrates")
        return self


class Fleet(_Strict):
    """``fleet.yaml``: every substrate, plus fleet-wide economic knobs."""

    version: Literal[1]
    currency: Currency = "USD"
    substrates: list[Substrate] = Field(min_length=1)
    congestion: list[CongestionStep] = Field(default_factory=_default_congestion)
    reliability_penalty_per_gpu_hour: float = Field(default=5.0, ge=0, le=MAX_PRICE)
    degraded_capacity_factor: float = Field(default=0.5, gt=0, le=1)
    fx: dict[str, Annotated[float, Field(gt=0, le=1e9)]] = Field(default_factory=dict)  # {"USD:CAD": 1.37}

    @model_validator(mode="after")
    def _unique_ids(self) -> Fleet:
        for pair in self.fx:
            src, _, dst = pair.partition(":")
            if not (FX_PAIR.fullmatch(pair) and src != dst):
                raise ValueError(f"fx: {pair!r}: expected FROM:TO currency codes such as USD:CAD")
            if dst != self.currency:
                raise ValueError(f"fx: {pair!r}: converts into {dst}, but the fleet's currency is {self.currency}")
        _check_unique_ids("substrates", [s.id for s in self.substrates])
        ups = [c.up_to for c in self.congestion]
        if ups != sorted(ups) or (ups and ups[-1] != 1.0):
            raise ValueError("congestion: steps must rise in up_to and end at 1.0")
        mults = [c.multiplier for c in self.congestion]
        if mults != sorted(mults):
            raise ValueError("congestion: multipliers must not fall (costs are convex)")
        return self

    def substrate(self, substrate_id: str) -> Substrate:
        for s in self.substrates:
            if s.id == substrate_id:
                return s
        raise KeyError(substrate_id)


class FromStore(_Strict):
    """Demand observed in the store: GPU-hours of lines/devices whose ``tag`` equals ``value``.

    ``quantity`` says which GPU-hours: *busy* (Σ utilisation × interval, from the utilisation trace) or
    *allocated* (the hours the GPUs were held: Σ interval from the trace, or ConsumedQuantity × GPUs from
    billing). ``extend`` says what happens when the observations cover less than the horizon: ``none``
    refuses (exit 2), ``repeat`` tiles the observed hours over the horizon, ``zero`` plans no demand
    outside them.
    """

    tag: str
    value: str
    quantity: Literal["busy_gpu_hours", "allocated_gpu_hours"] = "busy_gpu_hours"
    extend: Literal["none", "repeat", "zero"] = "none"


class Demand(_Strict):
    """Exactly one of: a horizon ``total``, an hourly ``profile`` CSV (hour,units), or ``from_store``."""

    total: float | None = Field(default=None, ge=0, le=MAX_DEMAND)
    profile: str | None = None
    from_store: FromStore | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Demand:
        n = sum(x is not None for x in (self.total, self.profile, self.from_store))
        if n != 1:
            raise ValueError("give exactly one of total, profile, from_store")
        return self


class Requires(_Strict):
    """Compliance constraints; ``None`` means unconstrained."""

    jurisdictions: list[str] | None = None
    providers: list[str] | None = None
    isolation: Isolation | None = None


class Checkpoint(_Strict):
    interval_minutes: float = Field(ge=MIN_CHECKPOINT_MINUTES, le=MAX_MINUTES)
    write_minutes: float = Field(default=0.0, ge=0, le=MAX_MINUTES)


class Workload(_Strict):
    """A stream of work with a unit of usable output and where it may run."""

    id: str = Field(min_length=1)
    team: str = "unassigned"
    slo: Slo = "standard"
    interruptible: bool = False
    unit: str = Field(min_length=1)
    demand: Demand
    deferrable: bool = False
    max_parallel_gpus: PositiveFloat | None = Field(default=None, le=MAX_GPUS)
    throughput: dict[str, Throughput] = Field(default_factory=dict)  # units per GPU-hour by accelerator
    requires: Requires = Field(default_factory=Requires)
    checkpoint: Checkpoint | None = None


class Workloads(_Strict):
    """``workloads.yaml``."""

    version: Literal[1]
    workloads: list[Workload] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> Workloads:
        _check_unique_ids("workloads", [w.id for w in self.workloads])
        return self


#: Published JSON Schemas (``docs/<name>.schema.json``) for editors: name -> model.
JSON_SCHEMAS: dict[str, type[BaseModel]] = {"fleet": Fleet, "workloads": Workloads}


def json_schema_text(name: str) -> str:
    """The published ``docs/fleet.schema.json`` or ``docs/workloads.schema.json`` (regenerate with
    ``python -m finops_cli.schema.estate fleet > docs/fleet.schema.json``, likewise ``workloads``)."""
    import json

    schema = JSON_SCHEMAS[name].model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://finops.example/{name}.schema.json"
    schema["title"] = f"finops {name}.yaml"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    import sys

    print(json_schema_text(sys.argv[1] if len(sys.argv) > 1 else "fleet"), end="")

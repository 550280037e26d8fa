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
    options: {bid_clip: null, floor_fall_per_hour: null, incumbent_migration: subtract}
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class AcceleratorPool(_Strict):
    """``count`` identical accelerators of one ``type`` with a base (floor) price per hour."""

    type: str = Field(min_length=1)
    count: int = Field(ge=1)
    base_price_per_hour: float = Field(ge=0)


class Tenant(_Strict):
    """A job that wants accelerator time; its agent bids on its behalf under ``renegotiate``."""

    id: str = Field(min_length=1)
    arrival_hours: float = Field(default=0.0, ge=0)
    work: PositiveFloat = 1.0
    execution_hours: dict[str, PositiveFloat] = Field(min_length=1)
    checkpoint_interval_hours: PositiveFloat
    checkpoint_restart_cost: float = Field(default=0.0, ge=0)
    restart_hours: float = Field(default=0.0, ge=0)
    budget: PositiveFloat | None = None

    def hours_on(self, accelerator_type: str) -> float:
        """Wall hours to do all the work on one accelerator of this type."""
        return self.work * self.execution_hours[accelerator_type]


class MarketOptions(_Strict):
    """Volatility controls and the sign of the incumbent's migration adjustment (see docs/market.md)."""

    bid_clip: float | None = Field(default=None, ge=0)  # a bid may exceed the current price by at most this share
    floor_fall_per_hour: float | None = Field(default=None, gt=0)  # USD/h per hour the price may fall
    incumbent_migration: Literal["subtract", "add"] = "subtract"
    max_bid_multiple: PositiveFloat = 10.0  # bid (× base) of a tenant with no alternative and no budget


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
        return self

    def base_price(self, accelerator_type: str) -> float:
        for a in self.accelerators:
            if a.type == accelerator_type:
                return a.base_price_per_hour
        raise KeyError(accelerator_type)

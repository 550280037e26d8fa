"""The priced estate: a fleet (and its workloads) priced once for one horizon and one as-of instant, then handed
to ``stack``, ``netc``, ``plan``, the report and ``simulate dispatch``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from finops_cli.estate.demand_io import ObservedDemand, estate_demand_sources
from finops_cli.estate.horizon import choose_horizon
from finops_cli.estate.load import Estate
from finops_cli.estate.prices import needs_store, resolve_fleet
from finops_cli.store import open_store, store_exists

if TYPE_CHECKING:
    import pandas as pd

    from finops_cli.core.demand import Horizon
    from finops_cli.estate.horizon import HorizonChoice
    from finops_cli.estate.prices import PriceSource
    from finops_cli.schema.estate import Fleet
    from finops_cli.store import Store


@dataclass
class PricedEstate:
    """An estate (or a fleet on its own) priced for one horizon: ``fleet`` resolved, ``sources`` where each price
    came from, ``as_of`` the UTC instant ages and "the current month" count from, ``fx`` the rates given."""

    estate: Estate | None
    fleet: Fleet
    sources: list[PriceSource]
    choice: HorizonChoice
    store: Store | None
    as_of: datetime
    fx: dict[str, float] | None = None
    #: the fleet as loaded, before pricing (waste prices devices from its own rules)
    loaded_fleet: Fleet | None = field(default=None, repr=False)

    @property
    def horizon(self) -> Horizon:
        return self.choice.horizon

    @property
    def resolved(self) -> Estate:
        """The estate with its fleet priced (raises when this is a fleet on its own)."""
        if self.estate is None:
            raise ValueError("a fleet priced without workloads has no estate")
        return replace(self.estate, fleet=self.fleet)

    @cached_property
    def demand_sources(self) -> tuple[pd.DataFrame, list[ObservedDemand]]:
        """Units per hour per workload over the horizon and what each ``from_store`` demand measured (read once)."""
        return estate_demand_sources(self.resolved, self.horizon, self.store)

    @property
    def demand(self) -> pd.DataFrame:
        """A copy of :attr:`demand_sources`' frame (callers may change theirs)."""
        return self.demand_sources[0].copy()


def as_of_instant(as_of: datetime | None) -> datetime:
    """``as_of`` as an aware UTC instant to the second; None is now."""
    instant = datetime.now(UTC) if as_of is None else as_of
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    return instant.astimezone(UTC).replace(microsecond=0)


def price_estate(
    estate: Estate | Fleet,
    store: str | Path | Store | None = None,
    *,
    horizon: str | Horizon | None = None,
    fx: dict[str, float] | None = None,
    demand_from_store: bool = True,
    default_store: bool = True,
    as_of: datetime | None = None,
) -> PricedEstate:
    """The one price resolution every command runs: the horizon (given, else the default-month rule), then every
    substrate's price for it (:func:`finops_cli.estate.prices.resolve_fleet`).

    ``estate`` may be a fleet on its own (``finops stack`` without workloads). ``store`` None means the default
    store when it exists or is needed, unless ``default_store`` is False. ``as_of`` (default now) is recorded.
    """
    est = estate if isinstance(estate, Estate) else None
    fleet = est.fleet if est is not None else estate
    assert not isinstance(fleet, Estate)
    needs = needs_store(fleet) or (
        demand_from_store and est is not None and any(w.demand.from_store is not None for w in est.workloads.workloads)
    )
    st: Store | None = None
    if store is not None and not isinstance(store, str | Path):
        st = store
    elif store is not None or (default_store and (needs or store_exists(None))):
        st = open_store(store)
    instant = as_of_instant(as_of)
    choice = choose_horizon(horizon, est, st, instant)
    resolved, sources = resolve_fleet(fleet, st, horizon_end=choice.horizon.end, fx=fx, as_of=instant.date())
    return PricedEstate(est, resolved, sources, choice, st, instant, fx, fleet)


def ensure_priced(
    target: Estate | Fleet | PricedEstate,
    store: str | Path | Store | None,
    horizon: str | Horizon | None,
    fx: dict[str, float] | None,
    as_of: datetime | None,
    **how: bool,
) -> PricedEstate:
    """``target`` itself when already priced (then ``horizon``/``fx``/``as_of`` must not be given), else priced."""
    if isinstance(target, PricedEstate):
        if horizon is not None or fx is not None or as_of is not None:
            raise ValueError("the estate is already priced: its horizon, fx and as-of instant are fixed")
        if store is not None and store is not target.store:
            raise ValueError("the estate is already priced from another store")
        return target
    return price_estate(target, store, horizon=horizon, fx=fx, as_of=as_of, **how)

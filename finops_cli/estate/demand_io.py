"""The I/O half of demand: profile CSVs (relative to ``workloads.yaml``) and observed GPU-hours from the store; the
arithmetic is :mod:`finops_cli.core.demand`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from finops_cli.core.demand import Horizon, demand_frame, extend_observed
from finops_cli.errors import InputError
from finops_cli.estate.load import Estate
from finops_cli.estate.profiles import parse_profile, profile_path
from finops_cli.schema.estate import Workload
from finops_cli.store import engine
from finops_cli.store.queries import (
    DEMAND_FROM_BILLING,
    DEMAND_FROM_BILLING_HOURLY,
    DEMAND_FROM_UTILIZATION,
    DEMAND_FROM_UTILIZATION_HOURLY,
)

if TYPE_CHECKING:
    from finops_cli.store import Store


def read_profile(path: Path) -> pd.DataFrame:
    """A demand profile CSV as a frame ``hour,units`` (``hour``: int64 offsets or UTC timestamps)."""
    profile = parse_profile(path)
    hour = (
        pd.to_datetime(pd.Series(profile.hours), utc=True)
        if profile.timestamped
        else pd.Series(profile.hours, dtype="int64")
    )
    return pd.DataFrame({"hour": hour, "units": pd.Series(profile.units, dtype=float)})


#: how each reader measures a quantity, for the notes: (quantity, source) -> words
QUANTITY_WORDS = {
    ("busy_gpu_hours", "utilization"): "busy GPU-hours (Σ utilisation × interval, utilisation trace)",
    ("allocated_gpu_hours", "utilization"): "allocated GPU-hours (Σ sample interval, utilisation trace)",
    ("allocated_gpu_hours", "billing"): "allocated GPU-hours (ConsumedQuantity × GPUs, billing)",
}


@dataclass(frozen=True)
class ObservedDemand:
    """GPU-hours observed in the store for one ``from_store`` workload, what they measure, the horizon hours
    ``[first_hour, end_hour)`` they cover and how the rest was filled (``extend``)."""

    workload: str
    tag: str
    value: str
    frame: pd.DataFrame  # timestamp, gpu_hours[, accelerator]
    quantity: str  # busy_gpu_hours | allocated_gpu_hours
    source: str  # utilization | billing
    first_hour: int
    end_hour: int
    horizon_hours: int
    extend: str

    @property
    def observed_hours(self) -> int:
        return self.end_hour - self.first_hour

    @property
    def covers_horizon(self) -> bool:
        return self.first_hour <= 0 and self.end_hour >= self.horizon_hours

    def as_dict(self) -> dict[str, object]:
        """The plan/stack JSON entry (``demand_sources``)."""
        return {
            "workload": self.workload,
            "tag": self.tag,
            "value": self.value,
            "quantity": self.quantity,
            "source": self.source,
            "gpu_hours": round(float(self.frame["gpu_hours"].sum()), 6),
            "observed_hours": self.observed_hours,
            "horizon_hours": self.horizon_hours,
            "extension": "none" if self.covers_horizon else self.extend,
        }

    def note(self) -> str:
        """One sentence for tables and reports: which GPU-hours, and how the horizon was filled."""
        what = QUANTITY_WORDS[(self.quantity, self.source)]
        text = f"{self.workload}: demand from {what} for {self.tag}={self.value}"
        if self.covers_horizon:
            return f"{text}, observed over the whole {self.horizon_hours}-hour horizon"
        how = {
            "repeat": f"repeated over the {self.horizon_hours}-hour horizon (extend: repeat)",
            "zero": f"no demand in the other {self.horizon_hours - self.observed_hours} hours (extend: zero)",
        }[self.extend]
        return f"{text}, observed in {self.observed_hours} of {self.horizon_hours} hours; {how}"


#: utilisation columns a ``from_store`` tag can name (the store's device-group columns)
UTILIZATION_TAG_COLUMNS = ("team", "workload")
#: the ``billing_hourly`` column holding a Tags key (the other keys are read from the detail lines' ``Tags``)
BILLING_HOURLY_TAGS = {"team": "team"}


def _query_params(horizon: Horizon) -> dict[str, object]:
    last = horizon.end - timedelta(microseconds=1)
    return {
        "start": horizon.start,
        "end": horizon.end,
        "first_month": f"{horizon.start:%Y-%m}",
        "last_month": f"{last:%Y-%m}",
        "first_period": f"{horizon.start:%Y-%m}",
    }


def _observed_from_utilization(
    store: Store, tag: str, value: str, horizon: Horizon, quantity: str
) -> pd.DataFrame | None:
    """Busy or allocated GPU-hours per hour × accelerator of the devices whose ``tag`` column is ``value``, summed
    in the engine (from ``utilization_hourly`` when built)."""
    column = tag.lower()
    if column not in UTILIZATION_TAG_COLUMNS or not store.has("utilization"):
        return None
    hourly = store.has_aggregate("utilization_hourly", ("observed_until",))
    query = DEMAND_FROM_UTILIZATION_HOURLY if hourly else DEMAND_FROM_UTILIZATION
    params = {**_query_params(horizon), "value": value}
    frame = engine.run_pandas(store, query, params, tag_column=engine.quote_identifier(column))
    if frame is None or frame.empty:
        return None
    return frame.assign(gpu_hours=frame[quantity].fillna(0.0))


def _observed_from_billing(store: Store, tag: str, value: str, horizon: Horizon, quantity: str) -> pd.DataFrame | None:
    """Allocated GPU-hours billed (``Σ ConsumedQuantity × x_GpuCount`` per hour × accelerator of the lines whose
    ``Tags`` carry ``tag = value``): a bill knows how long GPUs were held, not how busy they were."""
    if not store.has("billing"):
        return None
    params = {**_query_params(horizon), "value": value}
    if tag in BILLING_HOURLY_TAGS and store.has_aggregate("billing_hourly", ("observed_until",)):
        frame = engine.run_pandas(store, DEMAND_FROM_BILLING_HOURLY, params)
    else:
        frame = engine.run_pandas(store, DEMAND_FROM_BILLING, {**params, "tag_path": engine.json_path(tag)})
    return None if frame is None or frame.empty else frame


def observe(store: Store, workload: Workload, horizon: Horizon) -> ObservedDemand | None:
    """GPU-hours observed in the store for ``workload.demand.from_store`` over ``horizon`` (utilisation first,
    else allocated GPU-hours billed, whichever quantity was asked: the note says so), or None."""
    spec = workload.demand.from_store
    assert spec is not None
    readers = ((_observed_from_utilization, "utilization"), (_observed_from_billing, "billing"))
    for reader, source in readers:
        frame = reader(store, spec.tag, spec.value, horizon, spec.quantity)
        if frame is None or frame.empty:
            continue
        idx = horizon.hour_index(frame["timestamp"])
        last = horizon.hour_index(pd.to_datetime(frame["observed_until"], utc=True) - pd.Timedelta(microseconds=1))
        return ObservedDemand(
            workload=workload.id,
            tag=spec.tag,
            value=spec.value,
            frame=frame[["timestamp", "gpu_hours", "accelerator"]].reset_index(drop=True),
            quantity=spec.quantity if source == "utilization" else "allocated_gpu_hours",
            source=source,
            first_hour=int(idx.min()),
            end_hour=int(min(last.max() + 1, horizon.hours)),
            horizon_hours=horizon.hours,
            extend=spec.extend,
        )
    return None


def read_demand_inputs(
    estate: Estate, horizon: Horizon, store: Store | None = None
) -> tuple[dict[str, pd.DataFrame], dict[str, ObservedDemand]]:
    """Profiles and observed GPU-hours (by workload id) that the workloads need; observations that cover less than
    the horizon are refused (exit 2) unless ``demand.from_store.extend`` says how to fill the rest."""
    profiles: dict[str, pd.DataFrame] = {}
    observed: dict[str, ObservedDemand] = {}
    for w in estate.workloads.workloads:
        if w.demand.profile is not None:
            profiles[w.id] = read_profile(profile_path(estate, w))
        elif w.demand.from_store is not None:
            if store is None:
                raise InputError(
                    f"workload {w.id}: demand.from_store needs a store (`store` DIR or FINOPS_STORE)",
                    mentions=("store",),
                )
            obs = observe(store, w, horizon)
            tag = w.demand.from_store
            if obs is None:
                raise InputError(
                    f"workload {w.id}: demand.from_store: no GPU-hours in the store for {tag.tag}={tag.value} "
                    f"between {horizon.start:%Y-%m-%d %H:%M} and {horizon.end:%Y-%m-%d %H:%M} UTC"
                )
            if not obs.covers_horizon and tag.extend == "none":
                first = horizon.start + timedelta(hours=obs.first_hour)
                end = horizon.start + timedelta(hours=obs.end_hour)
                raise InputError(
                    f"workload {w.id}: demand.from_store: the store has {tag.tag}={tag.value} GPU-hours for "
                    f"{obs.observed_hours} of the horizon's {horizon.hours} hours ({first:%Y-%m-%d %H:%M} to "
                    f"{end:%Y-%m-%d %H:%M} UTC); set demand.from_store.extend: repeat (tile them over the horizon) "
                    "or zero (no demand outside them), or choose a `horizon` they cover",
                    mentions=("horizon",),
                )
            observed[w.id] = obs
    return profiles, observed


def estate_demand_sources(
    estate: Estate, horizon: Horizon, store: Store | None = None
) -> tuple[pd.DataFrame, list[ObservedDemand]]:
    """Units per hour of every workload over ``horizon`` (index hour 0…hours-1, a column per workload id), and what
    each ``from_store`` demand measured."""
    profiles, observed = read_demand_inputs(estate, horizon, store)
    frame = demand_frame(estate.workloads.workloads, horizon, profiles, {k: o.frame for k, o in observed.items()})
    for wid, obs in observed.items():
        frame[wid] = extend_observed(frame[wid].to_numpy(), obs.first_hour, obs.end_hour, obs.extend)
    return frame, list(observed.values())


def profile_month(estate: Estate) -> str | None:
    """The month (``YYYY-MM``) of the earliest timestamped profile row, if any profile is timestamped."""
    for w in estate.workloads.workloads:
        if w.demand.profile is None:
            continue
        prof = read_profile(profile_path(estate, w))
        if not prof.empty and not pd.api.types.is_numeric_dtype(prof["hour"]):
            return f"{prof['hour'].min():%Y-%m}"
    return None

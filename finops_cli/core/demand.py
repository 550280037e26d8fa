"""Hourly demand per workload over a horizon: pure functions, no I/O.

A workload's ``demand`` is one of three things (docs/estate.md); each becomes an array of *units of usable
output per hour* over the horizon, ``demand[h]`` for ``h = 0 … hours-1``:

- ``total``: spread evenly, ``demand[h] = total / hours`` (the planner may still move deferrable work);
- ``profile``: a table of ``(hour, units)`` rows, read by :mod:`finops_cli.estate.demand_io`. ``hour`` is
  either an integer offset from the horizon start (a profile shorter than the horizon, e.g. 24 or 168
  rows, repeats: ``demand[h] = profile[h mod period]``) or a timestamp (aligned to the horizon; hours
  the profile does not cover are 0; several rows in one hour add up);
- ``from_store``: observed GPU-hours per hour (and accelerator), converted to units with the workload's
  throughput: ``units = Σ gpu_hours × throughput[accelerator]``. GPU-hours on an accelerator the
  workload has no throughput for are converted at its *reference* throughput (the first entry of
  ``throughput``), since the work was done somewhere and will need doing again.

The I/O half (reading CSVs next to ``workloads.yaml``, querying the store) lives in
``finops_cli.estate.demand_io``; this module only turns already-read tables into arrays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from finops_cli.errors import InputError
from finops_cli.schema.estate import Workload

_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
#: Ten years of hours: a longer horizon is a typo (and would allocate hours × workloads arrays first).
MAX_HORIZON_HOURS = 87_600


@dataclass(frozen=True)
class Horizon:
    """``hours`` consecutive UTC hours from ``start`` (on the hour)."""

    start: datetime
    hours: int

    def __post_init__(self) -> None:
        if self.hours <= 0:
            raise ValueError("a horizon needs hours > 0")
        if self.start.tzinfo is None:
            object.__setattr__(self, "start", self.start.replace(tzinfo=UTC))

    @property
    def end(self) -> datetime:
        return self.start + timedelta(hours=self.hours)

    @classmethod
    def month(cls, month: str) -> Horizon:
        """The calendar month ``YYYY-MM`` (e.g. 2026-10 → 744 hours)."""
        m = _MONTH.match(month)
        if not m or not 1 <= int(m.group(2)) <= 12 or not 1970 <= int(m.group(1)) <= 2200:
            raise InputError(f"horizon {month!r}: expected YYYY-MM (a month between 1970 and 2200)")
        year, mon = int(m.group(1)), int(m.group(2))
        start = datetime(year, mon, 1, tzinfo=UTC)
        nxt = datetime(year + (mon == 12), mon % 12 + 1, 1, tzinfo=UTC)
        return cls(start, int((nxt - start).total_seconds() // 3600))

    @classmethod
    def parse(cls, text: str) -> Horizon:
        """``YYYY-MM`` or ``START:HOURS`` (START an ISO date/time in UTC, e.g. ``2026-10-01T00:00:168``)."""
        text = text.strip()
        if _MONTH.match(text):
            return cls.month(text)
        start_text, sep, hours_text = text.rpartition(":")
        try:
            hours = int(hours_text)
            start = pd.Timestamp(start_text)
        except (ValueError, TypeError):
            raise InputError(f"horizon {text!r}: expected YYYY-MM or START:HOURS (e.g. 2026-10-01:744)") from None
        if not sep or not 0 < hours <= MAX_HORIZON_HOURS or not 1970 <= start.year <= 2200:
            raise InputError(
                f"horizon {text!r}: expected YYYY-MM or START:HOURS with 0 < HOURS <= {MAX_HORIZON_HOURS}"
                " and START between 1970 and 2200"
            )
        start = start.tz_localize("UTC") if start.tzinfo is None else start.tz_convert("UTC")
        return cls(start.floor("h").to_pydatetime(), hours)

    def hour_index(self, timestamps: pd.Series) -> np.ndarray:
        """Hour offsets from ``start`` (floor) of UTC timestamps; may fall outside ``[0, hours)``."""
        ts = pd.to_datetime(timestamps, utc=True)
        delta = (ts - pd.Timestamp(self.start)).to_numpy(dtype="timedelta64[s]").astype(np.int64)
        return np.floor_divide(delta, 3600)

    def timestamps(self) -> pd.DatetimeIndex:
        return pd.date_range(self.start, periods=self.hours, freq="h", tz="UTC")


def total_demand(total_units: float, horizon: Horizon) -> np.ndarray:
    """``total`` spread evenly: ``total / hours`` units each hour."""
    return np.full(horizon.hours, float(total_units) / horizon.hours)


def profile_demand(profile: pd.DataFrame, horizon: Horizon) -> np.ndarray:
    """Units per hour from a ``(hour, units)`` table (see the module docstring for the two hour forms).

    ``profile`` must already be clean: ``units`` numeric and ≥ 0, ``hour`` all integers ≥ 0 or all
    timestamps (the I/O layer checks rows and names the file).
    """
    out = np.zeros(horizon.hours)
    if profile.empty:
        return out
    units = profile["units"].to_numpy(dtype=float)
    hour = profile["hour"]
    if pd.api.types.is_numeric_dtype(hour):
        idx = hour.to_numpy(dtype=np.int64)
        period = int(idx.max()) + 1
        per_period = np.zeros(period)
        np.add.at(per_period, idx, units)
        reps = -(-horizon.hours // period)
        return np.tile(per_period, reps)[: horizon.hours].copy()
    idx = horizon.hour_index(hour)
    inside = (idx >= 0) & (idx < horizon.hours)
    np.add.at(out, idx[inside], units[inside])
    return out


def reference_throughput(workload: Workload) -> float:
    """Units per GPU-hour used for observed GPU-hours on an accelerator without a throughput entry."""
    return next(iter(workload.throughput.values()), 1.0)


def observed_demand(workload: Workload, observed: pd.DataFrame, horizon: Horizon) -> np.ndarray:
    """Observed GPU-hours converted to units: ``Σ gpu_hours × throughput[accelerator]`` per hour.

    Parameters
    ----------
    observed : DataFrame
        Columns ``timestamp`` (UTC), ``gpu_hours`` and optionally ``accelerator``.
    """
    out = np.zeros(horizon.hours)
    if observed.empty:
        return out
    ref = reference_throughput(workload)
    if "accelerator" in observed.columns:
        rate = observed["accelerator"].map(lambda a: workload.throughput.get(str(a), ref)).to_numpy(dtype=float)
    else:
        rate = np.full(len(observed), ref)
    units = observed["gpu_hours"].to_numpy(dtype=float) * rate
    idx = horizon.hour_index(observed["timestamp"])
    inside = (idx >= 0) & (idx < horizon.hours)
    np.add.at(out, idx[inside], units[inside])
    return out


def extend_observed(hourly: np.ndarray, first: int, end: int, how: str) -> np.ndarray:
    """Fill the hours outside the observed window ``[first, end)`` of an hourly array.

    ``repeat`` tiles the window over the horizon, aligned to where it was observed (hour ``h`` takes the
    window's hour ``(h − first) mod (end − first)``, so a 24-hour window keeps its time of day);
    ``zero`` (and ``none``) leave them at 0. A window that covers the whole array is returned unchanged.
    """
    hours = len(hourly)
    if how != "repeat" or (first <= 0 and end >= hours) or end <= first:
        return hourly
    window = hourly[first:end]
    idx = (np.arange(hours) - first) % (end - first)
    return window[idx].astype(float, copy=True)


def workload_demand(
    workload: Workload,
    horizon: Horizon,
    *,
    profile: pd.DataFrame | None = None,
    observed: pd.DataFrame | None = None,
) -> np.ndarray:
    """Units of usable output per hour for ``workload`` over ``horizon`` (length ``horizon.hours``).

    ``profile`` is required when the workload's demand is a profile, ``observed`` when it is
    ``from_store``; :func:`finops_cli.estate.demand_io.read_demand_inputs` supplies both.
    """
    spec = workload.demand
    if spec.total is not None:
        return total_demand(spec.total, horizon)
    if spec.profile is not None:
        if profile is None:
            raise ValueError(f"workload {workload.id}: profile demand needs the profile table")
        return profile_demand(profile, horizon)
    if observed is None:
        raise ValueError(f"workload {workload.id}: from_store demand needs the observed GPU-hours")
    return observed_demand(workload, observed, horizon)


def demand_frame(
    workloads: list[Workload],
    horizon: Horizon,
    profiles: dict[str, pd.DataFrame] | None = None,
    observed: dict[str, pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """Hourly demand of every workload: index = hour offset 0…hours-1, one column per workload id (units/hour)."""
    profiles, observed = profiles or {}, observed or {}
    data = {
        w.id: workload_demand(w, horizon, profile=profiles.get(w.id), observed=observed.get(w.id)) for w in workloads
    }
    frame = pd.DataFrame(data, index=pd.RangeIndex(horizon.hours, name="hour"))
    return frame

"""Hourly demand per workload over a horizon (units of usable output per hour), pure: the I/O half (profile CSVs,
the store) is :mod:`finops_cli.estate.demand_io`. The three demand forms are in docs/estate.md (``Demand``).
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


def check_month(value: str | None, param: str = "month") -> None:
    """A month a caller names (``YYYY-MM``); ``None`` leaves the choice to the default-month rule."""
    if value is not None and not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", value):
        raise InputError(f"{value!r}: expected YYYY-MM such as 2026-10", param=param)


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
        hours: np.ndarray = np.floor_divide(delta, 3600)
        return hours


def month_warnings(hz: Horizon, billed: str | None, util: str | None) -> list[str]:
    """One warning when the store's utilisation, its billing and the horizon are different months."""
    months = {"horizon": f"{hz.start:%Y-%m}"}
    if billed:
        months["billing (GPU-hours)"] = billed
    if util:
        months["utilisation"] = util
    if len(set(months.values())) <= 1:
        return []
    said = ", ".join(f"{k} {v}" for k, v in months.items())
    return [f"different months: {said}; the baseline, idle waste and plan describe different periods (`horizon`)"]


def _hourly(timestamps: pd.Series, units: np.ndarray, horizon: Horizon) -> np.ndarray:
    """``units`` summed by the horizon hour of each timestamp (those outside the horizon are left out)."""
    out = np.zeros(horizon.hours)
    idx = horizon.hour_index(timestamps)
    inside = (idx >= 0) & (idx < horizon.hours)
    np.add.at(out, idx[inside], units[inside])
    return out


def profile_demand(profile: pd.DataFrame, horizon: Horizon) -> np.ndarray:
    """Units per hour from a clean ``(hour, units)`` table: integer offsets repeat over the horizon, timestamps
    are aligned to it (hours not covered are 0, rows in one hour add up)."""
    if profile.empty:
        return np.zeros(horizon.hours)
    units = profile["units"].to_numpy(dtype=float)
    hour = profile["hour"]
    if pd.api.types.is_numeric_dtype(hour):
        idx = hour.to_numpy(dtype=np.int64)
        per_period = np.zeros(int(idx.max()) + 1)
        np.add.at(per_period, idx, units)
        reps = -(-horizon.hours // len(per_period))
        return np.tile(per_period, reps)[: horizon.hours].copy()
    return _hourly(hour, units, horizon)


def observed_demand(workload: Workload, observed: pd.DataFrame, horizon: Horizon) -> np.ndarray:
    """Observed GPU-hours (``timestamp, gpu_hours[, accelerator]``) as units: ``Σ gpu_hours × throughput``.

    An accelerator without a throughput entry converts at the first entry's: the work was done somewhere and
    will need doing again.
    """
    if observed.empty:
        return np.zeros(horizon.hours)
    ref = next(iter(workload.throughput.values()), 1.0)
    if "accelerator" in observed.columns:
        rate = observed["accelerator"].map(lambda a: workload.throughput.get(str(a), ref)).to_numpy(dtype=float)
    else:
        rate = np.full(len(observed), ref)
    units = observed["gpu_hours"].to_numpy(dtype=float) * rate
    return _hourly(observed["timestamp"], units, horizon)


def extend_observed(hourly: np.ndarray, first: int, end: int, how: str) -> np.ndarray:
    """Fill the hours outside the observed window ``[first, end)``: ``repeat`` tiles the window, aligned to where
    it was observed (a 24-hour window keeps its time of day); ``zero`` and ``none`` leave them at 0."""
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
    """Units of usable output per hour for ``workload`` over ``horizon``; ``profile`` or ``observed`` (read by
    :func:`finops_cli.estate.demand_io.read_demand_inputs`) as its demand needs."""
    spec = workload.demand
    if spec.total is not None:
        return np.full(horizon.hours, float(spec.total) / horizon.hours)
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
    return pd.DataFrame(data, index=pd.RangeIndex(horizon.hours, name="hour"))

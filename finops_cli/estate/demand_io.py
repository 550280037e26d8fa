"""The I/O half of demand: read profile CSVs (relative to ``workloads.yaml``) and observed GPU-hours from the store.

:func:`estate_demand` is what the planner calls: ``(estate, horizon, store) → DataFrame`` of units per
hour (index hour 0…hours-1, one column per workload). The arithmetic is in :mod:`finops_cli.core.demand`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from finops_cli.core.demand import Horizon, demand_frame
from finops_cli.errors import InputError
from finops_cli.estate.load import Estate
from finops_cli.files import csv_line, read_csv_text
from finops_cli.schema.estate import Workload

if TYPE_CHECKING:
    from finops_cli.store import Store


def profile_path(estate: Estate, workload: Workload) -> Path:
    """Where ``workload``'s profile CSV lives: relative paths are relative to ``workloads.yaml``."""
    assert workload.demand.profile is not None
    p = Path(workload.demand.profile)
    return p if p.is_absolute() else estate.base_dir / p


def read_profile(path: Path) -> pd.DataFrame:
    """Read a demand profile CSV with columns ``hour,units``; errors name the file, line and column.

    ``hour`` is an integer offset (0, 1, …) or an ISO timestamp; ``units`` a number ≥ 0.
    """
    raw = read_csv_text(path, kind="demand profile")
    missing = [c for c in ("hour", "units") if c not in raw.columns]
    if missing:
        raise InputError(f"missing column(s) {missing}; expected a header 'hour,units'", path=path)
    units = pd.to_numeric(raw["units"].str.strip(), errors="coerce")
    bad = units.isna() | (units < 0) | (units == float("inf"))  # inf would reach the solver as a demand RHS
    if bad.any():
        i = int(bad.to_numpy().argmax())
        raise InputError(
            f"units: expected a number >= 0, got {raw['units'].iloc[i]!r}",
            path=path,
            where=csv_line(i),
        )
    hour_text = raw["hour"].str.strip()
    as_int = pd.to_numeric(hour_text, errors="coerce")
    if raw.empty or pd.notna(as_int.iloc[0]):  # the first row decides: integer offsets ...
        bad = as_int.isna() | (as_int < 0) | (as_int != as_int.round())
        hour: pd.Series = as_int
    else:  # ... or ISO timestamps
        hour = pd.to_datetime(hour_text, utc=True, errors="coerce", format="ISO8601")
        bad = hour.isna()
    if bad.any():
        i = int(bad.to_numpy().argmax())
        raise InputError(
            f"hour: expected an integer >= 0 or an ISO timestamp (like the first row), got {hour_text.iloc[i]!r}",
            path=path,
            where=csv_line(i),
        )
    if pd.api.types.is_numeric_dtype(hour):
        hour = hour.astype("int64")
    return pd.DataFrame({"hour": hour, "units": units.astype(float)})


def _pick(columns: list[str], *names: str) -> str | None:
    lower = {c.lower(): c for c in columns}
    for n in names:
        if n.lower() in lower:
            return lower[n.lower()]
    return None


def _observed_from_utilization(store: Store, tag: str, value: str, horizon: Horizon) -> pd.DataFrame | None:
    table = store.read("utilization")
    if table is None:
        return None
    cols = table.column_names
    tag_col = _pick(cols, tag, f"x_{tag}")
    ts_col = _pick(cols, "timestamp", "ts", "time")
    util_col = _pick(cols, "utilization", "util", "gpu_utilization")
    if tag_col is None or ts_col is None or util_col is None:
        return None
    frame = table.to_pandas()
    frame = frame[frame[tag_col].astype(str) == value]
    if frame.empty:
        return None
    ival_col = _pick(cols, "interval_s", "interval_seconds", "seconds")
    hours = frame[ival_col].astype(float) / 3600 if ival_col else 1.0
    acc_col = _pick(cols, "accelerator", "x_acceleratortype", "accelerator_type")
    out = pd.DataFrame(
        {"timestamp": pd.to_datetime(frame[ts_col], utc=True), "gpu_hours": frame[util_col].astype(float) * hours}
    )
    if acc_col:
        out["accelerator"] = frame[acc_col].astype(str).to_numpy()
    return out


def _tag_value(tags: object, tag: str) -> str | None:
    if isinstance(tags, dict):
        v = tags.get(tag)
    elif isinstance(tags, list):  # pyarrow map -> list of (key, value)
        v = dict(tags).get(tag)
    elif isinstance(tags, str) and tags:
        import json

        try:
            v = json.loads(tags).get(tag)
        except (ValueError, AttributeError):
            return None
    else:
        return None
    return None if v is None else str(v)


def _observed_from_billing(store: Store, tag: str, value: str, horizon: Horizon) -> pd.DataFrame | None:
    table = store.read("billing")
    if table is None:
        return None
    cols = table.column_names
    need = ("Tags", "ChargePeriodStart", "ConsumedQuantity", "x_GpuCount")
    if any(c not in cols for c in need):
        return None
    acc = "x_AcceleratorType" if "x_AcceleratorType" in cols else None
    frame = table.select([*need, *([acc] if acc else [])]).to_pandas()
    mask = frame["Tags"].map(lambda t: _tag_value(t, tag) == value)
    frame = frame[mask.astype(bool)]
    frame = frame[frame["x_GpuCount"].notna() & (frame["x_GpuCount"].astype(float) > 0)]
    if frame.empty:
        return None
    out = pd.DataFrame(
        {
            "timestamp": pd.to_datetime(frame["ChargePeriodStart"], utc=True),
            "gpu_hours": frame["ConsumedQuantity"].astype(float) * frame["x_GpuCount"].astype(float),
        }
    )
    if acc:
        out["accelerator"] = frame[acc].astype(str).to_numpy()
    return out


def observed_gpu_hours(store: Store, workload: Workload, horizon: Horizon) -> pd.DataFrame:
    """GPU-hours observed in the store for ``workload.demand.from_store``'s tag over ``horizon``.

    Busy GPU-hours from the utilisation dataset (``Σ utilization × interval``) for devices whose
    ``tag`` column equals the value; without matching utilisation data, GPU-hours billed
    (ConsumedQuantity × x_GpuCount) for billing lines whose ``Tags`` carry it. Columns out:
    ``timestamp``, ``gpu_hours`` and (when known) ``accelerator``; empty when nothing matches.
    """
    spec = workload.demand.from_store
    assert spec is not None
    for reader in (_observed_from_utilization, _observed_from_billing):
        frame = reader(store, spec.tag, spec.value, horizon)
        if frame is not None and not frame.empty:
            idx = horizon.hour_index(frame["timestamp"])
            frame = frame[(idx >= 0) & (idx < horizon.hours)]
            if not frame.empty:
                return frame.reset_index(drop=True)
    return pd.DataFrame({"timestamp": pd.Series(dtype="datetime64[ns, UTC]"), "gpu_hours": pd.Series(dtype=float)})


def read_demand_inputs(
    estate: Estate, horizon: Horizon, store: Store | None = None
) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """Profiles (by workload id) and observed GPU-hours (by workload id) that the workloads need."""
    profiles: dict[str, pd.DataFrame] = {}
    observed: dict[str, pd.DataFrame] = {}
    for w in estate.workloads.workloads:
        if w.demand.profile is not None:
            profiles[w.id] = read_profile(profile_path(estate, w))
        elif w.demand.from_store is not None:
            if store is None:
                raise InputError(
                    f"workload {w.id}: demand.from_store needs a store (--store DIR or FINOPS_STORE)",
                )
            obs = observed_gpu_hours(store, w, horizon)
            if obs.empty:
                tag = w.demand.from_store
                raise InputError(
                    f"workload {w.id}: demand.from_store: no GPU-hours in the store for {tag.tag}={tag.value} "
                    f"between {horizon.start:%Y-%m-%d %H:%M} and {horizon.end:%Y-%m-%d %H:%M} UTC"
                )
            observed[w.id] = obs
    return profiles, observed


def estate_demand(estate: Estate, horizon: Horizon, store: Store | None = None) -> pd.DataFrame:
    """Units per hour for every workload of ``estate`` over ``horizon``.

    Returns a DataFrame indexed by hour offset (``0 … horizon.hours-1``, name ``hour``) with one float
    column per workload id, in ``workloads.yaml`` order, each in that workload's own unit.
    """
    profiles, observed = read_demand_inputs(estate, horizon, store)
    return demand_frame(estate.workloads.workloads, horizon, profiles, observed)


def infer_horizon(estate: Estate, default: Horizon | None = None) -> Horizon:
    """A horizon when none is given: the calendar month of the earliest timestamped profile row.

    Falls back to ``default``, else the current UTC month. (The planner's own default, the latest
    month in the store, is its business; this is for ``finops stack``/``netc`` without a store.)
    """
    for w in estate.workloads.workloads:
        if w.demand.profile is None:
            continue
        prof = read_profile(profile_path(estate, w))
        if not prof.empty and not pd.api.types.is_numeric_dtype(prof["hour"]):
            first = prof["hour"].min()
            return Horizon.month(f"{first.year:04d}-{first.month:02d}")
    if default is not None:
        return default
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    return Horizon.month(f"{now.year:04d}-{now.month:02d}")

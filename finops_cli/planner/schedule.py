"""The certified hourly schedule (see :mod:`.certify`): GPUs, units and cost per hour, workload and substrate,
and the units it leaves unserved."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from finops_cli.atomic import atomic_path, check_writable
from finops_cli.errors import InputError
from finops_cli.planner.frame import PlanFrame

#: Columns of the schedule (one row per hour, workload and substrate with work).
SCHEDULE_COLUMNS = ["hour", "workload", "substrate", "kind", "gpus", "wall_gpus", "units", "cost", "penalty"]


def unserved_units(frame: PlanFrame, demand: pd.DataFrame, schedule: pd.DataFrame) -> float:
    """Units the schedule leaves unserved: hour by hour (non-deferrable), over the horizon (deferrable)."""
    ws = list(frame.members)
    d = demand[ws].to_numpy(dtype=float)
    got = np.zeros_like(d)
    w_idx = pd.Categorical(schedule["workload"], categories=ws).codes
    np.add.at(got, (schedule["hour"].to_numpy(), w_idx), schedule["units"].to_numpy(dtype=float))
    defer = np.array([frame.workloads[w].deferrable for w in ws], dtype=bool)
    hourly = np.maximum(0.0, d[:, ~defer] - got[:, ~defer]).sum()
    horizon = np.maximum(0.0, d[:, defer].sum(axis=0) - got[:, defer].sum(axis=0)).sum()
    return float(hourly + horizon)


def build_schedule(
    frame: PlanFrame,
    template: PlanFrame,
    demand: pd.DataFrame,
    x: np.ndarray,
    base: np.ndarray,
    n_base: int,
    ratio: np.ndarray,
    g_of_x: np.ndarray,
    broken: np.ndarray,
    lp_x: dict[int, tuple[np.ndarray, np.ndarray]],
) -> pd.DataFrame:
    """GPUs per hour per (workload, substrate): the spread plan, broken hours from their repair (per base row)."""
    hb = frame.blocks.hour_block
    hours_of = [np.flatnonzero((hb == b) & ~broken) for b in range(frame.blocks.n)]
    nz = np.flatnonzero(x)
    b_nz = frame.rows["block"].to_numpy()[nz]
    counts = np.array([len(hours_of[b]) for b in b_nz], dtype=int)
    rep = np.repeat(np.arange(len(nz)), counts)
    hour = np.concatenate([hours_of[b] for b in b_nz]) if len(nz) else np.empty(0, dtype=int)
    j = nz[rep]
    val = x[j] * ratio[g_of_x[j], hour]
    parts_base = [base[j]]
    parts_hour = [hour]
    parts_val = [val]
    for h, (k, v) in lp_x.items():
        parts_base.append(k)
        parts_hour.append(np.full(len(k), h))
        parts_val.append(v)
    t_rows = template.rows
    b_all = np.concatenate(parts_base)
    sched = pd.DataFrame(
        {
            "hour": np.concatenate(parts_hour).astype(np.int64),
            "group": t_rows["group"].to_numpy()[b_all],
            "substrate": t_rows["substrate"].to_numpy()[b_all],
            "x": np.concatenate(parts_val),
        }
    )
    sched["units"] = sched["x"] * t_rows["units_per_gpu_hour"].to_numpy()[b_all]
    sched["cost"] = sched["x"] * t_rows["usd_per_gpu_hour"].to_numpy()[b_all]
    sched["penalty"] = sched["x"] * t_rows["penalty_per_gpu_hour"].to_numpy()[b_all]
    api = t_rows["is_api"].to_numpy()[b_all]
    sched["gpus"] = np.where(api, 0.0, sched["x"])
    sched["wall_gpus"] = np.where(api, 0.0, sched["x"] * t_rows["wall_per_gpu_hour"].to_numpy()[b_all])
    sched = sched.groupby(["hour", "group", "substrate"], as_index=False, sort=False)[
        ["gpus", "wall_gpus", "units", "cost", "penalty"]
    ].sum()
    return _split_members(frame, demand, sched)


def _split_members(frame: PlanFrame, demand: pd.DataFrame, sched: pd.DataFrame) -> pd.DataFrame:
    """Split group rows back to member workloads: by hourly demand (deferrable: by horizon totals)."""
    multi = {g for g, n in pd.Series([g for g, _s in frame.members.values()]).value_counts().items() if n > 1}
    single = {g: w for w, (g, _s) in frame.members.items() if g not in multi}
    out = sched[~sched["group"].isin(multi)].copy()
    out["workload"] = out["group"].map(single)
    parts = [out]
    for w, (g, share) in frame.members.items():
        if g not in multi:
            continue
        sub = sched[sched["group"] == g].copy()
        if g in frame.deferrable_units:
            frac = np.full(len(sub), float(share[0]))
        else:
            members = [m for m, (mg, _s) in frame.members.items() if mg == g]
            total = demand[members].to_numpy(dtype=float).sum(axis=1)
            mine = demand[w].to_numpy(dtype=float)
            hourly = np.divide(mine, total, out=np.full(len(mine), 1.0 / len(members)), where=total > 0)
            frac = hourly[sub["hour"].to_numpy()]
        for col in ("gpus", "wall_gpus", "units", "cost", "penalty"):
            sub[col] = sub[col] * frac
        sub["workload"] = w
        parts.append(sub)
    res = pd.concat(parts, ignore_index=True)
    res["kind"] = res["substrate"].map({sid: s.kind for sid, s in frame.substrates.items()})
    res = res[res["units"] > 0]
    return res[SCHEDULE_COLUMNS].sort_values(["hour", "workload", "substrate"], ignore_index=True)


#: Suffixes a schedule file may have (``finops plan --schedule`` writes one, ``simulate dispatch`` reads it).
SCHEDULE_FORMATS = (".parquet", ".csv")


def check_schedule_path(path: str | Path) -> Path:
    """A .parquet or .csv path that can be written (checked before any work)."""
    target = Path(path)
    if target.suffix.lower() not in SCHEDULE_FORMATS:
        raise InputError(f"{target.name}: expected a .parquet or .csv file name", path=target, param="schedule")
    return check_writable(target)


def write_schedule(schedule: pd.DataFrame, path: str | Path) -> Path:
    """Write a plan's hourly schedule to ``path`` (Parquet or CSV by suffix), atomically."""
    target = check_schedule_path(path)
    with atomic_path(target) as tmp:
        if target.suffix.lower() == ".csv":
            schedule.to_csv(tmp, index=False)
        else:
            schedule.to_parquet(tmp, index=False)
    return target


def read_schedule(path: str | Path) -> pd.DataFrame:
    """Read the hourly schedule ``finops plan --schedule`` wrote (Parquet or CSV by suffix)."""
    target = Path(path)
    if target.suffix.lower() not in SCHEDULE_FORMATS:
        raise InputError("expected the .parquet or .csv file finops plan --schedule wrote", path=target)
    if not target.is_file():
        raise InputError("file not found (expected the schedule finops plan --schedule wrote)", path=target)
    try:
        return pd.read_csv(target) if target.suffix.lower() == ".csv" else pd.read_parquet(target)
    except Exception as exc:  # a corrupt file is the user's input: one line, exit 2
        raise InputError(f"not a readable schedule ({type(exc).__name__}: {exc})", path=target) from None

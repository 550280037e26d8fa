"""Synthetic request traces from the workloads' hourly demand: Poisson arrivals per workload and hour, split by
demand in GPU-hours, exponential sizes whose expectation is the demand; seeded streams (docs/dispatch.md,
"Inputs")."""

from __future__ import annotations

from datetime import datetime

import numpy as np

from finops_cli.schema.estate import Fleet, Workload
from finops_cli.sim import streams
from finops_cli.sim.dispatch.engine import Trace


def generate_trace(
    workloads: list[Workload],
    fleet: Fleet,
    demand_units_per_hour: np.ndarray,
    *,
    requests: int,
    seed: int = 0,
    origin: datetime | None = None,
) -> Trace:
    """About ``requests`` requests (the count is Poisson) following ``demand_units_per_hour``, shape (hours,
    workloads), each workload in its own unit."""
    demand = np.asarray(demand_units_per_hour, dtype=float)
    if demand.ndim != 2 or demand.shape[1] != len(workloads):
        raise ValueError("demand must be (hours, workloads)")
    if requests < 0:
        raise ValueError("requests must be >= 0")
    rng = streams(seed)
    hours = demand.shape[0]
    # GPU-hours on each workload's best accelerator (API-only work: 1 unit per "GPU-hour")
    best = [max(w.throughput.values(), default=1.0) for w in workloads]
    gpu_hours = np.array([demand[:, j].sum() / best[j] for j in range(len(workloads))])
    share = gpu_hours / gpu_hours.sum() if gpu_hours.sum() > 0 else np.zeros(len(workloads))
    t_parts, w_parts, u_parts = [], [], []
    for j in range(len(workloads)):
        col = demand[:, j]
        total = col.sum()
        if total <= 0 or share[j] <= 0:
            continue
        lam = requests * share[j] * col / total  # expected requests per hour
        counts = rng["mix"].poisson(lam)
        n = int(counts.sum())
        if n == 0:
            continue
        hour_of = np.repeat(np.arange(hours), counts)
        t_parts.append(hour_of + rng["arrivals"].random(n))
        with np.errstate(divide="ignore", invalid="ignore"):
            mean_units = np.where(lam > 0, col / lam, 0.0)
        u_parts.append(mean_units[hour_of] * rng["sizes"].exponential(1.0, n))
        w_parts.append(np.full(n, j, dtype=np.int32))
    if not t_parts:
        empty = np.array([], dtype=float)
        return Trace(empty, np.array([], dtype=np.int32), empty, tuple(w.id for w in workloads), origin)
    t = np.concatenate(t_parts)
    order = np.argsort(t, kind="stable")
    return Trace(
        t[order],
        np.concatenate(w_parts)[order],
        np.concatenate(u_parts)[order],
        tuple(w.id for w in workloads),
        origin,
    )

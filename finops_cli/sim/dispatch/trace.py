r"""Synthetic request traces from the workloads' hourly demand: Poisson arrivals, seeded.

Requests are split between workloads in proportion to their demand in GPU-hours (units ÷ best
throughput, so Mtokens and H100-hours are comparable). Within workload :math:`w` and hour :math:`h`
the number of requests is Poisson with mean

.. math::

    \lambda_{w,h} = N \cdot \frac{G_w}{\sum_v G_v} \cdot \frac{D_{w,h}}{\sum_k D_{w,k}}

(:math:`N` the requested total, :math:`G_w` the workload's GPU-hours, :math:`D` units per hour),
arrival times are uniform within the hour, and each request carries
:math:`D_{w,h}/\lambda_{w,h} \cdot X` units with :math:`X \sim \text{Exp}(1)`, so the expected units
per hour equal the demand. Arrivals, the workload mix and sizes come from separate streams of
:func:`finops_cli.sim.streams`.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

from finops_cli.schema.estate import Fleet, Workload
from finops_cli.sim import streams
from finops_cli.sim.dispatch.engine import Trace


def _best_throughput(workload: Workload, fleet: Fleet) -> float:
    """Units per GPU-hour on the workload's best accelerator (1 for API-only work)."""
    return max(workload.throughput.values(), default=1.0)


def generate_trace(
    workloads: list[Workload],
    fleet: Fleet,
    demand_units_per_hour: np.ndarray,
    *,
    requests: int,
    seed: int = 0,
    origin: datetime | None = None,
) -> Trace:
    """A trace of about ``requests`` requests following ``demand_units_per_hour`` (hours × workloads).

    Parameters
    ----------
    demand_units_per_hour
        Array of shape ``(hours, len(workloads))``: units per hour, each workload in its own unit.
    requests
        Expected number of requests over the whole horizon (the realised count is Poisson).
    """
    demand = np.asarray(demand_units_per_hour, dtype=float)
    if demand.ndim != 2 or demand.shape[1] != len(workloads):
        raise ValueError("demand must be (hours, workloads)")
    if requests < 0:
        raise ValueError("requests must be >= 0")
    rng = streams(seed)
    hours = demand.shape[0]
    gpu_hours = np.array([demand[:, j].sum() / _best_throughput(w, fleet) for j, w in enumerate(workloads)])
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

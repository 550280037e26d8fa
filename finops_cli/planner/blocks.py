"""Load-duration blocks: a month of hourly demand in a few representative blocks.

Hours carry no link to their neighbours in the plan, so hours of similar demand are merged: the peak hour alone,
then blocks growing geometrically towards the trough, refined by k-means on the demand mix; each block keeps
every workload's mean, so totals are exact and the block optimum is a lower bound of the hourly one
(docs/planner.md, "What keeps the model small").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: Default number of blocks; measured on the sample estate and the benchmark estates (docs/planner.md).
DEFAULT_BLOCKS = 48

#: Ratio between consecutive block lengths (after the peak hour); 1 would be equal-sized blocks.
_GROWTH = 1.15

#: Lloyd iterations refining the load-duration cut (cheap: hours × blocks × workloads per iteration).
_KMEANS_ITERATIONS = 30


@dataclass(frozen=True)
class Blocks:
    """Blocks of hours with their lengths and the mean demand of each workload in each block."""

    hours: np.ndarray  # hours in each block, shape (n,)
    hour_block: np.ndarray  # block of every hour of the horizon, shape (H,)
    demand: pd.DataFrame  # mean units per hour, index ``block`` (0…n-1), one column per workload

    @property
    def n(self) -> int:
        return len(self.hours)


def _block_sizes(n_hours: int, n_blocks: int) -> np.ndarray:
    """Sizes (≥ 1, summing to ``n_hours``) of ``n_blocks`` blocks: 1 for the peak, then geometric growth."""
    if n_blocks <= 1:
        return np.array([n_hours])
    rest, k = n_hours - 1, n_blocks - 1
    raw = _GROWTH ** np.arange(k)
    sizes = np.maximum(1, np.floor(raw / raw.sum() * rest)).astype(int)
    # hand out the rounding remainder (or take back the excess) from the largest blocks
    diff = rest - int(sizes.sum())
    order = np.argsort(-raw)
    i = 0
    while diff != 0:
        j = order[i % k]
        if diff > 0:
            sizes[j] += 1
            diff -= 1
        elif sizes[j] > 1:
            sizes[j] -= 1
            diff += 1
        i += 1
    return np.concatenate([[1], sizes])


def _refine(values: np.ndarray, w: np.ndarray, hour_block: np.ndarray, n_blocks: int, peak: int) -> np.ndarray:
    """Lloyd (k-means) iterations on the hours' demand vectors (GPU-equivalents), from the load-duration cut: a
    load ranking alone averages hours of different mixes, sharing capacity that is not there hour by hour. The
    peak hour stays alone in block 0; empty clusters are dropped, blocks renumbered by falling load."""
    active = w > 0
    if not active.any() or n_blocks <= 2:
        return hour_block
    x = values[:, active] * w[active]
    labels = hour_block.copy()
    rest = np.ones(len(x), dtype=bool)
    rest[peak] = False
    for _ in range(_KMEANS_ITERATIONS):
        counts = np.bincount(labels, minlength=n_blocks)
        sums = np.zeros((n_blocks, x.shape[1]))
        np.add.at(sums, labels, x)
        centroids = sums / np.maximum(counts, 1)[:, None]
        dist = ((x[rest, None, :] - centroids[None, 1:, :]) ** 2).sum(axis=2)
        dist[:, counts[1:] == 0] = np.inf
        new = labels.copy()
        new[rest] = dist.argmin(axis=1) + 1
        if (new == labels).all():
            break
        labels = new
    # renumber: block 0 = the peak hour, then by falling mean load
    used = np.unique(labels[rest])
    load = np.array([x[labels == b].sum(axis=1).mean() for b in used])
    mapping = np.zeros(n_blocks, dtype=int)
    mapping[used[np.argsort(-load, kind="stable")]] = np.arange(1, len(used) + 1)
    out: np.ndarray = mapping[labels]
    out[peak] = 0
    return out


def load_duration_blocks(
    demand: pd.DataFrame,
    n_blocks: int,
    *,
    weights: Mapping[str, float] | None = None,
    deferrable: Iterable[str] = (),
) -> Blocks:
    """Aggregate hourly demand (one row per hour, one column per workload, units/hour) into ``n_blocks`` blocks
    (``>= len(demand)``: every hour its own). Hours are ranked by GPU load (``weights``: GPU-hours per unit,
    default 1), leaving out the ``deferrable`` workloads (their work may move anywhere)."""
    n_hours = len(demand)
    if n_hours == 0:
        raise ValueError("demand has no hours")
    if n_blocks < 1:
        raise ValueError("n_blocks must be >= 1")
    if n_blocks >= n_hours:
        return blocks_from_partition(demand, np.arange(n_hours))
    values = demand.to_numpy(dtype=float)
    skip = set(deferrable)
    w = np.array([0.0 if c in skip else float((weights or {}).get(c, 1.0)) for c in demand.columns])
    load = values @ w
    order = np.argsort(-load, kind="stable")
    sizes = _block_sizes(n_hours, n_blocks)
    rank_block = np.repeat(np.arange(n_blocks), sizes)
    hour_block = np.empty(n_hours, dtype=int)
    hour_block[order] = rank_block
    hour_block = _refine(values, w, hour_block, n_blocks, peak=int(order[0]))
    return blocks_from_partition(demand, hour_block)


def blocks_from_partition(demand: pd.DataFrame, hour_block: np.ndarray) -> Blocks:
    """Blocks of a partition of the hours (``hour_block[h]``: block of hour ``h``, blocks 0…n-1 all used), each
    with every workload's mean (the certification refines a plan by splitting blocks)."""
    hour_block = np.asarray(hour_block, dtype=int)
    if len(hour_block) != len(demand):
        raise ValueError("hour_block needs one block per hour of demand")
    n_blocks = int(hour_block.max()) + 1
    sizes = np.bincount(hour_block, minlength=n_blocks)
    if (sizes == 0).any():
        raise ValueError("every block needs at least one hour")
    values = demand.to_numpy(dtype=float)
    sums = np.zeros((n_blocks, values.shape[1]))
    np.add.at(sums, hour_block, values)
    frame = pd.DataFrame(sums / sizes[:, None], columns=demand.columns, index=pd.RangeIndex(n_blocks, name="block"))
    return Blocks(sizes.astype(float), hour_block, frame)

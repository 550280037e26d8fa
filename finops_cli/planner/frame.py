"""The plan frame: one row per decision variable, priced, before any solver object exists.

Here the model gets small (docs/planner.md, "What keeps the model small"): compliant pairs only (the gate runs
first), priced congestion segments, rows dominated by an unbounded destination dropped, identical workloads
grouped, rows per load-duration block (:mod:`.blocks`), whole nodes opt-in (``integer_nodes``).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from finops_cli.core.compliance import NoCompliantDestination
from finops_cli.core.pricing import (
    Mode,
    base_price_per_gpu_hour,
    capacity_gpus,
    priced_destinations,
    segments,
    spot_multiplier,
    units_per_gpu_hour,
)
from finops_cli.planner.blocks import Blocks, blocks_from_partition, load_duration_blocks
from finops_cli.schema.estate import Fleet, Substrate, Workload

#: Substrate kinds billed per whole node when ``gpus_per_node`` is set (owned/reserved capacity is already
#: paid, and its marginal cost is per GPU-hour used; APIs have no nodes).
NODE_KINDS = ("on_demand", "spot")

#: Variables the default block count may give the model: above it, fewer blocks, refined by the certification
#: where that costs accuracy (the LP of 200 distinct workloads × 40 substrates takes seconds at ~80 k columns,
#: minutes at 530 k, with the same lower bound from 3 to 41 blocks). The sample (~2 k columns) keeps 48.
COLUMN_BUDGET = 80_000

#: Fewest blocks the column budget leaves (the peak hour and the rest): 700 distinct workloads × 80 substrates ×
#: 720 h certify within 0.017 % on 2 blocks, with an LP of 6.8 CPU-s instead of 18.
MIN_BUDGET_BLOCKS = 2

#: Columns of :attr:`PlanFrame.nodes`.
NODE_COLUMNS = ["gpus_per_node", "max_nodes", "usd_per_gpu_hour"]

#: Columns of :attr:`PlanFrame.rows` (one row = one variable ``x``, GPUs in use on average in the block).
ROW_COLUMNS = [
    "group",
    "substrate",
    "segment",
    "block",
    "hours",
    "usd_per_gpu_hour",
    "penalty_per_gpu_hour",
    "units_per_gpu_hour",
    "wall_per_gpu_hour",
    "is_api",
]


@dataclass
class PlanFrame:
    """Everything the model builder needs, as frames and arrays (no solver objects)."""

    rows: pd.DataFrame  # one row per variable, :data:`ROW_COLUMNS` (``hours``: the block's length)
    demand: pd.Series  # non-deferrable groups' mean units/hour, index (group, block)
    deferrable_units: dict[str, float]  # deferrable groups' units to serve anywhere in the horizon
    max_parallel_gpus: dict[str, float]  # groups' cap on GPUs in use at once, per block
    # index (substrate, segment): ``fixed_gpus`` (NaN: unbounded), ``gpus_per_commit_block`` (added per block bought)
    capacity: pd.DataFrame
    # purchasable substrates: block_gpus, usd_per_gpu_hour, max_blocks, usd_per_block (for the whole horizon)
    commitments: pd.DataFrame
    members: dict[str, tuple[str, np.ndarray]]  # workload → (group, its share of the group's demand per block)
    blocks: Blocks
    horizon_hours: int
    sunk_cost: float
    substrates: dict[str, Substrate]
    workloads: dict[str, Workload]
    refused: dict[str, list[str]] = field(default_factory=dict)
    # ``integer_nodes``: gpus_per_node, max_nodes (NaN: unbounded), usd_per_gpu_hour (an idle node GPU's price)
    nodes: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=NODE_COLUMNS))

    @property
    def groups(self) -> list[str]:
        return sorted(set(self.rows["group"]))


def _pricing_key(workload: Workload) -> tuple[Any, ...]:
    """What of a workload :func:`~finops_cli.core.pricing.segments` and ``spot_multiplier`` read: its unit
    (API prices), interruptibility and checkpoints (NETC multiplier) and SLO (reliability penalty)."""
    cp = workload.checkpoint
    return (
        workload.unit,
        workload.interruptible,
        workload.slo,
        None if cp is None else (cp.interval_minutes, cp.write_minutes),
    )


class _SegmentCache:
    """:func:`~finops_cli.core.pricing.segments` per (substrate, workload's pricing key), computed once: hundreds
    of distinct workloads share a handful of keys. Capacity is per GPU (a copy of the substrate with ``gpus = 1``)."""

    def __init__(self, fleet: Fleet, mode: Mode) -> None:
        self.fleet, self.mode = fleet, mode
        self.unit: dict[str, Substrate] = {}
        self.seen: dict[tuple[Any, ...], list[Any]] = {}
        self.walls: dict[tuple[Any, ...], float] = {}

    def __call__(self, substrate: Substrate, workload: Workload) -> list[Any]:
        key = (substrate.id, _pricing_key(workload))
        got = self.seen.get(key)
        if got is None:
            if substrate.kind == "api" or (substrate.gpus is None and substrate.purchasable is None):
                got = segments(substrate, workload, self.fleet, self.mode)
            else:
                unit = self.unit.get(substrate.id)
                if unit is None:
                    unit = self.unit[substrate.id] = substrate.model_copy(update={"gpus": 1.0})
                got = segments(unit, workload, self.fleet, self.mode)
            self.seen[key] = got
        return got

    def wall(self, substrate: Substrate, workload: Workload) -> float:
        key = (substrate.id, _pricing_key(workload))
        got = self.walls.get(key)
        if got is None:
            got = self.walls[key] = spot_multiplier(substrate, workload)
        return got


def _priced_rows(
    workload: Workload, fleet: Fleet, cache: _SegmentCache
) -> tuple[list[tuple[Any, ...]], dict[str, list[str]]]:
    """(substrate, segment, usd, penalty, units/GPU-hour, share of capacity or None) per compliant row."""
    priced, excluded = priced_destinations(workload, fleet, lambda s: cache(s, workload))
    rows: list[tuple[Any, ...]] = []
    for s, segs in priced:
        thr = units_per_gpu_hour(s, workload)
        for seg in segs:
            rows.append((s.id, seg.index, seg.usd_per_gpu_hour, seg.penalty_per_gpu_hour, thr, seg.capacity_gpus))
    if not rows:
        raise NoCompliantDestination(workload.id, excluded)
    return rows, excluded


def _prune(rows: list[tuple[Any, ...]], fleet: Fleet, node_ids: frozenset[str] = frozenset()) -> list[tuple[Any, ...]]:
    """Drop rows dearer per unit than the workload's cheapest unbounded destination.

    A substrate billed per whole node (``node_ids``) is never the reference: its price per unit leaves out the
    node rounding, so a dearer per-GPU destination may still be cheaper once rounding is paid.
    """

    def unbounded_row(sid: str, cap: float | None) -> bool:
        return cap is None and fleet.substrate(sid).purchasable is None and sid not in node_ids

    unbounded = [(usd + pen) / thr for sid, _k, usd, pen, thr, cap in rows if unbounded_row(sid, cap)]
    if not unbounded:
        return rows
    best = min(unbounded)
    keep = [r for r in rows if (r[2] + r[3]) / r[4] <= best * (1 + 1e-12)]
    # exactly one unbounded row at the best price (ties between unbounded rows are interchangeable)
    first = next(i for i, r in enumerate(keep) if unbounded_row(r[0], r[5]))
    return [r for i, r in enumerate(keep) if i == first or not unbounded_row(r[0], r[5])]


def build_frame(
    fleet: Fleet,
    workloads: list[Workload],
    demand: pd.DataFrame,
    *,
    n_blocks: int,
    mode: Mode = "cost",
    prune: bool = True,
    group: bool = True,
    integer_nodes: bool = False,
    hour_block: np.ndarray | None = None,
    column_budget: int | None = None,
) -> PlanFrame:
    """Price every compliant (workload, substrate, segment) of ``fleet`` (numeric prices) and lay it out over blocks.

    ``demand``: units per hour, one row per hour and one column per workload. ``n_blocks`` load-duration blocks
    (``>= hours``: full resolution), or the partition ``hour_block`` (the certification's refinement); with a
    ``column_budget`` fewer blocks (never under :data:`MIN_BUDGET_BLOCKS`) when ``n_blocks`` would give the model
    more variables than that.
    """
    missing = [w.id for w in workloads if w.id not in demand.columns]
    if missing:
        raise ValueError(f"demand has no column for workloads {missing}")
    horizon_hours = len(demand)
    substrates = {s.id: s for s in fleet.substrates}
    node_ids = frozenset(
        s.id for s in fleet.substrates if integer_nodes and s.kind in NODE_KINDS and s.gpus_per_node is not None
    )
    priced: dict[str, list[tuple[Any, ...]]] = {}
    refused: dict[str, list[str]] = {}
    cache = _SegmentCache(fleet, mode)
    for w in workloads:
        rows, excluded = _priced_rows(w, fleet, cache)
        refused.update({f"{w.id}→{sid}": r for sid, r in excluded.items() if r and r[0].startswith("spot refused")})
        priced[w.id] = _prune(rows, fleet, node_ids) if prune and w.max_parallel_gpus is None else rows

    # group identical workloads
    group_of: dict[str, str] = {}
    signature_group: dict[tuple[Any, ...], str] = {}
    for w in workloads:
        if not group or w.max_parallel_gpus is not None:
            group_of[w.id] = w.id
            continue
        sig = (w.deferrable, tuple(sorted((r[0], r[1], r[2], r[3], r[4]) for r in priced[w.id])))
        group_of[w.id] = signature_group.setdefault(sig, w.id)

    if column_budget is not None and hour_block is None and n_blocks < horizon_hours:
        columns_per_block = sum(len(priced[g]) for g in dict.fromkeys(group_of.values()))
        n_blocks = min(n_blocks, max(MIN_BUDGET_BLOCKS, column_budget // max(columns_per_block, 1)))

    planned = demand[[w.id for w in workloads]]
    if hour_block is not None:
        blocks = blocks_from_partition(planned, hour_block)
    else:  # hours ranked by GPU-equivalents: units / the workload's best throughput
        weights = {w.id: 1.0 / max(r[4] for r in priced[w.id]) for w in workloads}
        deferrable = [w.id for w in workloads if w.deferrable]
        blocks = load_duration_blocks(planned, n_blocks, weights=weights, deferrable=deferrable)

    n = blocks.n
    block_demand = blocks.demand
    group_rate: dict[str, np.ndarray] = {}
    deferrable_units: dict[str, float] = {}
    members: dict[str, tuple[str, np.ndarray]] = {}
    for w in workloads:
        g = group_of[w.id]
        if w.deferrable:
            deferrable_units[g] = deferrable_units.get(g, 0.0) + float(demand[w.id].sum())
        else:
            group_rate[g] = group_rate.get(g, np.zeros(n)) + block_demand[w.id].to_numpy(dtype=float)
    group_size = Counter(group_of.values())
    for w in workloads:
        g = group_of[w.id]
        if w.deferrable:
            total = deferrable_units[g]
            share = np.full(n, float(demand[w.id].sum()) / total if total > 0 else 1.0 / group_size[g])
        else:
            rate = block_demand[w.id].to_numpy(dtype=float)
            tot = group_rate[g]
            share = np.divide(rate, tot, out=np.full(n, 1.0 / group_size[g]), where=tot > 0)
        members[w.id] = (g, share)

    # rows: group × priced row × block
    # ``wall_per_gpu_hour``: pool GPU-hours one useful GPU-hour occupies (the NETC multiplier W on spot: re-work,
    # resumes and checkpoint writes run on the same GPUs; 1 elsewhere). Grouped workloads share it (same prices).
    by_id = {w.id: w for w in workloads}
    base = []
    for gid in dict.fromkeys(group_of.values()):
        for sid, k, usd, pen, thr, _cap in priced[gid]:
            wall = cache.wall(substrates[sid], by_id[gid])
            base.append((gid, sid, k, usd, pen, thr, wall, substrates[sid].kind == "api"))
    base_df = pd.DataFrame(base, columns=[c for c in ROW_COLUMNS if c not in ("block", "hours")])
    rows = base_df.loc[base_df.index.repeat(n)].reset_index(drop=True)
    rows["block"] = np.tile(np.arange(n), len(base_df))
    rows["hours"] = blocks.hours[rows["block"].to_numpy()]
    rows = rows[ROW_COLUMNS]

    demand_series = pd.Series(
        {(g, b): float(r[b]) for g, r in group_rate.items() for b in range(n)}, dtype=float, name="units_per_hour"
    )
    if len(demand_series):
        demand_series.index = pd.MultiIndex.from_tuples(demand_series.index, names=["group", "block"])

    # capacity per (substrate, segment): shares × fixed GPUs, shares × block GPUs per commitment block
    cap_rows = []
    shares_seen: dict[tuple[str, int], float | None] = {}
    for gid in dict.fromkeys(group_of.values()):
        for sid, k, *_rest, cap in priced[gid]:
            shares_seen.setdefault((sid, k), cap)
    for (sid, k), seg_share in shares_seen.items():  # GPUs of segment k per GPU of the substrate (None: unbounded)
        s = substrates[sid]
        if seg_share is None:
            cap_rows.append((sid, k, np.nan, 0.0))
        else:
            per_block = seg_share * s.purchasable.block_gpus if s.purchasable is not None else 0.0
            cap_rows.append((sid, k, seg_share * (s.gpus or 0.0), per_block))
    capacity = pd.DataFrame(cap_rows, columns=["substrate", "segment", "fixed_gpus", "gpus_per_commit_block"])
    capacity = capacity.set_index(["substrate", "segment"]).sort_index()

    commit_rows = [
        (
            s.id,
            s.purchasable.block_gpus,
            s.purchasable.price_per_gpu_hour,
            s.purchasable.max_blocks,
            s.purchasable.price_per_gpu_hour * s.purchasable.block_gpus * horizon_hours,
        )
        for s in fleet.substrates
        if s.purchasable is not None and s.purchasable.max_blocks > 0 and s.status != "down"
    ]
    commitments = pd.DataFrame(
        commit_rows, columns=["substrate", "block_gpus", "usd_per_gpu_hour", "max_blocks", "usd_per_block"]
    ).set_index("substrate")

    sunk = sum(s.committed_per_gpu_hour * (s.gpus or 0.0) for s in fleet.substrates) * horizon_hours
    max_parallel = {w.id: float(w.max_parallel_gpus) for w in workloads if w.max_parallel_gpus is not None}
    used = set(base_df["substrate"])
    node_rows = []
    for sid in sorted(node_ids & used):
        s = substrates[sid]
        cap = capacity_gpus(s, fleet)
        per_node = float(s.gpus_per_node or 1.0)
        max_nodes = np.nan if cap is None else float(math.floor(cap / per_node + 1e-9))
        node_rows.append((sid, per_node, max_nodes, base_price_per_gpu_hour(s) * s.preference))
    nodes = pd.DataFrame(node_rows, columns=["substrate", *NODE_COLUMNS]).set_index("substrate")
    return PlanFrame(
        rows=rows,
        demand=demand_series,
        deferrable_units=deferrable_units,
        max_parallel_gpus=max_parallel,
        capacity=capacity,
        commitments=commitments,
        members=members,
        blocks=blocks,
        horizon_hours=horizon_hours,
        sunk_cost=float(sunk),
        substrates=substrates,
        workloads={w.id: w for w in workloads},
        refused=refused,
        nodes=nodes,
    )

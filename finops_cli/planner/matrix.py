"""The plan's MILP as one sparse matrix, built from the plan frame's columns in a few vectorised passes.

No per-term Python objects (PuLP's ~15 µs each dominate at hundreds of workloads): HiGHS gets the CSC arrays
(:mod:`.highs`), and the PuLP model CBC solves is made from the same rows (:mod:`.model`). Columns: ``x`` |
commitment blocks | nodes | unserved per demand row | unserved per deferrable total; rows: ``demand`` | ``defer``
| ``parallel`` | ``cap`` | ``nodes`` (docs/planner.md, "Formulation").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from finops_cli.planner.frame import PlanFrame

#: Unserved work costs this many times the dearest real price per unit in the model (and at least 1000).
UNSERVED_PRICE_FACTOR = 100.0

#: Tie-break on work placed on whole nodes, as a fraction of the idle price ``q_s``: a paid node's idle GPUs
#: are free in money, so without it a solver may "serve" more than the demand on them (same cost, confusing
#: report). 1e-6 of the price is far inside the MIP gap; reported money is computed from values, not this.
NODE_TIE_BREAK = 1e-6


def unserved_price(frame: PlanFrame) -> float:
    """Price per unit of unserved work: far above any real way of serving it."""
    rows = frame.rows
    if rows.empty:
        return 1000.0
    per_unit = (rows["usd_per_gpu_hour"] + rows["penalty_per_gpu_hour"]) / rows["units_per_gpu_hour"]
    return max(1000.0, UNSERVED_PRICE_FACTOR * float(per_unit.max()))


@dataclass
class PlanMatrix:
    """``min cost·v  s.t.  row_lower ≤ A v ≤ row_upper, col_lower ≤ v ≤ col_upper, v[integer] ∈ ℤ``.

    ``A`` is column-wise (CSC: ``start``, ``index``, ``value``). The ``*_keys`` lists name the columns and
    rows of each family in order; ``*_col0``/``*_row0`` are where each family starts.
    """

    frame: PlanFrame
    cost: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    integer: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    start: np.ndarray
    index: np.ndarray
    value: np.ndarray
    unserved_usd_per_unit: float
    commit_keys: list[str]
    node_keys: list[tuple[str, int]]
    demand_keys: list[tuple[str, int]]
    defer_keys: list[str]
    parallel_keys: list[tuple[str, int]]
    cap_keys: list[tuple[str, int, int]]
    n_x: int = field(init=False)
    commit_col0: int = field(init=False)
    node_col0: int = field(init=False)
    unserved_col0: int = field(init=False)
    defer_unserved_col0: int = field(init=False)
    defer_row0: int = field(init=False)
    parallel_row0: int = field(init=False)

    def __post_init__(self) -> None:
        self.n_x = self.commit_col0 = len(self.frame.rows)
        self.node_col0 = self.commit_col0 + len(self.commit_keys)
        self.unserved_col0 = self.node_col0 + len(self.node_keys)
        self.defer_unserved_col0 = self.unserved_col0 + len(self.demand_keys)
        self.defer_row0 = len(self.demand_keys)
        self.parallel_row0 = self.defer_row0 + len(self.defer_keys)

    @property
    def n_cols(self) -> int:
        return len(self.cost)

    @property
    def n_rows(self) -> int:
        return len(self.row_lower)

    @property
    def has_integers(self) -> bool:
        return bool(self.integer.any())

    def col_names(self) -> list[str]:
        """Names PuLP and the LP files use: ``x{i}``, ``commit-{s}``, ``node-{s}-{b}``, ``u{i}``, ``ud{i}``."""
        return [
            *(f"x{i}" for i in range(self.n_x)),
            *(f"commit-{s}" for s in self.commit_keys),
            *(f"node-{s}-{b}" for s, b in self.node_keys),
            *(f"u{i}" for i in range(len(self.demand_keys))),
            *(f"ud{i}" for i in range(len(self.defer_keys))),
        ]

    def row_names(self) -> list[str]:
        return [
            *(f"demand-{g}-{b}" for g, b in self.demand_keys),
            *(f"defer-{g}" for g in self.defer_keys),
            *(f"parallel-{g}-{b}" for g, b in self.parallel_keys),
            *(f"cap-{s}-{k}-{b}" for s, k, b in self.cap_keys),
            *(f"nodes-{s}-{b}" for s, b in self.node_keys),
        ]


def _positions(keys: pd.MultiIndex | pd.Index, wanted: pd.MultiIndex | pd.Index) -> np.ndarray:
    """Position of each ``wanted`` key in ``keys`` (−1 when absent)."""
    if len(keys) == 0:
        return np.full(len(wanted), -1, dtype=np.int64)
    return np.asarray(keys.get_indexer(wanted), dtype=np.int64)


def build_matrix(frame: PlanFrame) -> PlanMatrix:
    """The plan's MILP as arrays (``docs/planner.md`` has the formulation, row by row)."""
    rows = frame.rows
    n_x = len(rows)
    group = rows["group"].to_numpy()
    block = rows["block"].to_numpy()
    substrate = rows["substrate"].to_numpy()
    segment = rows["segment"].to_numpy()
    hours_x = rows["hours"].to_numpy(dtype=float)
    thr = rows["units_per_gpu_hour"].to_numpy(dtype=float)
    wall = rows["wall_per_gpu_hour"].to_numpy(dtype=float)
    is_api = rows["is_api"].to_numpy(dtype=bool)
    block_hours = np.asarray(frame.blocks.hours, dtype=float)
    n_blocks = frame.blocks.n

    # columns after x
    commitments = frame.commitments
    commit_keys = [str(s) for s in commitments.index]
    nodes = frame.nodes
    node_keys = [(str(s), b) for s in nodes.index for b in range(n_blocks)]
    demand_keys = [(str(g), int(b)) for g, b in frame.demand.index]
    defer_keys = [str(g) for g in frame.deferrable_units]
    n_commit, n_node, n_dem, n_def = len(commit_keys), len(node_keys), len(demand_keys), len(defer_keys)
    commit_col0 = n_x
    node_col0 = commit_col0 + n_commit
    u_col0 = node_col0 + n_node
    ud_col0 = u_col0 + n_dem
    n_cols = ud_col0 + n_def
    x_cols = np.arange(n_x)

    triplets: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (row, column, value) of A's entries
    lower: list[np.ndarray] = []
    upper: list[np.ndarray] = []

    def add_rows(n: int, lo: object, up: object, *terms: tuple[Any, ...]) -> None:
        """``n`` rows bounded ``[lo, up]`` with their ``(row within these n, column, value)`` terms."""
        row0 = sum(len(part) for part in lower)
        for r, c, v in terms:
            triplets.append((np.asarray(r, dtype=np.int64) + row0, np.asarray(c, dtype=np.int64), np.asarray(v, float)))
        lower.append(np.broadcast_to(np.asarray(lo, dtype=float), (n,)))
        upper.append(np.broadcast_to(np.asarray(up, dtype=float), (n,)))

    # demand-{g}-{b}: Σ a x + u ≥ d
    pairs = pd.MultiIndex.from_arrays([group, block])
    if n_dem:
        pos = _positions(frame.demand.index, pairs)
        sel = pos >= 0
        slack = (np.arange(n_dem), u_col0 + np.arange(n_dem), np.ones(n_dem))
        add_rows(n_dem, frame.demand.to_numpy(dtype=float), np.inf, (pos[sel], x_cols[sel], thr[sel]), slack)
    # defer-{g}: Σ h a x + u ≥ D
    if n_def:
        pos = _positions(pd.Index(defer_keys), pd.Index(group))
        sel = pos >= 0
        slack = (np.arange(n_def), ud_col0 + np.arange(n_def), np.ones(n_def))
        total = [frame.deferrable_units[g] for g in defer_keys]
        add_rows(n_def, total, np.inf, (pos[sel], x_cols[sel], (thr * hours_x)[sel]), slack)
    # parallel-{g}-{b}: Σ x ≤ cap over GPU rows
    parallel_keys: list[tuple[str, int]] = []
    caps = frame.max_parallel_gpus
    if caps:
        sel = np.isin(group, list(caps)) & ~is_api
        if sel.any():
            keys = pd.MultiIndex.from_arrays([group[sel], block[sel]]).unique().sort_values()
            parallel_keys = [(str(g), int(b)) for g, b in keys]
            terms = (_positions(keys, pairs[sel]), x_cols[sel], np.ones(int(sel.sum())))
            add_rows(len(keys), -np.inf, [caps[g] for g, _b in parallel_keys], terms)
    # cap-{s}-{k}-{b}: Σ W x − c n ≤ C
    cap_keys: list[tuple[str, int, int]] = []
    cap = frame.capacity
    bounded = cap[cap["fixed_gpus"].notna()]
    if not bounded.empty:
        sk = pd.MultiIndex.from_arrays([substrate, segment])
        sel = _positions(bounded.index, sk) >= 0
        if sel.any():
            keys = pd.MultiIndex.from_arrays([substrate[sel], segment[sel], block[sel]]).unique().sort_values()
            cap_keys = [(str(s), int(k), int(b)) for s, k, b in keys]
            pos = _positions(keys, pd.MultiIndex.from_arrays([substrate[sel], segment[sel], block[sel]]))
            key_sk = pd.MultiIndex.from_arrays([keys.get_level_values(0), keys.get_level_values(1)])
            fixed = bounded["fixed_gpus"].astype(float).reindex(key_sk).to_numpy()
            per_block = bounded["gpus_per_commit_block"].astype(float).reindex(key_sk).to_numpy()
            commit_pos = _positions(pd.Index(commit_keys), pd.Index(keys.get_level_values(0)))
            has = (per_block > 0) & (commit_pos >= 0)
            bought = (np.flatnonzero(has), commit_col0 + commit_pos[has], -per_block[has])
            add_rows(len(keys), -np.inf, fixed, (pos, x_cols[sel], wall[sel]), bought)
    # nodes-{s}-{b}: Σ W x − G N ≤ 0
    if n_node:
        pos = _positions(pd.MultiIndex.from_tuples(node_keys), pd.MultiIndex.from_arrays([substrate, block]))
        sel = pos >= 0
        per_node = nodes["gpus_per_node"].astype(float).reindex([s for s, _b in node_keys]).to_numpy()
        provisioned = (np.arange(n_node), node_col0 + np.arange(n_node), -per_node)
        add_rows(n_node, -np.inf, 0.0, (pos[sel], x_cols[sel], wall[sel]), provisioned)

    # objective (docs/planner.md)
    cost = np.zeros(n_cols)
    cost[:n_x] = hours_x * (rows["usd_per_gpu_hour"].to_numpy(dtype=float) + rows["penalty_per_gpu_hour"].to_numpy())
    if n_node:
        idle = pd.Series(substrate).map(nodes["usd_per_gpu_hour"].astype(float)).to_numpy(dtype=float)
        on_node = ~np.isnan(idle)
        cost[:n_x][on_node] -= (hours_x * idle * wall * (1 - NODE_TIE_BREAK))[on_node]
        q = nodes["usd_per_gpu_hour"].astype(float).reindex([s for s, _b in node_keys]).to_numpy()
        g = nodes["gpus_per_node"].astype(float).reindex([s for s, _b in node_keys]).to_numpy()
        cost[node_col0:u_col0] = q * g * block_hours[[b for _s, b in node_keys]]
    if n_commit:
        cost[commit_col0:node_col0] = commitments["usd_per_block"].astype(float).to_numpy()
    price = unserved_price(frame)
    cost[u_col0:ud_col0] = price * block_hours[[b for _g, b in demand_keys]] if n_dem else 0.0
    cost[ud_col0:] = price

    col_lower = np.zeros(n_cols)
    col_upper = np.full(n_cols, np.inf)
    if n_commit:
        col_upper[commit_col0:node_col0] = commitments["max_blocks"].astype(float).to_numpy()
    if n_node:
        max_nodes = nodes["max_nodes"].astype(float).reindex([s for s, _b in node_keys]).to_numpy()
        col_upper[node_col0:u_col0] = np.where(np.isnan(max_nodes), np.inf, max_nodes)
    integer = np.zeros(n_cols, dtype=bool)
    integer[commit_col0:u_col0] = True

    r, c, v = (np.concatenate(part) for part in zip(*triplets, strict=True)) if triplets else (np.empty(0, int),) * 3
    order = np.lexsort((r, c))
    counts = np.bincount(c, minlength=n_cols)
    return PlanMatrix(
        frame=frame,
        cost=cost,
        col_lower=col_lower,
        col_upper=col_upper,
        integer=integer,
        row_lower=np.concatenate(lower) if lower else np.empty(0),
        row_upper=np.concatenate(upper) if upper else np.empty(0),
        start=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        index=r[order],
        value=v[order].astype(float),
        unserved_usd_per_unit=price,
        commit_keys=commit_keys,
        node_keys=node_keys,
        demand_keys=demand_keys,
        defer_keys=defer_keys,
        parallel_keys=parallel_keys,
        cap_keys=cap_keys,
    )

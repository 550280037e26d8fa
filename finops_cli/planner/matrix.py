"""The plan's MILP as arrays: one sparse matrix built from the plan frame in a few vectorised passes.

PuLP creates one Python object per variable and per term (~15 µs and ~0.6 KB each, PERF-NOTES); with
hundreds of distinct workloads that, not the solver, dominates. The matrix is built once from the frame's
columns (no per-term objects) and handed to HiGHS as CSC arrays (:mod:`finops_cli.planner.highs`); the PuLP
model that CBC solves is built *from* it (:mod:`finops_cli.planner.build`), so both solvers see the same rows.

Columns, in order: ``x`` (one per frame row) | ``n`` commitment blocks | ``N`` nodes | ``u`` unserved per
demand row | ``u`` unserved per deferrable total. Rows, in order: ``demand`` | ``defer`` | ``parallel`` |
``cap`` | ``nodes`` (the families of ``docs/planner.md``; names from :meth:`PlanMatrix.row_names`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    commit_keys: list[str] = field(default_factory=list)
    node_keys: list[tuple[str, int]] = field(default_factory=list)
    demand_keys: list[tuple[str, int]] = field(default_factory=list)
    defer_keys: list[str] = field(default_factory=list)
    parallel_keys: list[tuple[str, int]] = field(default_factory=list)
    cap_keys: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def n_x(self) -> int:
        return len(self.frame.rows)

    @property
    def commit_col0(self) -> int:
        return self.n_x

    @property
    def node_col0(self) -> int:
        return self.commit_col0 + len(self.commit_keys)

    @property
    def unserved_col0(self) -> int:
        return self.node_col0 + len(self.node_keys)

    @property
    def defer_unserved_col0(self) -> int:
        return self.unserved_col0 + len(self.demand_keys)

    @property
    def n_cols(self) -> int:
        return len(self.cost)

    @property
    def n_rows(self) -> int:
        return len(self.row_lower)

    @property
    def defer_row0(self) -> int:
        return len(self.demand_keys)

    @property
    def parallel_row0(self) -> int:
        return self.defer_row0 + len(self.defer_keys)

    @property
    def cap_row0(self) -> int:
        return self.parallel_row0 + len(self.parallel_keys)

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

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The same matrix row-wise (``start``, ``index``, ``value``), for builders that emit one row at a time."""
        cols = np.repeat(np.arange(self.n_cols), np.diff(self.start))
        order = np.argsort(self.index, kind="stable")
        counts = np.bincount(self.index, minlength=self.n_rows)
        start = np.concatenate([[0], np.cumsum(counts)])
        return start, cols[order], self.value[order]


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

    r_parts: list[np.ndarray] = []
    c_parts: list[np.ndarray] = []
    v_parts: list[np.ndarray] = []
    lower_parts: list[np.ndarray] = []
    upper_parts: list[np.ndarray] = []
    row0 = 0

    def emit(r: np.ndarray, c: np.ndarray, v: np.ndarray) -> None:
        r_parts.append(np.asarray(r, dtype=np.int64) + row0)
        c_parts.append(np.asarray(c, dtype=np.int64))
        v_parts.append(np.asarray(v, dtype=float))

    # demand-{g}-{b}: Σ a x + u ≥ d
    pairs = pd.MultiIndex.from_arrays([group, block])
    if n_dem:
        pos = _positions(frame.demand.index, pairs)
        sel = pos >= 0
        emit(pos[sel], x_cols[sel], thr[sel])
        emit(np.arange(n_dem), u_col0 + np.arange(n_dem), np.ones(n_dem))
        lower_parts.append(frame.demand.to_numpy(dtype=float))
        upper_parts.append(np.full(n_dem, np.inf))
        row0 += n_dem
    # defer-{g}: Σ h a x + u ≥ D
    if n_def:
        pos = _positions(pd.Index(defer_keys), pd.Index(group))
        sel = pos >= 0
        emit(pos[sel], x_cols[sel], (thr * hours_x)[sel])
        emit(np.arange(n_def), ud_col0 + np.arange(n_def), np.ones(n_def))
        lower_parts.append(np.array([frame.deferrable_units[g] for g in defer_keys], dtype=float))
        upper_parts.append(np.full(n_def, np.inf))
        row0 += n_def
    # parallel-{g}-{b}: Σ x ≤ cap over GPU rows
    parallel_keys: list[tuple[str, int]] = []
    caps = frame.max_parallel_gpus
    if caps:
        sel = np.isin(group, list(caps)) & ~is_api
        if sel.any():
            keys = pd.MultiIndex.from_arrays([group[sel], block[sel]]).unique().sort_values()
            parallel_keys = [(str(g), int(b)) for g, b in keys]
            pos = _positions(keys, pairs[sel])
            emit(pos, x_cols[sel], np.ones(int(sel.sum())))
            lower_parts.append(np.full(len(keys), -np.inf))
            upper_parts.append(np.array([caps[g] for g, _b in parallel_keys], dtype=float))
            row0 += len(keys)
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
            emit(pos, x_cols[sel], wall[sel])
            key_sk = pd.MultiIndex.from_arrays([keys.get_level_values(0), keys.get_level_values(1)])
            fixed = bounded["fixed_gpus"].astype(float).reindex(key_sk).to_numpy()
            per_block = bounded["gpus_per_commit_block"].astype(float).reindex(key_sk).to_numpy()
            commit_pos = _positions(pd.Index(commit_keys), pd.Index(keys.get_level_values(0)))
            has = (per_block > 0) & (commit_pos >= 0)
            emit(np.flatnonzero(has), commit_col0 + commit_pos[has], -per_block[has])
            lower_parts.append(np.full(len(keys), -np.inf))
            upper_parts.append(fixed)
            row0 += len(keys)
    # nodes-{s}-{b}: Σ W x − G N ≤ 0
    if n_node:
        node_index = pd.MultiIndex.from_tuples(node_keys)
        pos = _positions(node_index, pd.MultiIndex.from_arrays([substrate, block]))
        sel = pos >= 0
        emit(pos[sel], x_cols[sel], wall[sel])
        per_node = nodes["gpus_per_node"].astype(float).reindex([s for s, _b in node_keys]).to_numpy()
        emit(np.arange(n_node), node_col0 + np.arange(n_node), -per_node)
        lower_parts.append(np.full(n_node, -np.inf))
        upper_parts.append(np.zeros(n_node))
        row0 += n_node

    # objective (see objective.py for the formula)
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

    r = np.concatenate(r_parts) if r_parts else np.empty(0, dtype=np.int64)
    c = np.concatenate(c_parts) if c_parts else np.empty(0, dtype=np.int64)
    v = np.concatenate(v_parts) if v_parts else np.empty(0)
    order = np.lexsort((r, c))
    counts = np.bincount(c, minlength=n_cols)
    return PlanMatrix(
        frame=frame,
        cost=cost,
        col_lower=col_lower,
        col_upper=col_upper,
        integer=integer,
        row_lower=np.concatenate(lower_parts) if lower_parts else np.empty(0),
        row_upper=np.concatenate(upper_parts) if upper_parts else np.empty(0),
        start=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        index=r[order],
        value=v[order],
        unserved_usd_per_unit=price,
        commit_keys=commit_keys,
        node_keys=node_keys,
        demand_keys=demand_keys,
        defer_keys=defer_keys,
        parallel_keys=parallel_keys,
        cap_keys=cap_keys,
    )

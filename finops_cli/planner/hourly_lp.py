"""The LP tier of the certification (see :mod:`.certify`): broken hours re-planned as hourly LPs on one warm
``Highs`` instance, over a working set of columns priced out with the row duals."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pandas as pd

from finops_cli.planner.frame import PlanFrame
from finops_cli.planner.highs import column_slices, new_highs, pass_matrix
from finops_cli.planner.matrix import PlanMatrix

#: feasibility tolerance): the working-set optimum is then the optimum over every column.
_PRICING_TOL = 1e-7


def replan_hours(
    frame: PlanFrame,
    mx: PlanMatrix,
    t: PlanMatrix,
    values: np.ndarray,
    hours: np.ndarray,
    x: np.ndarray,
    base: np.ndarray,
    gpos: dict[str, int],
    d_gh: np.ndarray,
    *,
    working_set: bool = True,
) -> Iterator[tuple[int, float, tuple[np.ndarray, np.ndarray]]]:
    """Hourly LP of each of ``hours``, in that order: (hour, its cost, (base rows with work, their GPUs)).

    One warm ``Highs`` instance (only bounds change between hours) over a working set of columns, the others
    priced out with the row duals after each solve, so each hour's optimum is the LP's over every column
    (docs/planner.md, "Certified accuracy"). ``working_set=False`` holds every column (the tests' reference).
    """
    import highspy

    t = replace(t, cost=t.cost.copy(), col_lower=t.col_lower.copy(), col_upper=t.col_upper.copy())
    t.cost[t.commit_col0 : t.node_col0] = 0.0  # bought for the horizon: in the block objective already
    n = frame.blocks.n
    rows = frame.rows
    hb = frame.blocks.hour_block
    # commitments: fixed at the blocks bought
    bought = np.round(values[mx.commit_col0 : mx.node_col0])
    t.col_lower[t.commit_col0 : t.node_col0] = bought
    t.col_upper[t.commit_col0 : t.node_col0] = bought
    # demand rows' lower bound in every hour: hourly demand, or the block plan's rate for deferrable groups
    thr = rows["units_per_gpu_hour"].to_numpy(dtype=float)
    keys = [g for g, _b in t.demand_keys]
    rate = np.zeros((len(keys), n))
    kpos = {g: i for i, g in enumerate(keys)}
    deferrable = np.array([g not in gpos for g in keys], dtype=bool)
    group = rows["group"].to_numpy()
    sel = (x > 0) & ~rows["group"].isin(list(gpos)).to_numpy()
    np.add.at(rate, ([kpos[g] for g in group[sel]], rows["block"].to_numpy()[sel]), (thr * x)[sel])
    hourly_rows = np.array([gpos.get(g, 0) for g in keys], dtype=int)
    # node columns: fixed at the block's count in each hour
    node_cols = t.node_col0 + np.arange(len(t.node_keys))
    node_value = np.zeros((len(t.node_keys), n))
    t_node = {s: j for j, (s, _b) in enumerate(t.node_keys)}
    for (s, b), v in zip(mx.node_keys, values[mx.node_col0 : mx.unserved_col0], strict=True):
        node_value[t_node[s], b] = round(float(v))
    # the working set: base rows with work in some block, then every non-x column
    n_base = t.n_x
    in_set = np.zeros(n_base, dtype=bool)
    in_set[base[x > 0] if working_set else slice(None)] = True
    active = np.concatenate([np.flatnonzero(in_set), np.arange(n_base, t.n_cols)])
    pos_of = np.full(t.n_cols, -1, dtype=np.int64)
    pos_of[active] = np.arange(len(active))
    nnz_x = int(t.start[n_base])
    x_col = np.repeat(np.arange(n_base), np.diff(t.start[: n_base + 1]))
    x_row, x_val, x_cost = t.index[:nnz_x], t.value[:nnz_x], t.cost[:n_base]
    t_group = pd.factorize(t.frame.rows["group"])[0]
    h_lp = new_highs(None, None)
    pass_matrix(h_lp, t, integers=False, columns=active)
    dem_rows = np.arange(len(keys), dtype=np.int32)
    inf = np.full(len(dem_rows), np.inf)
    for h in hours:
        b = int(hb[h])
        lower = np.where(deferrable, rate[:, b], d_gh[hourly_rows, h] if len(d_gh) else 0.0)
        h_lp.changeRowsBounds(len(dem_rows), dem_rows, lower, inf)  # type: ignore[attr-defined]  # not in the stub
        if len(node_cols):
            h_lp.changeColsBounds(
                len(node_cols), pos_of[node_cols].astype(np.int32), node_value[:, b], node_value[:, b]
            )
        while True:
            h_lp.run()
            sol = h_lp.getSolution()
            y = np.asarray(sol.row_dual, dtype=float)
            reduced = x_cost - np.bincount(x_col, weights=x_val * y[x_row], minlength=n_base)
            new = np.flatnonzero((reduced < -_PRICING_TOL) & ~in_set)
            if not len(new) or h_lp.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                break
            # the most negative column of each group only: the first hours' duals price out thousands
            new = new[np.argsort(reduced[new], kind="stable")]
            new = np.sort(new[np.unique(t_group[new], return_index=True)[1]])
            starts, index, value = column_slices(t, new)
            h_lp.addCols(
                len(new),
                t.cost[new],
                t.col_lower[new],
                t.col_upper[new],
                len(index),
                starts[:-1].astype(np.int32),
                index.astype(np.int32),
                value,
            )
            in_set[new] = True
            pos_of[new] = np.arange(len(active), len(active) + len(new))
            active = np.concatenate([active, new])
        col = np.asarray(sol.col_value, dtype=float)
        act_x = active[active < n_base]
        v = col[pos_of[act_x]]
        keep = v > 1e-9
        yield int(h), float(h_lp.getInfo().objective_function_value), (act_x[keep], v[keep])

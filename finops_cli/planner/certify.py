"""Self-certified accuracy: every plan brackets the hourly optimum between its block bound (LB) and the cost of an
hourly schedule that is feasible in every hour (UB), and refines its blocks until ``(UB − LB)/UB`` is within the
tolerance (docs/planner.md, "Certified accuracy"). The cheap repair of broken hours is in :mod:`.repair`, the
hourly LPs in :mod:`.hourly_lp`, the schedule in :mod:`.schedule`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from finops_cli.planner.blocks import Blocks
from finops_cli.planner.frame import PlanFrame
from finops_cli.planner.hourly_lp import replan_hours
from finops_cli.planner.matrix import PlanMatrix, build_matrix
from finops_cli.planner.repair import Refill, at_rows, fallback_rows
from finops_cli.planner.schedule import build_schedule, unserved_units

#: Default tolerance of the certified gap (0.1 %), ``--tolerance``.
DEFAULT_TOLERANCE = 1e-3

#: Refinement rounds at most when no time limit is given.
MAX_ROUNDS = 8

#: Rows of the spread plan above their bound by more than this (relative, and absolute GPUs) break the hour.
FEASIBILITY_TOL = 1e-6

#: Hours of a block the cheap repair handles at once (its plan is dense: base rows × hours).
_REPAIR_CHUNK = 64

#: Hours the LP tier re-plans between two checks of the gap (solved in block order, to start warm).
_LP_BATCH = 128


@dataclass
class Certificate:
    """The plan's own error bound and the hourly schedule that attains the upper bound. The bounds are objective
    terms (sunk cost excluded: the stricter gap); ``excess`` is, per block, what repairing its broken hours
    (``repaired_hours``) added over the spread plan."""

    lower_bound: float
    upper_bound: float
    tolerance: float
    schedule: pd.DataFrame
    repaired_hours: np.ndarray
    excess: np.ndarray
    unserved_units: float = 0.0
    rounds: int = 0
    seconds: float = 0.0
    lp_hours: int = 0  # broken hours re-planned by the hourly LP (the rest by the cheap repair)

    @property
    def gap(self) -> float:
        if self.upper_bound <= 0:
            return 0.0 if self.upper_bound - self.lower_bound <= 1e-9 else float("inf")
        return max(0.0, (self.upper_bound - self.lower_bound) / self.upper_bound)

    @property
    def certified(self) -> bool:
        return self.gap <= self.tolerance


def _group_hourly(frame: PlanFrame, demand: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """Non-deferrable groups and their hourly demand (units/hour), shape (groups, hours)."""
    groups = list(dict.fromkeys(g for g, _b in frame.demand.index))
    pos = {g: i for i, g in enumerate(groups)}
    out = np.zeros((len(groups), frame.horizon_hours))
    for w, (g, _share) in frame.members.items():
        if g in pos:
            out[pos[g]] += demand[w].to_numpy(dtype=float)
    return groups, out


def _template(frame: PlanFrame) -> tuple[PlanFrame, np.ndarray]:
    """A one-hour frame with every group as a demand row, and the base row of every frame row."""
    rows = frame.rows
    n = frame.blocks.n
    base = np.arange(len(rows)) // n
    if not (rows["block"].to_numpy() == np.arange(len(rows)) % n).all():  # pragma: no cover - frame layout
        raise AssertionError("plan frame rows are not laid out base-major")
    rows0 = rows[rows["block"] == 0].reset_index(drop=True).assign(hours=1.0)
    groups = rows0["group"].unique().tolist()
    demand = pd.Series(0.0, index=pd.MultiIndex.from_tuples([(g, 0) for g in groups], names=["group", "block"]))
    one = Blocks(np.ones(1), np.zeros(1, dtype=int), pd.DataFrame(index=pd.RangeIndex(1, name="block")))
    return replace(frame, rows=rows0, demand=demand, deferrable_units={}, blocks=one, horizon_hours=1), base


def certify(
    frame: PlanFrame,
    mx: PlanMatrix,
    values: np.ndarray,
    lower_bound: float,
    demand: pd.DataFrame,
    tolerance: float = DEFAULT_TOLERANCE,
) -> Certificate:
    """The hourly schedule of a solved block plan, its objective (UB) and the excess per block.

    A broken hour is repaired cheaply first (over-full columns scaled down, the dropped work refilled or sent to
    the group's uncapped fallback); while the gap is above ``tolerance`` the hours whose repair cost most are
    re-planned by the hourly LP (optimal for the hour, so never dearer than the cheap repair).
    """
    started = time.perf_counter()
    rows = frame.rows
    n_x = mx.n_x
    hb = frame.blocks.hour_block
    n_blocks, hours_total = frame.blocks.n, frame.horizon_hours
    block_hours = frame.blocks.hours
    x = np.where(values[:n_x] > 1e-9, values[:n_x], 0.0)

    # R[g, h]: hourly demand over block-mean demand per non-deferrable group; the last row (deferrable) is 1
    groups, d_gh = _group_hourly(frame, demand)
    d_gb = np.zeros((len(groups), n_blocks))
    gpos = {g: i for i, g in enumerate(groups)}
    for (g, b), d in frame.demand.items():
        d_gb[gpos[g], b] = d
    mean = d_gb[:, hb]
    ratio = np.divide(d_gh, mean, out=np.zeros_like(d_gh), where=mean > 0)
    ratio = np.vstack([ratio, np.ones((1, hours_total))])
    defer_row = len(groups)
    g_of_x = rows["group"].map(gpos).fillna(defer_row).to_numpy(dtype=int)
    b_of_x = rows["block"].to_numpy()
    template, base = _template(frame)
    n_base = len(template.rows)
    per_hour_cost = mx.cost[:n_x] / block_hours[b_of_x]
    thr = rows["units_per_gpu_hour"].to_numpy(dtype=float)
    fallback, fallback_price = fallback_rows(frame, template, mx, base, per_hour_cost)
    t_mx = build_matrix(template)
    refill = Refill(frame, mx, t_mx, values, base, per_hour_cost, fallback_price)
    group_index = {g: i for i, g in enumerate(template.rows["group"].unique().tolist())}
    g_all = rows["group"].map(group_index).to_numpy(dtype=int)
    t_thr = template.rows["units_per_gpu_hour"].to_numpy(dtype=float)

    # constant part of each row from the integer columns (commitments bought, nodes provisioned)
    col_of = np.repeat(np.arange(mx.n_cols), np.diff(mx.start))
    const = np.zeros(mx.n_rows)
    ints = (col_of >= n_x) & (col_of < mx.unserved_col0)
    np.add.at(const, mx.index[ints], mx.value[ints] * np.round(values[col_of[ints]]))
    # ≤ rows (parallel, cap, nodes) touched by x with work
    upper = mx.row_upper
    le = (mx.index >= mx.parallel_row0) & (col_of < n_x)
    le &= x[np.minimum(col_of, max(n_x - 1, 0))] > 0
    e_row, e_col, e_val = mx.index[le], col_of[le], mx.value[le] * x[col_of[le]]
    order = np.argsort(b_of_x[e_col], kind="stable")
    e_row, e_col, e_val = e_row[order], e_col[order], e_val[order]
    cuts = np.searchsorted(b_of_x[e_col], np.arange(n_blocks + 1))
    nz = np.flatnonzero(x)
    nz = nz[np.argsort(b_of_x[nz], kind="stable")]
    nz_cuts = np.searchsorted(b_of_x[nz], np.arange(n_blocks + 1))
    repaired_x: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # hour → (base rows, GPUs), sparse
    must_replan: list[int] = []
    delta = np.zeros(hours_total)
    for b in range(n_blocks):
        lo, hi = cuts[b], cuts[b + 1]
        if lo == hi or block_hours[b] <= 1:
            continue
        all_hours = np.flatnonzero(hb == b)
        rows_b, local = np.unique(e_row[lo:hi], return_inverse=True)
        limit = (upper[rows_b] - const[rows_b])[:, None]
        tol = FEASIBILITY_TOL * np.maximum(1.0, np.abs(upper[rows_b]))[:, None]
        cols_b, inv = np.unique(e_col[lo:hi], return_inverse=True)
        js = nz[nz_cuts[b] : nz_cuts[b + 1]]  # ascending, as cols_b
        # hours in chunks: the repaired plan is dense over the base rows (GPUs per base row × hour)
        for hours in np.array_split(all_hours, -(-len(all_hours) // _REPAIR_CHUNK)):
            act = np.zeros((len(rows_b), len(hours)))
            at_rows(np.add, act, local, e_val[lo:hi, None] * ratio[g_of_x[e_col[lo:hi]]][:, hours])
            over = act > limit + tol
            bad = over.any(axis=0)
            if not bad.any():
                continue
            # an over-full row keeps limit/act of its work: divided only where 0 < limit < act (the ratio is in
            # (0, 1), no overflow); a row with no room (limit ≤ 0) keeps nothing
            factor = np.where(over, 0.0, 1.0)
            np.divide(limit, act, out=factor, where=over & (limit > 0) & (act > 0))
            factor = np.clip(factor, 0.0, 1.0)[:, bad]
            col_factor = np.ones((len(cols_b), int(bad.sum())))
            at_rows(np.minimum, col_factor, inv, factor[local])
            hours_bad = hours[bad]
            spread = x[js, None] * ratio[g_of_x[js]][:, hours_bad]
            f = np.ones_like(spread)
            f[np.searchsorted(js, cols_b)] = col_factor
            kept = spread * f
            lost_g = np.zeros((len(group_index), len(hours_bad)))
            at_rows(np.add, lost_g, g_all[js], (spread - kept) * thr[js, None])  # units per hour dropped, per group
            vec = np.zeros((n_base, len(hours_bad)))
            vec[base[js]] = kept
            refill_cost = refill.fill(b, vec, lost_g)  # spare capacity of the hour first, cheapest first
            has = fallback >= 0
            vec[fallback[has]] += lost_g[has] / t_thr[fallback[has], None]
            delta[hours_bad] = per_hour_cost[js] @ (kept - spread) + refill_cost + fallback_price @ lost_g
            for t, h in enumerate(hours_bad):
                k = np.flatnonzero(vec[:, t])
                repaired_x[int(h)] = (k, vec[k, t])
            must_replan += [int(h) for h in hours_bad[lost_g[~has].sum(axis=0) > 1e-9]]  # nowhere uncapped to go
    broken = np.zeros(hours_total, dtype=bool)
    broken[list(repaired_x)] = True
    repaired = np.flatnonzero(broken)

    # the spread plan's cost per hour (x, unserved, node columns), to swap out hours the LP re-plans
    u_vals = values[mx.unserved_col0 : mx.defer_unserved_col0]
    u_price = mx.cost[mx.unserved_col0 : mx.defer_unserved_col0]
    u_block = np.array([b for _g, b in mx.demand_keys], dtype=int)
    u_group = np.array([gpos[g] for g, _b in mx.demand_keys], dtype=int)
    node_vals = values[mx.node_col0 : mx.unserved_col0]
    node_block = np.array([b for _s, b in mx.node_keys], dtype=int)
    node_cost_block = np.zeros(n_blocks)
    np.add.at(node_cost_block, node_block, mx.cost[mx.node_col0 : mx.unserved_col0] * np.round(node_vals))

    def spread_cost(h: int) -> float:
        b = hb[h]
        js = nz[nz_cuts[b] : nz_cuts[b + 1]]
        cost = float((per_hour_cost[js] * x[js] * ratio[g_of_x[js], h]).sum())
        sel = u_block == b
        cost += float((u_price[sel] / block_hours[b] * u_vals[sel] * ratio[u_group[sel], h]).sum())
        return cost + float(node_cost_block[b] / block_hours[b])

    block_objective = float(mx.cost @ np.where(mx.integer, np.round(values), values))
    lower = min(lower_bound, block_objective)
    upper_bound = block_objective + float(delta.sum())
    lp_hours: list[int] = []
    must = set(must_replan)
    if len(repaired) and (must or (upper_bound > 0 and (upper_bound - lower) / upper_bound > tolerance)):
        worst = repaired[np.lexsort((-delta[repaired], np.array([h not in must for h in repaired], dtype=bool)))]
        # batches of the worst hours, each solved in block order (neighbouring hours warm-start each other)
        batches = [worst[i : i + _LP_BATCH] for i in range(0, len(worst), _LP_BATCH)]
        # within a batch: by block, then by load, so that each hour starts from a neighbour's basis
        load = d_gh.sum(axis=0) if len(d_gh) else np.zeros(hours_total)
        worst = np.concatenate([batch[np.lexsort((load[batch], hb[batch]))] for batch in batches])
        for h, cost_h, x_h in replan_hours(frame, mx, t_mx, values, worst, x, base, gpos, d_gh):
            upper_bound += cost_h - spread_cost(h) - delta[h]
            delta[h] = cost_h - spread_cost(h)
            repaired_x[h] = x_h
            lp_hours.append(h)
            must.discard(h)
            done = len(lp_hours) % _LP_BATCH == 0 or len(lp_hours) == len(worst)
            if done and not must and (upper_bound - lower) / upper_bound <= tolerance:
                break
    excess = np.zeros(n_blocks)
    np.add.at(excess, hb[repaired], delta[repaired])
    schedule = build_schedule(frame, template, demand, x, base, n_base, ratio, g_of_x, broken, repaired_x)
    return Certificate(
        lower_bound=lower,
        upper_bound=upper_bound,
        tolerance=tolerance,
        schedule=schedule,
        repaired_hours=repaired,
        excess=excess,
        unserved_units=unserved_units(frame, demand, schedule),
        seconds=time.perf_counter() - started,
        lp_hours=len(lp_hours),
    )


def refine_partition(frame: PlanFrame, cert: Certificate, demand: pd.DataFrame) -> np.ndarray | None:
    """A finer partition of the hours: each block's re-planned hours get a block of their own (a block whose every
    hour broke is cut at its median load); None when no block can be split."""
    hb = frame.blocks.hour_block.copy()
    broken = np.zeros(len(hb), dtype=bool)
    broken[cert.repaired_hours] = True
    load = demand.to_numpy(dtype=float).sum(axis=1)
    next_block = int(hb.max()) + 1
    changed = False
    for b in np.argsort(-cert.excess):
        if cert.excess[b] <= 0 and not broken[hb == b].any():
            continue
        hours = np.flatnonzero(hb == b)
        if len(hours) <= 1:
            continue
        bad = hours[broken[hours]]
        if len(bad) == 0:
            continue
        if len(bad) == len(hours):
            bad = hours[load[hours] >= np.median(load[hours])]
            if len(bad) == len(hours):
                bad = hours[: len(hours) // 2]
        hb[bad] = next_block
        next_block += 1
        changed = True
    return hb if changed else None

"""Self-certified accuracy: every plan brackets the hourly optimum between two numbers it computes itself.

- **Lower bound** (LB): the block model relaxes the hourly one (any hourly plan averaged over a block is
  feasible for the block model at the same cost), so its MILP best bound is ≤ the hourly optimum.
- **Upper bound** (UB): the objective of a plan that is feasible in *every hour*, the hourly schedule. It is
  the block plan with the commitments (and node counts) it bought, spread over each block's hours in
  proportion to each group's hourly demand (deferrable work at the block's constant rate). Spreading keeps
  the block's cost exactly (the ratios sum to the block's hours), so a block whose spread plan fits every
  hour costs the same hour by hour. In an hour where the spread plan breaks a capacity, parallelism or node
  row (work averaged with a quieter hour), that hour is re-planned as an LP (the per-block hourly LP
  decomposition, integers fixed, deferrable rate kept): one ``Highs`` instance, only the row bounds change
  from hour to hour, so each solve starts warm from the previous hour's basis.

``gap = (UB − LB) / UB`` bounds how far the plan is from the hourly optimum. If it is above the tolerance,
the blocks whose hours needed re-planning are split (those hours become a block of their own) and the block
model is solved again (:func:`refine_partition`), until the gap is within tolerance or time runs out.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from finops_cli.planner.blocks import Blocks
from finops_cli.planner.frame import PlanFrame
from finops_cli.planner.matrix import PlanMatrix, build_matrix

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

#: Columns of the schedule (one row per hour, workload and substrate with work).
SCHEDULE_COLUMNS = ["hour", "workload", "substrate", "kind", "gpus", "wall_gpus", "units", "cost", "penalty"]


@dataclass
class Certificate:
    """The plan's own error bound and the hourly schedule that attains the upper bound.

    ``lower_bound``/``upper_bound`` are in objective terms (money that can still change plus reliability
    penalty; sunk cost excluded, so the relative gap is the stricter one). ``excess`` is, per block, what
    re-planning its broken hours added over the spread plan; ``repaired_hours`` lists those hours.
    """

    lower_bound: float
    upper_bound: float
    tolerance: float
    schedule: pd.DataFrame
    repaired_hours: np.ndarray
    excess: np.ndarray
    node_cost: float = 0.0
    unserved_units: float = 0.0
    rounds: int = 0
    seconds: float = 0.0
    lp_hours: int = 0  # broken hours re-planned by the hourly LP (the rest by the cheap repair)
    history: list[tuple[int, float, float]] = field(default_factory=list)  # (blocks, LB, UB) per round

    @property
    def gap(self) -> float:
        if self.upper_bound <= 0:
            return 0.0 if self.upper_bound - self.lower_bound <= 1e-9 else float("inf")
        return max(0.0, (self.upper_bound - self.lower_bound) / self.upper_bound)

    @property
    def certified(self) -> bool:
        return self.gap <= self.tolerance


def _at_rows(op: np.ufunc, out: np.ndarray, idx: np.ndarray, vals: np.ndarray) -> None:
    """``op.at(out, idx, vals)`` for 2-D ``vals`` (whole rows of ``out``): sorted once, then ``op.reduceat``.

    The unbuffered ``ufunc.at`` was a third of the certification's time on (rows × hours) blocks."""
    if len(idx) == 0:
        return
    order = np.argsort(idx, kind="stable")
    ordered = idx[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    rows = ordered[starts]
    out[rows] = op(out[rows], op.reduceat(vals[order], starts, axis=0))


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

    A broken hour is repaired in two tiers. First, cheaply: every column on an over-full row is scaled down to
    fit (all coefficients are positive, so no other row gets fuller) and the work it drops goes to its
    group's cheapest uncapped destination (an API or uncapped on-demand; none: unserved, at the penalty).
    Then, while the gap is above ``tolerance``, the hours whose cheap repair cost most are re-planned by the
    hourly LP (optimal for the hour, so never dearer than the cheap repair).
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
    fallback, fallback_price = _fallback(frame, template, mx, base, per_hour_cost)
    t_mx = build_matrix(template)
    refill = _Refill(frame, mx, t_mx, values, base, per_hour_cost, fallback_price)
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
            _at_rows(np.add, act, local, e_val[lo:hi, None] * ratio[g_of_x[e_col[lo:hi]]][:, hours])
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
            _at_rows(np.minimum, col_factor, inv, factor[local])
            hours_bad = hours[bad]
            spread = x[js, None] * ratio[g_of_x[js]][:, hours_bad]
            f = np.ones_like(spread)
            f[np.searchsorted(js, cols_b)] = col_factor
            kept = spread * f
            lost_g = np.zeros((len(group_index), len(hours_bad)))
            _at_rows(np.add, lost_g, g_all[js], (spread - kept) * thr[js, None])  # units per hour dropped, per group
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
        return cost + node_cost_block[b] / block_hours[b]

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
        for h, cost_h, x_h in _replan_hours(frame, mx, t_mx, values, worst, x, base, gpos, d_gh):
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
    schedule = _schedule(frame, template, demand, x, base, n_base, ratio, g_of_x, broken, repaired_x)
    return Certificate(
        lower_bound=lower,
        upper_bound=upper_bound,
        tolerance=tolerance,
        schedule=schedule,
        repaired_hours=repaired,
        excess=excess,
        node_cost=float(node_cost_block.sum()),
        unserved_units=_unserved_units(frame, demand, schedule),
        seconds=time.perf_counter() - started,
        lp_hours=len(lp_hours),
    )


class _Refill:
    """Second tier of the cheap repair: work a broken hour dropped goes to spare capacity of that hour.

    Scaling over-full columns down leaves other rows of the hour with room (a quieter workload's pool). Each
    group's dropped units are offered to its capped columns cheaper than its uncapped fallback, cheapest first;
    at each rank every group asks at once and a row asked for more than its spare shares it pro rata, so every
    ≤ row (capacity, parallelism, nodes) stays within its bound. What is still dropped goes to the fallback.
    """

    def __init__(
        self,
        frame: PlanFrame,
        mx: PlanMatrix,
        t: PlanMatrix,
        values: np.ndarray,
        base: np.ndarray,
        per_hour_cost: np.ndarray,
        fallback_price: np.ndarray,
    ) -> None:
        rows = t.frame.rows
        n_base = t.n_x
        self.n_le0 = t.parallel_row0
        self.n_le = t.n_rows - t.parallel_row0
        col_of = np.repeat(np.arange(t.n_cols), np.diff(t.start))
        le = (t.index >= t.parallel_row0) & (col_of < n_base)
        # ≤ rows of each base column, padded: (n_base, slots); row −1 = none
        cols, r, v = col_of[le], t.index[le] - t.parallel_row0, t.value[le]
        counts = np.bincount(cols, minlength=n_base)
        slots = int(counts.max()) if len(counts) and counts.max() > 0 else 0
        self.le_row = np.full((n_base, max(slots, 1)), -1, dtype=np.int64)
        self.le_val = np.zeros((n_base, max(slots, 1)))
        order = np.argsort(cols, kind="stable")
        cols, r, v = cols[order], r[order], v[order]
        k = np.arange(len(cols)) - np.repeat(np.cumsum(counts) - counts, counts)
        self.le_row[cols, k] = r
        self.le_val[cols, k] = v
        # per block: the bound of every template ≤ row, integers (commitments, nodes) at their values
        ints = (col_of >= t.commit_col0) & (col_of < t.unserved_col0) & (t.index >= t.parallel_row0)
        commits = np.round(values[mx.commit_col0 : mx.node_col0])
        node_value = dict(zip(mx.node_keys, np.round(values[mx.node_col0 : mx.unserved_col0]), strict=True))
        self.limits = np.zeros((frame.blocks.n, self.n_le))
        for b in range(frame.blocks.n):
            v_int = np.zeros(t.n_cols)
            v_int[t.commit_col0 : t.node_col0] = commits
            v_int[t.node_col0 : t.unserved_col0] = [node_value.get((s, b), 0.0) for s, _b in t.node_keys]
            lim = t.row_upper[t.parallel_row0 :].copy()
            np.add.at(lim, t.index[ints] - t.parallel_row0, -t.value[ints] * v_int[col_of[ints]])
            self.limits[b] = lim
        # candidates: per group, capped base columns cheaper per unit than its fallback, cheapest first
        cost0 = np.zeros(n_base)
        cost0[base] = per_hour_cost
        self.cost0 = cost0
        self.thr = rows["units_per_gpu_hour"].to_numpy(dtype=float)
        groups = rows["group"].unique().tolist()
        gi = rows["group"].map({g: i for i, g in enumerate(groups)}).to_numpy()
        per_unit = cost0 / self.thr
        capped = counts > 0
        ok = capped & (per_unit < fallback_price[gi])
        cand = np.flatnonzero(ok)
        cand = cand[np.lexsort((per_unit[cand], gi[cand]))]
        n_per = np.bincount(gi[cand], minlength=len(groups))
        ranks = int(n_per.max()) if len(n_per) and n_per.max() > 0 else 0
        self.cand = np.full((len(groups), ranks), -1, dtype=np.int64)
        rank = np.arange(len(cand)) - np.repeat(np.cumsum(n_per) - n_per, n_per)
        self.cand[gi[cand], rank] = cand

    def fill(self, b: int, vec: np.ndarray, lost: np.ndarray) -> np.ndarray:
        """Place ``lost`` (units/hour per group × hour) on spare capacity of block ``b``'s hours, in place.

        ``vec`` (GPUs per base column × hour) gets the work; returns the cost added per hour."""
        n_hours = vec.shape[1]
        added = np.zeros(n_hours)
        if self.cand.shape[1] == 0 or not (lost > 1e-12).any():
            return added
        used = np.zeros((self.n_le, n_hours))
        nz = np.flatnonzero(vec.any(axis=1))
        sl = self.le_row[nz]
        for m in range(sl.shape[1]):
            has = sl[:, m] >= 0
            _at_rows(np.add, used, sl[has, m], self.le_val[nz[has], m, None] * vec[nz[has]])
        spare = np.maximum(self.limits[b][:, None] - used, 0.0)
        for k in range(self.cand.shape[1]):
            g = np.flatnonzero((self.cand[:, k] >= 0) & (lost.max(axis=1) > 1e-12))
            if len(g) == 0:
                continue
            j = self.cand[g, k]
            want = lost[g] / self.thr[j, None]  # GPUs per group × hour
            rows_j, vals_j = self.le_row[j], self.le_val[j]
            asked = np.zeros_like(spare)
            for m in range(rows_j.shape[1]):
                has = rows_j[:, m] >= 0
                _at_rows(np.add, asked, rows_j[has, m], vals_j[has, m, None] * want[has])
            # divided only where a row is over-asked (0 ≤ spare < asked): the share is in [0, 1). Dividing
            # everywhere overflowed where a residue of ``lost`` (a denormal) met a large spare.
            share = np.divide(spare, asked, out=np.ones_like(spare), where=asked > spare)
            factor = np.ones_like(want)
            for m in range(rows_j.shape[1]):
                has = rows_j[:, m] >= 0
                factor[has] = np.minimum(factor[has], share[rows_j[has, m]])
            take = want * np.clip(factor, 0.0, 1.0)
            for m in range(rows_j.shape[1]):
                has = rows_j[:, m] >= 0
                _at_rows(np.add, spare, rows_j[has, m], -vals_j[has, m, None] * take[has])
            np.maximum(spare, 0.0, out=spare)
            vec[j] += take
            lost[g] = np.maximum(lost[g] - take * self.thr[j, None], 0.0)
            added += self.cost0[j] @ take
        return added


def _fallback(
    frame: PlanFrame, template: PlanFrame, mx: PlanMatrix, base: np.ndarray, per_hour_cost: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per group (template order): its cheapest base row on no capacity, node or parallel row (an API, or an
    uncapped on-demand substrate when the group has no parallel cap), and that row's price per unit; groups
    without one get −1 and the unserved price."""
    t = template.rows
    cap = frame.capacity["fixed_gpus"]
    uncapped = set(cap[cap.isna()].index)
    free = np.fromiter(((s, k) in uncapped for s, k in zip(t["substrate"], t["segment"], strict=True)), bool, len(t))
    free &= ~t["substrate"].isin(list(frame.nodes.index)).to_numpy()
    free &= t["is_api"].to_numpy() | ~t["group"].isin(list(frame.max_parallel_gpus)).to_numpy()
    cost0 = np.zeros(len(t))
    cost0[base[: len(base)]] = per_hour_cost  # same per base row in every block
    per_unit = cost0 / t["units_per_gpu_hour"].to_numpy(dtype=float)
    groups = t["group"].unique().tolist()
    pick = np.full(len(groups), -1, dtype=int)
    price = np.full(len(groups), mx.unserved_usd_per_unit)
    gi = t["group"].map({g: i for i, g in enumerate(groups)}).to_numpy()
    for j in np.flatnonzero(free)[np.argsort(-per_unit[free], kind="stable")]:  # cheapest written last
        pick[gi[j]] = j
        price[gi[j]] = per_unit[j]
    return pick, price


#: A column whose reduced cost in an hourly LP is below −this joins the working set (HiGHS's own dual
#: feasibility tolerance): the working-set optimum is then the optimum over every column.
_PRICING_TOL = 1e-7


def _replan_hours(
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

    One ``Highs`` instance for all hours: only the demand rows' bounds (and node columns' bounds) change
    from hour to hour, so each solve starts from the previous hour's basis. It holds a **working set** of
    columns — every base row with work in the block plan, the integers and the slacks — and after each
    solve every other column is priced out with the row duals (``c − Aᵀy``, one sparse product in numpy);
    columns with a negative reduced cost join the set and the hour is solved again. So each hour's optimum
    is the LP's over all columns (LP optimality), while HiGHS iterates over the few thousand columns that
    matter instead of every compliant pair (13 k per hour at 200 distinct workloads). Only the most negative
    column of each group joins per round: with all of them the first hours' duals pulled in most columns.
    ``working_set=False`` holds every column (the reference the tests compare with).
    """
    import highspy

    from finops_cli.planner.highs import _new_highs, column_slices, pass_matrix

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
    h_lp = _new_highs(None, None)
    pass_matrix(h_lp, t, integers=False, columns=active)
    dem_rows = np.arange(len(keys), dtype=np.int32)
    inf = np.full(len(dem_rows), np.inf)
    for h in hours:
        b = int(hb[h])
        lower = np.where(deferrable, rate[:, b], d_gh[hourly_rows, h] if len(d_gh) else 0.0)
        h_lp.changeRowsBounds(len(dem_rows), dem_rows, lower, inf)
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


def _unserved_units(frame: PlanFrame, demand: pd.DataFrame, schedule: pd.DataFrame) -> float:
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


def _schedule(
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


def refine_partition(frame: PlanFrame, cert: Certificate, demand: pd.DataFrame) -> np.ndarray | None:
    """A finer partition of the hours: each block with re-planned hours gives them a block of their own.

    A block whose every hour was re-planned is cut in two at its median load instead. Returns None when no
    block can be split (every broken hour already alone).
    """
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

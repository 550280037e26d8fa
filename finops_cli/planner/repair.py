"""The cheap repair of an hour the spread plan breaks (see :mod:`.certify`): over-full columns scaled down,
the work they drop refilled into the hour's spare capacity, the rest sent to each group's uncapped fallback."""

from __future__ import annotations

import numpy as np

from finops_cli.planner.frame import PlanFrame
from finops_cli.planner.matrix import PlanMatrix


def at_rows(op: np.ufunc, out: np.ndarray, idx: np.ndarray, vals: np.ndarray) -> None:
    """``op.at(out, idx, vals)`` for 2-D ``vals`` (whole rows of ``out``): sorted once, then ``op.reduceat``.

    The unbuffered ``ufunc.at`` was a third of the certification's time on (rows × hours) blocks."""
    if len(idx) == 0:
        return
    order = np.argsort(idx, kind="stable")
    ordered = idx[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    rows = ordered[starts]
    out[rows] = op(out[rows], op.reduceat(vals[order], starts, axis=0))


class Refill:
    """Second tier of the cheap repair: the work a broken hour dropped, offered to each group's capped columns
    cheaper than its fallback, cheapest first, all groups at once; a row asked for more than its spare shares it
    pro rata, so every ≤ row stays within its bound. What is still dropped goes to the fallback."""

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
            at_rows(np.add, used, sl[has, m], self.le_val[nz[has], m, None] * vec[nz[has]])
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
                at_rows(np.add, asked, rows_j[has, m], vals_j[has, m, None] * want[has])
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
                at_rows(np.add, spare, rows_j[has, m], -vals_j[has, m, None] * take[has])
            np.maximum(spare, 0.0, out=spare)
            vec[j] += take
            lost[g] = np.maximum(lost[g] - take * self.thr[j, None], 0.0)
            added += self.cost0[j] @ take
        return added


def fallback_rows(
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

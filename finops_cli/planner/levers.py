"""Savings by lever: what earned the plan's saving, found by re-solving the plan with levers switched off.

docs/economics.md §6 defines each lever switched off, ``v(S)``, the Shapley values (or the ordered method above
:data:`SHAPLEY_MAX_COLUMNS`), the residual (price difference and placement) and the evidence. Pure: no I/O; the
caller passes the baseline's use of each substrate (:class:`BaselineUse`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from functools import cache
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd

from finops_cli.core.pricing import Mode, base_price_per_gpu_hour, spot_multiplier
from finops_cli.planner import PlannerOutput
from finops_cli.planner.frame import PlanFrame, build_frame
from finops_cli.planner.model import build_model
from finops_cli.planner.result import read_solution, unserved_frame
from finops_cli.planner.solve import DEFAULT_GAP, NODES_GAP, resolve_solver, solve_model
from finops_cli.schema.estate import Fleet, Substrate, Workload

Lever = Literal["right_sizing", "commitments", "spot", "api", "reliability"]
#: The order of the ordered (cumulative) method, and the order levers are listed in.
LEVER_ORDER: tuple[Lever, ...] = ("right_sizing", "commitments", "spot", "api", "reliability")
LEVER_LABELS: dict[str, str] = {
    "right_sizing": "right-sizing to the demand",
    "commitments": "commitment sizing",
    "spot": "moving work to spot",
    "api": "moving work to APIs",
    "reliability": "the cost of reliability (work kept off spot)",
}
#: What a lever's figure rests on: ``measured`` (idle from utilisation), ``inferred`` (idle from the demand),
#: ``modelled`` (a re-solve of the plan on fleet prices), ``not_measured`` (no data to say), ``not_applied``.
Evidence = Literal["measured", "inferred", "modelled", "not_measured", "not_applied"]

#: Shapley values up to this many plan variables (``2^n − 1`` re-solves, n ≤ 5 levers; 31 stay within ~15 s at
#: 20,000 variables); the ordered method (``n`` re-solves) above it.
SHAPLEY_MAX_COLUMNS = 20_000

#: Lowest busy share right-sizing assumes (a pool measured idle all month still carries 5 % of a GPU-hour's work
#: per paid GPU-hour when the lever is off, so the model never divides by zero).
MIN_UTILIZATION = 0.05


@dataclass(frozen=True)
class BaselineUse:
    """What the baseline paid for, per substrate: the inputs of the switched-off levers.

    ``gpu_hours``: GPU-hours paid (billing ``x_GpuHours``; the greedy's pool GPU-hours; API: units).
    ``utilization``: busy share ``u_s`` of those hours (absent: 1, nothing idle). ``measured``: substrates
    whose ``u_s`` comes from utilisation; the others' is inferred from the demand.
    """

    source: Literal["billing", "merit_order"]
    cost: dict[str, float]
    gpu_hours: dict[str, float]
    utilization: dict[str, float] = field(default_factory=dict)
    measured: frozenset[str] = frozenset()
    inferred_ratio: float | None = None  # demand GPU-hours / billed GPU-hours (estate-wide), when inferred
    idle: dict[str, float] = field(default_factory=dict)  # paid idle GPU-hours per substrate (right-sizing off)
    idle_scale: float = 1.0  # measured idle × this = idle the demand leaves (< 1: the demand needs more than busy)

    def work(self, sid: str) -> float:
        """GPU-hours of work the baseline ran on ``sid``: paid minus idle."""
        return max(self.gpu_hours.get(sid, 0.0) - self.idle.get(sid, 0.0), 0.0)


@dataclass
class LeverTerm:
    lever: Lever
    saving: float  # currency; negative = the lever costs money (reliability)
    evidence: Evidence
    basis: str  # one sentence: what the figure rests on
    applied: bool  # the plan uses the lever (else its saving is exactly 0)
    measured_share: float | None = None  # right-sizing: share of the paid GPU-hours whose idle was measured

    @property
    def label(self) -> str:
        return LEVER_LABELS[self.lever]


@dataclass
class LeverAttribution:
    """``baseline_cost = residual + Σ terms.saving + planned_cost`` (to floating point)."""

    method: Literal["shapley", "ordered"]
    terms: list[LeverTerm]
    baseline_cost: float
    model_baseline_cost: float  # v(∅): the cheapest plan with every lever off
    planned_cost: float  # v(all): the plan
    solves: int
    seconds: float
    order: tuple[Lever, ...] = ()
    notes: list[str] = field(default_factory=list)
    values: dict[frozenset[str], float] = field(default_factory=dict)  # v(S) per coalition solved
    price_difference: float = 0.0  # the bill's rates vs the fleet's prices: baseline − the bill at fleet prices

    @property
    def residual(self) -> float:
        return self.baseline_cost - self.model_baseline_cost

    @property
    def placement(self) -> float:
        """The residual less the price difference: the bill's work re-placed on its own pools (at fleet prices)."""
        return self.residual - self.price_difference

    @property
    def savings(self) -> float:
        return self.baseline_cost - self.planned_cost


# --- the baseline's use of each substrate ---------------------------------------------------------


def billing_use(
    cost: pd.Series,
    gpu_hours: pd.Series | None,
    fleet: Fleet,
    plan_gpu_hours: float,
    measured_utilization: dict[str, float] | None = None,
) -> BaselineUse:
    """The bill's use: GPU-hours per substrate (``x_GpuHours``, else cost ÷ the fleet's price) and busy shares.

    ``measured_utilization``: busy ÷ device-hours per substrate from the horizon's utilisation. Substrates
    without it get the demand's inferred share ``plan_gpu_hours / Σ billed GPU-hours`` (non-API, ≤ 1).
    """
    kinds = {s.id: s for s in fleet.substrates}
    hours: dict[str, float] = {}
    for sid, c in cost.items():
        s = kinds.get(str(sid))
        if s is None:
            continue
        h = float(gpu_hours.get(sid, 0.0)) if gpu_hours is not None else 0.0
        if not h > 0 and s.kind != "api" and s.price_per_gpu_hour:
            h = float(c) / (s.price_per_gpu_hour * s.preference)
        hours[str(sid)] = h if s.kind == "api" else max(h, 0.0)
    gpu_ids = [sid for sid, h in hours.items() if kinds[sid].kind != "api" and h > 0]
    measured = {
        sid: min(1.0, max(MIN_UTILIZATION, u))
        for sid, u in (measured_utilization or {}).items()
        if sid in gpu_ids and u is not None and math.isfinite(u)
    }
    billed = sum(hours[sid] for sid in gpu_ids)
    ratio = None
    util = dict(measured)
    rest = [sid for sid in gpu_ids if sid not in measured]
    if rest and billed > 0 and plan_gpu_hours > 0:
        ratio = min(1.0, max(MIN_UTILIZATION, plan_gpu_hours / billed))
        util.update(dict.fromkeys(rest, ratio))
    idle = {sid: hours[sid] * (1.0 - util[sid]) for sid in gpu_ids if sid in util}
    # the idle right-sizing sheds is at most what the demand leaves of the paid hours: where utilisation measured
    # fewer busy hours than the demand needs, the measured idle is scaled down to it (its distribution kept)
    scale = 1.0
    total_idle = sum(idle.values())
    if total_idle > 0 and plan_gpu_hours > 0:
        scale = min(1.0, max(billed - plan_gpu_hours, 0.0) / total_idle)
        idle = {sid: h * scale for sid, h in idle.items()}
    paid = {str(k): float(v) for k, v in cost.items()}
    return BaselineUse("billing", paid, hours, util, frozenset(measured), ratio, idle, scale)


def dispatch_use(cost: pd.Series, gpu_hours: pd.Series) -> BaselineUse:
    """The greedy merit-order reference's use: it pays only for the GPU-hours the demand needs (u = 1)."""
    paid, hours = ({str(k): float(v) for k, v in series.items()} for series in (cost, gpu_hours))
    return BaselineUse("merit_order", paid, hours)


# --- switching levers off -------------------------------------------------------------------------


def pool_price(s: Substrate) -> float:
    """Money per pool GPU-hour of ``s`` at the fleet's price (its resolved price × preference; APIs: 0)."""
    return 0.0 if s.kind == "api" else base_price_per_gpu_hour(s) * s.preference


def paid_idle(frame: PlanFrame, use: BaselineUse) -> tuple[pd.DataFrame, float]:
    """Right-sizing off: the baseline's idle GPU-hours stay paid and stay occupied (docs/economics.md §6).

    Returns the capacity with each substrate's real segments reduced, from the top (congested) segment down, by
    its idle ``I_s / H`` GPUs, and the money of that idle at fleet prices (``Σ I_s × price × preference``)."""
    capacity = frame.capacity.copy()
    money = 0.0
    subs = set(capacity.index.get_level_values(0))
    for sid, idle in use.idle.items():
        s = frame.substrates.get(sid)
        if s is None or s.kind == "api" or idle <= 0:
            continue
        money += pool_price(s) * idle
        if sid not in subs:
            continue
        left = idle / frame.horizon_hours
        for seg in sorted((k for k in capacity.loc[sid].index if k < STEERED_SEGMENT), reverse=True):
            fixed = capacity.at[(sid, seg), "fixed_gpus"]
            if left <= 0 or pd.isna(fixed):
                continue
            take = min(left, float(fixed))
            capacity.at[(sid, seg), "fixed_gpus"] = float(fixed) - take
            left -= take
    return capacity, money


def price_difference(frame: PlanFrame, use: BaselineUse, baseline_cost: float) -> float:
    """The bill's rates against the fleet's prices: ``baseline − (prepaid + Σ billed GPU-hours × fleet price +
    API bills)`` (0 for the merit-order reference, which is priced at fleet prices)."""
    if use.source != "billing":
        return 0.0
    at_fleet = frame.sunk_cost
    for sid, cost in use.cost.items():
        s = frame.substrates.get(sid)
        if s is None:
            continue
        at_fleet += cost if s.kind == "api" else pool_price(s) * use.gpu_hours.get(sid, 0.0)
    return baseline_cost - at_fleet


def _spot_caps(frame: PlanFrame, use: BaselineUse) -> dict[str, float]:
    """Pool GPUs per hour each spot substrate may hold with the spot lever off (the baseline's work there)."""
    caps = {}
    present = set(frame.capacity.index.get_level_values(0))
    for sid, s in frame.substrates.items():
        if s.kind == "spot" and sid in present:
            caps[sid] = use.work(sid) / frame.horizon_hours
    return caps


def _droppable_api(frame: PlanFrame, use: BaselineUse) -> tuple[set[str], set[str]]:
    """(API substrates the baseline did not pay for, groups with another destination)."""
    rows = frame.rows
    apis = {sid for sid, s in frame.substrates.items() if s.kind == "api" and use.cost.get(sid, 0.0) <= 0.0}
    if not apis:
        return set(), set()
    other = set(rows.loc[~rows["is_api"], "group"])
    used = set(rows.loc[rows["substrate"].isin(apis) & rows["group"].isin(other), "group"])
    return apis, used


#: Segment numbers of the steered part of a spot pool above the baseline's use (real segments are 0, 1, 2 …).
STEERED_SEGMENT = 1000

#: A switched-off option still serves work nothing else can (a coalition never leaves work unserved for want of
#: an option the plan had), charged at this much above its group's dearest real price per unit.
STEER_MARGIN = 1e-3

#: Extra frame column: the steering charge per GPU-hour of a switched-off option (in the objective and in v(S)).
STEER = "steer_per_gpu_hour"


def _steer_rows(rows: pd.DataFrame, sel: pd.Series, dearest: pd.Series) -> pd.DataFrame:
    """Charge rows ``sel`` their group's dearest real price per unit (+ :data:`STEER_MARGIN`): a last resort."""
    rows = rows.copy()
    if STEER not in rows:
        rows[STEER] = 0.0
    target = (
        rows.loc[sel, "group"].map(dearest).astype(float) * (1 + STEER_MARGIN) * rows.loc[sel, "units_per_gpu_hour"]
    )
    charge = (target - rows.loc[sel, "usd_per_gpu_hour"]).clip(lower=0.0)
    rows.loc[sel, STEER] = charge
    rows.loc[sel, "penalty_per_gpu_hour"] = rows.loc[sel, "penalty_per_gpu_hour"] + charge
    return rows


def _steer(
    capacity: pd.DataFrame, rows: pd.DataFrame, factors: dict[str, float], offset: int, dearest: pd.Series
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Keep ``factors[s]`` of each substrate's real segments; the rest becomes steered segments (``+ offset``)
    whose rows cost their group's dearest price (:func:`_steer_rows`)."""
    if not factors:
        return capacity, rows
    sids, segs = capacity.index.get_level_values(0), capacity.index.get_level_values(1)
    keep = pd.Series(sids, index=capacity.index).map(factors)
    sel = (keep.notna() & (segs < STEERED_SEGMENT) & capacity["fixed_gpus"].notna()).to_numpy()
    if not sel.any():
        return capacity, rows
    part = capacity.loc[sel]
    share = keep[sel].astype(float)
    added = pd.DataFrame(
        {"fixed_gpus": part["fixed_gpus"] * (1 - share), "gpus_per_commit_block": 0.0},
        index=pd.MultiIndex.from_arrays(
            [part.index.get_level_values(0), part.index.get_level_values(1) + offset], names=capacity.index.names
        ),
    )
    capacity = capacity.copy()
    capacity.loc[sel, "fixed_gpus"] = part["fixed_gpus"] * share
    extra = rows[rows["substrate"].isin(list(factors)) & (rows["segment"] < STEERED_SEGMENT)].copy()
    extra["segment"] = extra["segment"] + offset
    extra = _steer_rows(extra, pd.Series(True, index=extra.index), dearest)
    rows = pd.concat([rows, extra], ignore_index=True)
    rows[STEER] = rows[STEER].fillna(0.0)
    return pd.concat([capacity, added]).sort_index(), rows


def restrict(frame: PlanFrame, off: set[str], use: BaselineUse) -> PlanFrame:
    """``frame`` with the levers in ``off`` switched off. What they would add (spot above the baseline's use, APIs
    it did not use) stays as a last resort at the work's dearest real price per unit (:func:`_steer_rows`)."""
    rows, capacity, commitments, sunk = frame.rows, frame.capacity, frame.commitments, frame.sunk_cost
    dearest = _dearest_per_group(rows)
    if "right_sizing" in off and use.idle:
        capacity, money = paid_idle(frame, use)
        sunk += money
    if "spot" in off:
        real = capacity[capacity.index.get_level_values(1) < STEERED_SEGMENT]
        fixed = real["fixed_gpus"].groupby(level=0).sum()
        factors = {
            sid: (cap / float(fixed[sid]) if float(fixed[sid]) > 0 else 0.0)
            for sid, cap in _spot_caps(frame, use).items()
            if sid in fixed.index and float(fixed[sid]) > cap
        }
        capacity, rows = _steer(capacity, rows, factors, STEERED_SEGMENT, dearest)
    if "api" in off:
        apis, groups = _droppable_api(frame, use)
        if groups:
            rows = _steer_rows(rows, rows["substrate"].isin(apis) & rows["group"].isin(groups), dearest)
            rows[STEER] = rows[STEER].fillna(0.0)
    if "commitments" in off and not commitments.empty:
        commitments = commitments.iloc[0:0]  # nothing to buy: no integer columns, the re-solve is an LP
    return replace(frame, rows=rows, capacity=capacity, commitments=commitments, sunk_cost=sunk)


def used_levers(out: PlannerOutput, use: BaselineUse, mode: Mode) -> list[Lever]:
    """The levers the plan pulls beyond the baseline, in :data:`LEVER_ORDER`. A lever the plan does not use is
    off in every coalition (its saving is exactly 0): the plan buys no commitment → no commitment saving."""
    frame, sol = out.frame, out.solution
    found: list[Lever] = []
    if use.source == "billing" and any(h > 1e-9 for h in use.idle.values()):
        found.append("right_sizing")
    if len(sol.commitments) and int(sol.commitments["blocks"].sum()) > 0:
        found.append("commitments")
    allocs = sol.allocations
    if len(allocs):
        caps = _spot_caps(frame, use)
        wall: dict[str, float] = {}
        for r in allocs[allocs["kind"] == "spot"].itertuples():
            w = spot_multiplier(frame.substrates[r.substrate], frame.workloads[r.workload])
            wall[r.substrate] = wall.get(r.substrate, 0.0) + float(r.gpu_hours) * w
        if any(h > caps.get(sid, 0.0) * frame.horizon_hours * (1 + 1e-6) + 1e-6 for sid, h in wall.items()):
            found.append("spot")
        apis, groups = _droppable_api(frame, use)
        members = {w for w, (g, _share) in frame.members.items() if g in groups}
        on_api = allocs[allocs["substrate"].isin(apis) & allocs["workload"].isin(members)]
        if float(on_api["units"].sum()) > 0:
            found.append("api")
    if mode == "reliability" and bool((frame.rows["penalty_per_gpu_hour"] > 0).any()):
        found.append("reliability")
    return found


# --- the attribution ------------------------------------------------------------------------------


def attribute_savings(
    out: PlannerOutput,
    fleet: Fleet,
    workloads: list[Workload],
    demand: pd.DataFrame,
    use: BaselineUse,
    baseline_cost: float,
    *,
    mode: Mode = "cost",
    method: Literal["auto", "shapley", "ordered"] = "auto",
    solver: str = "auto",
) -> LeverAttribution:
    """Split ``baseline_cost − planned`` into the residual and one term per lever (docs/economics.md §6)."""
    t0 = time.perf_counter()
    frame = out.frame
    planned = out.solution.planned_cost
    players = used_levers(out, use, mode)
    if method == "auto":
        method = "shapley" if len(frame.rows) <= SHAPLEY_MAX_COLUMNS else "ordered"
    name = resolve_solver(solver)  # type: ignore[arg-type]
    integer_nodes = not frame.nodes.empty
    notes: list[str] = []

    @cache
    def cost_frame() -> PlanFrame:
        """The cost-mode frame on the plan's blocks: a reliability-mode plan with reliability switched off."""
        n, hour_block = frame.blocks.n, frame.blocks.hour_block
        return build_frame(fleet, workloads, demand, n_blocks=n, integer_nodes=integer_nodes, hour_block=hour_block)

    dearest = _dearest_price(frame)
    values: dict[frozenset[str], float] = {frozenset(players): planned}

    def v(on: frozenset[str]) -> float:
        if on not in values:
            # a lever the plan does not pull is off in every coalition (the plan is optimal without it too)
            f = cost_frame() if mode == "reliability" and "reliability" not in on else frame
            values[on] = _plan_cost(
                restrict(f, {str(x) for x in LEVER_ORDER} - on, use), name, integer_nodes, dearest, notes, on
            )
        return values[on]

    n = len(players)
    savings = dict.fromkeys(players, 0.0)
    if method == "shapley":
        for lever in players:
            others = [p for p in players if p != lever]
            for k in range(n):
                weight = math.factorial(k) * math.factorial(n - k - 1) / math.factorial(n)
                for s in combinations(others, k):
                    with_ = frozenset(s)
                    savings[lever] += weight * (v(with_) - v(with_ | {lever}))
        order: tuple[Lever, ...] = ()
    else:
        order = tuple(p for p in LEVER_ORDER if p in players)
        done: frozenset[str] = frozenset()
        for lever in order:
            savings[lever] = v(done) - v(done | {lever})
            done = done | {lever}
    model_baseline = v(frozenset())
    terms = [
        LeverTerm(lever, savings.get(lever, 0.0), *_evidence(lever, lever in players, use, mode), lever in players)
        for lever in LEVER_ORDER
    ]
    terms[0].measured_share = measured_share(use)
    return LeverAttribution(
        method=method,
        terms=terms,
        baseline_cost=baseline_cost,
        model_baseline_cost=model_baseline,
        planned_cost=planned,
        solves=len(values) - 1,
        seconds=time.perf_counter() - t0,
        order=order,
        notes=notes,
        values=values,
        price_difference=price_difference(frame, use, baseline_cost),
    )


def _dearest_per_group(rows: pd.DataFrame) -> pd.Series:
    """Each demand group's dearest compliant price per unit."""
    return (rows["usd_per_gpu_hour"] / rows["units_per_gpu_hour"]).groupby(rows["group"]).max()


def _dearest_price(frame: PlanFrame) -> dict[str, float]:
    """Each workload's dearest compliant price per unit in the plan (what unserved work is charged)."""
    per_unit = _dearest_per_group(frame.rows)
    return {w: float(per_unit.get(g, 0.0)) for w, (g, _share) in frame.members.items()}


def _plan_cost(
    frame: PlanFrame,
    solver: str,
    integer_nodes: bool,
    dearest: dict[str, float],
    notes: list[str],
    on: frozenset[str],
) -> float:
    """``v(S)``: the money of the cheapest plan of ``frame`` (usage + commitments + node rounding + prepaid), plus
    the steering charge of switched-off options it still needed and unserved work at its dearest price."""
    model = build_model(frame, with_pulp=solver == "cbc")
    gap = NODES_GAP if integer_nodes else DEFAULT_GAP
    solved = solve_model(model, solver, gap=gap, duals=False)  # type: ignore[arg-type]
    if solved.info.status not in ("optimal", "feasible"):
        levers = ", ".join(sorted(on)) or "no levers"
        raise RuntimeError(f"lever re-solve ({levers}): solver status {solved.info.status}")
    mx, values, rows = model.matrix, solved.values, frame.rows
    x = np.clip(values[: mx.n_x], 0.0, None)
    gpu_hours = x * rows["hours"].to_numpy(dtype=float)
    cost = float((gpu_hours * rows["usd_per_gpu_hour"].to_numpy(dtype=float)).sum()) + frame.sunk_cost
    if mx.commit_keys:
        blocks = np.round(values[mx.commit_col0 : mx.node_col0])
        cost += float((blocks * frame.commitments["usd_per_block"].to_numpy(dtype=float)).sum())
    if integer_nodes:
        cost += read_solution(model, solved).node_rounding_cost
    if STEER in rows:
        steered = float((gpu_hours * rows[STEER].to_numpy(dtype=float)).sum())
        if steered > 1e-6:
            cost += steered
            notes.append(
                f"levers on: {', '.join(sorted(on)) or 'none'}: work only a switched-off option could serve, charged "
                f"its dearest compliant price ({steered:,.2f} above that option's own)"
            )
    short = unserved_frame(model, values)
    if not short.empty:
        by_w = short.groupby("workload")["units"].sum()
        cost += sum(float(u) * dearest.get(str(w), 0.0) for w, u in by_w.items())
        notes.append(
            f"levers on: {', '.join(sorted(on)) or 'none'}: {float(by_w.sum()):,.4g} units could not be served, "
            "charged each workload's dearest compliant price"
        )
    return cost


def measured_share(use: BaselineUse) -> float | None:
    """Share of the baseline's paid GPU-hours (non-API) whose busy share was measured from utilisation."""
    paid = {sid: h for sid, h in use.gpu_hours.items() if h > 0 and sid in use.utilization}
    total = sum(paid.values())
    if use.source != "billing" or total <= 0:
        return None
    return sum(h for sid, h in paid.items() if sid in use.measured) / total


def _evidence(lever: Lever, applied: bool, use: BaselineUse, mode: Mode) -> tuple[Evidence, str]:
    """What the lever's figure rests on, in one sentence."""
    if lever == "right_sizing":
        if use.source == "merit_order":
            return "not_applied", "the baseline is a dispatch of the demand: it already pays only the GPU-hours needed"
        share = measured_share(use)
        if share is None:
            return "not_measured", "idle not measured: no utilisation for the horizon and no billed GPU-hours"
        total = sum(h for sid, h in use.gpu_hours.items() if h > 0 and sid in use.utilization)
        idle = sum(use.idle.values())
        text = f"the baseline paid {total:,.0f} GPU-hours, {idle:,.0f} of them idle (kept paid and occupied when off)"
        if use.idle_scale < 1.0 - 1e-9 and share > 0.0:
            return "inferred", (
                f"idle located by utilisation on {share:.0%} of the billed GPU-hours and sized by the demand profiles "
                f"(utilisation measured more idle than the demand leaves; scaled by {use.idle_scale:.2f}): {text}"
            )
        if share >= 1.0 - 1e-9:
            return "measured", f"idle measured from utilisation: {text}"
        if share <= 0.0:
            return "inferred", f"idle inferred from demand profiles (no utilisation for the horizon): {text}"
        return "inferred", (
            f"idle measured from utilisation on {share:.0%} of the billed GPU-hours and inferred from demand "
            f"profiles on the rest: {text}"
        )
    if not applied:
        reason = {
            "commitments": "the plan buys no commitment",
            "spot": "the plan runs no more work on spot than the baseline did",
            "api": "the plan sends no work to an API the baseline did not use (beyond work only an API can serve)",
            "reliability": "cost mode: no work is kept off spot (latency-critical work may run there; see Risks)"
            if mode == "cost"
            else "no latency-critical work could run on spot",
        }[lever]
        return "not_applied", reason
    basis = {
        "commitments": "the plan re-solved without buying commitments",
        "spot": "the plan re-solved with each spot pool held to the work the baseline ran on it",
        "api": "the plan re-solved without the APIs the baseline did not use",
        "reliability": "the plan re-solved without the penalty that keeps latency-critical work off spot",
    }[lever]
    return "modelled", basis

r"""Replay of a plan (``finops simulate dispatch --plan plan.json``): its own allocation, hour by hour, under the
planner's interruption model (Poisson preemptions at λ per billed GPU-hour, the work since the last checkpoint
lost and redone, resume time and fee; :mod:`finops_cli.core.netc`), with each pool's capacity held hour by hour.
Over many seeds the mean realised cost converges to the planned one (Wald's identity); the difference is split
into :data:`CAUSES` that add up exactly per seed. docs/dispatch.md, "Replaying a plan", has the model.
Pure: no I/O; the plan document and the schedule frame are read by :mod:`finops_cli.estate.dispatch`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from finops_cli.core.netc import SpotNeverFinishes, expected_cost_per_preemption, expected_lost_hours, lost_hours_at
from finops_cli.core.pricing import capacity_gpus, cost_per_unit, spot_terms, useful_gpu_hour_price
from finops_cli.errors import InputError
from finops_cli.schema.estate import Fleet, Workload
from finops_cli.schema.plan import PlanDocument
from finops_cli.sim import streams

#: The causes of ``realised − planned``, in the order they are reported.
CAUSES = ("schedule", "interruptions", "redone_work", "resume_fees", "unserved")

#: What each cause means, for the outputs.
CAUSE_TEXT = {
    "schedule": "the certified hourly schedule's cost minus the block plan's (0 when replaying the allocations)",
    "interruptions": "preemptions above (+) or below (−) the λ·T·W the plan expects, at their expected GPU time",
    "redone_work": "work lost since the last checkpoint above (+) or below (−) t_lost per preemption",
    "resume_fees": "resume fees of the preemptions above or below expectation",
    "unserved": "work a full pool could not finish by the horizon's end (not billed)",
}

#: How the replay differs from the planner's model, printed with every replay.
MODEL_NOTES = (
    "preemptions: Poisson at the plan's λ per billed GPU-hour (the planner's model); each loses the work since the "
    "last checkpoint (truncated exponential, mean t_lost) plus the resume time and fee, and the work is redone on "
    "the same pool",
    "capacity: held hour by hour (the plan holds it in expectation); work a full pool cannot take waits for the next "
    "hour, and what is owed at the horizon's end is unserved",
    "everything but spot (owned, reserved, on-demand, APIs, commitments, prepaid capacity) is billed as planned",
)

#: Relative tolerance for a recorded price per unit (plan.json keeps 6 decimals) against the fleet's.
_PRICE_RTOL = 1e-5


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_PRICE_RTOL, abs_tol=1e-6)


class PlanMismatch(InputError):
    """The plan was not made on this fleet and these workloads (exit 2)."""


@dataclass
class _Pair:
    """One (workload, spot substrate) allocation and everything its replay needs."""

    workload: str
    substrate: str
    tau: float
    delta: float
    resume: float
    lam: float
    multiplier: float
    t_lost: float
    money_per_gpu_hour: float  # k·C
    fee: float  # k·F
    units_per_gpu_hour: float
    useful: np.ndarray  # useful GPU-hours per hour of the horizon
    planned_cost: float

    @property
    def expected_preemptions(self) -> float:
        return self.lam * self.multiplier * float(self.useful.sum())


@dataclass
class PairReplay:
    """One spot allocation's replay, averaged over the seeds."""

    workload: str
    substrate: str
    preemptions_per_hour: float
    interval_minutes: float
    resume_minutes: float
    multiplier: float
    planned_cost: float
    realised_cost: float
    expected_preemptions: float
    preemptions: float
    expected_redone_gpu_hours: float
    redone_gpu_hours: float
    unserved_units: float


@dataclass
class PlanReplay:
    """Planned against realised cost over ``seeds`` seeds, the causes of the difference, and per-pair detail."""

    currency: str
    horizon_start: str
    horizon_hours: int
    source: str  # "schedule" | "allocations"
    first_seed: int
    planned_cost: float
    replayed_plan_cost: float  # planned + schedule: the replay's expectation under the planner's model
    realised_costs: np.ndarray  # per seed
    causes: dict[str, np.ndarray]  # per seed, each cause
    deterministic_cost: float  # billed as planned: everything but spot usage
    pairs: list[PairReplay]
    expected_preemptions: float
    preemptions: np.ndarray  # per seed
    unserved_units: dict[str, float]  # mean per workload (replay), units
    plan_unserved_units: float  # the plan's own unserved work (neither side pays it)
    deferred_hours: float  # mean (pool, hour) pairs that ended with work waiting for the next hour
    notes: list[str] = field(default_factory=list)

    @property
    def seeds(self) -> int:
        return len(self.realised_costs)

    @property
    def realised_cost(self) -> float:
        return float(self.realised_costs.mean())

    @staticmethod
    def _se(x: np.ndarray) -> float:
        return float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan

    @property
    def realised_cost_se(self) -> float:
        """Standard error of the mean realised cost (NaN with one seed)."""
        return self._se(self.realised_costs)

    @property
    def z(self) -> float | None:
        """``(mean realised − replayed plan cost) / SE``: how many standard errors apart (None: no spread)."""
        se = self.realised_cost_se
        if not (se > 0):
            return None
        return (self.realised_cost - self.replayed_plan_cost) / se

    def agreement(self) -> str:
        """One sentence: does the mean sit within the statistical error of the planned cost, and if not, why."""
        z = self.z
        unserved = float(self.causes["unserved"].mean())
        if z is None:
            return "one seed or no spot work: no statistical error to compare with (use `seeds` N)"
        within = abs(z) <= 3
        verdict = (
            f"within the statistical error ({z:+.2f} standard errors)"
            if within
            else f"{z:+.2f} standard errors from it"
        )
        text = f"mean realised cost is {verdict} of what the plan expects"
        if unserved < 0:
            text += f"; {-unserved:,.2f} of planned work was left unserved by pools the plan fills in expectation"
        return text

    def as_dict(self) -> dict[str, object]:
        se = self.realised_cost_se
        z = self.z
        return {
            "mode": "plan_replay",
            "currency": self.currency,
            "horizon": {"start": self.horizon_start, "hours": self.horizon_hours},
            "source": self.source,
            "seeds": self.seeds,
            "first_seed": self.first_seed,
            "planned_cost": self.planned_cost,
            "replayed_plan_cost": self.replayed_plan_cost,
            "realised_cost": self.realised_cost,
            "realised_cost_se": None if math.isnan(se) else se,
            "difference": self.realised_cost - self.planned_cost,
            "difference_pct": 100 * (self.realised_cost - self.planned_cost) / self.planned_cost
            if self.planned_cost
            else None,
            "z": z,
            "agreement": self.agreement(),
            "causes": [
                {
                    "cause": c,
                    "amount": float(self.causes[c].mean()),
                    "se": None if math.isnan(s := self._se(self.causes[c])) else s,
                    "meaning": CAUSE_TEXT[c],
                }
                for c in CAUSES
            ],
            "deterministic_cost": self.deterministic_cost,
            "preemptions": {"expected": self.expected_preemptions, "realised": float(self.preemptions.mean())},
            "unserved": {
                "units_by_workload": self.unserved_units,
                "plan_unserved_units": self.plan_unserved_units,
                "deferred_pool_hours": self.deferred_hours,
            },
            "by_pair": [asdict(p) for p in self.pairs],
            "realised_costs": self.realised_costs.tolist(),
            "model": list(MODEL_NOTES),
            "notes": self.notes,
        }


# --- checking that the plan belongs to this estate -------------------------------------------------------


def check_plan_matches(plan: PlanDocument, fleet: Fleet, workloads: list[Workload]) -> None:
    """Raise :class:`PlanMismatch` (one line) unless ``plan`` was made on this fleet and these workloads.

    Currency, every substrate (same kind) and workload the plan uses, the price recorded per substrate and the
    price per unit recorded per allocation (which carries λ, the checkpoint and the fee) must all agree.
    """
    if plan.currency != fleet.currency:
        raise PlanMismatch(f"the plan is in {plan.currency}, the fleet in {fleet.currency}: not the plan of this fleet")
    subs = {s.id: s for s in fleet.substrates}
    wls = {w.id: w for w in workloads}
    for a in plan.allocations:
        s = subs.get(a.substrate)
        if s is None:
            raise PlanMismatch(f"the plan uses substrate {a.substrate!r}, which the fleet does not have")
        if s.kind != a.kind:
            raise PlanMismatch(f"substrate {a.substrate}: the plan has kind {a.kind}, the fleet {s.kind}")
        w = wls.get(a.workload)
        if w is None:
            raise PlanMismatch(f"the plan serves workload {a.workload!r}, which the workloads file does not have")
        if a.price_per_unit is not None:
            try:
                now = cost_per_unit(s, w, fleet)
            except SpotNeverFinishes as exc:
                raise PlanMismatch(
                    f"{a.workload} on {a.substrate}: the plan runs it there, the fleet now refuses it ({exc})"
                ) from None
            if not _close(now, a.price_per_unit):
                raise PlanMismatch(
                    f"{a.workload} on {a.substrate}: the plan priced it at {a.price_per_unit:g} per unit, the fleet "
                    f"now gives {now:g} (price, λ, checkpoint or fee changed): re-plan before replaying"
                )
    for c in plan.commitments:
        if c.substrate not in subs:
            raise PlanMismatch(f"the plan buys a commitment on {c.substrate!r}, which the fleet does not have")
    for p in plan.prices:
        s = subs.get(p.substrate)
        if s is None:
            raise PlanMismatch(f"the plan priced substrate {p.substrate!r}, which the fleet does not have")
        recorded, resolved = p.value, s.price_per_gpu_hour
        if recorded is not None and resolved is not None and not _close(recorded, resolved):
            raise PlanMismatch(
                f"substrate {p.substrate}: the plan used {recorded:g} {plan.currency}/GPU-hour, the fleet now "
                f"resolves {resolved:g}: re-plan (or replay with the store the plan was made with)"
            )


# --- the replay --------------------------------------------------------------------------------------------


class _Draws:
    """Buffered draws from one generator: unit exponentials and uniforms, refilled in chunks."""

    def __init__(self, rng: np.random.Generator, draw: Callable[[np.random.Generator, int], np.ndarray]) -> None:
        self._rng, self._draw = rng, draw
        self._buf: list[float] = []
        self._i = 0

    def next(self) -> float:
        if self._i >= len(self._buf):
            self._buf = self._draw(self._rng, 4096).tolist()
            self._i = 0
        self._i += 1
        return self._buf[self._i - 1]


@dataclass
class _State:
    """What one pair still owes (GPU-hours: resume time, redo, productive work) and what it has done."""

    resume: float = 0.0
    redo: float = 0.0
    work: float = 0.0
    billed: float = 0.0
    preemptions: int = 0
    lost: float = 0.0

    @property
    def owed(self) -> float:
        return self.resume + self.redo + self.work


def _run(st: _State, p: _Pair, budget: float, gaps: _Draws, quantiles: _Draws) -> float:
    """Run the pair's owed work for at most ``budget`` GPU-hours; returns the GPU-hours billed."""
    used = 0.0
    while True:
        need = st.owed
        room = budget - used
        if need <= 1e-12 or room <= 1e-12:
            break
        gap = gaps.next() / p.lam if p.lam > 0 else math.inf
        step = min(gap, need, room)
        used += step
        pay = min(st.resume, step)  # resume first, then redo, then new work
        st.resume -= pay
        rest = step - pay
        pay = min(st.redo, rest)
        st.redo -= pay
        st.work = max(st.work - (rest - pay), 0.0)
        if gap < need and gap < room:  # preempted: work since the last checkpoint is lost
            lost = lost_hours_at(quantiles.next(), p.lam, p.tau)
            st.preemptions += 1
            st.lost += lost
            st.redo += lost
            st.resume += p.resume
    st.billed += used
    return used


def _one_seed(
    pairs: list[_Pair], by_substrate: dict[str, list[int]], caps: dict[str, float], hours: int, seed: int
) -> tuple[list[_State], int]:
    """Every pair's state after the horizon under one seed, and the (pool, hour)s that ended with work waiting."""
    rng = streams(seed)
    gaps = _Draws(rng["preemptions"], lambda g, n: g.standard_exponential(n))
    quantiles = _Draws(rng["losses"], lambda g, n: g.random(n))
    states = [_State() for _ in pairs]
    deferred = 0
    for h in range(hours):
        for sid, idx in by_substrate.items():
            cap = caps[sid]
            walls = []
            for i in idx:
                p = pairs[i]
                states[i].work += p.useful[h] * (1 + p.delta / p.tau)
                walls.append(p.useful[h] * p.multiplier)
            total = sum(walls)
            spare = max(cap - total, 0.0)
            owing = [i for i in idx if states[i].owed > 1e-12]
            if not owing:
                continue
            used = 0.0
            for i, wall in zip(idx, walls, strict=True):  # first pass: each pair its planned wall + its share of spare
                if states[i].owed <= 1e-12:
                    continue
                share = wall / total if total > 0 else 1 / len(owing)
                used += _run(states[i], pairs[i], min(wall + spare * share, cap - used), gaps, quantiles)
            for i in idx:  # second pass: what is left of the hour to anyone still owing
                if cap - used <= 1e-12:
                    break
                if states[i].owed > 1e-12:
                    used += _run(states[i], pairs[i], cap - used, gaps, quantiles)
            deferred += any(states[i].owed > 1e-9 for i in idx)
    return states, deferred


def _spot_loads(plan: PlanDocument, schedule: pd.DataFrame | None) -> dict[tuple[str, str], tuple[Any, ...]]:
    """Each spot (workload, substrate) pair's (useful GPU-hours per hour, units per GPU-hour, cost): the
    schedule's ``gpus`` rows, else the allocation spread evenly over the horizon."""
    hours = plan.horizon.hours
    out: dict[tuple[str, str], tuple[Any, ...]] = {}
    if schedule is None:
        for a in plan.allocations:
            if a.kind == "spot" and a.gpu_hours > 0:
                out[(a.workload, a.substrate)] = (np.full(hours, a.gpu_hours / hours), a.units / a.gpu_hours, a.cost)
        return out
    rows = schedule[(schedule["kind"] == "spot") & (schedule["gpus"] > 0)]
    for (wid, sid), g in rows.groupby(["workload", "substrate"], sort=True):
        useful = np.zeros(hours)
        np.add.at(useful, g["hour"].to_numpy(dtype=np.int64), g["gpus"].to_numpy(dtype=float))
        gpus = float(g["gpus"].sum())
        out[(str(wid), str(sid))] = (useful, float(g["units"].sum()) / gpus, float(g["cost"].sum()))
    return out


def check_schedule(plan: PlanDocument, schedule: pd.DataFrame, fleet: Fleet, workloads: list[Workload]) -> None:
    """The schedule must be the plan's: the columns ``finops plan --schedule`` writes, hours inside its horizon,
    workloads and substrates of this estate. (Its repaired hours may use pairs the block plan does not.)"""
    need = {"hour", "workload", "substrate", "kind", "gpus", "units", "cost"}
    missing = sorted(need - set(schedule.columns))
    if missing:
        raise PlanMismatch(f"the schedule lacks column(s) {', '.join(missing)}: write it with finops plan --schedule")
    hours = schedule["hour"].to_numpy()
    if len(hours) and (hours.min() < 0 or hours.max() >= plan.horizon.hours):
        raise PlanMismatch(
            f"the schedule runs hours {int(hours.min())}..{int(hours.max())}, the plan's horizon has "
            f"{plan.horizon.hours}: not this plan's schedule"
        )
    subs = {s.id: s for s in fleet.substrates}
    wls = {w.id: w for w in workloads}
    for wid, sid, kind in schedule[["workload", "substrate", "kind"]].drop_duplicates().itertuples(index=False):
        if wid not in wls:
            raise PlanMismatch(f"the schedule serves workload {wid!r}, which the workloads file does not have")
        s = subs.get(str(sid))
        if s is None or s.kind != kind:
            raise PlanMismatch(f"the schedule runs {wid} on {sid} ({kind}), which the fleet does not have")
        if kind == "spot":
            try:
                cost_per_unit(s, wls[wid], fleet)
            except SpotNeverFinishes as exc:
                raise PlanMismatch(f"the schedule runs {wid} on {sid}, the fleet now refuses it ({exc})") from None


def replay_plan(
    plan: PlanDocument,
    fleet: Fleet,
    workloads: list[Workload],
    schedule: pd.DataFrame | None = None,
    *,
    seeds: int = 100,
    seed: int = 0,
) -> PlanReplay:
    """Replay ``plan`` on ``fleet`` (prices resolved as the plan resolved them) under ``seeds`` seeds from ``seed``.

    ``schedule`` is the plan's certified hourly schedule (``finops plan --schedule``); without it each allocation
    is spread evenly over the horizon. Raises :class:`PlanMismatch` when the plan is not this estate's.
    """
    if seeds < 1:
        raise InputError(f"{seeds}: expected an integer >= 1", param="seeds")
    check_plan_matches(plan, fleet, workloads)
    if schedule is not None:
        check_schedule(plan, schedule, fleet, workloads)
    subs = {s.id: s for s in fleet.substrates}
    wls = {w.id: w for w in workloads}
    loads = _spot_loads(plan, schedule)
    alloc_cost = sum(a.cost for a in plan.allocations)
    schedule_delta = 0.0 if schedule is None else float(schedule["cost"].sum()) - alloc_cost
    pairs: list[_Pair] = []
    for (wid, sid), (useful, units_per_gpu_hour, cost) in loads.items():
        s, w = subs[sid], wls[wid]
        terms = spot_terms(s, w)
        price = useful_gpu_hour_price(s, w)
        useful_total = float(useful.sum())
        k = cost / (useful_total * price.total) if useful_total > 0 and price.total > 0 else 0.0
        lam = terms.preemptions_per_hour
        pairs.append(
            _Pair(
                wid,
                sid,
                terms.interval_hours,
                terms.write_hours,
                terms.resume_hours,
                lam,
                terms.multiplier,
                expected_lost_hours(lam, terms.interval_hours) if lam > 0 else 0.0,
                k * price.base,
                k * terms.resume_fee * s.preference,
                units_per_gpu_hour,
                useful,
                cost,
            )
        )
    by_substrate: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        by_substrate.setdefault(p.substrate, []).append(i)
    caps = {sid: capacity_gpus(subs[sid], fleet) for sid in by_substrate}
    cap_h = {sid: math.inf if c is None else float(c) for sid, c in caps.items()}
    spot_planned = sum(p.planned_cost for p in pairs)
    deterministic = plan.totals.planned_cost + schedule_delta - spot_planned
    n_pairs = len(pairs)
    realised = np.zeros(seeds)
    causes = {c: np.zeros(seeds) for c in CAUSES}
    causes["schedule"][:] = schedule_delta
    pre = np.zeros(seeds)
    pair_cost = np.zeros((seeds, n_pairs))
    pair_pre = np.zeros((seeds, n_pairs))
    pair_lost = np.zeros((seeds, n_pairs))
    pair_unserved = np.zeros((seeds, n_pairs))
    deferred = np.zeros(seeds)
    for j in range(seeds):
        states, deferred[j] = _one_seed(pairs, by_substrate, cap_h, plan.horizon.hours, seed + j)
        for i, (p, st) in enumerate(zip(pairs, states, strict=True)):
            extra = st.preemptions - p.expected_preemptions
            per_preemption = expected_cost_per_preemption(p.money_per_gpu_hour, p.lam, p.tau, p.resume, 0.0)
            owed = st.owed if st.owed > 1e-9 else 0.0
            causes["interruptions"][j] += extra * per_preemption
            causes["redone_work"][j] += p.money_per_gpu_hour * (st.lost - st.preemptions * p.t_lost)
            causes["resume_fees"][j] += p.fee * extra
            causes["unserved"][j] += -p.money_per_gpu_hour * owed
            pair_cost[j, i] = p.money_per_gpu_hour * st.billed + p.fee * st.preemptions
            pair_pre[j, i] = st.preemptions
            pair_lost[j, i] = st.lost
            left = st.work + st.redo if owed else 0.0
            pair_unserved[j, i] = left / (1 + p.delta / p.tau) * p.units_per_gpu_hour
        pre[j] = pair_pre[j].sum()
        realised[j] = deterministic + pair_cost[j].sum()
    unserved_units: dict[str, float] = {}
    for i, p in enumerate(pairs):
        u = float(pair_unserved[:, i].mean())
        if u > 0:
            unserved_units[p.workload] = unserved_units.get(p.workload, 0.0) + u
    pair_rows = [
        PairReplay(
            workload=p.workload,
            substrate=p.substrate,
            preemptions_per_hour=p.lam,
            interval_minutes=p.tau * 60,
            resume_minutes=p.resume * 60,
            multiplier=p.multiplier,
            planned_cost=p.planned_cost,
            realised_cost=float(pair_cost[:, i].mean()),
            expected_preemptions=p.expected_preemptions,
            preemptions=float(pair_pre[:, i].mean()),
            expected_redone_gpu_hours=p.expected_preemptions * p.t_lost,
            redone_gpu_hours=float(pair_lost[:, i].mean()),
            unserved_units=float(pair_unserved[:, i].mean()),
        )
        for i, p in enumerate(pairs)
    ]
    notes = []
    if schedule is None:
        notes.append(
            "allocations spread evenly over the horizon's hours: give the plan's `schedule` for its hour-by-hour load"
        )
    return PlanReplay(
        currency=plan.currency,
        horizon_start=plan.horizon.start,
        horizon_hours=plan.horizon.hours,
        source="allocations" if schedule is None else "schedule",
        first_seed=seed,
        planned_cost=plan.totals.planned_cost,
        replayed_plan_cost=plan.totals.planned_cost + schedule_delta,
        realised_costs=realised,
        causes=causes,
        deterministic_cost=deterministic,
        pairs=pair_rows,
        expected_preemptions=sum(p.expected_preemptions for p in pairs),
        preemptions=pre,
        unserved_units=unserved_units,
        plan_unserved_units=float(sum(u.units for u in plan.unserved)),
        deferred_hours=float(deferred.mean()),
        notes=notes,
    )

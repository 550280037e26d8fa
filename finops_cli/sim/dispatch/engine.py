"""Request-by-request merit-order dispatch (the ACE model): gate, price, pick the cheapest, account.

Each request goes to its compliant destination with the lowest current merit-order price per unit (congestion
from the utilisation over a sliding window, outages and rate limits applied); spot preemptions are drawn per
request, seeded. The rules and the money are in docs/dispatch.md, "The rules".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from datetime import datetime
from itertools import accumulate

import numpy as np

from finops_cli.core.pricing import (
    Mode,
    base_price_per_gpu_hour,
    capacity_gpus,
    priced_destinations,
    segments,
    units_per_gpu_hour,
)
from finops_cli.schema.estate import Fleet, Workload
from finops_cli.sim import streams

INF = math.inf

#: What this request-level model does that the planner's NETC does not: printed with every dispatch result, so
#: its cost is never read as the plan's (``finops simulate dispatch --plan`` replays a plan under the planner's model).
NOT_IN_PLAN = (
    "per-request loss: a preempted request loses a uniform share of its work (the planner loses the work since the "
    "last checkpoint, t_lost ≈ τ/2 per preemption), and non-interruptible work restarts the whole request",
    "lost work is redone at once on another destination, never on the pool that lost it (the planner redoes it on the "
    "same pool, inside the NETC multiplier W)",
    "each request goes to the cheapest destination at that moment: no commitments bought, no deferral of work, no "
    "hourly optimisation (the planner solves the whole horizon)",
    "compare with a plan: finops simulate dispatch --plan plan.json",
)

#: Why the cheapest destination (at uncongested prices) was passed over.
SPILL_REASONS = ("congestion", "full", "rate_limit", "outage")


@dataclass(frozen=True)
class Trace:
    """A request trace: hours from ``origin`` (sorted), workload index into ``workload_ids``, units."""

    hours: np.ndarray
    workload: np.ndarray
    units: np.ndarray
    workload_ids: tuple[str, ...]
    origin: datetime | None = None

    def __post_init__(self) -> None:
        n = len(self.hours)
        if len(self.workload) != n or len(self.units) != n:
            raise ValueError("trace arrays must have one entry per request")

    def __len__(self) -> int:
        return len(self.hours)


@dataclass(frozen=True)
class TimedEvent:
    """An event in hours: ``kind`` outage | rate_limit | recover on ``substrate``."""

    kind: str
    substrate: str
    start_hours: float
    end_hours: float = INF
    capacity_factor: float = 1.0


@dataclass
class SubstrateResult:
    substrate: str
    kind: str
    requests: int = 0
    units: float = 0.0
    gpu_hours: float = 0.0
    cost: float = 0.0
    merit_cost: float = 0.0
    peak_utilization: float | None = None
    preemptions: int = 0


@dataclass
class WorkloadResult:
    workload: str
    requests: int = 0
    units: float = 0.0
    cost: float = 0.0
    rejected_requests: int = 0
    rejected_units: float = 0.0
    requeued_units: float = 0.0
    slo_risk_units: float = 0.0


@dataclass
class DispatchResult:
    """Totals and breakdowns of one replay; ``as_dict`` is the JSON contract."""

    requests: int
    units: float
    cost: float
    merit_cost: float
    by_substrate: list[SubstrateResult]
    by_workload: list[WorkloadResult]
    spills: dict[str, int]
    rejected: dict[str, float]
    rejected_by_reason: dict[str, int]
    slo_risk_units: float
    preemptions: int
    requeued_units: float
    preempted_cost: float
    mode: str
    seed: int
    window_hours: float
    excluded: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    assignment: np.ndarray | None = None  # per request: substrate index (-1 rejected), when recorded
    unit_prices: list[dict[str, object]] = field(default_factory=list)  # merit-order price per (workload, substrate)

    def by_kind(self) -> list[dict[str, object]]:
        """Requests, units and cost per substrate kind."""
        out: dict[str, dict[str, float]] = {}
        for s in self.by_substrate:
            k = out.setdefault(s.kind, {"requests": 0, "units": 0.0, "cost": 0.0})
            k["requests"] += s.requests
            k["units"] += s.units
            k["cost"] += s.cost
        return [{"kind": k, **v} for k, v in out.items()]

    def as_dict(self) -> dict[str, object]:
        return {
            "requests": self.requests,
            "units": self.units,
            "cost": self.cost,
            "merit_cost": self.merit_cost,
            "by_substrate": [asdict(s) for s in self.by_substrate],
            "by_kind": self.by_kind(),
            "by_workload": [asdict(w) for w in self.by_workload],
            "spills": {"total": sum(self.spills.values()), "by_reason": dict(self.spills)},
            "rejected": {**self.rejected, "by_reason": dict(self.rejected_by_reason)},
            "slo_risk_units": self.slo_risk_units,
            "preemptions": {
                "count": self.preemptions,
                "requeued_units": self.requeued_units,
                "lost_cost": self.preempted_cost,
            },
            "mode": self.mode,
            "seed": self.seed,
            "window_hours": self.window_hours,
            "unit_prices": self.unit_prices,
            "not_in_plan": list(NOT_IN_PLAN),
        }


@dataclass(frozen=True)
class _Candidate:
    """One compliant destination of one workload, with everything the inner loop needs precomputed."""

    d: int  # substrate index
    gpu_hours_per_unit: float  # 1/θ (APIs: 1, their "GPU-hours" are units)
    money_per_unit: float  # the bill per unit of output
    thresholds: tuple[float, ...]  # utilisation at the end of each congestion segment
    rank_per_unit: tuple[float, ...]  # merit-order price per unit in each segment


def candidates(workload: Workload, fleet: Fleet, mode: Mode) -> tuple[list[_Candidate], dict[str, list[str]]]:
    """The workload's compliant destinations, cheapest uncongested first (ties: fleet order).

    Computed once per workload, so the per-request loop never calls the gate or the pricing code.
    Returns the candidates and the excluded substrates with their reasons.
    """
    priced, excluded = priced_destinations(workload, fleet, lambda s: segments(s, workload, fleet, mode))
    index = {s.id: i for i, s in enumerate(fleet.substrates)}
    out: list[tuple[float, int, _Candidate]] = []
    for s, segs in priced:
        theta = units_per_gpu_hour(s, workload)
        cap = capacity_gpus(s, fleet)
        if s.kind == "api":
            money = (s.price_per_unit or {})[workload.unit]
            rank = segs[0].usd_per_gpu_hour + segs[0].penalty_per_gpu_hour
            cand = _Candidate(index[s.id], 1.0, money, (INF,), (rank,))
        else:
            if cap is not None and cap <= 0:
                excluded[s.id] = ["no capacity (gpus 0)"]
                continue
            money = base_price_per_gpu_hour(s) / theta
            thresholds: tuple[float, ...] = (INF,)
            if cap is not None:  # utilisation at the end of each segment; the last ends at 100 %
                ends = list(accumulate(seg.capacity_gpus or 0.0 for seg in segs))
                thresholds = (*(cum / cap for cum in ends[:-1]), 1.0)
            ranks = tuple((seg.usd_per_gpu_hour + seg.penalty_per_gpu_hour) / theta for seg in segs)
            cand = _Candidate(index[s.id], 1.0 / theta, money, thresholds, ranks)
        out.append((cand.rank_per_unit[0], index[s.id], cand))
    out.sort(key=lambda x: (x[0], x[1]))
    return [c for _, _, c in out], excluded


def simulate_dispatch(
    fleet: Fleet,
    workloads: list[Workload],
    trace: Trace,
    events: list[TimedEvent] | None = None,
    *,
    mode: Mode = "cost",
    seed: int = 0,
    window_hours: float = 1.0,
    buckets: int = 12,
    record: bool = False,
) -> DispatchResult:
    """Replay ``trace`` through ``fleet`` (numeric prices) request by request, with ``events`` in hours from the
    trace's origin. Utilisation is measured over ``window_hours``, in ``buckets`` steps; ``record`` keeps each
    request's destination (``result.assignment``: substrate index, -1 = rejected)."""
    if window_hours <= 0 or buckets < 1:
        raise ValueError("window_hours must be > 0 and buckets >= 1")
    by_id = {w.id: w for w in workloads}
    wls = [by_id[wid] for wid in trace.workload_ids]
    subs = fleet.substrates
    n_sub = len(subs)
    sub_index = {s.id: i for i, s in enumerate(subs)}
    cands: list[list[_Candidate]] = []
    excluded: dict[str, dict[str, list[str]]] = {}
    for w in wls:
        ok, ex = candidates(w, fleet, mode)
        cands.append(ok)
        excluded[w.id] = ex

    # per-substrate state (plain lists: the inner loop indexes them a million times)
    nominal_cap = [capacity_gpus(s, fleet) for s in subs]
    cap_gpuh = [None if c is None else c * window_hours for c in nominal_cap]
    factor = [1.0] * n_sub
    capw: list[float | None] = list(cap_gpuh)
    down = [False] * n_sub
    run = [0.0] * n_sub
    ring = [[0.0] * buckets for _ in range(n_sub)]
    peak = [0.0] * n_sub
    att = [0] * n_sub  # API throttle: attempts and accepts while rate-limited
    acc = [0] * n_sub
    lam = [(s.interruptions_per_hour or 0.0) if s.kind == "spot" else 0.0 for s in subs]
    fee = [s.resume_cost if s.kind == "spot" else 0.0 for s in subs]
    s_req = [0] * n_sub
    s_units = [0.0] * n_sub
    s_gpuh = [0.0] * n_sub
    s_money = [0.0] * n_sub
    s_merit = [0.0] * n_sub
    s_pre = [0] * n_sub
    n_w = len(wls)
    w_req = [0] * n_w
    w_units = [0.0] * n_w
    w_money = [0.0] * n_w
    w_rej_req = [0] * n_w
    w_rej_units = [0.0] * n_w
    w_requeue = [0.0] * n_w
    w_slo = [0.0] * n_w
    spills = dict.fromkeys(SPILL_REASONS, 0)
    rej_reasons = {"no_compliant_destination": 0, "all_unavailable": 0}
    lost_money = [0.0]
    w_interruptible = [w.interruptible for w in wls]
    w_latency_critical = [w.slo == "latency_critical" for w in wls]

    # events → change points (at one time: ends and recoveries before starts), applied as the replay passes them
    evs = events or []
    changes: list[tuple[float, int, int, int, str]] = []  # (t, order, substrate, event, what)
    for k, ev in enumerate(evs):
        d = sub_index[ev.substrate]
        if ev.kind == "recover":
            changes.append((ev.start_hours, 0, d, k, "recover"))
            continue
        changes.append((ev.start_hours, 1, d, k, "start"))
        if math.isfinite(ev.end_hours):
            changes.append((ev.end_hours, 0, d, k, "end"))
    changes.sort(key=lambda c: c[:3])
    active: list[dict[int, TimedEvent]] = [{} for _ in range(n_sub)]

    def apply_change(change: tuple[float, int, int, int, str]) -> None:
        _, _, d, k, what = change
        if what == "recover":
            active[d].clear()
        elif what == "start":
            active[d][k] = evs[k]
        else:
            active[d].pop(k, None)
        down[d] = any(ev.kind == "outage" for ev in active[d].values())
        factor[d] = min([ev.capacity_factor for ev in active[d].values() if ev.kind == "rate_limit"], default=1.0)
        cap = cap_gpuh[d]
        capw[d] = None if cap is None else cap * factor[d]
        att[d] = acc[d] = 0

    rngs = streams(seed)
    n = len(trace)
    pre_draw = rngs["preemptions"].random(n) if any(lam) else np.ones(n)
    loss_draw = rngs["losses"].random(n) if any(lam) else np.zeros(n)
    extra = rngs["mix"]  # draws for requeued work (rare)

    def reject(w: int, units: float, reason: str) -> None:
        w_rej_req[w] += 1
        w_rej_units[w] += units
        rej_reasons[reason] += 1

    def place(w: int, units: float, skip: int) -> _Candidate | None:
        """Dispatch one request (``skip``: a substrate it may not return to); None when rejected."""
        cl = cands[w]
        if not cl:
            reject(w, units, "no_compliant_destination")
            return None
        best = INF
        best_c = None
        best_load = 0.0
        first_reason = None
        for i, c in enumerate(cl):
            if best <= c.rank_per_unit[0]:
                break  # sorted by uncongested price: nothing later can beat the best so far
            d = c.d
            if d == skip:
                continue
            if down[d]:
                if i == 0:
                    first_reason = "outage"
                continue
            cw = capw[d]
            if cw is None:
                if factor[d] < 1.0 and acc[d] >= factor[d] * (att[d] + 1):
                    att[d] += 1
                    if i == 0:
                        first_reason = "rate_limit"
                    continue
                price = c.rank_per_unit[0]
                load = 0.0
            else:
                load = (run[d] + units * c.gpu_hours_per_unit) / cw if cw > 0 else INF
                if load > 1.0:
                    if i == 0:
                        first_reason = "rate_limit" if factor[d] < 1.0 else "full"
                    continue
                th = c.thresholds
                k = 0
                while load > th[k]:
                    k += 1
                price = c.rank_per_unit[k]
                if k and i == 0:
                    first_reason = "congestion"
            if price < best:
                best, best_c, best_load = price, c, load
        if best_c is None:
            reject(w, units, "all_unavailable")
            return None
        d = best_c.d
        if best_c is not cl[0] and first_reason is not None:
            spills[first_reason] += 1
        g = units * best_c.gpu_hours_per_unit
        if capw[d] is None:
            if factor[d] < 1.0:
                att[d] += 1
                acc[d] += 1
        else:
            run[d] += g
            ring[d][cur[0] % buckets] += g
            if best_load > peak[d]:
                peak[d] = best_load
        money = units * best_c.money_per_unit
        s_units[d] += units
        s_gpuh[d] += g
        s_money[d] += money
        s_merit[d] += units * best
        w_money[w] += money
        if skip < 0:  # an original request (requeued work is not a new request)
            s_req[d] += 1
            w_req[w] += 1
            w_units[w] += units
        return best_c

    def preempted(w: int, c: _Candidate, units: float, lost_share: float, depth: int = 0) -> None:
        """A spot hit: the lost share was paid for, the resume fee is billed; count SLO risk; requeue the work."""
        s_pre[c.d] += 1
        s_money[c.d] += fee[c.d]
        w_money[w] += fee[c.d]
        lost_money[0] += units * lost_share * c.money_per_unit
        if w_latency_critical[w]:
            w_slo[w] += units
        redo = units * lost_share if w_interruptible[w] else units
        w_requeue[w] += redo
        c2 = place(w, redo, c.d)
        if (
            c2 is not None
            and lam[c2.d]
            and depth < 3
            and extra.random() < -math.expm1(-lam[c2.d] * redo * c2.gpu_hours_per_unit)
        ):
            preempted(w, c2, redo, extra.random(), depth + 1)

    def advance(b: int) -> None:
        """Slide the window to bucket ``b``: usage in the buckets that fall out leaves the running sums."""
        for step in range(1, min(b - cur[0], buckets) + 1):
            slot = (cur[0] + step) % buckets
            for d in range(n_sub):
                r = ring[d]
                v = r[slot]
                if v:
                    run[d] -= v
                    if run[d] < 1e-9:
                        run[d] = 0.0
                    r[slot] = 0.0
        cur[0] = b

    bucket_h = window_hours / buckets
    cur = [0]
    if n:
        cur[0] = math.floor(trace.hours[0] / bucket_h)
    hours = trace.hours.tolist()
    wl = trace.workload.tolist()
    units_l = trace.units.tolist()
    pre_l = pre_draw.tolist()
    loss_l = loss_draw.tolist()
    next_change = changes[0][0] if changes else INF
    ci = 0
    rec = np.full(n, -1, dtype=np.int32) if record else None
    inv_bucket = 1.0 / bucket_h
    for i in range(n):
        t = hours[i]
        b = int(t * inv_bucket) if t >= 0 else math.floor(t * inv_bucket)
        if b != cur[0]:
            advance(b)
        while t >= next_change:
            apply_change(changes[ci])
            ci += 1
            next_change = changes[ci][0] if ci < len(changes) else INF
        w = wl[i]
        u = units_l[i]
        c = place(w, u, -1)
        if rec is not None:
            rec[i] = -1 if c is None else c.d
        if c is not None and lam[c.d] and pre_l[i] < -math.expm1(-lam[c.d] * u * c.gpu_hours_per_unit):
            preempted(w, c, u, loss_l[i])

    by_sub = [
        SubstrateResult(
            s.id,
            s.kind,
            s_req[i],
            s_units[i],
            s_gpuh[i],
            s_money[i],
            s_merit[i],
            None if cap_gpuh[i] is None else peak[i],
            s_pre[i],
        )
        for i, s in enumerate(subs)
    ]
    by_w = [
        WorkloadResult(w.id, w_req[i], w_units[i], w_money[i], w_rej_req[i], w_rej_units[i], w_requeue[i], w_slo[i])
        for i, w in enumerate(wls)
    ]
    return DispatchResult(
        requests=sum(s_req),
        units=sum(w_units),
        cost=sum(s_money),
        merit_cost=sum(s_merit),
        by_substrate=by_sub,
        by_workload=by_w,
        spills=spills,
        rejected={"requests": sum(w_rej_req), "units": sum(w_rej_units)},
        rejected_by_reason=rej_reasons,
        slo_risk_units=sum(w_slo),
        preemptions=sum(s_pre),
        requeued_units=sum(w_requeue),
        preempted_cost=lost_money[0],
        mode=mode,
        seed=seed,
        window_hours=window_hours,
        excluded=excluded,
        assignment=rec,
        unit_prices=[
            {"workload": w.id, "substrate": subs[c.d].id, "price_per_unit": c.rank_per_unit[0]}
            for w, cs in zip(wls, cands, strict=True)
            for c in cs
        ],
    )

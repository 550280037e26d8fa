"""The LaissezCloud paper's experiments on generated clusters: one function per experiment, one table each.

``finops simulate market --experiment NAME`` runs :func:`run_experiment`; every experiment returns an
:class:`ExperimentResult` (parameters, a table of rows, a summary) that the CLI writes as JSON and
markdown beside a PNG chart (:mod:`finops_cli.sim.market.charts`). Scenario families, sizes and seeds
are in :mod:`finops_cli.sim.market.families` and docs/market.md.

Metrics (per policy, over the tenants of one scenario):

- ``retained`` — performance retained against no contention: the mean over tenants of
  min(1, :math:`T_\\text{uncontended} / T`), with :math:`T` the completion time (finish − arrival) and
  :math:`T_\\text{uncontended}` the same tenant's under ``on-demand`` (its preferred type, no waiting).
  ``degradation`` = 1 − ``retained``: the quantity the paper says renegotiation reduces by 8–23 %.
  A service with a lifetime (``--services lifetime``) counts its throughput retained instead: requests
  served ÷ those it served uncontended.
- ``retained_urgent`` — the same over the *urgent* class only.
- ``fastest_retained`` — the simulator's per-tenant ``performance_retained`` (fastest type ÷ achieved).
- ``cost`` (paid to the provider), ``generalized_cost`` (cost + value of time + deadline penalties),
  ``deadline_miss_share``, ``migrations_per_tenant``, ``work_lost_hours``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from finops_cli.errors import InputError
from finops_cli.sim.market import families
from finops_cli.sim.market.results import ExperimentResult, PolicyResult
from finops_cli.sim.market.scenario import Scenario, Tenant
from finops_cli.sim.market.stats import KEYS, aggregate, contention_summary

EXPERIMENTS = ("contention", "urgency", "frontier", "operator", "overhead", "volatility", "misestimate")
#: The paper's figure each experiment reproduces.
FIGURES = {
    "contention": "Fig. 6",
    "urgency": "Fig. 7",
    "frontier": "Fig. 8",
    "operator": "Fig. 11",
    "overhead": "Fig. 13",
    "volatility": "Fig. 14",
    "misestimate": "Fig. 15",
}
#: The spot baseline: ``paper`` — the cloud spot class (opt-in, cheaper, unilateral preemption);
#: ``oracle`` — ``fcfs-preempt`` (value-aware preemption by launch-time bid, base price).
SPOT_POLICIES = {"paper": "spot", "oracle": "fcfs-preempt"}
#: Seeds per point when not given: each table cell is a mean with a 95 % interval over these.
DEFAULT_SEEDS = {"small": 3, "full": 5}


# --- metrics -------------------------------------------------------------------------------------


def _run(sc: Scenario, policy: str) -> PolicyResult:
    from finops_cli.sim.market import POLICIES

    return POLICIES[policy](sc, log_events=False).run()


def metrics(res: PolicyResult, reference: PolicyResult, since: float = 0.0) -> dict[str, Any]:
    """The experiment metrics of one policy's run against the uncontended ``reference`` (on-demand), over the
    tenants arriving from ``since`` on (the steady-state window: the warm-up's tenants are not scored)."""
    ref = {t.tenant: t.completion_hours for t in reference.tenants}
    ratios: list[float] = []
    urgent: list[float] = []
    services: list[float] = []
    served = {t.tenant: t.served for t in reference.tenants}
    scored = [t for t in res.tenants if t.arrival_hours >= since]
    for t in scored:
        if t.served is not None:  # a service with a lifetime: throughput retained (served ÷ served uncontended)
            s_ref = served.get(t.tenant)
            r = min(1.0, t.served / s_ref) if s_ref else None
        else:
            base = ref.get(t.tenant)
            r = min(1.0, base / t.completion_hours) if t.completion_hours and base else None
        if r is None:
            continue
        ratios.append(r)
        if t.tenant.endswith("-urgent"):
            urgent.append(r)
        if "-inference-" in t.tenant:
            services.append(r)
    tot = PolicyResult(res.policy, scored, [], res.bid_updates).totals()
    n = len(scored)
    with_deadline = [t for t in scored if t.deadline_missed is not None]
    tenant_hours = sum(t.completion_hours or 0.0 for t in scored)
    retained = sum(ratios) / len(ratios) if ratios else None
    return {
        "policy": res.policy,
        "tenants": n,
        "retained": retained,
        "degradation": None if retained is None else 1.0 - retained,
        "retained_urgent": sum(urgent) / len(urgent) if urgent else None,
        "retained_services": sum(services) / len(services) if services else None,
        "fastest_retained": tot["mean_performance_retained"],
        "cost": tot["cost"],
        "generalized_cost": tot["generalized_cost"],
        "deadline_miss_share": (tot["deadline_misses"] / len(with_deadline)) if with_deadline else None,
        "migrations_per_tenant": tot["migrations"] / n,
        "churn_per_tenant_hour": tot["migrations"] / tenant_hours if tenant_hours else 0.0,
        "work_lost_hours": tot["work_lost_hours"],
        "work_redone_hours": tot["work_redone_hours"],
        "unfinished": tot["unfinished"],
        "bid_updates": tot["bid_updates"],
    }


#: Below this degradation (1 point) a baseline has too little to reduce: no relative reduction is quoted.
MIN_DEGRADATION = 0.01


def _reduction(base: float | None, new: float | None) -> float | None:
    """Relative reduction of a degradation: (base − new) / base (None when base < :data:`MIN_DEGRADATION`)."""
    if base is None or new is None or base < MIN_DEGRADATION:
        return None
    return (base - new) / base


def _size(size: str, n_accelerators: int | None, window_hours: float | None) -> tuple[int, float]:
    if size not in families.SIZES:
        raise InputError(f"unknown size {size!r}; expected one of {', '.join(families.SIZES)}")
    n, w = families.SIZES[size]
    return n_accelerators or n, window_hours or w


# --- experiments ---------------------------------------------------------------------------------

#: The fixed scenario of the single-scenario experiments (overhead, volatility, frontier).
FOCUS_COMPOSITION = "fast-scarce"
FOCUS_CONTENTION = 1.5
OVERHEAD_MULTIPLIERS = (0.0, 0.25, 1.0, 4.0, 16.0, 64.0)
#: The agent's estimate ÷ the true migration cost: pairs symmetric on a log scale around exact.
MISESTIMATES = (0.5, 0.8, 0.95, 1.0, 1.05, 1.25, 2.0)
#: The volatility controls from none to tight: (bid_clip, floor_fall_per_hour) — both tightened together.
VOLATILITY_LADDER: tuple[tuple[float | None, float | None], ...] = (
    (None, None),
    (1.0, 2.0),
    (0.5, 1.0),
    (0.2, 0.5),
    (0.1, 0.2),
    (0.05, 0.1),
    (0.02, 0.05),
)
BUDGET_MULTIPLES: tuple[float | None, ...] = (0.8, 1.0, 1.2, 1.5, 2.0, 3.0, None)
#: The probe's agent on the frontier: the planner (re-plans its type at live prices within its remaining
#: budget), and the fixed agent (bids for its launch-time type; the budget only caps the bid) as an ablation.
FRONTIER_AGENTS = ("planner", "fixed")


def contention(
    n_accelerators: int, window_hours: float, seed: int, spot: str = "spot", services: str = "volume"
) -> ExperimentResult:
    """Figure 6: retained performance and cost per policy across contention levels and compositions."""
    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {"reduction_vs": {b: [] for b in ("fcfs", spot)}}
    for comp in families.COMPOSITIONS:
        for rho in families.CONTENTION_LEVELS:
            sc = families.generate(
                comp, rho, n_accelerators=n_accelerators, window_hours=window_hours, seed=seed, services=services
            )
            ref = _run(sc, "on-demand")
            since = _warmup(window_hours)
            by_policy = {p: metrics(_run(sc, p), ref, since) for p in ("fcfs", spot, "renegotiate")}
            per_type = {f"rho_{k}": v for k, v in families.load_by_type(sc, since, window_hours).items()}
            for m in by_policy.values():
                rows.append({"composition": comp, "contention": rho, **m, **per_type})
            for b in ("fcfs", spot):
                d_b, d_r = by_policy[b]["degradation"], by_policy["renegotiate"]["degradation"]
                summary["reduction_vs"][b].append(
                    {"composition": comp, "contention": rho, "reduction": _reduction(d_b, d_r), "points": d_b - d_r}
                )
    for b in ("fcfs", spot):
        vals = [r["reduction"] for r in summary["reduction_vs"][b] if r["reduction"] is not None]
        summary[f"reduction_vs_{b}_range"] = [min(vals), max(vals)] if vals else None
    cols = ["composition", "contention", "policy", "tenants", "retained", "retained_services", "retained_urgent"]
    cols += ["cost", "deadline_miss_share", "migrations_per_tenant", "work_lost_hours", "work_redone_hours"]
    cols += [f"rho_{k}" for k in families.ACCELERATORS]
    return ExperimentResult("contention", {}, cols, rows, summary)


def _warmup(window_hours: float) -> float:
    """Where the scored window starts: arrivals before it warm the (empty) cluster up and are not scored."""
    return window_hours * families.WARMUP_SHARE


def _focus(n_accelerators: int, window_hours: float, seed: int, services: str = "volume") -> Scenario:
    return families.generate(
        FOCUS_COMPOSITION,
        FOCUS_CONTENTION,
        n_accelerators=n_accelerators,
        window_hours=window_hours,
        seed=seed,
        services=services,
    )


def _scaled(sc: Scenario, *, overhead: float = 1.0, estimate: float = 1.0) -> Scenario:
    """``sc`` with every tenant's migration cost and restart time × ``overhead`` and its estimate × ``estimate``."""
    tenants = [
        t.model_copy(
            update={
                "checkpoint_restart_cost": t.checkpoint_restart_cost * overhead,
                "restart_hours": t.restart_hours * overhead,
                "overhead_estimate": estimate,
            }
        )
        for t in sc.tenants
    ]
    return sc.model_copy(update={"tenants": tenants})


def _sweep(
    n_accelerators: int,
    window_hours: float,
    seed: int,
    key: str,
    values: Any,
    vary: Callable[[Scenario, Any], Scenario],
    services: str = "volume",
) -> list[dict[str, Any]]:
    """Renegotiation on the focus scenario varied once per value of ``key``, with FCFS's retained beside it
    (FCFS and the uncontended reference never migrate: one run each)."""
    base = _focus(n_accelerators, window_hours, seed, services)
    ref = _run(base, "on-demand")
    since = _warmup(window_hours)
    fcfs = metrics(_run(base, "fcfs"), ref, since)["retained"]
    return [{key: v, **metrics(_run(vary(base, v), "renegotiate"), ref, since), "fcfs_retained": fcfs} for v in values]


def overhead(
    n_accelerators: int, window_hours: float, seed: int, spot: str = "spot", services: str = "volume"
) -> ExperimentResult:
    """Figure 13: every tenant's migration cost and restart time × a multiplier, until renegotiation acts
    like FCFS."""
    rows = _sweep(
        n_accelerators,
        window_hours,
        seed,
        "multiplier",
        OVERHEAD_MULTIPLIERS,
        lambda sc, m: _scaled(sc, overhead=m),
        services,
    )
    summary = {"degenerates_to_fcfs_at_multiplier": _degenerate(rows), "fcfs_retained": rows[0]["fcfs_retained"]}
    cols = ["multiplier", "retained", "fcfs_retained", "cost", "generalized_cost", "migrations_per_tenant"]
    return ExperimentResult("overhead", {}, [*cols, "work_redone_hours"], rows, summary)


def misestimate(
    n_accelerators: int, window_hours: float, seed: int, spot: str = "spot", services: str = "volume"
) -> ExperimentResult:
    """Figure 15: every agent mis-estimates its migration cost by the same factor (the true cost is charged)."""
    rows = _sweep(
        n_accelerators, window_hours, seed, "estimate", MISESTIMATES, lambda sc, e: _scaled(sc, estimate=e), services
    )
    exact = next(r for r in rows if r["estimate"] == 1.0)
    for r in rows:
        r["retained_change"] = r["retained"] - exact["retained"]
    cols = ["estimate", "retained", "retained_change", "fcfs_retained", "cost", "generalized_cost"]
    return ExperimentResult("misestimate", {}, [*cols, "migrations_per_tenant"], rows, {})


#: Renegotiation "degenerates to FCFS" once it migrates fewer than this many times per tenant.
DEGENERATE_MIGRATIONS_PER_TENANT = 0.05


def _degenerate(sweep: list[dict[str, Any]]) -> float | None:
    """The smallest multiplier from which migrations stay below :data:`DEGENERATE_MIGRATIONS_PER_TENANT`."""
    found = None
    for r in reversed(sweep):
        if r["migrations_per_tenant"] >= DEGENERATE_MIGRATIONS_PER_TENANT:
            break
        found = r["multiplier"]
    return found


def volatility(
    n_accelerators: int, window_hours: float, seed: int, spot: str = "spot", services: str = "volume"
) -> ExperimentResult:
    """Figure 14: the volatility controls from none to tight (:data:`VOLATILITY_LADDER`): churn
    (migrations per tenant-hour) and performance."""

    def controlled(sc: Scenario, level: int) -> Scenario:
        clip, fall = VOLATILITY_LADDER[level]
        opts = sc.options.model_copy(update={"bid_clip": clip, "floor_fall_per_hour": fall})
        return sc.model_copy(update={"options": opts})

    rows = _sweep(n_accelerators, window_hours, seed, "level", range(len(VOLATILITY_LADDER)), controlled, services)
    for r in rows:
        r["bid_clip"], r["floor_fall_per_hour"] = VOLATILITY_LADDER[r["level"]]
    cols = ["level", "bid_clip", "floor_fall_per_hour", "churn_per_tenant_hour", "retained", "fcfs_retained"]
    return ExperimentResult("volatility", {}, [*cols, "cost", "migrations_per_tenant"], rows, {})


def frontier(
    n_accelerators: int, window_hours: float, seed: int, spot: str = "spot", services: str = "volume"
) -> ExperimentResult:
    """Figure 8: one tenant's cost vs its performance retained as its budget varies (its planning agent, and
    the fixed agent as an ablation, ``renegotiate-fixed``); spot-like and on-demand points for the same tenant."""
    base = _focus(n_accelerators, window_hours, seed, services)
    probe_hours = {k: families.ACCELERATORS[k][1] for k in families.COMPOSITIONS[FOCUS_COMPOSITION]}
    work = 4.0
    best = work * min(probe_hours.values())
    probe = {
        "id": "probe-urgent",
        "arrival_hours": window_hours / 2,
        "work": work,
        "execution_hours": probe_hours,
        "checkpoint_interval_hours": 0.5,
        "checkpoint_restart_cost": 0.25,
        "restart_hours": 0.02,
        "value_per_hour": 10.0,
        "deadline": {"hours": 1.5 * best, "kind": "soft", "penalty_per_hour": 10.0},
    }
    cheapest = work * min(families.ACCELERATORS[k][0] * h for k, h in probe_hours.items())
    rows: list[dict[str, Any]] = []

    def probe_row(sc: Scenario, policy: str, budget: float | None, multiple: float | None) -> dict[str, Any]:
        res = _run(sc, policy)
        (t,) = [x for x in res.tenants if x.tenant == "probe-urgent"]
        return {
            "policy": policy,
            "budget_multiple": multiple,
            "budget": budget,
            "cost": t.cost,
            "completion_hours": t.completion_hours,
            # an unfinished job (its money ran out, or never covered it) retained nothing
            "retained": 0.0 if not t.completion_hours else min(1.0, best / t.completion_hours),
            "migrations": t.migrations,
            "deadline_missed": t.deadline_missed,
            "budget_exhausted": t.budget_exhausted,
        }

    def with_probe(budget: float | None, agent: str | None = None) -> Scenario:
        tenant = Tenant.model_validate({**probe, "budget": budget, "agent": agent})
        return base.model_copy(update={"tenants": [*base.tenants, tenant]})

    for agent in FRONTIER_AGENTS:
        label = "renegotiate" if agent == "planner" else f"renegotiate-{agent}"
        for multiple in BUDGET_MULTIPLES:
            budget = None if multiple is None else multiple * cheapest
            row = probe_row(with_probe(budget, agent), "renegotiate", budget, multiple)
            rows.append({**row, "policy": label})
    plain = with_probe(None)
    for policy in ("fcfs", spot, "on-demand"):
        rows.append(probe_row(plain, policy, None, None))
    summary = {"probe_cheapest_cost": cheapest, "probe_best_hours": best}
    cols = ["policy", "budget_multiple", "budget", "cost", "completion_hours", "retained", "migrations"]
    cols += ["deadline_missed", "budget_exhausted"]
    return ExperimentResult("frontier", {}, cols, rows, summary)


#: The urgency experiment's value-of-time profiles (USD/h): constant levels, and one that rises from 0 to 30
#: over the probe's best time × 1.5 (Fig. 2's tenant whose willingness to pay grows).
URGENCY_LEVELS: tuple[float, ...] = (0.0, 1.0, 3.0, 10.0, 30.0)


def urgency(
    n_accelerators: int, window_hours: float, seed: int, spot: str = "spot", services: str = "volume"
) -> ExperimentResult:
    """Figure 7: one tenant's cost and performance as its urgency (value of time) varies, per policy.

    The probe (4 units of work on all five types, mid-window arrival, no deadline, no budget) runs on the
    focus scenario with each constant value of time in :data:`URGENCY_LEVELS` and with a rising one. Under
    ``renegotiate`` its agent bids what finishing sooner is worth at live prices: a low-urgency tenant
    settles for cheaper allocations. ``spot`` and ``on-demand`` decide at launch (the probe opts into spot).
    """
    base = _focus(n_accelerators, window_hours, seed, services)
    hours = {k: families.ACCELERATORS[k][1] for k in families.COMPOSITIONS[FOCUS_COMPOSITION]}
    work = 4.0
    best = work * min(hours.values())
    probe: dict[str, Any] = {
        "id": "probe-urgency",
        "arrival_hours": window_hours / 2,
        "work": work,
        "execution_hours": hours,
        "checkpoint_interval_hours": 0.5,
        "checkpoint_restart_cost": 0.25,
        "restart_hours": 0.02,
    }
    profiles: list[tuple[str, dict[str, Any]]] = [(f"{v:g} $/h", {"value_per_hour": v}) for v in URGENCY_LEVELS]
    profiles.append(
        ("0 → 30 $/h", {"value_per_hour": 0.0, "value_ramp": {"to_value_per_hour": 30.0, "over_hours": 1.5 * best}})
    )
    rows: list[dict[str, Any]] = []
    for label, value in profiles:
        for policy in ("renegotiate", spot, "on-demand"):
            extra = {"spot_opt_in": True} if policy == spot else {}
            tenant = Tenant.model_validate({**probe, **value, **extra})
            res = _run(base.model_copy(update={"tenants": [*base.tenants, tenant]}), policy)
            (t,) = [x for x in res.tenants if x.tenant == "probe-urgency"]
            rows.append(
                {
                    "urgency": label,
                    "policy": policy,
                    "cost": t.cost,
                    "completion_hours": t.completion_hours,
                    "retained": 0.0 if not t.completion_hours else min(1.0, best / t.completion_hours),
                    "migrations": t.migrations,
                    "first_type": t.accelerators[0] if t.accelerators else None,
                    "types": " → ".join(t.accelerators),
                }
            )
    cols = ["urgency", "policy", "cost", "completion_hours", "retained", "migrations", "first_type", "types"]
    return ExperimentResult("urgency", {}, cols, rows, {"probe_best_hours": best})


#: The operator experiment's power-capped group: H100s in dense racks, a little cheaper at base, whose
#: floor rises from the base at half load to twice the base at full load; the operator wants ≤ 70 %.
CAPPED = {
    "type": "H100-dense",
    "share": 0.10,
    "base_price_per_hour": 2.70,
    "load_pricing": {"knee": 0.5, "multiple_at_full": 2.0, "cap": 0.7},
}
OPERATOR_LEVELS = (0.8, 1.2)


def operator(
    n_accelerators: int, window_hours: float, seed: int, spot: str = "spot", services: str = "volume"
) -> ExperimentResult:
    """Figure 11 (InfraMaps): a power cap expressed only as a price steers load off a group of accelerators."""
    extra = [
        {
            "type": CAPPED["type"],
            "count": max(2, round(n_accelerators * float(CAPPED["share"]))),  # type: ignore[arg-type]
            "base_price_per_hour": CAPPED["base_price_per_hour"],
            "load_pricing": CAPPED["load_pricing"],
        }
    ]
    rows: list[dict[str, Any]] = []
    series: dict[str, Any] = {}
    for rho in OPERATOR_LEVELS:
        sc = families.generate(
            "balanced",
            rho,
            n_accelerators=n_accelerators,
            window_hours=window_hours,
            seed=seed,
            extra_pools=extra,
            hours_alias={"H100-dense": "H100"},
            services=services,
        )
        ref = _run(sc, "on-demand")
        for policy in ("fcfs", spot, "renegotiate"):
            res = _run(sc, policy)
            load = res.load.get("H100-dense", {})
            rows.append(
                {
                    "contention": rho,
                    **metrics(res, ref, _warmup(window_hours)),
                    "capped_mean_load": load.get("mean_load"),
                    "capped_peak_load": load.get("peak_load"),
                    "hours_over_cap": load.get("hours_over_cap"),
                }
            )
            series[f"{policy} rho={rho:g}"] = load.get("timeline", [])
    cols = ["contention", "policy", "capped_mean_load", "capped_peak_load", "hours_over_cap", "retained"]
    cols += ["cost", "generalized_cost", "work_lost_hours"]
    summary = {"cap": CAPPED["load_pricing"]["cap"]}  # type: ignore[index]
    return ExperimentResult("operator", {"capped_group": CAPPED}, cols, rows, summary, series)


RUNNERS: dict[str, Callable[[int, float, int, str, str], ExperimentResult]] = {
    "contention": contention,
    "urgency": urgency,
    "frontier": frontier,
    "operator": operator,
    "overhead": overhead,
    "volatility": volatility,
    "misestimate": misestimate,
}


def run_experiment(
    name: str,
    *,
    size: str = "small",
    seed: int = 0,
    n_accelerators: int | None = None,
    window_hours: float | None = None,
    seeds: int | None = None,
    spot: str = "paper",
    jobs: int = 1,
    services: str = "volume",
) -> ExperimentResult:
    """Run one experiment (a name from :data:`EXPERIMENTS`) on the generated families at ``size``, over
    ``seeds`` seeds from ``seed`` (each cell: the mean and a 95 % interval), with the ``spot`` baseline and
    the ``services`` model (:data:`.families.SERVICE_MODELS`); ``jobs`` > 1 runs the seeds in that many
    worker processes (the same result for any ``jobs``: each seed's run is independent and the rows are
    aggregated in seed order)."""
    if n_accelerators is not None and n_accelerators < 5:
        raise InputError(f"{n_accelerators}: expected at least 5 (one per accelerator type)", param="n_accelerators")
    if window_hours is not None and window_hours <= 0:
        raise InputError(f"{window_hours}: expected hours > 0", param="window_hours")
    if name not in RUNNERS:
        raise InputError(f"unknown experiment {name!r}; expected one of {', '.join(EXPERIMENTS)}")
    if spot not in SPOT_POLICIES:
        raise InputError(f"unknown spot baseline {spot!r}; expected one of {', '.join(SPOT_POLICIES)}")
    if services not in families.SERVICE_MODELS:
        raise InputError(f"unknown service model {services!r}; expected one of {', '.join(families.SERVICE_MODELS)}")
    if jobs < 1:
        raise InputError(f"{jobs}: expected at least 1 worker process", param="jobs")
    n, w = _size(size, n_accelerators, window_hours)
    k = seeds or DEFAULT_SEEDS[size]
    t0 = time.perf_counter()
    per_seed = _per_seed(name, n, w, range(seed, seed + k), SPOT_POLICIES[spot], services, jobs)
    rows, cols = aggregate(KEYS[name], per_seed)
    out = per_seed[0]
    summary: dict[str, Any] = {}
    if name == "contention":
        summary = contention_summary(per_seed, SPOT_POLICIES[spot])
    else:
        summary = {**out.summary, "summary_seed": seed}  # the single-run summary of the first seed
    params = {"size": size, "accelerators": n, "window_hours": w, "seeds": list(range(seed, seed + k))}
    params["services"] = services
    result = ExperimentResult(name, {**params, "spot": spot, **out.params}, cols, rows, summary, out.series)
    result.summary["wall_seconds"] = time.perf_counter() - t0
    return result


def _per_seed(name: str, n: int, w: float, seeds: range, spot: str, services: str, jobs: int) -> list[ExperimentResult]:
    """Each seed's run, in seed order (``pool.map`` keeps it whatever process finishes first)."""
    if jobs <= 1 or len(seeds) < 2:
        return [RUNNERS[name](n, w, s, spot, services) for s in seeds]
    import os

    from finops_cli.processes import die_with_parent, spawn_pool

    with spawn_pool(min(jobs, len(seeds)), die_with_parent, (os.getpid(),)) as pool:
        return list(pool.map(RUNNERS[name], *zip(*[(n, w, s, spot, services) for s in seeds], strict=True)))

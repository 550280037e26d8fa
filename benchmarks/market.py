"""Market benchmark: 10,000 accelerators and 2,000 tenants arriving over a simulated day.

Usage::

    python benchmarks/market.py                            # value-of-time agents, all four policies
    python benchmarks/market.py --agents break-even        # the original break-even-only tenants
    python benchmarks/market.py --policy renegotiate --accelerators 10000 --tenants 2000
    python benchmarks/market.py --experiments              # every paper experiment at full size, timed
    python benchmarks/market.py --experiments --jobs 2 --services lifetime   # seeds in 2 processes

``--agents value`` (default): the documented tenant classes of docs/market.md (urgent / standard /
batch: values of time and deadlines; 70 % of them prefer fast hardware) on a cluster whose fast
hardware is very scarce (:data:`VALUE_MIX`: 3 % H100, 4 % A100), arriving over 4 h — so that 2,000
tenants actually contend on a 10,000-accelerator cluster (spread over a day, or on a cluster with
60 % H100s, they would not: each tenant holds one accelerator).
``--agents break-even``: the original generator (issue #7): tenants with 1–12 h of work, 2–5
compatible types with type-dependent speed, checkpoints every 15–60 min, value of time 0.
Seeded (``--seed``). Times are wall seconds of one run per policy, event log off; the target is
≤ 60 s (issues #7 and #18). The last columns are the market's own overhead (issue #18): bid updates
(every time an agent computes a bid), bid updates per simulated hour, and the simulator's wall time
per bid update (the whole run's time ÷ bid updates: an upper bound on the cost of one update).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from results import add_json_option, write_json

from finops_cli.sim.market import POLICIES, Scenario, simulate_market
from finops_cli.sim.market.experiments import metrics
from finops_cli.sim.market.families import generate

#: (type, base $/h, share of the accelerators, slowdown vs H100): the types that are cheapest per unit of
#: work (L4, A10, L40S) are scarce, so a few hundred of them are contested by up to 2,000 tenants.
TYPES = [
    ("H100", 3.0, 0.60, 1.0),
    ("A100", 1.8, 0.25, 1.6),
    ("L40S", 1.1, 0.08, 2.2),
    ("A10", 0.6, 0.04, 3.0),
    ("L4", 0.5, 0.03, 3.5),
]


#: The value-of-time benchmark's cluster: fast hardware very scarce (see the module docstring).
VALUE_MIX = {"H100": 0.03, "A100": 0.04, "L40S": 0.08, "A10": 0.25, "L4": 0.60}
VALUE_WINDOW_HOURS = 4.0


def scenario(n_acc: int, n_tenants: int, seed: int) -> Scenario:
    rng = np.random.default_rng(seed)
    accelerators = [
        {"type": k, "count": max(1, round(n_acc * share)), "base_price_per_hour": price} for k, price, share, _ in TYPES
    ]
    tenants = []
    for i in range(n_tenants):
        work = float(rng.uniform(1, 12))
        k = int(rng.integers(2, len(TYPES) + 1))
        compatible = sorted(rng.choice(len(TYPES), size=k, replace=False).tolist())
        noise = rng.uniform(0.8, 1.25, size=len(TYPES))
        tenants.append(
            {
                "id": f"t{i}",
                "arrival_hours": float(rng.uniform(0, 24)),
                "work": work,
                "execution_hours": {TYPES[j][0]: float(TYPES[j][3] * noise[j]) for j in compatible},
                "checkpoint_interval_hours": float(rng.uniform(0.25, 1.0)),
                "checkpoint_restart_cost": float(rng.uniform(0.0, 0.5)),
                "restart_hours": float(rng.uniform(0.0, 0.05)),
            }
        )
    return Scenario.model_validate({"version": 1, "accelerators": accelerators, "tenants": tenants})


def _cpu() -> float:
    """CPU seconds of this process and its finished worker processes (independent of the machine's load)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def experiments(seeds: int, spot: str, jobs: int, out_dir: str | None, services: str = "volume") -> list[dict]:
    """Every experiment of ``simulate market --experiment`` at the full size, one after another, timed."""
    import json
    from pathlib import Path

    from finops_cli.sim.market.experiments import EXPERIMENTS, run_experiment

    total, results = 0.0, []
    print(f"{'experiment':<12}{'seconds':>9}{'CPU s':>10}  full size (400 accelerators, 24 h), {seeds} seeds")
    cpu_total = 0.0
    for name in EXPERIMENTS:
        t0, c0 = time.perf_counter(), _cpu()
        res = run_experiment(name, size="full", seeds=seeds, spot=spot, jobs=jobs, services=services)
        dt, cpu = time.perf_counter() - t0, _cpu() - c0
        total += dt
        cpu_total += cpu
        print(f"{name:<12}{dt:>9.1f}{cpu:>10.1f}", flush=True)
        results.append({"experiment": name, "seconds": dt, "cpu_seconds": cpu, "seeds": seeds, "jobs": jobs})
        if out_dir:
            Path(out_dir).mkdir(parents=True, exist_ok=True)
            (Path(out_dir) / f"{name}.json").write_text(json.dumps(res.as_dict(), indent=1), encoding="utf-8")
    print(f"{'total':<12}{total:>9.1f}{cpu_total:>10.1f}")
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--accelerators", type=int, default=10_000)
    ap.add_argument("--tenants", type=int, default=2_000)
    ap.add_argument("--policy", default="all", choices=[*POLICIES, "all"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--agents", default="value", choices=["value", "break-even"])
    ap.add_argument("--experiments", action="store_true", help="time every experiment at full size instead")
    ap.add_argument("--seeds", type=int, default=5, help="seeds per experiment point (with --experiments)")
    ap.add_argument("--spot", default="paper", choices=["paper", "oracle"])
    ap.add_argument("--jobs", type=int, default=2, help="worker processes over seeds (with --experiments)")
    ap.add_argument("--out-dir", help="write each experiment's JSON here (with --experiments)")
    ap.add_argument("--services", default="volume", choices=["volume", "lifetime"], help="with --experiments")
    add_json_option(ap)
    args = ap.parse_args()
    if args.experiments:
        write_json(
            args.json, "market_experiments", experiments(args.seeds, args.spot, args.jobs, args.out_dir, args.services)
        )
        return
    t0 = time.perf_counter()
    if args.agents == "value":
        sc = generate(
            VALUE_MIX,
            1.0,
            n_accelerators=args.accelerators,
            window_hours=VALUE_WINDOW_HOURS,
            seed=args.seed,
            n_tenants=args.tenants,
        )
    else:
        sc = scenario(args.accelerators, args.tenants, args.seed)
    print(
        f"scenario: {sum(a.count for a in sc.accelerators):,} accelerators, {len(sc.tenants):,} tenants "
        f"({time.perf_counter() - t0:.2f} s to build)"
    )
    names = list(POLICIES) if args.policy == "all" else [args.policy]
    (reference,) = simulate_market(sc, "on-demand", log_events=False)  # uncontended: the one metric's reference
    head = f"{'policy':<14}{'seconds':>9}{'cost USD':>14}{'migrations':>12}{'lost h':>10}{'retained':>10}"
    print(head + f"{'unfinished':>12}{'bid updates':>13}{'bids/sim h':>12}{'µs/bid':>9}{'restart %':>11}")
    restart_h = {t.id: t.restart_hours for t in sc.tenants}
    results = []
    for name in names:
        t0 = time.perf_counter()
        (res,) = simulate_market(sc, name, log_events=False)
        dt = time.perf_counter() - t0
        tot = res.totals()
        bids = int(tot["bid_updates"])
        per_hour = bids / tot["makespan_hours"] if tot["makespan_hours"] else 0.0
        per_bid = f"{dt / bids * 1e6:>9.1f}" if bids else f"{'—':>9}"
        # the tenants' own migration overhead: restart hours spent ÷ all tenant hours (the paper's "% of runtime")
        retained = metrics(res, reference)["retained"] or 0.0  # the experiments' metric, vs uncontended
        busy = sum(t.completion_hours or 0.0 for t in res.tenants)
        restart = sum(t.migrations * restart_h[t.tenant] for t in res.tenants) / busy if busy else 0.0
        print(
            f"{name:<14}{dt:>9.2f}{tot['cost']:>14,.0f}{tot['migrations']:>12,}{tot['work_lost_hours']:>10.1f}"
            f"{retained:>10.1%}{tot['unfinished']:>12,}{bids:>13,}{per_hour:>12,.0f}{per_bid}"
            f"{restart:>11.3%}"
        )
        results.append({"policy": name, "seconds": dt, **tot, "retained": retained, "restart_share": restart})
    write_json(args.json, "market", results)


if __name__ == "__main__":
    main()

"""Dispatch benchmark: replay a million requests of the Kestrel AI sample month through the merit order.

Usage::

    python benchmarks/dispatch.py                  # 1 M requests, seed 1
    python benchmarks/dispatch.py --requests 200000 --seed 3 --events

The sample fleet prices one spot pool from the spot-price store (``price_feed``); the benchmark fixes
that price at $3.90/GPU-hour so it needs no store. The trace is generated from the sample workloads'
October 2026 demand (Poisson arrivals, :func:`finops_cli.sim.dispatch.generate_trace`). Times are wall
seconds of one run; the target is ≤ 10 s for 1 M requests (issue #7).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from results import add_json_option, write_json

from finops_cli.core.demand import Horizon
from finops_cli.estate.demand_io import estate_demand_sources
from finops_cli.estate.load import load_estate
from finops_cli.estate.prices import resolve_fleet
from finops_cli.sim.dispatch import TimedEvent, generate_trace, simulate_dispatch

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--events", action="store_true", help="add an API outage and a spot rate limit")
    add_json_option(ap)
    args = ap.parse_args()

    est = load_estate(SAMPLES / "fleet.yaml", SAMPLES / "workloads.yaml")
    subs = [
        s.model_copy(update={"price_feed": None, "price_per_gpu_hour": 3.9}) if s.price_feed else s
        for s in est.fleet.substrates
    ]
    horizon = Horizon.month("2026-10")
    fleet, _ = resolve_fleet(est.fleet.model_copy(update={"substrates": subs}), horizon_end=horizon.end)
    workloads = list(est.workloads.workloads)
    demand = estate_demand_sources(est, horizon)[0].to_numpy()

    t0 = time.perf_counter()
    trace = generate_trace(workloads, fleet, demand, requests=args.requests, seed=args.seed, origin=horizon.start)
    t_gen = time.perf_counter() - t0
    events = None
    if args.events:
        events = [
            TimedEvent("outage", "frontier-api", 100.0, 124.0),
            TimedEvent("rate_limit", "aws-p4d-spot-usw2", 200.0, 260.0, 0.3),
        ]
    t0 = time.perf_counter()
    result = simulate_dispatch(fleet, workloads, trace, events, seed=args.seed)
    t_run = time.perf_counter() - t0
    doc = result.as_dict()
    print(f"requests in trace      {len(trace):>12,}")
    print(f"trace generation       {t_gen:>12.2f} s")
    print(f"replay                 {t_run:>12.2f} s   ({len(trace) / t_run:,.0f} requests/s)")
    print(f"served / rejected      {doc['requests']:>12,} / {doc['rejected']['requests']:,}")
    print(f"spills                 {doc['spills']['total']:>12,}  {doc['spills']['by_reason']}")
    print(f"spot preemptions       {doc['preemptions']['count']:>12,}")
    print(f"cost                   {doc['cost']:>12,.2f} USD")
    figures = {"requests": len(trace), "generation_s": t_gen, "replay_s": t_run, "requests_per_s": len(trace) / t_run}
    write_json(args.json, "dispatch", [figures | {"cost": doc["cost"], "spills": doc["spills"]["total"]}])


if __name__ == "__main__":
    main()

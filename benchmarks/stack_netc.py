"""Benchmark the merit order and NETC: build time vs fleet size, trace replay vs trace length.

    python benchmarks/stack_netc.py

Prints figures (seconds); no assertions. Single runs on a shared machine: expect ±20 %.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from results import add_json_option, write_json

from finops_cli.core.netc import available_intervals, estimate_rate, replay
from finops_cli.core.stack import build_stack
from finops_cli.schema.estate import Fleet, Workload


def _fleet(n: int, rng: np.random.Generator) -> Fleet:
    kinds = ["owned", "reserved", "on_demand", "spot"]
    subs = []
    for i in range(n):
        kind = kinds[i % 4]
        s = {"id": f"s{i:05d}", "provider": ["aws", "gcp", "onprem"][i % 3], "kind": kind,
             "accelerator": ["H100", "A100", "L4"][i % 3], "jurisdiction": ["US", "EU"][i % 2], "gpus": 64,
             "price_per_gpu_hour": float(rng.uniform(0.3, 12))}  # fmt: skip
        if kind == "spot":
            s["interruptions_per_hour"] = float(rng.uniform(0, 0.1))
        subs.append(s)
    subs.append({"id": "api", "provider": "anthropic", "kind": "api", "jurisdiction": "US", "isolation": "shared",
                 "price_per_unit": {"h100_hours": 50.0}})  # fmt: skip
    return Fleet.model_validate({"version": 1, "substrates": subs})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_json_option(ap)
    args = ap.parse_args()
    results: list[dict] = []
    rng = np.random.default_rng(0)
    w = Workload.model_validate(
        {"id": "w", "unit": "h100_hours", "interruptible": True, "demand": {"total": 1}, "deferrable": True,
         "throughput": {"H100": 1.0, "A100": 0.45, "L4": 0.15}, "requires": {"jurisdictions": ["US"]}}
    )  # fmt: skip
    print("merit order (one workload, gate + segments + sort + clear)")
    for n in (100, 1_000, 10_000):
        fleet = _fleet(n, rng)
        t0 = time.perf_counter()
        stack = build_stack(w, fleet, "reliability", demand_units=5_000.0)
        dt = time.perf_counter() - t0
        print(f"  {n:>6} substrates: {dt:7.3f} s, {len(stack.steps):>6} steps, {len(stack.excluded):>5} excluded")
        results.append({"merit_order_substrates": n, "seconds": dt, "steps": len(stack.steps)})
    print("trace: λ estimate + replay of 100k useful GPU-hours (τ 30 min, δ 0.5 min, R 6 min)")
    for hours in (10_000, 100_000, 1_000_000):
        lam = 0.05
        n = int(hours * lam) + 1
        up = np.maximum(np.round(rng.exponential(1 / lam, n) * 60).astype(int), 1)
        down = np.maximum(np.round(rng.exponential(0.5, n) * 60).astype(int), 1)
        u = np.repeat(np.tile(np.array([0, 1], np.int8), n), np.column_stack([up, down]).ravel())
        t0 = time.perf_counter()
        est = estimate_rate(u, 60)
        runs = available_intervals(u, 60)
        rp = replay(runs, 100_000, 0.5, 0.5 / 60, 0.1, 3.9)
        dt = time.perf_counter() - t0
        print(f"  {hours:>9,} trace hours ({len(u):>10,} steps): {dt:6.3f} s, λ̂ {est.preemptions_per_hour:.4f}, "
              f"W {rp.multiplier:.4f}")  # fmt: skip
        results.append({"trace_hours": hours, "seconds": dt, "rate_per_hour": est.preemptions_per_hour})
    write_json(args.json, "stack_netc", results)


if __name__ == "__main__":
    main()

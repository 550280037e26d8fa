"""Planner benchmark: generated estates, model-build and solve time, peak RSS, cost vs full resolution.

Usage::

    python benchmarks/plan.py                       # the three sizes of issue #5
    python benchmarks/plan.py --sizes 10x10x24 --blocks 48 --solver highs
    python benchmarks/plan.py --one 200x40x720 --blocks 48        # one run in this process (JSON line)

Each run happens in its own subprocess so peak RSS is per run. For every size the plan is built on
``--blocks`` load-duration blocks (the default of ``finops plan``) and compared with the same model at
full resolution (one block per hour). Because load-duration blocks relax the hourly model, the block
optimum is a lower bound of the full-resolution optimum; the reported error is
``(full − blocks) / full``. Where the full-resolution MILP is too big to solve within ``--full-limit``
seconds, the table says "out of reach".

Generated estates: ``S`` substrates over 3 accelerators, 2 jurisdictions and all kinds (owned,
reserved incl. ≤ 4 purchasable, spot, on-demand, 2 APIs); ``W`` workloads drawn from 16 archetypes
(requirements + throughput table of a model family), each with its own diurnal demand profile
(random phase/amplitude/noise); about a third deferrable.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd

from finops_cli.planner import plan_demand
from finops_cli.schema.estate import Fleet, Workload

ACCS = ["H100", "A100", "L4"]


def generate(n_w: int, n_s: int, hours: int, seed: int = 7) -> tuple[Fleet, list[Workload], pd.DataFrame]:
    rng = np.random.default_rng(seed)
    subs = []
    base = {"H100": 3.0, "A100": 1.6, "L4": 0.7}
    kinds = ["owned", "reserved", "spot", "on_demand"]
    n_purch = 0
    for i in range(n_s - 2):
        kind = kinds[i % 4]
        acc = ACCS[(i // 4) % 3]
        s = {
            "id": f"s{i:03d}-{kind}",
            "provider": ["onprem", "coreweave", "aws", "gcp"][i % 4],
            "kind": kind,
            "accelerator": acc,
            "jurisdiction": "US" if rng.random() < 0.7 else "EU",
            "gpus": float(rng.integers(8, 64)),
        }
        if kind == "owned":
            s["price_per_gpu_hour"] = round(0.2 + 0.2 * rng.random(), 3)
        elif kind == "reserved":
            s["price_per_gpu_hour"] = 0.0
            s["committed_per_gpu_hour"] = round(base[acc] * 0.6, 3)
            if n_purch < 4:
                s["purchasable"] = {"block_gpus": 16, "price_per_gpu_hour": round(base[acc] * 0.65, 3), "max_blocks": 4}
                n_purch += 1
        elif kind == "spot":
            s["price_per_gpu_hour"] = round(base[acc] * (0.35 + 0.2 * rng.random()), 3)
            s["interruptions_per_hour"] = round(0.01 + 0.05 * rng.random(), 3)
            s["resume_minutes"] = 6
        else:
            s["price_per_gpu_hour"] = round(base[acc] * (1.0 + 0.3 * rng.random()), 3)
            if rng.random() < 0.5:
                del s["gpus"]  # uncapped on-demand
        subs.append(s)
    subs.append(
        {
            "id": "api-us",
            "provider": "api",
            "kind": "api",
            "jurisdiction": "US",
            "isolation": "shared",
            "price_per_unit": {"tok": 12.0, "gpuh": 9.0},
        }
    )
    subs.append(
        {
            "id": "api-eu",
            "provider": "api",
            "kind": "api",
            "jurisdiction": "EU",
            "isolation": "shared",
            "price_per_unit": {"tok": 10.0, "gpuh": 8.0},
        }
    )
    fleet = Fleet.model_validate({"version": 1, "substrates": subs})
    archetypes = []
    for a in range(16):
        thr = {"H100": 1.0, "A100": round(0.4 + 0.2 * rng.random(), 2)}
        if a % 3 == 0:
            thr["L4"] = round(0.15 + 0.1 * rng.random(), 2)
        unit = "tok" if a % 2 else "gpuh"
        archetypes.append((thr, ["US"] if a % 4 else ["US", "EU"], unit, a % 3 == 0))
    workloads, cols = [], {}
    t = np.arange(hours)
    for j in range(n_w):
        thr, juris, unit, deferrable = archetypes[j % 16]
        wid = f"w{j:03d}"
        workloads.append(
            Workload.model_validate(
                {
                    "id": wid,
                    "unit": unit,
                    "demand": {"total": 1.0},
                    "throughput": thr,
                    "requires": {"jurisdictions": juris},
                    "deferrable": deferrable,
                    "interruptible": deferrable,
                }
            )
        )
        level = rng.uniform(1, 6) * n_s / n_w * 4
        prof = level * (1 + rng.uniform(0.2, 0.6) * np.sin(2 * np.pi * (t / 24 + rng.random())))
        cols[wid] = np.maximum(0, prof * (1 + 0.1 * rng.standard_normal(hours)))
    return fleet, workloads, pd.DataFrame(cols)


def one(size: str, blocks: int, solver: str, time_limit: float | None = None, *, group: bool = True) -> dict:
    n_w, n_s, hours = (int(x) for x in size.split("x"))
    t0 = time.perf_counter()
    fleet, workloads, demand = generate(n_w, n_s, hours)
    gen = time.perf_counter() - t0
    full = blocks >= hours
    t1 = time.perf_counter()
    out = plan_demand(
        fleet,
        workloads,
        demand,
        n_blocks=blocks,
        solver=solver,
        duals=not full,  # end to end as `finops plan` (duals included); the reference needs only its optimum
        time_limit=time_limit,
        gap=1e-4,
        allow_unserved=True,
        group=group,
    )
    total = time.perf_counter() - t1
    s = out.solution.solve
    return {
        "size": size,
        "blocks": out.frame.blocks.n,
        "variables": len(out.frame.rows),
        "groups": len(out.frame.groups),
        "generate_s": round(gen, 2),
        "build_s": round(out.build_seconds, 2),
        "solve_s": round(s.seconds, 2),
        "duals_s": round(out.solution.dual_solve.seconds, 2) if out.solution.dual_solve else 0.0,
        "total_s": round(total, 2),
        "status": s.status,
        "objective": s.objective,
        "best_bound": s.best_bound,
        "planned_cost": out.solution.planned_cost,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "solver": s.name,
    }


def _run(size: str, blocks: int, solver: str, time_limit: float | None) -> dict | None:
    cmd = [sys.executable, __file__, "--one", size, "--blocks", str(blocks), "--solver", solver]
    if time_limit:
        cmd += ["--time-limit", str(time_limit)]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=(time_limit or 600) * 3 + 120)
    except subprocess.TimeoutExpired:
        return None
    if res.returncode != 0:
        print(res.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10x10x24,50x20x168,200x40x720")
    p.add_argument("--blocks", type=int, default=48)
    p.add_argument("--solver", default="cbc")
    p.add_argument("--one")
    p.add_argument("--time-limit", type=float)
    p.add_argument("--full-limit", type=float, default=300.0)
    p.add_argument("--no-group", action="store_true", help="do not group identical workloads (--one only)")
    args = p.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.blocks, args.solver, time_limit=args.time_limit, group=not args.no_group)))
        return
    print(
        "| size W×S×H | blocks | variables (groups) | build s | solve s | duals s | end-to-end s | peak RSS MB | "
        "objective | full-resolution objective | error |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for size in args.sizes.split(","):
        r = _run(size, args.blocks, args.solver, None)
        hours = int(size.split("x")[2])
        f = _run(size, hours, args.solver, args.full_limit) if hours > args.blocks else r
        if r is None:
            print(f"| {size} | failed |")
            continue
        if f is None:
            ref, err = "out of reach", "—"
        else:
            ref_val = f["objective"]
            ref = f"{ref_val:,.2f} ({f['status']}, {f['total_s']} s, bound {f['best_bound']:,.2f})"
            err = f"{(ref_val - r['objective']) / ref_val:.4%}"
        print(
            f"| {size} | {r['blocks']} | {r['variables']:,} ({r['groups']}) | {r['build_s']} | {r['solve_s']} | "
            f"{r['duals_s']} | "
            f"{r['total_s']} | {r['peak_rss_mb']} | {r['objective']:,.2f} | {ref} | {err} |",
            flush=True,
        )


if __name__ == "__main__":
    main()

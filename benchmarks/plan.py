"""Planner benchmark: generated estates, model-build and solve time, peak RSS, cost vs full resolution.

Usage::

    python benchmarks/plan.py                       # the three sizes of issue #5
    python benchmarks/plan.py --sizes 10x10x24 --blocks 48 --solver highs
    python benchmarks/plan.py --one 200x40x720 --blocks 48        # one run in this process (JSON line)

Each run happens in its own subprocess so peak RSS is per run. For every size the plan is built on
``--blocks`` load-duration blocks (the default of ``finops plan``) and compared with the same model at
full resolution (one block per hour). Because load-duration blocks relax the hourly model, the block
optimum is a lower bound of the full-resolution optimum; the reported error is
``(full − blocks) / full``. Because a full-resolution MILP of a month is out of reach for CBC in minutes,
every size is also certified by a decomposition: the block plan's commitments are fixed and each
block's hours are planned hourly as an independent LP (deferrable work keeps its per-block units); that
feasible hourly plan's cost is an upper bound (UB) of the full-resolution optimum and the block objective
a lower bound (LB), so the block plan is within (UB − LB)/UB of it. The full-resolution MILP itself is
solved up to ``--full-max-hours``.

Generated estates: ``S`` substrates over 3 accelerators, 2 jurisdictions and all kinds (owned,
reserved incl. ≤ 4 purchasable, spot, on-demand, 2 APIs); ``W`` workloads drawn from 16 archetypes
(requirements + throughput table of a model family), each with its own diurnal demand profile
(random phase/amplitude/noise); about a third deferrable.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd
from results import add_json_option, write_json

from finops_cli.planner import plan_demand
from finops_cli.planner.solve import NODES_GAP
from finops_cli.schema.estate import Fleet, Workload

ACCS = ["H100", "A100", "L4"]


def generate(
    n_w: int,
    n_s: int,
    hours: int,
    seed: int = 7,
    *,
    gpus_per_node: float | None = None,
    distinct: bool = False,
) -> tuple[Fleet, list[Workload], pd.DataFrame]:
    """A random estate; ``gpus_per_node`` (default none) is set on spot and on-demand substrates only.

    ``distinct``: every workload draws its own throughput table, jurisdictions, unit and deferrability (no
    two workloads price alike, so grouping cannot merge them: a real estate's every team, model and SLO).
    """
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
        if gpus_per_node is not None and kind in ("spot", "on_demand"):
            s["gpus_per_node"] = gpus_per_node
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
        thr, juris, unit, deferrable = archetypes[j % 16] if not distinct else _distinct_archetype(rng, j)
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


def _distinct_archetype(rng: np.random.Generator, j: int) -> tuple[dict, list[str], str, bool]:
    """One workload's own throughput table (4 significant digits), jurisdictions, unit and deferrability."""
    thr = {"H100": 1.0, "A100": round(0.35 + 0.3 * rng.random(), 4)}
    if rng.random() < 0.35:
        thr["L4"] = round(0.1 + 0.15 * rng.random(), 4)
    juris = ["US"] if rng.random() < 0.6 else ["US", "EU"]
    return thr, juris, "tok" if j % 2 else "gpuh", bool(rng.random() < 0.3)


def one(
    size: str,
    blocks: int | None,
    solver: str,
    time_limit: float | None = None,
    *,
    group: bool = True,
    bound: bool = False,
    nodes: bool = False,
    distinct: bool = False,
) -> dict:
    n_w, n_s, hours = (int(x) for x in size.split("x"))
    t0 = time.perf_counter()
    fleet, workloads, demand = generate(n_w, n_s, hours, gpus_per_node=8.0 if nodes else None, distinct=distinct)
    gen = time.perf_counter() - t0
    full = blocks is not None and blocks >= hours
    t1 = time.perf_counter()
    cpu1 = time.process_time()
    out = plan_demand(
        fleet,
        workloads,
        demand,
        n_blocks=blocks,
        solver=solver,
        duals=not full,  # end to end as `finops plan` (duals included); the reference needs only its optimum
        time_limit=time_limit,
        gap=NODES_GAP if nodes else 1e-4,
        allow_unserved=True,
        group=group,
        integer_nodes=nodes,
        certify_plan=not full,
    )
    total = time.perf_counter() - t1
    cpu = time.process_time() - cpu1
    s = out.solution.solve
    cert = out.certificate
    extra = hourly_upper_bound(fleet, workloads, demand, out, solver) if bound else {}
    return {
        **extra,
        "size": size,
        "distinct": distinct,
        "blocks": out.frame.blocks.n,
        "variables": len(out.frame.rows),
        "groups": len(out.frame.groups),
        "generate_s": round(gen, 2),
        "build_s": round(out.build_seconds, 2),
        "solve_s": round(s.seconds, 2),
        # the LP relaxation came out whole: its duals are the plan's, no re-solve (dual_solve *is* the solve)
        "duals_s": round(out.solution.dual_solve.seconds, 2)
        if out.solution.dual_solve is not None and out.solution.dual_solve is not s
        else 0.0,
        "total_s": round(total, 2),
        "cpu_s": round(cpu, 2),
        "status": s.status,
        "objective": s.objective,
        "best_bound": s.best_bound,
        "planned_cost": out.solution.planned_cost,
        **(
            {
                "lower_bound": cert.lower_bound,
                "upper_bound_cert": cert.upper_bound,
                "certified_gap": cert.gap,
                "rounds": cert.rounds,
                "repaired_hours": len(cert.repaired_hours),
                "lp_hours": cert.lp_hours,
                "certify_s": round(cert.seconds, 2),
            }
            if cert is not None
            else {}
        ),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "load_average": round(os.getloadavg()[0], 1),
        "solver": s.name,
        "mip_gap": s.mip_gap,
        **({"node_hours": float(out.solution.nodes["node_hours"].sum())} if nodes else {}),
        **({"node_rounding_cost": out.solution.node_rounding_cost} if nodes else {}),
    }


def hourly_upper_bound(fleet: Fleet, workloads: list[Workload], demand: pd.DataFrame, out, solver: str) -> dict:
    """Cost of a feasible *hourly* plan built from the block plan: the per-block LP decomposition.

    The block plan's commitments are fixed (bought capacity becomes installed GPUs) and each deferrable
    workload keeps the units the block plan gave each block; then every block's hours are planned at full
    resolution as an independent LP (one LP per block). Its objective is an upper bound of the
    full-resolution optimum, while the block objective is a lower bound, so (UB − LB)/UB bounds the error.
    """
    sol, frame = out.solution, out.frame
    bought = {r.substrate: r.blocks for r in sol.commitments.itertuples()}
    subs = []
    for sub in fleet.substrates:
        if sub.purchasable is not None:
            gpus = (sub.gpus or 0.0) + bought.get(sub.id, 0) * sub.purchasable.block_gpus
            sub = sub.model_copy(update={"gpus": gpus, "purchasable": None})
        subs.append(sub)
    fixed = fleet.model_copy(update={"substrates": subs})
    deferrable = {w.id for w in workloads if w.deferrable}
    usage = sol.usage
    units_wb = usage[usage["workload"].isin(deferrable)].groupby(["workload", "block"])["units"].sum()
    total = sol.commitment_cost
    t0 = time.perf_counter()
    unserved = 0.0
    for b in range(frame.blocks.n):
        hours = np.flatnonzero(frame.blocks.hour_block == b)
        sub_demand = demand.iloc[hours].reset_index(drop=True).copy()
        for w in deferrable:
            sub_demand[w] = float(units_wb.get((w, b), 0.0)) / len(hours)
        part = plan_demand(
            fixed,
            workloads,
            sub_demand,
            n_blocks=len(hours),
            solver=solver,
            duals=False,
            gap=1e-6,
            allow_unserved=True,
            certify_plan=False,
        )
        total += part.solution.solve.objective
        unserved += float(part.solution.unserved["units"].sum()) if len(part.solution.unserved) else 0.0
    return {"upper_bound": total, "seconds": round(time.perf_counter() - t0, 1), "unserved_units": unserved}


def _run(size: str, blocks: int | None, solver: str, time_limit: float | None, *extra: str) -> dict | None:
    cmd = [sys.executable, __file__, "--one", size, "--solver", solver, *extra]
    if blocks is not None:
        cmd += ["--blocks", str(blocks)]
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
    p.add_argument(
        "--blocks", type=int, default=None, help="default: the plan's own (48, fewer above its column budget)"
    )
    p.add_argument("--solver", default="highs")
    p.add_argument("--one")
    p.add_argument("--time-limit", type=float)
    p.add_argument("--full-limit", type=float, default=300.0, help="time limit of the full-resolution reference")
    p.add_argument("--full-max-hours", type=int, default=168, help="solve the full-resolution MILP up to this H")
    p.add_argument("--no-group", action="store_true", help="do not group identical workloads (--one only)")
    p.add_argument(
        "--distinct", action="store_true", help="every workload its own throughputs/jurisdictions (nothing groups)"
    )
    p.add_argument("--bound", action="store_true", help="also certify with the hourly decomposition (--one only)")
    p.add_argument(
        "--nodes", action="store_true", help="8-GPU nodes on spot/on-demand, integer_nodes=True, gap 1e-3 (--one only)"
    )
    add_json_option(p)
    args = p.parse_args()
    if args.nodes and (not args.one or args.bound):
        p.error("--nodes needs --one (and not --bound: the hourly decomposition is an LP without nodes)")
    if args.one:
        result = one(
            args.one,
            args.blocks,
            args.solver,
            time_limit=args.time_limit,
            group=not args.no_group,
            bound=args.bound,
            nodes=args.nodes,
            distinct=args.distinct,
        )
        print(json.dumps(result))
        return
    print(
        "| size W×S×H | blocks | variables (groups) | build s | solve s | duals s | end-to-end s | peak RSS MB "
        "| block objective (LB) | hourly plan (UB) | certified error | full-resolution MILP |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    results: list[dict] = []
    for size in args.sizes.split(","):
        hours = int(size.split("x")[2])
        r = _run(size, args.blocks, args.solver, None, "--bound")
        if r is None:
            print(f"| {size} | failed |")
            continue
        full = "not run"
        if hours <= args.full_max_hours:
            f = _run(size, hours, args.solver, args.full_limit)
            full = "out of reach" if f is None else f"{f['objective']:,.2f} ({f['status']}, {f['total_s']} s)"
        lb, ub = r["objective"], r["upper_bound"]
        results.append({"size": size, **r, "certified_error": (ub - lb) / ub, "full_resolution": full})
        print(
            f"| {size} | {r['blocks']} | {r['variables']:,} ({r['groups']}) | {r['build_s']} | {r['solve_s']} | "
            f"{r['duals_s']} | {r['total_s']} | {r['peak_rss_mb']} | {lb:,.2f} | {ub:,.2f} ({r['seconds']} s) | "
            f"{(ub - lb) / ub:.4%} | {full} |",
            flush=True,
        )
    write_json(args.json, "plan", results)


if __name__ == "__main__":
    main()

"""Report and gate benchmark: time `finops report` on the sample plan and `finops gate` on large plans.

Usage::

    python benchmarks/report_gate.py                     # allocations 1k, 10k, 100k
    python benchmarks/report_gate.py --sizes 1000 50000

Report: markdown + three charts from ``tests/report/golden/sample-plan.json`` (the sample estate's real plan),
into a temp directory (the supply curve needs the store, so it is left out). Gate: two synthetic plans with N
allocations each (N/4 workloads × 4 kinds), evaluate + every renderer; the GitHub comment must stay under
65,536 characters. Times are wall seconds of one run.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from results import add_json_option, write_json

from finops_cli import api
from finops_cli.report.gate import GITHUB_COMMENT_LIMIT, Thresholds, evaluate, parse_plan, render
from finops_cli.report.metrics import ReportInputs
from finops_cli.report.write import write_report

REPO = Path(__file__).resolve().parents[1]
KINDS = ["owned", "reserved", "spot", "on_demand"]


def synthetic_plan(n: int, seed: int, scale: float = 1.0) -> dict:
    rng = random.Random(seed)
    allocations = []
    for i in range(n):
        cost = rng.uniform(10, 5_000) * scale
        allocations.append(
            {
                "workload": f"team-{i // 400:03d}/workload-{i // 4:06d}",
                "substrate": f"{KINDS[i % 4]}-{i % 37}",
                "kind": KINDS[i % 4],
                "gpu_hours": cost / 3,
                "units": cost / 3,
                "cost": cost,
            }
        )
    planned = sum(a["cost"] for a in allocations)
    return {
        "schema_version": 1,
        "currency": "USD",
        "horizon": {"start": "2026-10-01T00:00:00Z", "hours": 744, "blocks": 48},
        "solver": {"name": "cbc", "status": "optimal", "objective": planned, "mip_gap": 0.0, "seconds": 1.0},
        "totals": {
            "planned_cost": planned,
            "baseline_cost": None,
            "savings": None,
            "savings_pct": None,
            "sunk_cost": 0,
        },
        "allocations": allocations,
        "commitments": [],
        "unserved": [],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    add_json_option(ap)
    args = ap.parse_args()
    results: list[dict] = []

    plan = parse_plan(json.loads((REPO / "tests" / "report" / "golden" / "sample-plan.json").read_text()))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        result = write_report(ReportInputs(plan=plan), Path(tmp) / "report.md")
        seconds = time.perf_counter() - t0
        charts = len(result.chart_paths)
        print(f"report (sample plan, no store: {charts} charts): {seconds:.2f} s, {len(result.markdown):,} chars")
        results.append({"what": "report, sample plan, no store", "charts": charts, "seconds": seconds})
        t0 = time.perf_counter()
        api.report(plan, store=Path(tmp) / "no-store", out_path=Path(tmp) / "api.md")
        print(f"api.report (same, store lookup included): {time.perf_counter() - t0:.2f} s")

    print("| allocations | read+validate s | evaluate s | github+json+markdown s | comment chars | rows kept |")
    print("|--:|--:|--:|--:|--:|--:|")
    for n in args.sizes:
        base_doc, head_doc = synthetic_plan(n, 1), synthetic_plan(n, 2, 1.05)
        t0 = time.perf_counter()
        base, head = parse_plan(json.loads(json.dumps(base_doc))), parse_plan(json.loads(json.dumps(head_doc)))
        t_read = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = evaluate(head, base, Thresholds(max_increase_pct=3, max_spot_share=0.5))
        t_eval = time.perf_counter() - t0
        t0 = time.perf_counter()
        comment = render(res, "github")
        render(res, "json")
        render(res, "markdown")
        t_render = time.perf_counter() - t0
        assert len(comment) < GITHUB_COMMENT_LIMIT
        kept = sum(1 for line in comment.splitlines() if line.startswith("| team-"))
        cells = [f"{n:,}", f"{t_read:.2f}", f"{t_eval:.2f}", f"{t_render:.2f}", f"{len(comment):,}"]
        print("| " + " | ".join([*cells, f"{kept:,} of {len(res.breakdown):,}"]) + " |")
        results.append({"allocations": n, "read_s": t_read, "evaluate_s": t_eval, "render_s": t_render})
    write_json(args.json, "report_gate", results)


if __name__ == "__main__":
    main()

"""Plan documents built in tests (valid ``PlanDocument``s), so report and gate do not depend on the planner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from finops_cli.planner.levers import LEVER_LABELS, LEVER_ORDER
from finops_cli.schema.plan import PlanDocument

#: (workload, substrate, kind, gpu_hours, units, cost)
BASE_ALLOCATIONS = [
    ("pretrain-70b", "onprem-h100", "owned", 40_000.0, 40_000.0, 14_000.0),
    ("pretrain-70b", "aws-p5-spot-use1", "spot", 10_000.0, 10_000.0, 41_000.0),
    ("chat-serving", "cw-reserved-h100", "reserved", 30_000.0, 1_200_000.0, 0.0),
    ("chat-serving", "aws-p5-od-use1", "on_demand", 2_000.0, 80_000.0, 19_700.0),
    ("finetune-eu", "onprem-a100-eu", "owned", 12_000.0, 5_400.0, 3_600.0),
    ("batch-eval", "frontier-api", "api", 0.0, 300.0, 4_500.0),
]


#: baseline cost ÷ planned cost per substrate kind in the default documents (the old mix was dearer on demand)
BASELINE_FACTOR = {"owned": 1.0, "reserved": 1.0, "spot": 0.4, "on_demand": 4.0, "api": 2.5}
#: the fixture's stand-in attribution: each kind's saving credited to one lever (a real plan re-solves)
LEVER_OF_KIND = {
    "owned": "right_sizing",
    "on_demand": "right_sizing",
    "spot": "spot",
    "reserved": "commitments",
    "api": "api",
}


def make_plan(
    allocations: list[tuple[str, str, str, float, float, float]] | None = None,
    *,
    currency: str = "USD",
    hours: int = 744,
    start: str = "2026-10-01T00:00:00Z",
    commitments: list[dict[str, Any]] | None = None,
    sunk: float = 107_520.0,
    sunk_substrate: str = "cw-reserved-h100",
    baseline_cost: float | None = "derived",  # type: ignore[assignment]
    unserved: list[dict[str, Any]] | None = None,
    status: str = "Optimal",
    planner_extras: bool = True,
) -> dict[str, Any]:
    """A plan JSON document shaped like the planner's: ``planned_cost`` = Σ allocation + Σ commitment + sunk.

    With ``planner_extras`` it carries what ``finops plan`` adds (``by_substrate``, ``cost_change_by_kind``,
    ``savings_by_lever``, ``baseline_source``, per-allocation ``netc_overhead``), consistent with the totals:
    the baseline per
    substrate is the planned cost × :data:`BASELINE_FACTOR` of its kind (``baseline_cost="derived"``) and
    each kind's saving is credited to one lever (:data:`LEVER_OF_KIND`).
    """
    allocations = BASE_ALLOCATIONS if allocations is None else allocations
    commitments = (
        [{"substrate": "cw-new-reserved-h100", "blocks": 1, "gpus": 64, "cost": 99_993.6}]
        if commitments is None
        else commitments
    )
    kind_of = {s: k for _, s, k, *_ in allocations} | {c["substrate"]: "reserved" for c in commitments}
    kind_of.setdefault(sunk_substrate, "reserved")
    planned_by_s: dict[str, float] = {}
    for _, s, _, _, _, c in allocations:
        planned_by_s[s] = planned_by_s.get(s, 0.0) + c
    for c in commitments:
        planned_by_s[c["substrate"]] = planned_by_s.get(c["substrate"], 0.0) + c["cost"]
    if sunk:
        planned_by_s[sunk_substrate] = planned_by_s.get(sunk_substrate, 0.0) + sunk
    planned = sum(a[5] for a in allocations) + sum(c["cost"] for c in commitments) + sunk
    base_by_s = {s: v * BASELINE_FACTOR[kind_of[s]] for s, v in planned_by_s.items()}
    if baseline_cost == "derived":
        baseline_cost = sum(base_by_s.values())
    elif baseline_cost is not None and sum(base_by_s.values()) > 0:
        scale = baseline_cost / sum(base_by_s.values())
        base_by_s = {s: v * scale for s, v in base_by_s.items()}
    savings = None if baseline_cost is None else baseline_cost - planned
    doc: dict[str, Any] = {
        "schema_version": 1,
        "currency": currency,
        "horizon": {"start": start, "hours": hours, "blocks": 24},
        "solver": {"name": "cbc", "status": status, "objective": planned - sunk, "mip_gap": 0.0004, "seconds": 1.7},
        "totals": {
            "planned_cost": planned,
            "baseline_cost": baseline_cost,
            "savings": savings,
            "savings_pct": None if savings is None or not baseline_cost else 100 * savings / baseline_cost,
            "sunk_cost": sunk,
        },
        "allocations": [
            {"workload": w, "substrate": s, "kind": k, "gpu_hours": g, "units": u, "cost": c}
            for w, s, k, g, u, c in allocations
        ],
        "commitments": commitments,
        "unserved": unserved or [],
    }
    if planner_extras:
        for a in doc["allocations"]:
            a["netc_overhead"] = round(a["cost"] * 0.04, 4) if a["kind"] == "spot" else 0.0
        doc["totals"]["baseline_source"] = "billing" if baseline_cost is not None else None
        doc["totals"]["netc_overhead"] = sum(a["netc_overhead"] for a in doc["allocations"])
        doc["by_substrate"] = [
            {
                "substrate": s,
                "kind": kind_of[s],
                "planned_cost": planned_by_s[s],
                "baseline_cost": None if baseline_cost is None else base_by_s[s],
            }
            for s in sorted(planned_by_s)
        ]
        if baseline_cost is not None:
            change: dict[str, float] = {}
            levers = dict.fromkeys(LEVER_ORDER, 0.0)
            for s, v in planned_by_s.items():
                change[kind_of[s]] = change.get(kind_of[s], 0.0) + v - base_by_s[s]
                levers[LEVER_OF_KIND[kind_of[s]]] += base_by_s[s] - v
            doc["cost_change_by_kind"] = change
            doc["savings_by_lever"] = {
                "method": "shapley",
                "levers": [
                    {"lever": k, "label": LEVER_LABELS[k], "saving": v, "applied": bool(v),
                     "evidence": ("measured" if k == "right_sizing" else "modelled") if v else "not_applied",
                     "basis": "fixture"}
                    for k, v in levers.items()
                ],
                "residual": 0.0,
                "residual_basis": "fixture",
                "model_baseline_cost": baseline_cost,
                "solves": 7,
                "seconds": 0.5,
            }  # fmt: skip
        doc["clearing_prices"] = [
            {"workload": w, "block": -1, "hours": float(hours), "price_per_unit": round(c / u, 6)}
            for w, _, _, _, u, c in allocations
            if u
        ][:3]
    PlanDocument.model_validate(doc)  # the factory only builds valid documents
    return doc


def write_plan(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.fixture
def base_plan() -> dict[str, Any]:
    return make_plan()


@pytest.fixture
def plan_factory():
    return make_plan

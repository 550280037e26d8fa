"""Plan documents built in tests (valid ``PlanDocument``s), so report and gate do not depend on the planner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

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


def make_plan(
    allocations: list[tuple[str, str, str, float, float, float]] | None = None,
    *,
    currency: str = "USD",
    hours: int = 744,
    start: str = "2026-10-01T00:00:00Z",
    commitments: list[dict[str, Any]] | None = None,
    sunk: float = 107_520.0,
    baseline_cost: float | None = 260_000.0,
    unserved: list[dict[str, Any]] | None = None,
    status: str = "Optimal",
    extra_totals: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A plan JSON document; ``planned_cost`` = Σ allocation cost + Σ commitment cost + sunk."""
    allocations = BASE_ALLOCATIONS if allocations is None else allocations
    commitments = (
        [{"substrate": "cw-new-reserved-h100", "blocks": 1, "gpus": 64, "cost": 99_993.6}]
        if commitments is None
        else commitments
    )
    planned = sum(a[5] for a in allocations) + sum(c["cost"] for c in commitments) + sunk
    savings = None if baseline_cost is None else baseline_cost - planned
    doc = {
        "schema_version": 1,
        "currency": currency,
        "horizon": {"start": start, "hours": hours, "blocks": 24},
        "solver": {"name": "cbc", "status": status, "objective": planned - sunk, "mip_gap": 0.0004, "seconds": 1.7},
        "totals": {
            "planned_cost": planned,
            "baseline_cost": baseline_cost,
            "savings": savings,
            "savings_pct": None if savings is None else 100 * savings / baseline_cost,
            "sunk_cost": sunk,
            **(extra_totals or {}),
        },
        "allocations": [
            {"workload": w, "substrate": s, "kind": k, "gpu_hours": g, "units": u, "cost": c}
            for w, s, k, g, u, c in allocations
        ],
        "commitments": commitments,
        "unserved": unserved or [],
    }
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

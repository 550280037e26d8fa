"""The sample estate (Kestrel AI, October 2026) plans cleanly: invariants, and the default blocks are accurate."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from finops_cli import api
from finops_cli.core.compliance import exclusion_reasons
from finops_cli.estate.demand_io import estate_demand_sources

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture(scope="module")
def sample_estate():
    est = api.estate(SAMPLES / "fleet.yaml", SAMPLES / "workloads.yaml")
    # the sample prices one spot pool from the spot-price store; pin it so no store is needed here
    subs = [
        s.model_copy(update={"price_feed": None, "price_per_gpu_hour": 4.2}) if s.price_feed else s
        for s in est.fleet.substrates
    ]
    return replace(est, fleet=est.fleet.model_copy(update={"substrates": subs}))


def test_sample_plan_invariants_and_block_accuracy(sample_estate):
    est = sample_estate
    plan = api.plan(est, None, horizon="2026-10")
    doc = plan.document
    assert doc.horizon.hours == 744 and doc.solver.status == "optimal" and not doc.unserved
    # every workload's demand is served in full, only on compliant substrates
    demand = estate_demand_sources(est, plan.horizon)[0]
    by_w = {w.id: w for w in est.workloads.workloads}
    served: dict[str, float] = {}
    for a in doc.allocations:
        assert exclusion_reasons(by_w[a.workload], est.fleet.substrate(a.substrate)) == []
        served[a.workload] = served.get(a.workload, 0.0) + a.units
    for wid, w_served in served.items():
        assert w_served == pytest.approx(float(demand[wid].sum()), rel=1e-6)
    assert set(served) == set(by_w)
    t = doc.totals
    assert t.planned_cost <= t.merit_order_cost + 1e-6
    assert t.planned_cost == pytest.approx(t.usage_cost + t.commitment_cost + t.sunk_cost, abs=0.05)
    # the default blocks stay within 0.1 % of a twice-as-fine model (docs/planner.md: of the hourly one too)
    finer = api.plan(est, None, horizon="2026-10", blocks=96)
    assert doc.solver.objective == pytest.approx(finer.document.solver.objective, rel=1e-3)


def test_sample_duals_unchanged_by_the_warm_re_solve(sample_estate):
    """Clearing prices from HiGHS's warm re-solve equal the previous method's (PuLP + CBC, the commitments
    fixed, the LP re-solved from scratch) within 1e-6 on the sample estate."""
    from dataclasses import replace

    from finops_cli.estate.demand_io import estate_demand_sources as demand_of
    from finops_cli.planner import plan_demand

    priced = api.price(sample_estate, None, horizon="2026-10", default_store=False)
    est = replace(sample_estate, fleet=priced.fleet)
    d = demand_of(est, priced.horizon)[0]
    ws = list(est.workloads.workloads)
    kw = {"n_blocks": 48, "certify_plan": False}
    warm = plan_demand(est.fleet, ws, d, solver="highs", **kw).solution
    cold = plan_demand(est.fleet, ws, d, solver="cbc", **kw).solution
    assert warm.dual_solve is not None and warm.dual_solve.status == "optimal"
    assert warm.commitments["blocks"].tolist() == cold.commitments["blocks"].tolist()
    key = ["workload", "block"]
    a = warm.clearing_prices.sort_values(key, ignore_index=True)
    b = cold.clearing_prices.sort_values(key, ignore_index=True)
    assert a[key].equals(b[key]) and len(a) > 100
    np.testing.assert_allclose(a["usd_per_unit"], b["usd_per_unit"], rtol=1e-6, atol=1e-6)

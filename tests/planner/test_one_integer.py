"""One integer column is solved by two warm LPs (floor and ceil of the relaxation): the MILP's optimum, exactly."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from planner_helpers import demand, fleet, workload

from finops_cli.planner import highs, plan_demand


def _reserve_and_od(block_gpus: int, reserved_price: float, od_price: float, max_blocks: int = 3):
    return fleet(
        {
            "id": "res",
            "kind": "reserved",
            "gpus": 0,
            "purchasable": {"block_gpus": block_gpus, "price_per_gpu_hour": reserved_price, "max_blocks": max_blocks},
        },
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": od_price},
    )


@pytest.fixture
def rounding_calls(monkeypatch: pytest.MonkeyPatch) -> list[highs.HighsRun | None]:
    """Every result of the two-LP rounding in this test (None: it gave up and the MILP ran)."""
    calls: list[highs.HighsRun | None] = []
    original = highs._round_one_integer

    def spy(*args, **kwargs):
        calls.append(original(*args, **kwargs))
        return calls[-1]

    monkeypatch.setattr(highs, "_round_one_integer", spy)
    return calls


@pytest.mark.parametrize(
    ("need", "blocks", "cost_per_hour"),
    [
        (5, 1, 4 * 1.0 + 1 * 2.0),  # relaxation 1.25 blocks: floor (one block + 1 GPU on demand) is cheaper
        (7, 2, 8 * 1.0),  # relaxation 1.75: ceil (two blocks, one GPU idle) beats one block + 3 GPUs on demand
        (6, 1, 4 * 1.0 + 2 * 2.0),  # relaxation 1.5: a tie (8 either way) goes to fewer committed blocks
    ],
)
def test_floor_or_ceil_of_the_relaxation_whichever_is_cheaper(rounding_calls, need, blocks, cost_per_hour):
    out = plan_demand(_reserve_and_od(4, 1.0, 2.0), [workload("a")], demand(a=[need] * 6), n_blocks=1, solver="highs")
    assert len(rounding_calls) == 1 and rounding_calls[0] is not None  # no branch and bound ran
    c = out.solution.commitments
    assert int(c.loc[c["substrate"] == "res", "blocks"].iloc[0]) == blocks
    assert out.solution.planned_cost == pytest.approx(6 * cost_per_hour)
    # the row duals come from the LP with the integer fixed: the marginal unit is on demand (2.0) or, with a
    # committed GPU idle, free at the margin (0.0)
    assert out.solution.dual_solve is not None and out.solution.dual_solve.status == "optimal"
    assert out.solution.clearing_prices["usd_per_unit"].tolist() == pytest.approx(
        [2.0 if need - 4 * blocks > 0 else 0.0]
    )


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    block_gpus=st.integers(1, 6),
    reserved_price=st.floats(0.2, 3.0),
    od_price=st.floats(0.5, 4.0),
    hours=st.lists(st.floats(0.0, 20.0), min_size=1, max_size=6),
    n_blocks=st.integers(1, 3),
)
def test_the_rounding_is_the_milp_optimum(block_gpus, reserved_price, od_price, hours, n_blocks):
    est = _reserve_and_od(block_gpus, reserved_price, od_price), [workload("a")], demand(a=hours)
    rounded = plan_demand(*est, n_blocks=n_blocks, solver="highs", gap=0.0, certify_plan=False)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(highs, "_round_one_integer", lambda *a, **k: None)  # the branch and bound, as before
        milp = plan_demand(*est, n_blocks=n_blocks, solver="highs", gap=0.0, certify_plan=False)
    cbc = plan_demand(*est, n_blocks=n_blocks, solver="cbc", gap=0.0, certify_plan=False)
    for other in (milp, cbc):
        assert rounded.solution.planned_cost == pytest.approx(other.solution.planned_cost, rel=1e-7, abs=1e-6)

"""Savings by lever (finops_cli.planner.levers): estates built so the true lever is known, and the terms always
add up to the saving (Shapley and ordered), to the cent in the document."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from finops_cli.planner import levers as lv
from finops_cli.planner import plan_demand
from finops_cli.planner.document import cents, lever_document
from tests.hypothesis_budget import examples
from tests.planner.planner_helpers import demand, fleet, workload

HOURS = 24
OD = {"id": "od", "kind": "on_demand", "price_per_gpu_hour": 4.0}
SPOT = {"id": "spot", "kind": "spot", "gpus": 10, "price_per_gpu_hour": 2.0, "interruptions_per_hour": 0.001}
RESERVED = {
    "id": "new-reserved",
    "kind": "reserved",
    "gpus": 0,
    "purchasable": {"block_gpus": 10, "price_per_gpu_hour": 1.0, "max_blocks": 2},
}


def _attribute(subs, billed_cost, billed_hours, measured=None, rate=5.0, method="auto"):
    fl = fleet(*subs)
    w = workload("train", interruptible=True, checkpoint={"interval_minutes": 30, "write_minutes": 0.5})
    d = demand(train=[rate] * HOURS)
    out = plan_demand(fl, [w], d, n_blocks=4)
    allocs = out.solution.allocations
    plan_hours = float(allocs.loc[allocs["kind"] != "api", "gpu_hours"].sum())
    use = lv.billing_use(pd.Series(billed_cost), pd.Series(billed_hours), fl, plan_hours, measured)
    baseline = sum(billed_cost.values())
    return lv.attribute_savings(out, fl, [w], d, use, baseline, method=method), out


def _terms(attr: lv.LeverAttribution) -> dict[str, float]:
    return {t.lever: t.saving for t in attr.terms}


def _adds_up(attr: lv.LeverAttribution) -> None:
    assert attr.residual + sum(t.saving for t in attr.terms) == pytest.approx(attr.savings, abs=1e-6)


def test_moving_work_from_on_demand_to_spot_is_the_spot_lever() -> None:
    """The issue's drafted estate: the bill's on-demand hours are the demand (nothing idle), one spot pool is new.
    Per kind that reads "on-demand −480, spot +…"; by lever all of it is spot."""
    attr, _ = _attribute([OD, SPOT], {"od": 480.0}, {"od": 120.0})
    terms = _terms(attr)
    assert attr.savings > 100
    assert terms["spot"] >= 0.99 * attr.savings
    assert terms["right_sizing"] == 0.0  # demand = billed hours: nothing to right-size
    assert abs(attr.residual) <= 0.01 * attr.savings
    _adds_up(attr)


def test_paying_for_needed_hours_instead_of_idle_instance_hours_is_right_sizing() -> None:
    """240 GPU-hours billed, half of them idle (measured): the plan pays the 120 the demand needs."""
    attr, _ = _attribute([OD], {"od": 960.0}, {"od": 240.0}, measured={"od": 0.5})
    terms = _terms(attr)
    assert attr.savings == pytest.approx(480.0)
    assert terms["right_sizing"] >= 0.99 * attr.savings
    rs = attr.terms[0]
    assert rs.evidence == "measured" and rs.measured_share == 1.0
    _adds_up(attr)


def test_idle_without_utilisation_is_inferred_and_says_so() -> None:
    attr, _ = _attribute([OD], {"od": 960.0}, {"od": 240.0})
    rs = attr.terms[0]
    assert rs.evidence == "inferred" and rs.measured_share == 0.0
    assert "inferred from demand profiles" in rs.basis
    assert rs.saving >= 0.99 * attr.savings


def test_buying_a_commitment_is_the_commitment_lever() -> None:
    attr, out = _attribute([OD, RESERVED], {"od": 960.0}, {"od": 240.0}, rate=10.0)
    assert int(out.solution.commitments["blocks"].sum()) == 1
    terms = _terms(attr)
    assert terms["commitments"] >= 0.99 * attr.savings
    _adds_up(attr)


def test_a_lever_the_plan_does_not_pull_saves_nothing() -> None:
    """The plan buys no commitment (spot is cheaper): commitments are off in every coalition, 0 exactly."""
    expensive = {**RESERVED, "purchasable": {"block_gpus": 10, "price_per_gpu_hour": 3.9, "max_blocks": 2}}
    attr, out = _attribute([OD, SPOT, expensive], {"od": 480.0}, {"od": 120.0})
    assert out.solution.commitments["blocks"].sum() == 0
    term = next(t for t in attr.terms if t.lever == "commitments")
    assert term.saving == 0.0 and not term.applied and term.evidence == "not_applied"
    _adds_up(attr)


def test_ordered_method_adds_up_and_agrees_on_a_pure_estate() -> None:
    shapley, _ = _attribute([OD, SPOT], {"od": 960.0}, {"od": 240.0}, measured={"od": 0.5})
    ordered, _ = _attribute([OD, SPOT], {"od": 960.0}, {"od": 240.0}, measured={"od": 0.5}, method="ordered")
    assert shapley.method == "shapley" and ordered.method == "ordered"
    assert ordered.order == ("right_sizing", "spot")
    assert shapley.solves == 3 and ordered.solves == 2
    _adds_up(shapley)
    _adds_up(ordered)
    # two levers interacting: both methods split the same total; Shapley halves the interaction
    assert sum(_terms(shapley).values()) == pytest.approx(sum(_terms(ordered).values()), abs=1e-6)


def test_auto_falls_back_to_the_ordered_method_above_the_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lv, "SHAPLEY_MAX_COLUMNS", 0)
    attr, _ = _attribute([OD, SPOT], {"od": 960.0}, {"od": 240.0}, measured={"od": 0.5})
    assert attr.method == "ordered"
    _adds_up(attr)


def test_the_document_adds_up_to_the_cent() -> None:
    attr, _ = _attribute([OD, SPOT, RESERVED], {"od": 1000.0 / 3}, {"od": 100.0}, measured={"od": 0.7})
    savings = round(attr.savings, 2)
    doc = lever_document(attr, savings)
    assert round(doc.residual + sum(r.saving for r in doc.levers), 2) == savings
    assert [r.lever for r in doc.levers] == list(lv.LEVER_ORDER)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=7), st.floats(-1e6, 1e6))
def test_cents_always_add_up(values: list[float], total: float) -> None:
    rounded = cents(values, total)
    assert round(sum(rounded) * 100) == round(total * 100)


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    od_price=st.floats(1.0, 10.0),
    spot_price=st.floats(0.2, 9.0),
    spot_gpus=st.integers(0, 12),
    util=st.floats(0.1, 1.0),
    billed_spot=st.floats(0.0, 100.0),
    rate=st.floats(0.5, 15.0),
    block_price=st.floats(0.2, 5.0),
    api=st.booleans(),
    method=st.sampled_from(["shapley", "ordered"]),
)
def test_terms_always_add_up_to_the_saving(
    od_price: float,
    spot_price: float,
    spot_gpus: int,
    util: float,
    billed_spot: float,
    rate: float,
    block_price: float,
    api: bool,
    method: str,
) -> None:
    subs = [
        {**OD, "price_per_gpu_hour": od_price},
        {**SPOT, "price_per_gpu_hour": spot_price, "gpus": spot_gpus},
        {**RESERVED, "purchasable": {"block_gpus": 4, "price_per_gpu_hour": block_price, "max_blocks": 3}},
    ]
    if api:
        subs.append({"id": "api", "kind": "api", "price_per_unit": {"h100_hours": od_price * 0.9}})
    od_hours = rate * HOURS / util
    cost = {"od": od_hours * od_price, "spot": billed_spot * spot_price}
    attr, _ = _attribute(
        subs, cost, {"od": od_hours, "spot": billed_spot}, measured={"od": util}, rate=rate, method=method
    )
    _adds_up(attr)
    assert all(t.saving == 0.0 for t in attr.terms if not t.applied)
    doc = lever_document(attr, round(attr.savings, 2))
    assert round((doc.residual + sum(r.saving for r in doc.levers)) * 100) == round(round(attr.savings, 2) * 100)

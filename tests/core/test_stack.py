"""The merit order: hand-checked prices and capacities, clearing, exclusions, and its invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from finops_cli.core.stack import build_stack, clear, merit_order
from finops_cli.schema.estate import Fleet, Workload

CONGESTION = [{"up_to": 0.95, "multiplier": 1.25}, {"up_to": 1.0, "multiplier": 1.6}]


def _fleet(*substrates: dict, **extra: object) -> Fleet:
    return Fleet.model_validate({"version": 1, "substrates": list(substrates), "congestion": CONGESTION} | extra)


def _sub(id: str, kind: str = "on_demand", **kw: object) -> dict:
    base: dict[str, object] = {"id": id, "provider": "aws", "kind": kind, "jurisdiction": "US"}
    if kind == "api":
        return base | {"isolation": "shared", "price_per_unit": {"Mtokens": 15.0}} | kw
    base |= {"accelerator": "H100", "gpus": 10, "price_per_gpu_hour": 4.0}
    if kind == "spot":
        base |= {"interruptions_per_hour": 0.0}
    return base | kw


def _workload(**kw: object) -> Workload:
    base = {"id": "w", "unit": "Mtokens", "demand": {"total": 1}, "throughput": {"H100": 40.0, "A100": 20.0}}
    return Workload.model_validate(base | kw)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 9)


def test_prices_capacities_and_order_by_hand() -> None:
    fleet = _fleet(
        _sub("own", "owned", price_per_gpu_hour=0.4, comfortable_utilization=0.8),
        _sub("a100", price_per_gpu_hour=2.0, accelerator="A100", gpus=4, comfortable_utilization=1.0),
        _sub("od", gpus=None, price_per_gpu_hour=6.0, preference=1.1),
        _sub("api", "api", provider="anthropic"),
    )
    steps, excluded = merit_order(_workload(), fleet)
    got = [
        (s.substrate, s.segment, round(s.cost_per_unit, 6), _r(s.capacity_units), _r(s.cumulative_units)) for s in steps
    ]
    assert got == [
        ("own", 0, 0.01, 320.0, 320.0),  # 0.4 / 40; 10 GPUs × 0.8 × 40
        ("own", 1, 0.0125, 60.0, 380.0),  # × 1.25 from 0.8 to 0.95
        ("own", 2, 0.016, 20.0, 400.0),  # × 1.6 from 0.95 to 1.0
        ("a100", 0, 0.1, 80.0, 480.0),  # 2.0 / 20; comfortable at 100 %: one segment
        ("od", 0, 0.165, None, None),  # 6.0 × 1.1 / 40; uncapped on-demand
        ("api", 0, 15.0, None, None),
    ]
    assert excluded == {}


def test_clearing_price_marginal_step_and_shortfall() -> None:
    fleet = _fleet(_sub("own", "owned", price_per_gpu_hour=0.4, comfortable_utilization=1.0), _sub("od"))
    stack = build_stack(_workload(), fleet, demand_units=500.0, demand_basis="peak_hourly")
    assert (stack.marginal_step, stack.clearing_price) == (1, pytest.approx(0.1))
    assert clear(stack.steps, 400.0)[:2] == (0, pytest.approx(0.01))
    assert clear(stack.steps, 800.0) == (3, pytest.approx(0.16), None)  # od's last congested segment
    assert clear(stack.steps, 1000.0) == (None, None, pytest.approx(200.0))
    assert clear(stack.steps, 0.0) == (None, None, None)
    doc = stack.as_dict()
    assert set(doc) >= {"workload", "mode", "unit", "entries", "excluded", "demand_units", "clearing_price"}
    assert set(doc["entries"][0]) >= {"substrate", "kind", "cost_per_unit", "capacity_units", "cumulative_units"}


def test_status_degraded_shrinks_and_down_removes() -> None:
    fleet = _fleet(
        _sub("deg", status="degraded", comfortable_utilization=1.0),
        _sub("deg2", status="degraded", comfortable_utilization=1.0, degraded_capacity_factor=0.2),
        _sub("down", status="down"),
        degraded_capacity_factor=0.5,
    )
    stack = build_stack(_workload(), fleet)
    assert {s.substrate: s.capacity_units for s in stack.steps} == {"deg": 200.0, "deg2": 80.0}
    assert stack.excluded == {"down": ["status down"]}


def test_reliability_penalty_only_for_latency_critical_on_spot() -> None:
    fleet = _fleet(_sub("spot", "spot", price_per_gpu_hour=2.0), _sub("od", price_per_gpu_hour=6.0), _sub("api", "api"),
                   reliability_penalty_per_gpu_hour=8.0)  # fmt: skip
    critical = _workload(slo="latency_critical")
    cost = [s.substrate for s in build_stack(critical, fleet, "cost").steps if s.segment == 0]
    rel = build_stack(critical, fleet, "reliability")
    assert cost == ["spot", "od", "api"]
    assert [s.substrate for s in rel.steps if s.segment == 0] == ["od", "spot", "api"]  # spot before PAYG
    spot = next(s for s in rel.steps if s.substrate == "spot")
    assert (spot.usd_per_unit, spot.penalty_per_unit) == (pytest.approx(0.05), pytest.approx(0.2))
    for w in (_workload(slo="latency_critical", interruptible=True), _workload(slo="offline")):
        assert build_stack(w, fleet, "reliability").steps[0].substrate == "spot"


def test_spot_that_never_finishes_is_excluded_with_reason() -> None:
    fleet = _fleet(_sub("spot", "spot", interruptions_per_hour=3.0, resume_minutes=30), _sub("od"))
    stack = build_stack(_workload(interruptible=True, checkpoint={"interval_minutes": 60}), fleet)
    assert {s.substrate for s in stack.steps} == {"od"}
    assert "never finish" in stack.excluded["spot"][0]


def test_purchasable_block_is_a_flagged_step() -> None:
    fleet = _fleet(_sub("buy", "reserved", gpus=0, price_per_gpu_hour=None,
                        purchasable={"block_gpus": 8, "price_per_gpu_hour": 2.0, "max_blocks": 2}))  # fmt: skip
    (step,) = build_stack(_workload(), fleet).steps
    assert step.purchasable and step.capacity_units == 640.0 and step.cost_per_unit == pytest.approx(0.05)


def test_without_a_workload_the_fleet_is_shown_in_gpu_hours() -> None:
    fleet = _fleet(_sub("own", "owned", price_per_gpu_hour=0.4), _sub("api", "api"))
    stack = build_stack(None, fleet)
    assert stack.unit == "gpu_hours" and stack.workload is None
    assert stack.steps[0].cost_per_unit == pytest.approx(0.4)
    assert "per unit" in stack.excluded["api"][0]


def test_ties_are_broken_by_substrate_id() -> None:
    fleet = _fleet(_sub("b"), _sub("a"), _sub("c"))
    assert [s.substrate for s in build_stack(_workload(), fleet).steps if s.segment == 0] == ["a", "b", "c"]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.floats(0.01, 50, allow_nan=False), min_size=2, max_size=8))
def test_cheaper_price_is_never_later(prices: list[float]) -> None:
    fleet = _fleet(*[_sub(f"s{i}", price_per_gpu_hour=p) for i, p in enumerate(prices)])
    steps = build_stack(_workload(), fleet).steps
    costs = [s.cost_per_unit for s in steps]
    assert costs == sorted(costs)
    position = {s.substrate: i for i, s in enumerate(steps) if s.segment == 0}
    for i, pi in enumerate(prices):
        for j, pj in enumerate(prices):
            if pi < pj:
                assert position[f"s{i}"] < position[f"s{j}"]

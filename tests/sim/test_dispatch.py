"""Dispatch rules: compliance first, cheapest current price, congestion spills, events, preemptions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from finops_cli.core.compliance import gate
from finops_cli.schema.estate import Fleet, Workload
from finops_cli.sim.dispatch import TimedEvent, Trace, generate_trace, simulate_dispatch


def _fleet(*substrates: dict, **kw: object) -> Fleet:
    return Fleet.model_validate({"version": 1, "substrates": list(substrates), **kw})


def _gpu(sid: str, price: float, gpus: float = 10, **kw: object) -> dict:
    base = {
        "id": sid,
        "provider": "aws",
        "kind": "on_demand",
        "accelerator": "H100",
        "jurisdiction": "US",
        "gpus": gpus,
        "price_per_gpu_hour": price,
    }
    return base | kw


def _api(sid: str, price: float, **kw: object) -> dict:
    return (
        {"id": sid, "provider": "anthropic", "kind": "api", "jurisdiction": "US", "isolation": "shared"}
        | {"price_per_unit": {"h100_hours": price}}
        | kw
    )


def _workload(wid: str = "w", **kw: object) -> Workload:
    base = {"id": wid, "unit": "h100_hours", "demand": {"total": 1}, "throughput": {"H100": 1.0}}
    return Workload.model_validate(base | kw)


def _trace(times: list[float], units: float | list[float] = 1.0, workload: int = 0, ids=("w",)) -> Trace:
    t = np.asarray(times, dtype=float)
    u = np.full(len(t), units, dtype=float) if np.isscalar(units) else np.asarray(units, dtype=float)
    return Trace(t, np.full(len(t), workload, dtype=np.int32), u, tuple(ids))


def test_cheapest_wins_then_capacity_spills_to_the_next():
    fleet = _fleet(_gpu("cheap", 1.0, gpus=4, comfortable_utilization=1.0), _gpu("dear", 3.0, gpus=100))
    r = simulate_dispatch(fleet, [_workload()], _trace([0.01 * k for k in range(10)]), record=True)
    served = {s.substrate: s.requests for s in r.by_substrate}
    assert served == {"cheap": 4, "dear": 6}
    assert r.cost == pytest.approx(4 * 1.0 + 6 * 3.0)
    assert r.spills["full"] == 6
    assert list(r.assignment[:4]) == [0, 0, 0, 0]


def test_congestion_raises_the_price_and_spills_before_full():
    # cheap: 1.0 up to 50 % utilisation, then ×1.25 (=1.25) — dearer than 'next' at 1.1
    fleet = _fleet(
        _gpu("cheap", 1.0, gpus=10, comfortable_utilization=0.5),
        _gpu("next", 1.1, gpus=100),
        congestion=[{"up_to": 1.0, "multiplier": 1.25}],
    )
    r = simulate_dispatch(fleet, [_workload()], _trace([0.001 * k for k in range(20)]))
    by = {s.substrate: s for s in r.by_substrate}
    assert by["cheap"].requests == 5  # the 6th would push it to 60 % and cost 1.25 > 1.1
    assert by["next"].requests == 15
    assert r.spills["congestion"] == 15
    assert by["cheap"].peak_utilization == pytest.approx(0.5)


def test_utilisation_window_slides():
    fleet = _fleet(_gpu("cheap", 1.0, gpus=2, comfortable_utilization=1.0), _api("api", 9.0))
    # two requests fill the hour; two hours later the window is empty again
    r = simulate_dispatch(fleet, [_workload()], _trace([0.0, 0.1, 0.2, 2.5, 2.6]), record=True)
    assert list(r.assignment) == [0, 0, 1, 0, 0]


def test_outage_means_no_traffic_and_recover_ends_it():
    fleet = _fleet(_gpu("cheap", 1.0, gpus=1000), _gpu("backup", 2.0, gpus=1000))
    times = [0.5 * k for k in range(20)]  # 0 … 9.5 h
    events = [TimedEvent("outage", "cheap", 2.0, 6.0), TimedEvent("recover", "cheap", 4.0)]
    r = simulate_dispatch(fleet, [_workload()], _trace(times, 0.01), events, record=True)
    for t, d in zip(times, r.assignment, strict=True):
        assert d == (1 if 2.0 <= t < 4.0 else 0), t
    assert r.spills["outage"] == 4


def test_rate_limit_shrinks_capacity():
    fleet = _fleet(_gpu("cheap", 1.0, gpus=10, comfortable_utilization=1.0), _api("api", 9.0))
    trace = _trace([0.01 * k for k in range(30)])
    free = simulate_dispatch(fleet, [_workload()], trace)
    limited = simulate_dispatch(fleet, [_workload()], trace, [TimedEvent("rate_limit", "cheap", 0.0, 5.0, 0.4)])
    assert free.by_substrate[0].requests == 10
    assert limited.by_substrate[0].requests == 4
    assert limited.spills["rate_limit"] == 26
    assert limited.by_substrate[0].peak_utilization <= 1.0


def test_rate_limited_api_accepts_its_share():
    fleet = _fleet(_api("api", 1.0))
    r = simulate_dispatch(fleet, [_workload()], _trace([0.1] * 100), [TimedEvent("rate_limit", "api", 0.0, 1.0, 0.25)])
    assert r.requests == 25
    assert r.rejected["requests"] == 75


def test_everything_down_is_rejected_never_sent_elsewhere():
    fleet = _fleet(_gpu("us", 1.0), _gpu("eu", 0.1, jurisdiction="EU"))
    w = _workload(requires={"jurisdictions": ["US"]})
    r = simulate_dispatch(fleet, [w], _trace([0.5, 1.5, 2.5]), [TimedEvent("outage", "us", 1.0, 2.0)], record=True)
    assert list(r.assignment) == [0, -1, 0]
    assert r.rejected == {"requests": 1, "units": 1.0}
    assert r.rejected_by_reason["all_unavailable"] == 1
    assert r.by_substrate[1].requests == 0  # the cheaper EU pool is never used


def test_no_compliant_destination_is_counted_not_raised():
    fleet = _fleet(_gpu("eu", 0.1, jurisdiction="EU"))
    r = simulate_dispatch(fleet, [_workload(requires={"jurisdictions": ["US"]})], _trace([0.0, 1.0]))
    assert r.requests == 0
    assert r.rejected_by_reason["no_compliant_destination"] == 2
    assert "eu" in r.excluded["w"]


def _spot(lam: float) -> dict:
    return _gpu("spot", 0.5, gpus=10_000, kind="spot", interruptions_per_hour=lam)


def test_preempted_latency_critical_work_counts_slo_risk_and_requeues():
    fleet = _fleet(_spot(0.5), _gpu("od", 3.0, gpus=10_000))
    w = _workload(slo="latency_critical", interruptible=False)
    r = simulate_dispatch(fleet, [w], _trace([0.001 * k for k in range(2000)], 1.0), seed=7)
    assert r.preemptions > 100  # P(hit) = 1 - e^-0.5 ≈ 0.39 per 1-GPU-hour request on spot
    assert r.slo_risk_units == pytest.approx(r.preemptions * 1.0)
    assert r.requeued_units == pytest.approx(r.preemptions * 1.0)  # not interruptible: whole request again
    assert r.by_substrate[1].units == pytest.approx(r.requeued_units)  # never back to the spot pool that lost it


def test_interruptible_work_requeues_only_the_lost_share():
    fleet = _fleet(_spot(0.5), _gpu("od", 3.0, gpus=10_000))
    w = _workload(slo="offline", interruptible=True)
    r = simulate_dispatch(fleet, [w], _trace([0.001 * k for k in range(2000)], 1.0), seed=7)
    assert r.preemptions > 100
    assert r.slo_risk_units == 0
    assert 0 < r.requeued_units < r.preemptions
    assert r.preempted_cost == pytest.approx(r.requeued_units * 0.5)


def test_same_seed_same_result_and_seed_matters():
    fleet = _fleet(_spot(0.3), _gpu("od", 3.0, gpus=10_000))
    w = _workload(slo="latency_critical")
    demand = np.full((24, 1), 50.0)
    trace_a = generate_trace([w], fleet, demand, requests=3000, seed=11)
    trace_b = generate_trace([w], fleet, demand, requests=3000, seed=11)
    np.testing.assert_array_equal(trace_a.hours, trace_b.hours)
    r1 = simulate_dispatch(fleet, [w], trace_a, seed=5).as_dict()
    r2 = simulate_dispatch(fleet, [w], trace_b, seed=5).as_dict()
    r3 = simulate_dispatch(fleet, [w], trace_a, seed=6).as_dict()
    assert r1 == r2
    assert r1["preemptions"] != r3["preemptions"]


def test_generated_trace_follows_demand():
    fleet = _fleet(_gpu("g", 1.0))
    ws = [_workload("a"), _workload("b")]
    demand = np.zeros((48, 2))
    demand[:24, 0] = 100.0  # a: first day only
    demand[:, 1] = 10.0
    tr = generate_trace(ws, fleet, demand, requests=20_000, seed=3)
    assert np.all(np.diff(tr.hours) >= 0)
    a = tr.workload == 0
    assert tr.hours[a].max() < 24
    assert tr.units[a].sum() == pytest.approx(2400, rel=0.05)
    assert tr.units[~a].sum() == pytest.approx(480, rel=0.1)
    assert a.sum() / len(tr) == pytest.approx(2400 / 2880, rel=0.05)


_JURIS = st.sampled_from(["US", "EU", "UK"])
_PROV = st.sampled_from(["aws", "gcp", "onprem"])


@st.composite
def _estates(draw):
    subs = []
    for k in range(draw(st.integers(1, 5))):
        subs.append(
            _gpu(
                f"s{k}",
                draw(st.floats(0.1, 5.0)),
                gpus=draw(st.integers(1, 20)),
                jurisdiction=draw(_JURIS),
                provider=draw(_PROV),
                isolation=draw(st.sampled_from(["dedicated", "shared"])),
                status=draw(st.sampled_from(["up", "up", "degraded", "down"])),
            )
        )
    req = {
        "jurisdictions": draw(st.none() | st.lists(_JURIS, min_size=1, max_size=2, unique=True)),
        "providers": draw(st.none() | st.lists(_PROV, min_size=1, max_size=2, unique=True)),
        "isolation": draw(st.none() | st.just("dedicated")),
    }
    times = sorted(draw(st.lists(st.floats(0, 5), min_size=1, max_size=40)))
    outages = [
        TimedEvent("outage", f"s{draw(st.integers(0, len(subs) - 1))}", draw(st.floats(0, 4)), draw(st.floats(4, 6)))
        for _ in range(draw(st.integers(0, 2)))
    ]
    return _fleet(*subs), _workload(requires=req), times, outages


@settings(max_examples=examples(60), deadline=None)
@given(_estates())
def test_property_compliance_is_never_violated(case):
    fleet, w, times, outages = case
    allowed = {fleet.substrates.index(s) for s in gate(w, fleet).compliant}
    r = simulate_dispatch(fleet, [w], _trace(times, 2.0), outages, record=True)
    served = set(r.assignment[r.assignment >= 0].tolist())
    assert served <= allowed
    for s in r.by_substrate:
        if fleet.substrates.index(fleet.substrate(s.substrate)) not in allowed:
            assert s.requests == 0 and s.units == 0
    assert r.requests + r.rejected["requests"] == len(times)
    for t, d in zip(times, r.assignment, strict=True):  # no traffic to a destination in an outage
        for ev in outages:
            if d >= 0 and fleet.substrates[d].id == ev.substrate:
                assert not (ev.start_hours <= t < ev.end_hours)


def test_reliability_mode_keeps_latency_critical_work_off_spot():
    fleet = _fleet(_gpu("spot", 1.0, gpus=1000, kind="spot", interruptions_per_hour=0.0), _gpu("od", 3.0, gpus=1000))
    lc = _workload(slo="latency_critical")
    batch = _workload("b", slo="offline", interruptible=True)
    trace = _trace([0.1, 0.2], 0.01)
    cost_mode = simulate_dispatch(fleet, [lc], trace, mode="cost")
    reliable = simulate_dispatch(fleet, [lc], trace, mode="reliability")  # penalty 5 $/GPU-h > 2 $ gap
    offline = simulate_dispatch(fleet, [batch], _trace([0.1, 0.2], 0.01, ids=("b",)), mode="reliability")
    assert cost_mode.by_substrate[0].requests == 2
    assert reliable.by_substrate[1].requests == 2
    assert offline.by_substrate[0].requests == 2  # interruptible work is never penalised
    assert cost_mode.cost == pytest.approx(0.02 * 1.0) and reliable.cost == pytest.approx(0.02 * 3.0)

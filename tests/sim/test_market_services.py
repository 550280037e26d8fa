"""Services with a fixed lifetime and a request rate (issue 32 item 8): they end when their lifetime does,
and what they did not serve — waiting, or on hardware too slow for their rate — is throughput lost."""

from __future__ import annotations

import pytest

from finops_cli.sim.market.experiments import metrics
from tests.sim.conftest import market_scenario as _scenario
from tests.sim.conftest import run_market as _run

_X = [{"type": "X", "count": 1, "base_price_per_hour": 1.0}]
# a batch job holding the only X for its first hour
_BATCH = {"id": "batch", "execution_hours": {"X": 1.0}, "checkpoint_interval_hours": 0.5}
# a service receiving 2 units of requests evenly over 2 h: 1 unit an hour, what one X serves
_SERVICE = {
    "id": "svc",
    "arrival_hours": 0.0,
    "work": 2.0,
    "execution_hours": {"X": 1.0},
    "checkpoint_interval_hours": 0.25,
    "stateless": True,
    "lifetime_hours": 2.0,
}


def test_a_service_that_waits_loses_the_requests_of_its_wait_and_still_ends_with_its_lifetime():
    sc = _scenario(_X, [_BATCH, _SERVICE])
    for policy in ("fcfs", "fcfs-preempt", "renegotiate"):
        _, t = _run(sc, policy)
        svc = t["svc"]
        assert svc.finish_hours == pytest.approx(2.0), policy  # its lifetime, not its volume, ends it
        assert svc.served == pytest.approx(0.5) and svc.performance_retained == pytest.approx(0.5), policy
        assert svc.cost == pytest.approx(1.0), policy  # it pays for the hour it ran
    ref, _ = _run(sc, "on-demand")
    res, t = _run(sc, "fcfs")
    assert t["svc"].served == pytest.approx(0.5)
    m = metrics(res, ref)
    assert m["retained"] == pytest.approx((1.0 + 0.5) / 2)  # the batch job kept its time, the service half its requests


def test_a_service_on_hardware_too_slow_for_its_rate_serves_what_that_hardware_can():
    pools = [{"type": "Y", "count": 1, "base_price_per_hour": 0.5}]
    svc = {**_SERVICE, "execution_hours": {"Y": 2.0}}  # a Y serves half a unit an hour
    _, t = _run(_scenario(pools, [svc]), "fcfs")
    assert t["svc"].finish_hours == pytest.approx(2.0) and t["svc"].served == pytest.approx(0.5)
    assert t["svc"].performance_retained == pytest.approx(1.0)  # the most any compatible type could serve


def test_a_service_whose_lifetime_ends_while_it_waits_serves_nothing_and_leaves_the_market():
    holder = {**_BATCH, "execution_hours": {"X": 3.0}}
    sc = _scenario(_X, [holder, {**_SERVICE, "arrival_hours": 0.1}])
    for policy in ("fcfs", "fcfs-preempt", "spot", "renegotiate"):
        res, t = _run(sc, policy)
        assert t["batch"].finish_hours == pytest.approx(3.0), policy
        assert t["svc"].accelerators == [] and t["svc"].served == 0 and t["svc"].cost == 0, policy
        assert t["svc"].finish_hours == pytest.approx(2.1), policy
        paid = sum(x.cost for x in res.tenants)
        assert paid == pytest.approx(res.provider["accelerator_revenue"] + res.provider["restart_fees"])

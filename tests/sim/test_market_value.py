"""Value-of-time agents (issue 18): the break-even special case, urgent tenants, deadlines, budgets,
the operator's load-priced floor, and invariants under all of them."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from finops_cli.sim.market import Scenario
from finops_cli.sim.market.scenario import Tenant
from tests.sim.conftest import MARKET_SAMPLE as SAMPLE
from tests.sim.conftest import market_events as _events
from tests.sim.conftest import market_scenario as _scenario
from tests.sim.conftest import run_market as _run

# --- value_per_hour 0 is today's break-even agent -------------------------------------------------


def test_value_per_hour_zero_reproduces_the_worked_example_exactly():
    raw = yaml.safe_load(SAMPLE.read_text())
    plain = Scenario.model_validate(raw)
    for t in raw["tenants"]:
        t["value_per_hour"] = 0
        t["overhead_estimate"] = 1.0
    explicit = Scenario.model_validate(raw)
    for policy in ("renegotiate", "fcfs", "fcfs-preempt", "on-demand"):
        assert _run(explicit, policy)[0].as_dict() == _run(plain, policy)[0].as_dict()
    res, t = _run(explicit, "renegotiate")
    bids = [(round(e["t"], 4), e["tenant"], round(e["price"], 4)) for e in _events(res, "bid")]
    assert bids == [
        (0.0, "app-b", 0.6525),
        (0.0833, "app-a", 0.6891),
        (0.0833, "app-b", 0.7612),
        (0.15, "app-b", 0.6525),
    ]
    assert t["app-b"].time_value == 0 and t["app-a"].penalty == 0 and t["app-a"].deadline_missed is None


# --- an urgent tenant outbids a patient one -------------------------------------------------------

# X: 1 fast accelerator at $1/h. Y: slow, plentiful, $0.6/h. Both tenants need 1 h on X or 2 h on Y:
# $1.00 on X, $1.20 on Y, so both prefer X. The patient tenant's break-even for X is 2 × 0.6 / 1 =
# $1.20/h; the urgent one adds the hour it saves, 1 h × $10/h: $11.20/h.
_POOLS = [
    {"type": "X", "count": 1, "base_price_per_hour": 1.0},
    {"type": "Y", "count": 4, "base_price_per_hour": 0.6},
]


def _two(urgent_value: float) -> Scenario:
    common = {"execution_hours": {"X": 1.0, "Y": 2.0}, "checkpoint_interval_hours": 0.25}
    return _scenario(
        _POOLS,
        [
            {"id": "patient", "arrival_hours": 0.0, **common, "checkpoint_interval_hours": 0.5},
            {"id": "urgent", "arrival_hours": 0.2, **common, "value_per_hour": urgent_value},
        ],
    )


def test_urgent_tenant_outbids_finishes_sooner_and_both_pay_the_second_price():
    res, t = _run(_two(10.0), "renegotiate")
    (bid,) = _events(res, "bid", "urgent")
    assert bid["price"] == pytest.approx(1.2 + 10.0)
    (lose,) = _events(res, "lose", "patient")
    assert lose["t"] == pytest.approx(0.2)  # outbid on arrival ...
    (leave,) = _events(res, "migrate", "patient")
    assert leave["t"] == pytest.approx(0.5)  # ... but the patient keeps X until its checkpoint
    assert t["patient"].work_lost_hours == 0 and t["urgent"].work_lost_hours == 0
    assert t["urgent"].accelerators == ["Y", "X"] and t["patient"].accelerators == ["X", "Y"]
    # second price: the patient's break-even is the best losing bid on X, before and after it leaves
    (patient_bid,) = [e["price"] for e in _events(res, "bid", "patient")]
    assert patient_bid == pytest.approx(1.2)  # it still wants X: its bid keeps standing there
    # X is vacated at 0.5, between the urgent tenant's checkpoints (0.45, 0.7): holding X idle until 0.7
    # costs it 0.2 h of X at $1.2 + $10/h of time; moving now redoes 0.05 h of Y work, 0.025 h on X: it moves now
    (choice,) = _events(res, "move-now", "urgent")
    move_in = next(e for e in _events(res, "migrate", "urgent"))
    assert choice["t"] == move_in["t"] == pytest.approx(0.5)
    assert move_in["accelerator"] == "X/0" and move_in["price"] == pytest.approx(patient_bid)
    assert t["urgent"].work_redone_hours == pytest.approx(0.05)
    # the urgent tenant paid $0.6/h on Y (0.3 h), then the second price on X for the rest from its checkpoint
    assert t["urgent"].cost == pytest.approx(0.3 * 0.6 + (1 - 0.125) * 1.2)
    # the patient paid base on X until it lost (0.2 h × $1), then its own losing bid — the second price —
    # until its checkpoint (0.3 h × $1.20), then $0.6/h on Y for the rest (0.5 of 2 h)
    assert t["patient"].cost == pytest.approx(0.2 * 1.0 + 0.3 * 1.2 + 1.0 * 0.6)
    # against FCFS and against an urgent tenant that does not value time, it finishes sooner
    _, fcfs = _run(_two(10.0), "fcfs")
    flat_res, flat = _run(_two(0.0), "renegotiate")
    assert t["urgent"].completion_hours < fcfs["urgent"].completion_hours
    assert t["urgent"].completion_hours < flat["urgent"].completion_hours
    assert not _events(flat_res, "lose")  # a tie keeps the incumbent: it waits on Y for X to free up
    assert t["urgent"].time_value == pytest.approx(10.0 * t["urgent"].completion_hours)


def test_value_of_time_changes_the_preferred_type():
    fast_dear = {"execution_hours": {"X": 1.0, "Y": 2.0}, "checkpoint_interval_hours": 0.5}
    pools = [
        {"type": "X", "count": 4, "base_price_per_hour": 2.0},
        {"type": "Y", "count": 4, "base_price_per_hour": 0.6},
    ]
    sc = _scenario(pools, [{"id": "cheap", **fast_dear}, {"id": "keen", **fast_dear, "value_per_hour": 1.0}])
    _, t = _run(sc, "on-demand")
    assert t["cheap"].accelerators == ["Y"]  # $1.20 on Y beats $2.00 on X
    assert t["keen"].accelerators == ["X"]  # $2 + 1 h × $1 beats $1.20 + 2 h × $1


# --- deadlines and budgets ------------------------------------------------------------------------


def test_hard_deadline_bids_the_penalty_it_avoids_and_reports_the_miss():
    deadline = {"hours": 1.5, "kind": "hard", "penalty": 5.0}  # Y (2 h) misses it, X (1 h) makes it
    sc = _scenario(
        _POOLS,
        [{"id": "d", "execution_hours": {"X": 1.0, "Y": 2.0}, "checkpoint_interval_hours": 0.5, "deadline": deadline}],
    )
    res, t = _run(sc, "renegotiate")
    bid = _events(res, "bid", "d")[0]
    assert bid["t"] == 0 and bid["price"] == pytest.approx(1.2 + 5.0)
    assert t["d"].deadline_missed is False and t["d"].penalty == 0
    blocker = {"id": "first", "execution_hours": {"X": 3.0}, "checkpoint_interval_hours": 5.0}
    late = {"id": "d", "arrival_hours": 0.1, "execution_hours": {"X": 1.0, "Y": 2.0}, "checkpoint_interval_hours": 0.5}
    sc = _scenario(_POOLS, [blocker, {**late, "deadline": deadline}])
    _, t = _run(sc, "fcfs")
    assert t["d"].accelerators == ["Y"] and t["d"].deadline_missed is True and t["d"].penalty == 5.0


def test_soft_deadline_penalty_per_hour_late():
    d = Tenant.model_validate(
        {
            "id": "s",
            "arrival_hours": 1.0,
            "execution_hours": {"X": 1},
            "checkpoint_interval_hours": 1,
            "deadline": {"hours": 2.0, "kind": "soft", "penalty_per_hour": 3.0},
        }
    )
    assert d.penalty_at(2.5) == 0 and d.penalty_at(3.0) == 0 and d.penalty_at(4.5) == pytest.approx(4.5)


@pytest.mark.parametrize(
    ("deadline", "message"),
    [
        ({"hours": 1, "kind": "hard"}, "needs `penalty`"),
        ({"hours": 1, "kind": "soft"}, "needs `penalty_per_hour`"),
        ({"hours": 1, "kind": "soft", "penalty_per_hour": 1, "penalty": 2}, "`penalty` is for hard"),
        ({"hours": 1, "kind": "hard", "penalty": 1, "penalty_per_hour": 2}, "is for soft deadlines"),
    ],
)
def test_deadline_validation(deadline, message):
    with pytest.raises(ValueError, match=message):
        Tenant.model_validate(
            {"id": "x", "execution_hours": {"X": 1}, "checkpoint_interval_hours": 1, "deadline": deadline}
        )


def test_budget_caps_the_value_of_time_bid():
    tenant = {"id": "b", "execution_hours": {"X": 1.0, "Y": 2.0}, "checkpoint_interval_hours": 0.5}
    sc = _scenario(_POOLS, [{**tenant, "value_per_hour": 100.0, "budget": 3.0}])
    res, _ = _run(sc, "renegotiate")
    bid = _events(res, "bid", "b")[0]
    assert bid["t"] == 0 and bid["price"] == pytest.approx(3.0)  # budget 3 ÷ 1 h left on X, not 1.2 + 100


def test_overhead_estimate_scales_only_the_agents_belief():
    mover = {"execution_hours": {"X": 1.0, "Y": 2.0}, "checkpoint_interval_hours": 0.25, "checkpoint_restart_cost": 0.1}
    sc = _scenario(_POOLS, [{"id": "m", **mover, "overhead_estimate": 2.0}], incumbent_migration="subtract")
    res, t = _run(sc, "renegotiate")
    rebid = [e["price"] for e in _events(res, "bid", "m")][1]  # at its first checkpoint, f = 0.25
    assert rebid == pytest.approx((0.75 * 2.0 * 0.6 - 2.0 * 0.1) / 0.75)
    assert t["m"].migrations == 0 and t["m"].cost == pytest.approx(1.0)  # true costs: no move, base price


# --- the operator's load-priced floor -------------------------------------------------------------


def test_load_priced_floor_steers_arrivals_away_without_evicting_anyone():
    pools = [
        {
            "type": "D",
            "count": 4,
            "base_price_per_hour": 0.9,
            "load_pricing": {"knee": 0.25, "multiple_at_full": 2.0, "cap": 0.5},
        },
        {"type": "X", "count": 4, "base_price_per_hour": 1.0},
    ]
    tenants = [
        {
            "id": f"t{k}",
            "arrival_hours": 0.01 * k,
            "execution_hours": {"D": 1.0, "X": 1.0},
            "checkpoint_interval_hours": 0.25,
        }
        for k in range(4)
    ]
    res, t = _run(_scenario(pools, tenants), "renegotiate")
    fcfs, ft = _run(_scenario(pools, tenants), "fcfs")
    on_d = [k for k, x in t.items() if x.accelerators[0] == "D"]
    # bids are 1.0 (the X alternative); the floor 0.9 × (1 + (u − 0.25)/0.75) passes 1.0 above u ≈ 0.33
    assert len(on_d) == 2
    assert all(ft[k].accelerators == ["D"] for k in ft)  # FCFS fills the cheap group to 100 %
    assert res.load["D"]["peak_load"] == pytest.approx(0.5) and fcfs.load["D"]["peak_load"] == pytest.approx(1.0)
    assert res.load["D"]["hours_over_cap"] == 0 and fcfs.load["D"]["hours_over_cap"] > 0
    assert all(x.work_lost_hours == 0 and x.finish_hours is not None for x in t.values())
    for e in _events(res, "price"):
        if e["accelerator"].startswith("D"):
            assert e["price"] >= 0.9 - 1e-9


# --- invariants with every new knob ---------------------------------------------------------------


@st.composite
def _value_scenarios(draw):
    types = ["A", "B", "C"]
    pools = []
    for k in types:
        pool = {"type": k, "count": draw(st.integers(1, 3)), "base_price_per_hour": draw(st.floats(0.2, 2.0))}
        if k == "A" and draw(st.booleans()):
            pool["load_pricing"] = {"knee": draw(st.floats(0.0, 0.9)), "multiple_at_full": draw(st.floats(1.0, 4.0))}
        pools.append(pool)
    tenants = []
    for n in range(draw(st.integers(1, 12))):
        compatible = draw(st.lists(st.sampled_from(types), min_size=1, max_size=3, unique=True))
        t = {
            "id": f"t{n}",
            "arrival_hours": draw(st.sampled_from([0.0, 0.0, 0.1, 0.25, 0.5])),
            "execution_hours": {k: draw(st.floats(0.1, 1.0)) for k in compatible},
            "checkpoint_interval_hours": draw(st.floats(0.05, 0.5)),
            "checkpoint_restart_cost": draw(st.floats(0, 0.05)),
            "restart_hours": draw(st.sampled_from([0.0, 0.0, 0.01])),
            "value_per_hour": draw(st.sampled_from([0.0, 0.5, 5.0, 50.0])),
            "overhead_estimate": draw(st.sampled_from([0.5, 1.0, 1.5])),
        }
        kind = draw(st.sampled_from([None, "hard", "soft"]))
        if kind == "hard":
            t["deadline"] = {"hours": draw(st.floats(0.1, 2.0)), "kind": "hard", "penalty": draw(st.floats(0, 20))}
        elif kind == "soft":
            t["deadline"] = {
                "hours": draw(st.floats(0.1, 2.0)),
                "kind": "soft",
                "penalty_per_hour": draw(st.floats(0, 20)),
            }
        if draw(st.booleans()):
            t["budget"] = draw(st.floats(0.05, 5.0))
        if draw(st.booleans()):
            t["value_ramp"] = {"to_value_per_hour": draw(st.sampled_from([0.0, 5.0, 50.0])), "over_hours": 0.5}
        t["agent"] = draw(st.sampled_from([None, "planner", "fixed"]))
        if draw(st.integers(0, 3)) == 0:  # a service with a lifetime: it ends when its lifetime does
            t |= {"stateless": True, "lifetime_hours": draw(st.floats(0.1, 1.5))}
            t.pop("deadline", None)
        tenants.append(t)
    options = {
        "bid_clip": draw(st.sampled_from([None, 0.1, 1.0])),
        "floor_fall_per_hour": draw(st.sampled_from([None, 0.5])),
    }
    return _scenario(pools, tenants, **options)


@settings(max_examples=examples(60), deadline=None)
@given(_value_scenarios())
def test_property_value_agents_never_lose_work_under_renegotiate(sc):
    res, t = _run(sc, "renegotiate")
    # everyone finishes unless its money ran out; only a tenant stopped by its budget loses work
    assert all((x.finish_hours is not None) != x.budget_exhausted for x in t.values())
    assert all(x.work_lost_hours == 0 for x in t.values() if not x.budget_exhausted)
    for e in _events(res, "migrate"):
        at_checkpoint = any(c["t"] == e["t"] for c in _events(res, "checkpoint", e["tenant"]))
        was_idle = any(w["t"] <= e["t"] for w in _events(res, "wait", e["tenant"]))
        by_choice = any(w["t"] == e["t"] for w in _events(res, "move-now", e["tenant"]))
        assert at_checkpoint or was_idle or by_choice, e
    for e in _events(res, "price"):
        assert e["price"] >= sc.base_price(e["accelerator"].split("/")[0]) - 1e-9
    again, _ = _run(sc, "renegotiate")
    assert again.as_dict() == res.as_dict()


def test_budget_that_pays_for_the_job_nowhere_does_not_launch():
    """A budget below the job's cost on every type at base prices: the tenant never launches, spends
    nothing and is reported ``budget_exhausted`` (earlier it ran at the floor and overspent)."""
    sc = _scenario(
        [{"type": "A", "count": 1, "base_price_per_hour": 1.0}],
        [{"id": "poor", "execution_hours": {"A": 1.0}, "checkpoint_interval_hours": 0.5, "budget": 0.5}],
    )
    for policy in ("renegotiate", "fcfs", "spot", "fcfs-preempt", "on-demand"):
        _, t = _run(sc, policy)
        assert t["poor"].finish_hours is None and t["poor"].cost == 0 and t["poor"].budget_exhausted, policy


def test_budget_is_a_spending_limit_the_tenant_stops_when_its_money_runs_out():
    """Preempted after its checkpoint, a tenant whose budget covered the job exactly must redo lost work:
    it is stopped the instant it has spent its budget (a ``budget`` event), unfinished."""
    pools = [{"type": "X", "count": 1, "base_price_per_hour": 1.0}]
    low = {"id": "low", "execution_hours": {"X": 1.0}, "checkpoint_interval_hours": 0.25, "budget": 1.0}
    high = {"id": "high", "arrival_hours": 0.4, "execution_hours": {"X": 0.5}, "checkpoint_interval_hours": 0.25}
    res, t = _run(_scenario(pools, [low, {**high, "value_per_hour": 5.0}]), "fcfs-preempt")
    assert t["low"].budget_exhausted and t["low"].finish_hours is None
    assert t["low"].cost == pytest.approx(1.0)
    (stop,) = _events(res, "budget", "low")
    assert stop["t"] == pytest.approx(1.5)  # 0.4 h before the preemption + 0.6 h after it at $1/h


def test_a_budget_chooses_the_type_it_can_pay_for():
    """The budget is part of the launch decision: a tenant launches only where the whole job fits it."""
    pools = [{"type": k, "count": 1, "base_price_per_hour": p} for k, p in (("X", 3.0), ("Y", 0.5))]
    tenant = {"id": "b", "execution_hours": {"X": 1.0, "Y": 3.0}, "checkpoint_interval_hours": 0.5}
    tenant["value_per_hour"] = 10.0
    for budget, where in ((2.0, ["Y"]), (5.0, ["X"])):
        _, t = _run(_scenario(pools, [{**tenant, "budget": budget}]), "renegotiate")
        assert t["b"].accelerators == where and t["b"].cost <= budget + 1e-9


@settings(max_examples=examples(60), deadline=None)
@given(_value_scenarios())
def test_property_nobody_spends_more_than_its_budget_and_money_is_conserved(sc):
    """Under every policy: a tenant's payments never exceed its budget, and what tenants pay is what the
    provider's ledger received (accelerator-hours at their prices plus checkpoint-restart fees)."""
    from finops_cli.sim.market import simulate_market

    budgets = {x.id: x.budget for x in sc.tenants}
    for res in simulate_market(sc, "all", log_events=False):
        for x in res.tenants:
            b = budgets[x.tenant]
            if b is not None:
                assert x.cost <= b * (1 + 1e-9) + 1e-9, (res.policy, x.tenant, x.cost, b)
        paid = sum(x.cost for x in res.tenants)
        received = res.provider["accelerator_revenue"] + res.provider["restart_fees"]
        assert paid == pytest.approx(received, rel=1e-9, abs=1e-9), res.policy


# --- time-varying value (Fig. 2) ------------------------------------------------------------------


def _fig2():
    pools = [{"type": k, "count": 1, "base_price_per_hour": 1.0} for k in ("F", "S")]
    a = {"id": "A", "execution_hours": {"F": 1.0, "S": 2.0}, "checkpoint_interval_hours": 0.25}
    b = {"id": "B", "arrival_hours": 0.05, "execution_hours": {"F": 1.0, "S": 1.5}, "checkpoint_interval_hours": 0.25}
    return pools, a, {**b, "value_ramp": {"to_value_per_hour": 10.0, "over_hours": 1.0}}


def test_rising_value_wins_the_fast_type_that_a_launch_time_bid_cannot():
    """Fig. 2: B launches with no urgency (its break-even $1.50 loses to A's $2.00 for F and it runs on S);
    its value of time rises, and at its first checkpoint its continuous bid, (1.5 + 2.5 · 0.5) ÷ 1 = $2.75,
    beats A's: A moves to S at its own checkpoint. With a launch-time bid (``fcfs-preempt``) or a constant
    value, B never gets F."""
    pools, a, b = _fig2()
    res, t = _run(_scenario(pools, [a, b]), "renegotiate")
    bids = [e["price"] for e in _events(res, "bid", "B")]
    assert bids[0] == pytest.approx(1.5) and bids[1] == pytest.approx(2.75)
    assert t["B"].accelerators == ["S", "F"] and t["A"].accelerators[:2] == ["F", "S"]  # A returns once B is done
    assert t["A"].work_lost_hours == 0 and t["B"].work_lost_hours == 0
    _, fixed = _run(_scenario(pools, [a, b]), "fcfs-preempt")
    flat = {k: v for k, v in b.items() if k != "value_ramp"}
    const_res, const = _run(_scenario(pools, [a, flat]), "renegotiate")
    # without the rising bid B gets F only once A has finished on it (at 1.0 h)
    assert min(e["t"] for e in _events(const_res, "migrate", "B")) >= 1.0 - 1e-9
    assert t["B"].finish_hours < min(const["B"].finish_hours, fixed["B"].finish_hours)


def test_value_ramp_time_value_is_the_integral():
    tenant = Tenant.model_validate(
        {
            "id": "r",
            "arrival_hours": 1.0,
            "execution_hours": {"X": 1.0},
            "checkpoint_interval_hours": 1.0,
            "value_per_hour": 2.0,
            "value_ramp": {"to_value_per_hour": 6.0, "over_hours": 2.0},
        }
    )
    assert tenant.value_at(0.5) == 2.0 and tenant.value_at(2.0) == pytest.approx(4.0) and tenant.value_at(9) == 6.0
    assert tenant.time_value(4.0) == pytest.approx(8.0 + 6.0)  # (2 + 6) / 2 · 2 h, then 6 · 1 h
    assert not tenant.opts_into_spot()


def test_a_waiting_planner_updates_every_period_and_a_fixed_agent_only_when_an_accelerator_frees():
    """Nothing it can win at arrival: the planning agent re-plans at live prices every checkpoint interval
    while it waits (a ``wait`` each time); the fixed agent bids once and waits for an accelerator to free."""
    pools = [{"type": "X", "count": 1, "base_price_per_hour": 1.0}]
    holder = {"id": "h", "execution_hours": {"X": 1.0}, "checkpoint_interval_hours": 0.5}
    b = {"id": "b", "arrival_hours": 0.1, "execution_hours": {"X": 1.0}, "checkpoint_interval_hours": 0.25}
    waits = {}
    for agent in ("planner", "fixed"):
        res, t = _run(_scenario(pools, [holder, {**b, "budget": 2.0, "agent": agent}]), "renegotiate")
        waits[agent] = [round(e["t"], 6) for e in _events(res, "wait", "b")]
        assert t["b"].finish_hours == pytest.approx(2.0) and t["b"].cost <= 2.0 + 1e-9
    assert waits["fixed"] == [0.1]
    assert waits["planner"] == [0.1, 0.35, 0.6, 0.85]  # then the holder finishes at 1.0 and b takes X


def test_a_planner_chooses_among_the_types_it_can_pay_for_at_live_prices():
    """X is held and contested, so its live price is above what b's budget pays for its work there; the
    planner takes the slower Y it can afford and never bids for X; the fixed agent (ranked at base
    prices, where X fits the budget) bids for X first."""
    pools = [
        {"type": "X", "count": 1, "base_price_per_hour": 1.0},
        {"type": "Y", "count": 1, "base_price_per_hour": 0.5},
    ]
    holder = {"id": "h", "execution_hours": {"X": 2.0}, "checkpoint_interval_hours": 1.0}
    rival = {"id": "r", "arrival_hours": 0.05, "execution_hours": {"X": 1.0}, "checkpoint_interval_hours": 1.0}
    b = {"id": "b", "arrival_hours": 0.1, "execution_hours": {"X": 1.0, "Y": 2.0}, "checkpoint_interval_hours": 0.5}
    b |= {"value_per_hour": 1.0, "budget": 1.5}
    targets = {}
    for agent in ("planner", "fixed"):
        res, t = _run(
            _scenario(pools, [holder, {**rival, "value_per_hour": 1.0}, {**b, "agent": agent}]), "renegotiate"
        )
        targets[agent] = {e["accelerator"] for e in _events(res, "bid", "b")}
        assert t["b"].accelerators == ["Y"] and t["b"].cost <= 1.5 + 1e-9
    assert targets["planner"] == {None, "Y/0"}  # its arrival bid, then its defence of the Y it runs on
    assert "X/0" in targets["fixed"]  # it keeps contesting X at its budget's pace

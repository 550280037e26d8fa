"""Property: across many random fleets and workloads no non-compliant pair reaches any later stage."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from finops_cli.core.compliance import NoCompliantDestination, exclusion_reasons, gate
from finops_cli.core.netc_report import netc_rows
from finops_cli.core.stack import build_stack
from finops_cli.schema.estate import Fleet, Workload

JURIS = ["US", "EU", "JP"]
PROVIDERS = ["aws", "gcp", "onprem", "anthropic"]
ACCS = ["H100", "A100", "L4"]
UNITS = ["Mtokens", "h100_hours"]


@st.composite
def substrates(draw: st.DrawFn, i: int) -> dict:
    kind = draw(st.sampled_from(["owned", "reserved", "on_demand", "spot", "api"]))
    base = {
        "id": f"s{i}",
        "provider": draw(st.sampled_from(PROVIDERS)),
        "kind": kind,
        "jurisdiction": draw(st.sampled_from(JURIS)),
        "isolation": draw(st.sampled_from(["dedicated", "shared"])),
        "status": draw(st.sampled_from(["up", "up", "degraded", "down"])),
    }
    if kind == "api":
        units = draw(st.lists(st.sampled_from(UNITS), min_size=1, max_size=2, unique=True))
        return base | {"price_per_unit": {u: draw(st.floats(0.1, 20)) for u in units}}
    base |= {
        "accelerator": draw(st.sampled_from(ACCS)),
        "gpus": draw(st.sampled_from([8.0, 16.0, 64.0])),
        "price_per_gpu_hour": draw(st.floats(0, 12)),
    }
    if kind == "spot":
        base["interruptions_per_hour"] = draw(st.sampled_from([0.0, 0.02, 0.5, 3.0]))
        base["resume_minutes"] = draw(st.sampled_from([0.0, 6.0, 30.0]))
    return base


@st.composite
def fleets(draw: st.DrawFn) -> Fleet:
    n = draw(st.integers(1, 7))
    return Fleet.model_validate({"version": 1, "substrates": [draw(substrates(i)) for i in range(n)]})


def _maybe(draw: st.DrawFn, values: list[str]) -> list[str] | None:
    return draw(st.one_of(st.none(), st.lists(st.sampled_from(values), min_size=1, max_size=3, unique=True)))


@st.composite
def workloads(draw: st.DrawFn, i: int = 0) -> Workload:
    return Workload.model_validate(
        {
            "id": f"w{i}",
            "unit": draw(st.sampled_from(UNITS)),
            "slo": draw(st.sampled_from(["latency_critical", "standard", "offline"])),
            "interruptible": draw(st.booleans()),
            "demand": {"total": draw(st.floats(0, 1e5))},
            "throughput": {a: draw(st.floats(0.1, 50)) for a in draw(st.lists(st.sampled_from(ACCS), unique=True))},
            "requires": {
                "jurisdictions": _maybe(draw, JURIS),
                "providers": _maybe(draw, PROVIDERS),
                "isolation": draw(st.sampled_from([None, "dedicated", "shared"])),
            },
        }
    )


@settings(suppress_health_check=[HealthCheck.too_slow])  # example count: the profile (tests/conftest.py)
@given(fleets(), workloads(), st.sampled_from(["cost", "reliability"]), st.floats(0, 5000))
def test_no_noncompliant_pair_reaches_the_stack(fleet: Fleet, workload: Workload, mode: str, demand: float) -> None:
    try:
        stack = build_stack(workload, fleet, mode, demand)  # type: ignore[arg-type]
    except NoCompliantDestination as exc:  # nowhere to run: exit 3 with every substrate's reasons, never a curve
        assert exc.workload_id == workload.id and set(exc.excluded) == {s.id for s in fleet.substrates}
        assert all(exc.excluded.values())
        return
    reached = {s.substrate for s in stack.steps}
    for sid in reached:
        assert exclusion_reasons(workload, fleet.substrate(sid)) == []
    # every substrate is accounted for: on the curve (or zero-capacity), or excluded with reasons
    for s in fleet.substrates:
        if exclusion_reasons(workload, s):
            assert s.id in stack.excluded and stack.excluded[s.id] and s.id not in reached
    # the marginal step, if any, is a compliant one
    if stack.marginal_step is not None:
        assert stack.steps[stack.marginal_step].substrate in reached


@settings(suppress_health_check=[HealthCheck.too_slow])  # example count: the profile (tests/conftest.py)
@given(fleets(), st.lists(st.integers(0, 10_000), min_size=1, max_size=4).flatmap(
    lambda seeds: st.tuples(*[workloads(i) for i in range(len(seeds))])
))  # fmt: skip
def test_compliant_pairs_and_netc_only_see_compliant_pairs(fleet: Fleet, ws: tuple[Workload, ...]) -> None:
    pairs = [(w, s) for w in ws for s in gate(w, fleet).compliant]
    for w, s in pairs:
        assert exclusion_reasons(w, s) == []
    expected = {(w.id, s.id) for w in ws for s in fleet.substrates if not exclusion_reasons(w, s)}
    assert {(w.id, s.id) for w, s in pairs} == expected
    for row in netc_rows(list(ws), fleet, {w.id: 100.0 for w in ws}, horizon_hours=744):
        w = next(x for x in ws if x.id == row.workload)
        assert exclusion_reasons(w, fleet.substrate(row.substrate)) == []
        alt = row.stable_alternative
        if alt is not None:
            assert exclusion_reasons(w, fleet.substrate(str(alt["substrate"]))) == []
    for w in ws:
        g = gate(w, fleet)
        assert {s.id for s in g.compliant}.isdisjoint(g.excluded)

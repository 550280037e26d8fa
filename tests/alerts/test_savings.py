"""Realised savings: totals equal ``finops costs`` to the cent for any grouping and filter; levers add up."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.alerts.savings import LEVERS, realised_savings
from finops_cli.cli.app import app
from finops_cli.store import open_store

runner = CliRunner()
DIMS = ["team", "run_id", "provider", "pricing_category", "instance_type", "account", "month", "service"]


def _cents(totals: dict[str, float]) -> dict[str, int]:
    return {c: round(v * 100) for c, v in totals.items()}


@pytest.mark.parametrize("by", [["team"], ["tag:run_id"], ["team", "provider"]])
def test_sample_company_savings_add_up_to_costs(sample_store: Path, by: list[str]) -> None:
    result = realised_savings(open_store(sample_store), by)
    costs = api.costs(store=sample_store, by=[b.removeprefix("tag:") for b in by])
    assert _cents({c: t["cost"] for c, t in result.totals.items()}) == _cents(costs.totals)
    for row in result.rows:
        assert sum(row[lv] for lv in LEVERS) == pytest.approx(row["savings"], abs=1e-6)
        assert row["reference_cost"] - row["cost"] == pytest.approx(row["savings"], abs=1e-6)


def test_sample_company_references_say_where_they_come_from(sample_store: Path) -> None:
    rows = {r["pricing_category"]: r for r in realised_savings(open_store(sample_store), ["pricing_category"]).rows}
    assert rows["Dynamic"]["reference"] == "bill+pricebook"  # AWS spot states its on-demand cost; GCP spot does not
    assert rows["Other"]["reference"] == "pricebook"  # owned capacity: no on-demand price on the bill
    assert rows["Other"]["owned"] > 0 and rows["Dynamic"]["spot"] > 0 and rows["Committed"]["commitments"] > 0
    assert rows["Standard"]["spot"] == rows["Standard"]["owned"] == 0


@settings(max_examples=examples(12), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    by=st.lists(st.sampled_from(DIMS), min_size=1, max_size=3, unique=True),
    where_team=st.sets(st.sampled_from(["research", "product", "data", "platform", "nobody"]), max_size=2),
    months=st.sets(st.sampled_from(["2026-08", "2026-09", "2026-10"]), max_size=2),
    billed=st.booleans(),
)
def test_savings_totals_equal_costs_to_the_cent(
    company_store: Path, by: list[str], where_team: set[str], months: set[str], billed: bool
) -> None:
    where = {"team": sorted(where_team)} if where_team else None
    cost = "billed" if billed else "effective"
    result = realised_savings(open_store(company_store), by, where=where, months=sorted(months) or None, cost=cost)
    costs = api.costs(
        store=company_store, by=by, where=[f"team={','.join(sorted(where_team))}"] if where_team else None,
        month=None, cost=cost,
    )  # fmt: skip
    if months:  # finops costs takes one --month; sum its per-month groups instead
        costs = api.costs(store=company_store, by=[*by, "month"] if "month" not in by else by, cost=cost,
                          where=[f"team={','.join(sorted(where_team))}"] if where_team else None)  # fmt: skip
        kept = [r for r in costs.rows if r["month"] in months]
        totals: dict[str, float] = {}
        for r in kept:
            totals[r["currency"]] = totals.get(r["currency"], 0.0) + r["cost"]
    else:
        totals = costs.totals
    assert _cents({c: t["cost"] for c, t in result.totals.items() if abs(t["cost"]) > 0}) == _cents(
        {c: v for c, v in totals.items() if abs(v) > 0}
    )
    assert sum(r["cost"] for r in result.rows) == pytest.approx(sum(totals.values()), abs=0.005)


def test_runs_are_priced_against_the_bills_on_demand_reference(company_store: Path) -> None:
    rows = {r["run_id"]: r for r in realised_savings(open_store(company_store), ["tag:run_id"]).rows}
    run = rows["pretrain-01"]  # ten days on two spot p5s (31.20 vs 55.04 on demand) and the on-prem node
    assert run["spot"] == pytest.approx(2 * 240 * (55.04 - 31.2), rel=0.02)
    assert run["owned"] > 0 and run["reference"] == "bill+pricebook"
    assert rows["(none)"]["spot"] == 0  # on-demand product lines carry no run id


def test_cli_savings_json_and_bad_input(company_store: Path) -> None:
    ok = runner.invoke(app, ["savings", "--by", "tag:run_id", "--store", str(company_store), "--format", "json"])
    assert ok.exit_code == 0, ok.output
    assert '"kind": "finops.savings"' in ok.stdout
    bad = runner.invoke(app, ["savings", "--by", "team", "--month", "1999-01", "--store", str(company_store)])
    assert bad.exit_code == 2 and "no billing for it" in bad.output
    table = runner.invoke(app, ["savings", "--by", "team", "--store", str(company_store)])
    assert table.exit_code == 0 and "reference_cost" in table.stdout and "total USD" in table.stdout


def test_spot_work_redone_after_preemptions_leaves_the_on_demand_reference(company_store: Path, tmp_path: Path) -> None:
    trace = tmp_path / "preemptions.csv"
    trace.write_text(
        "timestamp,resource_id,lost_minutes\n"
        "2026-08-13T05:00:00Z,spot-p5-a,45\n"  # pretrain-01 (2026-08-11 … 20), eight GPUs, 45 minutes lost
        "2026-08-15T10:00:00Z,spot-p5-b,\n"  # unstated: half of a 30-minute checkpoint interval
        "2026-08-15T10:00:00Z,not-a-spot-instance,5\n"
    )
    from finops_cli.alerts.interruptions import read_interruptions

    plain = {r["run_id"]: r for r in realised_savings(open_store(company_store), ["run_id"]).rows}
    result = realised_savings(open_store(company_store), ["run_id"], interruptions=read_interruptions(trace))
    rows = {r["run_id"]: r for r in result.rows}
    run, before = rows["pretrain-01"], plain["pretrain-01"]
    assert run["redone_gpu_hours"] == pytest.approx(8 * 0.75 + 8 * 0.25)
    assert run["redone_cost"] == pytest.approx(8 * 31.2 / 8, rel=0.04)  # at the spot rate the bill charged
    assert run["cost"] == before["cost"]  # the redone work was always in the cost
    assert before["spot"] - run["spot"] == pytest.approx(8 * 55.04 / 8)  # those GPU-hours at on demand
    assert before["reference_cost"] - run["reference_cost"] == pytest.approx(8 * 6.88)
    assert sum(run[lv] for lv in LEVERS) == pytest.approx(run["savings"])
    assert rows["pretrain-02"]["redone_gpu_hours"] == 0
    assert any("1 preemption(s) of the trace match no spot line" in n for n in result.notes)
    cli = runner.invoke(app, ["savings", "--by", "tag:run_id", "--store", str(company_store), "--interruptions",
                              str(trace)])  # fmt: skip
    assert cli.exit_code == 0 and "redone_cost" in cli.stdout
    trace.write_text("timestamp,resource_id\nyesterday,spot-p5-a\n")
    bad = runner.invoke(app, ["savings", "--store", str(company_store), "--interruptions", str(trace)])
    assert bad.exit_code == 2 and "line 2" in bad.output and "ISO 8601" in bad.output

"""The report says only what the data says: billed vs amortised vs estimate, other months, partial bills,
latency-critical work on spot, and a spot lever that counts interruptible work only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from finops_cli.core.baseline import savings_breakdown
from finops_cli.report.markdown import (
    ReportInputs,
    WasteInputs,
    levers,
    render_markdown,
    write_report,
)
from finops_cli.schema.estate import Fleet
from finops_cli.schema.plan import PlanDocument
from tests.report.conftest import make_plan

GOLDEN = Path(__file__).parent / "golden"


def _plan(doc: dict[str, Any]) -> PlanDocument:
    return PlanDocument.model_validate(doc)


def _summary(markdown: str) -> str:
    return markdown.split("## Executive summary", 1)[1].split("\n## ", 1)[0]


def _risks(markdown: str) -> str:
    return markdown.split("## Risks and assumptions", 1)[1]


def _waste(month: str | None) -> WasteInputs:
    by = {b: json.loads((GOLDEN / f"sample-waste-{b}.json").read_text()) for b in ("team", "substrate")}
    return WasteInputs(by, month=month)


def test_billing_baseline_is_amortised_and_as_billed_means_billed_cost() -> None:
    doc = make_plan()
    doc["totals"]["baseline_billed_cost"] = 123_456.78
    md = render_markdown(ReportInputs(plan=_plan(doc)))
    summary = _summary(md)
    assert "amortised (EffectiveCost)" in summary
    assert "\\$123,456.78 as billed (BilledCost)" in summary
    # "as billed" only ever labels BilledCost
    assert md.count("as billed") == md.count("as billed (BilledCost)")
    assert "| Baseline, amortised (EffectiveCost) |" in md
    assert "Baseline (billed)" not in md


def test_an_estimated_baseline_is_called_an_estimate_never_billed() -> None:
    doc = make_plan()
    doc["totals"]["baseline_source"] = "merit_order"
    for s in doc["by_substrate"]:
        s["billed"] = None
    md = render_markdown(ReportInputs(plan=_plan(doc)))
    summary = _summary(md)
    assert "is an estimate" in summary and "not what was paid" in summary
    assert "billed" not in summary.lower()
    assert "| Baseline, estimate (merit order) |" in md
    assert "**Baseline (estimate):**" in _risks(md)
    assert "billed" not in md.split("## The plan", 1)[1].split("### Commitments", 1)[0].lower()


def test_waste_from_another_month_is_said_in_the_summary_and_titles(tmp_path: Path) -> None:
    doc = make_plan()  # October 2026
    md = render_markdown(ReportInputs(plan=_plan(doc), waste=_waste("2022-10")))
    assert "Idle waste below is measured in 2022-10" in _summary(md)
    assert "not in October 2026" in _summary(md)
    assert "## Idle waste (2022-10, not the plan's month)" in md
    same = render_markdown(ReportInputs(plan=_plan(doc), waste=_waste("2026-10")))
    assert "measured in" not in _summary(same) and "## Idle waste\n" in same

    captured: dict[str, Any] = {}

    import finops_cli.report.figures as figures

    real = figures.idle_by_team_chart

    def spy(*args: Any, **kwargs: Any) -> Any:
        captured.update(kwargs)
        return real(*args, **kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(figures, "idle_by_team_chart", spy)
    try:
        write_report(ReportInputs(plan=_plan(doc), waste=_waste("2022-10")), tmp_path / "r.md")
    finally:
        mp.undo()
    assert captured["period"] == "2022-10"  # the chart is titled with the data's month, not the plan's


def test_a_partial_bill_is_stated_with_how_much() -> None:
    doc = make_plan()
    for s in doc["by_substrate"]:
        s["billed"] = s["substrate"] != "aws-p5-od-use1"
    md = render_markdown(ReportInputs(plan=_plan(doc)))
    od = next(s for s in doc["by_substrate"] if s["substrate"] == "aws-p5-od-use1")
    share = od["planned_cost"] / doc["totals"]["planned_cost"]
    summary = _summary(md)
    assert "The bill is partial: 1 of " in summary
    assert f"({share:.1%})" in summary
    risks = _risks(md)
    assert "**Partial bill:** no billing line matched aws-p5-od-use1" in risks
    assert "chat-serving \\$19,700.00" in risks
    # every substrate billed: nothing partial
    for s in doc["by_substrate"]:
        s["billed"] = True
    assert "partial" not in render_markdown(ReportInputs(plan=_plan(doc))).lower()


def _latency_on_spot(mode: str) -> dict[str, Any]:
    doc = make_plan()
    doc["mode"] = mode
    for a in doc["allocations"]:
        a["slo"] = "latency_critical" if a["workload"] == "chat-serving" else "standard"
        a["interruptible"] = a["workload"] in ("pretrain-70b", "finetune-eu")
    doc["allocations"].append(
        {"workload": "chat-serving", "substrate": "aws-p5-spot-use1", "kind": "spot", "gpu_hours": 500.0,
         "units": 20_000.0, "cost": 2_000.0, "netc_overhead": 80.0, "slo": "latency_critical",
         "interruptible": False}
    )  # fmt: skip
    return doc


def test_latency_critical_work_on_spot_in_cost_mode_is_a_visible_risk() -> None:
    md = render_markdown(ReportInputs(plan=_plan(_latency_on_spot("cost"))))
    assert "⚠️ **Latency-critical work on spot:** chat-serving 500 GPU-hours (\\$2,000.00)" in _risks(md)
    assert "⚠️ Latency-critical work runs on spot (chat-serving)" in _summary(md)
    calm = render_markdown(ReportInputs(plan=_plan(_latency_on_spot("reliability"))))
    assert "Latency-critical work on spot" not in calm


def test_the_spot_lever_counts_interruptible_work_only() -> None:
    doc = _latency_on_spot("cost")
    plan = _plan(doc)
    spot_shift = plan.savings_breakdown.spot_shift  # type: ignore[union-attr]
    rows = dict((name, value) for name, value in levers(plan))
    assert rows["shifting interruptible work to spot"] == pytest.approx(spot_shift + 2_000.0)
    assert rows["non-interruptible work placed on spot (a risk, not a lever)"] == pytest.approx(-2_000.0)
    assert sum(rows.values()) == pytest.approx(sum(doc["savings_breakdown"].values()))


def test_planner_breakdown_moves_non_interruptible_spot_out_of_the_lever() -> None:
    fleet = Fleet.model_validate(
        {
            "version": 1,
            "substrates": [
                {"id": "spot", "provider": "aws", "kind": "spot", "accelerator": "H100", "jurisdiction": "US",
                 "gpus": 8, "price_per_gpu_hour": 2.0, "interruptions_per_hour": 0.05},
                {"id": "od", "provider": "aws", "kind": "on_demand", "accelerator": "H100", "jurisdiction": "US",
                 "price_per_gpu_hour": 6.0},
            ],
        }
    )  # fmt: skip
    base = pd.Series({"od": 1000.0})
    plan = pd.Series({"spot": 300.0, "od": 100.0})
    out = savings_breakdown(base, plan, fleet, non_interruptible_spot_cost=120.0)
    assert out["spot_shift"] == pytest.approx(-300.0 + 120.0)
    assert out["spot_non_interruptible"] == pytest.approx(-120.0)
    assert sum(out.values()) == pytest.approx(1000.0 - 400.0)  # still adds up to the savings


def test_the_report_cites_only_shipped_documents() -> None:
    md = render_markdown(ReportInputs(plan=_plan(_latency_on_spot("cost")), waste=_waste("2026-10")))
    assert "DESIGN" not in md and "brief" not in md.lower()
    assert "docs/economics.md" in md
    assert (Path(__file__).parents[2] / "docs" / "economics.md").exists()


def test_the_gate_calls_a_merit_order_baseline_an_estimate() -> None:
    from finops_cli.report.gate import evaluate, summary_line

    doc = make_plan()
    assert "billing baseline (amortised)" in summary_line(evaluate(_plan(doc)))
    doc["totals"]["baseline_source"] = "merit_order"
    result = evaluate(_plan(doc))
    assert result.baseline_source == "estimate"
    assert "estimated baseline (merit order)" in summary_line(result) and "billing" not in summary_line(result)

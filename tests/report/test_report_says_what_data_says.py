"""The report says only what the data says: billed vs amortised vs estimate, other months, partial bills,
latency-critical work on spot, and a spot lever that counts interruptible work only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from finops_cli.report.markdown import render_markdown
from finops_cli.report.metrics import ReportInputs, WasteInputs
from finops_cli.report.write import waterfall_steps, write_report
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

    import finops_cli.report.charts as charts

    real = charts.idle_by_team_chart

    def spy(*args: Any, **kwargs: Any) -> Any:
        captured.update(kwargs)
        return real(*args, **kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(charts, "idle_by_team_chart", spy)
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


def _lever(doc: dict[str, Any], lever: str) -> dict[str, Any]:
    return next(r for r in doc["savings_by_lever"]["levers"] if r["lever"] == lever)


def test_a_lever_is_described_by_its_evidence_and_idle_is_never_a_second_lever() -> None:
    doc = make_plan()
    rs = _lever(doc, "right_sizing")
    for evidence, words in (("measured", "idle measured from utilisation"), ("inferred", "idle inferred")):
        rs["evidence"] = evidence
        md = render_markdown(ReportInputs(plan=_plan(doc), waste=_waste("2026-10")))
        summary = _summary(md)
        assert words in summary
        if evidence == "inferred":
            assert "idle measured" not in summary
        # idle measured in the store is stated once as a measurement; it is never added as a lever of its own
        assert "idle GPUs to work" not in md
        assert summary.count("The levers that earned it") == 1
    rs.update(evidence="not_measured", applied=False)
    md = render_markdown(ReportInputs(plan=_plan(doc)))
    assert "right-sizing" not in _summary(md)
    assert "Idle waste was not measured" in _summary(md)


def test_the_lever_table_adds_up_to_the_saving_and_keeps_the_per_kind_change_apart() -> None:
    doc = make_plan()
    doc["savings_by_lever"]["residual"] = 10.0
    _lever(doc, "spot")["saving"] -= 10.0
    plan = _plan(doc)
    rows = waterfall_steps(plan)
    assert sum(v for _, v in rows) == pytest.approx(doc["totals"]["savings"])
    md = render_markdown(ReportInputs(plan=plan))
    assert "Cost change by substrate kind (where the cost lands, not what earned it)" in md
    assert "not attributed to a lever" in md


def test_a_plan_written_before_the_attribution_claims_no_lever() -> None:
    doc = make_plan()
    doc.pop("savings_by_lever")
    doc.pop("cost_change_by_kind")
    doc["savings_breakdown"] = {"idle_reclaimed": 11.0, "spot_shift": -3.1, "commitment_sizing": 0.0,
                                "api_overflow": 0.0}  # fmt: skip
    md = render_markdown(ReportInputs(plan=_plan(doc)))
    assert waterfall_steps(_plan(doc)) == []
    assert "idle reclaimed" not in md.lower() and "The levers that earned it" not in md
    assert "Savings by lever not available" in md


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

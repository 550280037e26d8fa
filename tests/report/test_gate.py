"""finops gate: every rule, every exit code, the JSON result and the GitHub comment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.errors import InputError
from finops_cli.report.gate import (
    GITHUB_COMMENT_LIMIT,
    MARKER,
    Thresholds,
    evaluate,
    parse_plan,
    render_github,
    render_json,
    render_markdown,
)
from tests.report.conftest import BASE_ALLOCATIONS, make_plan, write_plan

runner = CliRunner()


def _head_plan(extra_spot_cost: float = 20_000.0) -> dict:
    """The base plan with more spot: +20,000 cost, spot share up."""
    allocs = [*BASE_ALLOCATIONS, ("pretrain-70b", "gcp-a3-spot-usc1", "spot", 5_000.0, 5_000.0, extra_spot_cost)]
    return make_plan(allocs)


def _eval(thresholds: Thresholds, head: dict | None = None, base: dict | None = None):
    return evaluate(parse_plan(head or _head_plan()), parse_plan(base or make_plan()), thresholds)


def test_delta_and_pct_are_against_the_baseline_plan() -> None:
    base, head = make_plan(), _head_plan()
    result = _eval(Thresholds(), head, base)
    assert result.passed and result.rules == []
    assert result.baseline_cost == pytest.approx(base["totals"]["planned_cost"])
    assert result.planned_cost == pytest.approx(head["totals"]["planned_cost"])
    assert result.delta == pytest.approx(20_000.0)
    assert result.delta_pct == pytest.approx(100 * 20_000.0 / base["totals"]["planned_cost"])
    assert result.baseline_source == "baseline-plan"


@pytest.mark.parametrize(
    ("thresholds", "name", "passed"),
    [
        (Thresholds(budget=1_000_000), "budget", True),
        (Thresholds(budget=100_000), "budget", False),
        (Thresholds(max_increase_usd=20_000), "max-increase-usd", True),  # equal to the limit passes
        (Thresholds(max_increase_usd=19_999.99), "max-increase-usd", False),
        (Thresholds(max_increase_pct=10), "max-increase-pct", True),
        (Thresholds(max_increase_pct=5), "max-increase-pct", False),
        (Thresholds(max_spot_share=0.6), "max-spot-share", True),
        (Thresholds(max_spot_share=0.5), "max-spot-share", False),
    ],
)
def test_each_rule_passes_and_fails(thresholds: Thresholds, name: str, passed: bool) -> None:
    result = _eval(thresholds)
    assert [r.name for r in result.rules] == [name]
    assert result.rules[0].passed is passed
    assert result.passed is passed


def test_spot_share_is_share_of_allocated_cost() -> None:
    head = _head_plan()
    result = _eval(Thresholds(max_spot_share=1.0), head)
    allocs = head["allocations"]
    spot = sum(a["cost"] for a in allocs if a["kind"] == "spot")
    assert result.rules[0].actual == pytest.approx(spot / sum(a["cost"] for a in allocs))


def test_every_failed_rule_is_listed() -> None:
    result = _eval(Thresholds(budget=1, max_increase_pct=1, max_increase_usd=1, max_spot_share=0.01))
    assert not result.passed
    assert [r.name for r in result.failed] == ["budget", "max-increase-pct", "max-increase-usd", "max-spot-share"]


def test_without_baseline_plan_the_billing_baseline_is_used() -> None:
    head = make_plan(baseline_cost=300_000.0)
    result = evaluate(parse_plan(head), None, Thresholds(max_increase_usd=0))
    assert result.baseline_source == "billing"
    assert result.delta == pytest.approx(head["totals"]["planned_cost"] - 300_000.0)
    assert result.passed  # the plan is cheaper than what billing says the month cost


def test_zero_baseline_fails_pct_rule_on_any_increase() -> None:
    base = make_plan([], commitments=[], sunk=0.0)
    result = _eval(Thresholds(max_increase_pct=50), _head_plan(), base)
    assert result.delta_pct is None and not result.passed


@pytest.mark.parametrize(
    ("head_kwargs", "message"),
    [
        ({"currency": "EUR"}, "currency mismatch"),
        ({"hours": 720}, "horizon mismatch"),
        ({"start": "2026-11-01T00:00:00Z"}, "horizon mismatch"),
    ],
)
def test_mismatched_plans_are_refused(head_kwargs: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        evaluate(parse_plan(make_plan(**head_kwargs)), parse_plan(make_plan()), Thresholds(budget=1e9))


def test_increase_rule_without_any_baseline_is_an_input_error() -> None:
    with pytest.raises(InputError, match="needs a baseline"):
        evaluate(parse_plan(make_plan(baseline_cost=None)), None, Thresholds(max_increase_pct=5))


@pytest.mark.parametrize(
    ("thresholds", "message"),
    [
        (Thresholds(max_spot_share=30), "fraction"),
        (Thresholds(budget=-1), "budget"),
        (Thresholds(budget=float("nan")), "finite"),
    ],
)
def test_bad_thresholds_are_input_errors(thresholds: Thresholds, message: str) -> None:
    with pytest.raises(InputError, match=message):
        _eval(thresholds)


# --- CLI exit codes -----------------------------------------------------------------------------------


@pytest.fixture
def plans(tmp_path: Path) -> tuple[Path, Path]:
    return write_plan(tmp_path / "head.json", _head_plan()), write_plan(tmp_path / "base.json", make_plan())


def test_cli_exit_0_when_all_rules_pass(plans: tuple[Path, Path]) -> None:
    head, base = plans
    result = runner.invoke(app, ["gate", "--plan", str(head), "--baseline", str(base), "--max-increase-pct", "10"])
    assert result.exit_code == 0, result.output
    assert "finops gate passed" in result.stdout
    assert "max-increase-pct" in result.stdout and "PASS" in result.stdout


def test_cli_exit_1_lists_every_failed_rule(plans: tuple[Path, Path], tmp_path: Path) -> None:
    head, base = plans
    out = tmp_path / "gate.json"
    args = ["gate", "--plan", str(head), "--baseline", str(base), "--format", "json", "--out", str(out)]
    result = runner.invoke(app, [*args, "--budget", "1000", "--max-increase-usd", "100", "--max-spot-share", "0.9"])
    assert result.exit_code == 1
    assert "budget" in result.stderr and "max-increase-usd" in result.stderr
    doc = json.loads(out.read_text())
    assert set(doc) >= {"schema_version", "passed", "rules", "baseline_cost", "planned_cost", "delta", "delta_pct"}
    assert doc["passed"] is False
    assert {r["name"]: r["passed"] for r in doc["rules"]} == {
        "budget": False,
        "max-increase-usd": False,
        "max-spot-share": True,
    }
    assert set(doc["rules"][0]) >= {"name", "threshold", "actual", "passed"}
    assert doc["delta"] == pytest.approx(20_000.0)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({**make_plan(), "schema_version": 2}), "schema_version 2 is not supported"),
        (json.dumps({k: v for k, v in make_plan().items() if k != "totals"}), "totals"),
        ("[]", "expected a JSON object"),
    ],
)
def test_cli_exit_2_on_invalid_plan(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    result = runner.invoke(app, ["gate", "--plan", str(bad), "--budget", "1"])
    assert result.exit_code == 2
    assert message in result.stderr and "bad.json" in result.stderr
    assert "Traceback" not in result.output


def test_cli_exit_2_on_missing_file_and_on_mismatch(tmp_path: Path, plans: tuple[Path, Path]) -> None:
    head, _ = plans
    missing = runner.invoke(app, ["gate", "--plan", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "file not found" in missing.stderr
    eur = write_plan(tmp_path / "eur.json", make_plan(currency="EUR"))
    mismatch = runner.invoke(app, ["gate", "--plan", str(head), "--baseline", str(eur), "--format", "github"])
    assert mismatch.exit_code == 2 and "currency mismatch" in mismatch.stderr
    assert mismatch.stdout == ""


def test_cli_text_output_reads_without_colour(plans: tuple[Path, Path]) -> None:
    head, base = plans
    result = runner.invoke(app, ["gate", "--plan", str(head), "--baseline", str(base), "--max-spot-share", "0.1"])
    assert result.exit_code == 1
    assert "\x1b[" not in result.stdout
    assert "FAIL" in result.stdout and "+$20,000.00" in result.stdout and "Total" in result.stdout


# --- renderings ---------------------------------------------------------------------------------------

_MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def test_github_comment_summary_first_marker_and_table() -> None:
    result = _eval(Thresholds(max_increase_pct=5))
    body = render_github(result)
    first = body.splitlines()[0].replace("\\$", "$")
    assert first.startswith("### ❌ finops gate FAILED (1 of 1 rules)")
    assert "+$20,000.00" in first
    assert MARKER in body
    assert "| pretrain\\-70b | spot |" not in body  # ids are escaped minimally: '-' is not special
    assert "| pretrain-70b | spot | $41,000.00 | $61,000.00 | +$20,000.00 | +48.8% |" in body
    assert "<details>" not in body  # few rows: shown in full


def test_github_comment_folds_and_caps_huge_plans() -> None:
    n = 4_000
    allocs = [(f"workload-{i:05d}-" + "x" * 60, f"sub-{i}", "on_demand", 1.0, 1.0, float(i)) for i in range(n)]
    head = make_plan(allocs, commitments=[], sunk=0)
    base = make_plan([(w, s, k, g, u, c / 2) for w, s, k, g, u, c in allocs], commitments=[], sunk=0)
    body = render_github(evaluate(parse_plan(head), parse_plan(base)))
    assert len(body) < GITHUB_COMMENT_LIMIT
    assert "<details>" in body and "</details>" in body and MARKER in body
    assert "more rows with smaller changes" in body
    # the biggest changes are the ones kept
    assert "workload-03999" in body and "workload-00001-" not in body


def test_github_comment_escapes_hostile_workload_names() -> None:
    hostile = "evil|<script>alert(1)</script> @org [x](http://e.vil)"
    head = make_plan([(hostile, "s", "spot", 1, 1, 10.0)], commitments=[], sunk=0)
    base = make_plan([(hostile, "s", "spot", 1, 1, 5.0)], commitments=[], sunk=0)
    html = _MD.render(render_github(evaluate(parse_plan(head), parse_plan(base))))
    assert "<script>" not in html and "<a " not in html
    row = next(
        line for line in render_github(evaluate(parse_plan(head), parse_plan(base))).splitlines() if "evil" in line
    )
    assert row.count(" | ") == 5  # 6 cells: the pipe in the name did not split the row


def test_markdown_and_json_renderings_agree_with_the_result() -> None:
    result = _eval(Thresholds(budget=1e9))
    doc = json.loads(render_json(result))
    assert doc["planned_cost"] == result.planned_cost and doc["passed"] is True
    md = render_markdown(result)
    assert "Cost by substrate kind" in md and MARKER not in md


@settings(max_examples=examples(40), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from(["owned", "spot", "api", "reserved"]),
            st.floats(0, 1e6, allow_nan=False),
        ),
        max_size=12,
    ),
    st.floats(0, 1e5, allow_nan=False),
)
def test_breakdown_rows_add_up_to_the_totals(rows: list, sunk: float) -> None:
    allocs = [(w, f"{k}-sub", k, 1.0, 1.0, c) for w, k, c in rows]
    head = make_plan(allocs, sunk=sunk)
    base = make_plan(allocs[::2], sunk=sunk / 2)
    result = evaluate(parse_plan(head), parse_plan(base))
    assert sum(r.planned_cost for r in result.breakdown) == pytest.approx(head["totals"]["planned_cost"], abs=0.01)
    assert sum(r.baseline_cost for r in result.breakdown) == pytest.approx(base["totals"]["planned_cost"], abs=0.01)


@settings(max_examples=examples(60), deadline=None)
@given(
    budget=st.floats(0, 1e6),
    pct_limit=st.floats(-50, 100),
    usd_limit=st.floats(-1e5, 1e5),
    share=st.floats(0, 1),
    slack=st.floats(0, 1e4),
)
def test_rules_fail_exactly_when_actual_exceeds_threshold_and_loosening_never_fails(
    budget: float, pct_limit: float, usd_limit: float, share: float, slack: float
) -> None:
    head, base = parse_plan(_head_plan()), parse_plan(make_plan())
    strict = evaluate(head, base, Thresholds(budget, pct_limit, usd_limit, share))
    for rule in strict.rules:
        assert rule.passed is (rule.actual <= rule.threshold + 1e-9 * max(1.0, abs(rule.threshold)))
    assert strict.passed is all(r.passed for r in strict.rules)
    loose = evaluate(
        head, base, Thresholds(budget + slack, pct_limit + slack, usd_limit + slack, min(1.0, share + slack))
    )
    assert {r.name for r in loose.failed} <= {r.name for r in strict.failed}


def test_cli_markdown_and_text_out_files(plans: tuple[Path, Path], tmp_path: Path) -> None:
    head, base = plans
    for fmt in ("markdown", "text"):
        out = tmp_path / f"gate.{fmt}"
        result = runner.invoke(
            app, ["gate", "--plan", str(head), "--baseline", str(base), "--format", fmt, "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
        assert result.stdout == ""  # the document went to --out; the summary line to stderr
        assert "finops gate passed" in out.read_text() and "finops gate passed" in result.stderr

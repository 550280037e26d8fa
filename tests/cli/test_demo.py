"""The README's main-job command end to end: samples → store → stack → plan → report, all agreeing.

``demo_out`` is the one ``finops demo`` run of the suite (tests/conftest.py): the installed wheel's command, run
outside the source tree, which tests/packaging/test_wheel.py needs anyway; running it again in process would
check the same code twice.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.xdist_group("wheel")  # with tests/packaging/test_wheel.py: one worker runs the demo


def test_readme_names_the_demo_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "pip install -e . && finops demo" in readme
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    test_cmd = re.search(r"pip install -e '\.\[test\]' && python -m pytest[^\n`]*", ci)
    assert test_cmd is not None and test_cmd.group(0) in readme


def test_demo_in_a_checkout_reads_the_checkouts_samples() -> None:
    """``pip install -e . && finops demo`` (the README's line): an editable install ships no ``_samples`` copy, so
    the demo reads ``samples/`` of the checkout, which holds every input the wheel's run above read."""
    from finops_cli.demo import default_samples_dir

    assert default_samples_dir() == REPO / "samples"
    for name in ("fleet.yaml", "workloads.yaml", "billing", "utilization", "spot_prices"):
        assert (REPO / "samples" / name).exists(), name


def test_demo_writes_a_valid_plan_and_prints_its_savings(demo_out: tuple[Path, str]) -> None:
    out, printed = demo_out
    doc = json.loads((out / "plan.json").read_text())
    schema = json.loads((REPO / "docs" / "plan.schema.json").read_text())
    jsonschema.validate(doc, schema)
    totals = doc["totals"]
    assert doc["solver"]["status"] == "optimal"
    assert totals["baseline_cost"] > totals["planned_cost"] > 0
    assert totals["savings"] == pytest.approx(totals["baseline_cost"] - totals["planned_cost"], abs=0.01)
    assert f"${totals['savings']:,.2f}" in printed
    assert not doc["unserved"]


def test_demo_shows_the_slack_payload_of_its_savings(demo_out: tuple[Path, str]) -> None:
    """The demo ends with what ``finops notify --to slack --dry-run`` would post about the plan (docs/alerts.md)."""
    out, printed = demo_out
    tail = printed.split("$ finops notify --to slack --result ", 1)[1]
    payload = json.loads(tail.split("\n", 1)[1])
    savings = json.loads((out / "plan.json").read_text())["totals"]["savings"]
    assert payload["blocks"][0]["text"]["text"].startswith(f"Plan saves ${savings:,.2f}")
    assert "routing_key" not in payload and "hooks.slack.com" not in printed


def test_demo_report_and_charts_exist_and_agree_with_the_plan(demo_out: tuple[Path, str]) -> None:
    out, _ = demo_out
    doc = json.loads((out / "plan.json").read_text())
    report = (out / "report.md").read_text(encoding="utf-8")
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", report)
    assert len(links) >= 4
    for link in links:
        png = out / link
        assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", link
    t = doc["totals"]
    for amount in (t["planned_cost"], t["baseline_cost"], t["savings"]):
        assert f"${amount:,.2f}" in report


# --- the demo's numbers, pinned (issue #16: making the demo faster must not change what it says) ------------

GOLDEN = Path(__file__).parent / "golden"


def _masked_plan(doc: dict) -> dict:
    """plan.json without what changes from run to run: solve times. Price ages are counted to the pinned as-of
    instant (tests/conftest.py), so they are part of the golden file."""
    doc = json.loads(json.dumps(doc))
    for key in ("seconds", "build_seconds"):
        doc["solver"].pop(key, None)
    doc["certification"].pop("seconds", None)
    if doc.get("savings_by_lever"):
        doc["savings_by_lever"].pop("seconds", None)
    return doc


def _masked_report(text: str) -> str:
    """report.md without the solve time."""
    return re.sub(r"finished (\w+) in [0-9.]+ s", r"finished \1 in <seconds> s", text)


def test_demo_records_its_as_of_instant(demo_out: tuple[Path, str]) -> None:
    """The plan says which instant its ages were counted from: the one the suite pinned."""
    out, _ = demo_out
    doc = json.loads((out / "plan.json").read_text())
    assert doc["as_of"] == "2026-11-01T00:00:00Z"
    ref = [p for p in doc["prices"] if p["method"] == "price_ref" and p["age_days"] is not None]
    assert ref and all(p["age_days"] == 32 for p in ref)  # read 2026-09-30, as of 2026-11-01


def test_demo_numbers_are_the_golden_ones(demo_out: tuple[Path, str]) -> None:
    """Every number of plan.json and every line of report.md equal those before the latency work of #16
    (captured from main at 1d346ef): allocations, commitments, duals, certificate, savings, report text.

    A change that is meant to move them regenerates the files with ``FINOPS_UPDATE_GOLDEN=1``."""
    out, _ = demo_out
    plan = _masked_plan(json.loads((out / "plan.json").read_text()))
    report = _masked_report((out / "report.md").read_text(encoding="utf-8"))
    if os.environ.get("FINOPS_UPDATE_GOLDEN"):
        (GOLDEN / "demo-plan.json").write_text(json.dumps(plan, indent=1, sort_keys=True) + "\n")
        (GOLDEN / "demo-report.md").write_text(report, encoding="utf-8")
    assert plan == json.loads((GOLDEN / "demo-plan.json").read_text())
    assert report == (GOLDEN / "demo-report.md").read_text(encoding="utf-8")

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
from typing import Any

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


def _sample_plan() -> Any:
    from types import SimpleNamespace

    from finops_cli.report.gate import parse_plan

    doc = json.loads((REPO / "tests" / "report" / "golden" / "sample-plan.json").read_text())
    return SimpleNamespace(document=parse_plan(doc))


def _console() -> Any:
    import io

    from rich.console import Console

    return Console(file=io.StringIO(), width=140, color_system=None, highlight=False, emoji=False)


def test_plan_tables_rendered_on_a_thread_print_what_render_plan_prints() -> None:
    """The demo renders the plan's tables while the report draws: the same text as printing them directly."""
    from finops_cli.cli.demo import _PlanTables
    from finops_cli.cli.plan import render_plan

    plan = _sample_plan()
    direct, threaded = _console(), _console()
    render_plan(plan.document.model_dump(mode="json"), direct)
    tables = _PlanTables(threaded)
    tables.start(plan)
    tables.print(plan)
    assert threaded.file.getvalue() == direct.file.getvalue()
    assert "Workload" in direct.file.getvalue()


def test_plan_tables_that_fail_on_the_thread_fail_where_they_are_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    """An error while rendering on the thread is not lost: printing renders again and raises it there."""
    from finops_cli.cli import plan as plan_cli
    from finops_cli.cli.demo import _PlanTables

    def broken(doc: dict, console: object) -> None:
        raise ValueError("cannot render")

    monkeypatch.setattr(plan_cli, "render_plan", broken)
    tables = _PlanTables(_console())
    tables.start(_sample_plan())
    with pytest.raises(ValueError, match="cannot render"):
        tables.print(_sample_plan())


def test_the_demo_freezes_the_objects_of_its_imports() -> None:
    """Before its first step the demo has the store's libraries imported, their objects out of the collector's way."""
    import gc
    import sys

    from finops_cli.cli.demo import _freeze_imports

    try:
        _freeze_imports()
        assert {"pandas", "pyarrow", "duckdb"} <= set(sys.modules)
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()

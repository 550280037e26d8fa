"""finops report: golden markdown for the sample estate's plan, charts present, links valid, numbers = plan JSON."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.report.escape import md_text
from finops_cli.report.format import money, number
from finops_cli.report.gate import parse_plan
from finops_cli.report.markdown import render_markdown
from finops_cli.report.metrics import CHART_NAMES, KIND_LABEL, ReportInputs, WasteInputs, cost_by_kind
from finops_cli.report.write import write_report
from finops_cli.schema.plan import PlanDocument
from tests.report.conftest import make_plan, write_plan

GOLDEN = Path(__file__).parent / "golden"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
runner = CliRunner()


def _sample_plan() -> PlanDocument:
    """The real ``finops plan`` output for the sample estate (October 2026), stored as a fixture."""
    return parse_plan(json.loads((GOLDEN / "sample-plan.json").read_text()))


def _sample_waste() -> WasteInputs:
    return WasteInputs(
        {by: json.loads((GOLDEN / f"sample-waste-{by}.json").read_text()) for by in ("team", "substrate")}
    )


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").strip().splitlines()) + "\n"


def _links(markdown: str) -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)


def _row(markdown: str, first_cell: str, after: str = "") -> list[str]:
    """The cells of the first table row whose first cell is ``first_cell`` (below the heading ``after``)."""
    for line in markdown.split(after, 1)[-1].splitlines():
        if line.startswith(f"| {first_cell} |"):
            return [c.strip() for c in line.strip("|").split(" | ")]
    raise AssertionError(f"no row {first_cell!r}")


def test_golden_report_for_the_sample_plan() -> None:
    charts = {key: f"report-{suffix}.png" for key, suffix in CHART_NAMES.items()}
    inputs = ReportInputs(plan=_sample_plan(), waste=_sample_waste())
    from finops_cli.report.metrics import SupplyInputs

    inputs.supply = SupplyInputs({"entries": []}, "USD", "pretrain-70b", "h100_hours", 2.0, 134.4)
    text = _normalise(render_markdown(inputs, charts))
    golden = GOLDEN / "sample-report.md"
    if os.environ.get("FINOPS_REGEN_GOLDEN"):
        golden.write_text(text, encoding="utf-8")
    assert text == _normalise(golden.read_text(encoding="utf-8")), "regenerate with FINOPS_REGEN_GOLDEN=1 if intended"


def test_report_numbers_equal_the_plan_json() -> None:
    plan = _sample_plan()
    t, cur = plan.totals, plan.currency
    text = render_markdown(ReportInputs(plan=plan, waste=_sample_waste()))
    summary = text.split("## Idle waste")[0].replace("\\$", "$")  # prose escapes $ (no GitHub maths)
    assert f"**{money(t.baseline_cost, cur)}**" in summary
    assert f"**{money(t.planned_cost, cur)}**" in summary
    assert f"**{money(t.savings, cur)} (" in summary
    assert money(t.sunk_cost, cur) in summary
    # the mix table: one row per kind, equal to Σ by_substrate of that kind; the total equals planned_cost
    for kind, (base, planned) in cost_by_kind(plan).items():
        cells = _row(text, md_text(KIND_LABEL.get(kind, kind)), after="### Mix by substrate kind")
        assert cells[2] == money(base, cur) and cells[3] == money(planned, cur)
        assert planned == pytest.approx(sum(s.planned_cost for s in plan.by_substrate if s.kind == kind))
    mix_total = _row(text, "**Total**", after="### Mix by substrate kind")
    assert mix_total[2:5] == [
        f"**{money(v, cur, signed=i == 2)}**"
        for i, v in enumerate([t.baseline_cost, t.planned_cost, t.planned_cost - t.baseline_cost])
    ]
    # every spot allocation appears with its cost and NETC overhead
    for a in plan.allocations:
        if a.kind == "spot":
            line = next(x for x in text.splitlines() if x.startswith(f"| {a.workload} | {a.substrate} |"))
            assert money(a.cost, cur) in line and money(a.netc_overhead, cur) in line  # type: ignore[attr-defined]
    # workload usage cost = Σ allocation cost of that workload
    for w in {a.workload for a in plan.allocations}:
        cost = sum(a.cost for a in plan.allocations if a.workload == w)
        assert _row(text, w, after="### Workloads")[3] == money(cost, cur)
    # idle waste totals equal the waste JSON
    waste_total = _sample_waste().by["team"]["totals"]
    assert f"**{number(waste_total['device_hours'])}**" in text


def test_prose_never_has_an_unescaped_dollar_so_github_cannot_render_maths() -> None:
    doc = make_plan(baseline_cost=100.0)  # negative savings: "-$" amounts in prose too
    for plan in (_sample_plan(), parse_plan(doc)):
        text = render_markdown(ReportInputs(plan=plan, waste=_sample_waste()))
        prose = [line for line in text.splitlines() if not line.startswith("|")]
        assert all(re.search(r"(?<!\\)\$", line) is None for line in prose), [
            line for line in prose if re.search(r"(?<!\\)\$", line)
        ]
        cells = [line for line in text.splitlines() if line.startswith("|")]
        assert all(cell.count("$") <= 1 for line in cells for cell in line.split(" | "))


def test_write_report_charts_exist_links_resolve_and_are_png(tmp_path: Path) -> None:
    out = tmp_path / "reports" / "october.md"
    result = write_report(ReportInputs(plan=_sample_plan(), waste=_sample_waste()), out)
    assert result.markdown_path == out and out.read_text() == result.markdown
    links = _links(result.markdown)
    assert {Path(p).name for p in result.chart_paths} == set(links)
    assert set(links) == {"october-idle-by-team.png", "october-baseline-vs-plan.png", "october-savings-waterfall.png"}
    for link in links:
        assert not Path(link).is_absolute()
        assert (out.parent / link).read_bytes()[:8] == PNG_MAGIC
    assert sorted(p.name for p in out.parent.iterdir()) == sorted([out.name, *links])  # no staging left over
    assert any("supply curve" in u for u in result.unavailable)
    assert "_Supply-curve chart not available:" in result.markdown


def test_missing_inputs_say_not_available() -> None:
    text = render_markdown(ReportInputs(plan=parse_plan(make_plan(planner_extras=False, baseline_cost=None))))
    assert "## Idle waste\n\n_Not available:" in text
    assert "_Not available: the plan has no baseline cost._" in text
    assert "Idle waste was not measured" in text
    for section in ("## Executive summary", "## Supply curve", "## The plan", "## Spot exposure and NETC"):
        assert section in text
    assert "## Risks and assumptions" in text


def test_hostile_names_in_the_plan_do_not_break_the_report(tmp_path: Path) -> None:
    evil = "team|x <script>alert(1)</script> [a](http://e.vil) @org\n| --- |"
    doc = make_plan([(evil, evil, "spot", 10.0, 10.0, 100.0), ("ok", "s2", "owned", 5.0, 5.0, 10.0)])
    text = render_markdown(ReportInputs(plan=parse_plan(doc), title="<img src=x onerror=alert(1)>"))
    html = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text)
    assert "<script>" not in html and "<img" not in html and 'href="http://e.vil"' not in html
    for line in text.splitlines():
        if "alert" in line and line.startswith("|"):
            header = next(
                h for h in text.split(line)[0].splitlines()[::-1] if h.startswith("| :") or h.startswith("| -")
            )
            assert line.count(" | ") == header.count(" | ")  # same number of cells as the table's header


def test_report_is_atomic_when_a_chart_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # its own folder: tmp_path also holds the test's XDG config home, where a first import of matplotlib
    # creates its config folder (the check below then saw "xdg-config" next to the report)
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "report.md"
    out.write_text("previous report\n")
    from finops_cli.report import charts

    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(charts, "savings_waterfall_chart", boom)
    with pytest.raises(RuntimeError):
        write_report(ReportInputs(plan=_sample_plan()), out)
    assert out.read_text() == "previous report\n"
    assert [p.name for p in out.parent.iterdir()] == ["report.md"]


def test_cli_report_with_store_fleet_and_workloads_is_complete(tmp_path: Path) -> None:
    """End to end on the sample estate: ingest the sample traces and spot prices, plan, report."""
    samples = Path(__file__).resolve().parents[2] / "samples"
    store = tmp_path / "store"
    env = {"FINOPS_STORE": str(store)}
    steps = [
        ["ingest", "utilization", str(samples / "utilization" / "gpu_util_hourly.csv.gz")],
        ["ingest", "spot-prices", "--file", str(samples / "spot_prices" / "aws-spot-history-2026-10.json")],
        [
            "plan",
            "--fleet",
            str(samples / "fleet.yaml"),
            "--workloads",
            str(samples / "workloads.yaml"),
            "--out",
            str(tmp_path / "plan.json"),
        ],
    ]
    for args in steps:
        result = runner.invoke(app, args, env=env)
        assert result.exit_code == 0, (args, result.output)
    out = tmp_path / "out" / "report.md"
    args = ["report", "--plan", str(tmp_path / "plan.json"), "--out", str(out), "--title", "Kestrel AI — October"]
    args += ["--fleet", str(samples / "fleet.yaml"), "--workloads", str(samples / "workloads.yaml"), "--format", "json"]
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["unavailable"] == []
    text = out.read_text()
    links = _links(text)
    assert len(links) == 4 and all((out.parent / link).read_bytes()[:8] == PNG_MAGIC for link in links)
    plan = json.loads((tmp_path / "plan.json").read_text())
    t = plan["totals"]
    assert text.startswith("# Kestrel AI — October\n")
    assert f"**{money(t['planned_cost'])}**" in text and f"**{money(t['baseline_cost'])}**" in text
    assert "## Idle waste" in text and "_Not available" not in text
    assert "Price-feed age:** latest spot-price sample per provider: aws 2026-10-" in text


def test_cli_report_to_stdout_and_bad_plan_exit_2(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "p.json", make_plan())
    result = runner.invoke(app, ["report", "--plan", str(plan)])
    assert result.exit_code == 0 and result.stdout.startswith("# GPU fleet FinOps report — October 2026")
    assert "![" not in result.stdout  # no --out: no charts to link
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**make_plan(), "schema_version": 7}))
    result = runner.invoke(app, ["report", "--plan", str(bad), "--out", str(tmp_path / "r.md")])
    assert result.exit_code == 2 and "schema_version 7" in result.stderr
    assert not (tmp_path / "r.md").exists()


def test_api_report_accepts_a_document(tmp_path: Path) -> None:
    result = api.report(make_plan(), store=tmp_path / "empty-store", out_path=tmp_path / "r.md", title="T")
    assert result.markdown_path == tmp_path / "r.md" and len(result.chart_paths) == 2
    assert result.markdown.startswith("# T\n")


def test_cli_report_table_format_summarises_what_was_written(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "p.json", make_plan())
    out = tmp_path / "r" / "report.md"
    result = runner.invoke(app, ["report", "--plan", str(plan), "--out", str(out), "--format", "table"])
    assert result.exit_code == 0, result.output
    doc = json.loads(plan.read_text())
    assert money(doc["totals"]["planned_cost"]) in result.stdout and "Total" not in result.stdout
    assert f"wrote {out}" in result.stdout and "\x1b[" not in result.stdout


def test_example_report_in_docs_has_valid_links_and_the_sample_plan_numbers() -> None:
    """docs/examples/report/ is the sample estate's report as rendered on GitHub (regenerate with finops demo)."""
    report = Path(__file__).resolve().parents[2] / "docs" / "examples" / "report" / "report.md"
    text = report.read_text()
    links = _links(text)
    assert len(links) == 4
    assert all((report.parent / link).read_bytes()[:8] == PNG_MAGIC for link in links)
    plan = _sample_plan()
    assert f"**{money(plan.totals.planned_cost)}**" in text and f"**{money(plan.totals.baseline_cost)}**" in text

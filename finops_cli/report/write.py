"""The leadership report written: its charts drawn and every file written atomically beside ``report.md``.

Charts first into a staging directory, then renamed into place, the report last.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from finops_cli.atomic import check_output
from finops_cli.errors import InputError
from finops_cli.report.markdown import render_markdown, waste_month
from finops_cli.report.metrics import (
    BASELINE_LABEL,
    CHART_NAMES,
    KIND_LABEL,
    LEVER_SHORT,
    ReportInputs,
    ReportResult,
    cost_by_kind,
    extra_field,
    period_label,
)
from finops_cli.schema.plan import PlanDocument


def waterfall_steps(plan: PlanDocument) -> list[tuple[str, float]]:
    """The savings waterfall's steps: levers the plan applied and the residual (older plans: none)."""
    by = plan.savings_by_lever
    if by is None:
        return []
    steps = [(LEVER_SHORT[r.lever], float(r.saving)) for r in by.levers if r.applied]
    if by.residual:
        steps.append((LEVER_SHORT["residual"], float(by.residual)))
    return steps


def _draw_charts(inp: ReportInputs, stage: Path, stem: str) -> tuple[dict[str, str], list[str]]:
    """Draw every chart whose inputs exist into ``stage``: {key: file name} in report order, and what was
    unavailable (a supply curve that could not be drawn says why; any other failure is raised)."""
    from finops_cli.report import charts  # matplotlib (~0.6 s): only when a report draws

    plan, cur = inp.plan, inp.plan.currency.upper()
    names = {key: f"{stem}-{name}.png" for key, name in CHART_NAMES.items()}
    drawn: list[str] = []
    if inp.waste is not None and inp.waste.by.get("team", {}).get("groups"):
        groups = inp.waste.by["team"]["groups"]
        priced = any(g.get("idle_cost") is not None for g in groups)
        teams = [str(g.get("key")) for g in groups]
        idle = [float(g.get("idle_cost" if priced else "idle_hours") or 0.0) for g in groups]
        period = waste_month(inp) or period_label(plan)
        charts.idle_by_team_chart(teams, idle, stage / names["idle"], currency=cur if priced else None, period=period)
        drawn.append("idle")
    if inp.supply is not None:
        try:
            charts.merit_order_chart(inp.supply.stack, stage / names["supply"], currency=inp.supply.currency)
            drawn.append("supply")
        except InputError as exc:
            inp.supply_note = str(exc)
    by_kind = cost_by_kind(plan)
    if by_kind:
        known = all(b is not None for b, _ in by_kind.values())
        base_label = f"baseline, {BASELINE_LABEL.get(extra_field(plan.totals, 'baseline_source'), 'source unknown')}"
        kinds = [KIND_LABEL.get(k, k) for k in by_kind]
        baseline = [b or 0.0 for b, _ in by_kind.values()] if known else None
        planned = [p for _, p in by_kind.values()]
        path = stage / names["mix"]
        charts.baseline_vs_plan_chart(kinds, baseline, planned, path, currency=cur, baseline_label=base_label)
        drawn.append("mix")
    t = plan.totals
    if t.baseline_cost is not None:
        path = stage / names["waterfall"]
        charts.savings_waterfall_chart(t.baseline_cost, waterfall_steps(plan), t.planned_cost, path, currency=cur)
        drawn.append("waterfall")
    unavailable = []
    if "supply" not in drawn:
        unavailable.append(f"supply curve: {inp.supply_note}")
    if "idle" not in drawn:
        unavailable.append(f"idle waste: {inp.waste_note}")
    return {key: names[key] for key in CHART_NAMES if key in drawn}, unavailable


def check_report_path(out: Path) -> None:
    """``out`` can take the report and its charts beside it (not a device or a pipe)."""
    if check_output(out) == "stream":
        raise InputError(
            "is a device or pipe; report `out_path` writes charts beside the report, so give a file path",
            path=out,
            mentions=("out_path",),
        )


def write_report(inp: ReportInputs, out: Path | None) -> ReportResult:
    """Draw the charts and write the report atomically beside ``out`` (charts named ``<stem>-<chart>.png``).

    The charts and the report are written into a private staging folder beside ``out`` first, then renamed into
    place: the charts, then the report. With ``out=None`` nothing is written and no charts are linked (markdown
    to stdout only).
    """
    if out is None:
        return ReportResult(None, [], render_markdown(inp), [], inp.plan)
    out = Path(out)
    check_report_path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f".{out.stem}-", dir=out.parent))
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=out) from None
    try:
        charts, unavailable = _draw_charts(inp, stage, out.stem)
        text = render_markdown(inp, charts)
        (stage / out.name).write_text(text, encoding="utf-8")
        for name in charts.values():
            check_output(out.parent / name)  # a chart must not replace an input either (before any move)
        paths = []
        for name in charts.values():  # charts first, the report last: a reader never sees dangling links
            os.replace(stage / name, out.parent / name)
            paths.append(out.parent / name)
        os.replace(stage / out.name, out)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=out) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return ReportResult(out, paths, text, unavailable, inp.plan)

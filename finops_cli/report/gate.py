"""The CI cost gate: a new plan against a baseline plan and a budget, rule by rule (docs/ci.md has the rules,
the baseline and the exit codes). Pure but for :func:`read_plan`: mismatched inputs raise :class:`InputError`
rather than pass or fail on nonsense. The terminal ``text`` rendering lives in ``cli/gate.py`` (rich).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from finops_cli.errors import InputError
from finops_cli.files import parse_json, read_text
from finops_cli.report.escape import Align, left_then_right, md_table, md_text
from finops_cli.report.format import money as _money
from finops_cli.schema.plan import SCHEMA_VERSION, PlanDocument

GATE_SCHEMA_VERSION = 1
MARKER = "<!-- finops-gate -->"
#: GitHub rejects issue/PR comments longer than 65,536 characters; keep a margin for the workflow's own text.
GITHUB_COMMENT_LIMIT = 65_536
_GITHUB_BUDGET = GITHUB_COMMENT_LIMIT - 2_048
#: Above this many detail rows the per-workload table is folded into ``<details>``.
DETAILS_FOLD_ROWS = 15
#: Without ``--max-node-rounding-pct`` the gate warns when whole nodes would add more than this % of the plan.
NODE_ROUNDING_WARN_PCT = 10.0
COMMITMENTS_ROW = "(new commitments)"
FIXED_ROW = "(sunk and fixed costs)"


# --- reading plan documents ------------------------------------------------------------------------


def parse_plan(data: Any, source: str | Path = "plan") -> PlanDocument:
    """Validate a decoded plan JSON document; errors name the source and the field path."""
    if isinstance(data, PlanDocument):
        return data
    if not isinstance(data, dict):
        raise InputError("expected a JSON object (a finops plan document)", path=source)
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InputError(
            f"schema_version {version!r} is not supported; this finops reads plan schema version {SCHEMA_VERSION}"
            " (re-run `finops plan --out ...` with this version)",
            path=source,
        )
    try:
        return PlanDocument.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "document"
        raise InputError(f"{first['msg']} (not a valid plan document)", path=source, where=where) from None


def read_plan(path: str | Path) -> PlanDocument:
    """Read and validate a plan JSON file (``finops plan --out plan.json``)."""
    path = Path(path)
    expected = "a plan JSON from `finops plan --out`"
    text = read_text(path, kind=expected, missing=f"file not found (expected {expected})")
    return parse_plan(parse_json(text, path), path)


def plan_or_path(plan: PlanDocument | dict[str, Any] | str | Path) -> PlanDocument:
    """Accept a document, a decoded dict or a path (the API's convenience)."""
    if isinstance(plan, PlanDocument):
        return plan
    if isinstance(plan, dict):
        return parse_plan(plan)
    return read_plan(plan)


# --- the gate --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Thresholds:
    """The gate's rules; ``None`` = rule not checked. ``max_spot_share`` is a fraction (0.3 = 30 %)."""

    budget: float | None = None
    max_increase_pct: float | None = None
    max_increase_usd: float | None = None
    max_spot_share: float | None = None
    max_price_age: float | None = None  # days; None: the default limit per price method
    fail_on_stale_prices: bool = False
    max_node_rounding_pct: float | None = None

    def validate(self) -> None:
        for name, value in asdict(self).items():
            if value is not None and not math.isfinite(value):
                raise InputError(f": expected a finite number, got {value}", param=name)
        if self.budget is not None and self.budget < 0:
            raise InputError(f": expected an amount ≥ 0, got {self.budget}", param="budget")
        for name in ("max_price_age", "max_node_rounding_pct"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise InputError(f": expected a number ≥ 0, got {value}", param=name)
        if self.max_spot_share is not None and not 0 <= self.max_spot_share <= 1:
            raise InputError(
                f": expected a fraction between 0 and 1, got {self.max_spot_share}", param="max_spot_share"
            )


@dataclass(frozen=True)
class RuleResult:
    name: str
    threshold: float
    actual: float | None
    passed: bool
    message: str


@dataclass(frozen=True)
class BreakdownRow:
    """Cost of one workload on one substrate kind, in the baseline plan and in the new plan."""

    workload: str
    kind: str
    baseline_cost: float | None
    planned_cost: float
    delta: float | None


@dataclass(kw_only=True)
class GateResult:
    """The verdict; :meth:`to_dict` is the JSON result (fields in its order)."""

    schema_version: int = GATE_SCHEMA_VERSION
    passed: bool
    rules: list[RuleResult]
    baseline_cost: float | None
    planned_cost: float
    delta: float | None
    delta_pct: float | None  # percent, e.g. 12.5 means +12.5 %
    currency: str
    baseline_source: str | None  # "baseline-plan" | "billing" | "estimate" (merit order) | None
    spot_share: float
    unserved_units: float
    horizon: dict[str, Any]
    solver: dict[str, Any]
    #: stale or thin prices and node rounding no rule was asked to fail on (one sentence each)
    warnings: list[str] = field(default_factory=list)
    #: 100 · fractional_node_rounding_cost / planned cost (None: the plan has no such figure)
    node_rounding_pct: float | None = None
    breakdown: list[BreakdownRow] = field(default_factory=list)

    @property
    def failed(self) -> list[RuleResult]:
        return [r for r in self.rules if not r.passed]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_comparable(new: PlanDocument, base: PlanDocument) -> None:
    if new.currency.upper() != base.currency.upper():
        raise InputError(
            f"currency mismatch: the new plan is in {new.currency}, the baseline plan in {base.currency}; "
            "costs in different currencies are never compared"
        )
    if (new.horizon.start, new.horizon.hours) != (base.horizon.start, base.horizon.hours):
        raise InputError(
            f"horizon mismatch: the new plan covers {new.horizon.start} + {new.horizon.hours} h, the baseline plan "
            f"{base.horizon.start} + {base.horizon.hours} h; plan both over the same horizon (`horizon`)",
            mentions=("horizon",),
        )


def spot_share(plan: PlanDocument) -> float:
    """Share of allocated cost on spot substrates: ``Σ cost[kind = spot] / Σ cost`` (0 when nothing is allocated)."""
    total = sum(a.cost for a in plan.allocations)
    spot = sum(a.cost for a in plan.allocations if a.kind == "spot")
    return spot / total if total > 0 else 0.0


def cost_by_workload_kind(plan: PlanDocument) -> dict[tuple[str, str], float]:
    """Planned cost per (workload, substrate kind); new commitments and the sunk/fixed remainder get their own
    rows so the rows always add up to ``totals.planned_cost``."""
    costs: dict[tuple[str, str], float] = defaultdict(float)
    kind_of = {a.substrate: a.kind for a in plan.allocations}
    for a in plan.allocations:
        costs[(a.workload, a.kind)] += a.cost
    kind_of |= {s.substrate: s.kind for s in plan.by_substrate}
    for c in plan.commitments:
        costs[(COMMITMENTS_ROW, kind_of.get(c.substrate, "reserved"))] += c.cost
    if plan.by_substrate:  # the planner attributes sunk/prepaid capacity to substrates: keep it under its kind
        per_kind: dict[str, float] = defaultdict(float)
        for s in plan.by_substrate:
            per_kind[s.kind] += s.planned_cost
        for (_, kind), value in costs.items():
            per_kind[kind] -= value
        for kind, rest in per_kind.items():
            if abs(rest) >= 0.005:
                costs[(FIXED_ROW, kind)] += rest
    rest = plan.totals.planned_cost - sum(costs.values())
    if abs(rest) >= 0.005:
        costs[(FIXED_ROW, "fixed")] += rest
    return dict(costs)


def _breakdown(new: PlanDocument, base: PlanDocument | None) -> list[BreakdownRow]:
    new_costs = cost_by_workload_kind(new)
    base_costs = cost_by_workload_kind(base) if base is not None else {}
    rows = []
    for key in sorted(set(new_costs) | set(base_costs)):
        planned = new_costs.get(key, 0.0)
        baseline = base_costs.get(key, 0.0) if base is not None else None
        rows.append(BreakdownRow(key[0], key[1], baseline, planned, None if baseline is None else planned - baseline))
    rows.sort(key=lambda r: (-abs(r.delta if r.delta is not None else r.planned_cost), r.workload, r.kind))
    return rows


def _le(actual: float, threshold: float) -> bool:
    return actual <= threshold + 1e-9 * max(1.0, abs(threshold))


def evaluate(
    new: PlanDocument, baseline: PlanDocument | None = None, thresholds: Thresholds | None = None
) -> GateResult:
    """Check ``new`` against ``baseline`` and ``thresholds``; pure, raises :class:`InputError` on mismatch.

    ``delta = planned − baseline``; ``delta_pct = 100 · delta / baseline`` (``None`` when the baseline is 0,
    and then an increase-percentage rule fails on any increase).
    """
    thresholds = thresholds or Thresholds()
    thresholds.validate()
    if baseline is not None:
        _check_comparable(new, baseline)
        baseline_cost: float | None = baseline.totals.planned_cost
        source: str | None = "baseline-plan"
    elif new.totals.baseline_cost is not None:
        # the plan's own baseline: amortised billing, or an estimate (merit order) when no bill covered it
        estimate = getattr(new.totals, "baseline_source", None) == "merit_order"
        baseline_cost, source = new.totals.baseline_cost, "estimate" if estimate else "billing"
    else:
        baseline_cost, source = None, None

    planned = new.totals.planned_cost
    delta = None if baseline_cost is None else planned - baseline_cost
    delta_pct = None if delta is None or baseline_cost in (None, 0) else 100.0 * delta / abs(baseline_cost)
    share = spot_share(new)
    cur = new.currency.upper()
    rules: list[RuleResult] = []

    th = thresholds
    if th.budget is not None:
        ok = _le(planned, th.budget)
        what = f"planned cost {_money(planned, cur)} {'within' if ok else 'exceeds'} the budget of "
        rules.append(RuleResult("budget", th.budget, planned, ok, what + _money(th.budget, cur)))
    for name, limit in (("max-increase-pct", th.max_increase_pct), ("max-increase-usd", th.max_increase_usd)):
        if limit is None:
            continue
        if delta is None:
            raise InputError(
                "needs a baseline: pass `baseline` base.json (the target branch's plan), "
                "or a plan whose totals.baseline_cost is known (billing ingested)",
                param=name.replace("-", "_"),
                mentions=("baseline",),
            )
        if name == "max-increase-usd":
            what = f"cost change {_money(delta, cur, signed=True)} (limit {_money(limit, cur, signed=True)})"
            rules.append(RuleResult(name, limit, delta, _le(delta, limit), what))
        else:
            ok = _le(delta_pct, limit) if delta_pct is not None else delta <= 0
            shown = "n/a (baseline is 0)" if delta_pct is None else f"{delta_pct:+.2f}%"
            rules.append(RuleResult(name, limit, delta_pct, ok, f"cost change {shown} (limit +{limit:g}%)"))
    if th.max_spot_share is not None:
        what = f"spot carries {share:.1%} of allocated cost (limit {th.max_spot_share:.1%})"
        rules.append(RuleResult("max-spot-share", th.max_spot_share, share, _le(share, th.max_spot_share), what))

    warnings = _price_rules(new, thresholds, rules)
    rounding_pct = _node_rounding_rule(new, thresholds, rules, warnings)
    return GateResult(
        passed=all(r.passed for r in rules),
        rules=rules,
        currency=cur,
        baseline_cost=baseline_cost,
        planned_cost=planned,
        delta=delta,
        delta_pct=delta_pct,
        baseline_source=source,
        spot_share=share,
        horizon=new.horizon.model_dump(),
        solver=new.solver.model_dump(),
        unserved_units=sum(u.units for u in new.unserved),
        breakdown=_breakdown(new, baseline),
        warnings=warnings,
        node_rounding_pct=rounding_pct,
    )


def _price_rules(new: PlanDocument, thresholds: Thresholds, rules: list[RuleResult]) -> list[str]:
    """The ``stale-prices`` rule (``--fail-on-stale-prices``) over the ages plan.json recorded; the warnings left."""
    from finops_cli.core.price_checks import stale_prices, thin_prices

    stale = stale_prices(new.prices, thresholds.max_price_age)
    warnings = thin_prices(new.prices)
    if thresholds.fail_on_stale_prices:
        ok = not stale
        what = "; ".join(stale) if stale else "no price older than its limit"
        rules.append(RuleResult("stale-prices", 0, len(stale), ok, what))
    else:
        warnings = stale + warnings
    return warnings


def _node_rounding_rule(
    new: PlanDocument, thresholds: Thresholds, rules: list[RuleResult], warnings: list[str]
) -> float | None:
    """``max-node-rounding-pct``: what whole nodes would add to a plan that assumed fractional ones, in % of it."""
    added = new.totals.fractional_node_rounding_cost
    planned = new.totals.planned_cost
    if added is None:
        return None
    share = 100.0 * added / planned if planned > 0 else (0.0 if added <= 0 else math.inf)
    cur = new.currency.upper()
    what = (
        f"rounding {new.totals.fractional_nodes or 0} fractional node block(s) up to whole nodes would add "
        f"{_money(added, cur)}, {_pct_text(share)} of the planned cost"
    )
    if thresholds.max_node_rounding_pct is not None:
        ok = _le(share, thresholds.max_node_rounding_pct)
        rules.append(
            RuleResult("max-node-rounding-pct", thresholds.max_node_rounding_pct, _finite(share), ok,
                       f"{what} (limit {thresholds.max_node_rounding_pct:g}%)")
        )  # fmt: skip
    elif share > NODE_ROUNDING_WARN_PCT:
        warnings.append(f"{what}: plan with `integer_nodes` (or gate with `max_node_rounding_pct`)")
    return _finite(share)


def _pct_text(share: float) -> str:
    return "∞ %" if not math.isfinite(share) else f"{share:,.1f}%"


def _finite(x: float) -> float:
    """JSON has no infinity: a share over a zero planned cost is reported as a very large number."""
    return x if math.isfinite(x) else 1e300


# --- renderers -------------------------------------------------------------------------------------


def summary_line(result: GateResult) -> str:
    """One line: verdict, planned cost and change, e.g. ``finops gate passed: planned $1,000.00 (+$50.00, +5.3% vs
    baseline plan)``."""
    cur = result.currency
    verdict = "passed" if result.passed else f"FAILED ({len(result.failed)} of {len(result.rules)} rules)"
    text = f"finops gate {verdict}: planned {_money(result.planned_cost, cur)}"
    if result.delta is not None:
        label = {"baseline-plan": "baseline plan", "estimate": "estimated baseline (merit order)"}.get(
            result.baseline_source or "", "billing baseline (amortised)"
        )
        pct_text = "" if result.delta_pct is None else f", {result.delta_pct:+.1f}%"
        text += f" ({_money(result.delta, cur, signed=True)}{pct_text} vs {label} {_money(result.baseline_cost, cur)})"
    if not result.rules:
        text += "; no rules given"
    return text


def render_json(result: GateResult) -> str:
    return json.dumps(result.to_dict(), indent=2, allow_nan=False)


def threshold_text(rule: RuleResult, currency: str) -> tuple[str, str]:
    if rule.name == "stale-prices":
        return f"{rule.threshold:g} stale", f"{rule.actual:g} stale"
    if rule.name == "max-node-rounding-pct":
        return f"{rule.threshold:g}%", "n/a" if rule.actual is None else _pct_text(rule.actual)
    if rule.name == "max-increase-pct":
        actual = "n/a" if rule.actual is None else f"{rule.actual:+.2f}%"
        return f"+{rule.threshold:g}%", actual
    if rule.name == "max-spot-share":
        return f"{rule.threshold:.1%}", f"{rule.actual:.1%}"
    return _money(rule.threshold, currency), _money(rule.actual, currency, signed=rule.name == "max-increase-usd")


def _rules_table(result: GateResult) -> str:
    rows = []
    for rule in result.rules:
        threshold, actual = threshold_text(rule, result.currency)
        rows.append([f"`{rule.name}`", threshold, actual, "✅ pass" if rule.passed else "❌ **fail**"])
    return md_table(["Rule", "Threshold", "Actual", "Result"], rows, ["left", "right", "right", "left"], trusted=True)


def _cost_rows(items: list[tuple[list[str], float, float]], result: GateResult) -> list[list[str]]:
    cur = result.currency
    rows = []
    for labels, base, planned in items:
        if result.baseline_source != "baseline-plan":
            rows.append([*labels, _money(planned, cur)])
            continue
        delta = planned - base
        small = abs(delta) < 0.005
        pct_text = ("0.0%" if small else f"{100 * delta / base:+.1f}%") if base else ("—" if small else "new")
        rows.append([*labels, _money(base, cur), _money(planned, cur), _money(delta, cur, signed=True), pct_text])
    return rows


def _cost_headers(result: GateResult, first: list[str]) -> tuple[list[str], list[Align]]:
    if result.baseline_source == "baseline-plan":
        return [*first, "Baseline", "New", "Δ", "Δ%"], left_then_right(len(first), 4)
    return [*first, "Planned"], left_then_right(len(first), 1)


def _detail_table(result: GateResult, rows: list[BreakdownRow]) -> str:
    items = [([md_text(r.workload), md_text(r.kind)], r.baseline_cost or 0.0, r.planned_cost) for r in rows]
    headers, align = _cost_headers(result, ["Workload", "Substrate kind"])
    return md_table(headers, _cost_rows(items, result), align, trusted=True)


def _kind_table(result: GateResult) -> str:
    """Cost by substrate kind, then the total row."""
    by_kind: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in result.breakdown:
        by_kind[row.kind][0] += row.baseline_cost or 0.0
        by_kind[row.kind][1] += row.planned_cost
    rows = _cost_rows([([md_text(kind)], b, p) for kind, (b, p) in sorted(by_kind.items())], result)
    cur = result.currency
    total = [_money(result.planned_cost, cur)]
    if result.baseline_source == "baseline-plan":
        pct_text = "—" if result.delta_pct is None else f"{result.delta_pct:+.1f}%"
        total = [_money(result.baseline_cost, cur), *total, _money(result.delta, cur, signed=True), pct_text]
    headers, align = _cost_headers(result, ["Substrate kind"])
    return md_table(headers, [*rows, ["**Total**", *(f"**{x}**" for x in total)]], align, trusted=True)


def _context_line(result: GateResult) -> str:
    h, s = result.horizon, result.solver
    gap = s.get("mip_gap")
    gap_text = "" if gap is None else f", gap {gap:.2%}"
    return (
        f"Horizon {md_text(h.get('start'))} + {h.get('hours')} h in {h.get('blocks')} blocks · "
        f"solver {md_text(s.get('name'))} ({md_text(s.get('status'))}{gap_text}) · "
        f"currency {md_text(result.currency)} · "
        f"spot share {result.spot_share:.1%}"
    )


def _warnings(result: GateResult) -> list[str]:
    out = []
    if result.unserved_units > 0:
        out.append(f"> ⚠️ The new plan leaves {result.unserved_units:,.1f} units of demand unserved.")
    status = str(result.solver.get("status", "")).lower()
    if status and status not in ("optimal", "ok"):
        out.append(f"> ⚠️ Solver status: {md_text(result.solver.get('status'))}.")
    out += [f"> ⚠️ {md_text(w, None)}." for w in result.warnings]
    return out


def _head(result: GateResult, heading: str) -> list[str]:
    """What both markdown renderers open with: verdict, warnings, rules, cost by kind (``heading``: ``##``…)."""
    icon = "✅" if result.passed else "❌"
    summary = summary_line(result).replace("$", "\\$")  # two amounts on one line never pair up as inline maths
    parts = [f"{heading} {icon} {summary}", ""]
    warnings = _warnings(result)
    parts += [*warnings, ""] if warnings else []
    if result.rules:
        parts += [_rules_table(result), ""]
    return [*parts, f"{heading}# Cost by substrate kind", "", _kind_table(result), ""]


def render_markdown(result: GateResult) -> str:
    """The gate result as a markdown document (no size cap, no marker)."""
    parts = _head(result, "##")
    parts += ["### Cost by workload and substrate kind", "", _detail_table(result, result.breakdown), ""]
    parts += [_context_line(result)]
    return "\n".join(parts) + "\n"


def render_github(result: GateResult, limit: int = _GITHUB_BUDGET) -> str:
    """A PR comment: summary line first, rules, cost by kind, per-workload detail (folded into ``<details>``
    when long, trimmed to the smallest changes last so the comment stays under GitHub's 65,536-character
    limit) and the hidden :data:`MARKER` a workflow uses to update the comment in place."""
    head = _head(result, "###")
    tail = ["", f"<sub>{_context_line(result)}</sub>", "", MARKER]

    rows = list(result.breakdown)
    # Rows are sorted by |Δ|, largest first. A row is at least 16 characters, so no more than limit // 16 can
    # fit: render only those, once, and pick how many to keep from their lengths.
    lines = _detail_table(result, rows[: limit // 16 + 1]).split("\n")
    header, body = lines[:2], lines[2:]

    def build(keep: int) -> str:
        omitted = len(rows) - keep
        detail = "\n".join(header + body[:keep])
        if omitted:
            detail += f"\n\n… and {omitted} more rows with smaller changes (full detail: `finops gate --format json`)."
        if len(rows) > DETAILS_FOLD_ROWS or omitted > 0:
            title = f"Cost by workload and substrate kind ({len(rows)} rows)"
            block = ["<details>", f"<summary>{title}</summary>", "", detail, "", "</details>"]
        else:
            block = ["#### Cost by workload and substrate kind", "", detail]
        return "\n".join(head + block + tail) + "\n"

    keep = len(body)
    text = build(keep)
    if len(text) <= limit and keep == len(rows):
        return text
    room = limit - len(build(0))
    keep = sum(1 for used in accumulate(len(line) + 1 for line in body) if used <= room)
    text = build(keep)
    while len(text) > limit and keep > 0:  # the "… N more rows" note can be a digit longer
        keep -= 1
        text = build(keep)
    return text


def render(result: GateResult, fmt: str) -> str:
    """Render for ``--format json|markdown|github`` (``text`` is the CLI's rich table)."""
    renderers = {"json": render_json, "markdown": render_markdown, "github": render_github}
    if fmt not in renderers:
        raise InputError(f"format {fmt!r}: expected one of text, json, markdown, github")
    return renderers[fmt](result)

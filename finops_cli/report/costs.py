"""``finops costs``: spend by group, month over month, and chargeback of idle and shared capacity (docs/analyst.md
states the chargeback rule). Pure functions over :func:`finops_cli.store.cost_query.cost_groups`'s frame, then
:func:`costs_report`, the command on a store. Currencies are never summed together: every total is per currency.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

import pandas as pd

from finops_cli.core.baseline import match_billing
from finops_cli.core.demand import check_month
from finops_cli.errors import InputError
from finops_cli.schema.currency import minor_units
from finops_cli.store.cost_query import NONE, actual_cost_notes, cost_groups, month_coverage, usage_groups
from finops_cli.text import one_line

if TYPE_CHECKING:
    from finops_cli.schema.estate import Fleet
    from finops_cli.store import Store

CostBasis = Literal["billed", "effective"]
ChargebackRule = Literal["proportional", "even"]
COST_COLUMN: dict[str, str] = {"billed": "billed_cost", "effective": "effective_cost"}
COST_BASES: Final[tuple[CostBasis, ...]] = ("billed", "effective")  # `in` narrows a str to CostBasis
CHARGEBACK_RULES: Final[tuple[ChargebackRule, ...]] = ("proportional", "even")
UNALLOCATED = "(unallocated)"


@dataclass
class CostsResult:
    """Rows (dicts) under ``columns`` (name, kind), the total per currency, and notes in words."""

    mode: Literal["groups", "compare", "chargeback"]
    columns: list[tuple[str, str]]
    rows: list[dict[str, Any]]
    totals: dict[str, float]
    cost: CostBasis
    months: list[str]
    notes: list[str] = field(default_factory=list)
    month_reason: str | None = None  # the default-month rule's reason when the month was not given (for stderr)
    warnings: list[str] = field(default_factory=list)  # partial months and the like (stderr, and in notes)
    all_lines: bool = False  # every billing line, not only GPU lines (the title says which)

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "cost": self.cost,
            "months": self.months,
            "columns": [name for name, _ in self.columns],
            "rows": self.rows,
            "totals": self.totals,
            "notes": self.notes,
        }


def group_costs(frame: pd.DataFrame, by: list[str], cost: CostBasis) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """One row per group × currency, largest cost first; and Σ cost per currency. ``per_gpu_hour`` divides the cost
    of the group's GPU lines by their GPU-hours (``gpu_<cost>`` columns), also when the frame holds every line."""
    col = COST_COLUMN[cost]
    keys = [*by, "currency"]
    gpu_col = f"gpu_{col}" if f"gpu_{col}" in frame.columns else col  # GPU lines' cost (all lines: a part of it)
    sums = list(dict.fromkeys(["billed_cost", "effective_cost", "gpu_hours", "lines", gpu_col]))
    g = frame.groupby(keys, dropna=False, sort=False)[sums].sum()
    g = g.reset_index()
    g["cost"] = g[col]
    g["per_gpu_hour"] = (g[gpu_col] / g["gpu_hours"]).where(g["gpu_hours"] > 0)  # over GPU lines only
    g = g.sort_values(["currency", "cost", *by], ascending=[True, False, *([True] * len(by))], kind="stable")
    return _records(g, keys, ["cost", "gpu_hours", "per_gpu_hour", "lines"]), _totals(frame, col)


def _records(frame: pd.DataFrame, keys: list[str], values: list[str]) -> list[dict[str, Any]]:
    """Rows as dicts: ``keys`` as text, ``values`` as Python numbers (``lines`` a count; NaN: None)."""
    return [
        {
            **{k: str(r[k]) for k in keys},
            **{v: None if pd.isna(r[v]) else int(r[v]) if v == "lines" else float(r[v]) for v in values},
        }
        for r in frame.to_dict("records")
    ]


def _totals(frame: pd.DataFrame, col: str) -> dict[str, float]:
    return {str(c): float(v) for c, v in frame.groupby("currency")[col].sum().items()}


def compare_costs(
    frame: pd.DataFrame, by: list[str], cost: CostBasis, month: str, previous: str
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """``month`` against ``previous`` per group × currency: Δ and Δ % (None when new), largest |Δ| first.

    ``frame`` has a ``month`` column; the totals are ``month``'s, per currency.
    """
    col = COST_COLUMN[cost]
    keys = [*by, "currency"]
    now = frame[frame["month"] == month].groupby(keys, sort=False)[col].sum()
    before = frame[frame["month"] == previous].groupby(keys, sort=False)[col].sum()
    both = pd.concat({"cost": now, "previous": before}, axis=1).fillna(0.0).reset_index()
    both["delta"] = both["cost"] - both["previous"]
    both["delta_pct"] = (both["delta"] / both["previous"]).where(both["previous"] != 0)
    both = both.assign(_abs=both["delta"].abs()).sort_values(["_abs", *keys], ascending=[False, *[True] * len(keys)])
    rows = _records(both, keys, ["previous", "cost", "delta", "delta_pct"])
    return rows, _totals(frame[frame["month"] == month], col)


#: ``costs --compare`` calls a month partial when its lines are fewer than this share of the earlier month's.
PARTIAL_LINES_RATIO = 0.5


def partial_month_notes(coverage: pd.DataFrame | None, months: list[str], what: str = "GPU lines") -> list[str]:
    """What makes a month-over-month comparison lopsided, one sentence per month: a month whose ``what`` start on
    fewer days than the month has, or (the later of two months) with fewer than :data:`PARTIAL_LINES_RATIO` of the
    earlier month's lines. ``coverage``: :func:`finops_cli.store.cost_query.month_coverage`'s frame."""
    import calendar

    rows = {} if coverage is None else {str(r["month"]): r for r in coverage.to_dict("records")}
    notes = []
    for month in months:
        r = rows.get(month)
        year, mon = (int(x) for x in month.split("-"))
        size = calendar.monthrange(year, mon)[1]
        if r is None or not r["lines"]:
            notes.append(f"{month} is a partial month: it has no {what}")
            continue
        if int(r["days"]) < size:
            first, last = pd.Timestamp(r["first_start"]), pd.Timestamp(r["last_end"])
            notes.append(
                f"{month} is a partial month: its {what} start on {int(r['days'])} of its {size} days "
                f"({first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC)"
            )
    if len(months) == 2:
        early, late = sorted(months)
        a, b = rows.get(early), rows.get(late)
        if a is not None and b is not None and a["lines"] and b["lines"] < PARTIAL_LINES_RATIO * a["lines"]:
            notes.append(
                f"{late} has far fewer {what} than {early} ({int(b['lines']):,} against {int(a['lines']):,}): "
                "it may be a partial export"
            )
    return notes


def split_exact(amounts: dict[str, float], total: float, currency: str) -> dict[str, float]:
    """Round ``amounts`` to ``currency``'s minor unit so they add up to ``total`` (rounded) exactly.

    Largest remainder: floor every amount in minor units, then hand the missing units to the largest
    fractional parts (ties by key), so no amount moves by more than one minor unit.
    """
    scale = 10 ** minor_units(currency)
    target = round(total * scale)
    scaled = {k: v * scale for k, v in amounts.items()}
    floors = {k: math.floor(v) for k, v in scaled.items()}
    left = target - sum(floors.values())
    order = sorted(scaled, key=lambda k: (-(scaled[k] - floors[k]), k))
    if left < 0:  # float noise can put Σ amounts above the rounded total: take units back, smallest parts first
        order = order[::-1]
    for i in range(abs(left)):
        floors[order[i % len(order)]] += 1 if left > 0 else -1
    return {k: v / scale for k, v in floors.items()}


def chargeback_rows(
    frame: pd.DataFrame,
    usage: pd.DataFrame | None,
    cost: CostBasis,
    rule: ChargebackRule,
    team_tag: str = "team",
) -> tuple[list[dict[str, Any]], dict[str, float], list[str]]:
    """Each team's usage cost plus its share of idle and shared capacity, adding up to the bill per currency.

    ``frame``: cost groups by ``team_tag`` (× currency). ``usage``: per team ``busy_hours`` and
    ``device_hours`` from utilisation (None or empty: no idle known).
    """
    col = COST_COLUMN[cost]
    util: dict[str, dict[str, float]] = {}
    if usage is not None and not usage.empty:
        util = usage.set_index(team_tag)[["busy_hours", "device_hours"]].to_dict("index")
    rows: list[dict[str, Any]] = []
    totals: dict[str, float] = {}
    notes: list[str] = []
    for currency, part in frame.groupby("currency", sort=True):
        by_team = part.groupby(team_tag, sort=True)[col].sum()
        bill = float(by_team.sum())
        totals[str(currency)] = bill
        shared = float(by_team.get(NONE, 0.0))
        direct = {str(t): float(c) for t, c in by_team.items() if t != NONE}
        idle, used = {}, {}
        for t, c in direct.items():
            u = util.get(t)
            frac = 0.0
            if u and u["device_hours"] > 0:
                frac = min(max(1.0 - u["busy_hours"] / u["device_hours"], 0.0), 1.0)
            idle[t], used[t] = c * frac, c * (1.0 - frac)
        pool = sum(idle.values())
        weights = {t: (used[t] if rule == "proportional" else 1.0) for t in direct if direct[t] != 0}
        wsum = sum(weights.values())
        if rule == "proportional" and wsum == 0:  # nobody used anything measurable: fall back to even
            weights = {t: 1.0 for t in weights}
            wsum = float(len(weights))
        raw: dict[str, dict[str, float]] = {}
        for t in direct:
            share = weights.get(t, 0.0) / wsum if wsum else 0.0
            raw[t] = {"usage": used[t], "own_idle": idle[t], "idle_share": pool * share, "shared_share": shared * share}
        if not wsum:  # no team to charge: idle stays with its team, shared stays unallocated
            for t in raw:
                raw[t]["idle_share"] = idle[t]
            if shared:
                raw[UNALLOCATED] = {"usage": 0.0, "own_idle": 0.0, "idle_share": 0.0, "shared_share": shared}
        totals_raw = {t: v["usage"] + v["idle_share"] + v["shared_share"] for t, v in raw.items()}
        exact = split_exact(totals_raw, bill, str(currency))
        rows += [
            {team_tag: t, "currency": str(currency), "direct": direct.get(t, 0.0), **raw[t], "total": exact[t]}
            for t in sorted(raw, key=lambda k: (-exact[k], k))
        ]
        if shared:
            notes.append(f"{currency}: {shared:,.2f} on lines with no {team_tag} tag shared by the {rule} rule")
        if not util:
            notes.append(f"{currency}: no utilisation for these teams: idle unknown, direct cost counted as usage")
    return rows, totals, notes


# --- the costs command: the store queried, grouped, compared or charged back -------------------------


def _name_values(items: list[str] | None) -> dict[str, list[str]]:
    """``["team=research,data", "region=us-east-1"]`` → ``{team: [research, data], region: [us-east-1]}``."""
    out: dict[str, list[str]] = {}
    for item in items or []:
        name, sep, values = item.partition("=")
        if not sep or not name.strip() or not values.strip():
            raise InputError(f"{item!r}: expected NAME=VALUE[,VALUE...] such as team=research", param="where")
        out.setdefault(name.strip(), []).extend(v.strip() for v in values.split(",") if v.strip())
    return out


_COMPARE_COLUMNS = [("previous", "money"), ("cost", "money"), ("delta", "delta"), ("delta_pct", "delta_pct")]
_CHARGEBACK_COLUMNS = [(c, "money") for c in ("direct", "usage", "own_idle", "idle_share", "shared_share", "total")]
_GROUP_COLUMNS = [("cost", "money"), ("gpu_hours", "number"), ("per_gpu_hour", "price"), ("lines", "number")]


#: ``finops costs --by`` takes at most this many dimensions: the 9 built-in ones and a generous number of tags.
#: The query grows super-linearly with them (sample store: 32 dims 2.9 s, 300 dims 4.2 s, 1,000 dims 12.5 s).
MAX_COST_DIMENSIONS = 32


def costs_report(
    st: Store,
    *,
    by: list[str] | None,
    where: list[str] | None,
    month: str | None,
    compare: str | None,
    cost: str,
    fleet: Callable[[], Fleet] | None,
    all_lines: bool,
    chargeback: str | None,
    team_tag: str,
    default_month: Callable[[], tuple[str, str]],
) -> CostsResult:
    """:func:`finops_cli.api.costs` on the store ``st``: ``fleet`` loads the fleet when substrates are asked for,
    ``default_month`` is the default-month rule (the month and why)."""
    check_month(month)
    check_month(compare, "compare")
    if cost not in COST_BASES:
        raise InputError(f"{cost!r}: expected billed or effective", param="cost")
    if chargeback is not None and chargeback not in CHARGEBACK_RULES:
        raise InputError(f"{chargeback!r}: expected proportional or even", param="chargeback")
    if chargeback is not None and compare is not None:
        raise InputError(
            "`chargeback` and `compare` answer different questions; give one", mentions=("chargeback", "compare")
        )
    by = [b.strip() for b in (by or []) if b.strip()]
    if chargeback is not None:
        if by:
            raise InputError("groups by team (`team_tag`); drop `by`", param="chargeback", mentions=("team_tag", "by"))
        by = [team_tag]
    if len(by) > MAX_COST_DIMENSIONS:
        raise InputError(
            f"names {len(by):,} dimensions; at most {MAX_COST_DIMENSIONS} (each one is a column and a "
            "grouping key: the query grows faster than the list)",
            param="by",
        )
    twice = next((b for i, b in enumerate(by) if b in by[:i]), None)
    if twice is not None:  # name the one repeated, not the whole (possibly huge) argument
        raise InputError(f": {one_line(twice, 60)!r} is named twice", param="by")
    filters = _name_values(where)
    periods = st.partition_values("billing", "billing_period") if st.has("billing") else []
    if not periods:
        raise InputError("no billing in the store; run 'finops ingest billing' first")
    month_reason = None
    if (compare or chargeback) and month is None:
        month, month_reason = default_month()  # the one default-month rule (plan, stack, waste, estate draft)
        if compare == month:
            raise InputError(
                f"{compare} is the month itself (month: {month}: {month_reason}); give `month` for the other month",
                param="compare",
                mentions=("month",),
            )
    for param, value in (("month", month), ("compare", compare)):
        if value is not None and value not in periods:
            raise InputError(f"{value}: no billing for it in the store (have {', '.join(periods)})", param=param)
    months = [m for m in (month, compare) if m is not None]
    need_substrate = "substrate" in by or "substrate" in filters
    match_cols: list[str] = []
    fl = None
    if need_substrate:
        if fleet is None:
            raise InputError("substrate needs `fleet` (the substrates and their match rules)", mentions=("fleet",))
        fl = fleet()
        extra = sorted({c for s in fl.substrates for c in (s.match or {})})
        match_cols = list(dict.fromkeys(["provider", "RegionId", "x_InstanceType", "PricingCategory", *extra]))
    group_cols = [c for c in by if c != "substrate"]
    if compare is not None and "month" not in group_cols:
        group_cols.append("month")
    sql_cols = list(dict.fromkeys([*group_cols, *match_cols]))
    sql_where = {k: v for k, v in filters.items() if k != "substrate"}
    frame = cost_groups(st, sql_cols, where=sql_where, months=months or None, gpu_only=not all_lines)
    assert frame is not None
    if need_substrate:
        assert fl is not None
        matched = match_billing(frame.replace({NONE: None}), fl)
        frame["substrate"] = matched.fillna("(unmatched)").astype(str)
        if "substrate" in filters:
            frame = frame[frame["substrate"].isin(filters["substrate"])]
    basis = cost
    notes: list[str] = []
    actual_only = actual_cost_notes(st, months or periods) if basis == "effective" else []
    if all_lines and chargeback is None:
        notes.append("all lines: cost is every line's; per_gpu_hour is the GPU lines' cost ÷ their GPU-hours")
    if frame.empty:
        notes.append("no billing line matches" + ("" if all_lines else " (GPU lines only; `all_lines` for every line)"))
    if compare is not None:
        assert month is not None
        rows, totals = compare_costs(frame, [b for b in by if b != "month"], basis, month, compare)
        cols = [(b, "text") for b in by if b != "month"]
        columns = [*cols, ("currency", "text"), *_COMPARE_COLUMNS]
        coverage = month_coverage(st, [month, compare], gpu_only=not all_lines)
        partial = partial_month_notes(coverage, [month, compare], "lines" if all_lines else "GPU lines")
        return CostsResult(
            "compare", columns, rows, totals, basis, [month, compare], notes + partial + actual_only, month_reason,
            partial + actual_only, all_lines,
        )  # fmt: skip
    if chargeback is not None:
        usage = usage_groups(st, team_tag, months)
        rows, totals, more = chargeback_rows(frame, usage, basis, chargeback, team_tag)
        columns = [(team_tag, "text"), ("currency", "text"), *_CHARGEBACK_COLUMNS]
        return CostsResult(
            "chargeback", columns, rows, totals, basis, months, notes + more + actual_only, month_reason, actual_only
        )
    rows, totals = group_costs(frame, by, basis)
    columns = [*[(b, "text") for b in by], ("currency", "text"), *_GROUP_COLUMNS]
    return CostsResult(
        "groups", columns, rows, totals, basis, months or periods, notes + actual_only, None, actual_only, all_lines
    )

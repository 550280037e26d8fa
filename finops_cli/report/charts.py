"""The charts as PNG files (matplotlib, Agg backend: no display): data in, path out, written atomically.

The merit-order supply curve of ``finops stack`` (the report reuses it), idle spend by team, baseline vs plan by
substrate kind and the savings waterfall. Labels from data (team names, kinds) pass through
:func:`~finops_cli.report.escape.plot_label` so a ``$`` in a tag cannot start mathtext.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from finops_cli.atomic import atomic_path
from finops_cli.report.escape import plot_label
from finops_cli.report.format import compact_money, currency_symbol
from finops_cli.schema.currency import minor_units

#: How every chart's PNG is encoded: zlib level 3 rather than Pillow's default 6 gives files within 0-8 % of the size
#: (anti-aliased plots compress little better at 6) in about 60 % of the encoding time (5-10 ms less a chart).
PNG_OPTIONS: dict[str, Any] = {"compress_level": 3}
DPI = 110

KIND_COLOURS = {
    "owned": "#4C72B0",
    "reserved": "#55A868",
    "spot": "#DD8452",
    "on_demand": "#C44E52",
    "api": "#8172B3",
}


def _money_formatter(currency: str) -> FuncFormatter:
    symbol = currency_symbol(currency)
    decimals = minor_units(currency)

    def fmt(value: float, _pos: int) -> str:
        body = f"{value:,.{decimals}f}" if abs(value) < 100 else f"{value:,.0f}"
        if abs(value) < 0.1 and value != 0:
            body = f"{value:,.3g}"
        return f"{symbol}{body}" if symbol else f"{body} {currency}"

    return FuncFormatter(fmt)


def merit_order_chart(stack: Any, path: str | os.PathLike[str], *, currency: str = "USD") -> Path:
    """The merit-order step curve of ``stack`` (a :class:`~finops_cli.core.stack.Stack` or its JSON shape):
    cumulative capacity on x, cost per unit on y, a step per entry coloured by kind, demand and clearing price."""
    doc: Mapping[str, Any] = stack if isinstance(stack, Mapping) else stack.as_dict()
    entries: Sequence[Mapping[str, Any]] = doc.get("entries") or []
    unit = doc.get("unit") or "units"
    demand = doc.get("demand_units")
    clearing = doc.get("clearing_price")
    finite = [e["capacity_units"] for e in entries if e.get("capacity_units") is not None]
    total_finite = float(sum(finite))
    x_max = max(total_finite, float(demand or 0.0)) * 1.15 or 1.0

    fig, ax = plt.subplots(figsize=(9.0, 5.0), dpi=DPI)
    x = 0.0
    costs = []
    for e in entries:
        cap = e.get("capacity_units")
        width = (x_max - x) if cap is None else float(cap)
        if width <= 0:
            continue
        cost = float(e["cost_per_unit"])
        costs.append(cost)
        colour = KIND_COLOURS.get(str(e.get("kind")), "#999999")
        hatch = "//" if e.get("purchasable") else None
        ax.bar(x, cost, width=width, align="edge", color=colour, edgecolor="white", linewidth=0.5, hatch=hatch)
        if width > x_max * 0.06:
            ax.text(x + width / 2, cost, str(e["substrate"]), ha="center", va="bottom", fontsize=7, rotation=0)
        x += width
        if cap is None:
            break
    positive = [c for c in costs if c > 0]
    if positive and max(positive) / min(positive) > 50:
        if len(positive) == len(costs):
            ax.set_yscale("log")
        else:  # zero-cost (prepaid) steps need a linear part near 0
            ax.set_yscale("symlog", linthresh=min(positive))
    if demand is not None and math.isfinite(float(demand)):
        ax.axvline(float(demand), color="black", linestyle="--", linewidth=1.2, label=f"demand {float(demand):,.1f}")
    if clearing is not None:
        ax.axhline(float(clearing), color="black", linestyle=":", linewidth=1.0, label="clearing price")
    ax.set_xlim(0, x_max)
    ax.set_xlabel(f"cumulative capacity ({unit} per hour)")
    ax.set_ylabel(f"cost per {unit} ({currency})")
    ax.yaxis.set_major_formatter(_money_formatter(currency))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.0f}"))
    mode = doc.get("mode")
    ax.set_title(f"Merit order: {doc.get('workload') or 'fleet'}" + (f" ({mode} mode)" if mode else ""))
    kinds = [k for k in KIND_COLOURS if any(e.get("kind") == k for e in entries)]
    handles = [Patch(color=KIND_COLOURS[k], label=k) for k in kinds]
    line_handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=handles + line_handles, loc="upper left", fontsize=8, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    # tight_layout leaves a placeholder layout engine behind, and savefig would lay the figure out again for it (a
    # second pass over every text, ≈ 10 ms): the layout is done, so none.
    fig.set_layout_engine(None)

    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", pil_kwargs=dict(PNG_OPTIONS))
    finally:
        plt.close(fig)
    return Path(path)


SAVING = "#2e7d32"
INCREASE = "#c62828"
BASELINE = "#9e9e9e"
PLAN = "#1565c0"
TOTAL = "#37474f"


def _money_axis(ax: Axes, currency: str, axis: str = "y") -> None:
    formatter = FuncFormatter(lambda value, _pos: plot_label(compact_money(value, currency)))
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(formatter)


def save_figure(fig: Figure, path: Path) -> Path:
    """Write ``fig`` to ``path`` as PNG atomically and close it."""
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=DPI, bbox_inches="tight", pil_kwargs=dict(PNG_OPTIONS))
    finally:
        plt.close(fig)
    return Path(path)


def idle_by_team_chart(
    teams: Sequence[str], idle: Sequence[float], path: Path, *, currency: str | None = "USD", period: str = ""
) -> Path:
    """Horizontal bars of idle dollars per team, largest on top (``currency=None``: idle GPU-hours, for a
    store whose devices could not be priced)."""
    pairs = sorted(zip(teams, idle, strict=True), key=lambda p: p[1])
    fig, ax = plt.subplots(figsize=(8, 0.45 * max(len(pairs), 3) + 1.4))
    labels = [plot_label(t) for t, _ in pairs]
    values = [v for _, v in pairs]
    bars = ax.barh(labels, values, color=INCREASE, alpha=0.85)
    when = " — " + plot_label(period) if period else ""
    if currency is not None:
        ax.bar_label(bars, labels=[plot_label(compact_money(v, currency)) for v in values], padding=3, fontsize=9)
        ax.set_title(f"Idle GPU spend by team{when}")
        ax.set_xlabel(f"idle cost ({currency}): cost per GPU-hour × idle GPU-hours")
        _money_axis(ax, currency, "x")
    else:
        ax.bar_label(bars, labels=[f"{v:,.0f}" for v in values], padding=3, fontsize=9)
        ax.set_title(f"Idle GPU-hours by team{when} (not priced)")
        ax.set_xlabel("idle GPU-hours: Σ (1 − utilisation) × device-hours")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:,.0f}"))
    ax.margins(x=0.15)
    ax.grid(axis="x", alpha=0.3)
    return save_figure(fig, path)


def baseline_vs_plan_chart(
    kinds: Sequence[str],
    baseline: Sequence[float] | None,
    planned: Sequence[float],
    path: Path,
    *,
    currency: str = "USD",
    baseline_label: str = "baseline",
) -> Path:
    """Grouped bars: baseline and planned cost per substrate kind (plan only when the baseline is unknown)."""
    fig, ax = plt.subplots(figsize=(8, 4.2))
    x = range(len(kinds))
    width = 0.38 if baseline is not None else 0.6
    groups = []  # (bars, the values they draw): each bar is labelled with its own value
    if baseline is not None:
        bars = ax.bar([i - width / 2 for i in x], baseline, width, label=plot_label(baseline_label), color=BASELINE)
        groups.append((bars, baseline))
    offset = width / 2 if baseline is not None else 0.0
    groups.append((ax.bar([i + offset for i in x], planned, width, label="plan", color=PLAN), planned))
    for bars, values in groups:
        ax.bar_label(bars, labels=[plot_label(compact_money(v, currency)) for v in values], fontsize=8)
    ax.set_xticks(list(x), [plot_label(k) for k in kinds])
    ax.set_title(
        "Cost by substrate kind: baseline vs plan" if baseline is not None else "Planned cost by substrate kind"
    )
    ax.set_xlabel("substrate kind")
    ax.set_ylabel(f"cost over the horizon ({currency})")
    _money_axis(ax, currency)
    ax.margins(y=0.15)
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    return save_figure(fig, path)


def savings_waterfall_chart(
    baseline_cost: float,
    steps: Sequence[tuple[str, float]],
    planned_cost: float,
    path: Path,
    *,
    currency: str = "USD",
) -> Path:
    """Waterfall from the baseline to the plan: each lever is a bar of ``−saving`` (green when it saves).

    ``steps`` are ``(lever, saving)`` with ``saving > 0`` reducing cost; ``baseline − Σ savings`` should equal
    ``planned_cost`` (a residual bar is drawn if not, so the chart never lies).
    """
    steps = list(steps)
    residual = baseline_cost - sum(s for _, s in steps) - planned_cost
    if abs(residual) >= 0.5:  # more than rounding of the per-lever cents
        steps.append(("other", residual))
    labels = ["baseline"]
    bottoms, heights, colours = [0.0], [baseline_cost], [TOTAL]
    level = baseline_cost
    for name, saving in steps:
        new_level = level - saving
        labels.append(plot_label(name))
        bottoms.append(min(level, new_level))
        heights.append(abs(saving))
        colours.append(SAVING if saving >= 0 else INCREASE)
        level = new_level
    labels.append("plan")
    bottoms.append(0.0)
    heights.append(planned_cost)
    colours.append(PLAN)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    bars = ax.bar(labels, heights, bottom=bottoms, color=colours)
    texts = [plot_label(compact_money(baseline_cost, currency))]
    texts += [plot_label(("+" if s < 0 else "") + compact_money(-s, currency)) for _, s in steps]
    texts += [plot_label(compact_money(planned_cost, currency))]
    ax.bar_label(bars, labels=texts, label_type="edge", padding=2, fontsize=8)
    ax.margins(y=0.08)
    ax.set_title("Where the savings come from: baseline → plan")
    ax.set_ylabel(f"cost over the horizon ({currency})")
    _money_axis(ax, currency)
    ax.grid(axis="y", alpha=0.3)
    plt.setp(ax.get_xticklabels(), rotation=15, ha="right")
    return save_figure(fig, path)

"""The report's charts (idle dollars by team, baseline vs plan by substrate kind, savings waterfall) as PNGs.

matplotlib with the Agg backend (no display needed). Every chart has a title that says what it shows,
axes with units and currency-formatted ticks. Labels come from data (team names, kinds) and are passed
through :func:`~finops_cli.report.escape.plot_label` so a ``$`` in a tag cannot start mathtext.
Each function writes atomically (temp file + rename) and returns the path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from finops_cli.atomic import atomic_path
from finops_cli.report.charts import PNG_OPTIONS
from finops_cli.report.escape import plot_label
from finops_cli.report.format import compact_money

DPI = 110
SAVING = "#2e7d32"
INCREASE = "#c62828"
BASELINE = "#9e9e9e"
PLAN = "#1565c0"
TOTAL = "#37474f"


def _money_axis(ax, currency: str, axis: str = "y") -> None:
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
    baseline_label: str = "baseline",
) -> Path:
    """Waterfall from the baseline to the plan: each lever is a bar of ``−saving`` (green when it saves).

    ``steps`` are ``(lever, saving)`` with ``saving > 0`` reducing cost; ``baseline − Σ savings`` should equal
    ``planned_cost`` (a residual bar is drawn if not, so the chart never lies).
    """
    steps = list(steps)
    residual = baseline_cost - sum(s for _, s in steps) - planned_cost
    if abs(residual) >= 0.5:  # more than rounding of the per-lever cents
        steps.append(("other", residual))
    labels = [plot_label(baseline_label)]
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

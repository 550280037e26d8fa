"""One PNG per market experiment (matplotlib, Agg backend; no display needed), in the paper's figure shapes.

Each function takes the experiment's JSON shape (:meth:`ExperimentResult.as_dict`) and a path, writes
the chart atomically and returns the path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from finops_cli.atomic import atomic_path

POLICY_STYLE = {
    "fcfs": ("#9e9e9e", "o", "FCFS (on-demand contract)"),
    "fcfs-preempt": ("#dd8452", "s", "spot oracle (value-aware preemption)"),
    "spot": ("#c62828", "v", "spot (opt-in class, provider preempts)"),
    "renegotiate": ("#1565c0", "^", "renegotiate (LaissezCloud)"),
    "on-demand": ("#2e7d32", "D", "on-demand, uncontended"),
}


def _plt() -> Any:  # matplotlib.pyplot, imported only when a chart is drawn
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | os.PathLike[str]) -> Path:
    plt = _plt()
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    finally:
        plt.close(fig)
    return Path(path)


def _pct_axis(ax: Any) -> None:
    from matplotlib.ticker import PercentFormatter

    ax.yaxis.set_major_formatter(PercentFormatter(1.0))


def _policies(doc: dict[str, Any]) -> list[str]:
    """The compared policies present in an experiment's rows, in legend order."""
    present = {r.get("policy") for r in doc["rows"]}
    return [p for p in ("fcfs", "spot", "fcfs-preempt", "renegotiate") if p in present]


def contention_chart(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Figure 6 shape: per composition, performance retained (top) and cost (bottom) vs contention."""
    plt = _plt()
    comps = list(dict.fromkeys(r["composition"] for r in doc["rows"]))
    fig, axes = plt.subplots(2, len(comps), figsize=(4.2 * len(comps), 6.5), squeeze=False, sharex=True, sharey="row")
    for c, comp in enumerate(comps):
        for policy in _policies(doc):
            rows = [r for r in doc["rows"] if r["composition"] == comp and r["policy"] == policy]
            colour, marker, label = POLICY_STYLE[policy]
            x = [r["contention"] for r in rows]
            err = [r.get("retained_ci") or 0.0 for r in rows]
            axes[0][c].errorbar(
                x, [r["retained"] for r in rows], yerr=err, marker=marker, color=colour, label=label, capsize=3
            )
            axes[1][c].plot(x, [r["cost"] for r in rows], marker=marker, color=colour, label=label)
        axes[0][c].set_title(comp)
        _pct_axis(axes[0][c])
        axes[1][c].set_xlabel("contention ρ (offered load ÷ capacity)")
    axes[0][0].set_ylabel("performance retained vs uncontended")
    axes[1][0].set_ylabel("cost paid (USD)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"Contention: performance and cost per policy (mean, 95 % CI over seeds {doc['params'].get('seeds')})")
    return _save(fig, path)


def overhead_chart(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Figures 13 and 15: retained performance vs the migration-cost multiplier; vs the mis-estimate."""
    plt = _plt()
    fig, (a, b) = plt.subplots(1, 2, figsize=(14, 4.6))
    fig.subplots_adjust(wspace=0.5)
    a2 = a.twinx()
    for sweep, style, name in (("overhead", "-", "incumbent subtracts M"), ("overhead-add", "-.", "incumbent adds M")):
        over = [r for r in doc["rows"] if r["sweep"] == sweep]
        x = [max(r["multiplier"], 1e-2) for r in over]
        colour = POLICY_STYLE["renegotiate"][0]
        a.plot(
            x, [r["retained"] for r in over], marker="^", linestyle=style, color=colour, label=f"renegotiate, {name}"
        )
        a2.plot(x, [r["migrations_per_tenant"] for r in over], color="#c62828", alpha=0.6, linestyle=style)
    a.plot(x, [r["fcfs_retained"] for r in over], linestyle="--", color=POLICY_STYLE["fcfs"][0], label="FCFS")
    a.set_xscale("log")
    a.set_xlabel("migration cost × multiplier (0 drawn at 0.01)")
    a.set_ylabel("performance retained vs uncontended")
    _pct_axis(a)
    a2.set_ylabel("migrations per tenant (red)", color="#c62828")
    a.legend(fontsize=8, loc="lower left")
    a.set_title("Overhead sweep (Fig. 13)")
    mis = [r for r in doc["rows"] if r["sweep"] == "misestimate"]
    b.plot([r["estimate"] for r in mis], [r["retained"] for r in mis], marker="^", color=POLICY_STYLE["renegotiate"][0])
    b.set_xlabel("agent's estimate ÷ true migration cost")
    b.set_ylabel("performance retained vs uncontended")
    _pct_axis(b)
    b2 = b.twinx()
    b2.plot([r["estimate"] for r in mis], [r["cost"] for r in mis], color="#6d4c41", linestyle="--", marker=".")
    b2.set_ylabel("cost paid (USD)", color="#6d4c41")
    b.set_title("Mis-estimated overhead (Fig. 15)")
    return _save(fig, path)


def volatility_chart(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Figure 14: churn vs performance, one point per (bid_clip, floor_fall_per_hour)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 5))
    falls = list(dict.fromkeys(r["floor_fall_per_hour"] for r in doc["rows"]))
    markers = "o^sDvP"
    for k, fall in enumerate(falls):
        rows = [r for r in doc["rows"] if r["floor_fall_per_hour"] == fall]
        ax.scatter(
            [r["churn_per_tenant_hour"] for r in rows],
            [r["retained"] for r in rows],
            marker=markers[k % len(markers)],
            label=f"floor fall {'∞' if fall is None else f'{fall:g} $/h²'}",
        )
        for r in rows:
            clip = "none" if r["bid_clip"] is None else f"{r['bid_clip']:g}"
            ax.annotate(
                clip, (r["churn_per_tenant_hour"], r["retained"]), fontsize=6, xytext=(3, 2), textcoords="offset points"
            )
    fcfs = doc["summary"].get("fcfs_retained")
    if fcfs is not None:
        ax.axhline(fcfs, color=POLICY_STYLE["fcfs"][0], linestyle="--", label="FCFS")
    ax.set_xlabel("churn: migrations per tenant-hour")
    ax.set_ylabel("performance retained vs uncontended")
    _pct_axis(ax)
    ax.legend(fontsize=8)
    ax.set_title("Volatility controls: churn vs performance (labels: bid_clip)")
    return _save(fig, path)


def frontier_chart(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Figure 8: the probe tenant's cost vs performance as its budget varies, with baseline points."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 5))
    curve = [r for r in doc["rows"] if r["policy"] == "renegotiate"]
    colour, marker, label = POLICY_STYLE["renegotiate"]
    ax.plot([r["cost"] for r in curve], [r["retained"] for r in curve], marker=marker, color=colour, label=label)
    for r in curve:
        m = "∞" if r["budget_multiple"] is None else f"{r['budget_multiple']:g}×"
        ax.annotate(m, (r["cost"], r["retained"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    for r in doc["rows"]:
        if r["policy"] != "renegotiate":
            colour, marker, label = POLICY_STYLE[r["policy"]]
            ax.scatter([r["cost"]], [r["retained"]], color=colour, marker=marker, s=60, label=label, zorder=3)
    ax.set_xlabel("probe tenant's cost (USD)")
    ax.set_ylabel("probe's performance retained (best time ÷ achieved)")
    _pct_axis(ax)
    ax.legend(fontsize=8)
    ax.set_title("Cost–performance frontier of one tenant (labels: budget ÷ cheapest cost at base)")
    return _save(fig, path)


def operator_chart(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Figure 11: the capped group's load over time per policy, with the operator's cap."""
    plt = _plt()
    levels = list(dict.fromkeys(r["contention"] for r in doc["rows"]))
    fig, axes = plt.subplots(1, len(levels), figsize=(6 * len(levels), 4.2), squeeze=False)
    cap = doc["summary"].get("cap")
    for c, rho in enumerate(levels):
        ax = axes[0][c]
        for policy in _policies(doc):
            tl = doc["series"].get(f"{policy} rho={rho:g}") or []
            if tl:
                colour, _m, label = POLICY_STYLE[policy]
                ax.step([p[0] for p in tl], [p[1] for p in tl], where="post", color=colour, label=label)
        if cap is not None:
            ax.axhline(cap, color="black", linestyle=":", label=f"power cap ({cap:.0%})")
        ax.set_xlabel("hours")
        ax.set_ylabel("load of the power-capped group")
        _pct_axis(ax)
        ax.set_title(f"contention ρ = {rho:g}")
        ax.legend(fontsize=8)
    fig.suptitle("Operator constraint as a price: load on the power-capped group")
    return _save(fig, path)


def urgency_chart(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Figure 7: the probe's cost vs performance per urgency level and policy."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for policy in dict.fromkeys(r["policy"] for r in doc["rows"]):
        rows = [r for r in doc["rows"] if r["policy"] == policy and r["cost"] is not None]
        colour, marker, label = POLICY_STYLE[policy]
        ax.scatter([r["cost"] for r in rows], [r["retained"] for r in rows], color=colour, marker=marker, label=label)
        for r in rows:
            ax.annotate(r["urgency"], (r["cost"], r["retained"]), fontsize=6, xytext=(3, 2), textcoords="offset points")
    ax.set_xlabel("probe tenant's cost (USD)")
    ax.set_ylabel("probe's performance retained (best time ÷ achieved)")
    _pct_axis(ax)
    ax.legend(fontsize=8)
    ax.set_title("Urgency: what one tenant pays and gets (labels: its value of time)")
    return _save(fig, path)


CHARTS = {
    "contention": contention_chart,
    "overhead": overhead_chart,
    "volatility": volatility_chart,
    "frontier": frontier_chart,
    "operator": operator_chart,
    "urgency": urgency_chart,
}


def experiment_chart(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Draw the chart of an experiment's JSON shape."""
    return CHARTS[doc["experiment"]](doc, path)

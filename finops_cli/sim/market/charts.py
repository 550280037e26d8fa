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
    "renegotiate-fixed": ("#90caf9", "^", "renegotiate, fixed agent (ablation)"),
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


def _sweep(ax: Any, rows: list[dict[str, Any]], x: list[float], metric: str = "retained") -> None:
    """Renegotiation's retained performance with its interval along a sweep, FCFS dashed, churn on a twin axis."""
    colour = POLICY_STYLE["renegotiate"][0]
    err = [r.get(f"{metric}_ci") or 0.0 for r in rows]
    ax.errorbar(x, [r[metric] for r in rows], yerr=err, marker="^", color=colour, capsize=3, label="renegotiate")
    ax.plot(x, [r["fcfs_retained"] for r in rows], linestyle="--", color=POLICY_STYLE["fcfs"][0], label="FCFS")
    ax.set_ylabel("performance retained vs uncontended")
    _pct_axis(ax)
    twin = ax.twinx()
    twin.plot(x, [r["migrations_per_tenant"] for r in rows], color="#c62828", alpha=0.6, marker=".")
    twin.set_ylabel("migrations per tenant (red)", color="#c62828")
    ax.legend(fontsize=8, loc="lower left")


def overhead_chart(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Figure 13: retained performance vs the migration-cost multiplier, against FCFS."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    _sweep(ax, doc["rows"], [max(r["multiplier"], 1e-2) for r in doc["rows"]])
    ax.set_xscale("log")
    ax.set_xlabel("migration cost × multiplier (0 drawn at 0.01)")
    ax.set_title("Reconfiguration overhead (Fig. 13)")
    return _save(fig, path)


def misestimate_chart(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Figure 15: retained performance vs the agents' estimate ÷ their true migration cost."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    _sweep(ax, doc["rows"], [r["estimate"] for r in doc["rows"]])
    ax.set_xscale("log")
    ax.set_xlabel("agent's estimate ÷ true migration cost")
    ax.set_title("Mis-estimated overhead (Fig. 15)")
    return _save(fig, path)


def volatility_chart(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Figure 14: performance and churn from no volatility control to tight ones."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    rows = doc["rows"]
    _sweep(ax, rows, [r["level"] for r in rows])

    def label(r: dict[str, Any]) -> str:
        return "none" if r["bid_clip"] is None else f"{r['bid_clip']:g} / {r['floor_fall_per_hour']:g}"

    ax.set_xticks([r["level"] for r in rows], [label(r) for r in rows], fontsize=7)
    ax.set_xlabel("bid clip / floor fall ($/h per h): looser → tighter")
    ax.set_title("Volatility controls (Fig. 14)")
    return _save(fig, path)


def frontier_chart(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Figure 8: the probe tenant's cost vs performance as its budget varies, with baseline points."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 5))
    curves = ("renegotiate-fixed", "renegotiate")
    for name in curves:
        curve = [r for r in doc["rows"] if r["policy"] == name]
        colour, marker, label = POLICY_STYLE[name]
        xs, ys = [r["cost"] for r in curve], [r["retained"] for r in curve]
        ax.plot(xs, ys, marker=marker, color=colour, label=label)
        for r in curve:
            m = "∞" if r["budget_multiple"] is None else f"{r['budget_multiple']:g}×"
            ax.annotate(m, (r["cost"], r["retained"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    for r in doc["rows"]:
        if r["policy"] not in curves:
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
    "misestimate": misestimate_chart,
    "volatility": volatility_chart,
    "frontier": frontier_chart,
    "operator": operator_chart,
    "urgency": urgency_chart,
}


def experiment_chart(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Draw the chart of an experiment's JSON shape."""
    return CHARTS[doc["experiment"]](doc, path)

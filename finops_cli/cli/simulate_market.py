"""finops simulate market — the continuous-renegotiation market (LaissezCloud) against FCFS, spot and on-demand.

Thin: parse options → :func:`finops_cli.api.simulate_market` / :func:`finops_cli.api.market_experiment` →
render (rich tables, markdown, or JSON). ``--out`` writes the rendered output atomically.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from finops_cli.cli.helptext import example
from finops_cli.cli.options import FormatOpt, OutOpt, OutputFormat, output_format
from finops_cli.cli.output import emit_text, log
from finops_cli.cli.render import Col, emit_tables, money, money_table, number, opt_num, opt_pct, pct
from finops_cli.report.escape import md_table


class PolicyChoice(StrEnum):
    fcfs = "fcfs"
    fcfs_preempt = "fcfs-preempt"
    spot = "spot"
    on_demand = "on-demand"
    renegotiate = "renegotiate"
    all = "all"


class ExperimentChoice(StrEnum):
    contention = "contention"
    overhead = "overhead"
    volatility = "volatility"
    frontier = "frontier"
    operator = "operator"
    urgency = "urgency"
    misestimate = "misestimate"


class SpotChoice(StrEnum):
    paper = "paper"
    oracle = "oracle"


class ServicesChoice(StrEnum):
    volume = "volume"
    lifetime = "lifetime"


class SizeChoice(StrEnum):
    small = "small"
    full = "full"


# --- market ---------------------------------------------------------------------------------------


def _market_tables(docs: list[dict[str, Any]]) -> list[Any]:
    totals = money_table(
        "Policies compared",
        [
            Col("Policy"),
            Col("Cost", "money", 4),
            Col("Finished", "number"),
            Col("Mean completion h", "number", 3),
            Col("Makespan h", "number", 3),
            Col("Migrations", "number"),
            Col("Work lost h", "number", 3),
            Col("Perf retained", "text"),
        ],
        [
            [
                d["policy"],
                d["totals"]["cost"],
                d["totals"]["finished"],
                d["totals"]["mean_completion_hours"],
                d["totals"]["makespan_hours"],
                d["totals"]["migrations"],
                d["totals"]["work_lost_hours"],
                opt_pct(d["totals"]["mean_performance_retained"]),
            ]
            for d in docs
        ],
    )
    out = [totals]
    for d in docs:
        if len(d["tenants"]) > 50:
            continue  # large scenarios: totals only in the table (JSON has every tenant)
        out.append(
            money_table(
                f"{d['policy']}: per tenant",
                [
                    Col("Tenant"),
                    Col("Cost", "money", 4),
                    Col("Completion h", "text"),
                    Col("Migrations", "number"),
                    Col("Work lost h", "number", 3),
                    Col("Perf retained", "text"),
                    Col("Accelerators"),
                ],
                [
                    [
                        t["tenant"],
                        t["cost"],
                        opt_num(t["completion_hours"]),
                        t["migrations"],
                        t["work_lost_hours"],
                        opt_pct(t["performance_retained"]),
                        " → ".join(t["accelerators"]),
                    ]
                    for t in d["tenants"]
                ],
                totals=True,
            )
        )
    return out


def _market_markdown(docs: list[dict[str, Any]]) -> str:
    lines = ["# Market simulation", "", "## Policies compared", ""]
    lines.append(
        md_table(
            ["Policy", "Cost", "Finished", "Mean completion h", "Migrations", "Work lost h", "Perf retained"],
            [
                [
                    d["policy"],
                    money(d["totals"]["cost"], decimals=4),
                    str(d["totals"]["finished"]),
                    opt_num(d["totals"]["mean_completion_hours"]),
                    str(d["totals"]["migrations"]),
                    number(d["totals"]["work_lost_hours"], 3),
                    opt_pct(d["totals"]["mean_performance_retained"]),
                ]
                for d in docs
            ],
            ["left", "right", "right", "right", "right", "right", "right"],
            trusted=[False, True, True, True, True, True, True],
        )
    )
    for d in docs:
        if len(d["tenants"]) > 50:
            continue
        lines += ["", f"## {d['policy']}", ""]
        lines.append(
            md_table(
                ["Tenant", "Cost", "Completion h", "Migrations", "Work lost h", "Perf retained", "Accelerators"],
                [
                    [
                        t["tenant"],
                        money(t["cost"], decimals=4),
                        opt_num(t["completion_hours"]),
                        str(t["migrations"]),
                        number(t["work_lost_hours"], 3),
                        opt_pct(t["performance_retained"]),
                        " → ".join(t["accelerators"]),
                    ]
                    for t in d["tenants"]
                ],
                ["left", "right", "right", "right", "right", "right", "left"],
                trusted=[False, True, True, True, True, True, False],
            )
        )
    return "\n".join(lines) + "\n"


def register(app: typer.Typer) -> None:
    @app.command(
        "market",
        epilog=example("finops simulate market --scenario samples/market/laissezcloud_two_tenants.yaml --policy all"),
    )
    def _market(
        scenario: Annotated[
            Path | None, typer.Option("--scenario", help="Scenario YAML: accelerators and tenants.")
        ] = None,
        policy: Annotated[
            PolicyChoice, typer.Option("--policy", help="Allocation policy, or all.")
        ] = PolicyChoice.renegotiate,
        events: Annotated[
            bool, typer.Option("--events/--no-events", help="Include the event log in JSON output.")
        ] = True,
        experiment: Annotated[
            ExperimentChoice | None,
            typer.Option("--experiment", help="Run one of the paper's experiments on generated clusters."),
        ] = None,
        size: Annotated[
            SizeChoice, typer.Option("--size", help="Experiment size (docs/market.md): small runs in seconds.")
        ] = SizeChoice.small,
        seed: Annotated[int, typer.Option("--seed", help="First seed of the generated clusters and tenants.")] = 0,
        seeds: Annotated[
            int | None, typer.Option("--seeds", min=1, help="Seeds per point (default: 3 small, 5 full).")
        ] = None,
        spot: Annotated[
            SpotChoice,
            typer.Option("--spot", help="Spot baseline: paper (opt-in class, unilateral preemption) or oracle."),
        ] = SpotChoice.paper,
        accelerators: Annotated[
            int | None, typer.Option("--accelerators", help="Override the size's cluster size.")
        ] = None,
        window_hours: Annotated[
            float | None, typer.Option("--window-hours", help="Override the size's arrival window (hours).")
        ] = None,
        out_dir: Annotated[
            Path, typer.Option("--out-dir", help="Experiment outputs: <experiment>.json, .md and .png.")
        ] = Path("market-experiments"),
        services: Annotated[
            ServicesChoice,
            typer.Option("--services", help="Inference services: a fixed request volume, or a lifetime and a rate."),
        ] = ServicesChoice.volume,
        jobs: Annotated[
            int, typer.Option("--jobs", min=1, help="Run the seeds in N worker processes (same result for any N).")
        ] = 1,
        fmt: FormatOpt = None,
        out: OutOpt = None,
    ) -> None:
        """Simulate a continuous-renegotiation market (LaissezCloud) against FCFS, spot-like and on-demand.

        With --experiment, run one of the paper's experiments on generated clusters instead of a scenario.
        """
        fmt = output_format(fmt, out)
        from finops_cli import api
        from finops_cli.errors import InputError

        if experiment is not None:
            if scenario is not None:
                raise InputError("give --scenario FILE or --experiment NAME, not both")
            _experiment(
                experiment.value,
                size.value,
                seed,
                accelerators,
                window_hours,
                out_dir,
                fmt,
                out,
                seeds,
                spot.value,
                services.value,
                jobs,
            )
            return
        if scenario is None:
            raise InputError("give --scenario FILE (or --experiment NAME)")
        results = api.simulate_market(scenario, policy.value)
        docs = [r.as_dict(events=events) for r in results]
        if fmt == OutputFormat.json:
            payload = docs[0] if len(docs) == 1 else {"policies": docs}
            emit_text(json.dumps(payload, indent=2, allow_nan=False), out)
        elif fmt == OutputFormat.markdown:
            emit_text(_market_markdown(docs), out)
        else:
            emit_tables([], _market_tables(docs), out)


#: Columns shown as percentages / money in the experiment tables (the rest: numbers).
_PCT_COLS = {
    "retained",
    "degradation",
    "retained_urgent",
    "retained_services",
    "retained_change",
    "fastest_retained",
    "fcfs_retained",
    "deadline_miss_share",
    "capped_mean_load",
    "capped_peak_load",
}
_MONEY_COLS = {"cost", "generalized_cost", "budget"}


def _cell(col: str, value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    base = col.removesuffix("_ci")  # an interval's half-width reads in its metric's unit
    if base in _PCT_COLS:
        return ("± " if base != col else "") + pct(value)
    if base in _MONEY_COLS:
        return ("± " if base != col else "") + money(value)
    if isinstance(value, int):
        return f"{value:,}"
    return number(value, 3)


def _experiment_markdown(doc: dict[str, Any]) -> str:
    params = ", ".join(f"{k} {v}" for k, v in doc["params"].items() if not isinstance(v, dict))
    lines = [f"# Market experiment: {doc['experiment']}", "", f"- {params}"]
    for key, value in doc["summary"].items():
        if not isinstance(value, dict | list):
            lines.append(f"- {key.replace('_', ' ')}: {opt_num(value) if isinstance(value, float) else value}")
        elif key.endswith("_range") and value:
            lines.append(f"- {key.replace('_', ' ')}: {pct(value[0])} to {pct(value[1])}")
    lines += ["", f"![{doc['experiment']}]({doc['experiment']}.png)", ""]
    cols = doc["columns"]
    rows = [[_cell(c, r.get(c)) for c in cols] for r in doc["rows"]]
    text_cols = {"composition", "policy", "sweep"}
    lines.append(
        md_table(
            [c.replace("_", " ") for c in cols],
            rows,
            ["left" if c in text_cols else "right" for c in cols],
            trusted=[c not in text_cols for c in cols],
        )
    )
    return "\n".join(lines) + "\n"


def _experiment(
    name: str,
    size: str,
    seed: int,
    accelerators: int | None,
    window_hours: float | None,
    out_dir: Path,
    fmt: OutputFormat,
    out: Path | None,
    seeds: int | None = None,
    spot: str = "paper",
    services: str = "volume",
    jobs: int = 1,
) -> None:
    from finops_cli import api
    from finops_cli.atomic import check_writable, write_text

    check_writable(out_dir, directory=True)
    result = api.market_experiment(
        name,
        size=size,
        seed=seed,
        n_accelerators=accelerators,
        window_hours=window_hours,
        out_dir=out_dir,
        seeds=seeds,
        spot=spot,
        services=services,
        jobs=jobs,
    )
    doc = result.as_dict()
    payload = json.dumps(doc, indent=2, allow_nan=False)
    markdown = _experiment_markdown(doc)
    write_text(out_dir / f"{name}.json", payload)
    write_text(out_dir / f"{name}.md", markdown)
    log.info(f"wrote {out_dir / name}.json, .md and .png")
    emit_text(payload if fmt == OutputFormat.json else markdown, out)

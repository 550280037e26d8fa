"""finops simulate dispatch — request-level merit-order replay, or a plan's allocation replayed hour by hour.

Thin: parse options → :func:`finops_cli.api.simulate_dispatch` / :func:`finops_cli.api.replay_plan` → render
(rich tables, markdown, or JSON). ``--out`` writes the rendered output atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from finops_cli.cli.helptext import example
from finops_cli.cli.options import (
    AsOfOpt,
    FleetOpt,
    FormatOpt,
    FxOpt,
    ModeOpt,
    OutOpt,
    OutputFormat,
    StoreOpt,
    WorkloadsOpt,
    output_format,
    parse_as_of,
)
from finops_cli.cli.options import Mode as ModeEnum
from finops_cli.cli.output import cli_words, emit_json, emit_text, log
from finops_cli.cli.render import Col, emit_tables, money, money_table, number, opt_pct
from finops_cli.report.escape import md_table

# --- dispatch -------------------------------------------------------------------------------------


def _dispatch_tables(doc: dict[str, Any], currency: str) -> list[Any]:
    rows = [
        [
            s["substrate"],
            s["kind"],
            s["requests"],
            s["units"],
            s["gpu_hours"],
            s["cost"],
            opt_pct(s["peak_utilization"]),
            s["preemptions"],
        ]
        for s in doc["by_substrate"]
    ]
    subs = money_table(
        "Dispatch by substrate",
        [
            Col("Substrate"),
            Col("Kind"),
            Col("Requests", "number"),
            Col("Units", "number", 1),
            Col("GPU-hours", "number", 1),
            Col("Cost", "money"),
            Col("Peak util", "text"),
            Col("Preempted", "number"),
        ],
        rows,
        totals=True,
        currency=currency,
    )
    kinds = money_table(
        "By kind",
        [Col("Kind"), Col("Requests", "number"), Col("Units", "number", 1), Col("Cost", "money")],
        [[k["kind"], k["requests"], k["units"], k["cost"]] for k in doc["by_kind"]],
        totals=True,
        currency=currency,
    )
    wl = money_table(
        "By workload",
        [
            Col("Workload"),
            Col("Requests", "number"),
            Col("Units", "number", 1),
            Col("Cost", "money"),
            Col("Rejected", "number"),
            Col("Requeued units", "number", 1),
            Col("SLO-risk units", "number", 1),
        ],
        [
            [
                w["workload"],
                w["requests"],
                w["units"],
                w["cost"],
                w["rejected_requests"],
                w["requeued_units"],
                w["slo_risk_units"],
            ]
            for w in doc["by_workload"]
        ],
        totals=True,
        currency=currency,
    )
    return [subs, kinds, wl]


def _dispatch_summary(doc: dict[str, Any], currency: str) -> list[str]:
    spills = doc["spills"]
    why = ", ".join(f"{k} {v:,}" for k, v in spills["by_reason"].items() if v) or "none"
    rej = doc["rejected"]
    rej_why = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in rej["by_reason"].items() if v) or "none"
    pre = doc["preemptions"]
    return [
        f"{doc['requests']:,} requests served, {number(doc['units'], 1)} units, cost {money(doc['cost'], currency)} "
        f"(merit-order cost {money(doc['merit_cost'], currency)}; mode {doc['mode']}, seed {doc['seed']})",
        f"spills: {spills['total']:,} ({why})",
        f"rejected: {rej['requests']:,} requests, {number(rej['units'], 1)} units ({rej_why})",
        f"spot preemptions: {pre['count']:,}, requeued {number(pre['requeued_units'], 1)} units, "
        f"lost work {money(pre['lost_cost'], currency)}; SLO-risk units {number(doc['slo_risk_units'], 1)}",
        *(f"not in the plan's model: {n}" for n in doc.get("not_in_plan", [])),
    ]


def _dispatch_markdown(doc: dict[str, Any], currency: str) -> str:
    lines = ["# Dispatch simulation", ""]
    lines += [f"- {s}" for s in _dispatch_summary(doc, currency)]
    lines += ["", "## By substrate", ""]
    lines.append(
        md_table(
            ["Substrate", "Kind", "Requests", "Units", "GPU-hours", "Cost", "Peak util", "Preempted"],
            [
                [
                    s["substrate"],
                    s["kind"],
                    f"{s['requests']:,}",
                    number(s["units"], 1),
                    number(s["gpu_hours"], 1),
                    money(s["cost"], currency),
                    opt_pct(s["peak_utilization"]),
                    f"{s['preemptions']:,}",
                ]
                for s in doc["by_substrate"]
            ],
            ["left", "left", "right", "right", "right", "right", "right", "right"],
            trusted=[False, False, True, True, True, True, True, True],
        )
    )
    lines += ["", "## By workload", ""]
    lines.append(
        md_table(
            ["Workload", "Requests", "Units", "Cost", "Rejected", "SLO-risk units"],
            [
                [
                    w["workload"],
                    f"{w['requests']:,}",
                    number(w["units"], 1),
                    money(w["cost"], currency),
                    f"{w['rejected_requests']:,}",
                    number(w["slo_risk_units"], 1),
                ]
                for w in doc["by_workload"]
            ],
            ["left", "right", "right", "right", "right", "right"],
            trusted=[False, True, True, True, True, True],
        )
    )
    return "\n".join(lines) + "\n"


# --- plan replay ----------------------------------------------------------------------------------


def _replay_summary(doc: dict[str, Any]) -> list[str]:
    cur = doc["currency"]
    se = doc["realised_cost_se"]
    err = "" if se is None else f" ± {money(se, cur)} (standard error)"
    pre = doc["preemptions"]
    lines = [
        f"plan replay: {doc['seeds']:,} seed(s) from {doc['first_seed']}, {doc['horizon']['hours']:,} hours from "
        f"{doc['horizon']['start']}, load from the plan's {doc['source']}",
        f"planned cost {money(doc['planned_cost'], cur)}; mean realised cost {money(doc['realised_cost'], cur)}{err}; "
        f"difference {money(doc['difference'], cur)}",
        doc["agreement"],
        f"preemptions: {number(pre['realised'], 1)} realised on average, "
        f"{number(pre['expected'], 1)} expected by the plan",
    ]
    unserved = {w: u for w, u in doc["unserved"]["units_by_workload"].items() if u >= 0.005}
    if unserved:
        lines.append("unserved: " + ", ".join(f"{w} {number(u, 2)} units" for w, u in unserved.items()))
    lines += [f"model: {m}" for m in doc["model"]]
    lines += [f"note: {n}" for n in doc["notes"]]
    return lines


def _replay_tables(doc: dict[str, Any]) -> list[Any]:
    cur = doc["currency"]
    causes = money_table(
        "Realised − planned, by cause",
        [Col("Cause"), Col("Amount", "money"), Col("Std error", "text"), Col("Meaning")],
        [
            [c["cause"], c["amount"], "—" if c["se"] is None else money(c["se"], cur), c["meaning"]]
            for c in doc["causes"]
        ],
        totals=True,
        currency=cur,
    )
    pairs = money_table(
        "Spot allocations",
        [
            Col("Workload"),
            Col("Substrate"),
            Col("λ/h", "number", 4),
            Col("τ min", "number", 1),
            Col("W", "number", 4),
            Col("Planned", "money"),
            Col("Realised", "money"),
            Col("Preempt. exp.", "number", 1),
            Col("Preempt.", "number", 1),
            Col("Unserved units", "number", 2),
        ],
        [
            [
                p["workload"],
                p["substrate"],
                p["preemptions_per_hour"],
                p["interval_minutes"],
                p["multiplier"],
                p["planned_cost"],
                p["realised_cost"],
                p["expected_preemptions"],
                p["preemptions"],
                p["unserved_units"],
            ]
            for p in doc["by_pair"]
        ],
        totals=[
            "Total",
            "",
            "",
            "",
            "",
            sum(p["planned_cost"] for p in doc["by_pair"]),
            sum(p["realised_cost"] for p in doc["by_pair"]),
            sum(p["expected_preemptions"] for p in doc["by_pair"]),
            sum(p["preemptions"] for p in doc["by_pair"]),
            sum(p["unserved_units"] for p in doc["by_pair"]),
        ],
        currency=cur,
    )
    return [causes, pairs]


def _replay_markdown(doc: dict[str, Any]) -> str:
    cur = doc["currency"]
    lines = ["# Plan replay", ""]
    lines += [f"- {s}" for s in _replay_summary(doc)]
    lines += ["", "## Realised − planned, by cause", ""]
    lines.append(
        md_table(
            ["Cause", "Amount", "Std error", "Meaning"],
            [
                [c["cause"], money(c["amount"], cur), "—" if c["se"] is None else money(c["se"], cur), c["meaning"]]
                for c in doc["causes"]
            ],
            ["left", "right", "right", "left"],
            trusted=[False, True, True, False],
        )
    )
    lines += ["", "## Spot allocations", ""]
    lines.append(
        md_table(
            ["Workload", "Substrate", "λ/h", "W", "Planned", "Realised", "Preemptions expected", "Preemptions"],
            [
                [
                    p["workload"],
                    p["substrate"],
                    number(p["preemptions_per_hour"], 4),
                    number(p["multiplier"], 4),
                    money(p["planned_cost"], cur),
                    money(p["realised_cost"], cur),
                    number(p["expected_preemptions"], 1),
                    number(p["preemptions"], 1),
                ]
                for p in doc["by_pair"]
            ],
            ["left", "left", "right", "right", "right", "right", "right", "right"],
            trusted=[False, False, True, True, True, True, True, True],
        )
    )
    return "\n".join(lines) + "\n"


def register(app: typer.Typer) -> None:
    @app.command(
        "dispatch",
        epilog=example(
            "finops simulate dispatch --fleet fleet.yaml --workloads workloads.yaml --generate --requests 1000000"
        ),
    )
    def _dispatch(
        fleet: FleetOpt,
        workloads: WorkloadsOpt,
        trace: Annotated[
            Path | None,
            typer.Option("--trace", help="CSV/Parquet: timestamp, workload, units (--generate writes it)."),
        ] = None,
        generate: Annotated[
            bool, typer.Option("--generate", help="Synthetic trace from the workloads' demand (Poisson).")
        ] = False,
        requests: Annotated[int, typer.Option("--requests", help="Expected requests in a generated trace.")] = 100_000,
        seed: Annotated[int, typer.Option("--seed", help="Seed for generated arrivals and spot preemptions.")] = 0,
        events: Annotated[
            Path | None, typer.Option("--events", help="YAML list of outage / rate_limit / recover events.")
        ] = None,
        horizon: Annotated[
            str | None,
            typer.Option(
                "--horizon",
                help="Prices (feed window) and a generated trace's span: YYYY-MM or START:HOURS (default: the latest "
                "month with GPU usage in the store, else the profiles' month, else this month).",
            ),
        ] = None,
        fx: FxOpt = None,
        as_of: AsOfOpt = None,
        window_hours: Annotated[
            float, typer.Option("--window-hours", help="Sliding window over which utilisation is measured.")
        ] = 1.0,
        mode: ModeOpt = ModeEnum.cost,
        fmt: FormatOpt = None,
        store: StoreOpt = None,
        out: OutOpt = None,
        plan: Annotated[
            Path | None,
            typer.Option(
                "--plan",
                help="Replay this plan.json's own allocation hour by hour under sampled preemptions and report "
                "realised against planned cost, by cause (docs/dispatch.md, 'Replaying a plan').",
            ),
        ] = None,
        schedule: Annotated[
            Path | None,
            typer.Option(
                "--schedule",
                help="With --plan: the plan's certified hourly schedule (finops plan --schedule); default: each "
                "allocation spread evenly over the horizon.",
            ),
        ] = None,
        seeds: Annotated[
            int, typer.Option("--seeds", help="With --plan: seeds to average (from --seed on); the error is their SE.")
        ] = 100,
    ) -> None:
        """Replay requests through the merit order: gate, cheapest current price, congestion, events.

        With --plan, replay that plan's own allocation instead, and compare realised with planned cost.
        """
        fmt = output_format(fmt, out)

        from finops_cli import api
        from finops_cli.errors import InputError
        from finops_cli.estate.prices import parse_fx

        est = api.estate(fleet, workloads)
        if plan is None and schedule is not None:
            raise InputError("--schedule replays a plan's hourly schedule: give --plan plan.json too")
        if plan is not None:
            given = [f for f, on in (("--trace", trace), ("--generate", generate), ("--events", events)) if on]
            if given:
                raise InputError(f"--plan replays the plan's own allocation: {', '.join(given)} do(es) not apply")
            rep = api.replay_plan(
                est,
                plan,
                schedule=schedule,
                seeds=seeds,
                seed=seed,
                store=store,
                horizon=horizon,
                fx=parse_fx(fx),
                as_of=parse_as_of(as_of),
                log=log.info,
            )
            rdoc = rep.as_dict() | {"agreement": cli_words(rep.agreement()), "notes": [cli_words(n) for n in rep.notes]}
            if fmt == OutputFormat.json:
                emit_json(rdoc, out)
            elif fmt == OutputFormat.markdown:
                emit_text(_replay_markdown(rdoc), out)
            else:
                emit_tables(_replay_summary(rdoc), _replay_tables(rdoc), out)
            return
        result = api.simulate_dispatch(
            est,
            trace,
            generate=generate,
            requests=requests,
            seed=seed,
            events=events,
            mode=mode.value,
            horizon=horizon,
            store=store,
            window_hours=window_hours,
            fx=parse_fx(fx),
            log=log.info,
            as_of=parse_as_of(as_of),
        )
        if generate and trace is not None:
            log.info(f"wrote trace {trace}")
        doc = result.as_dict()
        currency = est.fleet.currency
        if fmt == OutputFormat.json:
            emit_json(doc, out)
        elif fmt == OutputFormat.markdown:
            emit_text(_dispatch_markdown(doc, currency), out)
        else:
            emit_tables(_dispatch_summary(doc, currency), _dispatch_tables(doc, currency), out)

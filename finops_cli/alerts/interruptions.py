"""Spot interruptions in realised savings: the work each preemption threw away was paid for and done again.

The interruption trace is the preemption CSV ``finops netc --trace`` reads (one row per preemption, ISO 8601
``timestamp``) with the preempted instance in ``resource_id`` (the bill's ResourceId) and, where the job knows
it, ``lost_minutes`` (the work since its last checkpoint); without it a preemption loses half a checkpoint
interval, NETC's ``t_lost ≈ τ/2``. Each preemption's redone GPU-hours (lost hours × the instance's GPUs) are
already in the run's cost, at the spot rate the bill charged; on demand they would not have been redone, so the
on-demand reference of the run, and with it the spot lever's saving, shrinks by those GPU-hours at the on-demand
rate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from finops_cli.alerts import queries
from finops_cli.alerts.scope import run, selection
from finops_cli.errors import InputError
from finops_cli.store.store import Store

#: the line-group keys :func:`finops_cli.alerts.savings` prices a reference on, plus the instance
_KEYS = ("provider", "region", "instance_type", "pricing_category", "x_AcceleratorType", "x_SourceFormat",
         "ChargeCategory", "resource")  # fmt: skip


def read_interruptions(path: Path | str) -> pd.DataFrame:
    """``resource_id``, ``timestamp`` (UTC) and ``lost_hours`` (NaN: not stated) per preemption of the CSV."""
    from finops_cli.files import csv_line, read_csv_text

    path = Path(path)
    raw = read_csv_text(path, kind="preemption CSV")
    missing = [c for c in ("timestamp", "resource_id") if c not in raw.columns]
    if missing:
        raise InputError(f"missing column(s) {missing}: one row per preemption, with the preempted ResourceId",
                         path=path)  # fmt: skip
    if "event" in raw.columns:  # the observation window's start/end rows are no preemptions
        raw = raw[~raw["event"].str.strip().str.lower().isin(["start", "end"])].reset_index(drop=True)
    ts = pd.to_datetime(raw["timestamp"].str.strip(), utc=True, errors="coerce", format="ISO8601")
    lost = pd.to_numeric(raw.get("lost_minutes", pd.Series([""] * len(raw))).str.strip(), errors="coerce")
    for i in range(len(raw)):
        if pd.isna(ts.iloc[i]):
            raise InputError(f"timestamp: expected an ISO 8601 time, got {raw['timestamp'].iloc[i]!r}", path=path,
                             where=csv_line(i))  # fmt: skip
        if not raw["resource_id"].iloc[i].strip():
            raise InputError("resource_id: empty", path=path, where=csv_line(i))
        text = raw.get("lost_minutes", pd.Series([""] * len(raw))).iloc[i].strip()
        if text and (pd.isna(lost.iloc[i]) or lost.iloc[i] < 0):
            raise InputError(f"lost_minutes: expected minutes >= 0, got {text!r}", path=path, where=csv_line(i))
    return pd.DataFrame({"resource_id": raw["resource_id"].str.strip(), "timestamp": ts, "lost_hours": lost / 60.0})


def redone_work(
    store: Store,
    by: Sequence[str],
    events: pd.DataFrame,
    *,
    where: Mapping[str, Sequence[str]] | None,
    months: Sequence[str] | None,
    cost: str,
    checkpoint_minutes: float,
    reference: Callable[[Mapping[str, Any], float], tuple[float, str, str | None]],
) -> tuple[dict[tuple[str, ...], dict[str, float]], list[str]]:
    """Per ``by`` group × currency: redone GPU-hours, their cost (at the bill's spot rate) and their on-demand
    value (``reference`` prices a line group as savings does); and notes on preemptions no spot line explains."""
    if events.empty:
        return {}, []
    keys = list(dict.fromkeys([*by, *_KEYS]))
    sel = selection(keys, where, months=months, gpu_only=True)
    sel.conditions.append(f"ResourceId IN ({sel.values('r', sorted(set(events['resource_id'])))})")
    spans = run(store, queries.SPOT_RESOURCES, sel, keys)
    out: dict[tuple[str, ...], dict[str, float]] = {}
    unmatched = 0
    for e in events.to_dict("records"):
        rows = [] if spans is None else spans[
            (spans["resource"] == e["resource_id"])
            & (pd.to_datetime(spans["first_start"], utc=True) <= e["timestamp"])
            & (pd.to_datetime(spans["last_end"], utc=True) > e["timestamp"])
        ].to_dict("records")  # fmt: skip
        if not rows or not float(rows[0]["gpu_hours"]) > 0:
            unmatched += 1
            continue
        r = rows[0]
        lost = e["lost_hours"] if pd.notna(e["lost_hours"]) else checkpoint_minutes / 120.0
        gpu_hours = float(lost) * float(r["gpus"] or 0)
        line_cost = float(r[f"{cost}_cost"])
        on_demand = reference(r, line_cost)[0]
        acc = out.setdefault(tuple(str(r[k]) for k in [*by, "currency"]), {"gpu_hours": 0.0, "cost": 0.0, "value": 0.0})
        acc["gpu_hours"] += gpu_hours
        acc["cost"] += gpu_hours * line_cost / float(r["gpu_hours"])
        acc["value"] += gpu_hours * on_demand / float(r["gpu_hours"])
    notes = [f"{unmatched} preemption(s) of the trace match no spot line in scope: left out"] if unmatched else []
    return out, notes

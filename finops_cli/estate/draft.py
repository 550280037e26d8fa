"""``finops estate draft``: a first fleet.yaml and workloads.yaml written from one month of the store's GPU billing
lines and utilisation (what is inferred and what is not: docs/analyst.md). What the bill cannot tell is written
as an explicit assumption marked ``NOT INFERRED``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from finops_cli.atomic import check_writable, write_text
from finops_cli.core.baseline import PRICING_CATEGORY_KIND
from finops_cli.core.demand import Horizon
from finops_cli.errors import InputError
from finops_cli.estate.horizon import default_month
from finops_cli.store import engine
from finops_cli.store.queries import (
    DRAFT_ACCELERATORS,
    DRAFT_BUSY_HOURLY,
    DRAFT_CURRENCIES,
    DRAFT_GPU_EVENTS,
    DRAFT_SUBSTRATES,
    DRAFT_WORKLOAD_PERIODS,
    DRAFT_WORKLOAD_TEAMS,
)
from finops_cli.store.store import Store

#: The key a draft substrate groups GPU lines by (store columns).
SUBSTRATE_KEY = ["provider", "BillingAccountId", "RegionId", "x_InstanceType", "PricingCategory"]
#: A spot substrate's preemption rate when nothing measured it (per hour); written with NOT INFERRED.
ASSUMED_SPOT_INTERRUPTIONS_PER_HOUR = 0.02
UNTAGGED = "untagged"
#: Region prefixes → jurisdiction (a guess the draft marks as such).
_JURISDICTIONS = (
    (r"^(us|usgov|eastus|westus|centralus|northcentralus|southcentralus|westcentralus)", "US"),
    (r"^(eu|europe|westeurope|northeurope|france|germany|swedencentral|italy|spain|poland)", "EU"),
    (r"^(uk|europe-west2)", "UK"),
    (r"^(ca|canada|northamerica-northeast)", "CA"),
    (r"^(ap|asia|australia|japan|korea|southeastasia|eastasia|india)", "APAC"),
)


@dataclass
class Draft:
    """The two YAML texts plus what the command prints about them."""

    fleet_yaml: str
    workloads_yaml: str
    month: str
    currency: str
    substrates: int
    workloads: int
    gpu_effective_cost: float
    demand_basis: dict[str, str] = field(default_factory=dict)  # workload id -> "utilisation" | "billing"
    profiles: dict[str, str] = field(default_factory=dict)  # path relative to workloads.yaml -> hour,units CSV
    month_reason: str = "`month`"  # why this month (the default-month rule's reason), for stderr


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _jurisdiction(region: str | None) -> str:
    if region:
        for pattern, name in _JURISDICTIONS:
            if re.match(pattern, region.lower()):
                return name
    return "unknown"


def peak_from_events(events: pd.DataFrame) -> float:
    """The peak of the running sum of GPUs started (+) and ended (−), one row per instant ``t`` (net ``d``): a
    period ending frees its GPUs before the next one starts."""
    running = events.sort_values("t", kind="stable")["d"].cumsum()
    return float(max(running.max(), 0.0)) if len(running) else 0.0


def _params(store: Store, month: str | None, currency: str | None) -> tuple[str, str, str]:
    """The month (default: the default-month rule), why, and the currency of its GPU lines; exit 2 if ambiguous."""
    periods = store.partition_values("billing", "billing_period") if store.has("billing") else []
    if not periods:
        raise InputError("no billing in the store; run 'finops ingest billing' first", path=store.location)
    reason = "`month`"
    if month is None:
        picked = default_month(store)
        month, reason = picked.month, picked.reason
        if month not in periods:  # utilisation is later than any bill: the draft needs that month's bill
            raise InputError(
                f"month {month} ({reason}) has no billing to draft from (billing periods: {', '.join(periods)}); "
                "ingest its bill or give `month`",
                mentions=("month",),
            )
    if month not in periods:
        raise InputError(f"{month}: no billing for it in the store (have {', '.join(periods)})", param="month")
    found = engine.run_pandas(store, DRAFT_CURRENCIES, {"month": month})
    if found is None or not (found["max_gpu_hours"] > 0).any():
        raise InputError(f"no billing line of {month} carries GPU-hours (x_GpuHours); nothing to draft from")
    currencies = sorted(found["currency"].dropna().astype(str))
    if currency is None:
        if len(currencies) > 1:
            raise InputError(
                f"GPU lines of {month} are in {', '.join(currencies)}: a fleet has one currency; "
                "draft one per currency with `currency`",
                mentions=("currency",),
            )
        currency = currencies[0] if currencies else "USD"
    elif currency not in currencies:
        raise InputError(
            f"{currency}: no GPU line of {month} is in it (have {', '.join(currencies)})", param="currency"
        )
    return month, currency, reason


def _key(frame: pd.DataFrame) -> pd.Series:
    """Each row's substrate key as one tuple (None for missing parts)."""
    key = frame[SUBSTRATE_KEY].astype(object).where(frame[SUBSTRATE_KEY].notna(), None)
    return pd.Series(list(map(tuple, key.to_numpy())), index=frame.index, dtype=object)


def _most_frequent(frame: pd.DataFrame, by: str, value: str, count: str) -> dict[str, Any]:
    """Per ``by``: the ``value`` with the highest ``count``, the smallest one on a tie (as ``Series.mode``)."""
    if frame.empty:
        return {}
    ordered = frame.sort_values([count, value], ascending=[False, True], kind="stable")
    most: dict[str, Any] = ordered.drop_duplicates(by).set_index(by)[value].to_dict()
    return most


def _substrate_rows(store: Store, month: str, currency: str, hours: int) -> list[dict[str, Any]]:
    params = {"month": month, "currency": currency}
    subs = engine.run_pandas(store, DRAFT_SUBSTRATES, params)
    if subs is None or subs.empty:
        return []
    accs = engine.run_pandas(store, DRAFT_ACCELERATORS, params)
    events = engine.run_pandas(store, DRAFT_GPU_EVENTS, params)
    assert accs is not None and events is not None
    accelerator = _most_frequent(accs.assign(skey=_key(accs)), "skey", "accelerator", "lines")
    events = events.assign(skey=_key(events))
    peaks = {k: round(peak_from_events(e), 3) for k, e in events.groupby("skey", sort=False)}
    subs = subs.assign(skey=_key(subs))
    # a substrate with no region or instance type matches more broadly: last, so it only takes the rest;
    # ids are handed out in this order (costliest first), so a clash always suffixes the same one
    broad = subs["RegionId"].isna() | subs["x_InstanceType"].isna()
    subs = subs.assign(broad=broad, order=subs["skey"].map(str)).sort_values(
        ["broad", "effective_cost", "order"], ascending=[True, False, True], kind="stable"
    )
    rows, used = [], set()
    for r in subs.itertuples(index=False):
        provider, account, region, itype, category = r.skey
        kind = PRICING_CATEGORY_KIND.get(str(category), "on_demand")
        gpu_hours, cost, peak = float(r.gpu_hours), float(r.effective_cost), peaks.get(r.skey, 0.0)
        sid = _slug("-".join(str(p) for p in (provider, itype or "gpu", region or "", kind) if p))
        if sid in used:
            sid = f"{sid}-{_slug(str(account))}"
        used.add(sid)
        rows.append(
            {
                "id": sid,
                "provider": str(provider),
                "account": None if account is None else str(account),
                "region": region,
                "instance_type": itype,
                "category": category,
                "kind": kind,
                "accelerator": str(accelerator.get(r.skey, itype or "GPU")),
                "gpus": peak,
                "gpus_per_node": None if pd.isna(r.gpus_per_node) else float(r.gpus_per_node),
                "gpu_hours": gpu_hours,
                "effective_cost": cost,
                "billed_cost": float(r.billed_cost),
                "rate": cost / gpu_hours,
                "committed": cost / (peak * hours),
                "lines": int(r.lines),
            }
        )
    return rows


def _dump(value: object) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("...").strip()


def _fleet_yaml(rows: list[dict[str, Any]], month: str, currency: str) -> str:
    total = sum(r["effective_cost"] for r in rows)
    out = [
        f"# DRAFT written by 'finops estate draft' from the {month} GPU billing lines in the store.",
        f"# {len(rows)} substrates cover {currency} {total:,.2f} of GPU spend (EffectiveCost, amortised).",
        "# Lines marked NOT INFERRED are assumptions the bill cannot tell: check them before trusting a plan.",
        "# Reference: docs/estate.md.",
        "version: 1",
        f"currency: {currency}",
        "substrates:",
    ]
    for r in rows:
        out.append(
            f"  # {r['lines']} lines, {r['gpu_hours']:,.1f} GPU-hours, {currency} {r['effective_cost']:,.2f} effective"
            f" ({r['billed_cost']:,.2f} billed), pricing category {r['category']}"
        )
        out.append(f"  - id: {_dump(r['id'])}")
        out.append(f"    provider: {_dump(r['provider'])}")
        out.append(f"    kind: {r['kind']}")
        out.append(f"    accelerator: {_dump(r['accelerator'])}")
        if r["instance_type"] is not None:
            out.append(f"    instance_type: {_dump(str(r['instance_type']))}")
        if r["region"] is not None:
            out.append(f"    region: {_dump(str(r['region']))}")
        out.append(
            f"    jurisdiction: {_jurisdiction(r['region'])}    # NOT INFERRED: guessed from the region; check it"
        )
        out.append("    isolation: dedicated    # NOT INFERRED")
        out.append(f"    gpus: {_dump(r['gpus'])}    # peak concurrent GPUs billed in {month}")
        out.append(
            "    comfortable_utilization: 1.0    # INFERRED: the bill ran at this peak; lower it to price queueing"
        )
        if r["gpus_per_node"]:
            out.append(f"    gpus_per_node: {_dump(r['gpus_per_node'])}")
        rate = round(r["rate"], 6)
        if r["kind"] == "reserved":
            out.append("    price_per_gpu_hour: 0.0    # prepaid: one more GPU-hour costs nothing")
            out.append(f"    committed_per_gpu_hour: {_dump(r['committed'])}    # effective cost ÷ (gpus × hours)")
        elif r["kind"] == "owned":
            out.append(
                f"    price_per_gpu_hour: {_dump(rate)}    # the bill's chargeback rate; "
                "NOT INFERRED: marginal cost (power + ops) is usually lower"
            )
        else:
            out.append(f"    price_per_gpu_hour: {_dump(rate)}    # effective $/GPU-hour in {month}")
        if r["kind"] == "spot":
            out.append(
                f"    interruptions_per_hour: {ASSUMED_SPOT_INTERRUPTIONS_PER_HOUR}    "
                "# NOT INFERRED: measure it with interruption: {trace: FILE}"
            )
        if r["account"] is not None:
            out.append(f"    match: {_dump({'BillingAccountId': r['account']})}")
    return "\n".join(out) + "\n"


def spread_hourly(periods: pd.DataFrame, start: pd.Timestamp, hours: int) -> np.ndarray:
    """GPU-hours per clock hour of ``[start, start + hours)``: each row's ``gpu_hours`` spread evenly over its charge
    period ``s``..``e`` (to the minute), as :func:`peak_from_events` assumes; what falls outside is left out."""
    minutes = hours * 60
    if periods.empty:
        return np.zeros(hours)
    s = pd.to_datetime(periods["s"], utc=True)
    e = pd.to_datetime(periods["e"], utc=True)
    length = ((e - s).dt.total_seconds() / 60.0).clip(lower=1.0).to_numpy()
    rate = periods["gpu_hours"].astype(float).to_numpy() / length  # GPU-hours per minute
    first = np.floor((s - start).dt.total_seconds().to_numpy() / 60.0).astype(np.int64)
    end = first + np.maximum(np.round(length).astype(np.int64), 1)
    lo, hi = np.clip(first, 0, minutes), np.clip(end, 0, minutes)
    steps = np.zeros(minutes + 1)
    np.add.at(steps, lo, rate)
    np.add.at(steps, hi, -rate)
    per_hour: np.ndarray = np.cumsum(steps)[:minutes].reshape(hours, 60).sum(axis=1)
    return per_hour


def _period_words(hours: pd.Series) -> str:
    """How long a workload's billing lines run, in words: the shape a drafted profile can keep."""
    lo, hi = float(hours.min()), float(hours.max())
    span = f"{lo:g} h" if lo == hi else f"{lo:g}-{hi:g} h"
    if hi <= 1:
        return f"charge periods of {span}: the bill's hourly shape"
    if hi <= 24:
        return f"charge periods of {span}: flat within each period"
    return f"charge periods of {span}: flat over long periods, the shape inside them is not known"


def _hourly_profiles(store: Store, month: str, currency: str, hours: int) -> dict[str, tuple[np.ndarray, str]]:
    """Per workload tag: GPU-hours per hour of the month from its billing lines, and the lines' period lengths."""
    params = {"month": month, "currency": currency, "untagged": UNTAGGED}
    periods = engine.run_pandas(store, DRAFT_WORKLOAD_PERIODS, params)
    start = pd.Timestamp(f"{month}-01", tz="UTC")
    out: dict[str, tuple[np.ndarray, str]] = {}
    if periods is None:
        return out
    for name, part in periods.groupby("workload", sort=True):
        length = (pd.to_datetime(part["e"], utc=True) - pd.to_datetime(part["s"], utc=True)).dt.total_seconds()
        out[str(name)] = (spread_hourly(part, start, hours), _period_words(length / 3600.0))
    return out


def _busy_profiles(store: Store, month: str, hours: int) -> dict[str, np.ndarray]:
    """Per workload tag: busy GPU-hours per hour of the month from utilisation."""
    if not store.has("utilization") or month not in store.partition_values("utilization", "month"):
        return {}
    frame = engine.run_pandas(store, DRAFT_BUSY_HOURLY, {"month": month, "untagged": UNTAGGED})
    start = pd.Timestamp(f"{month}-01", tz="UTC")
    out: dict[str, np.ndarray] = {}
    if frame is None:
        return out
    for name, part in frame.groupby("workload", sort=True):
        index = ((pd.to_datetime(part["hour"], utc=True) - start).dt.total_seconds() // 3600).astype(int).to_numpy()
        keep = (index >= 0) & (index < hours)
        profile = np.zeros(hours)
        np.add.at(profile, index[keep], part["busy_hours"].astype(float).fillna(0.0).to_numpy()[keep])
        out[str(name)] = profile
    return out


def _workload_rows(store: Store, month: str, currency: str, hours: int) -> list[dict[str, Any]]:
    groups = engine.run_pandas(
        store, DRAFT_WORKLOAD_TEAMS, {"month": month, "currency": currency, "untagged": UNTAGGED}
    )
    assert groups is not None
    billed_profiles = _hourly_profiles(store, month, currency, hours)
    busy_profiles = _busy_profiles(store, month, hours)
    busy = {name: float(profile.sum()) for name, profile in busy_profiles.items()}
    billed = groups.groupby("workload")["gpu_hours"].sum()
    teams = _most_frequent(groups.assign(team=groups["team"].fillna("unassigned")), "workload", "team", "lines")
    names = sorted(set(billed.index) | set(busy))
    rows: list[dict[str, Any]] = []
    used: set[str] = set()
    for name in names:
        use_busy = busy.get(name, 0.0) > 0
        wid = _slug(name)
        while wid in used:
            wid += "-x"
        used.add(wid)
        profile, shape = (
            (busy_profiles[name], "busy GPU-hours per hour from utilisation")
            if use_busy
            else billed_profiles.get(name, (np.zeros(hours), "no GPU-hours"))
        )
        rows.append(
            {
                "id": wid,
                "tag": name,
                "team": str(teams.get(name, name if name not in billed.index else "unassigned")),
                "gpu_hours": float(busy[name] if use_busy else billed.get(name, 0.0)),
                "basis": "utilisation" if use_busy else "billing",
                "billed": float(billed.get(name, 0.0)),
                "profile": profile,
                "shape": shape,
            }
        )
    return [r for r in rows if r["gpu_hours"] > 0 and r["profile"].sum() > 0]


#: Where the draft writes each workload's hourly demand profile, relative to workloads.yaml.
PROFILE_DIR = "profiles"


def profile_csv(profile: np.ndarray, month: str) -> str:
    """``hour,units`` with the UTC start of every hour of ``month`` (zeros included, so it covers the horizon)."""
    start = pd.Timestamp(f"{month}-01", tz="UTC")
    lines = ["hour,units"]
    for h, units in enumerate(profile):
        lines.append(f"{start + pd.Timedelta(hours=h):%Y-%m-%dT%H:%M:%SZ},{round(float(units), 6):g}")
    return "\n".join(lines) + "\n"


def _workloads_yaml(rows: list[dict[str, Any]], accelerators: list[str], month: str) -> str:
    out = [
        f"# DRAFT written by 'finops estate draft': one workload per workload/team tag seen in {month}.",
        "# Demand is in GPU-hours: busy GPU-hours where utilisation was ingested, else billed GPU-hours, hour by",
        f"# hour in {PROFILE_DIR}/<id>.csv. INFERRED: a billing line's GPU-hours are spread evenly over its charge",
        "# period (hourly lines keep the bill's shape; daily or monthly lines are flat within the period).",
        "# NOT INFERRED for every workload: throughput (1 unit per GPU-hour on every accelerator), compliance",
        "# (requires: nothing), SLO (standard), interruptible (false), deferrable (false). Reference: docs/estate.md.",
        "version: 1",
        "workloads:",
    ]
    throughput = _dump(dict.fromkeys(accelerators, 1.0))
    for r in rows:
        basis = (
            f"busy GPU-hours from utilisation (billed: {r['billed']:,.1f})"
            if r["basis"] == "utilisation"
            else "billed GPU-hours (no utilisation for it)"
        )
        out.append(f"  - id: {_dump(r['id'])}")
        out.append(f"    team: {_dump(r['team'])}")
        out.append("    slo: standard    # NOT INFERRED")
        out.append("    interruptible: false    # NOT INFERRED")
        out.append("    unit: gpu_hours")
        profiled = float(r["profile"].sum())
        path = _dump(f"{PROFILE_DIR}/{r['id']}.csv")
        out.append(
            f"    demand: {{profile: {path}}}    # {month}: {basis}; "
            f"{profiled:,.1f} GPU-hours, peak {float(r['profile'].max()):,.1f} in an hour; INFERRED: {r['shape']}"
        )
        out.append(f"    throughput: {throughput}    # NOT INFERRED: units per GPU-hour by accelerator")
        out.append("    # requires: {jurisdictions: [...], providers: [...], isolation: dedicated}    # NOT INFERRED")
    return "\n".join(out) + "\n"


def draft_estate(store: Store, *, month: str | None = None, currency: str | None = None) -> Draft:
    """Draft fleet.yaml and workloads.yaml from ``store``'s GPU billing lines (and utilisation) of ``month``."""
    month, currency, reason = _params(store, month, currency)
    hours = Horizon.month(month).hours
    subs = _substrate_rows(store, month, currency, hours)
    work = _workload_rows(store, month, currency, hours)
    accelerators = sorted({r["accelerator"] for r in subs})
    return Draft(
        fleet_yaml=_fleet_yaml(subs, month, currency),
        workloads_yaml=_workloads_yaml(work, accelerators, month),
        month=month,
        currency=currency,
        substrates=len(subs),
        workloads=len(work),
        gpu_effective_cost=sum(r["effective_cost"] for r in subs),
        demand_basis={r["id"]: r["basis"] for r in work},
        profiles={f"{PROFILE_DIR}/{r['id']}.csv": profile_csv(r["profile"], month) for r in work},
        month_reason=reason,
    )


def write_draft(draft: Draft, out: Path, *, force: bool = False) -> tuple[Path, Path]:
    """Write ``fleet.yaml`` and ``workloads.yaml`` into ``out``; refuse to overwrite unless ``force``."""
    check_writable(out, directory=True)
    fleet, workloads = out / "fleet.yaml", out / "workloads.yaml"
    profiles = {out / name: text for name, text in draft.profiles.items()}
    if not force:
        for path in (fleet, workloads, *profiles):
            if path.exists():
                raise InputError("exists; pass `force` to overwrite the draft", path=path, mentions=("force",))
    for path, text in profiles.items():  # the profiles first: workloads.yaml names them
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, text)
    write_text(fleet, draft.fleet_yaml)
    write_text(workloads, draft.workloads_yaml)
    return fleet, workloads

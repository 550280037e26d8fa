"""Cost anomalies: days whose spend for a scope departs from its expected value, with impact and causes.

Method, per scope (a ``--by`` group × currency) over its complete days of spend:

1. expected spend = trend + weekly season of a robust STL decomposition (statsmodels ``STL(period=7, seasonal=35,
   trend=21, robust=True)``: LOESS fits with bisquare weights, so the anomalies themselves barely move the fit);
2. score = (actual − expected) ÷ robust scale, the scale being 1.4826 × the median absolute deviation of the
   residuals (floored at 1 % of the typical daily spend, so a flat series does not make every cent an anomaly);
3. a day is an anomaly when its score is at least ``sensitivity`` (default 4), its impact (actual − expected) is at
   least ``min_impact`` in money, and the scope has at least ``warmup_days`` days of spend before it (a new scope
   is not alerted on while it has no normal to depart from);
4. top contributors: per contributor dimension (service, instance type, account, team tag, …), the values whose
   spend that day rose most over their median spend on the same weekday of the four weeks before.

Hourly (``hourly=True``): the same over the scope's complete hours, with a daily season (``STL(period=24,
robust=True)``, statsmodels' default smoothers), the warm-up still in days and contributors compared with the
same hour of the same weekday. Only lines billed per hour (a charge period of an hour or less) are scored hourly.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from finops_cli.alerts.scope import dimension
from finops_cli.alerts.series import daily_costs, data_through, filled
from finops_cli.errors import InputError
from finops_cli.store.store import Store

METHOD = "robust STL (period 7, seasonal 35, trend 21) expected spend; score = residual / (1.4826 × MAD)"
CONTRIBUTORS = ("service", "instance_type", "account", "team")
#: days of history read before the reported window (the STL fit's context)
CONTEXT_DAYS = 63


def _scale(resid: np.ndarray, level: float) -> float:
    mad = float(np.median(np.abs(resid - np.median(resid))))
    return max(1.4826 * mad, 0.01 * abs(level), 1e-6)


def _level(values: np.ndarray) -> float:
    """The series' typical spend: its median, or its mean where it is mostly zeros (a job that runs some hours)."""
    return max(abs(float(np.median(values))), float(np.mean(np.abs(values))))


def _expected(series: pd.Series, period: int = 7) -> np.ndarray:
    """Trend + season of the robust STL fit (a series shorter than three seasons: its median). ``period`` 7: days
    with a weekly season; 24: hours with a daily one (statsmodels' default smoothers)."""
    values = series.to_numpy(dtype=float)
    if len(values) < 3 * period:
        return np.full(len(values), float(np.median(values)))
    from statsmodels.tsa.seasonal import STL

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        smoothers = {"seasonal": 35, "trend": 21} if period == 7 else {}
        fit = STL(values, period=period, robust=True, **smoothers).fit()
    expected: np.ndarray = np.asarray(fit.trend) + np.asarray(fit.seasonal)
    return np.maximum(expected, 0.0) if values.min() >= 0 else expected  # no spend expected below nothing


def flagged(
    series: pd.Series,
    *,
    sensitivity: float = 4.0,
    min_impact: float = 100.0,
    warmup_days: int = 14,
    direction: str = "up",
    period: int = 7,
) -> list[tuple[int, Any, float, float, float]]:
    """The anomalous days of one scope's daily series (steps 1-3 of the module docstring): (position, index
    label, expected, impact, score) each. ``period`` 24 with an hourly series: ``warmup_days`` counts hours."""
    values = series.to_numpy(dtype=float)
    if len(values) <= warmup_days:
        return []
    expected = _expected(series, period)
    resid = values - expected
    scale = _scale(resid, _level(values))
    out = []
    for i in range(warmup_days, len(values)):
        score = resid[i] / scale
        hit = score >= sensitivity if direction == "up" else abs(score) >= sensitivity
        if hit and abs(resid[i]) >= min_impact:
            out.append((i, series.index[i], float(expected[i]), float(resid[i]), float(score)))
    return out


def _contributors(frame: pd.DataFrame, day: date, names: Sequence[str], top: int = 3) -> list[dict[str, Any]]:
    """Per dimension, the ``top`` values whose spend on ``day`` rose most over their usual spend on that weekday
    (the median of the same weekday in the four weeks before; none that day counts as 0)."""
    ranked: list[tuple[int, float, dict[str, Any]]] = []
    weeks = [day - timedelta(days=7 * k) for k in range(1, 5)]
    today = frame[frame["day"] == day]
    before = frame[frame["day"].isin(weeks)]
    for name in names:
        now = today.groupby(name)["cost"].sum()
        per_week = before.groupby([name, "day"])["cost"].sum().unstack("day").reindex(columns=weeks).fillna(0.0)
        was = per_week.median(axis=1)
        delta = now.sub(was, fill_value=0.0).sort_values(ascending=False)
        for rank, (value, rise) in enumerate(delta.head(top).items()):
            if rise > 0.005:
                ranked.append((rank, -float(rise), {"dimension": name, "value": str(value), "impact": float(rise)}))
    ranked.sort(key=lambda t: (t[0], t[1]))  # each dimension's biggest first, then the runners-up
    return [c for *_, c in ranked]


def detect_anomalies(
    store: Store,
    by: Sequence[str] = (),
    where: Mapping[str, Sequence[str]] | None = None,
    *,
    days: int = 30,
    min_impact: float = 100.0,
    sensitivity: float = 4.0,
    warmup_days: int = 14,
    contributors: Sequence[str] = CONTRIBUTORS,
    cost: str = "effective",
    all_lines: bool = False,
    direction: str = "up",
    hourly: bool = False,
) -> dict[str, Any]:
    """The ``finops.anomalies`` document: anomalies of the last ``days`` complete days (module docstring);
    ``hourly``: of their hours, against a daily season (``day`` is then the hour's start)."""
    if days < 1 or warmup_days < 0 or sensitivity <= 0 or min_impact < 0:
        raise InputError(
            "`days` must be >= 1, `warmup_days` >= 0, `sensitivity` > 0 and `min_impact` >= 0",
            mentions=("days", "warmup_days", "sensitivity", "min_impact"),
        )
    if direction not in ("up", "both"):
        raise InputError(f"{direction!r}: expected up or both", param="direction")
    by = [dimension(b) for b in by if b.strip()]
    names = [dimension(c) for c in contributors if c.strip() and dimension(c) not in by]
    through = data_through(store, gpu_only=not all_lines)
    step, period, unit = (timedelta(hours=1), 24, "hours") if hourly else (timedelta(days=1), 7, "days")
    edge: Any = through.replace(minute=0, second=0, microsecond=0) if hourly else through.date()  # first partial
    first = edge - timedelta(days=days)
    warmup = warmup_days * (24 if hourly else 1)
    frame = daily_costs(
        store, by, where, first - timedelta(days=CONTEXT_DAYS), edge, cost=cost, gpu_only=not all_lines,
        extra=names, hourly=hourly,
    )  # fmt: skip
    keys = [*by, "currency"]
    found: list[dict[str, Any]] = []
    notes: list[str] = []
    if hourly and frame.empty:
        notes.append("no line in scope is billed per hour (a charge period of an hour or less): score days instead")
    for key, part in frame.groupby(keys, sort=True) if len(frame) else []:
        key = key if isinstance(key, tuple) else (key,)
        scope = dict(zip(keys, (str(k) for k in key), strict=True))
        start = min(part["day"])
        series = filled(part["day"], part["cost"], start, edge, step)
        if len(series) <= warmup:
            label = ", ".join(f"{k}={v}" for k, v in scope.items() if k != "currency") or "all"
            notes.append(f"{label}: {len(series)} {unit} of spend; not alerted until {warmup_days} days")
            continue
        for i, day, exp, impact, score in flagged(
            series, sensitivity=sensitivity, min_impact=min_impact, warmup_days=warmup, direction=direction,
            period=period,
        ):  # fmt: skip
            if day < first:
                continue
            text = ",".join(f"{k}={v}" for k, v in scope.items() if k != "currency") or "all"
            found.append({
                **scope,
                "scope": text,
                "day": day.isoformat(),
                "actual": float(series.iloc[i]),
                "expected": exp,
                "impact": impact,
                "score": score,
                "contributors": _contributors(part, day, names),
                "dedup_key": f"finops/anomaly/{text}/{scope['currency']}/{day.isoformat()}",
            })  # fmt: skip
    found.sort(key=lambda a: (a["day"], a["impact"]), reverse=True)
    if through != (edge if hourly else datetime(edge.year, edge.month, edge.day, tzinfo=through.tzinfo)):
        notes.append(f"billing runs to {through:%Y-%m-%d %H:%M} UTC; the partial {unit[:-1]} is left out")
    return {
        "kind": "finops.anomalies",
        "schema_version": 1,
        "as_of": through.isoformat(),
        "window": {"start": first.isoformat(), "end": (edge - step).isoformat()},
        "method": METHOD,
        "parameters": {"granularity": "hour" if hourly else "day", "sensitivity": sensitivity,
                       "min_impact": min_impact, "warmup_days": warmup_days, "direction": direction, "cost": cost,
                       "by": by},
        "anomalies": found,
        "notes": notes,
    }  # fmt: skip

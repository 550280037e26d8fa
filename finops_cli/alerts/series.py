"""Daily spend series of scopes, and how far the store's billing runs: what budgets and anomalies model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta

import pandas as pd

from finops_cli.alerts import queries
from finops_cli.alerts.scope import cost_column, run, selection
from finops_cli.errors import InputError
from finops_cli.store.store import Store


def _months(store: Store, start: date, end: date) -> list[str]:
    """Billing periods that can hold charges of [start, end): from start's month on (corrections arrive later)."""
    first = f"{start:%Y-%m}"
    return [m for m in store.partition_values("billing", "billing_period") if m >= first] or [first]


def data_through(store: Store, *, gpu_only: bool = True) -> datetime:
    """The instant the store's billing runs to (the latest charge period end)."""
    if not store.has("billing"):
        raise InputError("no billing in the store; run 'finops ingest billing' first")
    sel = selection(gpu_only=gpu_only)
    frame = run(store, queries.DATA_SPAN, sel)
    if frame is None or frame.empty or pd.isna(frame["through"].iloc[0]):
        raise InputError("no billing line in the store" + (" is a GPU line" if gpu_only else ""))
    through: datetime = pd.Timestamp(frame["through"].iloc[0]).tz_convert(UTC).to_pydatetime()
    return through


def daily_costs(
    store: Store,
    by: Sequence[str],
    where: Mapping[str, Sequence[str]] | None,
    start: date,
    end: date,
    *,
    cost: str = "effective",
    gpu_only: bool = True,
    extra: Sequence[str] = (),
    hourly: bool = False,
) -> pd.DataFrame:
    """Spend per UTC day in [start, end) × ``by`` (and ``extra``) × currency: columns ``day`` (date), the names,
    ``currency``, ``cost``. Days without spend are absent. ``hourly``: per hour instead (``day`` the hour's start,
    a UTC datetime; ``start`` and ``end`` may be datetimes)."""
    names = list(dict.fromkeys([*by, *extra]))
    lo, hi = (d if isinstance(d, datetime) else datetime(d.year, d.month, d.day, tzinfo=UTC) for d in (start, end))
    sel = selection(names, where, months=_months(store, lo.date(), hi.date()), gpu_only=gpu_only)
    sel.conditions.append(
        f"ChargePeriodStart >= {sel.values('t', [lo])} AND ChargePeriodStart < {sel.values('t', [hi])}"
    )
    query = queries.HOURLY_COSTS if hourly else queries.DAILY_COSTS
    frame = run(store, query, sel, names, cost=cost_column(cost))
    if frame is None:
        return pd.DataFrame(columns=["day", *names, "currency", "cost"])
    when = pd.to_datetime(frame["day"], utc=True)
    frame["day"] = [t.to_pydatetime() for t in when] if hourly else when.dt.date
    # one row order for one store (a parallel GROUP BY has none), so every sum of these rows is the same each run
    return frame.sort_values(["day", *names, "currency"], kind="stable", ignore_index=True)


def filled(days: pd.Series, costs: pd.Series, start: date, end: date, step: timedelta = timedelta(days=1)) -> pd.Series:
    """Spend per day (per ``step``) of [start, end), 0 where there is none (index: the periods' starts)."""
    s = pd.Series(costs.to_numpy(dtype=float), index=list(days)).groupby(level=0).sum()
    idx = [start + i * step for i in range(int((end - start) / step))]
    return s.reindex(idx, fill_value=0.0)

"""Period-end spend forecasts from a daily series: additive ETS with a weekday season, and a prediction interval.

Method: statsmodels' :class:`~statsmodels.tsa.exponential_smoothing.ets.ETSModel` with additive errors, no trend
and an additive 7-day season (ETS(A,N,A)), fitted by maximum likelihood on the scope's complete days. The
point forecast is the sum of the mean forecasts of the days left in the period; the interval is the
``(1 − level)/2`` and ``(1 + level)/2`` quantiles of that sum over 1,000 simulated sample paths (seeded, so
the same store gives the same interval), widened about their median by √(1 + 2h/n) for h days ahead of n seen:
the paths carry the days' noise, not the errors of the fitted level and weekday season (each adds about σ²h²/n to
the variance of the sum). Fewer than :data:`MIN_HISTORY_DAYS` complete days give no forecast
and say so rather than guess.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

#: two weeks: the weekday season needs every weekday seen twice
MIN_HISTORY_DAYS = 14
#: default coverage of the prediction interval
LEVEL = 0.9
METHOD = "ETS(A,N,A), weekly season (statsmodels ETSModel); interval from 1,000 simulated paths"


@dataclass(frozen=True)
class Forecast:
    """Spend to the period's end: ``actual`` so far plus the forecast of the days left (``None``: no forecast,
    ``reason`` says why)."""

    actual: float
    expected: float | None
    low: float | None
    high: float | None
    remaining_days: int
    history_days: int
    level: float = LEVEL
    reason: str | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def forecast_total(
    history: pd.Series, actual: float, remaining_days: int, *, level: float = LEVEL, seed: int = 0
) -> Forecast:
    """``actual`` + the forecast of ``remaining_days`` more days of ``history`` (daily spend, complete days,
    consecutive, oldest first)."""
    n = len(history)
    if remaining_days <= 0:
        return Forecast(actual, actual, actual, actual, 0, n, level)
    if n < MIN_HISTORY_DAYS:
        why = f"too little history: {n} complete day{'s' * (n != 1)} of spend, a forecast needs {MIN_HISTORY_DAYS}"
        return Forecast(actual, None, None, None, remaining_days, n, level, why)
    values = history.to_numpy(dtype=float)
    if float(np.ptp(values)) < 1e-9:  # a flat series: ETS has no variance to fit
        total = actual + float(values[-1]) * remaining_days
        return Forecast(actual, total, total, total, remaining_days, n, level)
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter on short or spiky series: the interval shows it
        fit = ETSModel(values, error="add", trend=None, seasonal="add", seasonal_periods=7).fit(disp=False)
        mean = float(np.sum(fit.forecast(remaining_days)))
        paths = np.asarray(
            fit.simulate(remaining_days, repetitions=1000, anchor="end", rng=np.random.default_rng(seed))
        )
    sums = paths.reshape(remaining_days, -1).sum(axis=0)
    low, high = np.quantile(sums, [(1 - level) / 2, (1 + level) / 2])
    center = float(np.median(sums))
    widen = float(np.sqrt(1 + 2 * remaining_days / n))  # the fitted level's and season's errors, ~σ²h²/n each
    low, high = center + (float(low) - center) * widen, center + (float(high) - center) * widen
    return Forecast(actual, actual + mean, actual + low, actual + high, remaining_days, n, level)

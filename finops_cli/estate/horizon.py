"""The one default-month rule every command uses (``plan``, ``stack``, ``netc``, ``simulate dispatch``,
``waste``, ``estate draft``, ``costs --chargeback`` and ``costs --compare``): :func:`default_month`.

Without ``--horizon``/``--month`` a command uses the **latest month with GPU usage in the store**
(billing lines with GPU-hours, or utilisation samples); else the first month a timestamped demand
profile covers (commands that read an estate); else the latest billing period (no GPU line anywhere);
else the current calendar month at ``--as-of`` (UTC). A month with only non-GPU lines (a stray $0.24
storage charge) never decides. Each command prints the month and why on stderr, and warns when the
store's utilisation, its billing and the horizon are different months: the baseline, the idle waste
and the plan would then describe different periods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from finops_cli.core.demand import Horizon

if TYPE_CHECKING:
    from finops_cli.estate.load import Estate
    from finops_cli.store import Store


@dataclass(frozen=True)
class HorizonChoice:
    """The horizon a command uses, why (for stderr), and month-mismatch warnings."""

    horizon: Horizon
    reason: str
    warnings: list[str] = field(default_factory=list)

    @property
    def line(self) -> str:
        """``horizon: 2026-10 (744 h): latest month with GPU usage in the store``."""
        return f"horizon: {self.horizon.start:%Y-%m-%d} + {self.horizon.hours} h: {self.reason}"


def latest_billed_gpu_month(store: Store) -> str | None:
    """The latest ``billing_period`` with GPU-hours > 0 (non-GPU lines never decide the month)."""
    from finops_cli.store import engine
    from finops_cli.store.queries import LATEST_BILLED_GPU_MONTH, LATEST_BILLED_GPU_MONTH_HOURLY

    hourly = store.has_aggregate("billing_hourly")
    table = engine.run(store, LATEST_BILLED_GPU_MONTH_HOURLY if hourly else LATEST_BILLED_GPU_MONTH)
    month = table.column("month")[0].as_py() if table is not None and table.num_rows else None
    return None if month is None else str(month)


def latest_utilization_month(store: Store) -> str | None:
    """The latest month with utilisation samples in the store."""
    months = store.partition_values("utilization", "month") if store.has("utilization") else []
    return months[-1] if months else None


def _profile_month(estate: Estate | None) -> str | None:
    if estate is None:
        return None
    from finops_cli.estate.demand_io import infer_horizon

    sentinel = Horizon(datetime(1970, 1, 1, tzinfo=UTC), 1)
    hz = infer_horizon(estate, sentinel)
    return None if hz is sentinel else f"{hz.start:%Y-%m}"


@dataclass(frozen=True)
class MonthChoice:
    """The month the default-month rule picked, why, and what the store holds (for warnings)."""

    month: str
    reason: str
    billed: str | None = None  # latest billing period with GPU-hours
    utilisation: str | None = None  # latest month with utilisation samples

    @property
    def line(self) -> str:
        """``month: 2024-09: latest month with GPU usage in the store (…)``: what a command prints on stderr."""
        return f"month: {self.month}: {self.reason}"


def default_month(store: Store | None, estate: Estate | None = None, as_of: datetime | None = None) -> MonthChoice:
    """The one default-month rule (module docstring): every command without ``--month``/``--horizon`` asks here."""
    has_billing = store is not None and store.has("billing")
    billed = latest_billed_gpu_month(store) if store is not None and has_billing else None
    util = latest_utilization_month(store) if store is not None else None
    periods = store.partition_values("billing", "billing_period") if store is not None and has_billing else []
    if billed or util:
        month = max(m for m in (billed, util) if m)
        seen = ", ".join(f"{what} {m}" for what, m in (("GPU billing", billed), ("utilisation", util)) if m)
        later = [p for p in periods if p > month]
        skipped = f"; later billing periods without GPU lines: {', '.join(later)}" if later else ""
        reason = f"latest month with GPU usage in the store ({seen}{skipped})"
    elif (profile := _profile_month(estate)) is not None:
        month, reason = profile, "the month the demand profiles cover (no GPU usage in the store)"
    elif periods:
        month, reason = periods[-1], "the latest billing period (no GPU usage in the store)"
    else:
        now = as_of or datetime.now(UTC)
        month, reason = f"{now:%Y-%m}", "the current month (no GPU usage in the store, no dated profile)"
    return MonthChoice(month, reason, billed, util)


def choose_horizon(
    given: str | Horizon | None, estate: Estate | None, store: Store | None, as_of: datetime | None = None
) -> HorizonChoice:
    """``given`` (``YYYY-MM``, ``START:HOURS`` or a horizon), else :func:`default_month`'s month;
    ``as_of`` (default now) is the instant "the current month" is counted from."""
    if given is None:
        picked = default_month(store, estate, as_of)
        hz, reason, billed, util = Horizon.month(picked.month), picked.reason, picked.billed, picked.utilisation
        return HorizonChoice(hz, reason, month_warnings(hz, billed, util))
    billed = latest_billed_gpu_month(store) if store is not None and store.has("billing") else None
    util = latest_utilization_month(store) if store is not None else None
    if isinstance(given, Horizon):
        hz, reason = given, "as given"
    else:
        hz, reason = Horizon.parse(given), "`horizon`"
    return HorizonChoice(hz, reason, month_warnings(hz, billed, util))


def month_warnings(hz: Horizon, billed: str | None, util: str | None) -> list[str]:
    """One warning when the store's utilisation, its billing and the horizon are different months."""
    months = {"horizon": f"{hz.start:%Y-%m}"}
    if billed:
        months["billing (GPU-hours)"] = billed
    if util:
        months["utilisation"] = util
    if len(set(months.values())) <= 1 or len(months) == 1:
        return []
    said = ", ".join(f"{k} {v}" for k, v in months.items())
    return [f"different months: {said}; the baseline, idle waste and plan describe different periods (`horizon`)"]

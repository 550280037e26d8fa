"""The one default-month rule every command without ``--horizon``/``--month`` uses (:func:`default_month`): the
latest month with GPU usage in the store, else the month dated demand profiles cover, else the latest billing
period, else the current month at ``--as-of`` (docs/economics.md §1, "The default month").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from finops_cli.core.demand import Horizon, month_warnings
from finops_cli.store.cost_query import latest_usage_months

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


@dataclass(frozen=True)
class MonthChoice:
    """The month the default-month rule picked, why, and what the store holds (for warnings)."""

    month: str
    reason: str
    billed: str | None = None  # latest billing period with GPU-hours
    utilisation: str | None = None  # latest month with utilisation samples


def default_month(store: Store | None, estate: Estate | None = None, as_of: datetime | None = None) -> MonthChoice:
    """The one default-month rule (module docstring)."""
    billed, util = latest_usage_months(store) if store is not None else (None, None)
    periods = store.partition_values("billing", "billing_period") if store is not None and store.has("billing") else []
    if billed or util:
        month = max(m for m in (billed, util) if m)
        seen = ", ".join(f"{what} {m}" for what, m in (("GPU billing", billed), ("utilisation", util)) if m)
        later = [p for p in periods if p > month]
        skipped = f"; later billing periods without GPU lines: {', '.join(later)}" if later else ""
        reason = f"latest month with GPU usage in the store ({seen}{skipped})"
        return MonthChoice(month, reason, billed, util)
    from finops_cli.estate.demand_io import profile_month  # the profile readers: only a store without GPU usage

    if estate is not None and (profile := profile_month(estate)) is not None:
        month, reason = profile, "the month the demand profiles cover (no GPU usage in the store)"
    elif periods:
        month, reason = periods[-1], "the latest billing period (no GPU usage in the store)"
    else:
        now = as_of or datetime.now(UTC)
        month, reason = f"{now:%Y-%m}", "the current month (no GPU usage in the store, no dated profile)"
    return MonthChoice(month, reason, billed, util)


def month_rule(store: Store) -> Callable[[], tuple[str, str]]:
    """:func:`default_month` on ``store`` (the month and why), for a verb that runs it only when it needs it."""

    def rule() -> tuple[str, str]:
        picked = default_month(store)
        return picked.month, picked.reason

    return rule


def choose_horizon(
    given: str | Horizon | None, estate: Estate | None, store: Store | None, as_of: datetime | None = None
) -> HorizonChoice:
    """``given`` (``YYYY-MM``, ``START:HOURS`` or a horizon), else :func:`default_month`'s month;
    ``as_of`` (default now) is the instant "the current month" is counted from."""
    if given is None:
        picked = default_month(store, estate, as_of)
        hz, reason, billed, util = Horizon.month(picked.month), picked.reason, picked.billed, picked.utilisation
    else:
        billed, util = latest_usage_months(store) if store is not None else (None, None)
        hz, reason = (given, "as given") if isinstance(given, Horizon) else (Horizon.parse(given), "`horizon`")
    return HorizonChoice(hz, reason, month_warnings(hz, billed, util))

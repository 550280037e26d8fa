"""The leadership report's inputs gathered from the store and the priced estate, then the report written.

:func:`finops_cli.estate.supply.report_estate` hands over here; the supply curve comes from a callable
(the estate layer above prices it), so this module reads only the store.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from finops_cli.core.demand import Horizon, month_warnings
from finops_cli.errors import FinopsError, InputError
from finops_cli.report.metrics import (
    ReportInputs,
    ReportResult,
    SupplyInputs,
    WasteInputs,
    horizon_bounds,
)
from finops_cli.report.waste_query import store_waste_reports
from finops_cli.report.write import check_report_path, write_report
from finops_cli.store import engine
from finops_cli.store.cost_query import actual_cost_notes, latest_usage_months
from finops_cli.store.queries import SPOT_FEED_LATEST

if TYPE_CHECKING:
    from finops_cli.core.stack import Stack
    from finops_cli.schema.estate import Fleet
    from finops_cli.store import Store


@dataclass
class SupplyCurve:
    """One workload's merit order for the report, in ``currency``, and each substrate's price in it."""

    stack: Stack
    currency: str
    prices: dict[str, float | None]


def build_report(
    inputs: ReportInputs,
    st: Store,
    out: Path | None,
    *,
    fleet: Fleet | None,
    fleet_name: object | None,
    plan_path: object | None,
    supply: Callable[[str], SupplyCurve] | None,
    supply_missing: str | None,
) -> ReportResult:
    """Fill ``inputs`` from the store (idle waste, price-feed age, effective-cost notes) and ``supply`` (the merit
    order of the plan's costliest workload), then write the report at ``out`` (charts drawn here); its warnings
    say when the plan, the billing and the utilisation are different months.

    ``fleet`` (read from ``fleet_name``) prices idle devices and must be in the plan's currency;
    ``supply_missing`` is the supply section's note when there is no ``supply``."""
    doc = inputs.plan
    if fleet is not None and fleet.currency != doc.currency:
        raise InputError(
            f"the plan is in {doc.currency} but {fleet_name or 'the fleet'} is in {fleet.currency}; amounts in "
            "different currencies are never mixed (plan with this fleet, or report with the fleet the plan used)",
            path=plan_path,
            where="currency",
        )
    if out is not None:
        check_report_path(out)
    start, _ = horizon_bounds(doc)
    month = None if start is None else f"{start:%Y-%m}"
    if month is not None:
        inputs.notes.extend(f"{n[0].upper()}{n[1:]}." for n in actual_cost_notes(st, [month]))

    supply_notes: list[str] = []  # after idle waste's note in the report
    by_cost: dict[str, float] = defaultdict(float)
    for a in doc.allocations:
        by_cost[a.workload] += a.cost
    if supply is not None and by_cost:
        biggest = max(by_cost, key=lambda w: by_cost[w])
        try:
            curve = supply(biggest)
            now, used = curve.prices, {p.substrate: p.value for p in doc.prices}
            moved = [k for k, v in used.items() if k in now and v is not None and abs((now[k] or 0) - v) > 1e-6]
            if moved:
                supply_notes.append(
                    "The supply curve prices " + ", ".join(moved) + " differently from the plan (the store or "
                    "fleet changed since the plan was made)."
                )
            s = curve.stack
            inputs.supply = SupplyInputs(s.as_dict(), curve.currency, biggest, s.unit, s.clearing_price, s.demand_units)
        except FinopsError as exc:
            inputs.supply_note = str(exc)
    elif supply is not None:
        inputs.supply_note = "the plan allocates nothing"
    elif supply_missing is not None:
        inputs.supply_note = supply_missing
    if st.has("utilization"):
        months = st.partition_values("utilization", "month")
        use = month if month in months else months[-1]
        try:
            reports = store_waste_reports(
                st, ("team", "substrate"), fleet=fleet, price_per_gpu_hour=None, month=use, reason="`month`"
            )
            by = {g: r.to_dict() for g, r in reports.items()}
            inputs.waste = WasteInputs(by, month=use)
            if use != month:
                inputs.notes.append(f"Idle waste is for {use}, the latest month with utilisation (plan: {month}).")
        except FinopsError as exc:
            inputs.waste_note = str(exc)
    inputs.notes += supply_notes
    if st.has("spot_prices"):
        table = engine.run(st, SPOT_FEED_LATEST)
        rows = table.to_pylist() if table is not None else []
        inputs.price_feeds = {str(r["provider"]): r["latest"] for r in rows}
    result = write_report(inputs, out)
    if start is not None:
        result.horizon_note = f"horizon: {start:%Y-%m-%d} + {doc.horizon.hours} h: the plan's"
        result.warnings = month_warnings(Horizon(start, doc.horizon.hours), *latest_usage_months(st))
    return result

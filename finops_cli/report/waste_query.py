"""Idle waste read from the store: the month's device usage, resource costs and histogram aggregated once in
DuckDB (memory grows with devices and resources, not samples or lines), then grouped each way asked. The ingest
aggregates stand in for the samples when every utilisation file has them: the same figures either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pyarrow.compute as pc

from finops_cli.core.demand import check_month
from finops_cli.errors import InputError
from finops_cli.report.waste import (
    GROUP_BYS,
    GroupBy,
    UtilHistogram,
    WasteReport,
    billed_gpu_report,
    usage_from_groups,
    waste_reports_by,
)
from finops_cli.report.waste_rates import resource_rates_table
from finops_cli.store import engine
from finops_cli.store.queries import (
    RESOURCE_COSTS,
    RESOURCE_COSTS_ATTRIBUTES,
    RESOURCE_COSTS_GROUPED,
    WASTE_DEVICE_USAGE,
    WASTE_DEVICE_USAGE_AGGREGATE,
    WASTE_HISTOGRAM,
    WASTE_HISTOGRAM_AGGREGATE,
)

if TYPE_CHECKING:
    from finops_cli.schema.estate import Fleet
    from finops_cli.store import Store


def waste_reports(
    st: Store,
    by: Sequence[str],
    *,
    fleet: Callable[[], Fleet | None],
    price_per_gpu_hour: float | None,
    month: str | None,
    default_month: Callable[[], tuple[str, str]],
) -> dict[str, WasteReport]:
    """:func:`finops_cli.api.waste_reports` on the store ``st``: ``fleet`` loads the fleet, ``default_month`` is
    the default-month rule (the month and why)."""
    groupings: list[GroupBy] = []
    for group in by:
        if group not in GROUP_BYS:
            raise InputError(f"must be one of {', '.join(GROUP_BYS)}; got {group!r}", param="by")
        groupings.append(group)
    check_month(month)
    if not st.has("utilization") and not st.has("billing"):
        raise InputError(
            "no utilisation and no billing in the store; run 'finops ingest billing' and 'finops ingest utilization'"
        )
    month, reason = (month, "`month`") if month is not None else default_month()
    return store_waste_reports(
        st, groupings, fleet=fleet(), price_per_gpu_hour=price_per_gpu_hour, month=month, reason=reason
    )


def store_waste_reports(
    st: Store,
    groupings: Sequence[GroupBy],
    *,
    fleet: Fleet | None,
    price_per_gpu_hour: float | None,
    month: str,
    reason: str,
) -> dict[str, WasteReport]:
    """Idle waste of ``month`` grouped each way in ``groupings`` (the month's partition is queried and priced
    once); ``reason`` says why this month. Devices are priced from the billing store of the same month, else
    ``fleet``, else ``price_per_gpu_hour``. A month with billing but no utilisation gives billed GPU spend and
    GPU-hours per group (:func:`~finops_cli.report.waste.billed_gpu_report`, ``basis="billing"``). The
    per-resource work on the month's bill runs on the system allocator (:func:`engine.system_allocator`)."""
    with engine.system_allocator():
        return _waste_reports(st, groupings, fleet, price_per_gpu_hour, month, reason)


def _waste_reports(
    st: Store, groupings: Sequence[GroupBy], fleet: Fleet | None, price: float | None, month: str, reason: str
) -> dict[str, WasteReport]:
    util_months = st.partition_values("utilization", "month") if st.has("utilization") else []
    bill_months = st.partition_values("billing", "billing_period") if st.has("billing") else []
    if month not in util_months and month not in bill_months:
        have = ", ".join(f"{kind} {', '.join(ms)}" for kind, ms in (("utilisation", util_months),
                                                                  ("billing", bill_months)) if ms)  # fmt: skip
        raise InputError(f"{month}: no utilisation or billing for it (have {have})", param="month")
    costs = (
        engine.run_arrow(
            st,
            RESOURCE_COSTS,
            {"month": month},
            categories=RESOURCE_COSTS_ATTRIBUTES,
            split_by="provider",  # one provider's lines at a time (the query groups by provider)
            match_columns=engine.match_columns(fleet, RESOURCE_COSTS_GROUPED),
        )
        if month in bill_months
        else None
    )
    if costs is not None and costs.num_rows:
        gpu = costs.filter(pc.greater(pc.fill_null(costs["gpu_hours"], 0.0), 0.0))  # only GPU resources are priced
        currencies = sorted(v for v in gpu["BillingCurrency"].unique().to_pylist() if v is not None)
        if len(currencies) > 1:
            raise InputError(f"billing for {month} mixes currencies ({', '.join(currencies)}); waste needs one")
    reports: dict[str, WasteReport]
    if month not in util_months:
        billing = costs.to_pandas() if costs is not None else None
        reports = {group: billed_gpu_report(billing, fleet=fleet, by=group) for group in groupings}
    else:
        usage_query, histogram_query = (WASTE_DEVICE_USAGE, WASTE_HISTOGRAM)
        if st.has_aggregate("utilization_devices") and st.has_aggregate("utilization_histogram"):
            usage_query, histogram_query = (WASTE_DEVICE_USAGE_AGGREGATE, WASTE_HISTOGRAM_AGGREGATE)
            st.checked_files("utilization")  # footers only: a damaged sample file is named, as on the samples' path
        groups = engine.run_pandas(st, usage_query, {"month": month})
        if groups is None or groups.empty:
            raise InputError(f"no utilisation samples for {month}")
        usage, span_hours = usage_from_groups(groups)
        bins = engine.run_pandas(st, histogram_query, {"month": month})
        reports = waste_reports_by(
            usage,
            groupings,
            rates=resource_rates_table(costs, fleet),  # per resource in Arrow: only the traced ones reach pandas
            fleet=fleet,
            price_per_gpu_hour=price,
            histogram=UtilHistogram.from_bins(bins) if bins is not None else None,
            span_hours=span_hours,
        )
    for report in reports.values():
        report.totals["month"] = month
        report.month_reason = reason
    return reports

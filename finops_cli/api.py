"""The Python API: the CLI's verbs as functions returning typed results (no printing, no exit codes).

The CLI only parses arguments, calls these and renders what they return. Imports are local to each
function so ``import finops_cli.api`` stays cheap.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import pandas as pd
    import pyarrow as pa

    from finops_cli.core.demand import Horizon as DemandHorizon
    from finops_cli.core.netc_report import NetcRow, Trace
    from finops_cli.core.stack import Stack
    from finops_cli.estate.demand_io import ObservedDemand
    from finops_cli.estate.horizon import HorizonChoice
    from finops_cli.estate.load import Estate
    from finops_cli.estate.prices import PriceSource
    from finops_cli.ingest.billing import IngestSummary
    from finops_cli.ingest.spot import SpotIngest
    from finops_cli.ingest.utilization import CsvMapping, UtilizationIngest
    from finops_cli.planner import PlannerOutput
    from finops_cli.report.waste import WasteReport
    from finops_cli.schema.estate import Fleet
    from finops_cli.schema.plan import PlanDocument
    from finops_cli.sim.dispatch import DispatchResult
    from finops_cli.sim.dispatch import Trace as DispatchTrace
    from finops_cli.sim.dispatch.replay import PlanReplay
    from finops_cli.sim.market import PolicyResult as MarketPolicyResult
    from finops_cli.sim.market import Scenario as MarketScenario
    from finops_cli.sim.market.experiments import ExperimentResult as MarketExperiment
    from finops_cli.store import Store
    from finops_cli.store.sources import AggregateResult, CheckResult, RemoveResult, SourceInfo


def open_store(root: str | Path | None = None) -> Store:
    """The store at ``root`` (``--store``), else ``$FINOPS_STORE``, else ``.finops/``; a directory or a bucket URI."""
    from finops_cli.store import open_store as _open  # pyarrow: only commands that open a store pay for it

    return _open(root)


def _store(store: str | Path | Store | None) -> Store:
    """``store`` itself, or the store at that root (``None``: the default one)."""
    return open_store(store) if store is None or isinstance(store, str | Path) else store


def estate(fleet: str | Path, workloads: str | Path) -> Estate:
    """Load and validate ``fleet.yaml`` and ``workloads.yaml``."""
    from finops_cli.estate.load import load_estate

    return load_estate(fleet, workloads)


# --- ingest: billing -------------------------------------------------------------------------------


def ingest_billing(
    paths: Sequence[str | Path],
    fmt: str = "auto",
    store: str | Path | Store | None = None,
    progress: Callable[[Path, int, int, int], None] | None = None,
    engine: str = "local",
    spark_master: str | None = None,
    jobs: int | None = None,
) -> IngestSummary:
    """Ingest billing exports (AWS CUR / CUR 2.0, GCP, Azure, FOCUS) into the store's ``billing`` dataset.

    Atomic (all files or nothing), idempotent per (format, billing account, billing period), and checked:
    per currency, the source's cost in equals the BilledCost written, to the cent. ``fmt`` is a format
    name or ``auto`` (sniff each file's header). ``progress(file, rows_done, file_index, file_count)``.
    Paths may be ``s3://``/``gs://`` objects or prefixes (:func:`finops_cli.uri.local_inputs`).
    ``engine="spark"`` runs the conversion and writes as Spark tasks (``spark_master``): the same store.
    ``jobs``: worker processes converting the files in parallel (default: one per core for a multi-file
    export of 64 MB or more); the store's contents do not depend on it.
    """
    from finops_cli.engines import billing_stager, query_engine
    from finops_cli.ingest.billing import ingest_billing as _ingest
    from finops_cli.uri import local_inputs, origin_fields

    stager = billing_stager(engine, spark_master, jobs)
    st = _store(store)
    with query_engine(engine, spark_master), local_inputs(paths) as local:
        return origin_fields(_ingest(local, fmt, st, progress=progress, stager=stager))


# --- the store: list, remove, check ------------------------------------------------------------------


def store_sources(store: str | Path | Store | None = None) -> list[SourceInfo]:
    """Every source in the store (``finops store list``): dataset, files, fingerprint, rows, period, money."""
    from finops_cli.store.sources import list_sources

    return list_sources(_store(store))


def store_remove(source: str, store: str | Path | Store | None = None) -> RemoveResult:
    """Remove one source (key, key prefix or ingested file) and its files, atomically (``finops store remove``)."""
    from finops_cli.store.sources import remove_source

    return remove_source(_store(store), source)


def store_check(store: str | Path | Store | None = None) -> CheckResult:
    """Re-read every file and verify it against the manifest and its money totals (``finops store check``)."""
    from finops_cli.store.sources import check_store

    return check_store(_store(store))


def store_aggregate(
    store: str | Path | Store | None = None,
    *,
    rebuild: bool = False,
    engine: str = "local",
    spark_master: str | None = None,
) -> AggregateResult:
    """Build the hourly ingest aggregates detail files lack (all with ``rebuild``) on ``engine``
    (``finops store aggregate``): the same SQL on DuckDB or Spark SQL, committed atomically."""
    from finops_cli.engines import query_engine
    from finops_cli.store.sources import build_aggregates

    with query_engine(engine, spark_master):
        return build_aggregates(_store(store), rebuild=rebuild)


# --- ingest: utilisation, spot prices; prices; waste ----------------------------------------------


def ingest_utilization(
    paths: Sequence[str | Path],
    *,
    store: str | Path | Store | None = None,
    fmt: str = "auto",
    mapping: CsvMapping | None = None,
    util_scale: float | None = None,
    on_rows: Callable[[int], None] | None = None,
    replace: bool = False,
    engine: str = "local",
    spark_master: str | None = None,
) -> UtilizationIngest:
    """Ingest utilisation traces (dcgm scrapes, Prometheus range JSON, generic CSV) into ``utilization``.

    A source overlapping a stored one (same device, overlapping time) is refused unless ``replace``.
    ``engine="spark"`` ingests each source as a Spark task (``spark_master``): the same store.
    """
    from finops_cli.engines import query_engine, utilization_stager
    from finops_cli.ingest.utilization import ingest_utilization as _ingest
    from finops_cli.uri import local_inputs, origin_fields

    stager = utilization_stager(engine, spark_master)
    st = _store(store)
    with query_engine(engine, spark_master), local_inputs(paths) as local:
        sources: list[str | Path] = [Path(p) for p in local]
        result = _ingest(
            st,
            sources,
            fmt=fmt,
            mapping=mapping,
            util_scale=util_scale,
            on_rows=on_rows,
            replace=replace,
            stager=stager,
        )
        return origin_fields(result)


def ingest_spot_prices(*, store: str | Path | Store | None = None, **kwargs: Any) -> SpotIngest:
    """Fetch (AWS boto3, GCP catalog) or read (AWS CLI JSON, CSV/TSV) spot prices into ``spot_prices``.

    Keyword arguments are those of :func:`finops_cli.ingest.spot.ingest_spot_prices`.
    """
    from finops_cli.ingest.spot import ingest_spot_prices as _ingest
    from finops_cli.uri import local_inputs, origin_fields

    st = _store(store)
    with local_inputs(kwargs.pop("files", None) or []) as local:
        return origin_fields(_ingest(st, files=local or None, **kwargs))


def spot_prices_table(store: str | Path | Store | None = None, provider: str | None = None) -> pa.Table | None:
    """The ``spot_prices`` dataset (optionally one provider), or None when nothing was ingested."""
    import pyarrow.dataset as ds

    flt = ds.field("provider") == provider if provider else None
    return _store(store).read("spot_prices", filter=flt)


def prices(
    *,
    store: str | Path | Store | None = None,
    instance_types: list[str] | None = None,
    regions: list[str] | None = None,
    since: datetime | None = None,
) -> pd.DataFrame:
    """``finops prices``: time-weighted statistics per provider × region/zone × instance type."""
    from finops_cli.errors import InputError
    from finops_cli.report.prices import price_table

    table = spot_prices_table(store)
    if table is None or table.num_rows == 0:
        raise InputError("no spot prices in the store; run 'finops ingest spot-prices' first")
    out = price_table(table, instance_types=instance_types, regions=regions, since=since)
    if out.empty:
        raise InputError("no spot prices match --instance-type/--region/--since")
    return out


def waste(
    *,
    store: str | Path | Store | None = None,
    by: str = "team",
    fleet: str | Path | None = None,
    price_per_gpu_hour: float | None = None,
    month: str | None = None,
) -> WasteReport:
    """``finops waste``: idle GPU-hours and dollars for one month of utilisation (default: the latest month with
    GPU usage in the store, the rule every command uses). One grouping of :func:`waste_reports`."""
    return waste_reports(store=store, by=(by,), fleet=fleet, price_per_gpu_hour=price_per_gpu_hour, month=month)[by]


def waste_reports(
    *,
    store: str | Path | Store | None = None,
    by: Sequence[str] = ("team",),
    fleet: str | Path | None = None,
    price_per_gpu_hour: float | None = None,
    month: str | None = None,
) -> dict[str, WasteReport]:
    """Idle waste of one month grouped each way in ``by``: the month's partition is queried and priced once.

    The leadership report shows waste by team and by substrate; both come from the same device usage,
    resource costs and histogram, read here once (each grouping is a cheap pass over the per-device rows).

    The month's samples and bill are aggregated in DuckDB (:mod:`finops_cli.store.queries`): memory grows
    with devices and resources, not samples or lines. The samples are read from the ingest aggregates
    ``utilization_devices`` and ``utilization_histogram`` (one row per device and file, ≤ 1000 bins per file)
    when every utilisation file has them, else from the samples themselves: the same figures either way.
    Devices are priced from the billing store of the same month, else ``fleet``, else ``price_per_gpu_hour``.
    A month with billing but no utilisation (the default when the store has no utilisation at all) gives
    billed GPU spend and GPU-hours per group
    (:func:`~finops_cli.report.waste.billed_gpu_report`, ``basis="billing"``): idle needs a trace.
    """
    from finops_cli.store import engine

    with engine.system_allocator():  # the per-resource work on the month's bill: see engine.system_allocator
        return _waste_reports(store=store, by=by, fleet=fleet, price_per_gpu_hour=price_per_gpu_hour, month=month)


def _waste_reports(
    *,
    store: str | Path | Store | None,
    by: Sequence[str],
    fleet: str | Path | None,
    price_per_gpu_hour: float | None,
    month: str | None,
) -> dict[str, WasteReport]:
    from finops_cli.errors import InputError
    from finops_cli.estate.load import load_fleet
    from finops_cli.report.waste import (
        GROUP_BYS,
        GroupBy,
        UtilHistogram,
        billed_gpu_report,
        resource_rates_table,
        usage_from_groups,
        waste_reports_by,
    )
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

    groupings: list[GroupBy] = []
    for group in by:
        if group not in GROUP_BYS:
            raise InputError(f"--by must be one of {', '.join(GROUP_BYS)}; got {group!r}")
        groupings.append(group)
    if month is not None and not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", month):
        raise InputError(f"--month {month!r}: expected YYYY-MM such as 2026-10")
    st = _store(store)
    util_months = st.partition_values("utilization", "month") if st.has("utilization") else []
    bill_months = st.partition_values("billing", "billing_period") if st.has("billing") else []
    if not util_months and not bill_months:
        raise InputError(
            "no utilisation and no billing in the store; run 'finops ingest billing' and 'finops ingest utilization'"
        )
    reason = "--month"
    if month is None:
        from finops_cli.estate.horizon import default_month

        picked = default_month(st)  # the one default-month rule
        month, reason = picked.month, picked.reason
    if month not in util_months and month not in bill_months:
        have = ", ".join(f"{kind} {', '.join(ms)}" for kind, ms in (("utilisation", util_months),
                                                                  ("billing", bill_months)) if ms)  # fmt: skip
        raise InputError(f"--month {month}: no utilisation or billing for it (have {have})")
    fl = load_fleet(fleet) if fleet is not None else None
    costs = (
        engine.run_arrow(
            st,
            RESOURCE_COSTS,
            {"month": month},
            categories=RESOURCE_COSTS_ATTRIBUTES,
            split_by="provider",  # one provider's lines at a time (the query groups by provider)
            match_columns=engine.match_columns(fl, RESOURCE_COSTS_GROUPED),
        )
        if month in bill_months
        else None
    )
    if costs is not None and costs.num_rows:
        import pyarrow.compute as pc

        gpu = costs.filter(pc.greater(pc.fill_null(costs["gpu_hours"], 0.0), 0.0))  # only GPU resources are priced
        currencies = sorted(v for v in gpu["BillingCurrency"].unique().to_pylist() if v is not None)
        if len(currencies) > 1:
            raise InputError(f"billing for {month} mixes currencies ({', '.join(currencies)}); waste needs one")
    reports: dict[str, WasteReport] = {}
    if month not in util_months:
        billing = costs.to_pandas() if costs is not None else None
        for group in groupings:
            reports[group] = billed_gpu_report(billing, fleet=fl, by=group)
            reports[group].totals["month"] = month
            reports[group].month_reason = reason
        return reports
    aggregated = st.has_aggregate("utilization_devices") and st.has_aggregate("utilization_histogram")
    usage_query, histogram_query = (WASTE_DEVICE_USAGE, WASTE_HISTOGRAM)
    if aggregated:
        usage_query, histogram_query = (WASTE_DEVICE_USAGE_AGGREGATE, WASTE_HISTOGRAM_AGGREGATE)
        st.checked_files("utilization")  # footers only: a damaged sample file is named, as on the samples' path
    groups = engine.run_pandas(st, usage_query, {"month": month})
    if groups is None or groups.empty:
        raise InputError(f"no utilisation samples for {month}")
    usage, span_hours = usage_from_groups(groups)
    bins = engine.run_pandas(st, histogram_query, {"month": month})
    hist = UtilHistogram.from_bins(bins) if bins is not None else None
    reports = waste_reports_by(
        usage,
        groupings,
        rates=resource_rates_table(costs, fl),  # per resource in Arrow: only the traced ones reach pandas
        fleet=fl,
        price_per_gpu_hour=price_per_gpu_hour,
        histogram=hist,
        span_hours=span_hours,
    )
    for report in reports.values():
        report.totals["month"] = month
        report.month_reason = reason
    return reports


def estate_draft(
    *,
    store: str | Path | Store | None = None,
    out: str | Path,
    month: str | None = None,
    currency: str | None = None,
    force: bool = False,
) -> tuple[Any, tuple[Path, Path]]:
    """``finops estate draft``: write a draft fleet.yaml and workloads.yaml from the store into ``out``.

    Returns the :class:`~finops_cli.estate.draft.Draft` and the two paths written.
    """
    from finops_cli.errors import InputError
    from finops_cli.estate.draft import draft_estate, write_draft

    if month is not None and not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", month):
        raise InputError(f"--month {month!r}: expected YYYY-MM such as 2026-10")
    draft = draft_estate(_store(store), month=month, currency=currency)
    return draft, write_draft(draft, Path(out), force=force)


def _name_values(items: list[str] | None, flag: str) -> dict[str, list[str]]:
    """``["team=research,data", "region=us-east-1"]`` → ``{team: [research, data], region: [us-east-1]}``."""
    from finops_cli.errors import InputError

    out: dict[str, list[str]] = {}
    for item in items or []:
        name, sep, values = item.partition("=")
        if not sep or not name.strip() or not values.strip():
            raise InputError(f"{flag} {item!r}: expected NAME=VALUE[,VALUE...] such as team=research")
        out.setdefault(name.strip(), []).extend(v.strip() for v in values.split(",") if v.strip())
    return out


_COMPARE_COLUMNS = [("previous", "money"), ("cost", "money"), ("delta", "delta"), ("delta_pct", "delta_pct")]
_CHARGEBACK_COLUMNS = [
    ("direct", "money"),
    ("usage", "money"),
    ("own_idle", "money"),
    ("idle_share", "money"),
    ("shared_share", "money"),
    ("total", "money"),
]
_GROUP_COLUMNS = [("cost", "money"), ("gpu_hours", "number"), ("per_gpu_hour", "price"), ("lines", "number")]


#: ``finops costs --by`` takes at most this many dimensions: the 9 built-in ones and a generous number of tags.
#: The query grows super-linearly with them (sample store: 32 dims 2.9 s, 300 dims 4.2 s, 1,000 dims 12.5 s).
MAX_COST_DIMENSIONS = 32


def costs(
    *,
    store: str | Path | Store | None = None,
    by: list[str] | None = None,
    where: list[str] | None = None,
    month: str | None = None,
    compare: str | None = None,
    cost: str = "effective",
    fleet: str | Path | None = None,
    all_lines: bool = False,
    chargeback: str | None = None,
    team_tag: str = "team",
) -> Any:
    """``finops costs``: spend grouped by any dimension or tag, month over month, or charged back to teams.

    ``by``: dimensions (month, provider, account, region, instance_type, pricing_category, resource, service,
    substrate) or tag keys (team, workload, …). ``where``: ``NAME=VALUE[,VALUE]`` filters on the same names.
    ``month``/``compare``: ``YYYY-MM``. ``cost``: billed (BilledCost) or effective (EffectiveCost, amortised).
    ``chargeback``: None, ``proportional`` or ``even`` (see :mod:`finops_cli.report.costs`). Returns a
    :class:`~finops_cli.report.costs.CostsResult`; totals are per currency, over GPU lines unless ``all_lines``.
    """
    from finops_cli.core.baseline import match_billing
    from finops_cli.errors import InputError
    from finops_cli.estate.load import load_fleet
    from finops_cli.report.costs import (
        CHARGEBACK_RULES,
        COST_BASES,
        CostsResult,
        compare_costs,
        group_costs,
        partial_month_notes,
    )
    from finops_cli.report.costs import chargeback as charge
    from finops_cli.store.cost_query import NONE, actual_cost_notes, cost_groups, month_coverage, usage_groups

    for flag, value in (("--month", month), ("--compare", compare)):
        if value is not None and not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", value):
            raise InputError(f"{flag} {value!r}: expected YYYY-MM such as 2026-10")
    if cost not in COST_BASES:
        raise InputError(f"--cost {cost!r}: expected billed or effective")
    if chargeback is not None and chargeback not in CHARGEBACK_RULES:
        raise InputError(f"--chargeback {chargeback!r}: expected proportional or even")
    if chargeback is not None and compare is not None:
        raise InputError("--chargeback and --compare answer different questions; give one")
    by = [b.strip() for b in (by or []) if b.strip()]
    if chargeback is not None:
        if by:
            raise InputError("--chargeback groups by team (--team-tag); drop --by")
        by = [team_tag]
    if len(by) > MAX_COST_DIMENSIONS:
        raise InputError(
            f"--by names {len(by):,} dimensions; at most {MAX_COST_DIMENSIONS} (each one is a column and a "
            "grouping key: the query grows faster than the list)"
        )
    twice = next((b for i, b in enumerate(by) if b in by[:i]), None)
    if twice is not None:  # name the one repeated, not the whole (possibly huge) argument
        from finops_cli.text import one_line

        raise InputError(f"--by: {one_line(twice, 60)!r} is named twice")
    filters = _name_values(where, "--where")
    st = _store(store)
    periods = st.partition_values("billing", "billing_period") if st.has("billing") else []
    if not periods:
        raise InputError("no billing in the store; run 'finops ingest billing' first")
    month_reason = None
    if (compare or chargeback) and month is None:
        from finops_cli.estate.horizon import default_month

        picked = default_month(st)  # the one default-month rule (plan, stack, waste, estate draft use it too)
        month, month_reason = picked.month, picked.reason
        if compare == month:
            raise InputError(
                f"--compare {compare} is the month itself (month: {month}: {month_reason}); "
                "give --month for the other month"
            )
    for flag, value in (("--month", month), ("--compare", compare)):
        if value is not None and value not in periods:
            raise InputError(f"{flag} {value}: no billing for it in the store (have {', '.join(periods)})")
    months = [m for m in (month, compare) if m is not None]
    need_substrate = "substrate" in by or "substrate" in filters
    match_cols: list[str] = []
    fl = None
    if need_substrate:
        if fleet is None:
            raise InputError("substrate needs --fleet (the substrates and their match rules)")
        fl = load_fleet(fleet)
        extra = sorted({c for s in fl.substrates for c in (s.match or {})})
        match_cols = list(dict.fromkeys(["provider", "RegionId", "x_InstanceType", "PricingCategory", *extra]))
    group_cols = [c for c in by if c != "substrate"]
    if compare is not None and "month" not in group_cols:
        group_cols.append("month")
    sql_cols = list(dict.fromkeys([*group_cols, *match_cols]))
    sql_where = {k: v for k, v in filters.items() if k != "substrate"}
    frame = cost_groups(st, sql_cols, where=sql_where, months=months or None, gpu_only=not all_lines)
    assert frame is not None
    if need_substrate:
        assert fl is not None
        matched = match_billing(frame.replace({NONE: None}), fl)
        frame["substrate"] = matched.fillna("(unmatched)").astype(str)
        if "substrate" in filters:
            frame = frame[frame["substrate"].isin(filters["substrate"])]
    basis = cost
    notes: list[str] = []
    actual_only = actual_cost_notes(st, months or periods) if basis == "effective" else []
    if all_lines and chargeback is None:
        notes.append("all lines: cost is every line's; per_gpu_hour is the GPU lines' cost ÷ their GPU-hours")
    if frame.empty:
        notes.append("no billing line matches" + ("" if all_lines else " (GPU lines only; --all-lines for every line)"))
    if compare is not None:
        assert month is not None
        rows, totals = compare_costs(frame, [b for b in by if b != "month"], basis, month, compare)
        cols = [(b, "text") for b in by if b != "month"]
        columns = [*cols, ("currency", "text"), *_COMPARE_COLUMNS]
        coverage = month_coverage(st, [month, compare], gpu_only=not all_lines)
        partial = partial_month_notes(coverage, [month, compare], "lines" if all_lines else "GPU lines")
        return CostsResult(
            "compare", columns, rows, totals, basis, [month, compare], notes + partial + actual_only, month_reason,
            partial + actual_only, all_lines,
        )  # fmt: skip
    if chargeback is not None:
        usage = usage_groups(st, team_tag, months)
        rows, totals, more = charge(frame, usage, basis, chargeback, team_tag)
        columns = [(team_tag, "text"), ("currency", "text"), *_CHARGEBACK_COLUMNS]
        return CostsResult(
            "chargeback", columns, rows, totals, basis, months, notes + more + actual_only, month_reason, actual_only
        )
    rows, totals = group_costs(frame, by, basis)
    columns = [*[(b, "text") for b in by], ("currency", "text"), *_GROUP_COLUMNS]
    return CostsResult(
        "groups", columns, rows, totals, basis, months or periods, notes + actual_only, None, actual_only, all_lines
    )


# --- estate: validate, stack, netc ----------------------------------------------------------------


def pricebook_refresh(
    *,
    providers: list[str] | None = None,
    regions: dict[str, list[str]] | None = None,
    instance_types: list[str] | None = None,
    pricebook: str | Path | None = None,
    aws_profile: str | None = None,
    **seams: Any,
) -> Any:
    """``finops pricebook refresh``: list prices from the providers' price APIs into the user pricebook.

    ``providers``: some of aws, gcp, azure (default all three). ``regions``: per provider (default: the regions
    the pricebook already prices). ``instance_types``: beyond the pricebook's instance table. ``pricebook``: the
    directory (default ``$FINOPS_PRICEBOOK`` or ``~/.config/finops``). ``seams`` (tests): ``aws_client``,
    ``gcp_transport``, ``azure_url``, ``now``. Returns a :class:`~finops_cli.catalog.refresh.RefreshResult`;
    nothing is written unless every provider answered.
    """
    from finops_cli.catalog.pricebook import use_pricebook, user_pricebook_dir
    from finops_cli.catalog.refresh import PROVIDERS, refresh_pricebook

    if pricebook is not None:
        use_pricebook(pricebook)
    return refresh_pricebook(
        providers=providers or list(PROVIDERS),
        regions=regions,
        extra_types=instance_types or [],
        directory=user_pricebook_dir(),
        aws_profile=aws_profile,
        **seams,
    )


def pricebook_table(*, pricebook: str | Path | None = None, provider: str | None = None) -> pd.DataFrame:
    """``finops pricebook show``: the reference prices every command uses, shipped overlaid by the user's, with
    each row's ``origin`` (``shipped`` or the user file), ``source`` and ``read_on``/``fetched_at``."""
    from finops_cli.catalog.pricebook import use_pricebook
    from finops_cli.catalog.prices import reference_prices

    if pricebook is not None:
        use_pricebook(pricebook)
    table = reference_prices()
    if provider:
        table = table[table["provider"] == provider]
    return table.reset_index(drop=True)


def validate(fleet: str | Path, workloads: str | Path | None = None, *, strict: bool = False) -> list[str]:
    """Load and check ``fleet.yaml`` (and ``workloads.yaml``); return warnings, raise on errors.

    Errors: :class:`~finops_cli.errors.InputError` (exit 2) naming file and field path;
    a workload with no compliant destination raises :class:`~finops_cli.core.compliance.NoCompliantDestination`.
    """
    from finops_cli.estate.checks import check_estate, check_price_refs, check_reserved_capacity, check_spot_rates
    from finops_cli.estate.load import Estate, load_estate, load_fleet
    from finops_cli.schema.estate import Workloads

    if workloads is not None:
        return check_estate(load_estate(fleet, workloads), strict)
    placeholder = Workloads.model_validate(
        {"version": 1, "workloads": [{"id": "-", "unit": "-", "demand": {"total": 0}}]}
    )
    est = Estate(load_fleet(fleet), placeholder, Path(fleet).parent, fleet_path=Path(fleet))
    return [w for check in (check_price_refs, check_spot_rates, check_reserved_capacity) for w in check(est, strict)]


@dataclass
class StackResult:
    """``finops stack``: one merit order per workload (or a generic GPU-hour one), with price provenance."""

    stacks: list[Stack]
    currency: str
    prices: list[PriceSource]
    horizon: DemandHorizon | None
    warnings: list[str] = dataclass_field(default_factory=list)
    horizon_note: str = ""  # the horizon and why (the default-month rule), for stderr
    #: what each from_store demand measured (busy vs allocated GPU-hours) and how it filled the horizon
    demand_sources: list[ObservedDemand] = dataclass_field(default_factory=list)

    def as_json(self) -> object:
        """One object for a single stack (the issue's shape), else a list of them."""
        from finops_cli.estate.prices import reference_price_notes

        notes = reference_price_notes(self.prices)
        used = [p.as_dict() for p in self.prices]
        by_workload = {d.workload: d.as_dict() for d in self.demand_sources}
        docs = [
            s.as_dict()
            | {"currency": self.currency, "price_notes": notes, "prices": used}
            | ({"demand_source": by_workload[s.workload]} if s.workload in by_workload else {})
            for s in self.stacks
        ]
        return docs[0] if len(docs) == 1 else docs


@dataclass
class _Priced:
    """A fleet priced for one horizon: what ``stack``, ``netc``, ``plan`` and ``simulate dispatch`` share."""

    fleet: Fleet
    sources: list[PriceSource]
    choice: HorizonChoice
    store: Store | None
    as_of: datetime

    @property
    def horizon(self) -> DemandHorizon:
        return self.choice.horizon


def priced_fleet(
    fleet: Fleet,
    store: str | Path | Store | None = None,
    *,
    horizon: str | DemandHorizon | None = None,
    estate: Estate | None = None,
    fx: dict[str, float] | None = None,
    demand_from_store: bool = True,
    default_store: bool = True,
    as_of: datetime | None = None,
) -> _Priced:
    """The one price resolution every command runs: the horizon (given, else the default-month rule of
    :func:`finops_cli.estate.horizon.choose_horizon`), then every substrate's price for that horizon
    (:func:`finops_cli.estate.prices.resolve_fleet`: the feed window rule, products, ``fx``).

    ``store`` None means the default store when it exists (or is needed), unless ``default_store`` is
    False (``plan(store=None)`` plans without a store). ``as_of`` (default now, UTC) is the instant every
    price age and "the current month" is counted from: a plan records it, so it never depends on the clock."""
    from finops_cli.estate.horizon import choose_horizon
    from finops_cli.estate.prices import needs_store, resolve_fleet

    needs = needs_store(fleet) or (
        demand_from_store
        and estate is not None
        and any(w.demand.from_store is not None for w in estate.workloads.workloads)
    )
    st: Store | None
    if store is not None and not isinstance(store, str | Path):
        st = store
    elif store is None and not default_store:
        st = None
    else:
        st = _existing_store(store, needs)
    instant = as_of_instant(as_of)
    choice = choose_horizon(horizon, estate, st, instant)
    resolved, sources = resolve_fleet(fleet, st, horizon_end=choice.horizon.end, fx=fx, as_of=instant.date())
    return _Priced(resolved, sources, choice, st, instant)


def check_max_price_age(days: float | None) -> None:
    """``--max-price-age``: a number of days >= 0 (exit 2 otherwise)."""
    from finops_cli.errors import InputError

    if days is not None and not (math.isfinite(days) and days >= 0):
        raise InputError(f"--max-price-age {days}: expected a number of days >= 0")


def as_of_instant(as_of: datetime | None) -> datetime:
    """``as_of`` as an aware UTC instant to the second; None is now."""
    instant = datetime.now(UTC) if as_of is None else as_of
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    return instant.astimezone(UTC).replace(microsecond=0)


def _existing_store(store: str | Path | None, needed: bool) -> Store | None:
    """The store at ``store``; else the default one when it exists (or is needed: errors then name it)."""
    from finops_cli.store import store_exists

    if store is not None or needed or store_exists(None):
        return _store(store)
    return None


def _priced_demand(
    est: Estate,
    store: str | Path | Store | None,
    horizon: str | DemandHorizon | None,
    fx: dict[str, float] | None,
    as_of: datetime | None = None,
) -> tuple[_Priced, list[str], pd.DataFrame, list[ObservedDemand]]:
    """Where ``stack`` and ``netc`` start: the priced fleet and horizon, warnings (month mismatch, profile
    coverage), the hourly demand and what each ``from_store`` demand measured."""
    from finops_cli.estate.checks import check_profile_coverage
    from finops_cli.estate.demand_io import estate_demand_sources

    p = priced_fleet(est.fleet, store, horizon=horizon, estate=est, fx=fx, as_of=as_of)
    warnings = [*p.choice.warnings, *check_profile_coverage(est, p.horizon)]
    demand, observed = estate_demand_sources(est, p.horizon, p.store)
    return p, warnings, demand, observed


def stack(
    fleet: str | Path,
    workloads: str | Path | None = None,
    *,
    workload: str | None = None,
    mode: str = "cost",
    store: str | Path | Store | None = None,
    horizon: str | DemandHorizon | None = None,
    fx: dict[str, float] | None = None,
    as_of: datetime | None = None,
    max_price_age: float | None = None,
) -> StackResult:
    """The merit order (docs/economics.md §5) of each workload, or of ``workload`` only, cleared against its demand.

    Demand per workload is its mean hourly units when deferrable, else its peak hour, over ``horizon``
    (default: the default-month rule, :func:`finops_cli.estate.horizon.choose_horizon`). Without
    ``workloads`` the fleet is shown in GPU-hours. A ``price_feed`` needs the spot-price store (``store``
    or the default one). ``fx``: exchange rates (``{"USD:CAD": 1.37}``) over the fleet's ``fx:``. Stale and thin
    prices (``max_price_age`` days, :func:`finops_cli.core.price_checks.price_warnings`) are in the warnings.
    """
    from finops_cli.core.price_checks import price_warnings
    from finops_cli.core.stack import build_stack
    from finops_cli.errors import InputError
    from finops_cli.estate.load import load_estate, load_fleet

    check_max_price_age(max_price_age)

    if workloads is None:
        if workload is not None:
            raise InputError("--workload needs --workloads")
        fl = load_fleet(fleet)
        p = priced_fleet(fl, store, horizon=horizon, fx=fx, as_of=as_of)
        return StackResult(
            [build_stack(None, p.fleet, mode)],  # type: ignore[arg-type]
            fl.currency,
            p.sources,
            p.horizon,
            [*p.choice.warnings, *price_warnings(p.sources, max_price_age)],
            p.choice.line,
        )
    est = load_estate(fleet, workloads)
    chosen = est.workloads.workloads
    if workload is not None:
        chosen = [w for w in chosen if w.id == workload]
        if not chosen:
            known = ", ".join(w.id for w in est.workloads.workloads)
            raise InputError(f"--workload {workload!r} is not in {workloads} (known: {known})")
    p, warnings, demand, observed = _priced_demand(est, store, horizon, fx, as_of)
    warnings = (
        warnings + [r.note() for r in est.rates if r.estimate.too_small] + price_warnings(p.sources, max_price_age)
    )
    stacks = []
    for w in chosen:
        col = demand[w.id]
        units, basis = (float(col.mean()), "mean_hourly") if w.deferrable else (float(col.max()), "peak_hourly")
        stacks.append(build_stack(w, p.fleet, mode, units, basis))  # type: ignore[arg-type]
    return StackResult(stacks, est.fleet.currency, p.sources, p.horizon, warnings, p.choice.line, observed)


@dataclass
class NetcResult:
    """``finops netc``: one row per (interruptible workload, compliant spot substrate)."""

    rows: list[NetcRow]
    currency: str
    horizon: DemandHorizon
    prices: list[PriceSource]
    trace: Trace | None = None
    warnings: list[str] = dataclass_field(default_factory=list)
    horizon_note: str = ""


def netc(
    fleet: str | Path,
    workloads: str | Path,
    *,
    trace: str | Path | None = None,
    substrate: str | None = None,
    store: str | Path | Store | None = None,
    horizon: str | DemandHorizon | None = None,
    fx: dict[str, float] | None = None,
    as_of: datetime | None = None,
) -> NetcResult:
    """NETC of every interruptible workload's demand on each compliant spot substrate (docs/economics.md §5).

    With ``trace`` (Can't Be Late JSON or preemption-timestamp CSV) λ is estimated from it and the job
    is replayed on it; ``substrate`` limits the report (and the trace) to one spot substrate.
    """
    from finops_cli.core.netc_report import netc_rows
    from finops_cli.errors import InputError
    from finops_cli.estate.load import load_estate
    from finops_cli.estate.traces import read_trace

    est = load_estate(fleet, workloads)
    if substrate is not None:
        try:
            s = est.fleet.substrate(substrate)
        except KeyError:
            raise InputError(f"--substrate {substrate!r} is not in {fleet}") from None
        if s.kind != "spot":
            raise InputError(f"--substrate {substrate}: kind {s.kind}, NETC is for spot substrates")
    elif trace is not None:
        # a trace measures ONE pool: never apply it to every spot substrate, never guess which
        spot = [s.id for s in est.fleet.substrates if s.kind == "spot"]
        if len(spot) > 1:
            raise InputError(
                f"--trace {Path(trace).name}: the fleet has {len(spot)} spot substrates ({', '.join(spot)}); "
                "give --substrate ID to say which pool the trace measures"
            )
        substrate = spot[0] if spot else None
    p, warnings, demand, observed = _priced_demand(est, store, horizon, fx, as_of)
    warnings = warnings + [r.note() for r in est.rates if r.estimate.too_small] + [o.note() for o in observed]
    totals = {w: float(demand[w].sum()) for w in demand.columns}
    tr = read_trace(trace) if trace is not None else None
    if tr is not None and tr.rate.too_small:
        warnings.append(f"trace {tr.name}: {tr.rate.describe()}")
    rows = netc_rows(est.workloads.workloads, p.fleet, totals, tr, substrate, p.horizon.hours)
    notes = {src.substrate: src.detail for src in p.sources if src.method in ("price_feed", "price_ref")}
    for row in rows:
        row.price_note = notes.get(row.substrate)
    return NetcResult(rows, est.fleet.currency, p.horizon, p.sources, tr, warnings, p.choice.line)


# --- plan -----------------------------------------------------------------------------------------


@dataclass
class PlanResult:
    """``finops plan``'s answer: the JSON document plus the solved model's frames for rich rendering."""

    document: PlanDocument
    output: PlannerOutput
    horizon: DemandHorizon
    price_notes: list[str]
    horizon_note: str = ""
    warnings: list[str] = dataclass_field(default_factory=list)


#: Suffixes ``finops plan --schedule`` writes.
SCHEDULE_FORMATS = (".parquet", ".csv")


def schedule_frame(result: PlanResult) -> pd.DataFrame:
    """The certified hourly schedule: GPUs per hour per (workload, substrate), with the hour's UTC start.

    Columns: ``time``, ``hour`` (from the horizon start), ``workload``, ``substrate``, ``kind``, ``gpus`` (useful
    GPUs in use; 0 on an API), ``wall_gpus`` (GPUs of the pool held, spot re-work included), ``units``, ``cost``
    and ``penalty`` for that hour. Feasible in every hour; its objective is the certificate's upper bound.
    """
    import pandas as pd

    cert = result.output.certificate
    if cert is None:
        raise ValueError("this plan was made without certification: it has no hourly schedule")
    sched = cert.schedule.copy()
    start = pd.Timestamp(result.horizon.start)
    start = start.tz_localize("UTC") if start.tzinfo is None else start.tz_convert("UTC")
    sched.insert(0, "time", start + pd.to_timedelta(sched["hour"], unit="h"))
    return sched


def check_schedule_path(path: str | Path) -> Path:
    """``--schedule`` must end in .parquet or .csv and be writable (checked before any work)."""
    from finops_cli.atomic import check_writable
    from finops_cli.errors import InputError

    target = Path(path)
    if target.suffix.lower() not in SCHEDULE_FORMATS:
        raise InputError(f"--schedule {target.name}: expected a .parquet or .csv file name", path=target)
    return check_writable(target)


def write_schedule(result: PlanResult, path: str | Path) -> Path:
    """Write :func:`schedule_frame` to ``path`` (Parquet or CSV by suffix), atomically."""
    from finops_cli.atomic import atomic_path

    target = check_schedule_path(path)
    sched = schedule_frame(result)
    with atomic_path(target) as tmp:
        if target.suffix.lower() == ".csv":
            sched.to_csv(tmp, index=False)
        else:
            sched.to_parquet(tmp, index=False)
    return target


def _horizon_months(hz: DemandHorizon) -> list[str]:
    """The billing periods (``YYYY-MM``) a horizon touches."""
    import pandas as pd

    last = hz.end - timedelta(microseconds=1)
    return [f"{m:%Y-%m}" for m in pd.period_range(f"{hz.start:%Y-%m}", f"{last:%Y-%m}", freq="M")]


def default_horizon(estate: Estate | None, store: Store | None = None) -> DemandHorizon:
    """The default-month rule (:func:`finops_cli.estate.horizon.choose_horizon`): the latest month with
    GPU usage in the store; else the first month a timestamped demand profile covers; else this month."""
    from finops_cli.estate.horizon import choose_horizon

    return choose_horizon(None, estate, store).horizon


def plan(
    estate: Estate,
    store: Store | None = None,
    *,
    horizon: str | DemandHorizon | None = None,
    blocks: int | None = None,
    mode: str = "cost",
    solver: str = "auto",
    time_limit: float | None = None,
    gap: float | None = None,
    allow_unserved: bool = False,
    demand: pd.DataFrame | None = None,
    integer_nodes: bool = False,
    fx: dict[str, float] | None = None,
    tolerance: float | None = None,
    as_of: datetime | None = None,
    max_price_age: float | None = None,
) -> PlanResult:
    """Plan ``estate``'s demand on its fleet: the cheapest compliant mix, with savings against the bill.

    Parameters
    ----------
    estate
        From :func:`estate`; prices given as ``price_feed``/``price_ref`` are resolved here (a feed needs
        ``store``).
    store
        Billing (the baseline), spot prices, ``from_store`` demand; None plans without them.
    horizon
        ``YYYY-MM`` or ``START:HOURS`` (default: :func:`default_horizon`).
    blocks
        Load-duration blocks (default :data:`finops_cli.planner.DEFAULT_BLOCKS`, fewer for models above
        :data:`finops_cli.planner.frame.COLUMN_BUDGET` variables; ``>= hours`` = hourly).
    demand
        Units per hour (one column per workload) to plan instead of the workloads' own ``demand``.
    integer_nodes
        Provision on-demand and spot substrates with ``gpus_per_node`` in whole nodes (``--integer-nodes``).
    fx
        Exchange rates (``{"USD:CAD": 1.37}``) over the fleet's ``fx:``; recorded in the document.
    tolerance
        Certified gap to reach by refining the blocks (default 0.001 = 0.1 %); ``time_limit`` bounds the whole
        plan, refinement included. The hourly schedule is ``result.output.certificate.schedule``
        (:func:`write_schedule`).
    as_of
        The instant price ages and "the current month" are counted from (default now); recorded in the
        document, so the same inputs and ``as_of`` give the same plan on any date.
    max_price_age
        Days above which a price is stale (default :data:`finops_cli.core.price_checks.DEFAULT_MAX_PRICE_AGE_DAYS`);
        stale and thin prices are in ``result.warnings`` (:func:`finops_cli.core.price_checks.price_warnings`).

    Raises
    ------
    InfeasibleError
        No compliant destination for a workload, or demand above compliant capacity (exit 3).
    """
    from finops_cli.core.baseline import billed_baseline
    from finops_cli.core.price_checks import price_warnings
    from finops_cli.errors import InputError
    from finops_cli.estate.demand_io import estate_demand_sources
    from finops_cli.estate.prices import fx_used, reference_price_notes
    from finops_cli.planner import DEFAULT_TOLERANCE, plan_demand
    from finops_cli.planner.document import plan_document
    from finops_cli.planner.solve import DEFAULT_GAP, NODES_GAP
    from finops_cli.schema.plan import DemandSource, PriceUsed
    from finops_cli.store import engine
    from finops_cli.store.cost_query import actual_cost_notes

    if mode not in ("cost", "reliability"):
        raise InputError(f"--mode {mode!r}: expected cost or reliability")
    if solver not in ("auto", "cbc", "highs"):
        raise InputError(f"--solver {solver!r}: expected cbc or highs")
    if blocks is not None and blocks < 1:
        raise InputError(f"--blocks {blocks}: expected an integer >= 1")
    if gap is not None and not 0 <= gap < 1:
        raise InputError(f"--gap {gap}: expected a fraction in [0, 1)")
    if time_limit is not None and not (math.isfinite(time_limit) and time_limit > 0):
        raise InputError(f"--time-limit {time_limit}: expected seconds > 0")
    if tolerance is not None and not (math.isfinite(tolerance) and 0 <= tolerance < 1):
        raise InputError(f"--tolerance {tolerance}: expected a fraction in [0, 1)")
    check_max_price_age(max_price_age)
    p = priced_fleet(estate.fleet, store, horizon=horizon, estate=estate, fx=fx, default_store=False, as_of=as_of)
    hz, sources = p.horizon, p.sources
    resolved = replace(estate, fleet=p.fleet)
    observed: list[ObservedDemand] = []
    if demand is None:
        demand, observed = estate_demand_sources(resolved, hz, store)
    elif len(demand) != hz.hours:
        raise InputError(f"demand has {len(demand)} hours, the horizon {hz.hours}")
    workloads = list(resolved.workloads.workloads)
    out = plan_demand(
        resolved.fleet,
        workloads,
        demand,
        n_blocks=blocks,
        mode=mode,  # type: ignore[arg-type]
        solver=solver,  # type: ignore[arg-type]
        time_limit=time_limit,
        gap=(NODES_GAP if integer_nodes else DEFAULT_GAP) if gap is None else gap,
        allow_unserved=allow_unserved,
        integer_nodes=integer_nodes,
        tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance,
    )
    billed = None
    actual_only: list[str] = []
    if store is not None and store.has("billing"):
        groups = engine.baseline_groups(store, resolved.fleet, hz.start, hz.end)
        if groups is not None:
            billed = billed_baseline(groups, resolved.fleet)
            actual_only = actual_cost_notes(store, _horizon_months(hz))
    document = plan_document(out, resolved.fleet, start=hz.start, mode=mode, billed=billed)
    if document.totals.baseline_cost is not None:
        document.savings_by_lever = _savings_by_lever(
            out, resolved, workloads, demand, document, billed, store, hz, mode, solver
        )
    document.as_of = p.as_of
    document.notes.extend(actual_only)  # the billed baseline's effective cost leaves a commitment out
    document.notes.extend(r.note() for r in estate.rates)
    document.demand_sources.extend(DemandSource.model_validate(o.as_dict()) for o in observed)
    document.prices = [PriceUsed.model_validate(src.as_dict()) for src in sources]
    document.notes.extend(src.note() for src in sources)
    document.fx = fx_used(sources)
    warnings = [*p.choice.warnings, *price_warnings(sources, max_price_age), *actual_only]
    return PlanResult(document, out, hz, reference_price_notes(sources), p.choice.line, warnings)


def _measured_utilization(store: Store | None, estate: Estate, month: str) -> dict[str, float]:
    """Busy ÷ device-hours per fleet substrate from the store's utilisation of ``month`` (empty without it)."""
    if store is None or not store.has("utilization") or month not in store.partition_values("utilization", "month"):
        return {}
    fleet_path = estate.fleet_path
    report = waste_reports(store=store, by=("substrate",), fleet=fleet_path, month=month)["substrate"]
    ids = {s.id for s in estate.fleet.substrates}
    return {
        str(g["key"]): float(g["busy_hours"]) / float(g["device_hours"])
        for g in report.groups
        if str(g.get("key")) in ids and g.get("device_hours") and g.get("busy_hours") is not None
    }


def _savings_by_lever(
    out: Any,
    estate: Estate,
    workloads: list[Any],
    demand: pd.DataFrame,
    document: PlanDocument,
    billed: Any,
    store: Store | None,
    hz: DemandHorizon,
    mode: str,
    solver: str,
) -> Any:
    """The plan's saving attributed to the levers that earned it (:mod:`finops_cli.planner.levers`)."""
    from finops_cli.planner.document import lever_document
    from finops_cli.planner.levers import attribute_savings, billing_use, dispatch_use

    baseline = document.totals.baseline_cost
    assert baseline is not None
    if document.totals.baseline_source == "billing":
        allocs = out.solution.allocations
        plan_hours = float(allocs.loc[allocs["kind"] != "api", "gpu_hours"].sum()) if len(allocs) else 0.0
        measured = _measured_utilization(store, estate, f"{hz.start:%Y-%m}")
        use = billing_use(billed.cost_by_substrate, billed.gpu_hours_by_substrate, estate.fleet, plan_hours, measured)
    else:
        merit = out.merit_order
        use = dispatch_use(merit.cost_by_substrate, merit.gpu_hours_by_substrate)
    attribution = attribute_savings(
        out,
        estate.fleet,
        workloads,
        demand,
        use,
        baseline,
        mode="reliability" if mode == "reliability" else "cost",
        solver=solver,
    )
    return lever_document(attribution, document.totals.savings, document.totals.baseline_source or "billing")


# --- report, gate ---------------------------------------------------------------------------------


if TYPE_CHECKING:  # report/gate types for annotations only; the imports stay local to the functions
    from finops_cli.report.gate import GateResult, Thresholds
    from finops_cli.report.markdown import ReportInputs, ReportResult
    from finops_cli.schema.plan import PlanDocument


def gate(
    plan: PlanDocument | dict | str | Path,
    baseline: PlanDocument | dict | str | Path | None = None,
    thresholds: Thresholds | None = None,
) -> GateResult:
    """Check a new plan against a baseline plan and thresholds (``finops gate``).

    ``plan``/``baseline``: a :class:`~finops_cli.schema.plan.PlanDocument`, a decoded dict or a path.
    ``thresholds``: :class:`~finops_cli.report.gate.Thresholds`. Returns a
    :class:`~finops_cli.report.gate.GateResult`; raises :class:`~finops_cli.errors.InputError` on
    unreadable, invalid or mismatched plans (different currency, horizon or schema version).
    """
    from finops_cli.report.gate import evaluate, plan_or_path

    new = plan_or_path(plan)
    base = plan_or_path(baseline) if baseline is not None else None
    return evaluate(new, base, thresholds)


def report(
    plan: PlanDocument | dict | str | Path,
    store: str | Path | Store | None = None,
    fleet: str | Path | None = None,
    out_path: str | Path | None = None,
    title: str | None = None,
    workloads: str | Path | None = None,
) -> ReportResult:
    """Write the leadership report (``finops report``): markdown at ``out_path`` plus PNG charts beside it.

    Plan numbers come from ``plan`` (a document, a dict or ``plan.json``); idle waste and price-feed age
    from ``store`` (default: ``$FINOPS_STORE`` or ``.finops/``) for the plan's month; the supply curve
    needs ``fleet`` and ``workloads``. Missing inputs make their section say "not available" (listed in
    ``ReportResult.unavailable``). ``out_path=None``: nothing is written, no charts; the markdown is returned.
    Files are written atomically (charts first, the report last).
    """
    from finops_cli.core.demand import Horizon
    from finops_cli.errors import InputError
    from finops_cli.report.gate import plan_or_path
    from finops_cli.report.markdown import ReportInputs, check_report_path, horizon_bounds

    doc = plan_or_path(plan)
    # A file the user names must be valid: a broken --fleet/--workloads is an error, not a missing section.
    if fleet is not None:
        from finops_cli.estate.load import load_fleet

        fleet_currency = load_fleet(fleet).currency
        if fleet_currency != doc.currency:
            raise InputError(
                f"the plan is in {doc.currency} but {fleet} is in {fleet_currency}; amounts in different currencies"
                " are never mixed (plan with this fleet, or report with the fleet the plan used)",
                path=plan if isinstance(plan, str | Path) else None,
                where="currency",
            )
    if workloads is not None:
        from finops_cli.estate.load import load_workloads

        load_workloads(workloads)
    inputs = ReportInputs(plan=doc, title=title)
    out = Path(out_path) if out_path is not None else None
    if out is not None:
        check_report_path(out)
    st = _store(store)
    result = _report_inputs_and_write(inputs, st, fleet, workloads, out)
    start, _ = horizon_bounds(doc)
    if start is not None:
        from finops_cli.estate.horizon import latest_billed_gpu_month, latest_utilization_month, month_warnings

        hz = Horizon(start, doc.horizon.hours)
        result.horizon_note = f"horizon: {start:%Y-%m-%d} + {doc.horizon.hours} h: the plan's"
        billed = latest_billed_gpu_month(st) if st.has("billing") else None
        result.warnings = month_warnings(hz, billed, latest_utilization_month(st))
    return result


def _report_inputs_and_write(
    inputs: ReportInputs,
    st: Store,
    fleet: str | Path | None,
    workloads: str | Path | None,
    out: Path | None,
) -> ReportResult:
    """:func:`report`'s inputs from the store and the estate, then the report written (charts drawn here)."""
    from finops_cli.core.demand import Horizon
    from finops_cli.errors import FinopsError
    from finops_cli.report.markdown import (
        PriceFeedInfo,
        SupplyInputs,
        WasteInputs,
        horizon_bounds,
        write_report,
    )

    doc = inputs.plan
    start, _ = horizon_bounds(doc)
    month = None if start is None else f"{start:%Y-%m}"
    if month is not None:
        from finops_cli.store.cost_query import actual_cost_notes

        inputs.notes.extend(f"{n[0].upper()}{n[1:]}." for n in actual_cost_notes(st, [month]))

    supply_notes: list[str] = []  # after idle waste's note in the report, as they always were
    if fleet is not None and workloads is not None:
        by_cost: dict[str, float] = {}
        for a in doc.allocations:
            by_cost[a.workload] = by_cost.get(a.workload, 0.0) + a.cost
        if by_cost:
            biggest = max(by_cost, key=lambda w: by_cost[w])
            try:
                curve = stack(
                    fleet,
                    workloads,
                    workload=biggest,
                    mode=getattr(doc, "mode", "cost"),
                    store=st,
                    horizon=Horizon(start, doc.horizon.hours) if start is not None else month,
                    fx=doc.fx or None,
                )
                used = {p.substrate: p.value for p in doc.prices}
                now = {p.substrate: p.value for p in curve.prices}
                moved = [k for k, v in used.items() if k in now and v is not None and abs((now[k] or 0) - v) > 1e-6]
                if moved:
                    supply_notes.append(
                        "The supply curve prices " + ", ".join(moved) + " differently from the plan (the store or "
                        "fleet changed since the plan was made)."
                    )
                chosen = curve.stacks[0]
                inputs.supply = SupplyInputs(
                    chosen.as_dict(), curve.currency, biggest, chosen.unit, chosen.clearing_price, chosen.demand_units
                )
            except FinopsError as exc:
                inputs.supply_note = str(exc)
        else:
            inputs.supply_note = "the plan allocates nothing"
    elif fleet is not None:
        inputs.supply_note = "needs --workloads as well as --fleet"
    if st.has("utilization"):
        months = st.partition_values("utilization", "month")
        use = month if month in months else months[-1]
        try:
            reports = waste_reports(store=st, by=("team", "substrate"), fleet=fleet, month=use)
            by = {g: r.to_dict() for g, r in reports.items()}
            inputs.waste = WasteInputs(by, month=use)
            if use != month:
                inputs.notes.append(f"Idle waste is for {use}, the latest month with utilisation (plan: {month}).")
        except FinopsError as exc:
            inputs.waste_note = str(exc)
    inputs.notes += supply_notes
    if st.has("spot_prices"):
        from finops_cli.store import engine
        from finops_cli.store.queries import SPOT_FEED_LATEST

        table = engine.run(st, SPOT_FEED_LATEST)
        rows = table.to_pylist() if table is not None else []
        inputs.price_feeds = PriceFeedInfo({str(r["provider"]): r["latest"] for r in rows})

    return write_report(inputs, out)


# --- simulate -------------------------------------------------------------------------------------


def read_trace(path: str | Path, workload_ids: list[str] | tuple[str, ...]) -> DispatchTrace:
    """Read a request trace (CSV or Parquet: ``timestamp, workload, units``) for ``simulate dispatch``.

    ``timestamp`` is hours from the trace start (a number) or a timestamp (UTC when naive; the origin is
    the hour of the first request). Errors name the file, the row (CSV line) and the column.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from finops_cli.errors import InputError
    from finops_cli.sim.dispatch import Trace

    p = Path(path)
    if not p.exists():
        raise InputError("trace not found", path=p)
    try:
        if p.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            table = pq.read_table(p)
            line_offset, row_word = 0, "row"
        else:
            from pyarrow import csv

            table = csv.read_csv(p)
            line_offset, row_word = 2, "line"
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"cannot read trace ({str(exc).splitlines()[0]})", path=p) from None
    names = [c.strip() for c in table.column_names]
    table = table.rename_columns(names)
    missing = [c for c in ("timestamp", "workload", "units") if c not in names]
    if missing:
        raise InputError(f"missing column(s) {missing}; expected timestamp, workload, units", path=p)
    ts_col = table.column("timestamp")
    origin = None
    if pa.types.is_timestamp(ts_col.type) or pa.types.is_date(ts_col.type):
        ts = pc.cast(ts_col, pa.timestamp("us")) if pa.types.is_date(ts_col.type) else ts_col
        if ts.null_count:
            i = int(np.flatnonzero(pc.is_null(ts).to_numpy(zero_copy_only=False))[0])
            raise InputError("timestamp: empty", path=p, where=f"{row_word} {i + line_offset}")
        micros = pc.cast(ts, pa.timestamp("us", tz=ts.type.tz if hasattr(ts.type, "tz") else None)).cast(pa.int64())
        us = micros.to_numpy(zero_copy_only=False).astype(np.int64)
        first_hour_us = (us.min() // 3_600_000_000) * 3_600_000_000
        hours = (us - first_hour_us) / 3.6e9
        from datetime import UTC, datetime, timedelta

        origin = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=int(first_hour_us))
    else:
        try:
            hours = pc.cast(ts_col, pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            texts = pc.cast(ts_col, pa.string()).to_pylist()
            i = next((k for k, v in enumerate(texts) if not _is_number(v)), 0)
            raise InputError(
                f"timestamp: expected hours from the start (a number) or an ISO timestamp, got {texts[i]!r}",
                path=p,
                where=f"{row_word} {i + line_offset}",
            ) from None
    bad = ~np.isfinite(hours)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError("timestamp: expected a number or a timestamp", path=p, where=f"{row_word} {i + line_offset}")
    try:
        units = pc.cast(table.column("units"), pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise InputError("units: expected numbers >= 0", path=p) from None
    bad = ~(np.isfinite(units) & (units >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"units: expected a number >= 0, got {units[i]!r}", path=p, where=f"{row_word} {i + line_offset}"
        )
    wl = pc.cast(table.column("workload"), pa.string())
    index = {w: k for k, w in enumerate(workload_ids)}
    dict_arr = pc.dictionary_encode(wl).combine_chunks()
    dictionary = dict_arr.dictionary.to_pylist()
    codes = dict_arr.indices.to_numpy(zero_copy_only=False)
    for k, name in enumerate(dictionary):
        if name not in index:
            i = int(np.flatnonzero(codes == k)[0])
            raise InputError(
                f"workload: unknown workload {name!r} (workloads.yaml has {', '.join(workload_ids)})",
                path=p,
                where=f"{row_word} {i + line_offset}",
            )
    mapping = np.array([index[name] for name in dictionary], dtype=np.int32)
    w_idx = mapping[codes] if len(dictionary) else np.array([], dtype=np.int32)
    order = np.argsort(hours, kind="stable")
    return Trace(hours[order], w_idx[order], units[order], tuple(workload_ids), origin)


def _is_number(text: object) -> bool:
    try:
        float(str(text))
    except ValueError:
        return False
    return True


def write_trace(trace: DispatchTrace, path: str | Path) -> None:
    """Write a trace as CSV or Parquet (by suffix), atomically; timestamps ISO when it has an origin."""
    import numpy as np
    import pyarrow as pa

    from finops_cli.atomic import atomic_path

    p = Path(path)
    if trace.origin is not None:
        start = np.datetime64(trace.origin.replace(tzinfo=None), "us")
        ts = pa.array(start + (trace.hours * 3.6e9).astype("timedelta64[us]"), pa.timestamp("us", tz="UTC"))
    else:
        ts = pa.array(trace.hours)
    names = np.array(trace.workload_ids, dtype=object)
    table = pa.table({"timestamp": ts, "workload": pa.array(names[trace.workload]), "units": pa.array(trace.units)})
    with atomic_path(p) as tmp:
        if p.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            pq.write_table(table, tmp)
        else:
            from pyarrow import csv

            csv.write_csv(table, tmp)


def read_dispatch_events(path: str | Path, fleet_substrates: list[str], origin: Any = None) -> list[Any]:
    """Read and validate an events file (a YAML list); errors name the file and ``[i].field``."""
    from pydantic import ValidationError

    from finops_cli.errors import InputError
    from finops_cli.estate.load import format_validation_error
    from finops_cli.files import read_yaml_positions
    from finops_cli.sim.dispatch import EventsFile, TimedEvent

    p = Path(path)
    data, positions = read_yaml_positions(p)
    if data is None:
        data = []
    if not isinstance(data, list):
        raise InputError("expected a YAML list of events ({type, substrate, start, end, capacity_factor})", path=p)
    try:
        events = EventsFile.model_validate(data).root
    except ValidationError as exc:
        raise InputError(format_validation_error(p, exc, positions, root="events")) from None
    out = []
    known = set(fleet_substrates)
    for k, ev in enumerate(events):
        if ev.substrate not in known:
            raise InputError(f"events[{k}].substrate: unknown substrate {ev.substrate!r} (not in fleet.yaml)", path=p)
        try:
            start, end = ev.hours(origin)
        except ValueError as exc:
            raise InputError(f"events[{k}].start: {exc}", path=p) from None
        if end < start:
            raise InputError(f"events[{k}].end: must not be before start", path=p)
        out.append(TimedEvent(ev.type, ev.substrate, start, end, ev.capacity_factor or 1.0))
    return out


#: ``--requests`` cap: 100 M requests is ~4 GB of trace and ~4 minutes of replay; more is a typo.
MAX_GENERATED_REQUESTS = 100_000_000


def simulate_dispatch(
    estate: Estate,
    trace: str | Path | None = None,
    *,
    generate: bool = False,
    requests: int = 100_000,
    seed: int = 0,
    events: str | Path | None = None,
    mode: str = "cost",
    horizon: str | None = None,
    store: str | Path | Store | None = None,
    window_hours: float = 1.0,
    fx: dict[str, float] | None = None,
    log: Callable[[str], None] | None = None,
    as_of: datetime | None = None,
) -> DispatchResult:
    """Replay a request trace through the estate's merit order (``finops simulate dispatch``).

    Parameters
    ----------
    trace
        CSV/Parquet ``timestamp, workload, units``. With ``generate`` a synthetic trace of about
        ``requests`` Poisson arrivals following the workloads' demand over ``horizon`` is made (and
        written to ``trace`` when given).
    events
        YAML list of ``{type: outage|rate_limit|recover, substrate, start, end, capacity_factor}``.
    horizon
        Prices the fleet (the feed window rule) and spans a generated trace; default: the default-month
        rule. ``log`` receives the horizon line, month warnings and price notes (the CLI's stderr).
    """
    from finops_cli.errors import InputError
    from finops_cli.estate.demand_io import estate_demand
    from finops_cli.estate.prices import reference_price_notes
    from finops_cli.sim.dispatch import generate_trace
    from finops_cli.sim.dispatch import simulate_dispatch as replay

    if mode not in ("cost", "reliability"):
        raise InputError(f"--mode {mode!r}: expected cost or reliability")
    if seed < 0:
        raise InputError(f"--seed {seed}: expected an integer >= 0")
    if not 0 <= requests <= MAX_GENERATED_REQUESTS:  # the generated trace is held in memory (~40 bytes/request)
        raise InputError(f"--requests {requests}: expected an integer from 0 to {MAX_GENERATED_REQUESTS:_}")
    if not (math.isfinite(window_hours) and window_hours > 0):
        raise InputError(f"--window-hours {window_hours}: expected hours > 0")
    p = priced_fleet(
        estate.fleet, store, horizon=horizon or None, estate=estate, fx=fx, demand_from_store=generate, as_of=as_of
    )
    resolved, st, hz = replace(estate, fleet=p.fleet), p.store, p.horizon
    for line in [p.choice.line, *(f"warning: {w}" for w in p.choice.warnings)]:
        (log or (lambda _m: None))(line)
    for note in reference_price_notes(p.sources):
        (log or (lambda _m: None))(f"price: {note}")
    workloads = list(resolved.workloads.workloads)
    ids = [w.id for w in workloads]
    if generate:
        demand = estate_demand(resolved, hz, st)
        tr = generate_trace(workloads, resolved.fleet, demand.to_numpy(), requests=requests, seed=seed, origin=hz.start)
        if trace is not None:
            write_trace(tr, trace)
    elif trace is None:
        raise InputError("give --trace FILE, or --generate to make a synthetic trace")
    else:
        tr = read_trace(trace, ids)
    evs = read_dispatch_events(events, [s.id for s in resolved.fleet.substrates], tr.origin) if events else None
    return replay(resolved.fleet, workloads, tr, evs, mode=mode, seed=seed, window_hours=window_hours)  # type: ignore[arg-type]


def read_schedule(path: str | Path) -> pd.DataFrame:
    """Read the hourly schedule ``finops plan --schedule`` wrote (Parquet or CSV by suffix)."""
    import pandas as pd

    from finops_cli.errors import InputError

    target = Path(path)
    if target.suffix.lower() not in SCHEDULE_FORMATS:
        raise InputError("expected the .parquet or .csv file finops plan --schedule wrote", path=target)
    if not target.is_file():
        raise InputError("file not found (expected the schedule finops plan --schedule wrote)", path=target)
    try:
        frame = pd.read_csv(target) if target.suffix.lower() == ".csv" else pd.read_parquet(target)
    except Exception as exc:  # a corrupt file is the user's input: one line, exit 2
        raise InputError(f"not a readable schedule ({type(exc).__name__}: {exc})", path=target) from None
    return frame


def replay_plan(
    estate: Estate,
    plan: str | Path | PlanDocument,
    *,
    schedule: str | Path | pd.DataFrame | None = None,
    seeds: int = 100,
    seed: int = 0,
    store: str | Path | Store | None = None,
    horizon: str | None = None,
    fx: dict[str, float] | None = None,
    as_of: datetime | None = None,
    log: Callable[[str], None] | None = None,
) -> PlanReplay:
    """Replay a plan's own allocation hour by hour under sampled preemptions (``finops simulate dispatch --plan``).

    The fleet is priced for the plan's horizon and as-of instant (``horizon``/``as_of``, when given, must be the
    plan's), so the replay uses the prices, λ and checkpoints the plan used; a plan that does not match the fleet
    or the workloads (currency, substrates, prices, horizon, demand) raises :class:`~finops_cli.errors.InputError`.
    See :mod:`finops_cli.sim.dispatch.replay` for the model and the causes of the difference.
    """
    from finops_cli.core.demand import Horizon
    from finops_cli.errors import InputError
    from finops_cli.estate.demand_io import estate_demand
    from finops_cli.report.gate import plan_or_path
    from finops_cli.sim.dispatch.replay import PlanMismatch, check_plan_matches
    from finops_cli.sim.dispatch.replay import replay_plan as run_replay

    if seed < 0:
        raise InputError(f"--seed {seed}: expected an integer >= 0")
    if not 1 <= seeds <= 100_000:
        raise InputError(f"--seeds {seeds}: expected an integer from 1 to 100000")
    doc = plan_or_path(plan)
    start = datetime.fromisoformat(doc.horizon.start.replace("Z", "+00:00"))
    hz = Horizon(start, doc.horizon.hours)
    if horizon:
        given = Horizon.parse(horizon)
        if (given.start, given.hours) != (hz.start, hz.hours):
            raise PlanMismatch(
                f"--horizon {horizon}: the plan covers {hz.start:%Y-%m-%dT%H:%MZ} + {hz.hours} h; drop --horizon "
                "(a replay uses the plan's)"
            )
    if as_of is not None and doc.as_of is not None and as_of_instant(as_of) != as_of_instant(doc.as_of):
        raise PlanMismatch(
            f"--as-of {as_of_instant(as_of):%Y-%m-%dT%H:%M:%SZ}: the plan was made as of "
            f"{as_of_instant(doc.as_of):%Y-%m-%dT%H:%M:%SZ}; drop --as-of (a replay uses the plan's)"
        )
    p = priced_fleet(estate.fleet, store, horizon=hz, estate=estate, fx=fx, demand_from_store=True, as_of=doc.as_of)
    resolved = replace(estate, fleet=p.fleet)
    workloads = list(resolved.workloads.workloads)
    check_plan_matches(doc, resolved.fleet, workloads)
    demand = estate_demand(resolved, hz, p.store)
    served: dict[str, float] = {}
    for a in doc.allocations:
        served[a.workload] = served.get(a.workload, 0.0) + a.units
    for u in doc.unserved:
        served[u.workload] = served.get(u.workload, 0.0) + u.units
    for w in workloads:
        want = float(demand[w.id].sum())
        got = served.get(w.id, 0.0)
        if got < want - 1e-4 * max(want, 1.0):
            raise PlanMismatch(
                f"workload {w.id}: the plan serves {got:,.4g} {w.unit} over its horizon, the workloads file demands "
                f"{want:,.4g}: not the plan of these workloads (re-plan)"
            )
    sched = read_schedule(schedule) if isinstance(schedule, str | Path) else schedule
    (log or (lambda _m: None))(f"replaying the plan: {hz.start:%Y-%m-%dT%H:%MZ} + {hz.hours} h (the plan's horizon)")
    return run_replay(doc, resolved.fleet, workloads, sched, seeds=seeds, seed=seed)


def load_scenario(path: str | Path) -> MarketScenario:
    """Load and validate a market scenario YAML; errors name the file and the field path."""
    from finops_cli.estate.load import load_model
    from finops_cli.sim.market import Scenario

    return load_model(path, Scenario)


def simulate_market(scenario: str | Path | MarketScenario, policy: str = "renegotiate") -> list[MarketPolicyResult]:
    """Run one market policy (or ``all``) on a scenario (``finops simulate market``)."""
    from finops_cli.errors import InputError
    from finops_cli.sim.market import POLICIES
    from finops_cli.sim.market import simulate_market as run

    sc = scenario if not isinstance(scenario, str | Path) else load_scenario(scenario)
    if policy != "all" and policy not in POLICIES:
        raise InputError(f"--policy {policy!r}: expected one of {', '.join([*POLICIES, 'all'])}")
    return run(sc, policy)


def market_experiment(
    name: str,
    *,
    size: str = "small",
    seed: int = 0,
    n_accelerators: int | None = None,
    window_hours: float | None = None,
    out_dir: str | Path | None = None,
    seeds: int | None = None,
    spot: str = "paper",
) -> MarketExperiment:
    """Run one of the LaissezCloud paper's experiments on generated clusters (``simulate market --experiment``).

    With ``out_dir``, also draws the experiment's chart there as ``<name>.png`` (the CLI writes the
    JSON and markdown tables beside it).
    """
    from finops_cli.errors import InputError
    from finops_cli.sim.market.charts import experiment_chart
    from finops_cli.sim.market.experiments import run_experiment

    if n_accelerators is not None and n_accelerators < 5:
        raise InputError(f"--accelerators {n_accelerators}: expected at least 5 (one per accelerator type)")
    if window_hours is not None and window_hours <= 0:
        raise InputError(f"--window-hours {window_hours}: expected hours > 0")
    try:
        result = run_experiment(
            name,
            size=size,
            seed=seed,
            n_accelerators=n_accelerators,
            window_hours=window_hours,
            seeds=seeds,
            spot=spot,
        )
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if out_dir is not None:
        experiment_chart(result.as_dict(), Path(out_dir) / f"{name}.png")
    return result

"""The Python API: the CLI's verbs as functions returning typed results (no printing, no exit codes).

The CLI only parses arguments, calls these and renders what they return. Imports are local to each
function so ``import finops_cli.api`` stays cheap.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import datetime, timedelta
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
    from finops_cli.estate.load import Estate
    from finops_cli.estate.priced import PricedEstate
    from finops_cli.estate.prices import PriceSource
    from finops_cli.ingest.billing import IngestSummary
    from finops_cli.ingest.spot import SpotIngest
    from finops_cli.ingest.utilization import CsvMapping, UtilizationIngest
    from finops_cli.planner import PlannerOutput
    from finops_cli.report.waste import WasteReport
    from finops_cli.schema.estate import Fleet, Workloads
    from finops_cli.schema.plan import PlanDocument
    from finops_cli.sim.dispatch import DispatchResult
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


def fleet(path: str | Path) -> Fleet:
    """Load and validate ``fleet.yaml`` on its own (spot rates measured from traces resolved)."""
    from finops_cli.estate.load import load_fleet

    return load_fleet(path)


def workloads(path: str | Path) -> Workloads:
    """Load and validate ``workloads.yaml`` on its own."""
    from finops_cli.estate.load import load_workloads

    return load_workloads(path)


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
    fleet: str | Path | Fleet | None = None,
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
    fleet: str | Path | Fleet | None = None,
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
    fleet: str | Path | Fleet | None,
    price_per_gpu_hour: float | None,
    month: str | None,
) -> dict[str, WasteReport]:
    from finops_cli.errors import InputError
    from finops_cli.estate.load import load_fleet
    from finops_cli.report.waste import GROUP_BYS, GroupBy
    from finops_cli.report.waste_query import store_waste_reports

    groupings: list[GroupBy] = []
    for group in by:
        if group not in GROUP_BYS:
            raise InputError(f"--by must be one of {', '.join(GROUP_BYS)}; got {group!r}")
        groupings.append(group)
    if month is not None and not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", month):
        raise InputError(f"--month {month!r}: expected YYYY-MM such as 2026-10")
    st = _store(store)
    if not st.has("utilization") and not st.has("billing"):
        raise InputError(
            "no utilisation and no billing in the store; run 'finops ingest billing' and 'finops ingest utilization'"
        )
    reason = "--month"
    if month is None:
        from finops_cli.estate.horizon import default_month

        picked = default_month(st)  # the one default-month rule
        month, reason = picked.month, picked.reason
    fl = load_fleet(fleet) if isinstance(fleet, str | Path) else fleet
    return store_waste_reports(
        st, groupings, fleet=fl, price_per_gpu_hour=price_per_gpu_hour, month=month, reason=reason
    )


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
    from finops_cli.estate.horizon import default_month
    from finops_cli.estate.load import load_fleet
    from finops_cli.report.costs import costs_report

    st = _store(store)

    def month_rule() -> tuple[str, str]:
        picked = default_month(st)
        return picked.month, picked.reason

    return costs_report(
        st,
        by=by,
        where=where,
        month=month,
        compare=compare,
        cost=cost,
        fleet=(lambda: load_fleet(fleet)) if fleet is not None else None,
        all_lines=all_lines,
        chargeback=chargeback,
        team_tag=team_tag,
        default_month=month_rule,
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


def price(
    estate: Estate | Fleet,
    store: str | Path | Store | None = None,
    *,
    horizon: str | DemandHorizon | None = None,
    fx: dict[str, float] | None = None,
    as_of: datetime | None = None,
    demand_from_store: bool = True,
    default_store: bool = True,
) -> PricedEstate:
    """Price ``estate`` (or a fleet on its own) once for a command: see :func:`finops_cli.estate.priced.price_estate`.

    Hand the result to :func:`stack`, :func:`netc`, :func:`plan`, :func:`report` and :func:`simulate_dispatch`
    instead of the estate: each then uses its horizon, prices, store and as-of instant as they are."""
    from finops_cli.estate.priced import price_estate

    return price_estate(
        estate,
        store,
        horizon=horizon,
        fx=fx,
        as_of=as_of,
        demand_from_store=demand_from_store,
        default_store=default_store,
    )


def _priced(
    target: Estate | Fleet | PricedEstate,
    store: str | Path | Store | None,
    horizon: str | DemandHorizon | None,
    fx: dict[str, float] | None,
    as_of: datetime | None,
    **how: bool,
) -> PricedEstate:
    """``target`` itself when already priced (then ``horizon``/``fx``/``as_of`` must not be given), else priced."""
    from finops_cli.estate.priced import PricedEstate

    if isinstance(target, PricedEstate):
        if horizon is not None or fx is not None or as_of is not None:
            raise ValueError("the estate is already priced: its horizon, fx and as-of instant are fixed")
        if store is not None and store is not target.store:
            raise ValueError("the estate is already priced from another store")
        return target
    return price(target, store, horizon=horizon, fx=fx, as_of=as_of, **how)


def check_max_price_age(days: float | None) -> None:
    """``--max-price-age``: a number of days >= 0 (exit 2 otherwise)."""
    from finops_cli.errors import InputError

    if days is not None and not (math.isfinite(days) and days >= 0):
        raise InputError(f"--max-price-age {days}: expected a number of days >= 0")


def _demand_warnings(p: PricedEstate) -> list[str]:
    """Where ``stack`` and ``netc`` start: the horizon's warnings (month mismatch) and profile coverage."""
    from finops_cli.estate.checks import check_profile_coverage

    return [*p.choice.warnings, *check_profile_coverage(p.resolved, p.horizon)]


def stack(
    estate: Estate | Fleet | PricedEstate,
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

    ``estate``: from :func:`estate`, or priced (:func:`price`), or a fleet on its own (shown in GPU-hours).
    Demand per workload is its mean hourly units when deferrable, else its peak hour, over ``horizon``
    (default: the default-month rule, :func:`finops_cli.estate.horizon.choose_horizon`). A ``price_feed`` needs
    the spot-price store (``store`` or the default one). ``fx``: exchange rates (``{"USD:CAD": 1.37}``) over the
    fleet's ``fx:``. Stale and thin prices (``max_price_age`` days,
    :func:`finops_cli.core.price_checks.price_warnings`) are in the warnings.
    """
    from finops_cli.core.price_checks import price_warnings
    from finops_cli.core.stack import build_stack
    from finops_cli.errors import InputError

    check_max_price_age(max_price_age)
    p = _priced(estate, store, horizon, fx, as_of)
    if p.estate is None:
        if workload is not None:
            raise InputError("--workload needs --workloads")
        return StackResult(
            [build_stack(None, p.fleet, mode)],  # type: ignore[arg-type]
            p.fleet.currency,
            p.sources,
            p.horizon,
            [*p.choice.warnings, *price_warnings(p.sources, max_price_age)],
            p.choice.line,
        )
    est = p.estate
    chosen = est.workloads.workloads
    if workload is not None:
        chosen = [w for w in chosen if w.id == workload]
        if not chosen:
            known = ", ".join(w.id for w in est.workloads.workloads)
            raise InputError(f"--workload {workload!r} is not in {est.workloads_path} (known: {known})")
    warnings = _demand_warnings(p)
    demand, observed = p.demand_sources
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
    estate: Estate | PricedEstate,
    *,
    trace: str | Path | None = None,
    substrate: str | None = None,
    store: str | Path | Store | None = None,
    horizon: str | DemandHorizon | None = None,
    fx: dict[str, float] | None = None,
    as_of: datetime | None = None,
) -> NetcResult:
    """NETC of every interruptible workload's demand on each compliant spot substrate (docs/economics.md §5).

    ``estate``: from :func:`estate`, or priced (:func:`price`). With ``trace`` (Can't Be Late JSON or
    preemption-timestamp CSV) λ is estimated from it and the job is replayed on it; ``substrate`` limits the
    report (and the trace) to one spot substrate.
    """
    from finops_cli.core.netc_report import netc_rows
    from finops_cli.errors import InputError
    from finops_cli.estate.priced import PricedEstate
    from finops_cli.estate.traces import read_trace

    est = estate.resolved if isinstance(estate, PricedEstate) else estate
    if substrate is not None:
        try:
            s = est.fleet.substrate(substrate)
        except KeyError:
            raise InputError(f"--substrate {substrate!r} is not in {est.fleet_path}") from None
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
    p = _priced(estate, store, horizon, fx, as_of)
    warnings = _demand_warnings(p)
    demand, observed = p.demand_sources
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
    estate: Estate | PricedEstate,
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
        ``store``). Or priced already (:func:`price`): its horizon, store, fx and as-of instant are the plan's.
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
    p = _priced(estate, store, horizon, fx, as_of, default_store=False)
    hz, sources, store = p.horizon, p.sources, p.store
    resolved = p.resolved
    observed: list[ObservedDemand] = []
    if demand is None:
        demand, observed = p.demand_sources
        demand = demand.copy()
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
        document.savings_by_lever = _savings_by_lever(out, p, workloads, demand, document, billed, mode, solver)
    document.as_of = p.as_of
    document.notes.extend(actual_only)  # the billed baseline's effective cost leaves a commitment out
    document.notes.extend(r.note() for r in resolved.rates)
    document.demand_sources.extend(DemandSource.model_validate(o.as_dict()) for o in observed)
    document.prices = [PriceUsed.model_validate(src.as_dict()) for src in sources]
    document.notes.extend(src.note() for src in sources)
    document.fx = fx_used(sources)
    warnings = [*p.choice.warnings, *price_warnings(sources, max_price_age), *actual_only]
    return PlanResult(document, out, hz, reference_price_notes(sources), p.choice.line, warnings)


def _measured_utilization(p: PricedEstate, month: str) -> dict[str, float]:
    """Busy ÷ device-hours per fleet substrate from the store's utilisation of ``month`` (empty without it)."""
    store = p.store
    if store is None or not store.has("utilization") or month not in store.partition_values("utilization", "month"):
        return {}
    report = waste_reports(store=store, by=("substrate",), fleet=p.loaded_fleet, month=month)["substrate"]
    ids = {s.id for s in p.fleet.substrates}
    return {
        str(g["key"]): float(g["busy_hours"]) / float(g["device_hours"])
        for g in report.groups
        if str(g.get("key")) in ids and g.get("device_hours") and g.get("busy_hours") is not None
    }


def _savings_by_lever(
    out: Any,
    p: PricedEstate,
    workloads: list[Any],
    demand: pd.DataFrame,
    document: PlanDocument,
    billed: Any,
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
        measured = _measured_utilization(p, f"{p.horizon.start:%Y-%m}")
        use = billing_use(billed.cost_by_substrate, billed.gpu_hours_by_substrate, p.fleet, plan_hours, measured)
    else:
        merit = out.merit_order
        use = dispatch_use(merit.cost_by_substrate, merit.gpu_hours_by_substrate)
    attribution = attribute_savings(
        out,
        p.fleet,
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
    from finops_cli.report.metrics import ReportResult
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
    *,
    estate: Estate | PricedEstate | Fleet | None = None,
    out_path: str | Path | None = None,
    title: str | None = None,
) -> ReportResult:
    """Write the leadership report (``finops report``): markdown at ``out_path`` plus PNG charts beside it.

    Plan numbers come from ``plan`` (a document, a dict or ``plan.json``); idle waste and price-feed age
    from ``store`` (default: ``$FINOPS_STORE`` or ``.finops/``) for the plan's month; the supply curve
    needs ``estate`` (from :func:`estate`, or priced by :func:`price`: then for the plan's horizon; a fleet on
    its own prices idle devices only), priced for the plan's horizon, fx and as-of instant. Missing inputs make
    their section say "not available" (listed in ``ReportResult.unavailable``). ``out_path=None``: nothing is
    written, no charts; the markdown is returned. Files are written atomically (charts first, the report last).
    """
    from finops_cli.core.demand import Horizon
    from finops_cli.errors import InputError
    from finops_cli.estate.load import Estate
    from finops_cli.estate.priced import PricedEstate
    from finops_cli.report.build import SupplyCurve, build_report
    from finops_cli.report.gate import plan_or_path
    from finops_cli.report.metrics import ReportInputs, horizon_bounds
    from finops_cli.report.write import check_report_path
    from finops_cli.schema.estate import Fleet

    doc = plan_or_path(plan)
    est = estate.estate if isinstance(estate, PricedEstate) else estate
    fleet = estate.loaded_fleet if isinstance(estate, PricedEstate) else est.fleet if isinstance(est, Estate) else est
    if fleet is not None and fleet.currency != doc.currency:
        named = est.fleet_path if isinstance(est, Estate) and est.fleet_path is not None else "the fleet"
        raise InputError(
            f"the plan is in {doc.currency} but {named} is in {fleet.currency}; amounts in different currencies"
            " are never mixed (plan with this fleet, or report with the fleet the plan used)",
            path=plan if isinstance(plan, str | Path) else None,
            where="currency",
        )
    inputs = ReportInputs(plan=doc, title=title)
    out = Path(out_path) if out_path is not None else None
    if out is not None:
        check_report_path(out)
    st = _store(store)
    start, _ = horizon_bounds(doc)
    hz = Horizon(start, doc.horizon.hours) if start is not None else None

    def supply(workload: str) -> SupplyCurve:
        assert estate is not None and not isinstance(estate, Fleet)
        target: Estate | PricedEstate | None = estate
        if isinstance(target, PricedEstate) and (
            hz is None
            or (target.horizon.start, target.horizon.hours) != (hz.start, hz.hours)
            or (target.fx or None) != (doc.fx or None)
            or target.store is not st
        ):
            target = target.estate  # priced for another horizon: price again for the plan's
        if not isinstance(target, PricedEstate):
            assert target is not None
            target = price(target, st, horizon=hz, fx=doc.fx or None, as_of=doc.as_of)
        curve = stack(target, workload=workload, mode=getattr(doc, "mode", "cost"))
        return SupplyCurve(curve.stacks[0], curve.currency, {p.substrate: p.value for p in curve.prices})

    has_workloads = estate is not None and not isinstance(estate, Fleet)
    result = build_report(
        inputs,
        st,
        out,
        fleet=fleet,
        supply=supply if has_workloads else None,
        supply_missing="needs --workloads as well as --fleet" if estate is not None else None,
    )
    if start is not None:
        from finops_cli.estate.horizon import latest_billed_gpu_month, latest_utilization_month, month_warnings

        assert hz is not None
        result.horizon_note = f"horizon: {start:%Y-%m-%d} + {doc.horizon.hours} h: the plan's"
        billed = latest_billed_gpu_month(st) if st.has("billing") else None
        result.warnings = month_warnings(hz, billed, latest_utilization_month(st))
    return result


# --- simulate -------------------------------------------------------------------------------------


#: ``--requests`` cap: 100 M requests is ~4 GB of trace and ~4 minutes of replay; more is a typo.
MAX_GENERATED_REQUESTS = 100_000_000


def simulate_dispatch(
    estate: Estate | PricedEstate,
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
    from finops_cli.estate.prices import reference_price_notes
    from finops_cli.sim.dispatch import generate_trace
    from finops_cli.sim.dispatch import simulate_dispatch as replay
    from finops_cli.sim.dispatch.io import read_dispatch_events, read_trace, write_trace

    if mode not in ("cost", "reliability"):
        raise InputError(f"--mode {mode!r}: expected cost or reliability")
    if seed < 0:
        raise InputError(f"--seed {seed}: expected an integer >= 0")
    if not 0 <= requests <= MAX_GENERATED_REQUESTS:  # the generated trace is held in memory (~40 bytes/request)
        raise InputError(f"--requests {requests}: expected an integer from 0 to {MAX_GENERATED_REQUESTS:_}")
    if not (math.isfinite(window_hours) and window_hours > 0):
        raise InputError(f"--window-hours {window_hours}: expected hours > 0")
    p = _priced(estate, store, horizon or None, fx, as_of, demand_from_store=generate)
    resolved, hz = p.resolved, p.horizon
    for line in [p.choice.line, *(f"warning: {w}" for w in p.choice.warnings)]:
        (log or (lambda _m: None))(line)
    for note in reference_price_notes(p.sources):
        (log or (lambda _m: None))(f"price: {note}")
    workloads = list(resolved.workloads.workloads)
    ids = [w.id for w in workloads]
    if generate:
        demand = p.demand
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
    estate: Estate | PricedEstate,
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
    from finops_cli.estate.priced import as_of_instant
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
    p = _priced(estate, store, hz, fx, doc.as_of)
    resolved = p.resolved
    workloads = list(resolved.workloads.workloads)
    check_plan_matches(doc, resolved.fleet, workloads)
    demand = p.demand
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

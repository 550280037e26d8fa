"""The Python API: the CLI's verbs as functions returning typed results (no printing, no exit codes).

The CLI only parses arguments, calls these and renders what they return. Imports are local to each
function so ``import finops_cli.api`` stays cheap.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import pandas as pd

    from finops_cli.catalog.refresh import RefreshResult
    from finops_cli.core.demand import Horizon as DemandHorizon
    from finops_cli.estate.draft import Draft
    from finops_cli.estate.load import Estate
    from finops_cli.estate.planning import PlanResult
    from finops_cli.estate.priced import PricedEstate
    from finops_cli.estate.supply import NetcResult, StackResult
    from finops_cli.ingest.billing import IngestSummary
    from finops_cli.ingest.spot import SpotIngest
    from finops_cli.ingest.utilization import CsvMapping, UtilizationIngest
    from finops_cli.report.costs import CostsResult
    from finops_cli.report.gate import GateResult, Thresholds
    from finops_cli.report.metrics import ReportResult
    from finops_cli.report.waste import WasteReport
    from finops_cli.schema.estate import Fleet, Workloads
    from finops_cli.schema.plan import PlanDocument
    from finops_cli.sim.dispatch import DispatchResult
    from finops_cli.sim.dispatch.replay import PlanReplay
    from finops_cli.sim.market import PolicyResult as MarketPolicyResult
    from finops_cli.sim.market import Scenario as MarketScenario
    from finops_cli.sim.market.results import ExperimentResult as MarketExperiment
    from finops_cli.store import Store
    from finops_cli.store.sources import AggregateResult, CheckResult, RemoveResult, SourceInfo


def open_store(root: str | Path | None = None) -> Store:
    """The store at ``root``, else ``$FINOPS_STORE``, else ``.finops/``; a directory or a bucket URI."""
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
    """Ingest billing exports (AWS CUR / CUR 2.0, GCP, Azure, FOCUS; local paths or bucket objects/prefixes)
    into ``billing``: atomic, idempotent per (format, account, period), money conserved per currency to the cent.
    ``fmt``: a format name or ``auto``; ``jobs`` worker processes or ``engine="spark"`` convert the files."""
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
    """``finops store aggregate``: the hourly aggregates detail files lack (all with ``rebuild``), on ``engine``."""
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
    """Ingest utilisation traces (dcgm scrapes, Prometheus range JSON, generic CSV) into ``utilization``;
    a source overlapping a stored one (same device and time) is refused unless ``replace``."""
    from finops_cli.engines import query_engine, utilization_stager
    from finops_cli.ingest.utilization import ingest_utilization as _ingest
    from finops_cli.uri import local_inputs, origin_fields

    stager = utilization_stager(engine, spark_master)
    st = _store(store)
    with query_engine(engine, spark_master), local_inputs(paths) as local:
        result = _ingest(
            st, local, fmt=fmt, mapping=mapping, util_scale=util_scale, on_rows=on_rows, replace=replace, stager=stager
        )
        return origin_fields(result)


def ingest_spot_prices(*, store: str | Path | Store | None = None, **kwargs: Any) -> SpotIngest:
    """Fetch (AWS, GCP) or read (AWS CLI JSON, CSV/TSV) spot prices into ``spot_prices``; keyword
    arguments are those of :func:`finops_cli.ingest.spot.ingest_spot_prices`."""
    from finops_cli.ingest.spot import ingest_spot_prices as _ingest
    from finops_cli.uri import local_inputs, origin_fields

    st = _store(store)
    with local_inputs(kwargs.pop("files", None) or []) as local:
        return origin_fields(_ingest(st, files=local or None, **kwargs))


def prices(
    *,
    store: str | Path | Store | None = None,
    instance_types: list[str] | None = None,
    regions: list[str] | None = None,
    since: datetime | None = None,
) -> pd.DataFrame:
    """``finops prices``: time-weighted statistics per provider × region/zone × instance type."""
    from finops_cli.report.prices import store_price_table

    return store_price_table(_store(store), instance_types=instance_types, regions=regions, since=since)


def waste(
    *,
    store: str | Path | Store | None = None,
    by: str = "team",
    fleet: str | Path | Fleet | None = None,
    price_per_gpu_hour: float | None = None,
    month: str | None = None,
) -> WasteReport:
    """``finops waste``: idle GPU-hours and money of one month, one grouping of :func:`waste_reports`."""
    return waste_reports(store=store, by=(by,), fleet=fleet, price_per_gpu_hour=price_per_gpu_hour, month=month)[by]


def waste_reports(
    *,
    store: str | Path | Store | None = None,
    by: Sequence[str] = ("team",),
    fleet: str | Path | Fleet | None = None,
    price_per_gpu_hour: float | None = None,
    month: str | None = None,
) -> dict[str, WasteReport]:
    """Idle waste of one month grouped each way in ``by``, the month queried and priced once. Devices are priced
    from the same month's billing, else ``fleet``, else ``price_per_gpu_hour``; a month with billing but no
    utilisation gives billed GPU spend and GPU-hours per group (idle needs a trace)."""
    from finops_cli.estate.horizon import month_rule
    from finops_cli.estate.load import load_fleet
    from finops_cli.report.waste_query import waste_reports as _waste

    st = _store(store)
    return _waste(
        st,
        by,
        fleet=lambda: load_fleet(fleet) if isinstance(fleet, str | Path) else fleet,
        price_per_gpu_hour=price_per_gpu_hour,
        month=month,
        default_month=month_rule(st),
    )


def estate_draft(
    *,
    store: str | Path | Store | None = None,
    out: str | Path,
    month: str | None = None,
    currency: str | None = None,
    force: bool = False,
) -> tuple[Draft, tuple[Path, Path]]:
    """``finops estate draft``: a draft fleet.yaml and workloads.yaml from the store, written into ``out``."""
    from finops_cli.core.demand import check_month
    from finops_cli.estate.draft import draft_estate, write_draft

    check_month(month)
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
) -> CostsResult:
    """``finops costs``: spend grouped by ``by`` (filtered by ``where``: ``NAME=VALUE[,VALUE]``), month over
    month (``compare``) or charged back to teams (``chargeback``, see :mod:`finops_cli.report.costs`); per
    currency, over GPU lines unless ``all_lines``."""
    from finops_cli.estate.horizon import month_rule
    from finops_cli.estate.load import load_fleet
    from finops_cli.report.costs import costs_report

    st = _store(store)
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
        default_month=month_rule(st),
    )


# --- pricebook; estate: validate, price, stack, netc, plan -----------------------------------------


def pricebook_refresh(
    *,
    providers: list[str] | None = None,
    regions: dict[str, list[str]] | None = None,
    instance_types: list[str] | None = None,
    pricebook: str | Path | None = None,
    aws_profile: str | None = None,
    aws_source: str = "api",
    **seams: Any,
) -> RefreshResult:
    """``finops pricebook refresh``: list prices from the providers' APIs into the user pricebook, all or nothing;
    ``aws_source``: ``api`` (credentials) or ``offers`` (public bulk files); ``seams``: see catalog.refresh."""
    from finops_cli.catalog.pricebook import pricebook_at, user_pricebook_dir
    from finops_cli.catalog.refresh import PROVIDERS, refresh_pricebook

    with pricebook_at(pricebook):
        return refresh_pricebook(
            providers=providers or list(PROVIDERS),
            regions=regions,
            extra_types=instance_types or [],
            directory=user_pricebook_dir(),
            aws_profile=aws_profile,
            aws_source=aws_source,
            **seams,
        )


def pricebook_import_skypilot(directory: str | Path, *, pricebook: str | Path | None = None) -> Any:
    """``finops pricebook import skypilot DIR``: a SkyPilot catalog's ``vms.csv`` files into the user pricebook
    (instance facts and on-demand/spot prices; see :mod:`finops_cli.catalog.skypilot`)."""
    from finops_cli.catalog.pricebook import pricebook_at, user_pricebook_dir
    from finops_cli.catalog.skypilot import import_skypilot

    with pricebook_at(pricebook):
        return import_skypilot(Path(directory), user_pricebook_dir())


def pricebook_table(*, pricebook: str | Path | None = None, provider: str | None = None) -> pd.DataFrame:
    """``finops pricebook show``: the reference prices every command uses, shipped overlaid by the user's, with
    each row's ``origin`` (``shipped`` or the user file), ``source`` and ``read_on``/``fetched_at``."""
    from finops_cli.catalog.pricebook import pricebook_at
    from finops_cli.catalog.prices import reference_prices

    with pricebook_at(pricebook):
        table = reference_prices()
    if provider:
        table = table[table["provider"] == provider]
    return table.reset_index(drop=True)


def validate(fleet: str | Path, workloads: str | Path | None = None, *, strict: bool = False) -> list[str]:
    """Load and check ``fleet.yaml`` (and ``workloads.yaml``); return warnings. Errors name file and field path
    (InputError); a workload with no compliant destination raises NoCompliantDestination."""
    from finops_cli.estate.checks import check_files

    return check_files(fleet, workloads, strict)


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
    """Price ``estate`` (or a fleet on its own) once for a command: :func:`stack`, :func:`netc`, :func:`plan`,
    :func:`report` and the simulators then use its horizon, prices, store and as-of instant as they are."""
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
    """The merit order of each workload (or ``workload``) cleared against its demand (docs/economics.md §5).

    ``estate``: loaded, priced (:func:`price`) or a fleet on its own (shown in GPU-hours). ``fx``: exchange
    rates over the fleet's ``fx:``; stale and thin prices (``max_price_age`` days) are in the warnings."""
    from finops_cli.estate.priced import ensure_priced
    from finops_cli.estate.supply import check_max_price_age, stack_estate

    check_max_price_age(max_price_age)
    return stack_estate(ensure_priced(estate, store, horizon, fx, as_of), workload, mode, max_price_age)


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
    """NETC of every interruptible workload's demand on each compliant spot substrate (docs/economics.md §5);
    with ``trace`` λ is estimated from it and the job replayed on it; ``substrate`` limits the report to one."""
    from finops_cli.estate.priced import PricedEstate, ensure_priced
    from finops_cli.estate.supply import netc_estate, netc_substrate

    spot = netc_substrate(estate.resolved if isinstance(estate, PricedEstate) else estate, substrate, trace)
    return netc_estate(ensure_priced(estate, store, horizon, fx, as_of), spot, trace)


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

    ``estate``: loaded (a ``price_feed`` needs ``store``) or priced (:func:`price`). ``store``: billing (the
    baseline), spot prices, ``from_store`` demand. ``demand`` replaces the workloads' own; ``tolerance``: the
    certified gap to reach within ``time_limit`` (docs/planner.md describes each option). ``as_of`` is recorded so
    the same inputs give the same plan on any date. Raises :class:`~finops_cli.errors.InfeasibleError` (exit 3)
    when a workload has no compliant destination or its demand exceeds compliant capacity."""
    from finops_cli.estate.planning import check_plan_options, plan_priced
    from finops_cli.estate.priced import ensure_priced
    from finops_cli.estate.supply import check_max_price_age

    check_plan_options(mode, solver, blocks, gap, time_limit, tolerance)
    check_max_price_age(max_price_age)
    return plan_priced(
        ensure_priced(estate, store, horizon, fx, as_of, default_store=False),
        blocks=blocks,
        mode=mode,
        solver=solver,
        time_limit=time_limit,
        gap=gap,
        allow_unserved=allow_unserved,
        demand=demand,
        integer_nodes=integer_nodes,
        tolerance=tolerance,
        max_price_age=max_price_age,
    )


# --- report, gate ---------------------------------------------------------------------------------


def gate(
    plan: PlanDocument | dict[str, Any] | str | Path,
    baseline: PlanDocument | dict[str, Any] | str | Path | None = None,
    thresholds: Thresholds | None = None,
) -> GateResult:
    """Check a new plan against a baseline plan and thresholds (``finops gate``); each plan is a document, a
    dict or a path. Unreadable, invalid or mismatched plans (currency, horizon, schema version) are InputError."""
    from finops_cli.report.gate import evaluate, plan_or_path

    new = plan_or_path(plan)
    base = plan_or_path(baseline) if baseline is not None else None
    return evaluate(new, base, thresholds)


def report(
    plan: PlanDocument | dict[str, Any] | str | Path,
    store: str | Path | Store | None = None,
    *,
    estate: Estate | PricedEstate | Fleet | None = None,
    out_path: str | Path | None = None,
    title: str | None = None,
) -> ReportResult:
    """Write the leadership report (``finops report``): markdown at ``out_path`` plus PNG charts beside it
    (``None``: only the markdown, returned). Plan numbers come from ``plan``, idle waste and price-feed age from
    ``store``, the supply curve from ``estate`` priced as the plan was (a fleet on its own prices idle devices
    only); a missing input makes its section say "not available" (``ReportResult.unavailable``)."""
    from finops_cli.estate.supply import report_estate
    from finops_cli.report.gate import plan_or_path

    plan_path = plan if isinstance(plan, str | Path) else None
    out = Path(out_path) if out_path is not None else None
    return report_estate(plan_or_path(plan), _store(store), estate, out, title=title, plan_path=plan_path)


# --- simulate -------------------------------------------------------------------------------------


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
    """Replay a request trace (CSV/Parquet ``timestamp, workload, units``) through the estate's merit order
    (``finops simulate dispatch``); ``generate``: about ``requests`` Poisson arrivals following the workloads'
    demand, written to ``trace``; ``events``: outages and rate limits (docs/dispatch.md)."""
    from finops_cli.estate.dispatch import check_dispatch_options, dispatch_priced
    from finops_cli.estate.priced import ensure_priced

    check_dispatch_options(mode, seed, requests, window_hours)
    p = ensure_priced(estate, store, horizon or None, fx, as_of, demand_from_store=generate)
    return dispatch_priced(
        p,
        trace,
        generate=generate,
        requests=requests,
        seed=seed,
        events=events,
        mode=mode,
        window_hours=window_hours,
        log=log or (lambda _m: None),
    )


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
    """Replay a plan's own allocation hour by hour under sampled preemptions, with the prices, λ and
    checkpoints the plan used (:mod:`finops_cli.sim.dispatch.replay`); a plan that does not match the estate
    raises :class:`~finops_cli.errors.InputError`. ``schedule``: the hourly schedule ``plan`` wrote."""
    from finops_cli.estate.dispatch import check_replay_options, plan_horizon, replay_priced
    from finops_cli.estate.priced import ensure_priced
    from finops_cli.report.gate import plan_or_path

    check_replay_options(seed, seeds)
    doc = plan_or_path(plan)
    p = ensure_priced(estate, store, plan_horizon(doc, horizon, as_of), fx, doc.as_of)
    return replay_priced(doc, p, schedule, seeds=seeds, seed=seed, log=log or (lambda _m: None))


def simulate_market(scenario: str | Path | MarketScenario, policy: str = "renegotiate") -> list[MarketPolicyResult]:
    """Run one market policy (or ``all``) on a scenario (``finops simulate market``)."""
    from finops_cli.estate.load import load_model
    from finops_cli.sim.market import Scenario
    from finops_cli.sim.market import simulate_market as run

    return run(load_model(scenario, Scenario) if isinstance(scenario, str | Path) else scenario, policy)


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
    services: str = "volume",
    jobs: int = 1,
) -> MarketExperiment:
    """One of the LaissezCloud paper's experiments (see ``sim.market.experiments``); chart: ``out_dir/<name>.png``."""
    from finops_cli.sim.market.charts import experiment_chart
    from finops_cli.sim.market.experiments import run_experiment

    result = run_experiment(
        name,
        size=size,
        seed=seed,
        n_accelerators=n_accelerators,
        window_hours=window_hours,
        seeds=seeds,
        spot=spot,
        services=services,
        jobs=jobs,
    )
    if out_dir is not None:
        experiment_chart(result.as_dict(), Path(out_dir) / f"{name}.png")
    return result

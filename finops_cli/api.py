"""The Python API: the CLI's verbs as functions returning typed results (no printing, no exit codes).

The CLI only parses arguments, calls these and renders what they return. Imports are local to each
function so ``import finops_cli.api`` stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from finops_cli.estate import Estate, load_estate
from finops_cli.store import Store, resolve_store_root

if TYPE_CHECKING:
    import pandas as pd

    from finops_cli.core.demand import Horizon as DemandHorizon
    from finops_cli.planner import PlannerOutput
    from finops_cli.schema.plan import PlanDocument


def open_store(root: str | Path | None = None) -> Store:
    """The store at ``root`` (``--store``), else ``$FINOPS_STORE``, else ``.finops/``."""
    return Store(resolve_store_root(root))


def estate(fleet: str | Path, workloads: str | Path) -> Estate:
    """Load and validate ``fleet.yaml`` and ``workloads.yaml``."""
    return load_estate(fleet, workloads)


# --- ingest: billing -------------------------------------------------------------------------------

# --- ingest: utilisation, spot prices; prices; waste ----------------------------------------------

# --- estate: validate, stack, netc ----------------------------------------------------------------

# --- plan -----------------------------------------------------------------------------------------


@dataclass
class PlanResult:
    """``finops plan``'s answer: the JSON document plus the solved model's frames for rich rendering."""

    document: PlanDocument
    output: PlannerOutput
    horizon: DemandHorizon
    price_notes: list[str]


def default_horizon(estate: Estate, store: Store | None = None) -> DemandHorizon:
    """The latest month in the billing store; else the first month a timestamped demand profile covers;
    else the current calendar month (UTC)."""
    from datetime import UTC, datetime

    from finops_cli.core.demand import Horizon
    from finops_cli.estate.demand_io import profile_path, read_profile

    if store is not None and store.has("billing"):
        table = store.read("billing", columns=["billing_period"])
        if table is not None and table.num_rows:
            periods = sorted({str(p)[:7] for p in table.column("billing_period").to_pylist() if p})
            if periods:
                return Horizon.month(periods[-1])
    for w in estate.workloads.workloads:
        if w.demand.profile is not None:
            hours = read_profile(profile_path(estate, w))["hour"]
            if len(hours) and str(hours.dtype).startswith("datetime64"):
                return Horizon.month(f"{hours.min():%Y-%m}")
    now = datetime.now(UTC)
    return Horizon.month(f"{now:%Y-%m}")


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
        Load-duration blocks (default :data:`finops_cli.planner.DEFAULT_BLOCKS`; ``>= hours`` = hourly).
    demand
        Units per hour (one column per workload) to plan instead of the workloads' own ``demand``.

    Raises
    ------
    InfeasibleError
        No compliant destination for a workload, or demand above compliant capacity (exit 3).
    """
    from finops_cli.core.baseline import billed_baseline
    from finops_cli.core.demand import Horizon
    from finops_cli.errors import InputError
    from finops_cli.estate.demand_io import estate_demand
    from finops_cli.estate.prices import reference_price_notes, resolve_estate
    from finops_cli.planner import DEFAULT_BLOCKS, plan_demand
    from finops_cli.planner.document import plan_document
    from finops_cli.planner.solve import DEFAULT_GAP

    if mode not in ("cost", "reliability"):
        raise InputError(f"--mode {mode!r}: expected cost or reliability")
    if solver not in ("auto", "cbc", "highs"):
        raise InputError(f"--solver {solver!r}: expected cbc or highs")
    if blocks is not None and blocks < 1:
        raise InputError(f"--blocks {blocks}: expected an integer >= 1")
    if gap is not None and not 0 <= gap < 1:
        raise InputError(f"--gap {gap}: expected a fraction in [0, 1)")
    if time_limit is not None and time_limit <= 0:
        raise InputError(f"--time-limit {time_limit}: expected seconds > 0")
    hz = Horizon.parse(horizon) if isinstance(horizon, str) else horizon or default_horizon(estate, store)
    resolved, sources = resolve_estate(estate, store, feed_end=hz.end)
    if demand is None:
        demand = estate_demand(resolved, hz, store)
    elif len(demand) != hz.hours:
        raise InputError(f"demand has {len(demand)} hours, the horizon {hz.hours}")
    workloads = list(resolved.workloads.workloads)
    out = plan_demand(
        resolved.fleet,
        workloads,
        demand,
        n_blocks=blocks or DEFAULT_BLOCKS,
        mode=mode,  # type: ignore[arg-type]
        solver=solver,  # type: ignore[arg-type]
        time_limit=time_limit,
        gap=DEFAULT_GAP if gap is None else gap,
        allow_unserved=allow_unserved,
    )
    billed = None
    if store is not None and store.has("billing"):
        table = store.read("billing")
        if table is not None:
            billed = billed_baseline(table.to_pandas(), resolved.fleet, hz.start, hz.end)
    document = plan_document(out, resolved.fleet, start=hz.start, mode=mode, billed=billed)
    return PlanResult(document, out, hz, reference_price_notes(sources))


# --- report, gate ---------------------------------------------------------------------------------


if TYPE_CHECKING:  # report/gate types for annotations only; the imports stay local to the functions
    from finops_cli.report.gate import GateResult, Thresholds
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


# --- simulate -------------------------------------------------------------------------------------

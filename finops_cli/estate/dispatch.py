"""``finops simulate dispatch`` on a priced estate: a request trace replayed through its merit order, or a plan's
own allocation replayed hour by hour (:mod:`finops_cli.sim.dispatch`, :mod:`finops_cli.sim.dispatch.replay`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from finops_cli.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from finops_cli.core.demand import Horizon
    from finops_cli.estate.priced import PricedEstate
    from finops_cli.schema.plan import PlanDocument
    from finops_cli.sim.dispatch import DispatchResult
    from finops_cli.sim.dispatch.replay import PlanReplay

#: ``requests`` cap: 100 M requests is ~4 GB of trace and ~4 minutes of replay; more is a typo.
MAX_GENERATED_REQUESTS = 100_000_000


def check_seed(seed: int) -> None:
    if seed < 0:
        raise InputError(f"{seed}: expected an integer >= 0", param="seed")


def check_replay_options(seed: int, seeds: int) -> None:
    check_seed(seed)
    if not 1 <= seeds <= 100_000:
        raise InputError(f"{seeds}: expected an integer from 1 to 100000", param="seeds")


def check_dispatch_options(mode: str, seed: int, requests: int, window_hours: float) -> None:
    """The replay's options, checked before any pricing."""
    if mode not in ("cost", "reliability"):
        raise InputError(f"{mode!r}: expected cost or reliability", param="mode")
    check_seed(seed)
    if not 0 <= requests <= MAX_GENERATED_REQUESTS:  # the generated trace is held in memory (~40 bytes/request)
        raise InputError(f"{requests}: expected an integer from 0 to {MAX_GENERATED_REQUESTS:_}", param="requests")
    if not (math.isfinite(window_hours) and window_hours > 0):
        raise InputError(f"{window_hours}: expected hours > 0", param="window_hours")


def dispatch_priced(
    p: PricedEstate,
    trace: str | Path | None,
    *,
    generate: bool,
    requests: int,
    seed: int,
    events: str | Path | None,
    mode: str,
    window_hours: float,
    log: Callable[[str], None],
) -> DispatchResult:
    """Replay ``trace`` (or a generated one, written to ``trace`` when given) on ``p``'s merit order."""
    from finops_cli.estate.prices import reference_price_notes
    from finops_cli.sim.dispatch import generate_trace, simulate_dispatch
    from finops_cli.sim.dispatch.io import read_dispatch_events, read_trace, write_trace

    for line in [p.choice.line, *(f"warning: {w}" for w in p.choice.warnings)]:
        log(line)
    for note in reference_price_notes(p.sources):
        log(f"price: {note}")
    fleet, workloads = p.resolved.fleet, list(p.resolved.workloads.workloads)
    if generate:
        tr = generate_trace(workloads, fleet, p.demand.to_numpy(), requests=requests, seed=seed, origin=p.horizon.start)
        if trace is not None:
            write_trace(tr, trace)
    elif trace is None:
        raise InputError("give `trace` FILE, or `generate` to make a synthetic trace", mentions=("trace", "generate"))
    else:
        tr = read_trace(trace, [w.id for w in workloads])
    evs = read_dispatch_events(events, [s.id for s in fleet.substrates], tr.origin) if events else None
    return simulate_dispatch(fleet, workloads, tr, evs, mode=mode, seed=seed, window_hours=window_hours)  # type: ignore[arg-type]


def plan_horizon(doc: PlanDocument, horizon: str | None, as_of: datetime | None) -> Horizon:
    """The horizon a replay of ``doc`` uses: the plan's own (``horizon``/``as_of``, when given, must be the plan's)."""
    from finops_cli.core.demand import Horizon
    from finops_cli.estate.priced import as_of_instant
    from finops_cli.sim.dispatch.replay import PlanMismatch

    start = datetime.fromisoformat(doc.horizon.start.replace("Z", "+00:00"))
    hz = Horizon(start, doc.horizon.hours)
    if horizon:
        given = Horizon.parse(horizon)
        if (given.start, given.hours) != (hz.start, hz.hours):
            raise PlanMismatch(
                f"{horizon}: the plan covers {hz.start:%Y-%m-%dT%H:%MZ} + {hz.hours} h; drop `horizon` "
                "(a replay uses the plan's)",
                param="horizon",
            )
    if as_of is not None and doc.as_of is not None and as_of_instant(as_of) != as_of_instant(doc.as_of):
        raise PlanMismatch(
            f"{as_of_instant(as_of):%Y-%m-%dT%H:%M:%SZ}: the plan was made as of "
            f"{as_of_instant(doc.as_of):%Y-%m-%dT%H:%M:%SZ}; drop `as_of` (a replay uses the plan's)",
            param="as_of",
        )
    return hz


def _check_plan_of(doc: PlanDocument, p: PricedEstate) -> None:
    """Raise unless ``doc`` is the plan of ``p`` (priced for the plan's horizon): the same fleet and prices
    (:func:`~finops_cli.sim.dispatch.replay.check_plan_matches`) and the same demand."""
    from finops_cli.sim.dispatch.replay import PlanMismatch, check_plan_matches

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


def replay_priced(
    doc: PlanDocument,
    p: PricedEstate,
    schedule: str | Path | pd.DataFrame | None,
    *,
    seeds: int,
    seed: int,
    log: Callable[[str], None],
) -> PlanReplay:
    """Replay ``doc`` on ``p`` (priced for the plan's horizon) once it is known to be this estate's plan."""
    from finops_cli.planner.schedule import read_schedule
    from finops_cli.sim.dispatch.replay import replay_plan

    _check_plan_of(doc, p)
    sched = read_schedule(schedule) if isinstance(schedule, str | Path) else schedule
    log(f"replaying the plan: {p.horizon.start:%Y-%m-%dT%H:%MZ} + {p.horizon.hours} h (the plan's horizon)")
    return replay_plan(doc, p.resolved.fleet, list(p.resolved.workloads.workloads), sched, seeds=seeds, seed=seed)

"""Estate checks beyond the pydantic models, run before any math: each returns its warnings (one line naming the
file and field; ``strict`` makes them an :class:`InputError`); a problem nothing downstream could run with raises.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from finops_cli.core.compliance import gate
from finops_cli.errors import InputError
from finops_cli.estate.load import Estate, load_estate, load_fleet
from finops_cli.estate.prices import resolve_price_ref
from finops_cli.estate.profiles import parse_profile, profile_path
from finops_cli.schema.estate import Workloads

if TYPE_CHECKING:
    from finops_cli.core.demand import Horizon


def _emit(warnings: list[str], strict: bool) -> list[str]:
    if strict and warnings:
        raise InputError("\n".join(warnings))
    return warnings


def _names(estate: Estate) -> tuple[str, str]:
    fleet = estate.fleet_path or "fleet.yaml"
    workloads = estate.workloads_path or estate.base_dir / "workloads.yaml"
    return str(fleet), str(workloads)


def check_throughput_accelerators(estate: Estate, strict: bool = False) -> list[str]:
    """A throughput for an accelerator no substrate has is probably a typo (``H10O``): warn."""
    have = {s.accelerator for s in estate.fleet.substrates if s.accelerator}
    _, wfile = _names(estate)
    out = []
    for i, w in enumerate(estate.workloads.workloads):
        for acc in w.throughput:
            if acc not in have:
                out.append(
                    f"{wfile}: workloads[{i}].throughput.{acc}: no substrate has accelerator {acc} "
                    f"(fleet has {', '.join(sorted(have)) or 'none'})"
                )
    return _emit(out, strict)


def check_reserved_capacity(estate: Estate, strict: bool = False) -> list[str]:
    """A reserved substrate with no capacity and nothing purchasable can never serve anything."""
    ffile, _ = _names(estate)
    out = []
    for i, s in enumerate(estate.fleet.substrates):
        if s.kind != "reserved":
            continue
        can_buy = s.purchasable is not None and s.purchasable.max_blocks > 0
        if not s.gpus and not can_buy:
            out.append(f"{ffile}: substrates[{i}] ({s.id}): reserved with gpus 0 and no purchasable block to buy")
    return _emit(out, strict)


def check_spot_rates(estate: Estate, strict: bool = False) -> list[str]:
    """A zero spot rate (spot never reclaimed) is suspicious, as is a rate measured from too few preemptions: warn."""
    ffile, _ = _names(estate)
    out = []
    for i, s in enumerate(estate.fleet.substrates):
        if s.kind == "spot" and s.interruptions_per_hour == 0:
            out.append(
                f"{ffile}: substrates[{i}].interruptions_per_hour: 0 means spot is never reclaimed; "
                "use an observed rate (finops netc --trace) or a conservative guess"
            )
    out += [f"{ffile}: {r.note()}" for r in estate.rates if r.estimate.too_small]
    return _emit(out, strict)


def check_price_refs(estate: Estate, strict: bool = False) -> list[str]:
    """Every ``price_ref`` names a pricebook row of the right kind (raises otherwise)."""
    ffile, _ = _names(estate)
    for i, s in enumerate(estate.fleet.substrates):
        if s.price_ref is not None:
            try:
                resolve_price_ref(s)
            except InputError as exc:
                raise InputError(f"{ffile}: substrates[{i}].price_ref: {exc}") from None
    return []


def check_demand_sources(estate: Estate, strict: bool = False) -> list[str]:
    """Every profile CSV exists and parses (raises naming the file and line); ``from_store`` needs a store."""
    _, wfile = _names(estate)
    out = []
    for i, w in enumerate(estate.workloads.workloads):
        if w.demand.profile is not None:
            parse_profile(profile_path(estate, w))
        elif w.demand.from_store is not None:
            out.append(f"{wfile}: workloads[{i}].demand.from_store: resolved from the store at plan time (not checked)")
    return _emit(out, strict)


def check_compliance(estate: Estate, strict: bool = False) -> list[str]:
    """Every workload has at least one compliant destination (raises exit 3 naming each exclusion)."""
    for w in estate.workloads.workloads:
        gate(w, estate.fleet).require_any()
    return []


CHECKS = (
    check_price_refs,
    check_spot_rates,
    check_reserved_capacity,
    check_throughput_accelerators,
    check_demand_sources,
    check_compliance,
)


def check_estate(estate: Estate, strict: bool = False) -> list[str]:
    """Run every check; return all warnings (raise on the first hard problem)."""
    warnings: list[str] = []
    for check in CHECKS:
        warnings.extend(check(estate, strict))
    return warnings


def check_files(fleet: str | Path, workloads: str | Path | None, strict: bool = False) -> list[str]:
    """``finops validate``: load and check the estate; a fleet on its own gets the checks that need no workloads."""
    if workloads is not None:
        return check_estate(load_estate(fleet, workloads), strict)
    placeholder = Workloads.model_validate(
        {"version": 1, "workloads": [{"id": "-", "unit": "-", "demand": {"total": 0}}]}
    )
    est = Estate(load_fleet(fleet), placeholder, Path(fleet).parent, fleet_path=Path(fleet))
    return [w for check in (check_price_refs, check_spot_rates, check_reserved_capacity) for w in check(est, strict)]


def check_profile_coverage(estate: Estate, horizon: Horizon, strict: bool = False) -> list[str]:
    """A timestamped profile with no rows inside the horizon means zero demand there: warn, naming both."""
    import pandas as pd

    from finops_cli.estate.demand_io import read_profile

    _, wfile = _names(estate)
    out = []
    for i, w in enumerate(estate.workloads.workloads):
        if w.demand.profile is None:
            continue
        path = profile_path(estate, w)
        hours = read_profile(path)["hour"]
        if hours.empty or pd.api.types.is_numeric_dtype(hours):
            continue  # integer offsets repeat over any horizon
        idx = horizon.hour_index(hours)
        inside = int(((idx >= 0) & (idx < horizon.hours)).sum())
        if inside == 0:
            out.append(
                f"{wfile}: workloads[{i}].demand.profile: {path} covers {hours.min():%Y-%m-%d %H:%M} to "
                f"{hours.max():%Y-%m-%d %H:%M} UTC, nothing inside the horizon "
                f"{horizon.start:%Y-%m-%d %H:%M} + {horizon.hours} h: its demand there is 0"
            )
    return _emit(out, strict)

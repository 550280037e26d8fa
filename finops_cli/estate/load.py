"""Load ``fleet.yaml`` / ``workloads.yaml``; every error names the file and the field path."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from finops_cli.atomic import note_input
from finops_cli.errors import InputError
from finops_cli.estate.rates import RateSource, resolve_rates
from finops_cli.files import read_yaml_positions
from finops_cli.schema.errors import format_validation_error
from finops_cli.schema.estate import Fleet, Workloads

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Estate:
    """A validated fleet and its workloads; ``base_dir`` resolves relative paths (demand profiles)."""

    fleet: Fleet
    workloads: Workloads
    base_dir: Path
    fleet_path: Path | None = None  # for messages that name the file
    workloads_path: Path | None = None
    rates: list[RateSource] = field(default_factory=list)  # spot λ measured from traces (interruption.trace)


def load_model(path: Path | str, model: type[M]) -> M:
    path = Path(path)
    data, positions = read_yaml_positions(path)
    if not isinstance(data, dict):
        raise InputError("expected a YAML mapping at the top level", path=path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(format_validation_error(path, exc, positions)) from None


def load_fleet_rates(path: Path | str) -> tuple[Fleet, list[RateSource]]:
    """The fleet with spot rates measured from traces resolved, and where each came from."""
    return resolve_rates(load_model(path, Fleet), path)


def load_fleet(path: Path | str) -> Fleet:
    return load_fleet_rates(path)[0]


def load_workloads(path: Path | str) -> Workloads:
    workloads = load_model(path, Workloads)
    for w in workloads.workloads:  # inputs of the command even if it never reads them: no --out may replace them
        if w.demand.profile is not None:
            profile = Path(w.demand.profile)
            note_input(profile if profile.is_absolute() else Path(path).parent / profile)
    return workloads


def load_estate(fleet_path: Path | str, workloads_path: Path | str) -> Estate:
    fleet, rates = load_fleet_rates(fleet_path)
    return Estate(
        fleet,
        load_workloads(workloads_path),
        Path(workloads_path).parent,
        fleet_path=Path(fleet_path),
        workloads_path=Path(workloads_path),
        rates=rates,
    )

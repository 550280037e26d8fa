"""Spot preemption rates measured from traces (``interruption: {trace: FILE}`` in ``fleet.yaml``) when the fleet is
loaded, so every command prices the pool at the measured rate; each :class:`RateSource` keeps what λ̂ rests on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from finops_cli.errors import InputError

if TYPE_CHECKING:
    from finops_cli.core.netc import RateEstimate
    from finops_cli.schema.estate import Fleet


@dataclass(frozen=True)
class RateSource:
    """λ of one spot substrate, measured from ``trace``."""

    substrate: str
    trace: str
    estimate: RateEstimate

    def note(self) -> str:
        """``aws-p5-spot: λ measured from trace t.json: 12 preemptions in … hours …, 95 % interval …``."""
        return f"{self.substrate}: λ measured from trace {self.trace}: {self.estimate.describe()}"


def resolve_rates(fleet: Fleet, fleet_path: Path | str) -> tuple[Fleet, list[RateSource]]:
    """``fleet`` with every ``interruption.trace`` (relative to ``fleet_path``) turned into
    ``interruptions_per_hour``; a missing or malformed trace is an :class:`InputError` naming the field."""
    if not any(s.interruption is not None for s in fleet.substrates):
        return fleet, []
    from finops_cli.estate.traces import read_trace  # numpy and pandas only for a fleet that names a trace

    base = Path(fleet_path).parent
    substrates, sources = [], []
    for i, s in enumerate(fleet.substrates):
        if s.interruption is None:
            substrates.append(s)
            continue
        path = base / s.interruption.trace
        try:
            trace = read_trace(path, s.interruption.nodes)
        except InputError as exc:
            raise InputError(str(exc), path=fleet_path, where=f"substrates[{i}].interruption.trace") from None
        lam = trace.rate.preemptions_per_hour
        substrates.append(s.model_copy(update={"interruptions_per_hour": lam, "interruption": None}))
        sources.append(RateSource(s.id, s.interruption.trace, trace.rate))
    return fleet.model_copy(update={"substrates": substrates}), sources

"""The compliance gate, run before anything is priced so no price can buy a non-compliant destination: every rule
must pass (jurisdiction, provider allow-list, isolation, status, accelerator throughput or an API's unit)."""

from __future__ import annotations

from dataclasses import dataclass, field

from finops_cli.errors import InfeasibleError
from finops_cli.schema.estate import Fleet, Substrate, Workload


def exclusion_reasons(workload: Workload, substrate: Substrate) -> list[str]:
    """Every reason ``workload`` may not run on ``substrate``; empty means compliant."""
    reasons: list[str] = []
    req = workload.requires
    if req.jurisdictions is not None and substrate.jurisdiction not in req.jurisdictions:
        reasons.append(f"jurisdiction {substrate.jurisdiction} not in {req.jurisdictions}")
    if req.providers is not None and substrate.provider not in req.providers:
        reasons.append(f"provider {substrate.provider} not in allow-list {req.providers}")
    if req.isolation == "dedicated" and substrate.isolation != "dedicated":
        reasons.append(f"isolation {substrate.isolation}, workload requires dedicated")
    if substrate.status == "down":
        reasons.append("status down")
    if substrate.kind == "api":
        if workload.unit not in (substrate.price_per_unit or {}):
            reasons.append(f"unit {workload.unit} not served")
    elif substrate.accelerator not in workload.throughput:
        reasons.append(f"accelerator {substrate.accelerator} not supported (no throughput)")
    return reasons


@dataclass(frozen=True)
class GateResult:
    """One workload's destinations split into compliant substrates and exclusions with reasons."""

    workload: Workload
    compliant: list[Substrate]
    excluded: dict[str, list[str]] = field(default_factory=dict)

    def require_any(self) -> GateResult:
        """Raise :class:`NoCompliantDestination` (exit 3) when nothing is compliant."""
        if not self.compliant:
            raise NoCompliantDestination(self.workload.id, self.excluded)
        return self


class NoCompliantDestination(InfeasibleError):
    def __init__(self, workload_id: str, excluded: dict[str, list[str]]) -> None:
        self.workload_id = workload_id
        self.excluded = excluded
        detail = "; ".join(f"{sid}: {', '.join(r)}" for sid, r in excluded.items()) or "the fleet is empty"
        super().__init__(f"workload {workload_id}: no compliant destination ({detail})")


def gate(workload: Workload, fleet: Fleet) -> GateResult:
    """Split ``fleet``'s substrates for ``workload``; pure, order-preserving."""
    compliant: list[Substrate] = []
    excluded: dict[str, list[str]] = {}
    for s in fleet.substrates:
        reasons = exclusion_reasons(workload, s)
        if reasons:
            excluded[s.id] = reasons
        else:
            compliant.append(s)
    return GateResult(workload, compliant, excluded)

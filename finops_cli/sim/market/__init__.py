"""The continuous-renegotiation market simulator: one policy per module, a shared :class:`Policy` base.

``fcfs`` (allocations fixed for life), ``spot`` (the cloud spot class), ``fcfs-preempt`` (a value-aware
preemptive oracle), ``on-demand`` (no contention) and
``renegotiate`` (LaissezCloud). :func:`simulate_market` runs one or all of them on a scenario.
"""

from __future__ import annotations

from finops_cli.errors import InputError
from finops_cli.sim.market.base import Policy
from finops_cli.sim.market.fcfs import FCFS
from finops_cli.sim.market.fcfs_preempt import FCFSPreempt
from finops_cli.sim.market.on_demand import OnDemand
from finops_cli.sim.market.renegotiate import Renegotiate
from finops_cli.sim.market.results import PolicyResult, TenantResult
from finops_cli.sim.market.scenario import AcceleratorPool, MarketOptions, Scenario, Tenant
from finops_cli.sim.market.spot import Spot

#: Registry: policy name → class (``all`` runs them in this order).
POLICIES: dict[str, type[Policy]] = {p.name: p for p in (FCFS, FCFSPreempt, Spot, OnDemand, Renegotiate)}


def simulate_market(
    scenario: Scenario, policy: str = "renegotiate", *, log_events: bool = True, horizon_hours: float | None = None
) -> list[PolicyResult]:
    """Run ``policy`` (a name from :data:`POLICIES`, or ``all``) on ``scenario``; one result per policy."""
    if policy != "all" and policy not in POLICIES:
        raise InputError(f"{policy!r}: expected one of {', '.join([*POLICIES, 'all'])}", param="policy")
    names = list(POLICIES) if policy == "all" else [policy]
    return [POLICIES[n](scenario, log_events=log_events, horizon_hours=horizon_hours).run() for n in names]


__all__ = [
    "POLICIES",
    "AcceleratorPool",
    "MarketOptions",
    "Policy",
    "PolicyResult",
    "Scenario",
    "Tenant",
    "TenantResult",
    "simulate_market",
]

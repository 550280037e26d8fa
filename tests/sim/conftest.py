"""Helpers shared by the market simulator tests."""

from __future__ import annotations

from pathlib import Path

from finops_cli.sim.market import PolicyResult, Scenario, TenantResult, simulate_market

MARKET_SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "market" / "laissezcloud_two_tenants.yaml"


def run_market(sc: Scenario, policy: str) -> tuple[PolicyResult, dict[str, TenantResult]]:
    """One policy's result and its tenants by id."""
    (result,) = simulate_market(sc, policy)
    return result, {t.tenant: t for t in result.tenants}


def market_events(result: PolicyResult, kind: str, tenant: str | None = None) -> list[dict]:
    """The events of one type (and tenant), in order."""
    return [e for e in result.events if e["type"] == kind and (tenant is None or e["tenant"] == tenant)]


def market_scenario(accelerators: list[dict], tenants: list[dict], **options: object) -> Scenario:
    return Scenario.model_validate({"version": 1, "accelerators": accelerators, "tenants": tenants, "options": options})

"""The compliance gate: every exclusion has a reason; no compliant set raises exit-code-3 errors."""

from __future__ import annotations

import pytest

from finops_cli.core.compliance import NoCompliantDestination, gate
from finops_cli.schema.estate import Fleet, Workload


def _fleet() -> Fleet:
    return Fleet.model_validate(
        {
            "version": 1,
            "substrates": [
                {
                    "id": "us",
                    "provider": "aws",
                    "kind": "on_demand",
                    "accelerator": "H100",
                    "jurisdiction": "US",
                    "price_per_gpu_hour": 4.0,
                },
                {
                    "id": "eu",
                    "provider": "gcp",
                    "kind": "on_demand",
                    "accelerator": "H100",
                    "jurisdiction": "EU",
                    "price_per_gpu_hour": 4.0,
                },
                {
                    "id": "shared",
                    "provider": "aws",
                    "kind": "on_demand",
                    "accelerator": "H100",
                    "jurisdiction": "US",
                    "isolation": "shared",
                    "price_per_gpu_hour": 4.0,
                },
                {
                    "id": "down",
                    "provider": "aws",
                    "kind": "on_demand",
                    "accelerator": "H100",
                    "jurisdiction": "US",
                    "status": "down",
                    "price_per_gpu_hour": 4.0,
                },
                {
                    "id": "api",
                    "provider": "anthropic",
                    "kind": "api",
                    "jurisdiction": "US",
                    "isolation": "shared",
                    "price_per_unit": {"Mtokens": 15.0},
                },
            ],
        }
    )


def _workload(**kw: object) -> Workload:
    base = {"id": "w", "unit": "h100_hours", "demand": {"total": 1}, "throughput": {"H100": 1.0}}
    return Workload.model_validate(base | kw)


def test_reasons_per_rule() -> None:
    w = _workload(requires={"jurisdictions": ["US"], "providers": ["aws"], "isolation": "dedicated"})
    g = gate(w, _fleet())
    assert [s.id for s in g.compliant] == ["us"]
    assert "jurisdiction EU" in g.excluded["eu"][0]
    assert any("provider gcp" in r for r in g.excluded["eu"])
    assert g.excluded["shared"] == ["isolation shared, workload requires dedicated"]
    assert g.excluded["down"] == ["status down"]
    assert any("unit h100_hours not served" in r for r in g.excluded["api"])


def test_api_serves_its_units() -> None:
    g = gate(_workload(unit="Mtokens", throughput={"H100": 40.0}), _fleet())
    assert "api" in [s.id for s in g.compliant]


def test_empty_set_raises_with_every_reason() -> None:
    w = _workload(requires={"jurisdictions": ["JP"]})
    with pytest.raises(NoCompliantDestination) as info:
        gate(w, _fleet()).require_any()
    assert info.value.exit_code == 3
    msg = str(info.value)
    assert "workload w" in msg and "us: jurisdiction US" in msg and "down:" in msg

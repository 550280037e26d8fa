"""Estate checks before any math: warnings, hard errors naming file and field, and the sample estate."""

from __future__ import annotations

from pathlib import Path

import pytest

from finops_cli.core.compliance import NoCompliantDestination
from finops_cli.errors import InputError
from finops_cli.estate.checks import check_estate, check_reserved_capacity, check_throughput_accelerators
from finops_cli.estate.load import load_estate
from tests.conftest import SAMPLES

FLEET = """\
version: 1
substrates:
  - {id: od, provider: aws, kind: on_demand, accelerator: H100, jurisdiction: US, price_per_gpu_hour: 4.0}
  - {id: res, provider: cw, kind: reserved, accelerator: H100, jurisdiction: US, gpus: 0,
     purchasable: {block_gpus: 8, price_per_gpu_hour: 2, max_blocks: 0}}
"""
WORKLOADS = """\
version: 1
workloads:
  - {id: w, unit: h, demand: {total: 5}, throughput: {H100: 1, H10O: 2}}
"""


def _estate(tmp_path: Path, fleet: str = FLEET, workloads: str = WORKLOADS):  # type: ignore[no-untyped-def]
    (tmp_path / "fleet.yaml").write_text(fleet)
    (tmp_path / "workloads.yaml").write_text(workloads)
    return load_estate(tmp_path / "fleet.yaml", tmp_path / "workloads.yaml")


def test_sample_estate_is_clean() -> None:
    estate = load_estate(SAMPLES / "fleet.yaml", SAMPLES / "workloads.yaml")
    assert check_estate(estate, strict=True) == []
    kinds = {s.kind for s in estate.fleet.substrates}
    assert kinds == {"owned", "reserved", "on_demand", "spot", "api"} and len(estate.fleet.substrates) >= 12
    assert {w.slo for w in estate.workloads.workloads} == {"latency_critical", "standard", "offline"}
    assert len(estate.workloads.workloads) >= 8


def test_sample_fleet_matches_company_resources() -> None:
    from samples.company import RESOURCES

    kind = {"Dynamic": "spot", "Committed": "reserved", "Other": "owned", "Standard": "on_demand"}
    fleet = load_estate(SAMPLES / "fleet.yaml", SAMPLES / "workloads.yaml").fleet
    ids = {w.id for w in load_estate(SAMPLES / "fleet.yaml", SAMPLES / "workloads.yaml").workloads.workloads}
    for r in RESOURCES:
        s = fleet.substrate(r.substrate)
        assert (s.provider, s.region, s.instance_type, s.kind, s.accelerator) == (
            r.provider, r.region, r.instance_type, kind[r.pricing], r.accelerator
        )  # fmt: skip
        assert r.workload in ids


def test_unknown_accelerator_in_throughput_warns(tmp_path: Path) -> None:
    estate = _estate(tmp_path)
    (msg,) = check_throughput_accelerators(estate)
    assert "workloads.yaml: workloads[0].throughput.H10O: no substrate has accelerator H10O" in msg
    with pytest.raises(InputError, match="H10O"):
        check_throughput_accelerators(estate, strict=True)


def test_reserved_without_capacity_or_blocks_warns(tmp_path: Path) -> None:
    (msg,) = check_reserved_capacity(_estate(tmp_path))
    assert "fleet.yaml: substrates[1] (res): reserved with gpus 0 and no purchasable block" in msg


def test_bad_profile_and_price_ref_are_errors(tmp_path: Path) -> None:
    bad_ref = FLEET.replace("price_per_gpu_hour: 4.0}", "price_ref: aws/p5/ondemand}")
    with pytest.raises(InputError, match=r"fleet.yaml: substrates\[0\].price_ref: price_ref 'aws/p5/ondemand'"):
        check_estate(_estate(tmp_path, fleet=bad_ref))
    profile = WORKLOADS.replace("demand: {total: 5}", "demand: {profile: missing.csv}")
    with pytest.raises(InputError, match=r"missing.csv: demand profile not found"):
        check_estate(_estate(tmp_path, workloads=profile))


def test_no_compliant_destination_is_exit_3(tmp_path: Path) -> None:
    wl = WORKLOADS.replace("throughput:", "requires: {jurisdictions: [EU]}, throughput:")
    with pytest.raises(NoCompliantDestination) as info:
        check_estate(_estate(tmp_path, workloads=wl))
    assert info.value.exit_code == 3 and "od: jurisdiction US not in ['EU']" in str(info.value)

"""Estate files: typed models, field-path errors, unknown keys rejected."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from finops_cli.errors import InputError
from finops_cli.estate.load import load_fleet, load_workloads

FLEET = """\
version: 1
currency: USD
substrates:
  - {id: onprem, provider: onprem, kind: owned, accelerator: H100, jurisdiction: US, gpus: 8, price_per_gpu_hour: 0.35}
  - {id: spot, provider: aws, kind: spot, accelerator: H100, jurisdiction: US, gpus: 8, price_per_gpu_hour: 3.9,
     interruptions_per_hour: 0.02, resume_minutes: 6}
  - {id: api, provider: anthropic, kind: api, jurisdiction: US, isolation: shared, price_per_unit: {Mtokens: 15.0}}
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_valid_fleet_loads(tmp_path: Path) -> None:
    fleet = load_fleet(_write(tmp_path, "fleet.yaml", FLEET))
    assert [s.kind for s in fleet.substrates] == ["owned", "spot", "api"]
    assert fleet.substrate("spot").interruptions_per_hour == 0.02


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ("gpus: 8, price_per_gpu_hour: 0.35}", "substrates[0].gpus: must be >= 0"),
        ("accelerator: H100, jurisdiction: US, gpus: 8, price", "substrates[0].gpu: unknown key"),
    ],
)
def test_errors_name_file_and_field(tmp_path: Path, edit: str, expected: str) -> None:
    bad = FLEET
    if "must be" in expected:
        bad = FLEET.replace("gpus: 8, price_per_gpu_hour: 0.35}", "gpus: -1, price_per_gpu_hour: 0.35}")
    else:
        bad = FLEET.replace(
            "jurisdiction: US, gpus: 8, price_per_gpu_hour: 0.35",
            "jurisdiction: US, gpu: 8, price_per_gpu_hour: 0.35",
        )
    path = _write(tmp_path, "fleet.yaml", bad)
    with pytest.raises(InputError) as info:
        load_fleet(path)
    assert re.search(rf"fleet\.yaml: line \d+, column \d+: {re.escape(expected)}", str(info.value))


def test_duplicate_ids_and_spot_without_rate(tmp_path: Path) -> None:
    bad = FLEET.replace("id: spot", "id: onprem").replace("interruptions_per_hour: 0.02, ", "")
    with pytest.raises(InputError) as info:
        load_fleet(_write(tmp_path, "fleet.yaml", bad))
    assert "spot substrate needs interruptions_per_hour" in str(info.value)


def test_invalid_yaml_names_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"w.yaml: line \d+"):
        load_workloads(_write(tmp_path, "w.yaml", "version: 1\nworkloads: [\n  - {id: a\n"))


def test_workload_demand_needs_exactly_one_source(tmp_path: Path) -> None:
    text = "version: 1\nworkloads:\n  - {id: a, unit: h, demand: {total: 5, profile: x.csv}, throughput: {H100: 1}}\n"
    with pytest.raises(InputError, match=r"workloads\[0\].demand: give exactly one"):
        load_workloads(_write(tmp_path, "w.yaml", text))

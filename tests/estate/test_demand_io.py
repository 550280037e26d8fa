"""Profile CSVs next to workloads.yaml: clean errors naming file and line; estate_demand_sources shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from finops_cli.core.demand import Horizon
from finops_cli.errors import InputError
from finops_cli.estate.demand_io import estate_demand_sources, read_profile
from finops_cli.estate.load import load_estate
from finops_cli.estate.profiles import parse_profile

FLEET = """\
version: 1
substrates:
  - {id: od, provider: aws, kind: on_demand, accelerator: H100, jurisdiction: US, price_per_gpu_hour: 4.0}
"""
WORKLOADS = """\
version: 1
workloads:
  - {id: flat, unit: h100_hours, demand: {total: 48}, throughput: {H100: 1}}
  - {id: daily, unit: Mtokens, demand: {profile: demand/daily.csv}, throughput: {H100: 40}}
"""


def _estate(tmp_path: Path, profile: str) -> Path:
    (tmp_path / "demand").mkdir()
    (tmp_path / "demand" / "daily.csv").write_text(profile)
    (tmp_path / "fleet.yaml").write_text(FLEET)
    (tmp_path / "workloads.yaml").write_text(WORKLOADS)
    return tmp_path


def test_estate_demand_reads_profiles_relative_to_workloads_yaml(tmp_path: Path) -> None:
    d = _estate(tmp_path, "hour,units\n0,10\n1,20\n")
    frame = estate_demand_sources(load_estate(d / "fleet.yaml", d / "workloads.yaml"), Horizon.parse("2026-10-01:4"))[0]
    assert frame["flat"].tolist() == [12.0] * 4
    assert frame["daily"].tolist() == [10.0, 20.0, 10.0, 20.0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hour,units\n0,10\n1,abc\n", "daily.csv: line 3: units: expected a number >= 0, got 'abc'"),
        ("hour,units\n0,-1\n", "daily.csv: line 2: units: expected a number >= 0"),
        ("hour,units\n0,1\nnoon,2\n", "daily.csv: line 3: hour: expected an integer >= 0 or an ISO timestamp"),
        ("h,units\n0,1\n", "daily.csv: missing column(s) ['hour']"),
        ("", "daily.csv: cannot read demand profile"),
    ],
)
def test_bad_profile_names_file_and_line(tmp_path: Path, text: str, expected: str) -> None:
    d = _estate(tmp_path, text)
    with pytest.raises(InputError) as info:
        read_profile(d / "demand" / "daily.csv")
    assert expected in str(info.value)


def test_missing_profile_names_the_file(tmp_path: Path) -> None:
    d = _estate(tmp_path, "hour,units\n0,1\n")
    (d / "demand" / "daily.csv").unlink()
    with pytest.raises(InputError, match=r"daily.csv: demand profile not found"):
        estate_demand_sources(load_estate(d / "fleet.yaml", d / "workloads.yaml"), Horizon.parse("2026-10-01:4"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hour,units\n0,1,9\n", "daily.csv: line 2: cannot read demand profile (expected 2 fields, saw 3)"),
        ("hour,units,hour\n0,1,2\n", "daily.csv: cannot read demand profile (column(s) ['hour'] appear twice"),
        ("hour,units\n0,1_000\n", "daily.csv: line 2: units: expected a number >= 0, got '1_000'"),
        ("hour,units\n0,inf\n", "daily.csv: line 2: units: expected a number >= 0, got 'inf'"),
        ("hour,units\n0,nan\n", "daily.csv: line 2: units: expected a number >= 0, got 'nan'"),
        ("hour,units\n0.5,1\n", "daily.csv: line 2: hour: expected an integer >= 0"),
        ("hour,units\n2026-10-01T00:00Z,1\n3,1\n", "daily.csv: line 3: hour: expected an integer >= 0"),
        ("\n\n", "daily.csv: cannot read demand profile (the file is empty"),
    ],
)
def test_more_bad_profiles_name_file_and_line(tmp_path: Path, text: str, expected: str) -> None:
    d = _estate(tmp_path, text)
    with pytest.raises(InputError) as info:
        read_profile(d / "demand" / "daily.csv")
    assert expected in str(info.value)


def test_profile_reader_accepts_what_pandas_did(tmp_path: Path) -> None:
    # BOM, spaces after commas, a short row (empty units refused), blank lines, offsets and naive timestamps as UTC
    d = _estate(tmp_path, "\ufeffhour, units\n\n0, 10\n1,2.5e1\n")
    frame = read_profile(d / "demand" / "daily.csv")
    assert frame["hour"].dtype == "int64" and frame["units"].tolist() == [10.0, 25.0]
    (d / "demand" / "daily.csv").write_text(
        "hour,units\n2026-10-01T00:00:00Z,1\n2026-10-01 01:00,2\n2026-10-01T04:00+02:00,3\n"
    )
    frame = read_profile(d / "demand" / "daily.csv")
    assert str(frame["hour"].dtype) == "datetime64[us, UTC]"
    assert [t.hour for t in frame["hour"]] == [0, 1, 2]
    assert parse_profile(d / "demand" / "daily.csv").timestamped

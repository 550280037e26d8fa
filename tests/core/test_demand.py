"""Hourly demand from total / profile / observed GPU-hours, checked by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from finops_cli.core.demand import Horizon, demand_frame, observed_demand, profile_demand, workload_demand
from finops_cli.errors import InputError
from finops_cli.schema.estate import Workload


def _w(**demand: object) -> Workload:
    return Workload.model_validate(
        {"id": "w", "unit": "h100_hours", "demand": demand, "throughput": {"H100": 1.0, "A100": 0.5}}
    )


def test_month_horizon_and_parse() -> None:
    assert Horizon.month("2026-10").hours == 744
    assert Horizon.month("2026-12").hours == 744
    assert Horizon.month("2026-02").hours == 672
    h = Horizon.parse("2026-10-01T06:00:24")
    assert (h.start.hour, h.hours) == (6, 24)
    with pytest.raises(InputError, match="expected YYYY-MM"):
        Horizon.parse("October")


def test_total_spreads_evenly() -> None:
    d = workload_demand(_w(total=744.0), Horizon.month("2026-10"))
    assert d.shape == (744,) and np.allclose(d, 1.0)


def test_integer_profile_repeats_its_period() -> None:
    prof = pd.DataFrame({"hour": [0, 1, 2], "units": [1.0, 2.0, 3.0]})
    assert profile_demand(prof, Horizon.parse("2026-10-01:7")).tolist() == [1, 2, 3, 1, 2, 3, 1]


def test_timestamp_profile_aligns_and_sums_within_an_hour() -> None:
    prof = pd.DataFrame(
        {
            "hour": pd.to_datetime(["2026-10-01T01:10Z", "2026-10-01T01:50Z", "2026-09-30T23:00Z"], utc=True),
            "units": [1.0, 2.0, 9.0],
        }
    )
    assert profile_demand(prof, Horizon.parse("2026-10-01:3")).tolist() == [0, 3, 0]


def test_observed_gpu_hours_converted_with_throughput() -> None:
    obs = pd.DataFrame(
        {
            "timestamp": pd.to_datetime(["2026-10-01T00:00Z", "2026-10-01T00:30Z", "2026-10-01T01:00Z"], utc=True),
            "gpu_hours": [2.0, 4.0, 8.0],
            "accelerator": ["H100", "A100", "L4"],  # L4: no throughput -> reference (H100: 1.0)
        }
    )
    w = _w(from_store={"tag": "team", "value": "research"})
    assert observed_demand(w, obs, Horizon.parse("2026-10-01:2")).tolist() == [2 + 4 * 0.5, 8.0]


def test_demand_frame_has_one_column_per_workload() -> None:
    a, b = _w(total=10.0), _w(total=20.0).model_copy(update={"id": "b"})
    frame = demand_frame([a, b], Horizon.parse("2026-10-01:10"))
    assert list(frame.columns) == ["w", "b"] and frame.sum().tolist() == pytest.approx([10.0, 20.0])

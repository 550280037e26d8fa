"""Time-weighted price statistics, checked by hand on small series."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from finops_cli.report.prices import NoPriceData, price_table, weighted_quantile
from tests.price_statistic import price_statistic


def _rows(zone: str, events: list[tuple[str, float]], gpus: int = 8, itype: str = "p5.48xlarge") -> list[dict]:
    return [
        {
            "provider": "aws",
            "region": zone[:-1],
            "zone": zone,
            "instance_type": itype,
            "product_description": "Linux/UNIX",
            "price_kind": "spot",
            "timestamp": pd.Timestamp(ts, tz="UTC"),
            "usd_per_instance_hour": price,
            "gpus": gpus,
            "accelerator": "H100",
            "usd_per_gpu_hour": price / gpus,
        }
        for ts, price in events
    ]


# 10 for 6 h, 20 for 2 h, 12 for 0 h (the last event ends the window): mean = (60+40)/8 = 12.5
SERIES = _rows("us-east-1a", [("2026-10-01T00:00", 10.0), ("2026-10-01T06:00", 20.0), ("2026-10-01T08:00", 12.0)])


def test_time_weighted_mean_by_hand() -> None:
    df = pd.DataFrame(SERIES)
    assert price_statistic(df, "aws", "us-east-1", "p5.48xlarge", "mean") == pytest.approx(12.5)
    # a plain mean of events would be 14.0: the time weighting matters
    assert df["usd_per_instance_hour"].mean() == pytest.approx(14.0)


def test_quantiles_latest_min_max_by_hand() -> None:
    df = pd.DataFrame(SERIES)
    # 75 % of the time the price was 10, so p50 = 10 and p90 = 20
    assert price_statistic(df, "aws", "us-east-1", "p5.48xlarge", "p50") == 10.0
    assert price_statistic(df, "aws", "us-east-1", "p5.48xlarge", "p90") == 20.0
    assert price_statistic(df, "aws", "us-east-1", "p5.48xlarge", "latest") == 12.0
    assert price_statistic(df, "aws", "us-east-1a", "p5.48xlarge", "max") == 20.0
    assert price_statistic(df, "aws", "us-east-1", "p5.48xlarge", "mean", per="gpu_hour") == pytest.approx(12.5 / 8)


def test_window_clips_the_price_in_effect_at_start() -> None:
    df = pd.DataFrame(SERIES)
    end = datetime(2026, 10, 1, 8, tzinfo=UTC)
    # window of 4 h: 10 for 2 h (from 04:00, carried in), 20 for 2 h -> mean 15
    assert price_statistic(df, "aws", "us-east-1", "p5.48xlarge", "mean", window_days=4 / 24, end=end) == 15.0


def test_zones_are_pooled_by_time() -> None:
    a = _rows("us-east-1a", [("2026-10-01T00:00", 10.0), ("2026-10-01T04:00", 10.0)])
    b = _rows("us-east-1b", [("2026-10-01T00:00", 30.0), ("2026-10-01T04:00", 30.0)])
    df = pd.DataFrame(a + b)
    assert price_statistic(df, "aws", "us-east-1", "p5.48xlarge", "mean") == 20.0
    assert price_statistic(df, "aws", "us-east-1b", "p5.48xlarge", "mean") == 30.0


def test_no_data_names_what_was_asked() -> None:
    with pytest.raises(NoPriceData, match=r"p4d\.24xlarge"):
        price_statistic(pd.DataFrame(SERIES), "aws", "us-east-1", "p4d.24xlarge", "mean")


def test_price_table_row() -> None:
    table = price_table(pd.DataFrame(SERIES))
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["samples"], row["min"], row["mean"], row["p90"], row["latest"]) == (3, 10.0, 12.5, 20.0, 12.0)
    assert row["hours"] == 8.0
    assert row["usd_per_gpu_hour_mean"] == pytest.approx(12.5 / 8)


@settings(max_examples=examples(50), deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 100), st.floats(0.1, 10)), min_size=1, max_size=20), st.floats(0, 1))
def test_weighted_quantile_is_a_value_within_range(pairs: list[tuple[float, float]], q: float) -> None:
    import numpy as np

    v = np.array([p for p, _ in pairs])
    w = np.array([x for _, x in pairs])
    got = weighted_quantile(v, w, q)
    assert got in set(v.tolist())
    # at least a q share of the weight sits at or below the answer
    assert w[v <= got].sum() >= q * w.sum() - 1e-9


def test_price_table_since_and_common_end() -> None:
    a = _rows("us-east-1a", [("2026-10-01T00:00", 10.0), ("2026-10-01T06:00", 20.0), ("2026-10-01T08:00", 12.0)])
    b = _rows("us-east-1b", [("2026-10-01T00:00", 30.0), ("2026-10-01T04:00", 40.0)])
    table = price_table(pd.DataFrame(a + b), since=datetime(2026, 10, 1, 4, tzinfo=UTC)).set_index("zone")
    # window 04:00–08:00 for both zones: 1a: 10 (carried in) for 2 h, 20 for 2 h; 1b: 40 for 4 h
    assert table.loc["us-east-1a", "mean"] == 15.0 and table.loc["us-east-1a", "hours"] == 4.0
    assert table.loc["us-east-1b", "mean"] == 40.0 and table.loc["us-east-1b", "latest"] == 40.0
    assert table.loc["us-east-1b", "samples"] == 0  # no change inside the window; the price carried in counts


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.floats(0.5, 50)), min_size=1, max_size=25))
def test_statistics_are_ordered_and_within_range(events: list[tuple[int, float]]) -> None:
    rows = _rows("us-east-1a", [(pd.Timestamp("2026-10-01") + pd.Timedelta(minutes=m), p) for m, p in events])
    df = pd.DataFrame(rows)
    stats = {s: price_statistic(df, "aws", "us-east-1", "p5.48xlarge", s) for s in ("min", "p50", "p90", "max", "mean")}
    assert stats["min"] <= stats["p50"] <= stats["p90"] <= stats["max"]
    assert stats["min"] - 1e-9 <= stats["mean"] <= stats["max"] + 1e-9

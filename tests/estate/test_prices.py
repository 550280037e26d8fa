"""Every substrate price resolved to a number before any math: fixed, price_feed (store), price_ref (pricebook)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pyarrow as pa
import pytest

from finops_cli.catalog.prices import reference_price, reference_price_age_days, reference_prices
from finops_cli.errors import InputError
from finops_cli.estate.prices import resolve_fleet
from finops_cli.schema.estate import Fleet
from finops_cli.store import Store


def _fleet(**extra: object) -> Fleet:
    spot = {
        "id": "spot",
        "provider": "aws",
        "kind": "spot",
        "accelerator": "H100",
        "jurisdiction": "US",
        "gpus": 8,
        "interruptions_per_hour": 0.02,
    } | extra
    return Fleet.model_validate(
        {
            "version": 1,
            "substrates": [
                {"id": "own", "provider": "onprem", "kind": "owned", "accelerator": "H100", "jurisdiction": "US",
                 "gpus": 8, "price_per_gpu_hour": 0.35},
                {"id": "res", "provider": "cw", "kind": "reserved", "accelerator": "H100", "jurisdiction": "US",
                 "gpus": 8, "committed_per_gpu_hour": 2.1},
                spot,
            ],
        }
    )  # fmt: skip


def _spot_store(store: Store, prices: list[float]) -> Store:
    n = len(prices)
    table = pa.table(
        {
            "provider": ["aws"] * n,
            "month": ["2026-10"] * n,
            "timestamp": pa.array([f"2026-10-{d + 1:02d}T00:00:00Z" for d in range(n)], pa.string()).cast(
                pa.timestamp("s", tz="UTC")
            ),
            "region": ["us-east-1"] * n,
            "zone": ["us-east-1a"] * n,
            "instance_type": ["p5.48xlarge"] * n,
            "product_description": ["Linux/UNIX"] * n,
            "price_kind": ["spot"] * n,
            "usd_per_instance_hour": prices,
            "gpus": [8.0] * n,
            "accelerator": ["H100"] * n,
            "usd_per_gpu_hour": [p / 8 for p in prices],
        }
    )
    with store.transaction() as tx:
        tx.write_partitioned("spot_prices", table, "test")
    return store


END = datetime(2026, 11, 1, tzinfo=UTC)  # the horizon's end: October 2026
FEED = {"provider": "aws", "region": "us-east-1", "instance_type": "p5.48xlarge", "statistic": "mean"}


def test_fixed_and_reserved_prices() -> None:
    fleet, sources = resolve_fleet(_fleet(price_per_gpu_hour=3.9), horizon_end=END)
    assert [s.price_per_gpu_hour for s in fleet.substrates] == [0.35, 0.0, 3.9]
    assert [s.method for s in sources] == ["fixed", "committed", "fixed"]


def test_price_feed_is_time_weighted_mean_per_gpu_hour(store: Store) -> None:
    # 32 $/instance-hour for one day, then 24 for one day (the last price ends the window): mean 32 over 1 day
    _spot_store(store, [32.0, 24.0, 24.0])
    fleet, sources = resolve_fleet(_fleet(price_feed=FEED | {"gpus_per_instance": 8}), store, horizon_end=END)
    assert fleet.substrate("spot").price_per_gpu_hour == pytest.approx((32 + 24) / 2 / 8)
    assert sources[2].method == "price_feed" and "aws/us-east-1/p5.48xlarge Linux/UNIX mean" in sources[2].detail
    # without gpus_per_instance the per-GPU price recorded at ingest is used: same answer
    fleet2, _ = resolve_fleet(_fleet(price_feed=FEED), store, horizon_end=END)
    assert fleet2.substrate("spot").price_per_gpu_hour == pytest.approx(3.5)


def test_price_feed_missing_data_names_the_feed(store: Store) -> None:
    with pytest.raises(
        InputError, match=r"substrate spot: price_feed aws/us-east-1/p5.48xlarge Linux/UNIX mean .*needs the"
    ):
        resolve_fleet(_fleet(price_feed=FEED), horizon_end=END)
    with pytest.raises(InputError, match=r"price_feed aws/us-east-1/p5.48xlarge .*no aws spot prices"):
        resolve_fleet(_fleet(price_feed=FEED), store, horizon_end=END)
    _spot_store(store, [32.0, 24.0])
    with pytest.raises(InputError, match=r"price_feed aws/us-west-2/p5.48xlarge .*no spot prices stored"):
        resolve_fleet(_fleet(price_feed=FEED | {"region": "us-west-2"}), store, horizon_end=END)


def test_price_ref_resolves_with_age() -> None:
    fleet, sources = resolve_fleet(_fleet(price_ref="aws/p5.48xlarge/spot"), horizon_end=END, as_of=date(2026, 10, 31))
    assert fleet.substrate("spot").price_per_gpu_hour == pytest.approx(3.90)
    src = sources[2]
    assert src.method == "price_ref" and src.age_days == 31 and "31 days old" in src.detail
    with pytest.raises(
        InputError, match=r"price_ref 'aws/p5.48xlarge/ondemand' .*did you mean aws/p5.48xlarge/on_demand"
    ):
        resolve_fleet(_fleet(price_ref="aws/p5.48xlarge/ondemand"), horizon_end=END)


def test_reference_table_rows_have_source_and_date() -> None:
    table = reference_prices()
    assert len(table) >= 15 and set(table["term"]) >= {"on_demand", "spot", "api"}
    assert (table["source"] != "").all()
    p = reference_price("anthropic/claude-sonnet-output/api")
    assert (p.unit, p.usd_per_unit) == ("Mtokens", 15.0)
    assert reference_price_age_days(p, date(2026, 10, 30)) == 30

"""A store holding October 2026 p5.48xlarge spot prices, for the sample fleet's ``price_feed``."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from finops_cli.store import Store


def write_spot_prices(store: Store, usd_per_instance_hour: list[float], every_hours: int = 12) -> Store:
    """Price-change events every ``every_hours`` from 2026-10-01, in the ``spot_prices`` store schema."""
    n = len(usd_per_instance_hour)
    frame = pd.DataFrame(
        {
            "provider": "aws",
            "month": "2026-10",
            "timestamp": pd.date_range("2026-10-01", periods=n, freq=f"{every_hours}h", tz="UTC"),
            "region": "us-east-1",
            "zone": "us-east-1a",
            "instance_type": "p5.48xlarge",
            "product_description": "Linux/UNIX",
            "price_kind": "spot",
            "usd_per_instance_hour": usd_per_instance_hour,
            "gpus": 8.0,
            "accelerator": "H100",
            "usd_per_gpu_hour": [p / 8 for p in usd_per_instance_hour],
        }
    )
    with store.transaction() as tx:
        tx.write_partitioned("spot_prices", pa.Table.from_pandas(frame, preserve_index=False), "test")
    return store


@pytest.fixture
def spot_store(store: Store) -> Store:
    """Constant 31.20 $/instance-hour: every statistic resolves aws-p5-spot-use1 to 3.90 $/GPU-hour."""
    return write_spot_prices(store, [31.2] * 62)

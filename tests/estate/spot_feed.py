"""Generate messy spot-price feeds for tests: several products, zones and irregular change times.

A real ``describe_spot_price_history`` answer for one instance type holds rows for every operating system
(``Linux/UNIX``, ``Red Hat Enterprise Linux``, ``SUSE Linux``, ``Windows``) in every zone, each a change
event at an irregular time. These helpers write such feeds into a store's ``spot_prices`` dataset.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa

from finops_cli.store import Store

#: price of each product relative to Linux/UNIX (Windows ≈ 2.5× on a g5 pool)
AWS_PRODUCTS: dict[str, float] = {
    "Linux/UNIX": 1.0,
    "Red Hat Enterprise Linux": 1.35,
    "SUSE Linux": 1.2,
    "Windows": 2.5,
}


def messy_feed(
    *,
    provider: str = "aws",
    region: str = "us-east-1",
    instance_type: str = "g5.12xlarge",
    gpus: float = 4.0,
    accelerator: str = "A10G",
    usd_per_instance_hour: float = 2.0,
    products: Mapping[str, float] | None = None,
    zones: tuple[str, ...] = ("a", "b", "c"),
    start: str = "2026-09-20",
    end: str = "2026-11-15",
    later: tuple[str, float] | None = None,
    mean_gap_hours: float = 7.0,
    seed: int = 0,
) -> pd.DataFrame:
    """Change events per zone × product with exponential gaps; ``later=(date, factor)`` scales prices from then."""
    rng = np.random.default_rng(seed)
    t0, t1 = pd.Timestamp(start, tz="UTC"), pd.Timestamp(end, tz="UTC")
    rows = []
    for zone in zones:
        for product, mult in (products or AWS_PRODUCTS).items():
            t = t0 + pd.Timedelta(minutes=int(rng.integers(0, 600)))
            while t < t1:
                price = usd_per_instance_hour * mult * float(rng.uniform(0.7, 1.3))
                if later is not None and t >= pd.Timestamp(later[0], tz="UTC"):
                    price *= later[1]
                rows.append((t, f"{region}{zone}", product, round(price, 4)))
                t += pd.Timedelta(seconds=int(rng.exponential(mean_gap_hours * 3600)) + 60)
    frame = pd.DataFrame(rows, columns=["timestamp", "zone", "product_description", "usd_per_instance_hour"])
    return frame.assign(
        provider=provider,
        month=frame["timestamp"].dt.strftime("%Y-%m"),
        region=region,
        instance_type=instance_type,
        price_kind="spot",
        gpus=gpus,
        accelerator=accelerator,
        usd_per_gpu_hour=frame["usd_per_instance_hour"] / gpus,
    )


def write_feed(store: Store, *frames: pd.DataFrame) -> Store:
    """Write feeds (``messy_feed`` frames) into the store's ``spot_prices`` dataset in one transaction."""
    frame = pd.concat(frames, ignore_index=True)
    with store.transaction() as tx:
        tx.write_partitioned("spot_prices", pa.Table.from_pandas(frame, preserve_index=False), "test")
    return store

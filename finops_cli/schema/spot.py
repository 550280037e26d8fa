"""The store's ``spot_prices`` dataset: one row per price change (plus the partition columns)."""

from __future__ import annotations

import pyarrow as pa

SPOT_SCHEMA = pa.schema(
    [
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("region", pa.string()),
        ("zone", pa.string()),
        ("instance_type", pa.string()),
        ("product_description", pa.string()),
        ("price_kind", pa.string()),  # spot | on_demand
        ("usd_per_instance_hour", pa.float64()),
        ("gpus", pa.int32()),
        ("accelerator", pa.string()),
        ("usd_per_gpu_hour", pa.float64()),
        ("source", pa.string()),  # aws-api | aws-cli-json | csv | gcp-catalog
        ("sku_id", pa.string()),
    ]
)

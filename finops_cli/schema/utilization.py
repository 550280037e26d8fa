"""The store's ``utilization`` dataset: one row per device and sample (plus the ``month`` partition column)."""

from __future__ import annotations

import pyarrow as pa

_DICT = pa.dictionary(pa.int32(), pa.string())

#: One row per device and sample in the store. Columns that repeat per device are stored dictionary-encoded
#: (Parquet writes them as dictionary pages either way; keeping the Arrow dictionary type avoids materialising
#: 10 M strings per column).
STORE_SCHEMA = pa.schema(
    [
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("interval_s", pa.float64()),  # seconds this sample stands for (cadence-inferred, gap-capped)
        ("device_id", _DICT),
        ("host", _DICT),
        ("accelerator", _DICT),
        ("utilization", pa.float64()),  # 0–1 busy fraction
        ("team", _DICT),
        ("workload", _DICT),
        ("resource_id", _DICT),
        ("metric", _DICT),  # which source metric/column the utilisation came from
        ("source", _DICT),  # the file or directory it was ingested from
    ]
)

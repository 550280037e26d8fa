"""What a data file of each dataset must hold: a store file of another schema is named, never read as one."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from finops_cli.schema.billing import BILLING_SCHEMA
from finops_cli.schema.contracts import CONTRACT_SCHEMA
from finops_cli.schema.spot import SPOT_SCHEMA
from finops_cli.schema.utilization import STORE_SCHEMA
from finops_cli.store.layout import DATASETS

_DETAILS = {
    "billing": BILLING_SCHEMA,
    "utilization": STORE_SCHEMA,
    "spot_prices": SPOT_SCHEMA,
    "contract_commitments": CONTRACT_SCHEMA,
}

_HOUR = pa.timestamp("us", tz="UTC")
_DEVICE_GROUP = [(c, pa.string()) for c in ("device_id", "resource_id", "host", "team", "workload", "accelerator")]

#: What each aggregate's query (:data:`~finops_cli.store.queries.AGGREGATES`) answers, written down so that
#: checking a footer needs no query engine (tests hold these to DuckDB's answer over an empty detail file).
AGGREGATE_SCHEMAS: dict[str, pa.Schema] = {
    "billing_hourly": pa.schema(
        [
            ("hour", _HOUR),
            *[(c, pa.string()) for c in ("SubAccountId", "RegionId", "x_InstanceType", "x_AcceleratorType")],
            *[(c, pa.string()) for c in ("PricingCategory", "BillingCurrency", "team")],
            ("lines", pa.int64()),
            ("gpu_hours", pa.float64()),
            ("consumed_gpu_hours", pa.float64()),
            ("observed_until", _HOUR),
            ("billed_cost", pa.float64()),
            ("effective_cost", pa.float64()),
        ]
    ),
    "utilization_hourly": pa.schema(
        [
            ("hour", _HOUR),
            *[(c, pa.string()) for c in ("accelerator", "team", "workload")],
            ("samples", pa.int64()),
            ("busy_gpu_hours", pa.float64()),
            ("allocated_gpu_hours", pa.float64()),
            ("observed_until", _HOUR),
        ]
    ),
    "utilization_devices": pa.schema(
        [
            *_DEVICE_GROUP,
            ("samples", pa.int64()),
            ("zero_samples", pa.int64()),
            ("device_seconds", pa.float64()),
            ("busy_seconds", pa.float64()),
            ("first_ts", _HOUR),
            ("last_ts", _HOUR),
            ("max_interval_s", pa.float64()),
        ]
    ),
    "utilization_histogram": pa.schema([("bin", pa.int64()), ("samples", pa.int64()), ("zeros", pa.int64())]),
}


def _family(t: pa.DataType) -> str:
    """What a query can do with a column of type ``t``: older writers' types of one family read alike."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return str(t)


def dataset_schema(name: str) -> pa.Schema:
    """The schema ingest writes for dataset ``name`` (an aggregate's: :data:`AGGREGATE_SCHEMAS`)."""
    return _DETAILS[name] if name in _DETAILS else AGGREGATE_SCHEMAS[name]


def partition_schema(name: str) -> pa.Schema:
    """Dataset ``name``'s Hive partition columns, read as text from the ``key=value`` directories."""
    return pa.schema([(c, pa.string()) for c in DATASETS[name]])


def current_schema(name: str, footers: Iterable[pa.Schema], partitions: pa.Schema) -> pa.Schema:
    """Dataset ``name``'s columns, then any other column a file holds, then the partition columns: a column a file
    written before it existed lacks (billing's FOCUS 1.1–1.3 columns) reads as null, and no file is rewritten."""
    canonical = dataset_schema(name)
    known = set(canonical.names) | set(partitions.names)
    extra: dict[str, pa.Field] = {}
    for footer in footers:
        extra.update({f.name: f for f in footer if f.name not in known and f.name not in extra})
    return pa.schema([*canonical, *extra.values(), *partitions])


def schema_problem(name: str, schema: pa.Schema) -> str | None:
    """Why a file of dataset ``name`` with ``schema`` cannot be read as one (a column of another type), else None.

    A column the dataset does not know, or one an older file lacks, is fine: queries see NULL for it.
    """
    want = dataset_schema(name)
    for f in schema:
        i = want.get_field_index(f.name)
        if i >= 0 and _family(f.type) != _family(want.field(i).type):
            return f"column {f.name} is {f.type}, a {name} file holds {want.field(i).type}"
    return None

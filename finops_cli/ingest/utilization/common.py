"""Schemas and small helpers shared by the utilisation parsers."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.errors import InputError
from finops_cli.ingest.readers.values import to_float, to_utc

#: What every parser yields. ``utilization`` is still in the source's scale (0–1 or 0–100): the
#: pipeline decides the scale once it has seen the whole source, then divides.
RAW_SCHEMA = pa.schema(
    [
        ("timestamp_ns", pa.int64()),  # UTC epoch nanoseconds
        ("device_id", pa.string()),
        ("host", pa.string()),
        ("accelerator", pa.string()),
        ("utilization", pa.float64()),
        ("team", pa.string()),
        ("workload", pa.string()),
        ("resource_id", pa.string()),
        ("metric", pa.string()),
    ]
)

#: dcgm-exporter metrics, in order of preference (the first is 0–1, the second 0–100)
PROF_GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
DEV_GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"

_ACCELERATORS = ("GB200", "B200", "H200", "H100", "A100", "A10G", "L40S", "L40", "A10", "L4", "V100", "T4", "MI300X")
_ACCEL_RE = re.compile("|".join(re.escape(a) for a in _ACCELERATORS), re.IGNORECASE)


def accelerator_from_model_name(model_name: str | None) -> str | None:
    """``"NVIDIA H100 80GB HBM3"`` → ``"H100"`` (the key a workload's throughput table uses)."""
    if not model_name:
        return None
    m = _ACCEL_RE.search(model_name)
    return m.group(0).upper() if m else model_name


def raw_batch(columns: Mapping[str, Sequence[Any] | pa.Array | np.ndarray]) -> pa.RecordBatch:
    """Build a :data:`RAW_SCHEMA` batch; missing optional columns become nulls.

    String columns may also be given dictionary-encoded (kept as they are: the pipeline encodes them).
    """
    n = len(next(iter(columns.values())))
    arrays, fields = [], []
    for field in RAW_SCHEMA:
        value = columns.get(field.name)
        if value is None:
            arr = pa.nulls(n, field.type)
        elif isinstance(value, pa.Array | pa.ChunkedArray):
            is_dict = pa.types.is_dictionary(value.type)
            arr = value if is_dict else pc.cast(value, field.type)
        else:
            arr = pa.array(value, type=field.type)
        arrays.append(arr)
        fields.append(pa.field(field.name, arr.type))
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


_NUMERIC = r"^\s*-?\d+(\.\d+)?\s*$"


def parse_timestamps(values: pa.Array, *, path: object, column: str, first_row: int) -> np.ndarray:
    """Strings (ISO-8601, epoch seconds or epoch milliseconds) → UTC epoch nanoseconds.

    Epoch numbers are told apart by magnitude (< 1e11 seconds, < 1e14 milliseconds, < 1e17
    microseconds, else nanoseconds). ISO-8601 without an offset is taken as UTC.
    """
    if pa.types.is_timestamp(values.type):
        ts = values if values.type.tz else pc.assume_timezone(values, "UTC")
        ns: np.ndarray = pc.cast(ts, pa.timestamp("ns", tz="UTC")).cast(pa.int64()).to_numpy(zero_copy_only=False)
        return ns
    if pa.types.is_integer(values.type) or pa.types.is_floating(values.type):
        return _epoch_to_ns(values.cast(pa.float64()).to_numpy(zero_copy_only=False), path, column, first_row)
    strings = pc.cast(values, pa.string())
    if strings.null_count:
        bad = int(pc.index(pc.is_null(strings), True).as_py())
        raise InputError("empty timestamp", path=path, where=f"row {first_row + bad}, column {column!r}")
    # Epoch numbers or ISO text: decided on the first value (a mix fails below, naming the row).
    if len(strings) and re.match(_NUMERIC, strings[0].as_py()):
        nums = to_float(strings, path=path, column=column, first_row=first_row)
        return _epoch_to_ns(nums.to_numpy(zero_copy_only=False), path, column, first_row)
    micros: np.ndarray = pc.cast(to_utc(strings, path=path, column=column, first_row=first_row), pa.int64()).to_numpy(
        zero_copy_only=False
    )
    return micros * 1000


def _epoch_to_ns(v: np.ndarray, path: object, column: str, first_row: int) -> np.ndarray:
    if np.isnan(v).any():
        bad = int(np.flatnonzero(np.isnan(v))[0])
        raise InputError("empty timestamp", path=path, where=f"row {first_row + bad}, column {column!r}")
    a = np.abs(v)
    factor = np.where(a < 1e11, 1e9, np.where(a < 1e14, 1e6, np.where(a < 1e17, 1e3, 1.0)))
    return np.round(v * factor).astype(np.int64)


#: Epoch seconds outside 1970–2100 are a corrupt or hostile file, not a scrape time.
EPOCH_MAX_S = 4_102_444_800.0


def check_epoch_seconds(seconds: np.ndarray, *, path: object, where: str) -> None:
    """Reject non-finite, negative or far-future sample times before they become nanosecond integers."""
    bad = np.flatnonzero(~((seconds >= 0) & (seconds < EPOCH_MAX_S)))
    if len(bad):
        raise InputError(
            f"timestamp {float(seconds[bad[0]])!r}: expected Unix epoch seconds (1970–2100)", path=path, where=where
        )


def check_utilization(values: np.ndarray, *, path: object, column: str, first_row: int) -> None:
    """Reject negative, missing and absurd (> 100) utilisation with the row that has it."""
    bad = np.flatnonzero(~(values >= 0) | (values > 100))
    if len(bad):
        i = int(bad[0])
        raise InputError(
            f"utilisation {float(values[i])!r} is not a number in 0–1 or 0–100",
            path=path,
            where=f"row {first_row + i}, column {column!r}",
        )

"""Generic utilisation CSV (also CSV.gz, Parquet, JSON Lines), one row per device and sample.

Each role's column is mapped with a flag (``--timestamp-col`` …) or found among common names (:data:`DEFAULTS`);
the columns and layouts accepted: docs/formats.md ("Generic CSV").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.errors import InputError
from finops_cli.ingest.readers.stream import iter_batches, read_header
from finops_cli.ingest.readers.values import map_unique, to_float
from finops_cli.ingest.utilization.common import (
    DEV_GPU_UTIL,
    PROF_GR_ENGINE_ACTIVE,
    accelerator_from_model_name,
    check_utilization,
    parse_timestamps,
    raw_batch,
)

#: Column names tried, in order, when no mapping flag is given.
DEFAULTS: dict[str, tuple[str, ...]] = {
    "timestamp": ("timestamp", "time", "ts", "Timestamp", "datetime"),
    "device": ("device_id", "device", "gpu_uuid", "UUID", "uuid"),
    "util": ("utilization", "util", "gpu_utilization", PROF_GR_ENGINE_ACTIVE, DEV_GPU_UTIL, "gpu_util"),
    "team": ("team",),
    "workload": ("workload", "job"),
    "resource": ("resource_id", "ResourceId", "instance_id"),
    "host": ("host", "hostname", "Hostname", "node"),
    "gpu": ("gpu", "gpu_index", "gpu_id"),
    "accelerator": ("accelerator", "modelName", "gpu_model"),
}


@dataclass(frozen=True)
class CsvMapping:
    """Column-mapping flags of ``finops ingest utilization`` (None = try :data:`DEFAULTS`)."""

    timestamp_col: str | None = None
    device_col: str | None = None
    util_col: str | None = None
    team_col: str | None = None
    workload_col: str | None = None
    resource_col: str | None = None
    host_col: str | None = None


def resolve_columns(header: list[str], mapping: CsvMapping, path: Path) -> dict[str, str | None]:
    """Pick the file's column for each role; name the missing one and the parameter (``<role>_col``) that maps it."""
    have = set(header)
    out: dict[str, str | None] = {}
    for role, candidates in DEFAULTS.items():
        chosen = getattr(mapping, f"{role}_col", None)
        if chosen is not None:
            if chosen not in have:
                raise InputError(
                    f"{chosen!r} is not a column (columns: {', '.join(header)})", path=path, param=f"{role}_col"
                )
            out[role] = chosen
        else:
            out[role] = next((c for c in candidates if c in have), None)
    for role in ("timestamp", "util"):
        if out[role] is None:
            raise InputError(
                f"no {role} column (tried {', '.join(DEFAULTS[role])}); name it with `{role}_col`",
                path=path,
            )
    if out["device"] is None and out["host"] is None:
        raise InputError(
            f"no device column (tried {', '.join(DEFAULTS['device'])}) and no host column; "
            "name one with `device_col` or `host_col`",
            path=path,
            mentions=("device_col", "host_col"),
        )
    return out


def _strings(batch: pa.RecordBatch, name: str | None) -> pa.Array | None:
    if name is None:
        return None
    col = batch.column(batch.schema.get_field_index(name))
    return pc.cast(col, pa.string())


def iter_csv(path: Path, mapping: CsvMapping) -> Iterator[pa.RecordBatch]:
    """Yield raw batches; utilisation stays in the file's scale (the pipeline detects 0–1 vs 0–100)."""
    header = read_header(path)
    cols = resolve_columns(header, mapping, path)
    wanted = [c for c in cols.values() if c is not None]
    util_col = cols["util"]
    assert util_col is not None and cols["timestamp"] is not None
    metric = util_col
    for rb in iter_batches(path, columns=wanted, types={util_col: pa.float64()}):
        batch, first = rb.batch, rb.first_row
        ts = parse_timestamps(
            batch.column(batch.schema.get_field_index(cols["timestamp"])),
            path=path,
            column=cols["timestamp"],
            first_row=first,
        )
        util = to_float(
            batch.column(batch.schema.get_field_index(util_col)), path=path, column=util_col, first_row=first
        ).to_numpy(zero_copy_only=False)
        check_utilization(util, path=path, column=util_col, first_row=first)
        device = _strings(batch, cols["device"])
        host = _strings(batch, cols["host"])
        if device is None:
            assert host is not None  # resolve_columns refuses a file with neither a device nor a host column
            gpu = _strings(batch, cols["gpu"])
            device = host if gpu is None else pc.binary_join_element_wise(host, pc.fill_null(gpu, ""), "/gpu")
        if device.null_count:
            bad = int(pc.index(pc.is_null(device), True).as_py())
            raise InputError("empty device id", path=path, where=f"row {first + bad}, column {cols['device']!r}")
        accel = _strings(batch, cols["accelerator"])
        if accel is not None:
            accel = map_unique(accel, accelerator_from_model_name, pa.string())
        resource = _strings(batch, cols["resource"])
        yield raw_batch(
            {
                "timestamp_ns": ts,
                "device_id": device,
                "host": host,
                "accelerator": accel,
                "utilization": util,
                "team": _strings(batch, cols["team"]),
                "workload": _strings(batch, cols["workload"]),
                "resource_id": resource if resource is not None else host,
                "metric": pa.DictionaryArray.from_arrays(
                    pa.array(np.zeros(batch.num_rows, dtype=np.int32)), pa.array([metric], pa.string())
                ),
            }
        )


def util_scale_hint(path: Path, mapping: CsvMapping) -> float | None:
    """A scale known from the column's name (DCGM metrics), else None (detect from the values)."""
    cols = resolve_columns(read_header(path), mapping, path)
    if cols["util"] == DEV_GPU_UTIL:
        return 100.0
    if cols["util"] == PROF_GR_ENGINE_ACTIVE:
        return 1.0
    return None

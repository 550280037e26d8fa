"""Prometheus ``/api/v1/query_range`` JSON (``resultType: matrix``) over dcgm-exporter metrics.

Per device the preferred metric's series is read; labels as for dcgm scrapes. Details: docs/formats.md
("Prometheus range queries").
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from finops_cli.errors import InputError
from finops_cli.files import read_json
from finops_cli.ingest.utilization.common import (
    DEV_GPU_UTIL,
    PROF_GR_ENGINE_ACTIVE,
    accelerator_from_model_name,
    check_epoch_seconds,
    raw_batch,
)


def iter_prometheus_range(path: Path) -> Iterator[pa.RecordBatch]:
    """Yield one raw batch per chosen series (utilisation normalised to 0–1)."""
    doc = read_json(path, kind="Prometheus query_range JSON", problem="not JSON")
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise InputError(
            "expected a Prometheus range-query response: {status, data: {resultType: 'matrix', result: [...]}}",
            path=path,
            where="data.resultType",
        )
    series = data["result"]
    chosen: dict[str, tuple[int, dict[str, Any]]] = {}
    rank = {PROF_GR_ENGINE_ACTIVE: 0, None: 1, DEV_GPU_UTIL: 2}
    for i, s in enumerate(series):
        labels = (s.get("metric") if isinstance(s, dict) else None) or {}
        well_formed = isinstance(s, dict) and isinstance(labels, dict)
        if not well_formed or not all(isinstance(v, str) for v in labels.values()):
            raise InputError(
                "expected {metric: {label: 'text', ...}, values: [[epoch_seconds, 'number'], ...]}",
                path=path,
                where=f"data.result[{i}]",
            )
        name = labels.get("__name__")
        if name not in rank:
            continue
        host = labels.get("Hostname", labels.get("instance", ""))
        device = labels.get("UUID") or f"{host}/gpu{labels.get('gpu', '')}"
        if device not in chosen or rank[name] < rank[chosen[device][1].get("metric", {}).get("__name__")]:
            chosen[device] = (i, s)
    for device, (i, s) in chosen.items():
        labels = s.get("metric") or {}
        name = labels.get("__name__")
        try:
            pairs = s["values"]
            ts = np.array([float(p[0]) for p in pairs])
            values = np.array([float(p[1]) for p in pairs])
        except (KeyError, TypeError, ValueError, IndexError):
            raise InputError(
                "expected values: [[epoch_seconds, 'number'], ...]", path=path, where=f"data.result[{i}].values"
            ) from None
        check_epoch_seconds(ts, path=path, where=f"data.result[{i}].values")
        if name == DEV_GPU_UTIL or (name is None and len(values) and np.nanmax(values) > 1):
            values = values / 100.0
        if len(values) and (np.isnan(values).any() or (values < 0).any() or (values > 1.0 + 1e-9).any()):
            raise InputError(
                "utilisation outside 0–1 (or 0–100 for DCGM_FI_DEV_GPU_UTIL)",
                path=path,
                where=f"data.result[{i}].values",
            )
        n = len(ts)
        host = labels.get("Hostname") or labels.get("instance") or None
        yield raw_batch(
            {
                "timestamp_ns": np.round(ts * 1e9).astype(np.int64),
                "device_id": [device] * n,
                "host": [host] * n,
                "accelerator": [accelerator_from_model_name(labels.get("modelName"))] * n,
                "utilization": values,
                "team": [labels.get("team") or labels.get("namespace") or None] * n,
                "workload": [labels.get("workload") or labels.get("pod") or None] * n,
                "resource_id": [labels.get("resource_id") or labels.get("instance_id") or host] * n,
                "metric": [name or "query"] * n,
            }
        )

"""NVIDIA dcgm-exporter scrapes (Prometheus text exposition format), one file or a directory of them.

A scrape has no time of its own unless each sample line carries a millisecond timestamp; otherwise the
time comes from the file name (``scrape-2026-10-01T00-00-00Z.prom``, ``20261001T000000Z.prom`` or
``1793491200.prom``). Per device and scrape, ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (0–1, the fraction of
time the graphics engine was active) is preferred; ``DCGM_FI_DEV_GPU_UTIL`` (0–100, the coarser
"a kernel was running" counter) is the fallback. The ``metric`` column says which one each row used.

Labels used: ``UUID`` (device id; else ``Hostname/gpu<gpu>``), ``Hostname``, ``modelName`` (→ accelerator),
``resource_id``/``instance_id`` (else the host) for matching billing lines, ``team`` (else ``namespace``)
and ``workload`` (else ``pod``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from finops_cli.errors import InputError
from finops_cli.files import read_text
from finops_cli.ingest.utilization.common import (
    DEV_GPU_UTIL,
    EPOCH_MAX_S,
    PROF_GR_ENGINE_ACTIVE,
    accelerator_from_model_name,
    check_epoch_seconds,
    raw_batch,
)

SCRAPE_SUFFIXES = (".prom", ".prom.gz", ".txt", ".txt.gz", ".metrics")
_METRICS = (PROF_GR_ENGINE_ACTIVE, DEV_GPU_UTIL)
_ISO_NAME = re.compile(r"(\d{4})-?(\d{2})-?(\d{2})[T_ ]?(\d{2})[:\-]?(\d{2})[:\-]?(\d{2})")
_EPOCH_NAME = re.compile(r"(?<!\d)(\d{13}|\d{10})(?!\d)")
_BATCH_ROWS = 200_000


def _parser():  # lazy: the dependency is only needed for this format
    from prometheus_client.parser import text_string_to_metric_families

    return text_string_to_metric_families


def timestamp_from_name(name: str) -> int | None:
    """UTC epoch nanoseconds encoded in a scrape file's name, or None."""
    m = _ISO_NAME.search(name)
    if m:
        y, mo, d, h, mi, s = (int(g) for g in m.groups())
        try:
            return int(datetime(y, mo, d, h, mi, s, tzinfo=UTC).timestamp()) * 1_000_000_000
        except ValueError:
            return None
    m = _EPOCH_NAME.search(name)
    if m:
        v = int(m.group(1))
        return v * 1_000_000 if len(m.group(1)) == 13 else v * 1_000_000_000
    return None


def scrape_files(path: Path) -> list[Path]:
    """The scrape files of a directory, in name order (names carry the time)."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(SCRAPE_SUFFIXES))
        if not files:
            raise InputError(f"no scrape files ({', '.join(SCRAPE_SUFFIXES)}) in this directory", path=path)
        return files
    return [path]


def parse_scrape(text: str, path: Path, file_ts_ns: int | None) -> dict[str, list]:
    """One scrape → columns of :data:`RAW_SCHEMA` (utilisation in the metric's own scale)."""
    per_device: dict[tuple[str, int | None], dict[str, tuple[float, dict[str, str]]]] = {}
    try:
        for family in _parser()(text):
            for sample in family.samples:
                if sample.name not in _METRICS:
                    continue
                labels = sample.labels
                device = labels.get("UUID") or f"{labels.get('Hostname', '')}/gpu{labels.get('gpu', '')}"
                if sample.timestamp is not None and not (0 <= float(sample.timestamp) < EPOCH_MAX_S):
                    check_epoch_seconds(np.array([float(sample.timestamp)]), path=path, where=f"{sample.name} {device}")
                if not (0 <= float(sample.value) <= 100):  # NaN fails too
                    raise InputError(
                        f"value {float(sample.value)!r}: expected a utilisation in 0–1 or 0–100",
                        path=path,
                        where=f"{sample.name} {device}",
                    )
                ts = int(sample.timestamp * 1e9) if sample.timestamp is not None else file_ts_ns
                if ts is None:
                    raise InputError(
                        "no timestamp: sample lines carry none and the file name has none "
                        "(name files like scrape-2026-10-01T00-00-00Z.prom or scrape-1793491200.prom)",
                        path=path,
                    )
                per_device.setdefault((device, ts), {})[sample.name] = (float(sample.value), labels)
    except ValueError as exc:
        raise InputError(f"not Prometheus text exposition format: {exc}", path=path) from None
    cols: dict[str, list] = {
        k: []
        for k in (
            "timestamp_ns",
            "device_id",
            "host",
            "accelerator",
            "utilization",
            "team",
            "workload",
            "resource_id",
            "metric",
        )
    }
    for (device, ts), metrics in per_device.items():
        name = PROF_GR_ENGINE_ACTIVE if PROF_GR_ENGINE_ACTIVE in metrics else DEV_GPU_UTIL
        value, labels = metrics[name]
        host = labels.get("Hostname") or None
        cols["timestamp_ns"].append(ts)
        cols["device_id"].append(device)
        cols["host"].append(host)
        cols["accelerator"].append(accelerator_from_model_name(labels.get("modelName")))
        cols["utilization"].append(value / 100.0 if name == DEV_GPU_UTIL else value)
        cols["team"].append(labels.get("team") or labels.get("namespace") or None)
        cols["workload"].append(labels.get("workload") or labels.get("pod") or None)
        cols["resource_id"].append(labels.get("resource_id") or labels.get("instance_id") or host)
        cols["metric"].append(name)
    return cols


def iter_dcgm(path: Path) -> Iterator[pa.RecordBatch]:
    """Yield raw batches from one scrape file or a directory of timestamped scrape files.

    Values are normalised to 0–1 here (each metric has a known scale), so the pipeline's scale
    detection sees fractions.
    """
    buffer: dict[str, list] | None = None
    for file in scrape_files(path):
        cols = parse_scrape(
            read_text(file, kind="a dcgm-exporter scrape (Prometheus text format)"),
            file,
            timestamp_from_name(file.name),
        )
        if buffer is None:
            buffer = cols
        else:
            for k, v in cols.items():
                buffer[k].extend(v)
        if len(buffer["timestamp_ns"]) >= _BATCH_ROWS:
            yield raw_batch(buffer)
            buffer = None
    if buffer and buffer["timestamp_ns"]:
        yield raw_batch(buffer)

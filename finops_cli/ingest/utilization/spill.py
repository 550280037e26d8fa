"""Pass 1 spills a source's samples into buckets by device; pass 2 sorts each bucket, infers each sample's
interval and writes it per month (the interval rule and why a spill: :mod:`.pipeline`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.ingest.utilization.sources import DATASET, SourceSummary
from finops_cli.schema.utilization import STORE_SCHEMA

BUCKET_BYTES = 256 << 20

#: per-row string attributes, encoded to source-wide integer codes in pass 1
ATTRS = ("device_id", "host", "accelerator", "team", "workload", "resource_id", "metric")
SPILL_SCHEMA = pa.schema(
    [("timestamp_ns", pa.int64()), ("utilization", pa.float64())] + [(a, pa.int32()) for a in ATTRS]
)


class Codes:
    """Source-wide dictionaries (value → int32 code per attribute) and the histogram of gaps between a device's
    consecutive samples, whose median is the cadence of devices seen once (computed in pass 1, so it does not depend
    on the buckets)."""

    def __init__(self) -> None:
        self.maps: dict[str, dict[str, int]] = {a: {} for a in ATTRS}
        self.last_ts = np.full(0, np.iinfo(np.int64).min, dtype=np.int64)
        self.gap_counts: dict[int, int] = {}

    def observe_gaps(self, dev: np.ndarray, ts: np.ndarray) -> None:
        n_dev = len(self.maps["device_id"])
        if len(self.last_ts) < n_dev:
            grow = np.full(n_dev - len(self.last_ts), np.iinfo(np.int64).min, dtype=np.int64)
            self.last_ts = np.concatenate([self.last_ts, grow])
        order = np.argsort(dev, kind="stable")
        d, t = dev[order], ts[order]
        prev = np.empty_like(t)
        prev[1:] = t[:-1]
        first = np.r_[True, d[1:] != d[:-1]]
        prev[first] = self.last_ts[d[first]]
        gaps = (t - prev)[prev != np.iinfo(np.int64).min] // 1_000_000_000
        gaps = gaps[gaps > 0]
        if len(gaps):
            values, counts = np.unique(gaps, return_counts=True)
            for v, c in zip(values.tolist(), counts.tolist(), strict=True):
                self.gap_counts[v] = self.gap_counts.get(v, 0) + c
        last = np.flatnonzero(np.r_[d[1:] != d[:-1], True])
        self.last_ts[d[last]] = np.maximum(self.last_ts[d[last]], t[last])

    def cadence(self, default_s: float) -> float:
        """Median gap in seconds (over every device's consecutive samples), else ``default_s``."""
        if not self.gap_counts:
            return default_s
        values = np.array(sorted(self.gap_counts))
        counts = np.array([self.gap_counts[v] for v in values])
        cum = np.cumsum(counts)
        return float(values[int(np.searchsorted(cum, cum[-1] / 2))])

    def encode(self, name: str, column: pa.Array) -> np.ndarray:
        """Codes for ``column`` (−1 for null); Python work is per distinct value, not per row."""
        enc = column if pa.types.is_dictionary(column.type) else pc.dictionary_encode(column)
        mapping = self.maps[name]
        local = np.array(
            [mapping.setdefault(v, len(mapping)) if v is not None else -1 for v in enc.dictionary.to_pylist()] + [-1],
            dtype=np.int32,
        )
        idx = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False)
        codes: np.ndarray = local[idx]
        return codes

    def dictionary(self, name: str) -> pa.Array:
        return pa.array(list(self.maps[name]), pa.string())


def spill(
    batches: Iterator[pa.RecordBatch],
    spill_dir: Path,
    n_buckets: int,
    summary: SourceSummary,
    codes: Codes,
    on_rows: Callable[[int], None] | None,
) -> float:
    """Pass 1: encode each batch to numbers and append its rows to the bucket of their device.

    Buckets are Arrow IPC streams of fixed-width columns (no strings): cheap to write and to read back.
    Returns the maximum utilisation seen (for the 0–1 vs 0–100 decision).
    """
    spill_dir.mkdir(parents=True, exist_ok=True)
    writers: dict[int, pa.ipc.RecordBatchStreamWriter] = {}
    sinks = []
    max_util = -math.inf
    try:
        for batch in batches:
            n = batch.num_rows
            if n == 0:
                continue
            summary.samples += n
            util = batch.column("utilization").to_numpy(zero_copy_only=False)
            max_util = max(max_util, float(np.nanmax(util)) if len(util) else -math.inf)
            cols = {a: codes.encode(a, batch.column(a)) for a in ATTRS}
            metric_counts = np.bincount(cols["metric"][cols["metric"] >= 0])
            names = list(codes.maps["metric"])
            for code in np.flatnonzero(metric_counts):
                summary.metrics[names[code]] = summary.metrics.get(names[code], 0) + int(metric_counts[code])
            ts = batch.column("timestamp_ns").to_numpy(zero_copy_only=False)
            codes.observe_gaps(cols["device_id"], ts)
            arrays = [pa.array(ts), pa.array(util)] + [pa.array(cols[a]) for a in ATTRS]
            spill = pa.RecordBatch.from_arrays(arrays, schema=SPILL_SCHEMA)
            if n_buckets == 1:
                parts = {0: spill}
            else:
                bucket_of_row = cols["device_id"] % n_buckets
                parts = {int(b): spill.filter(pa.array(bucket_of_row == b)) for b in np.unique(bucket_of_row)}
            for b, part in parts.items():
                w = writers.get(b)
                if w is None:
                    sink = pa.OSFile(str(spill_dir / f"bucket-{b}.arrows"), "wb")
                    sinks.append(sink)
                    w = pa.ipc.new_stream(sink, SPILL_SCHEMA)
                    writers[b] = w
                w.write_batch(part)
            if on_rows:
                on_rows(n)
    finally:
        for w in writers.values():
            w.close()
        for sink in sinks:
            sink.close()
    return max_util


def split_bucket(path: Path, n_buckets: int) -> list[Path]:
    """``path`` itself, or its rows split by device into parts of about :data:`BUCKET_BYTES` (a compressed source
    can expand a thousandfold beyond the size pass 1 planned for); a device's samples stay together."""
    size = path.stat().st_size
    if size <= 2 * BUCKET_BYTES:
        return [path]
    k = math.ceil(size / BUCKET_BYTES)
    writers: dict[int, tuple[pa.NativeFile, pa.ipc.RecordBatchStreamWriter]] = {}
    try:
        with pa.memory_map(str(path)) as source:
            for batch in pa.ipc.open_stream(source):
                # devices of this bucket share ``code % n_buckets``: spread them by the rest of the code
                part_of_row = (batch.column("device_id").to_numpy() // n_buckets) % k
                for p in np.unique(part_of_row):
                    if int(p) not in writers:
                        sink = pa.OSFile(str(path.with_name(f"{path.stem}-{p}.arrows")), "wb")
                        writers[int(p)] = (sink, pa.ipc.new_stream(sink, SPILL_SCHEMA))
                    writers[int(p)][1].write_batch(batch.filter(pa.array(part_of_row == p)))
    finally:
        for sink, w in writers.values():
            w.close()
            sink.close()
    path.unlink()
    return [path.with_name(f"{path.stem}-{p}.arrows") for p in sorted(writers)]


def read_bucket(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_stream(source).read_all()


def _device_cadences(codes: np.ndarray, ts: np.ndarray) -> pd.Series:
    """Median gap (seconds) between consecutive distinct samples, per device code (sorted input)."""
    same = codes[1:] == codes[:-1]
    gaps = (ts[1:] - ts[:-1]) / 1e9
    ok = same & (gaps > 0)
    return pd.Series(gaps[ok]).groupby(codes[:-1][ok]).median()


def _next_sample(dev: np.ndarray, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per sample of a (device, time)-sorted bucket: is the next one the same device's, and the gap to it (ns)."""
    same_next = np.zeros(len(ts), dtype=bool)
    same_next[:-1] = dev[1:] == dev[:-1]
    delta = np.zeros(len(ts), dtype=np.int64)
    delta[:-1] = ts[1:] - ts[:-1]
    return same_next, delta


def write_bucket(
    tx: Any,
    table: pa.Table,
    summary: SourceSummary,
    codes: Codes,
    scale: float,
    max_gap_factor: float,
    default_interval_s: float,
    months: set[str],
    spans: list[pd.DataFrame],
) -> int:
    """Pass 2 for one bucket: sort by (device, time), infer intervals, write per month. Returns devices.

    Appends each device's covered time (``device``, ``start_us``, ``end_us``) to ``spans``.
    """
    dev = table.column("device_id").to_numpy()
    ts = table.column("timestamp_ns").to_numpy()
    # stable: among duplicate (device, timestamp) samples the last one read stays last
    order = np.lexsort((ts, dev))
    dev, ts = dev[order], ts[order]
    same_next, delta = _next_sample(dev, ts)
    dup = same_next & (delta == 0)
    if dup.any():  # overlapping scrapes: keep the last sample read
        keep = ~dup
        summary.duplicates_dropped += int(dup.sum())
        order, dev, ts = order[keep], dev[keep], ts[keep]
        same_next, delta = _next_sample(dev, ts)
    gaps = _device_cadences(dev, ts)
    cadence = np.full(len(codes.maps["device_id"]), np.nan)
    cadence[gaps.index.to_numpy()] = gaps.to_numpy()
    # devices seen once: the source's cadence (median gap over the whole source, from pass 1)
    cad = np.where(np.isfinite(cadence), cadence, default_interval_s)[dev]
    delta_s = delta / 1e9
    interval = np.where(same_next & (delta_s <= max_gap_factor * cad), delta_s, cad)
    # Coverage: per device span = last − first + its last interval.
    first_idx = np.flatnonzero(np.r_[True, dev[1:] != dev[:-1]])
    last_idx = np.flatnonzero(~same_next)
    summary.observed_seconds += float(interval.sum())
    summary.span_seconds += float(((ts[last_idx] - ts[first_idx]) / 1e9 + interval[last_idx]).sum())
    names = np.array(list(codes.maps["device_id"]), dtype=object)
    spans.append(
        pd.DataFrame(
            {
                "device": names[dev[first_idx]],
                "start_us": ts[first_idx] // 1000,
                "end_us": ts[last_idx] // 1000 + np.round(interval[last_idx] * 1e6).astype(np.int64),
            }
        )
    )

    util = table.column("utilization").to_numpy()[order]
    if scale != 1.0:
        util = util / scale
    columns: dict[str, pa.Array] = {
        "timestamp": pa.array(ts // 1000, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "interval_s": pa.array(interval, pa.float64()),
        "utilization": pa.array(util, pa.float64()),
    }
    for a in ATTRS:
        c = dev if a == "device_id" else table.column(a).to_numpy()[order]
        columns[a] = pa.DictionaryArray.from_arrays(pa.array(c, mask=c < 0), codes.dictionary(a))
    columns["source"] = pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(len(ts), dtype=np.int32)), pa.array([summary.source], pa.string())
    )
    out = pa.table({f.name: columns[f.name] for f in STORE_SCHEMA}, schema=STORE_SCHEMA)
    lo, hi = (np.datetime64(int(x), "ns").astype("datetime64[M]") for x in (ts.min(), ts.max()))
    if lo == hi:  # the common case: one month, no per-row month labels needed
        months.add(str(lo))
        tx.write(DATASET, {"month": str(lo)}, summary.key, out)
        return len(first_idx)
    month_codes = ts.astype("datetime64[ns]").astype("datetime64[M]")
    for m in np.unique(month_codes):
        label = str(m)  # "2026-10"
        months.add(label)
        mask = month_codes == m
        tx.write(DATASET, {"month": label}, summary.key, out.filter(pa.array(mask)))
    return len(first_idx)

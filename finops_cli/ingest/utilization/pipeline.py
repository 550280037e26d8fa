"""Utilisation ingest: parse → spill by device → infer intervals → atomic store write.

Why a spill: a sample's interval is the time to the device's next sample, so each device's samples
must be seen in time order, but traces interleave devices. Pass 1 streams the source and appends each
batch to one of ``N`` bucket files chosen by a hash of the device id (``N`` grows with the source size,
so one bucket stays a few hundred MB). Pass 2 loads one bucket at a time, sorts it by (device, time),
and computes intervals. Memory is bounded by a bucket, not by the source.

Interval rule (per device): the cadence is the median gap between consecutive samples. A sample stands
for the gap to the next one when that gap is at most ``max_gap_factor`` × cadence, else for one cadence
(the rest is a *gap*: neither busy nor idle, and it lowers coverage). The last sample stands for one
cadence. A device seen once gets the source's median cadence (else ``default_interval_s``).

Idempotency: each source (a file, or a directory of dcgm scrapes) is written under a key derived from
its content and the options that change its meaning; ingesting it again replaces those files and its
manifest entry. Everything happens in one store transaction, so an error or Ctrl-C leaves the store as
it was.

No sample counted twice: per device, the time a source covers (first sample → last sample + its
interval) may not overlap the time another source covers on that device, whether that source is
already in the store or in the same command. The same trace ingested again with other options, or a
copy with an extra column, has another key but the same samples: it is refused (exit 2) naming the
stored source, unless ``replace=True`` (``--replace``), which removes the overlapping stored sources
wholly in the same transaction. Within one device and source, intervals never overlap (a sample stands
for at most the gap to the next one), so busy and observed seconds never exceed wall-clock time and
coverage cannot pass 100 %.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from finops_cli.atomic import note_input
from finops_cli.errors import InputError
from finops_cli.ingest.readers.common import SUFFIXES, kind_of
from finops_cli.ingest.readers.stream import read_header
from finops_cli.ingest.registry import Registry
from finops_cli.ingest.utilization.csv import DEFAULTS, CsvMapping, iter_csv, util_scale_hint
from finops_cli.ingest.utilization.dcgm import SCRAPE_SUFFIXES, iter_dcgm
from finops_cli.ingest.utilization.prometheus import iter_prometheus_range
from finops_cli.schema.utilization import STORE_SCHEMA
from finops_cli.store import Store
from finops_cli.store.store import Transaction

DATASET = "utilization"
BUCKET_BYTES = 256 << 20
DEFAULT_INTERVAL_S = 60.0
MAX_GAP_FACTOR = 1.5

_PROM_TEXT = "#prometheus-text"
_PROM_RANGE = "#prometheus-range"

#: Utilisation formats for ``--format``; sniffers see a file's columns, or a marker for non-tabular text.
UTILIZATION_FORMATS: Registry[str] = Registry("utilisation format")
UTILIZATION_FORMATS.register(
    "dcgm",
    aliases=["dcgm-exporter", "prometheus-text"],
    sniff=lambda c: _PROM_TEXT in c,
    description="dcgm-exporter scrape(s), Prometheus text format",
)("dcgm")
UTILIZATION_FORMATS.register(
    "prometheus",
    aliases=["prometheus-range", "promql"],
    sniff=lambda c: _PROM_RANGE in c,
    description="Prometheus /api/v1/query_range JSON",
)("prometheus")
UTILIZATION_FORMATS.register(
    "csv",
    aliases=["generic"],
    sniff=lambda c: any(x in c for x in DEFAULTS["timestamp"]) and any(x in c for x in DEFAULTS["util"]),
    description="generic CSV / CSV.gz / Parquet / JSON Lines, one row per device and sample",
)("csv")


@dataclass
class SourceSummary:
    """What one source contributed (also the manifest entry)."""

    source: str
    format: str
    key: str
    samples: int = 0
    devices: int = 0
    metrics: dict[str, int] = field(default_factory=dict)
    util_scale: float = 1.0
    util_scale_detected: bool = True
    observed_seconds: float = 0.0
    span_seconds: float = 0.0
    months: list[str] = field(default_factory=list)
    duplicates_dropped: int = 0

    @property
    def coverage(self) -> float:
        """Observed seconds ÷ the devices' spans (first sample → last sample + one cadence)."""
        return self.observed_seconds / self.span_seconds if self.span_seconds else 0.0


@dataclass
class UtilizationIngest:
    """Result of :func:`ingest_utilization`."""

    sources: list[SourceSummary]
    rows_written: int
    #: stored sources removed because a new source overlaps them (``replace=True``): {key, source, devices}
    replaced: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "rows_written": self.rows_written,
            "replaced": self.replaced,
            "sources": [{**asdict(s), "coverage": s.coverage} for s in self.sources],
        }


# ------------------------------------------------------------------------------------ source discovery
def _sources(paths: list[Path]) -> list[Path]:
    """Files, and directories of scrape files (one source each: a scrape series is one trace).

    Other directories are searched recursively; a sub-directory holding scrape files is one source.
    """
    out: list[Path] = []
    seen: set[Path] = set()

    def add(p: Path) -> None:
        r = p.resolve()
        if r not in seen:
            seen.add(r)
            out.append(p)

    for p in paths:
        if not p.exists():
            raise InputError("no such file or directory", path=p)
        if not p.is_dir():
            if not p.is_file():  # a FIFO or a device would block or never end: say what it is
                from finops_cli.files import kind_of_path

                raise InputError(f"{kind_of_path(p)}; expected a regular file", path=p)
            add(p)
            continue
        note_input(p, tree=True)
        files = sorted(
            f
            for f in p.rglob("*")
            if f.is_file()
            and f.name.lower().endswith((*SUFFIXES, *SCRAPE_SUFFIXES))
            and not any(part.startswith((".", "_")) for part in f.relative_to(p).parts)
        )
        if not files:
            raise InputError("directory holds no utilisation files", path=p)
        for f in files:
            add(f.parent if f.name.endswith(SCRAPE_SUFFIXES) else f)
    return out


def _columns_for_sniffing(path: Path) -> frozenset[str]:
    if path.is_dir() or path.name.endswith(SCRAPE_SUFFIXES):
        return frozenset({_PROM_TEXT})
    name = path.name.lower()
    if name.endswith((".json", ".json.gz")):
        opener = gzip.open if name.endswith(".gz") else open
        try:
            with opener(path, "rt", encoding="utf-8") as fh:
                head = fh.read(4096)
        except (OSError, UnicodeDecodeError, EOFError) as exc:
            raise InputError(f"cannot read: {exc}", path=path) from None
        if '"resultType"' in head or ('"result"' in head and '"values"' in head):
            return frozenset({_PROM_RANGE})
    kind_of(path)
    return frozenset(read_header(path))


def _content_key(path: Path, fmt: str, options: dict) -> tuple[str, str]:
    """(store key: content + the options that change its meaning, content fingerprint alone)."""
    h = hashlib.sha1(usedforsecurity=False)  # a content fingerprint (SHA-NI makes it ~0.6 GB/s here)
    content = hashlib.sha1(usedforsecurity=False)
    h.update(json.dumps({"format": fmt, **options}, sort_keys=True).encode())
    files = sorted(f for f in path.iterdir() if f.is_file()) if path.is_dir() else [path]
    for f in files:
        for x in (h, content):
            x.update(f.name.encode() if path.is_dir() else b"")
        with open(f, "rb") as fh:
            while chunk := fh.read(4 << 20):
                h.update(chunk)
                content.update(chunk)
    return f"{fmt}-{h.hexdigest()[:20]}", content.hexdigest()[:20]


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file()) if path.is_dir() else path.stat().st_size


# ------------------------------------------------------------------------------------------- pipeline
def ingest_utilization(
    store: Store,
    paths: list[str | Path],
    *,
    fmt: str = "auto",
    mapping: CsvMapping | None = None,
    util_scale: float | None = None,
    max_gap_factor: float = MAX_GAP_FACTOR,
    default_interval_s: float = DEFAULT_INTERVAL_S,
    on_rows: Callable[[int], None] | None = None,
    replace: bool = False,
    stager: UtilizationStager | None = None,
) -> UtilizationIngest:
    """Ingest utilisation traces into the store's ``utilization`` dataset (partitioned by month).

    Parameters
    ----------
    fmt
        ``auto`` (sniff each source), ``dcgm``, ``prometheus`` or ``csv``.
    util_scale
        ``1`` (values are 0–1) or ``100`` (0–100); None detects it per source: a known DCGM metric has
        its own scale, otherwise a maximum above 1 means percent.
    max_gap_factor
        A gap longer than this many cadences is not counted (see the module docstring).
    on_rows
        Progress callback, called with the number of samples parsed per batch.
    replace
        Remove stored sources whose samples overlap a new source's (same device, overlapping time)
        instead of refusing (see the module docstring).
    stager
        Reads the sources into the transaction (default :class:`InProcessStager`; Spark: one task per source,
        :class:`finops_cli.spark.utilization.SparkStager`), each through :func:`ingest_source`; the overlap
        check, manifest and commit stay in this process.
    """
    mapping = mapping or CsvMapping()
    if util_scale is not None and util_scale not in (1, 100):
        raise InputError(f"--util-scale must be 1 or 100; got {util_scale:g}")
    options = SourceOptions(fmt, mapping, util_scale, max_gap_factor, default_interval_s)
    sources = _sources([Path(p) for p in paths])
    stager = stager or InProcessStager()
    with store.transaction() as tx:
        done = stager.stage(sources, options, tx, on_rows)
        for d in done:
            tx.forget_source(d.summary.key)
            tx.record(d.entry())
        spans = pd.concat([d.spans for d in done], ignore_index=True)
        replaced = _check_overlaps(store, tx, spans, replace=replace)
        rows = tx.rows_written
    return UtilizationIngest([d.summary for d in done], rows, replaced)


class UtilizationStager(Protocol):
    """Reads an ingest's sources into a transaction, each through :func:`ingest_source`, results in order."""

    def stage(
        self, sources: Sequence[Path], options: SourceOptions, tx: Transaction, on_rows: Callable[[int], None] | None
    ) -> list[SourceDone]:
        """Each source of ``sources`` staged under ``tx``; their :class:`SourceDone`, in order."""
        ...


class InProcessStager:
    """Read the sources one after the other in this process, writing through the transaction."""

    def stage(
        self, sources: Sequence[Path], options: SourceOptions, tx: Transaction, on_rows: Callable[[int], None] | None
    ) -> list[SourceDone]:
        return [ingest_source(tx, i, src, options, tx.staging, on_rows) for i, src in enumerate(sources)]


@dataclass
class SourceOptions:
    """The options of one ingest that every source is read with (see :func:`ingest_utilization`)."""

    fmt: str = "auto"
    mapping: CsvMapping = field(default_factory=CsvMapping)
    util_scale: float | None = None
    max_gap_factor: float = MAX_GAP_FACTOR
    default_interval_s: float = DEFAULT_INTERVAL_S


@dataclass
class SourceDone:
    """One source ingested (:func:`ingest_source`): its summary, the time it covers per device (for the
    overlap check), its content fingerprint, and the files (and their aggregates) it staged when a task
    wrote them."""

    summary: SourceSummary
    spans: pd.DataFrame
    fingerprint: str
    staged: list[str] = field(default_factory=list)
    aggregates: list[str] = field(default_factory=list)
    rows: int = 0

    def entry(self) -> dict:
        """Its manifest entry."""
        return {
            "dataset": DATASET,
            "source_key": self.summary.key,
            **{k: v for k, v in asdict(self.summary).items() if k != "key"},
            "coverage": self.summary.coverage,
            "fingerprint": self.fingerprint,
        }


def ingest_source(
    writer: Any,
    i: int,
    src: Path,
    options: SourceOptions,
    staging: Path,
    on_rows: Callable[[int], None] | None = None,
) -> SourceDone:
    """Source ``i`` of an ingest → its store files through ``writer`` (a transaction, or a
    :class:`~finops_cli.store.store.StagedWriter` in a Spark task); its spill goes under ``staging``.

    Every engine runs this per source: the local engine in this process, the Spark engine as one task each.
    """
    mapping = options.mapping
    columns = _columns_for_sniffing(src)
    mapped = mapping != CsvMapping() and not columns & {_PROM_TEXT, _PROM_RANGE}
    # column-mapping flags only make sense for the generic CSV: they decide ``auto``
    fmt = options.fmt
    entry, _ = UTILIZATION_FORMATS.resolve("csv" if fmt == "auto" and mapped else fmt, columns, src)
    name = entry.name
    util_scale = options.util_scale
    key_options = {
        "mapping": asdict(mapping) if name == "csv" else None,
        "util_scale": util_scale,
        "max_gap_factor": options.max_gap_factor,
    }
    key, fingerprint = _content_key(src, name, key_options)
    summary = SourceSummary(source=str(src), format=name, key=key)
    batches = _parse(src, name, mapping)
    hint = util_scale if util_scale is not None else (util_scale_hint(src, mapping) if name == "csv" else 1.0)
    spill_dir = staging / "_spill" / str(i)
    n_buckets = max(1, math.ceil(_size(src) / BUCKET_BYTES))
    codes = _Codes()
    max_util = _spill(batches, spill_dir, n_buckets, summary, codes, on_rows)
    if summary.samples == 0:
        raise InputError("no utilisation samples found", path=src)
    if hint is None:
        scale, summary.util_scale_detected = (100.0 if max_util > 1.0 else 1.0), True
    else:
        scale, summary.util_scale_detected = float(hint), util_scale is None
    if max_util / scale > 1.0 + 1e-9:
        raise InputError(f"utilisation reaches {max_util:g}, above 1 on a 0–1 scale; pass --util-scale 100", path=src)
    summary.util_scale = scale
    months: set[str] = set()
    devices = 0
    buckets = [spill_dir / f"bucket-{b}.arrows" for b in range(n_buckets)]
    fallback = codes.cadence(options.default_interval_s)
    source_spans: list[pd.DataFrame] = []
    for bucket in buckets:
        if not bucket.exists():
            continue
        for part in _split_bucket(bucket, n_buckets):
            table = _read_bucket(part)
            devices += _write_bucket(
                writer,
                table,
                key,
                str(src),
                scale,
                options.max_gap_factor,
                fallback,
                summary,
                months,
                codes,
                source_spans,
            )
            part.unlink()
    summary.devices = devices
    summary.months = sorted(months)
    spans = pd.concat(source_spans, ignore_index=True).assign(key=key, source=str(src))
    return SourceDone(summary, spans, fingerprint)


def _parse(src: Path, name: str, mapping: CsvMapping) -> Iterator[pa.RecordBatch]:
    if name == "dcgm":
        return iter_dcgm(src)
    if name == "prometheus":
        return iter_prometheus_range(src)
    return iter_csv(src, mapping)


#: per-row string attributes, encoded to source-wide integer codes in pass 1
_ATTRS = ("device_id", "host", "accelerator", "team", "workload", "resource_id", "metric")
_SPILL_SCHEMA = pa.schema(
    [("timestamp_ns", pa.int64()), ("utilization", pa.float64())] + [(a, pa.int32()) for a in _ATTRS]
)


class _Codes:
    """Source-wide dictionaries (string value → int32 code, per attribute column) and the gap histogram.

    The histogram counts, in whole seconds, the gaps between consecutive samples of each device in input
    order. Its median is the source's cadence, used for devices seen only once; it is computed in pass 1
    so it does not depend on how the source was split into buckets.
    """

    def __init__(self) -> None:
        self.maps: dict[str, dict[str, int]] = {a: {} for a in _ATTRS}
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
        return local[idx]

    def dictionary(self, name: str) -> pa.Array:
        return pa.array(list(self.maps[name]), pa.string())


def _spill(
    batches: Iterator[pa.RecordBatch],
    spill_dir: Path,
    n_buckets: int,
    summary: SourceSummary,
    codes: _Codes,
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
            cols = {a: codes.encode(a, batch.column(a)) for a in _ATTRS}
            metric_counts = np.bincount(cols["metric"][cols["metric"] >= 0])
            names = list(codes.maps["metric"])
            for code in np.flatnonzero(metric_counts):
                summary.metrics[names[code]] = summary.metrics.get(names[code], 0) + int(metric_counts[code])
            ts = batch.column("timestamp_ns").to_numpy(zero_copy_only=False)
            codes.observe_gaps(cols["device_id"], ts)
            arrays = [pa.array(ts), pa.array(util)] + [pa.array(cols[a]) for a in _ATTRS]
            spill = pa.RecordBatch.from_arrays(arrays, schema=_SPILL_SCHEMA)
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
                    w = pa.ipc.new_stream(sink, _SPILL_SCHEMA)
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


def _split_bucket(path: Path, n_buckets: int) -> list[Path]:
    """``path`` itself, or its rows split by device into parts of about :data:`BUCKET_BYTES`.

    Pass 1 sizes the buckets from the source's size on disk, but a compressed source can expand a
    thousandfold (a 4 MB gzip holding 4 GiB). The spilled bytes are the decompressed truth: a bucket
    far above the target is re-split, streaming, so pass 2 still holds one bounded part in memory. A
    device's samples stay together (its intervals need all of them).
    """
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
                        writers[int(p)] = (sink, pa.ipc.new_stream(sink, _SPILL_SCHEMA))
                    writers[int(p)][1].write_batch(batch.filter(pa.array(part_of_row == p)))
    finally:
        for sink, w in writers.values():
            w.close()
            sink.close()
    path.unlink()
    return [path.with_name(f"{path.stem}-{p}.arrows") for p in sorted(writers)]


def _read_bucket(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_stream(source).read_all()


def _device_cadences(codes: np.ndarray, ts: np.ndarray) -> pd.Series:
    """Median gap (seconds) between consecutive distinct samples, per device code (sorted input)."""
    same = codes[1:] == codes[:-1]
    gaps = (ts[1:] - ts[:-1]) / 1e9
    ok = same & (gaps > 0)
    return pd.Series(gaps[ok]).groupby(codes[:-1][ok]).median()


def _write_bucket(
    tx: Any,
    table: pa.Table,
    key: str,
    source: str,
    scale: float,
    max_gap_factor: float,
    default_interval_s: float,
    summary: SourceSummary,
    months: set[str],
    codes: _Codes,
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
    same_next = np.zeros(len(ts), dtype=bool)
    same_next[:-1] = dev[1:] == dev[:-1]
    delta = np.zeros(len(ts), dtype=np.int64)
    delta[:-1] = ts[1:] - ts[:-1]
    dup = same_next & (delta == 0)
    if dup.any():  # overlapping scrapes: keep the last sample read
        keep = ~dup
        summary.duplicates_dropped += int(dup.sum())
        order, dev, ts = order[keep], dev[keep], ts[keep]
        same_next = np.zeros(len(ts), dtype=bool)
        same_next[:-1] = dev[1:] == dev[:-1]
        delta = np.zeros(len(ts), dtype=np.int64)
        delta[:-1] = ts[1:] - ts[:-1]
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
    for a in _ATTRS:
        c = dev if a == "device_id" else table.column(a).to_numpy()[order]
        columns[a] = pa.DictionaryArray.from_arrays(pa.array(c, mask=c < 0), codes.dictionary(a))
    columns["source"] = pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(len(ts), dtype=np.int32)), pa.array([source], pa.string())
    )
    out = pa.table({f.name: columns[f.name] for f in STORE_SCHEMA}, schema=STORE_SCHEMA)
    lo, hi = (np.datetime64(int(x), "ns").astype("datetime64[M]") for x in (ts.min(), ts.max()))
    if lo == hi:  # the common case: one month, no per-row month labels needed
        months.add(str(lo))
        tx.write(DATASET, {"month": str(lo)}, key, out)
        return len(first_idx)
    month_codes = ts.astype("datetime64[ns]").astype("datetime64[M]")
    for m in np.unique(month_codes):
        label = str(m)  # "2026-10"
        months.add(label)
        mask = month_codes == m
        tx.write(DATASET, {"month": label}, key, out.filter(pa.array(mask)))
    return len(first_idx)


# ------------------------------------------------------------------------------- no sample twice
def _stored_spans(store: Store, months: list[str], skip: set[str]) -> pd.DataFrame:
    """Per (stored source key, device): the time it covers, from the store's files for ``months``.

    The month before the first one is read too: its last samples' intervals may reach into it.
    """
    empty = pd.DataFrame({"key": [], "device": [], "start_us": [], "end_us": []})
    if not months or not store.has(DATASET):
        return empty
    first = np.datetime64(min(months), "M") - 1
    wanted = {*months, str(first)}
    frames = []
    for path in store.files(DATASET):
        if path.stem in skip or path.parent.name.partition("=")[2] not in wanted:
            continue
        t = pq.read_table(
            store.locate(path), columns=["device_id", "timestamp", "interval_s"], filesystem=store.filesystem
        )
        start = pc.cast(t["timestamp"], pa.int64())
        end = pc.add(start, pc.cast(pc.round(pc.multiply(t["interval_s"], 1e6)), pa.int64()))
        g = (
            pa.table({"device": pc.cast(t["device_id"], pa.string()), "start_us": start, "end_us": end})
            .group_by("device")
            .aggregate([("start_us", "min"), ("end_us", "max")])
            .to_pandas()
            .rename(columns={"start_us_min": "start_us", "end_us_max": "end_us"})
        )
        frames.append(g.assign(key=path.stem))
    if not frames:
        return empty
    return pd.concat(frames).groupby(["key", "device"], as_index=False).agg({"start_us": "min", "end_us": "max"})


def _overlapping(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Pairs of (a, b) spans of the same device that share time (half-open: touching is fine)."""
    m = a.merge(b, on="device", suffixes=("", "_other"))
    return m[(m["start_us"] < m["end_us_other"]) & (m["start_us_other"] < m["end_us"])]


def _when(us: int) -> str:
    return str(np.datetime64(int(us), "us").astype("datetime64[s]")).replace("T", " ")


def _check_overlaps(store: Store, tx: Transaction, new: pd.DataFrame, *, replace: bool) -> list[dict]:
    """Refuse (or with ``replace``, remove) stored sources covering the same device at the same time.

    Sources of one command may not overlap each other either. Returns the stored sources removed.
    """
    keys = sorted(set(new["key"]))
    for i, k in enumerate(keys):  # within this command
        mine = new[new["key"] == k]
        for other in keys[i + 1 :]:
            clash = _overlapping(mine, new[new["key"] == other])
            if len(clash):
                row = clash.iloc[0]
                raise InputError(
                    f"overlaps {row['source_other']} on {len(clash)} device(s) (e.g. {row['device']} at "
                    f"{_when(max(row['start_us'], row['start_us_other']))} UTC): the same GPU time would be counted "
                    "twice; ingest one of them",
                    path=Path(row["source"]),
                )
    months = sorted({str(np.datetime64(int(us), "us").astype("datetime64[M]")) for us in new["start_us"]})
    months += sorted({str(np.datetime64(int(us) - 1, "us").astype("datetime64[M]")) for us in new["end_us"]})
    stored = _stored_spans(store, sorted(set(months)), skip=set(keys))
    clash = _overlapping(new, stored.rename(columns={"key": "stored_key"}))
    if clash.empty:
        return []
    sources = {e.get("source_key"): e.get("source", "?") for e in store.manifest() if e.get("dataset") == DATASET}
    replaced = []
    for stored_key, rows in clash.groupby("stored_key"):
        row = rows.iloc[0]
        what = f"source {stored_key} ({sources.get(stored_key, '?')})"
        if not replace:
            raise InputError(
                f"overlaps {what}, already in the store, on {rows['device'].nunique()} device(s) (e.g. {row['device']} "
                f"at {_when(max(row['start_us'], row['start_us_other']))} UTC): the same samples would be counted "
                f"twice. Pass --replace to replace it, or remove it first: finops store remove {stored_key}",
                path=Path(row["source"]),
            )
        tx.remove_source(DATASET, str(stored_key))
        devices = int(rows["device"].nunique())
        replaced.append({"key": stored_key, "source": sources.get(stored_key), "devices": devices})
    return replaced

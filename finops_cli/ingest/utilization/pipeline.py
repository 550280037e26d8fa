"""Utilisation ingest: parse → spill by device → infer intervals → atomic store write.

A sample's interval is the time to its device's next sample, so samples are spilled into device buckets
(memory bounded by a bucket, not the source) and each bucket sorted. Each source is keyed by its content and
the options that change its meaning, and may not cover a device's time another source covers. The rules for
users: docs/formats.md ("What is stored").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from finops_cli.errors import InputError
from finops_cli.ingest.utilization.csv import CsvMapping, util_scale_hint
from finops_cli.ingest.utilization.overlaps import check_overlaps
from finops_cli.ingest.utilization.sources import (
    DATASET,
    PROM_RANGE,
    PROM_TEXT,
    UTILIZATION_FORMATS,
    SourceSummary,
    columns_for_sniffing,
    content_key,
    find_sources,
    parse_source,
    source_size,
)
from finops_cli.ingest.utilization.spill import BUCKET_BYTES, Codes, read_bucket, spill, split_bucket, write_bucket
from finops_cli.store import Store
from finops_cli.store.engine import stage_aggregates
from finops_cli.store.store import Transaction

DEFAULT_INTERVAL_S = 60.0
MAX_GAP_FACTOR = 1.5


@dataclass
class UtilizationIngest:
    """Result of :func:`ingest_utilization`."""

    sources: list[SourceSummary]
    rows_written: int
    #: stored sources removed because a new source overlaps them (``replace=True``): {key, source, devices}
    replaced: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows_written": self.rows_written,
            "replaced": self.replaced,
            "sources": [{**asdict(s), "coverage": s.coverage} for s in self.sources],
        }


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

    ``fmt``: ``auto`` (sniff each source), ``dcgm``, ``prometheus`` or ``csv``. ``util_scale``: 1 or 100; None
    detects it per source. ``replace``: remove overlapping stored sources instead of refusing. ``stager``
    reads the sources (default :class:`InProcessStager`; Spark: one task per source).
    """
    mapping = mapping or CsvMapping()
    if util_scale is not None and util_scale not in (1, 100):
        raise InputError(f"must be 1 or 100; got {util_scale:g}", param="util_scale")
    options = SourceOptions(fmt, mapping, util_scale, max_gap_factor, default_interval_s)
    sources = find_sources([Path(p) for p in paths])
    stager = stager or InProcessStager()
    with store.transaction(aggregates=stage_aggregates) as tx:
        done = stager.stage(sources, options, tx, on_rows)
        for d in done:
            tx.forget_source(d.summary.key)
            tx.record(d.entry())
        spans = pd.concat([d.spans for d in done], ignore_index=True)
        replaced = check_overlaps(store, tx, spans, replace=replace)
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

    def entry(self) -> dict[str, Any]:
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
    :class:`~finops_cli.store.staging.StagedWriter` in a Spark task); its spill goes under ``staging``.

    Every engine runs this per source: the local engine in this process, the Spark engine as one task each.
    """
    mapping = options.mapping
    columns = columns_for_sniffing(src)
    mapped = mapping != CsvMapping() and not columns & {PROM_TEXT, PROM_RANGE}
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
    key, fingerprint = content_key(src, name, key_options)
    summary = SourceSummary(source=str(src), format=name, key=key)
    batches = parse_source(src, name, mapping)
    hint = util_scale if util_scale is not None else (util_scale_hint(src, mapping) if name == "csv" else 1.0)
    spill_dir = staging / "spill" / str(i)
    n_buckets = max(1, math.ceil(source_size(src) / BUCKET_BYTES))
    codes = Codes()
    max_util = spill(batches, spill_dir, n_buckets, summary, codes, on_rows)
    if summary.samples == 0:
        raise InputError("no utilisation samples found", path=src)
    if hint is None:
        scale, summary.util_scale_detected = (100.0 if max_util > 1.0 else 1.0), True
    else:
        scale, summary.util_scale_detected = float(hint), util_scale is None
    if max_util / scale > 1.0 + 1e-9:
        raise InputError(
            f"utilisation reaches {max_util:g}, above 1 on a 0–1 scale; pass `util_scale` 100",
            path=src,
            mentions=("util_scale",),
        )
    summary.util_scale = scale
    months: set[str] = set()
    devices = 0
    fallback, gap = codes.cadence(options.default_interval_s), options.max_gap_factor
    spans: list[pd.DataFrame] = []
    for bucket in (spill_dir / f"bucket-{b}.arrows" for b in range(n_buckets)):
        if not bucket.exists():
            continue
        for part in split_bucket(bucket, n_buckets):
            devices += write_bucket(writer, read_bucket(part), summary, codes, scale, gap, fallback, months, spans)
            part.unlink()
    summary.devices = devices
    summary.months = sorted(months)
    spans_df = pd.concat(spans, ignore_index=True).assign(key=key, source=str(src))
    return SourceDone(summary, spans_df, fingerprint)

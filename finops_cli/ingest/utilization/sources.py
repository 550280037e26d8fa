"""A utilisation source: finding sources among the paths given, sniffing their format, keying their content,
parsing them to raw sample batches, and what each contributed (see :mod:`.pipeline`)."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from finops_cli.errors import InputError
from finops_cli.ingest.readers.common import SUFFIXES, existing_path, files_in, kind_of
from finops_cli.ingest.readers.stream import read_header
from finops_cli.ingest.registry import Registry
from finops_cli.ingest.utilization.csv import DEFAULTS, CsvMapping, iter_csv
from finops_cli.ingest.utilization.dcgm import SCRAPE_SUFFIXES, iter_dcgm
from finops_cli.ingest.utilization.prometheus import iter_prometheus_range

DATASET = "utilization"

PROM_TEXT = "#prometheus-text"
PROM_RANGE = "#prometheus-range"

#: Utilisation formats for ``--format``; sniffers see a file's columns, or a marker for non-tabular text.
UTILIZATION_FORMATS: Registry[str] = Registry("utilisation format")
for _name, _aliases, _sniff in (
    ("dcgm", ["dcgm-exporter", "prometheus-text"], lambda c: PROM_TEXT in c),
    ("prometheus", ["prometheus-range", "promql"], lambda c: PROM_RANGE in c),
    (
        "csv",
        ["generic"],
        lambda c: any(x in c for x in DEFAULTS["timestamp"]) and any(x in c for x in DEFAULTS["util"]),
    ),
):
    UTILIZATION_FORMATS.register(_name, aliases=_aliases, sniff=_sniff)(_name)


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


# ------------------------------------------------------------------------------------ source discovery
def find_sources(paths: list[Path]) -> list[Path]:
    """Files, and directories of scrape files (one source each: a scrape series is one trace).

    Other directories are searched recursively; a sub-directory holding scrape files is one source.
    """
    out: dict[Path, Path] = {}
    for p in map(existing_path, paths):
        files = files_in(p, (*SUFFIXES, *SCRAPE_SUFFIXES)) if p.is_dir() else [p]
        if not files:
            raise InputError("directory holds no utilisation files", path=p)
        for f in files:
            src = f.parent if p.is_dir() and f.name.endswith(SCRAPE_SUFFIXES) else f
            out.setdefault(src.resolve(), src)
    return list(out.values())


def columns_for_sniffing(path: Path) -> frozenset[str]:
    if path.is_dir() or path.name.endswith(SCRAPE_SUFFIXES):
        return frozenset({PROM_TEXT})
    name = path.name.lower()
    if name.endswith((".json", ".json.gz")):
        opener = gzip.open if name.endswith(".gz") else open
        try:
            with opener(path, "rt", encoding="utf-8") as fh:
                head = fh.read(4096)
        except (OSError, UnicodeDecodeError, EOFError) as exc:
            raise InputError(f"cannot read: {exc}", path=path) from None
        if '"resultType"' in head or ('"result"' in head and '"values"' in head):
            return frozenset({PROM_RANGE})
    kind_of(path)
    return frozenset(read_header(path))


def content_key(path: Path, fmt: str, options: dict[str, Any]) -> tuple[str, str]:
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


def source_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file()) if path.is_dir() else path.stat().st_size


def parse_source(src: Path, name: str, mapping: CsvMapping) -> Iterator[pa.RecordBatch]:
    if name == "dcgm":
        return iter_dcgm(src)
    if name == "prometheus":
        return iter_prometheus_range(src)
    return iter_csv(src, mapping)

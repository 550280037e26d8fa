"""NVIDIA dcgm-exporter scrapes (Prometheus text exposition format), one file or a directory of them.

The metrics and labels read, and where a scrape's time comes from: docs/formats.md ("dcgm-exporter scrapes").
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from functools import reduce
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from prometheus_client.parser import parse_labels, text_string_to_metric_families

from finops_cli.errors import InputError
from finops_cli.files import decode_text, read_bytes
from finops_cli.ingest.utilization.common import (
    DEV_GPU_UTIL,
    EPOCH_MAX_S,
    PROF_GR_ENGINE_ACTIVE,
    RAW_SCHEMA,
    accelerator_from_model_name,
    check_epoch_seconds,
    raw_batch,
)
from finops_cli.processes import usable_cores

SCRAPE_SUFFIXES = (".prom", ".prom.gz", ".txt", ".txt.gz", ".metrics")
_METRICS = (PROF_GR_ENGINE_ACTIVE, DEV_GPU_UTIL)
_ISO_NAME = re.compile(r"(\d{4})-?(\d{2})-?(\d{2})[T_ ]?(\d{2})[:\-]?(\d{2})[:\-]?(\d{2})")
_EPOCH_NAME = re.compile(r"(?<!\d)(\d{13}|\d{10})(?!\d)")
_BATCH_ROWS = 200_000


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


def parse_scrape(text: str, path: Path, file_ts_ns: int | None) -> dict[str, list[Any]]:
    """One scrape → columns of :data:`RAW_SCHEMA` (utilisation in the metric's own scale)."""
    per_device: dict[tuple[str, int | None], dict[str, tuple[float, dict[str, str]]]] = {}
    try:
        for family in text_string_to_metric_families(text):
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
                ts = int(float(sample.timestamp) * 1e9) if sample.timestamp is not None else file_ts_ns
                if ts is None:
                    raise InputError(
                        "no timestamp: sample lines carry none and the file name has none "
                        "(name files like scrape-2026-10-01T00-00-00Z.prom or scrape-1793491200.prom)",
                        path=path,
                    )
                per_device.setdefault((device, ts), {})[sample.name] = (float(sample.value), labels)
    except ValueError as exc:
        raise InputError(f"not Prometheus text exposition format: {exc}", path=path) from None
    cols: dict[str, list[Any]] = {k: [] for k in RAW_SCHEMA.names}
    for (_, ts), metrics in per_device.items():
        name = PROF_GR_ENGINE_ACTIVE if PROF_GR_ENGINE_ACTIVE in metrics else DEV_GPU_UTIL
        value, labels = metrics[name]
        cols["timestamp_ns"].append(ts)
        for key, fact in zip(_FACTS, _label_facts(labels), strict=True):
            cols[key].append(fact)
        cols["utilization"].append(value / 100.0 if name == DEV_GPU_UTIL else value)
        cols["metric"].append(name)
    return cols


def iter_dcgm(path: Path) -> Iterator[pa.RecordBatch]:
    """Raw batches (utilisation normalised to 0–1) from one scrape file or a directory of timestamped scrapes.

    Groups of files are parsed on the vectorised path (:func:`parse_scrapes`) on threads while the next files are
    read; a group it does not vouch for goes through prometheus_client file by file. Batches, and a file's error,
    come in file order."""

    def parsed(group: list[tuple[Path, bytes, int | None]]) -> list[pa.RecordBatch]:
        return list(_parse_group(group))

    workers = max(1, min(_PARSERS, usable_cores()))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dcgm") as pool:
        pending: deque[Future[list[pa.RecordBatch]]] = deque()
        try:
            for group in _groups(path):
                pending.append(pool.submit(parsed, group))
                if len(pending) >= workers:
                    yield from pending.popleft().result()
        except InputError as exc:  # an unreadable file: raised after the groups before it, as in file order
            failed: Future[list[pa.RecordBatch]] = Future()
            failed.set_exception(exc)
            pending.append(failed)
        try:
            while pending:
                yield from pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def _groups(path: Path) -> Iterator[list[tuple[Path, bytes, int | None]]]:
    """The scrape files read into groups of about :data:`_GROUP_CHARS` bytes."""
    group: list[tuple[Path, bytes, int | None]] = []
    chars = 0
    for file in scrape_files(path):
        data = read_bytes(file, kind=_KIND)  # UTF-8 is checked by Arrow on the group (and named per file if not)
        group.append((file, data, timestamp_from_name(file.name)))
        chars += len(data)
        if chars >= _GROUP_CHARS:
            yield group
            group, chars = [], 0
    if group:
        yield group


#: groups parsed at once (each holds ≈ 3× its text in memory while it parses)
_PARSERS = 2
#: text parsed per vectorised pass (≈ 75 k sample lines)
_GROUP_CHARS = 16 << 20
_KIND = "a dcgm-exporter scrape (Prometheus text format)"


def _parse_group(group: list[tuple[Path, bytes, int | None]]) -> Iterator[pa.RecordBatch]:
    fast = parse_scrapes(group)
    if fast is not None:
        if len(fast["timestamp_ns"]):
            yield raw_batch(fast)
        return
    buffer: dict[str, list[Any]] | None = None
    for file, data, file_ts in group:
        cols = parse_scrape(decode_text(data, file, kind=_KIND), file, file_ts)
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


_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABELS = r'\{(?:\s*[a-zA-Z_][a-zA-Z0-9_]*\s*=\s*"(?:[^"\\]|\\.)*"\s*,?)*\s*\}'
#: a sample line as prometheus_client reads it without complaint (a stricter subset: the rest falls back)
_NUMBER = r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))"
_SAMPLE = rf"^(?P<name>{_NAME})(?P<labels>{_LABELS})?[ \t]+(?P<value>{_NUMBER})(?:[ \t]+(?P<ts>-?[0-9]+))?$"
_OURS = "|".join(_METRICS)
#: value and optional time at the end of a validated sample line
_TAIL = rf"[ \t]+(?P<value>{_NUMBER})(?:[ \t]+(?P<ts>-?[0-9]+))?$"
#: label set text → its facts: the same devices report in every scrape, so each set is parsed once
_FACT_CACHE: dict[str, tuple[Any, ...]] = {}
_FACT_CACHE_SIZE = 200_000


def parse_scrapes(group: Sequence[tuple[Path, bytes | str, int | None]]) -> dict[str, pa.Array] | None:
    """Scrapes → columns of :data:`RAW_SCHEMA` with Arrow kernels on all lines at once, or None when a line
    needs prometheus_client's judgement (anything unusual: a malformed line, a value outside 0–100, no time).

    Same rows, in the same order, as :func:`parse_scrape` file by file: per file and (device, time), the
    last sample of the preferred metric; label sets are parsed once each (by prometheus_client).
    """
    blobs = [text.encode() if isinstance(text, str) else text for _, text, _ in group]
    try:  # bytes → Arrow text without a Python str per file; Arrow checks the UTF-8 (SIMD)
        texts = pa.array(blobs, pa.large_binary()).cast(pa.large_string())
    except pa.ArrowInvalid:
        return None  # the file by file path names the file and the byte
    split = pc.split_pattern(texts, "\n")
    file_of_line = pc.list_parent_indices(split).to_numpy()
    lines = _trimmed(pc.list_flatten(split))
    comment = pc.starts_with(lines, "#")
    skip = pc.or_(pc.equal(lines, ""), comment)
    comments = pc.filter(lines, comment)  # a few per metric: the patterns below run on these only
    typed = pc.filter(comments, pc.match_substring_regex(comments, rf"^#[ \t]+TYPE[ \t]+({_OURS})[ \t]"))
    if len(typed) and not pc.all(pc.match_substring_regex(typed, r"[ \t](gauge|untyped)$")).as_py():
        return None  # a counter is renamed *_total by prometheus_client: let it decide
    samples = pc.invert(skip)
    # every sample line, of any metric, must be one prometheus_client reads without complaint (comments and
    # blank lines pass through the "or": no copy of the sample lines is made)
    if not pc.all(pc.or_(skip, pc.match_substring_regex(lines, _SAMPLE))).as_py():
        return None
    # ours: a cheap prefix test on every line, the exact pattern on the few that pass it
    prefixed = pc.and_(samples, reduce(pc.or_, (pc.starts_with(lines, name) for name in _METRICS)))
    idx = np.flatnonzero(prefixed.to_numpy(zero_copy_only=False))
    idx = idx[pc.match_substring_regex(pc.take(lines, idx), rf"^({_OURS})[{{ \t]").to_numpy(zero_copy_only=False)]
    mine = pc.take(lines, idx)
    file_of = file_of_line[idx]
    parts = pc.extract_regex(mine, _TAIL)  # lines already validated: cheap patterns split them
    try:
        value = pc.cast(pc.struct_field(parts, "value"), pa.float64()).to_numpy(zero_copy_only=False)
        ms_text = pc.struct_field(parts, "ts")  # "" where the line has no time (RE2 gives "" for a missing group)
        ms = pc.cast(pc.if_else(pc.equal(ms_text, ""), pa.scalar(None, ms_text.type), ms_text), pa.int64())
    except pa.ArrowException:
        return None
    if len(value) and not ((value >= 0) & (value <= 100)).all():  # NaN fails too
        return None
    file_ts = np.array([-1 if t is None else t for _, _, t in group], dtype=np.int64)[file_of]
    # as prometheus_client computes it: ms / 1000 (seconds, float), then × 1e9 truncated
    secs = ms.to_numpy(zero_copy_only=False).astype(np.float64) / 1000 if len(ms) else np.zeros(0)
    has_ts = pc.is_valid(ms).to_numpy(zero_copy_only=False)
    if has_ts.any() and not ((secs[has_ts] >= 0) & (secs[has_ts] < EPOCH_MAX_S)).all():
        return None
    ts = np.where(has_ts, np.nan_to_num(secs * 1e9).astype(np.int64), file_ts)
    if (ts[~has_ts] < 0).any():
        return None
    # (one extract_regex with a group for the labels too is ~5× slower: RE2 captures long groups slowly)
    label_text = pc.replace_substring_regex(pc.replace_substring_regex(mine, _TAIL, ""), rf"^({_OURS})", "")
    labels = pc.dictionary_encode(label_text)
    facts = []
    try:
        for text in labels.dictionary.to_pylist():
            fact = _FACT_CACHE.get(text)
            if fact is None:
                parsed = parse_labels(text[1:-1]) if text else {}
                if "__name__" in parsed:
                    return None
                fact = _label_facts(parsed)
                if len(_FACT_CACHE) < _FACT_CACHE_SIZE:
                    _FACT_CACHE[text] = fact
            facts.append(fact)
    except ValueError:
        return None
    codes = labels.indices.to_numpy(zero_copy_only=False)
    device_of_set = pc.dictionary_encode(pa.array([f[0] for f in facts], pa.string()))
    device = device_of_set.indices.to_numpy(zero_copy_only=False)[codes]
    rank = np.where(pc.starts_with(mine, PROF_GR_ENGINE_ACTIVE).to_numpy(zero_copy_only=False), 0, 1)
    row = np.arange(len(idx))
    # per (file, device, time): the preferred metric, and of it the last sample (prometheus_client's dict)
    order = np.lexsort((-row, rank, ts, device, file_of))
    f_, d_, t_ = file_of[order], device[order], ts[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (f_[1:] != f_[:-1]) | (d_[1:] != d_[:-1]) | (t_[1:] != t_[:-1])
    starts = np.flatnonzero(new)
    chosen = order[starts]
    first_seen = np.minimum.reduceat(order, starts) if len(order) else order
    chosen = chosen[np.lexsort((first_seen, file_of[chosen]))]
    sets = codes[chosen]
    util = np.where(rank[chosen] == 1, value[chosen] / 100.0, value[chosen])

    taken = pa.array(sets, pa.int64())
    out: dict[str, pa.Array] = {"timestamp_ns": pa.array(ts[chosen], pa.int64())}
    for i, key in enumerate(_FACTS):
        out[key] = pc.take(pa.array([f[i] for f in facts], pa.string()), taken)
    out["utilization"] = pa.array(util, pa.float64())
    out["metric"] = pc.take(pa.array(list(_METRICS), pa.string()), pa.array(rank[chosen], pa.int64()))
    return out


#: bytes that may begin or end a line utf8_trim_whitespace would change: ASCII white space, and any byte of a
#: multi-byte character (some are Unicode white space: such lines are trimmed, not judged here)
_EDGE = np.zeros(256, dtype=bool)
_EDGE[[9, 10, 11, 12, 13, 32]] = True
_EDGE[128:] = True


def _trimmed(lines: pa.Array) -> pa.Array:
    """``utf8_trim_whitespace(lines)``, without the copy of every line when no line starts or ends in white
    space (a machine-written scrape: every line but a CRLF file's)."""
    n = len(lines)
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset : lines.offset + n + 1]
    data = (
        np.frombuffer(lines.buffers()[2], dtype=np.uint8) if lines.buffers()[2] is not None else np.zeros(0, np.uint8)
    )
    starts, ends = offsets[:-1], offsets[1:]
    full = ends > starts
    if lines.null_count or _EDGE[data[starts[full]]].any() or _EDGE[data[ends[full] - 1]].any():
        return pc.utf8_trim_whitespace(lines)
    return lines


#: the columns :func:`_label_facts` gives, in its order
_FACTS = ("device_id", "host", "accelerator", "team", "workload", "resource_id")


def _label_facts(labels: dict[str, str]) -> tuple[str, str | None, str | None, str | None, str | None, str | None]:
    """(device, host, accelerator, team, workload, resource id) of one label set, as :func:`parse_scrape`."""
    host = labels.get("Hostname") or None
    return (
        labels.get("UUID") or f"{labels.get('Hostname', '')}/gpu{labels.get('gpu', '')}",
        host,
        accelerator_from_model_name(labels.get("modelName")),
        labels.get("team") or labels.get("namespace") or None,
        labels.get("workload") or labels.get("pod") or None,
        labels.get("resource_id") or labels.get("instance_id") or host,
    )

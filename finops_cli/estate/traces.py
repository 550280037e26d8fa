"""Read spot preemption traces (``finops netc --trace``, ``interruption: {trace: FILE}``): Can't Be Late JSON, single-
or multi-node, or a CSV of preemption times. Formats and how λ̂ is measured: docs/economics.md §5 "Traces".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from finops_cli.core.netc import (
    available_intervals,
    estimate_rate,
    estimate_rate_from_events,
    node_series,
)
from finops_cli.core.netc_report import Trace
from finops_cli.errors import InputError
from finops_cli.files import csv_line, parse_json, read_csv_text, read_text


def _trace_nodes(path: Path, meta: dict[str, Any], counts: np.ndarray, nodes: int | None) -> int:
    """N for a multi-node trace: given, metadata, an ``<N>-node`` directory, else the largest count seen."""
    if nodes is not None:
        return nodes
    for key in ("nodes", "num_nodes"):
        value = meta.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
    for part in reversed(path.parts[:-1]):
        m = re.fullmatch(r"(\d+)-nodes?", part)
        if m and int(m.group(1)) >= 1:
            return int(m.group(1))
    return max(int(counts.max()), 1)


def _read_cant_be_late(path: Path, doc: object, nodes: int | None = None) -> Trace:
    if not isinstance(doc, dict) or "data" not in doc:
        raise InputError(
            'expected a Can\'t Be Late trace {"metadata": {"gap_seconds": N}, "data": [0/1 or node counts ...]}',
            path=path,
        )
    meta = doc.get("metadata") or {}
    meta = meta if isinstance(meta, dict) else {}
    gap = meta.get("gap_seconds")
    if not isinstance(gap, int | float) or isinstance(gap, bool) or gap <= 0:
        raise InputError(f"metadata.gap_seconds: expected a number > 0, got {gap!r}", path=path)
    data = doc["data"]
    if not isinstance(data, list) or not data:
        raise InputError("data: expected a non-empty list of 0/1 or unavailable-node counts", path=path)
    bad = [i for i, v in enumerate(data) if not isinstance(v, int) or isinstance(v, bool) or v < 0]
    if bad:
        raise InputError(f"data[{bad[0]}]: expected a count of unavailable nodes (0, 1, 2 …), got {data[bad[0]]!r}",
                         path=path)  # fmt: skip
    counts = np.asarray(data, dtype=np.int64)
    n = _trace_nodes(path, meta, counts, nodes)
    if counts.max() > n:
        i = int(counts.argmax())
        raise InputError(f"data[{i}]: {counts[i]} unavailable nodes in a {n}-node trace", path=path)
    rate = estimate_rate(counts, float(gap), n)
    # the replay runs through the nodes' availability laid end to end (one long cycle)
    intervals = available_intervals(node_series(counts, n).reshape(-1), float(gap))
    if rate.available_hours == 0:
        raise InputError("the trace is unavailable at every step: no spot time to estimate from", path=path)
    return Trace(path.name, rate, intervals)


def _read_csv(path: Path) -> Trace:
    raw = read_csv_text(path, kind="preemption CSV")
    if "timestamp" not in raw.columns:
        raise InputError("missing column 'timestamp' (one row per preemption)", path=path)
    ts = pd.to_datetime(raw["timestamp"].str.strip(), utc=True, errors="coerce", format="ISO8601")
    if ts.isna().any():
        i = int(ts.isna().to_numpy().argmax())
        raise InputError(f"timestamp: expected an ISO 8601 time, got {raw['timestamp'].iloc[i]!r}", path=path,
                         where=csv_line(i))  # fmt: skip
    event = raw["event"].str.strip().str.lower() if "event" in raw.columns else pd.Series([""] * len(raw))
    is_start, is_end = event == "start", event == "end"
    pre = ts[~(is_start | is_end)].sort_values()
    hours = ((pre - pre.iloc[0]).dt.total_seconds() / 3600).to_numpy() if len(pre) else np.array([])
    if is_start.any() and is_end.any():
        start, end = ts[is_start].min(), ts[is_end].max()
        if end <= start:
            raise InputError("the 'end' row must come after the 'start' row", path=path)
        observed = (end - start).total_seconds() / 3600
        rate = estimate_rate_from_events(pre, observed)
        bounds = np.concatenate([[0.0], ((pre - start).dt.total_seconds() / 3600).to_numpy(), [observed]])
        gaps = np.diff(bounds)
        # the run from the last preemption to the window end joins the first run (the cycle wraps)
        intervals = np.concatenate([[gaps[0] + gaps[-1]], gaps[1:-1]]) if len(pre) else np.array([np.inf])
    else:
        if len(pre) < 2:
            raise InputError("need at least two preemptions, or 'start'/'end' rows marking the window", path=path)
        observed = float(hours[-1])
        if observed <= 0:
            raise InputError("preemption timestamps span no time", path=path)
        rate = estimate_rate_from_events(hours[1:], observed)  # the first preemption opens the window
        intervals = np.diff(hours)
    intervals = intervals[intervals > 0] if np.isfinite(intervals).all() else intervals
    return Trace(path.name, rate, intervals)


def read_trace(path: Path | str, nodes: int | None = None) -> Trace:
    """A :class:`Trace` from a Can't Be Late JSON file or a CSV of preemption timestamps; ``nodes``: how many nodes
    a multi-node trace watched (default: ``metadata.nodes``, an ``<N>-node`` directory, else the largest count)."""
    path = Path(path)
    text = read_text(path, kind="a trace (Can't Be Late JSON or preemption CSV)", missing="trace not found")
    if text.lstrip().startswith("{"):
        return _read_cant_be_late(path, parse_json(text, path, problem="invalid JSON"), nodes)
    return _read_csv(path)

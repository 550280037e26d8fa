"""Read spot preemption traces for ``finops netc --trace``: Can't Be Late JSON or a CSV of preemption times.

Formats
-------
Can't Be Late (Wu et al., NSDI '24, public traces)::

    {"metadata": {"gap_seconds": 600, ...}, "data": [0, 0, 1, 0, ...]}   # 1 = preempted / unavailable

CSV of preemption timestamps: a ``timestamp`` column (ISO 8601, UTC), one row per preemption. An
optional ``event`` column may mark the observation window with ``start`` and ``end`` rows (other
values, e.g. ``preempted``, are preemptions). Without a window the observation runs from the first to
the last preemption, so λ̂ = (n − 1) / span; all observed time counts as available.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from finops_cli.core.netc import available_intervals, estimate_rate, estimate_rate_from_events
from finops_cli.core.netc_report import Trace
from finops_cli.errors import InputError
from finops_cli.files import csv_line, parse_json, read_csv_text, read_text


def _read_cant_be_late(path: Path, doc: object) -> Trace:
    if not isinstance(doc, dict) or "data" not in doc:
        raise InputError(
            'expected a Can\'t Be Late trace {"metadata": {"gap_seconds": N}, "data": [0/1 ...]}', path=path
        )
    meta = doc.get("metadata") or {}
    gap = meta.get("gap_seconds") if isinstance(meta, dict) else None
    if not isinstance(gap, int | float) or isinstance(gap, bool) or gap <= 0:
        raise InputError(f"metadata.gap_seconds: expected a number > 0, got {gap!r}", path=path)
    data = doc["data"]
    if not isinstance(data, list) or not data:
        raise InputError("data: expected a non-empty list of 0/1", path=path)
    arr = np.asarray(data, dtype=object)
    bad = [i for i, v in enumerate(data) if v not in (0, 1) or isinstance(v, bool)]
    if bad:
        raise InputError(f"data[{bad[0]}]: expected 0 or 1, got {arr[bad[0]]!r}", path=path)
    u = np.asarray(data, dtype=np.int8)
    rate = estimate_rate(u, float(gap))
    if rate.available_hours == 0:
        raise InputError("the trace is unavailable at every step: no spot time to estimate from", path=path)
    return Trace(path.name, rate, available_intervals(u, float(gap)))


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


def read_trace(path: Path | str) -> Trace:
    """A :class:`Trace` from a Can't Be Late JSON file or a CSV of preemption timestamps."""
    path = Path(path)
    text = read_text(path, kind="a trace (Can't Be Late JSON or preemption CSV)", missing="trace not found")
    if text.lstrip().startswith("{"):
        return _read_cant_be_late(path, parse_json(text, path, problem="invalid JSON"))
    return _read_csv(path)

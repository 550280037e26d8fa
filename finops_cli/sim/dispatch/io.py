"""Request traces and outage events read from and written to files, for the pure dispatch engine beside it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import csv
from pydantic import ValidationError

from finops_cli.atomic import atomic_path
from finops_cli.errors import InputError
from finops_cli.files import read_yaml_positions
from finops_cli.schema.errors import format_validation_error
from finops_cli.sim.dispatch.engine import TimedEvent, Trace
from finops_cli.sim.dispatch.events import EventsFile


def read_trace(path: str | Path, workload_ids: list[str] | tuple[str, ...]) -> Trace:
    """Read a request trace (CSV or Parquet: ``timestamp, workload, units``) for ``simulate dispatch``.

    ``timestamp`` is hours from the trace start (a number) or a timestamp (UTC when naive; the origin is
    the hour of the first request). Errors name the file, the row (CSV line) and the column.
    """

    p = Path(path)
    if not p.exists():
        raise InputError("trace not found", path=p)
    try:
        if p.suffix.lower() in (".parquet", ".pq"):
            table = pq.read_table(p)
            line_offset, row_word = 0, "row"
        else:
            table = csv.read_csv(p)
            line_offset, row_word = 2, "line"
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"cannot read trace ({str(exc).splitlines()[0]})", path=p) from None
    names = [c.strip() for c in table.column_names]
    table = table.rename_columns(names)
    missing = [c for c in ("timestamp", "workload", "units") if c not in names]
    if missing:
        raise InputError(f"missing column(s) {missing}; expected timestamp, workload, units", path=p)
    ts_col = table.column("timestamp")
    origin = None
    if pa.types.is_timestamp(ts_col.type) or pa.types.is_date(ts_col.type):
        ts = pc.cast(ts_col, pa.timestamp("us")) if pa.types.is_date(ts_col.type) else ts_col
        if ts.null_count:
            i = int(np.flatnonzero(pc.is_null(ts).to_numpy(zero_copy_only=False))[0])
            raise InputError("timestamp: empty", path=p, where=f"{row_word} {i + line_offset}")
        micros = pc.cast(ts, pa.timestamp("us", tz=ts.type.tz if hasattr(ts.type, "tz") else None)).cast(pa.int64())
        us = micros.to_numpy(zero_copy_only=False).astype(np.int64)
        first_hour_us = (us.min() // 3_600_000_000) * 3_600_000_000
        hours = (us - first_hour_us) / 3.6e9
        origin = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=int(first_hour_us))
    else:
        try:
            hours = pc.cast(ts_col, pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            texts = pc.cast(ts_col, pa.string()).to_pylist()
            i = next((k for k, v in enumerate(texts) if not _is_number(v)), 0)
            raise InputError(
                f"timestamp: expected hours from the start (a number) or an ISO timestamp, got {texts[i]!r}",
                path=p,
                where=f"{row_word} {i + line_offset}",
            ) from None
    bad = ~np.isfinite(hours)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError("timestamp: expected a number or a timestamp", path=p, where=f"{row_word} {i + line_offset}")
    try:
        units = pc.cast(table.column("units"), pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise InputError("units: expected numbers >= 0", path=p) from None
    bad = ~(np.isfinite(units) & (units >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"units: expected a number >= 0, got {units[i]!r}", path=p, where=f"{row_word} {i + line_offset}"
        )
    names = pc.cast(table.column("workload"), pa.string())
    found = pc.index_in(names, value_set=pa.array(list(workload_ids), pa.string()))
    if found.null_count:
        i = int(np.flatnonzero(pc.is_null(found).to_numpy(zero_copy_only=False))[0])
        raise InputError(
            f"workload: unknown workload {names[i].as_py()!r} (workloads.yaml has {', '.join(workload_ids)})",
            path=p,
            where=f"{row_word} {i + line_offset}",
        )
    w_idx = found.to_numpy(zero_copy_only=False).astype(np.int32)
    order = np.argsort(hours, kind="stable")
    return Trace(hours[order], w_idx[order], units[order], tuple(workload_ids), origin)


def _is_number(text: object) -> bool:
    try:
        float(str(text))
    except ValueError:
        return False
    return True


def write_trace(trace: Trace, path: str | Path) -> None:
    """Write a trace as CSV or Parquet (by suffix), atomically; timestamps ISO when it has an origin."""

    p = Path(path)
    if trace.origin is not None:
        start = np.datetime64(trace.origin.replace(tzinfo=None), "us")
        ts = pa.array(start + (trace.hours * 3.6e9).astype("timedelta64[us]"), pa.timestamp("us", tz="UTC"))
    else:
        ts = pa.array(trace.hours)
    names = np.array(trace.workload_ids, dtype=object)
    table = pa.table({"timestamp": ts, "workload": pa.array(names[trace.workload]), "units": pa.array(trace.units)})
    with atomic_path(p) as tmp:
        if p.suffix.lower() in (".parquet", ".pq"):
            pq.write_table(table, tmp)
        else:
            csv.write_csv(table, tmp)


def read_dispatch_events(path: str | Path, fleet_substrates: list[str], origin: Any = None) -> list[Any]:
    """Read and validate an events file (a YAML list); errors name the file and ``[i].field``."""

    p = Path(path)
    data, positions = read_yaml_positions(p)
    if data is None:
        data = []
    if not isinstance(data, list):
        raise InputError("expected a YAML list of events ({type, substrate, start, end, capacity_factor})", path=p)
    try:
        events = EventsFile.model_validate(data).root
    except ValidationError as exc:
        raise InputError(format_validation_error(p, exc, positions, root="events")) from None
    out = []
    known = set(fleet_substrates)
    for k, ev in enumerate(events):
        if ev.substrate not in known:
            raise InputError(f"events[{k}].substrate: unknown substrate {ev.substrate!r} (not in fleet.yaml)", path=p)
        try:
            start, end = ev.hours(origin)
        except ValueError as exc:
            raise InputError(f"events[{k}].start: {exc}", path=p) from None
        if end < start:
            raise InputError(f"events[{k}].end: must not be before start", path=p)
        out.append(TimedEvent(ev.type, ev.substrate, start, end, ev.capacity_factor or 1.0))
    return out

"""Value parsing shared by the formats: timestamps to UTC, numbers to float64, the first bad row of a mask."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.errors import InputError

_TZ_SUFFIX = re.compile(r"(Z|[+-]00:?00| ?UTC)$")


#: Billing and usage times outside these years are typos or corruption (year 0, 9999-12, -2^62 ns).
MIN_YEAR, MAX_YEAR = 1970, 2199


def to_utc(values: pa.Array | pa.ChunkedArray, *, path: object, column: str, first_row: int = 1) -> pa.Array:
    """Parse timestamps to ``timestamp[us, UTC]`` (ISO 8601 with or without zone, naive = UTC; dates; US
    ``MM/DD/YYYY``). A date outside :data:`MIN_YEAR`–:data:`MAX_YEAR`, or one that does not exist, is refused."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    try:
        parsed = _to_utc(values, path=path, column=column, first_row=first_row)
    except (pa.ArrowInvalid, OverflowError):  # a typed timestamp beyond what microseconds can hold
        raise InputError(f"a time beyond {MIN_YEAR}–{MAX_YEAR}", path=path, where=f"column {column!r}") from None
    lo = pa.scalar(datetime(MIN_YEAR, 1, 1, tzinfo=UTC), pa.timestamp("us", tz="UTC"))
    hi = pa.scalar(datetime(MAX_YEAR + 1, 1, 1, tzinfo=UTC), pa.timestamp("us", tz="UTC"))
    refuse_first(
        pc.or_(pc.less(parsed, lo), pc.greater_equal(parsed, hi)),
        lambda i: f"date {values[i].as_py()!s} is outside {MIN_YEAR}–{MAX_YEAR}",
        path=path,
        first_row=first_row,
        column=column,
    )
    return parsed


def _to_utc(values: pa.Array, *, path: object, column: str, first_row: int) -> pa.Array:
    utc = pa.timestamp("us", tz="UTC")
    t = values.type
    if pa.types.is_timestamp(t):
        if t.tz is None:
            return pc.cast(pc.cast(values, pa.timestamp("us")), utc)
        return pc.cast(values, utc)
    if pa.types.is_date(t):
        return pc.cast(pc.cast(values, pa.timestamp("us")), utc)
    # Billing timestamps repeat (hours of one month): parse each distinct text once.
    enc = pc.dictionary_encode(pc.cast(values, pa.string()))
    distinct = pc.utf8_trim_whitespace(enc.dictionary)
    for attempt in _LAYOUTS:
        try:
            return pc.take(attempt(distinct), enc.indices)
        except pa.ArrowException:
            continue
    values = pc.utf8_trim_whitespace(pc.cast(values, pa.string()))
    # Mixed layouts in one column (rare): parse each distinct value on its own.
    bad: list[str] = []

    def one(v: str) -> object:
        for attempt in _LAYOUTS:
            try:
                return attempt(pa.array([v], pa.string()))[0].as_py()
            except pa.ArrowException:
                continue
        bad.append(v)
        return None

    parsed = map_unique(values, one, utc)
    if bad:
        i = pc.index(values, bad[0]).as_py()
        raise InputError(
            f"expected a date/time such as 2026-10-01T00:00:00Z (got {bad[0]!r})",
            path=path,
            where=f"row {first_row + i}, column {column!r}",
        )
    return parsed


def _ts_with_zone(v: pa.Array) -> pa.Array:
    return pc.cast(v, pa.timestamp("us", tz="UTC"))


def _ts_naive(v: pa.Array) -> pa.Array:
    return pc.cast(pc.cast(v, pa.timestamp("us")), pa.timestamp("us", tz="UTC"))


def _ts_stripped(v: pa.Array) -> pa.Array:
    return _ts_naive(pc.replace_substring_regex(v, _TZ_SUFFIX.pattern, ""))


def _real_dates(v: pa.Array, fmt: str) -> None:
    """Arrow's strptime rolls ``02/30/2023`` over to March 2; Python's refuses it (and year 0)."""
    for text in v.to_pylist():
        if text is not None:
            try:
                datetime.strptime(text, fmt)
            except ValueError:
                raise pa.ArrowInvalid(f"no such date {text!r}") from None


def _ts_us_date(v: pa.Array) -> pa.Array:
    out = pc.cast(pc.strptime(v, format="%m/%d/%Y", unit="us", error_is_null=False), pa.timestamp("us", tz="UTC"))
    _real_dates(v, "%m/%d/%Y")
    return out


def _ts_us_datetime(v: pa.Array) -> pa.Array:
    out = pc.cast(
        pc.strptime(v, format="%m/%d/%Y %H:%M:%S", unit="us", error_is_null=False), pa.timestamp("us", tz="UTC")
    )
    _real_dates(v, "%m/%d/%Y %H:%M:%S")
    return out


_LAYOUTS = (_ts_with_zone, _ts_naive, _ts_stripped, _ts_us_date, _ts_us_datetime)


def to_float(values: pa.Array | pa.ChunkedArray, *, path: object, column: str, first_row: int = 1) -> pa.Array:
    """Cast to float64 (text allowed), naming the first row that is not a finite number (NaN/inf are refused)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    try:
        out = pc.cast(values, pa.float64())
    except pa.ArrowException:
        raise_first_uncastable(values.to_pylist(), pa.float64(), path=path, column=column, first_row=first_row)
        raise
    refuse_first(
        pc.invert(pc.is_finite(out)),
        lambda i: f"expected a finite number (got {values[i].as_py()!r})",
        path=path,
        first_row=first_row,
        column=column,
    )
    return out


def first_bad_row(bad: pa.Array | pa.ChunkedArray) -> int | None:
    """Index of the first true value of a boolean mask (nulls count as false), or None: the row an error names."""
    mask = pc.fill_null(bad, False)
    return int(pc.index(mask, True).as_py()) if pc.any(mask).as_py() else None


def refuse_first(
    bad: pa.Array | pa.ChunkedArray,
    message: str | Callable[[int], str],
    *,
    path: object,
    first_row: int,
    column: str | None = None,
) -> None:
    """Raise ``message`` (or ``message(i)``) naming the first row ``i`` where ``bad`` is true (nulls: false)."""
    i = first_bad_row(bad)
    if i is not None:
        where = f"row {first_row + i}" + (f", column {column!r}" if column else "")
        raise InputError(message if isinstance(message, str) else message(i), path=path, where=where)


def map_unique(values: pa.Array | pa.ChunkedArray, fn: Callable[[Any], Any], out_type: pa.DataType) -> pa.Array:
    """Apply a Python function once per distinct value and broadcast back (tags, SKU text, JSON cells).

    Billing columns are highly repetitive, so this is vectorised in practice: cost ∝ distinct values.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    enc = pc.dictionary_encode(values)
    mapped = pa.array([fn(v) for v in enc.dictionary.to_pylist()], out_type)
    return pc.take(mapped, enc.indices)


def raise_first_uncastable(
    values: list[Any], target: pa.DataType, *, path: object, column: str, first_row: int
) -> None:
    """After a whole-column cast failed: name the first value that does not cast to ``target``."""
    for j, v in enumerate(values):
        try:
            pc.cast(pa.array([v]), target)
        except (pa.ArrowException, TypeError):
            raise InputError(
                f"expected {'a number' if pa.types.is_floating(target) else target} (got {v!r})",
                path=path,
                where=f"row {first_row + j}, column {column!r}",
            ) from None

"""What every billing format implements, and the vectorised helpers they share.

A format turns record batches of source columns into :class:`Converted`: canonical FOCUS columns plus
``cost_in``, the money as the source states it (what the conservation check sums). Formats never touch the store.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.errors import InputError
from finops_cli.ingest.readers.values import map_unique, to_float, to_utc
from finops_cli.ingest.registry import Registry
from finops_cli.schema.billing import BILLING_SCHEMA

#: The billing format registry (``--format``); formats register in their modules.
BILLING_FORMATS: Registry[BillingFormat] = Registry("billing format")


@dataclass
class BatchContext:
    """Where a batch came from: for error messages and provenance columns."""

    path: Path
    first_row: int
    state: dict[str, Any] = field(default_factory=dict)  # per-file scratch (e.g. Azure export kind)


@dataclass
class Converted:
    """Canonical columns (a subset of the schema; the rest are filled with nulls) and the money in."""

    columns: dict[str, pa.Array | pa.ChunkedArray]
    cost_in: pa.Array
    #: instance-hours of each line for GPU-hour accounting (null/0 = not instance time); the pipeline
    #: multiplies by GPUs per instance unless ``x_GpuHours`` is given directly.
    usage_hours: pa.Array | None = None
    #: the store's provider slug when the whole format has one provider (aws, gcp, azure); None = per line
    #: from ProviderName (FOCUS)
    provider: str | None = None


class BillingFormat:
    """One billing export format. Subclasses set the class attributes and implement :meth:`convert`."""

    name: ClassVar[str] = ""
    #: source columns the format cannot do without (checked against the header before reading)
    required: ClassVar[tuple[str, ...]] = ()
    #: source column → Arrow type for numbers; every other column is read as text
    types: ClassVar[Mapping[str, pa.DataType]] = {}
    #: columns read when present (None = all columns, e.g. for tag columns with open-ended names)
    optional: ClassVar[tuple[str, ...] | None] = ()
    #: CSV: may quoted values contain line breaks? (False parses faster; only for exports that never do)
    newlines_in_values: ClassVar[bool] = True
    #: JSON Lines: columns that are lists of structs (decoded by ``pyarrow.json``; see ``iter_batches``)
    nested: ClassVar[Mapping[str, pa.DataType] | None] = None

    def columns(self, header: Sequence[str], *, every_known: bool = False) -> list[str] | None:
        """Source columns to decode for this header (``every_known``: also the format's columns the header
        lacks; JSON Lines, whose "header" is the first line's keys, may carry them on later lines)."""
        if self.optional is None:
            return None
        wanted = [*self.required, *self.optional, *self.types]
        known = set(wanted)
        out = [c for c in header if c in known or self.extra_column(c)]
        return out + [c for c in dict.fromkeys(wanted) if c not in set(out)] if every_known else out

    def extra_column(self, name: str) -> bool:
        """Open-ended columns to read too (tag columns such as ``resourceTags/user:team``)."""
        return False

    def check_header(self, header: Sequence[str], path: Path) -> None:
        missing = [c for c in self.required if c not in set(header)]
        if missing:
            raise InputError(
                f"not a {self.name} export: missing column(s) {', '.join(missing)}; found {len(header)} columns",
                path=path,
            )

    def types_for(self, header: Sequence[str]) -> Mapping[str, pa.DataType]:
        return self.types

    def convert(self, batch: pa.RecordBatch, ctx: BatchContext) -> Converted:  # pragma: no cover - abstract
        raise NotImplementedError


# ----------------------------------------------------------------------------------------------- helpers
def col(batch: pa.RecordBatch, name: str) -> pa.Array | None:
    """The column, or None when the file does not have it."""
    i = batch.schema.get_field_index(name)
    return batch.column(i) if i >= 0 else None


def first_col(batch: pa.RecordBatch, *names: str) -> pa.Array | None:
    """The first of ``names`` the file has (one column chosen per file, not per row)."""
    for name in names:
        c = col(batch, name)
        if c is not None:
            return c
    return None


@dataclass(frozen=True)
class SourceColumns:
    """A batch's source columns by the format's own keys (``names``: candidate columns per key, first present
    wins), typed on demand; a bad number or time names its row and column."""

    batch: pa.RecordBatch
    ctx: BatchContext
    names: Mapping[str, Sequence[str]] | None = None

    def source(self, key: str) -> str | None:
        """The source column that carries ``key`` in this batch, or None."""
        candidates = (key,) if self.names is None else self.names.get(key, ())
        return next((c for c in candidates if self.batch.schema.get_field_index(c) >= 0), None)

    def get(self, key: str) -> pa.Array | None:
        src = self.source(key)
        return None if src is None else col(self.batch, src)

    def num(self, key: str) -> pa.Array | None:
        """float64, or None when the file does not have the column."""
        src = self.source(key)
        if src is None:
            return None
        return to_float(col(self.batch, src), path=self.ctx.path, column=src, first_row=self.ctx.first_row)

    def ts(self, key: str) -> pa.Array | None:
        """UTC timestamps, or None when the file does not have the column."""
        src = self.source(key)
        if src is None:
            return None
        return to_utc(col(self.batch, src), path=self.ctx.path, column=src, first_row=self.ctx.first_row)


def coalesce(*arrays: pa.Array | None) -> pa.Array | None:
    """Row-wise first non-null value over the columns the file has (None when it has none of them)."""
    present = [a for a in arrays if a is not None]
    if len(present) <= 1:
        return present[0] if present else None
    return pc.coalesce(*present)


def const(value: object, n: int, type_: pa.DataType | None = None) -> pa.Array:
    type_ = type_ or pa.string()
    return pa.array([value] * n, type_) if value is None else pa.repeat(pa.scalar(value, type_), n)


def nulls(n: int, type_: pa.DataType | None = None) -> pa.Array:
    return pa.nulls(n, type_ or pa.string())


def fill0(a: pa.Array | None, n: int) -> pa.Array:
    if a is None:
        return pa.repeat(pa.scalar(0.0), n)
    return pc.fill_null(pc.cast(a, pa.float64()), 0.0)


def isin(a: pa.Array, values: Sequence[str]) -> pa.Array:
    return pc.fill_null(pc.is_in(a, value_set=pa.array(list(values), pa.string())), False)


def lookup(a: pa.Array, mapping: Mapping[str, str | None], default: str | None = None) -> pa.Array:
    """Map text values through a dict (case-insensitive keys), ``default`` for the rest (and nulls)."""
    low = {k.lower(): v for k, v in mapping.items()}
    out = map_unique(a, lambda v: low.get(str(v).strip().lower(), default), pa.string())
    return pc.fill_null(out, default) if default is not None else out


def canonical(values: pa.Array, allowed: Sequence[str], *, keep_unknown: bool) -> pa.Array:
    """Each value in the spec's spelling (``allowed``), matched on its letters alone so that case, spaces and
    hyphens do not matter (Oracle's ``Usage-based``, Azure's ``UsageBased``, ``one time``); unknown values are
    kept as written or nulled."""
    spelled = {_letters(v): v for v in allowed}
    return map_unique(values, lambda v: spelled.get(_letters(v), v if keep_unknown else None), pa.string())


def _letters(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


def where(cond: pa.Array, a: object, b: object) -> pa.Array:
    return pc.if_else(pc.fill_null(cond, False), a, b)


def only(cond: pa.Array, a: pa.Array | str | None) -> pa.Array | None:
    """``a`` where ``cond`` holds, null elsewhere; None when ``a`` is (the file lacks the column)."""
    if a is None:
        return None
    return where(cond, a, pa.scalar(None, pa.string() if isinstance(a, str) else a.type))


def month_floor(ts: pa.Array) -> pa.Array:
    return pc.floor_temporal(ts, unit="month")


def add_months(ts: pa.Array, months: int = 1) -> pa.Array:
    """First instant of the month ``months`` after each (month-floored) timestamp."""
    return map_unique(
        month_floor(ts),
        lambda v: _shift_month(v, months),
        pa.timestamp("us", tz="UTC"),
    )


def _shift_month(v: Any, months: int) -> Any:
    y, m = v.year, v.month - 1 + months
    return v.replace(year=y + m // 12, month=m % 12 + 1, day=1, hour=0, minute=0, second=0, microsecond=0)


def parse_json_cells(
    values: pa.Array,
    fn: Callable[[Any], str | None],
    *,
    path: Path,
    column: str,
    first_row: int,
    brace_less: bool = False,
    python_literals: bool = False,
) -> pa.Array:
    """Apply ``fn`` to each distinct JSON cell (parsed); a cell that is not JSON names its row and column.

    ``python_literals``: a cell written as a Python literal (``[{'amount': -1.5}]``, as some BigQuery-to-CSV
    tools print records) is read with :func:`ast.literal_eval`, which only reads data and never runs code."""

    def one(text: str) -> str | None:
        t = text.strip()
        if not t:
            return None
        if brace_less and not t.startswith(("{", "[")):
            t = "{" + t + "}"
        try:
            return fn(_loads(t, python_literals))
        except (json.JSONDecodeError, TypeError, AttributeError, ValueError, RecursionError, SyntaxError, MemoryError):
            raise _BadCell(text) from None  # RecursionError: nested thousands deep; ValueError: 5,000 digits

    try:
        return map_unique(values, one, pa.string())
    except _BadCell as bad:
        idx = pc.index(values, bad.value).as_py()
        raise InputError(
            f"expected JSON (got {bad.value[:60]!r})", path=path, where=f"row {first_row + idx}, column {column!r}"
        ) from None


def _loads(text: str, python_literals: bool) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        if not python_literals or len(text) > 100_000:
            raise
        return ast.literal_eval(text)


class _BadCell(Exception):
    def __init__(self, value: str) -> None:
        self.value = value


def tags_json(obj: Any) -> str | None:
    """Normalise a tag object ({k: v}, or GCP's [{key, value}]) to sorted compact JSON text."""
    if obj is None:
        return None
    if isinstance(obj, list):
        obj = {d["key"]: d.get("value") for d in obj if isinstance(d, dict) and "key" in d}
    if not isinstance(obj, dict):
        raise ValueError("tags must be an object")
    out = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in obj.items() if v is not None and v != ""}
    return json.dumps(out, sort_keys=True, separators=(",", ":")) if out else None


def tags_from_columns(batch: pa.RecordBatch, columns: Mapping[str, str]) -> pa.Array:
    """Tags JSON text, as :func:`tags_json` writes it, from one-column-per-tag layouts (``resourceTags/user:team``).

    ``columns`` maps source column → tag key; empty cells are left out, a row without tags gets null. Built with
    Arrow kernels on whole columns (Python only for distinct values that need JSON escaping); when two columns give
    one key, the first non-empty in (key, column) order wins."""
    n = batch.num_rows
    by_key: dict[str, list[pa.Array]] = {}
    for src, key in sorted(columns.items(), key=lambda kv: kv[1]):
        values = col(batch, src)
        if values is not None:
            by_key.setdefault(key, []).append(values)
    fragments = [_tag_fragments(key, arrays) for key, arrays in sorted(by_key.items())]
    if not fragments:
        return nulls(n)
    # Each fragment ends with a comma ("" where the tag is empty); the last comma becomes the brace.
    # (binary_join_element_wise's null_handling="skip" drops all-null rows in pyarrow 26: no nulls here.)
    joined = pc.binary_join_element_wise("{", *fragments, "")
    closed = pc.binary_join_element_wise(pc.utf8_slice_codeunits(joined, 0, -1), "}", "")
    return pc.if_else(pc.equal(joined, "{"), pa.scalar(None, pa.string()), closed)


#: text JSON writes as it is: printable ASCII except ``"`` and ``\`` (json.dumps escapes the rest)
_JSON_PLAIN = r"^[\x20\x21\x23-\x5b\x5d-\x7e]*$"


def _tag_fragments(key: str, arrays: Sequence[pa.Array]) -> pa.Array:
    """``"key":"value",`` per row (``""`` where the tag is empty), escaped exactly as :func:`json.dumps` does."""
    values = arrays[0] if len(arrays) == 1 else pc.coalesce(*(empty_to_null(a) for a in arrays))
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    enc = pc.dictionary_encode(pc.cast(values, pa.string()))
    words = enc.dictionary
    text = pc.binary_join_element_wise(_key_value_fragments(pa.repeat(pa.scalar(key), len(words)), words), ",", "")
    text = pc.if_else(pc.equal(words, ""), pa.scalar("", pa.string()), text)
    return pc.fill_null(pc.take(text, enc.indices), "")


def tags_from_lists(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Tags JSON from ``list<struct<key, value>>`` (GCP labels in Parquet/JSON Lines), as :func:`tags_json` writes
    it: a repeated key keeps its last value, empty values are left out; vectorised over dictionary codes."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    n = len(values)
    flat = pc.list_flatten(values)
    if len(flat) == 0:
        return nulls(n)
    keys = pc.dictionary_encode(pc.cast(pc.struct_field(flat, "key"), pa.string()))
    vals = pc.dictionary_encode(pc.cast(pc.struct_field(flat, "value"), pa.string()))
    n_keys, n_vals = len(keys.dictionary), len(vals.dictionary)
    rank = np.empty(n_keys, dtype=np.int64)  # a key's place in sorted order (bytes = code points: as json sorts)
    rank[pc.sort_indices(keys.dictionary).to_numpy()] = np.arange(n_keys)
    key_code = pc.fill_null(keys.indices, -1).to_numpy().astype(np.int64)
    val_code = pc.fill_null(vals.indices, -1).to_numpy().astype(np.int64)
    rows = pc.list_parent_indices(values).to_numpy().astype(np.int64)
    sel = np.flatnonzero(key_code >= 0)  # an entry without a key is no tag
    slot = rows[sel] * n_keys + rank[key_code[sel]]
    order = np.argsort(slot, kind="stable")  # by row, then key, entries of one key in list order
    sel, slot = sel[order], slot[order]
    last = np.ones(len(sel), dtype=bool)  # the last entry of each (row, key) wins, as in a dict
    last[:-1] = slot[1:] != slot[:-1]
    sel = sel[last]
    filled = np.append(pc.fill_null(pc.not_equal(vals.dictionary, ""), False).to_numpy(zero_copy_only=False), False)
    sel = sel[filled[val_code[sel]]]  # empty and null values are left out (-1 picks the False appended)
    pair = key_code[sel] * n_vals + val_code[sel]
    distinct, which = np.unique(pair, return_inverse=True)
    texts = _key_value_fragments(
        pc.take(keys.dictionary, distinct // n_vals), pc.take(vals.dictionary, distinct % n_vals)
    )
    fragments = pc.take(texts, pa.array(which.reshape(-1)))
    counts = np.bincount(rows[sel], minlength=n)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), fragments), ",")
    wrapped = pc.binary_join_element_wise("{", joined, "}", "")
    return pc.if_else(pa.array(counts == 0), pa.scalar(None, pa.string()), wrapped)


def _key_value_fragments(keys: pa.Array, values: pa.Array) -> pa.Array:
    """``"key":"value"`` per entry, escaped as :func:`json.dumps` does (Python only for what needs escaping)."""
    text = pc.binary_join_element_wise('"', keys, '":"', values, '"', "")
    plain = pc.and_(pc.match_substring_regex(keys, _JSON_PLAIN), pc.match_substring_regex(values, _JSON_PLAIN))
    if pc.all(plain).as_py() is False:
        text = pa.array(
            [
                t if ok else json.dumps(k) + ":" + json.dumps(v)
                for t, ok, k, v in zip(
                    text.to_pylist(), plain.to_pylist(), keys.to_pylist(), values.to_pylist(), strict=True
                )
            ],
            pa.string(),
        )
    return text


def empty_to_null(a: pa.Array) -> pa.Array:
    a = pc.cast(a, pa.string())
    return pc.if_else(pc.equal(a, ""), pa.scalar(None, pa.string()), a)


def finish(columns: Mapping[str, pa.Array | pa.ChunkedArray | None], n: int) -> pa.Table:
    """Assemble a table in :data:`BILLING_SCHEMA` order, casting, and filling absent columns with nulls."""
    arrays = []
    for fld in BILLING_SCHEMA:
        a = columns.get(fld.name)
        if a is None:
            arrays.append(pa.nulls(n, fld.type))
            continue
        if isinstance(a, pa.ChunkedArray):
            a = a.combine_chunks()
        if a.type != fld.type:
            a = pc.cast(a, fld.type)
        arrays.append(a)
    return pa.Table.from_arrays(arrays, schema=BILLING_SCHEMA)


def hours_factor(unit: pa.Array) -> pa.Array:
    """Hours per unit for time units (Hrs, Hours, 1 Hour, 10 Hours, seconds, …); null for other units."""

    def f(u: str) -> float | None:
        t = u.strip().lower()
        mult = 1.0
        parts = t.split(" ", 1)
        if len(parts) == 2:
            try:
                mult = float(parts[0])
                t = parts[1]
            except ValueError:
                pass
        if t in ("hrs", "hr", "hour", "hours", "h"):
            return mult
        if t in ("seconds", "second", "s", "sec"):
            return mult / 3600.0
        if t in ("minutes", "minute", "min"):
            return mult / 60.0
        return None

    return map_unique(unit, f, pa.float64())

"""The readers' entry points (a file's column names, and its rows as record batches, whatever its format) and
Parquet: row groups as batches, nested structs flattened to dotted names, columns cast to the asked types."""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Collection, Generator, Iterator, Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from finops_cli.atomic import note_input
from finops_cli.errors import InputError
from finops_cli.ingest.readers.common import (
    BATCH_ROWS,
    CSV_BLOCK_BYTES,
    MAX_LINE_BYTES,
    READ_ERRORS,
    RowBatch,
    kind_of,
    open_text,
    short_message,
)
from finops_cli.ingest.readers.csv import iter_csv
from finops_cli.ingest.readers.jsonl import bounded_lines, flatten_record, iter_jsonl, iter_jsonl_duckdb, loads_record
from finops_cli.ingest.readers.values import raise_first_uncastable


def _check_not_empty(path: Path) -> None:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    if size == 0:
        raise InputError("file is empty; expected a header row and data", path=path)


def read_header(path: Path) -> list[str]:
    """Column names of a file without reading its body (CSV header, Parquet schema, first JSON object)."""
    path = Path(path)
    note_input(path)
    _check_not_empty(path)
    kind = kind_of(path)
    try:
        if kind == "parquet":
            schema = pq.read_schema(path)
            return _flat_names(schema)
        if kind == "csv":
            raw = gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")  # noqa: SIM115
            with raw:
                first = raw.readline(MAX_LINE_BYTES + 1)
            if len(first) > MAX_LINE_BYTES:
                raise InputError(f"header line longer than {MAX_LINE_BYTES >> 20} MiB; is this a CSV?", path=path)
            line = first.decode("utf-8-sig")
            if not line.strip():
                raise InputError("file is empty; expected a header row", path=path)
            try:
                names = [c.strip() for c in next(csv.reader([line.rstrip("\r\n")]))]
            except csv.Error as exc:
                raise InputError(f"malformed header row ({exc})", path=path) from None
            twice = sorted({c for c in names if names.count(c) > 1})
            if twice:  # which of the two would be read is arbitrary: never guess
                raise InputError(f"column {twice[0]!r} appears more than once in the header", path=path)
            return names
        with open_text(path) as fh:
            for line in bounded_lines(fh, path):
                if line.strip():
                    obj = loads_record(line, path, 1)
                    if not isinstance(obj, dict):
                        raise InputError("expected one JSON object per line (JSON Lines)", path=path, where="row 1")
                    return list(flatten_record(obj))
            raise InputError("file is empty; expected JSON Lines", path=path)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON Lines: {exc.msg}", path=path, where="row 1") from None
    except UnicodeDecodeError:
        raise InputError("invalid text encoding; expected UTF-8", path=path, where="header") from None
    except READ_ERRORS as exc:
        raise InputError(f"cannot read header: {short_message(exc)}", path=path) from None


def _flat_names(schema: pa.Schema, prefix: str = "") -> list[str]:
    out: list[str] = []
    for f in schema:
        if pa.types.is_struct(f.type):
            out += _flat_names(pa.schema(list(f.type)), prefix + f.name + ".")
        else:
            out.append(prefix + f.name)
    return out


def iter_batches(
    path: str | Path,
    *,
    columns: Collection[str] | None = None,
    types: Mapping[str, pa.DataType] | None = None,
    batch_rows: int = BATCH_ROWS,
    csv_block_bytes: int = CSV_BLOCK_BYTES,
    newlines_in_values: bool = True,
    nested: Mapping[str, pa.DataType] | None = None,
) -> Generator[RowBatch]:
    """Stream ``path`` as record batches.

    ``columns``: only these are decoded (absent ones are skipped: callers check required columns against
    :func:`read_header`). ``types``: Arrow types for non-string columns; every other column is text, so ids keep
    their leading zeros. ``newlines_in_values``: CSV only, False for exports that never quote a line break (faster).
    ``nested``: JSON Lines only, list columns: the file is read by DuckDB's ``read_json`` with these types, and
    from the first row it refuses by the Python decoder, which names the row."""
    path = Path(path)
    header = read_header(path)
    wanted = [c for c in header if columns is None or c in set(columns)]
    types = dict(types or {})
    kind = kind_of(path)
    if kind == "csv":
        yield from iter_csv(path, header, wanted, types, csv_block_bytes, newlines_in_values)
    elif kind == "parquet":
        yield from iter_parquet(path, wanted, types, batch_rows)
    elif nested is not None and columns is not None:  # a key missing from line 1 may come later: ask for all
        yield from iter_jsonl_duckdb(path, list(columns), types, nested, batch_rows)
    else:
        yield from iter_jsonl(path, None if columns is None else list(columns), types, batch_rows)


def iter_parquet(
    path: Path, wanted: list[str], types: Mapping[str, pa.DataType], batch_rows: int
) -> Iterator[RowBatch]:
    row = 1
    try:
        pf = pq.ParquetFile(path)
        top = {c.split(".")[0] for c in wanted}
        names = [n for n in pf.schema_arrow.names if n in top]
        for batch in pf.iter_batches(batch_size=batch_rows, columns=names):
            table = pa.Table.from_batches([batch])
            while any(pa.types.is_struct(f.type) for f in table.schema):
                table = table.flatten()
            table = table.select([c for c in table.column_names if c in set(wanted)])
            table = _cast_columns(table, types, path, row)
            for b in table.to_batches():
                if b.num_rows:
                    yield RowBatch(b, row)
                    row += b.num_rows
    except READ_ERRORS as exc:
        raise InputError(f"unreadable Parquet: {short_message(exc)}", path=path, where=f"near row {row}") from None


def _cast_columns(table: pa.Table, types: Mapping[str, pa.DataType], path: Path, first_row: int) -> pa.Table:
    """Cast named columns to their types; everything scalar that is not named becomes a string."""
    for i, name in enumerate(table.column_names):
        col = table.column(i)
        target = types.get(name)
        if target is None:
            if pa.types.is_nested(col.type) or pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                continue
            if pa.types.is_timestamp(col.type) or pa.types.is_date(col.type):
                continue  # already typed; the format parser normalises to UTC
            target = pa.string()
        if col.type == target:
            continue
        try:
            table = table.set_column(i, name, pc.cast(col, target))
        except pa.ArrowException:
            raise_first_uncastable(col.to_pylist(), target, path=path, column=name, first_row=first_row)
            raise
    return table

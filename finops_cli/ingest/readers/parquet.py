"""Parquet: row groups as batches, nested structs flattened to dotted names, columns cast to the asked types."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from finops_cli.errors import InputError
from finops_cli.ingest.readers.common import READ_ERRORS, RowBatch, short_message
from finops_cli.ingest.readers.values import raise_first_uncastable


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

"""CSV and CSV.gz: Arrow's streaming CSV reader, its errors turned into ones naming the row and column."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from finops_cli.errors import InputError
from finops_cli.ingest.readers.common import NULL_VALUES, READ_ERRORS, RowBatch, short_message


def iter_csv(
    path: Path, header: list[str], wanted: list[str], types: Mapping[str, pa.DataType], block: int, newlines: bool
) -> Iterator[RowBatch]:
    # Header names may carry a BOM or padding; read with our own cleaned names.
    column_types = {c: types.get(c, pa.string()) for c in wanted}
    read_opts = pacsv.ReadOptions(
        use_threads=False, block_size=block, column_names=header, skip_rows=1, encoding="utf8"
    )
    convert_opts = pacsv.ConvertOptions(
        column_types=column_types,
        include_columns=wanted,
        null_values=NULL_VALUES,
        strings_can_be_null=True,
        quoted_strings_can_be_null=True,
        check_utf8=True,
    )
    parse_opts = pacsv.ParseOptions(newlines_in_values=newlines)
    row = 1
    try:
        reader = pacsv.open_csv(path, read_options=read_opts, parse_options=parse_opts, convert_options=convert_opts)
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                break
            if batch.num_rows:
                yield RowBatch(batch, row)
            row += batch.num_rows
    except READ_ERRORS as exc:
        raise _csv_error(path, header, exc, row, types) from None


_COL_RE = re.compile(r"column #(\d+)")
_ROW_RE = re.compile(r"[Rr]ow #(\d+)")


def _csv_error(
    path: Path, header: list[str], exc: BaseException, row: int, types: Mapping[str, pa.DataType]
) -> InputError:
    msg = short_message(exc)
    low = msg.lower()
    if "gzip" in low or "zlib" in low or "inflate" in low or "compressed" in low or isinstance(exc, EOFError):
        return InputError(
            f"corrupt or truncated gzip data ({msg})", path=path, where=f"after row {row - 1}" if row > 1 else None
        )
    if "utf8" in low or "utf-8" in low or isinstance(exc, UnicodeDecodeError):
        return InputError("invalid text encoding; expected UTF-8", path=path, where=f"near row {row}")
    m = _COL_RE.search(msg)
    if m and "conversion error" in low:
        idx = int(m.group(1))
        col = header[idx] if idx < len(header) else f"#{idx}"
        typ = types.get(col, pa.string())
        bad_row, bad_value = _locate_bad_value(path, header, col, typ)
        where = f"row {bad_row}, column {col!r}" if bad_row else f"column {col!r}"
        expected = "a number" if pa.types.is_floating(typ) or pa.types.is_integer(typ) else str(typ)
        value = f" (got {bad_value!r})" if bad_value is not None else ""
        return InputError(f"expected {expected}{value}", path=path, where=where)
    m = _ROW_RE.search(msg)
    # pyarrow counts file lines (header = line 1); we name data rows (header excluded).
    where = f"row {int(m.group(1)) - 1}" if m else f"near row {row}"
    if "expected" in low and "columns" in low:
        return InputError(f"malformed row: {msg}", path=path, where=where)
    return InputError(f"unreadable CSV: {msg}", path=path, where=where)


def _locate_bad_value(path: Path, header: list[str], column: str, typ: pa.DataType) -> tuple[int | None, str | None]:
    """Error path only: re-read one column as text and find the first value that does not cast to ``typ``."""
    try:
        reader = pacsv.open_csv(
            path,
            read_options=pacsv.ReadOptions(use_threads=False, column_names=header, skip_rows=1),
            parse_options=pacsv.ParseOptions(newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                column_types={column: pa.string()},
                include_columns=[column],
                null_values=NULL_VALUES,
                strings_can_be_null=True,
            ),
        )
        row = 1
        for batch in reader:
            values = batch.column(0)
            try:
                pc.cast(values, typ)
            except pa.ArrowException:
                for i, v in enumerate(values.to_pylist()):
                    try:
                        pc.cast(pa.array([v], pa.string()), typ)
                    except pa.ArrowException:
                        return row + i, v
            row += batch.num_rows
    except READ_ERRORS:
        return None, None
    return None, None

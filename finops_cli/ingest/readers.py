"""Streaming readers shared by every ingest: CSV / CSV.gz, Parquet and JSON Lines, in record batches.

Why streaming with an explicit schema: whole-file readers grow ~1 GB per million CUR rows, and type
inference on the first block turns 12-digit account ids into integers (and breaks later blocks whose
values do not fit the guess). So every column is read as a string unless the caller names its type
(costs, quantities), and only the columns the caller asks for are decoded.

Every failure a user can cause (missing file, empty file, truncated gzip, bad encoding, a value that is
not a number, a malformed row) becomes one :class:`~finops_cli.errors.InputError` naming the file and
the row and/or column.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import os
import re
from collections.abc import Collection, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from finops_cli.atomic import note_input
from finops_cli.errors import InputError
from finops_cli.files import MAX_DEPTH, check_depth

#: File name endings the readers understand, longest first.
SUFFIXES: tuple[str, ...] = (
    ".csv.gz",
    ".jsonl.gz",
    ".ndjson.gz",
    ".json.gz",
    ".csv",
    ".parquet",
    ".jsonl",
    ".ndjson",
    ".json",
)

NULL_VALUES = ["", "NULL", "null", "None", "NaN", "nan", "N/A"]

#: Rows per batch for CSV (via the block size) and Parquet/JSONL; large enough to amortise per-batch work.
CSV_BLOCK_BYTES = 8 << 20
BATCH_ROWS = 65_536
#: Longest header line or JSON Lines record read (decompressed): a 3 MB gzip can hold a 3 GiB line.
MAX_LINE_BYTES = 64 << 20
_T = TypeVar("_T")
_READ_ERRORS = (pa.ArrowException, OSError, EOFError, UnicodeDecodeError, ValueError, gzip.BadGzipFile)


@dataclass(frozen=True)
class RowBatch:
    """A record batch and the 1-based data-row number of its first row (header not counted)."""

    batch: pa.RecordBatch
    first_row: int


def kind_of(path: Path) -> str:
    """``csv`` | ``parquet`` | ``jsonl`` from the file name (``.gz`` allowed for text formats)."""
    name = path.name.lower()
    if name.endswith((".csv", ".csv.gz")):
        return "csv"
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz")):
        return "jsonl"
    raise InputError(f"unsupported file type; expected one of {', '.join(SUFFIXES)}", path=path)


def discover(paths: Iterable[str | Path], what: str = "export", suffixes: Collection[str] = SUFFIXES) -> list[Path]:
    """Expand files and directories (recursively) into a sorted, de-duplicated list of readable files.

    Hidden files and directories (``.x``) and names starting with ``_`` (``_SUCCESS``) are skipped inside
    directories. A missing path, or a directory without any matching file, is an InputError.
    """
    found: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise InputError("no such file or directory", path=p)
        if p.is_dir():
            note_input(p, tree=True)
            inside = sorted(
                f
                for f in p.rglob("*")
                if f.is_file()
                and f.name.lower().endswith(tuple(suffixes))
                and not any(part.startswith((".", "_")) for part in f.relative_to(p).parts)
            )
            if not inside:
                raise InputError(f"directory holds no {what} files ({', '.join(suffixes)})", path=p)
            candidates = inside
        else:
            if not p.is_file():  # a FIFO or a device would block or never end: say what it is
                from finops_cli.files import kind_of_path

                raise InputError(f"{kind_of_path(p)}; expected a regular file", path=p)
            kind_of(p)
            candidates = [p]
        for f in candidates:
            r = f.resolve()
            if r not in seen:
                seen.add(r)
                found.append(f)
    if not found:
        raise InputError(f"no {what} files given")
    return found


def _open_text(path: Path) -> io.TextIOBase:
    raw = gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")  # noqa: SIM115
    return io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")


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
        with _open_text(path) as fh:
            for line in _bounded_lines(fh, path):
                if line.strip():
                    obj = _loads_record(line, path, 1)
                    if not isinstance(obj, dict):
                        raise InputError("expected one JSON object per line (JSON Lines)", path=path, where="row 1")
                    return list(_flatten_record(obj))
            raise InputError("file is empty; expected JSON Lines", path=path)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON Lines: {exc.msg}", path=path, where="row 1") from None
    except UnicodeDecodeError:
        raise InputError("invalid text encoding; expected UTF-8", path=path, where="header") from None
    except _READ_ERRORS as exc:
        raise InputError(f"cannot read header: {_short(exc)}", path=path) from None


def _flat_names(schema: pa.Schema, prefix: str = "") -> list[str]:
    out: list[str] = []
    for f in schema:
        if pa.types.is_struct(f.type):
            out += _flat_names(pa.schema(list(f.type)), prefix + f.name + ".")
        else:
            out.append(prefix + f.name)
    return out


def _short(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return msg[:300]


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

    Parameters
    ----------
    columns
        Only these columns are decoded (those absent from the file are silently skipped: the caller checks
        required columns against :func:`read_header`). ``None`` = all.
    types
        Column → Arrow type for non-string columns (costs, quantities). Every other column is a string,
        so ids keep their leading zeros and 12 digits.
    newlines_in_values
        CSV only: allow line breaks inside quoted values (safe default). Machine-written exports that never
        contain them (AWS CUR) may pass False: the parser is ~25 % faster.
    nested
        JSON Lines only: column → list type (e.g. GCP ``credits``, ``labels`` as lists of structs). Given
        it, the file is decoded by DuckDB's ``read_json`` (C++ on every core, ~20× the Python decoder) with
        explicit column types, these columns arrive as Arrow lists instead of JSON text, and a column null
        in every line of a batch is left out. A file the types do not fit (text where a number belongs, a
        line that is not an object, bytes that are not UTF-8, a line longer than :data:`MAX_LINE_BYTES`,
        nesting deeper than DuckDB's 128 levels) continues, from the first row not yet yielded, through the
        Python decoder, which names the offending row. (Numbers in a text column are their JSON text in
        both, ``42`` → ``"42"``.)
    """
    path = Path(path)
    header = read_header(path)
    wanted = [c for c in header if columns is None or c in set(columns)]
    types = dict(types or {})
    kind = kind_of(path)
    if kind == "csv":
        yield from _iter_csv(path, header, wanted, types, csv_block_bytes, newlines_in_values)
    elif kind == "parquet":
        yield from _iter_parquet(path, wanted, types, batch_rows)
    elif nested is not None and columns is not None:  # a key missing from line 1 may come later: ask for all
        yield from _iter_jsonl_duckdb(path, list(columns), types, nested, batch_rows)
    else:
        yield from _iter_jsonl(path, None if columns is None else list(columns), types, batch_rows)


# ------------------------------------------------------------------------------------------------- CSV
def _iter_csv(
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
    except _READ_ERRORS as exc:
        raise _csv_error(path, header, exc, row, types) from None


_COL_RE = re.compile(r"column #(\d+)")
_ROW_RE = re.compile(r"[Rr]ow #(\d+)")


def _csv_error(
    path: Path, header: list[str], exc: BaseException, row: int, types: Mapping[str, pa.DataType]
) -> InputError:
    msg = _short(exc)
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
    except _READ_ERRORS:
        return None, None
    return None, None


# --------------------------------------------------------------------------------------------- Parquet
def _iter_parquet(
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
    except _READ_ERRORS as exc:
        raise InputError(f"unreadable Parquet: {_short(exc)}", path=path, where=f"near row {row}") from None


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
            _raise_first_uncastable(col.to_pylist(), target, path=path, column=name, first_row=first_row)
            raise
    return table


def _raise_first_uncastable(values: list, target: pa.DataType, *, path: Path, column: str, first_row: int) -> None:
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


# ------------------------------------------------------------------------------------------ JSON Lines
def _flatten_record(obj: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """Nested objects become dotted columns (``service.description``, as in BigQuery's CSV export);
    lists stay as JSON text (``credits``, ``labels``)."""
    out: dict[str, object] = {}
    for k, v in obj.items():
        if isinstance(v, dict):
            out.update(_flatten_record(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


#: rows per batch DuckDB's JSON reader hands over (read at call time: tests make it small)
JSON_BATCH_ROWS = 32_768


def json_schema(
    wanted: Collection[str], types: Mapping[str, pa.DataType], nested: Mapping[str, pa.DataType]
) -> pa.Schema:
    """Explicit schema of a JSON record for dotted column names (``service.description`` → struct field)."""
    tree: dict[str, object] = {}
    for name in wanted:
        node = tree
        *parents, leaf = name.split(".")
        for part in parents:
            node = node.setdefault(part, {})  # type: ignore[assignment]
            if not isinstance(node, dict):
                break
        else:
            node.setdefault(leaf, nested.get(name) or types.get(name, pa.string()))

    def fields(node: dict[str, object]) -> list[pa.Field]:
        return [pa.field(k, pa.struct(fields(v)) if isinstance(v, dict) else v) for k, v in node.items()]

    return pa.schema(fields(tree))


def _duckdb_type(t: pa.DataType) -> str:
    """The DuckDB type ``read_json`` casts a key to, for an Arrow type of :func:`json_schema`."""
    if pa.types.is_struct(t):
        return (
            "STRUCT(" + ", ".join(f'"{f.name.replace(chr(34), chr(34) * 2)}" {_duckdb_type(f.type)}' for f in t) + ")"
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _duckdb_type(t.value_type) + "[]"
    names = {pa.float64(): "DOUBLE", pa.int64(): "BIGINT", pa.string(): "VARCHAR", pa.bool_(): "BOOLEAN"}
    if t not in names:
        raise TypeError(f"no DuckDB type for {t}")
    return names[t]


def _iter_jsonl_duckdb(
    path: Path,
    wanted: list[str],
    types: Mapping[str, pa.DataType],
    nested: Mapping[str, pa.DataType],
    batch_rows: int,
) -> Iterator[RowBatch]:
    """JSON Lines through DuckDB's ``read_json`` (yyjson, on every core; ≈ half ``pyarrow.json``'s CPU);
    on anything it refuses, the Python decoder takes over (see :func:`iter_batches`)."""
    import duckdb

    schema = json_schema(wanted, types, nested)
    columns = {f.name: _duckdb_type(f.type) for f in schema}
    wanted_set = set(wanted)
    row = 1
    try:
        with contextlib.ExitStack() as stack:
            source = _globless(path, stack)
            # its own database: file order needs preserve_insertion_order, which the shared one turns off
            config: dict[str, str | bool | int | float | list[str]] = {"preserve_insertion_order": True}
            threads = os.environ.get("FINOPS_DUCKDB_THREADS", "").strip()
            if threads.isdigit() and int(threads) >= 1:  # a parallel ingest's worker: its share of the cores
                config["threads"] = int(threads)
            con = stack.enter_context(duckdb.connect(config=config))
            rel = con.read_json(
                str(source),
                columns=columns,
                format="newline_delimited",
                records="true",
                maximum_object_size=MAX_LINE_BYTES,
                compression="gzip" if path.name.lower().endswith(".gz") else "none",
            )
            # nested objects flattened to dotted names and "" read as no value by DuckDB, on its threads
            reader = rel.project(_flat_select(schema, wanted_set)).to_arrow_reader(JSON_BATCH_ROWS)
            tables = (_json_table(pa.Table.from_batches([batch]), wanted_set) for batch in reader)
            for table in read_ahead(tables, stack):
                for b in table.to_batches():
                    if b.num_rows:
                        yield RowBatch(b, row)
                        row += b.num_rows
    except (duckdb.Error, *_READ_ERRORS):
        yield from _iter_jsonl(path, wanted, types, batch_rows, skip=row - 1)


def read_ahead(items: Iterator[_T], stack: contextlib.ExitStack) -> Iterator[_T]:
    """``items``, the next one decoded on a thread while the caller converts this one (DuckDB and Arrow
    release the GIL): one item in flight, so memory grows by one batch. The thread is joined when ``stack``
    closes, before what it reads from (entered on ``stack`` earlier) is."""
    from concurrent.futures import ThreadPoolExecutor

    ahead = stack.enter_context(ThreadPoolExecutor(max_workers=1, thread_name_prefix="read-ahead"))
    end = object()
    pending = ahead.submit(next, items, end)
    while (item := pending.result()) is not end:
        pending = ahead.submit(next, items, end)
        yield item  # type: ignore[misc]


def _globless(path: Path, stack: contextlib.ExitStack) -> Path:
    """``path``, or a link to it under a plain name when its name holds characters DuckDB reads as a glob."""
    if not any(ch in str(path) for ch in "*?[]{}"):
        return path
    import tempfile

    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="finops-json-")))
    link = tmp / ("input.jsonl.gz" if path.name.lower().endswith(".gz") else "input.jsonl")
    link.symlink_to(path.resolve())
    return link


def _flat_select(schema: pa.Schema, wanted: set[str]) -> str:
    """DuckDB select list: each wanted leaf of ``schema`` as its dotted name, text ``""`` as NULL (as the
    Python decoder reads a record)."""

    def quoted(name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    out: list[str] = []

    def walk(fields: Iterable[pa.Field], path: list[str]) -> None:
        for f in fields:
            at = [*path, f.name]
            if pa.types.is_struct(f.type):
                walk(list(f.type), at)
            elif ".".join(at) in wanted:
                expr = quoted(at[0]) + "".join("['" + part.replace("'", "''") + "']" for part in at[1:])
                if pa.types.is_string(f.type):
                    expr = f"NULLIF({expr}, '')"
                out.append(f"{expr} AS {quoted('.'.join(at))}")

    walk(schema, [])
    return ", ".join(out)


def _json_table(table: pa.Table, wanted: set[str]) -> pa.Table:
    """A decoded JSON batch with the columns null in every line left out (as the Python decoder does)."""
    keep = [
        i for i, name in enumerate(table.column_names) if name in wanted and table.column(i).null_count < len(table)
    ]
    return table.select(keep).combine_chunks()


def _iter_jsonl(
    path: Path, wanted: list[str] | None, types: Mapping[str, pa.DataType], batch_rows: int, skip: int = 0
) -> Iterator[RowBatch]:
    """JSON Lines through ``json.loads``; ``wanted`` None = every key (of any line, not only the first)."""
    row = 1
    first_row = 1 + skip
    records: list[dict[str, object]] = []
    try:
        with _open_text(path) as fh:
            for line in _bounded_lines(fh, path):
                if line.strip() and row <= skip:
                    row += 1
                    continue
                if line.strip():
                    obj = _loads_record(line, path, row)
                    if not isinstance(obj, dict):
                        raise InputError("expected a JSON object", path=path, where=f"row {row}")
                    records.append(_flatten_record(obj))
                    row += 1
                    if len(records) >= batch_rows:
                        yield RowBatch(_records_to_batch(records, wanted, types, path, first_row), first_row)
                        first_row, records = row, []
        if records:
            yield RowBatch(_records_to_batch(records, wanted, types, path, first_row), first_row)
    except _READ_ERRORS as exc:
        msg = _short(exc)
        if isinstance(exc, UnicodeDecodeError):
            raise InputError("invalid text encoding; expected UTF-8", path=path, where=f"near row {row}") from None
        if isinstance(exc, EOFError | gzip.BadGzipFile) or "gzip" in msg.lower() or "crc" in msg.lower():
            raise InputError(
                f"corrupt or truncated gzip data ({msg})", path=path, where=f"after row {row - 1}"
            ) from None
        raise InputError(f"unreadable JSON Lines: {msg}", path=path, where=f"near row {row}") from None


def _bounded_lines(fh: io.TextIOBase, path: Path) -> Iterator[str]:
    """The lines of ``fh``, refusing one longer than :data:`MAX_LINE_BYTES` before it is all in memory."""
    row = 1
    while line := fh.readline(MAX_LINE_BYTES + 1):
        if len(line) > MAX_LINE_BYTES:
            raise InputError(f"a line longer than {MAX_LINE_BYTES >> 20} MiB", path=path, where=f"near row {row}")
        if line.strip():
            row += 1
        yield line


def _loads_record(line: str, path: Path, row: int) -> object:
    """One JSON Lines record; syntax errors, absurd nesting and 5,000-digit integers name their row."""
    try:
        return check_depth(json.loads(line), path)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path=path, where=f"row {row}") from None
    except RecursionError:
        raise InputError(f"nested more than {MAX_DEPTH} levels deep", path=path, where=f"row {row}") from None
    except ValueError as exc:
        raise InputError(f"not valid JSON ({_short(exc)})", path=path, where=f"row {row}") from None
    except InputError as exc:
        raise InputError(f"{str(exc).split(': ')[-1]}", path=path, where=f"row {row}") from None


def _records_to_batch(
    records: list[dict[str, object]],
    wanted: list[str] | None,
    types: Mapping[str, pa.DataType],
    path: Path,
    first_row: int,
) -> pa.RecordBatch:
    keep = None if wanted is None else set(wanted)
    names = list(dict.fromkeys(k for r in records for k in r if keep is None or k in keep))
    arrays = []
    for name in names:
        target = types.get(name, pa.string())
        raw = [r.get(name) for r in records]
        if pa.types.is_string(target):
            vals = [
                None if v is None or v == "" else (json.dumps(v) if isinstance(v, list | dict) else _text(v))
                for v in raw
            ]
            arrays.append(pa.array(vals, pa.string()))
            continue
        try:
            arrays.append(pc.cast(pa.array([None if v == "" else v for v in raw]), target))
            continue
        except (pa.ArrowException, TypeError, OverflowError):
            pass
        # mixed JSON types in one column (2.5 and "NaN"): cast their text, so each row is judged alike
        texts = [None if v is None or v == "" else _text(v) for v in raw]
        try:
            arrays.append(pc.cast(pa.array(texts, pa.string()), target))
        except pa.ArrowException:
            _raise_first_uncastable(texts, target, path=path, column=name, first_row=first_row)
            raise
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _text(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


# ------------------------------------------------------------------------------------- value helpers
_TZ_SUFFIX = re.compile(r"(Z|[+-]00:?00| ?UTC)$")


#: Billing and usage times outside these years are typos or corruption (year 0, 9999-12, -2^62 ns).
MIN_YEAR, MAX_YEAR = 1970, 2199


def to_utc(values: pa.Array | pa.ChunkedArray, *, path: object, column: str, first_row: int = 1) -> pa.Array:
    """Parse text timestamps to ``timestamp[us, UTC]``.

    Accepts ISO 8601 with ``T`` or a space, with or without fractional seconds, with ``Z`` / an offset or
    none (naive = UTC), plain dates, and US ``MM/DD/YYYY`` dates (Azure). Already-typed timestamps are
    converted to UTC; naive ones are taken as UTC. A date outside :data:`MIN_YEAR`–:data:`MAX_YEAR` or
    one that does not exist (``02/30/2023``) is refused, never rolled over.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    try:
        parsed = _to_utc(values, path=path, column=column, first_row=first_row)
    except (pa.ArrowInvalid, OverflowError):  # a typed timestamp beyond what microseconds can hold
        raise InputError(f"a time beyond {MIN_YEAR}–{MAX_YEAR}", path=path, where=f"column {column!r}") from None
    lo = pa.scalar(datetime(MIN_YEAR, 1, 1, tzinfo=UTC), pa.timestamp("us", tz="UTC"))
    hi = pa.scalar(datetime(MAX_YEAR + 1, 1, 1, tzinfo=UTC), pa.timestamp("us", tz="UTC"))
    i = first_bad_row(pc.or_(pc.less(parsed, lo), pc.greater_equal(parsed, hi)))
    if i is not None:
        raise InputError(
            f"date {values[i].as_py()!s} is outside {MIN_YEAR}–{MAX_YEAR}",
            path=path,
            where=f"row {first_row + i}, column {column!r}",
        )
    return parsed


def _to_utc(values: pa.Array, *, path: object, column: str, first_row: int) -> pa.Array:
    utc = pa.timestamp("us", tz="UTC")
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
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
    for attempt in (_ts_with_zone, _ts_naive, _ts_stripped, _ts_us_date, _ts_us_datetime):
        try:
            return pc.take(attempt(distinct), enc.indices)
        except pa.ArrowException:
            continue
    values = pc.utf8_trim_whitespace(pc.cast(values, pa.string()))
    # Mixed layouts in one column (rare): parse each distinct value on its own.
    bad: list[str] = []

    def one(v: str) -> object:
        for attempt in (_ts_with_zone, _ts_naive, _ts_stripped, _ts_us_date, _ts_us_datetime):
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


def to_float(values: pa.Array | pa.ChunkedArray, *, path: object, column: str, first_row: int = 1) -> pa.Array:
    """Cast to float64 (text allowed), naming the first row that is not a finite number (NaN/inf are refused)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    try:
        out = pc.cast(values, pa.float64())
    except pa.ArrowException:
        for i, v in enumerate(values.to_pylist()):
            try:
                pc.cast(pa.array([v]), pa.float64())
            except pa.ArrowException:
                raise InputError(
                    f"expected a number (got {v!r})", path=path, where=f"row {first_row + i}, column {column!r}"
                ) from None
        raise
    bad = first_bad_row(pc.invert(pc.fill_null(pc.is_finite(out), True)))
    if bad is not None:
        raise InputError(
            f"expected a finite number (got {values[bad].as_py()!r})",
            path=path,
            where=f"row {first_row + bad}, column {column!r}",
        )
    return out


def first_bad_row(bad: pa.Array | pa.ChunkedArray) -> int | None:
    """Index of the first true value of a boolean mask (nulls count as false), or None: the row an error names."""
    mask = pc.fill_null(bad, False)
    return int(pc.index(mask, True).as_py()) if pc.any(mask).as_py() else None


def map_unique(values: pa.Array | pa.ChunkedArray, fn, out_type: pa.DataType) -> pa.Array:
    """Apply a Python function once per distinct value and broadcast back (tags, SKU text, JSON cells).

    Billing columns are highly repetitive, so this is vectorised in practice: cost ∝ distinct values.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    enc = pc.dictionary_encode(values)
    mapped = pa.array([fn(v) for v in enc.dictionary.to_pylist()], out_type)
    return pc.take(mapped, enc.indices)

"""JSON Lines (plain or gzip): DuckDB's ``read_json`` for typed nested exports, ``json.loads`` for the rest."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import tempfile
from collections.abc import Collection, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.errors import InputError
from finops_cli.files import MAX_DEPTH, check_depth
from finops_cli.ingest.readers.common import MAX_LINE_BYTES, READ_ERRORS, RowBatch, open_text, short_message
from finops_cli.ingest.readers.values import raise_first_uncastable

_T = TypeVar("_T")


def flatten_record(obj: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """Nested objects become dotted columns (``service.description``, as in BigQuery's CSV export);
    lists stay as JSON text (``credits``, ``labels``)."""
    out: dict[str, object] = {}
    for k, v in obj.items():
        if isinstance(v, dict):
            out.update(flatten_record(v, f"{prefix}{k}."))
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


def iter_jsonl_duckdb(
    path: Path,
    wanted: list[str],
    types: Mapping[str, pa.DataType],
    nested: Mapping[str, pa.DataType],
    batch_rows: int,
) -> Iterator[RowBatch]:
    """JSON Lines through DuckDB's ``read_json`` (yyjson, on every core; ≈ half ``pyarrow.json``'s CPU);
    on anything it refuses, the Python decoder takes over (see :func:`iter_batches`)."""
    schema = json_schema(wanted, types, nested)
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
            typed = con.from_arrow(schema.empty_table())  # the schema in DuckDB's type names
            rel = con.read_json(
                str(source),
                columns=dict(zip(typed.columns, map(str, typed.types), strict=True)),
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
    except (duckdb.Error, *READ_ERRORS):
        yield from iter_jsonl(path, wanted, types, batch_rows, skip=row - 1)


def read_ahead(items: Iterator[_T], stack: contextlib.ExitStack) -> Iterator[_T]:
    """``items``, the next one decoded on a thread while the caller converts this one (DuckDB and Arrow
    release the GIL): one item in flight, so memory grows by one batch. The thread is joined when ``stack``
    closes, before what it reads from (entered on ``stack`` earlier) is."""
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


def iter_jsonl(
    path: Path, wanted: list[str] | None, types: Mapping[str, pa.DataType], batch_rows: int, skip: int = 0
) -> Iterator[RowBatch]:
    """JSON Lines through ``json.loads``; ``wanted`` None = every key (of any line, not only the first)."""
    row = 1
    first_row = 1 + skip
    records: list[dict[str, object]] = []
    try:
        with open_text(path) as fh:
            for line in bounded_lines(fh, path):
                if line.strip() and row <= skip:
                    row += 1
                    continue
                if line.strip():
                    obj = loads_record(line, path, row)
                    if not isinstance(obj, dict):
                        raise InputError("expected a JSON object", path=path, where=f"row {row}")
                    records.append(flatten_record(obj))
                    row += 1
                    if len(records) >= batch_rows:
                        yield RowBatch(_records_to_batch(records, wanted, types, path, first_row), first_row)
                        first_row, records = row, []
        if records:
            yield RowBatch(_records_to_batch(records, wanted, types, path, first_row), first_row)
    except READ_ERRORS as exc:
        msg = short_message(exc)
        if isinstance(exc, UnicodeDecodeError):
            raise InputError("invalid text encoding; expected UTF-8", path=path, where=f"near row {row}") from None
        if isinstance(exc, EOFError | gzip.BadGzipFile) or "gzip" in msg.lower() or "crc" in msg.lower():
            raise InputError(
                f"corrupt or truncated gzip data ({msg})", path=path, where=f"after row {row - 1}"
            ) from None
        raise InputError(f"unreadable JSON Lines: {msg}", path=path, where=f"near row {row}") from None


def bounded_lines(fh: io.TextIOBase, path: Path) -> Iterator[str]:
    """The lines of ``fh``, refusing one longer than :data:`MAX_LINE_BYTES` before it is all in memory."""
    row = 1
    while line := fh.readline(MAX_LINE_BYTES + 1):
        if len(line) > MAX_LINE_BYTES:
            raise InputError(f"a line longer than {MAX_LINE_BYTES >> 20} MiB", path=path, where=f"near row {row}")
        if line.strip():
            row += 1
        yield line


def loads_record(line: str, path: Path, row: int) -> object:
    """One JSON Lines record; syntax errors, absurd nesting and 5,000-digit integers name their row."""
    try:
        return check_depth(json.loads(line), path)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path=path, where=f"row {row}") from None
    except RecursionError:
        raise InputError(f"nested more than {MAX_DEPTH} levels deep", path=path, where=f"row {row}") from None
    except ValueError as exc:
        raise InputError(f"not valid JSON ({short_message(exc)})", path=path, where=f"row {row}") from None
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
            raise_first_uncastable(texts, target, path=path, column=name, first_row=first_row)
            raise
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _text(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)

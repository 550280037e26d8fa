"""``ingest billing --engine spark``: the billing pipeline's own steps, run as Spark tasks.

Two stages, both ``DataFrame.mapInArrow`` over the functions the local engine calls:

1. **convert**: one task per input file streams it through :func:`~finops_cli.ingest.billing.pipeline.
   convert_file` (the same reader, format parser, FOCUS defaults, pricebook lookups and money checks) and
   emits canonical Arrow batches tagged with their idempotency key, then one row of the file's own tallies
   (rows, money in per currency, unknown GPU types);
2. **write**: the lines are shuffled by (provider, billing period, key) and sorted by (file, row), so each
   store file is written by one task, with the rows in the order the local engine writes them, through
   the pipeline's ``_write`` into a :class:`~finops_cli.store.store.StagedWriter` on the transaction's
   staging directory; each task returns its tallies (BilledCost written per file and currency, rows,
   GPU-hours) and the paths it staged.

The driver collects those tallies (one small row per task and per file), checks conservation and
currencies exactly as the local engine does, adopts the staged files and commits: same store files,
same rows, same manifest, the same promises. The staging directory must be one every executor can write
(local mode; a shared file system or, with the object-store work, a bucket).
"""

from __future__ import annotations

import functools
import itertools
import pickle
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.errors import InputError
from finops_cli.ingest.billing.base import BILLING_FORMATS, BillingFormat
from finops_cli.ingest.billing.pipeline import (
    FileSummary,
    _Acc,
    _flush,
    _write,
    convert_file,
    idempotency_key,
)
from finops_cli.ingest.readers import map_unique, read_header
from finops_cli.schema.billing import BILLING_SCHEMA
from finops_cli.spark.session import get_session, task_error
from finops_cli.store.store import StagedWriter

#: the canonical line plus its partition columns, as the pipeline's ``_write`` takes it
LINE_SCHEMA = pa.schema([*BILLING_SCHEMA, pa.field("provider", pa.string()), pa.field("billing_period", pa.string())])
#: what the convert stage emits: lines, their source file's index and key; or (``_meta``) a file's tallies
CONVERTED_SCHEMA = pa.schema(
    [*LINE_SCHEMA, pa.field("_file", pa.int32()), pa.field("_key", pa.string()), pa.field("_meta", pa.binary())]
)
#: what the write stage returns: pickled tallies (trusted: our own tasks), one row per task and per file
RESULT_SCHEMA = pa.schema([pa.field("payload", pa.binary())])

Plan = Sequence[tuple[Path, BillingFormat, bool, list[str]]]


def stage_billing(plan: Plan, tx: Any, acc: _Acc, master: str | None = None) -> list[FileSummary]:
    """Convert and stage ``plan``'s files on Spark into ``tx``; add every tally to ``acc``; the file summaries."""
    from pyspark.sql.pandas.types import from_arrow_schema

    spark = get_session(master)
    jobs = [(i, str(path), parser.name) for i, (path, parser, _, _) in enumerate(plan)]
    files = spark.createDataFrame(
        spark.sparkContext.parallelize(jobs, len(jobs)), "file_index int, path string, format string"
    )
    converted = files.mapInArrow(_convert_task, from_arrow_schema(CONVERTED_SCHEMA))
    targets = ["provider", "billing_period", "_key"]
    shuffled = converted.repartition(max(2, spark.sparkContext.defaultParallelism), *targets).sortWithinPartitions(
        *targets, "_file", "x_SourceRow"
    )
    write = functools.partial(_write_task, str(tx.staging), [(path, name) for _, path, name in jobs])
    try:
        results = shuffled.mapInArrow(write, from_arrow_schema(RESULT_SCHEMA)).collect()
    except Exception as exc:
        err = task_error(exc)
        if err is None:
            raise
        raise err from None

    order = {path: i for i, path, _ in jobs}
    summaries: dict[int, FileSummary] = {}
    for row in results:
        kind, *rest = pickle.loads(row["payload"])
        if kind == "file":
            index, rows, azure_kind, file_acc = rest
            acc.merge(file_acc, order)
            path, parser, sniffed, _ = plan[index]
            summaries[index] = FileSummary(str(path), parser.name, sniffed, rows, azure_kind)
        else:
            task_acc, staged, rows = rest
            acc.merge(task_acc, order)
            missing = [r for r in staged if not (tx.staging / r).is_file()]
            if missing:
                raise InputError(
                    f"Spark tasks wrote {missing[0]} where this driver cannot see it; the store must be on storage "
                    "every executor shares (see docs/scale.md)",
                    path=tx.staging,
                )
            tx.adopt([Path(r) for r in staged], rows)
    return [summaries[i] for i in sorted(summaries)]


def _convert_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Stage 1, on an executor: each input file → canonical line batches, then one row of its tallies."""
    for batch in batches:
        for job in batch.to_pylist():
            index, path = job["file_index"], Path(job["path"])
            parser = BILLING_FORMATS.from_str(job["format"]).obj
            acc, state, rows = _Acc(), dict[str, Any](), 0
            for table in convert_file(path, parser, read_header(path), acc, state):
                rows += table.num_rows
                yield from _tagged(table, parser.name, index).to_batches()
            meta = pickle.dumps(("file", index, rows, state.get("azure_kind"), acc))
            cols = [pa.nulls(1, f.type) for f in LINE_SCHEMA]
            cols += [pa.array([index], pa.int32()), pa.nulls(1, pa.string()), pa.array([meta], pa.binary())]
            yield pa.RecordBatch.from_arrays(cols, schema=CONVERTED_SCHEMA)


def _tagged(table: pa.Table, fmt: str, index: int) -> pa.Table:
    """Lines with their file index and idempotency key (computed once per account × period)."""
    pair = pc.binary_join_element_wise(table["BillingAccountId"], table["billing_period"], "\x1f")
    keys = map_unique(pair, lambda p: idempotency_key(fmt, *p.split("\x1f", 1)), pa.string())
    n = table.num_rows
    return (
        table.append_column("_file", pa.repeat(pa.scalar(index, pa.int32()), n))
        .append_column("_key", keys)
        .append_column("_meta", pa.nulls(n, pa.binary()))
    )


def _write_task(
    staging: str, jobs: list[tuple[str, str]], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Stage 2, on an executor: write this task's (provider, period, key) files; pass file tallies through."""
    writer = StagedWriter(Path(staging))
    acc = _Acc()
    passed: list[bytes] = []
    try:
        for batch in batches:
            table = pa.Table.from_batches([batch])
            meta = table["_meta"]
            if meta.null_count < table.num_rows:
                passed += pc.drop_null(meta).to_pylist()
                table = table.filter(pc.is_null(meta))
            if table.num_rows == 0:
                continue
            lines = table.select(LINE_SCHEMA.names).cast(LINE_SCHEMA)
            file_of_row = table["_file"].to_numpy()
            bounds = [0, *(np.flatnonzero(np.diff(file_of_row)) + 1).tolist(), table.num_rows]
            for lo, hi in itertools.pairwise(bounds):
                path, fmt = jobs[int(file_of_row[lo])]
                _write(writer, lines.slice(lo, hi - lo), fmt, acc, Path(path))
        _flush(writer, acc)
        staged = writer.close()
    except BaseException:
        writer.discard()
        raise
    yield pa.RecordBatch.from_arrays(
        [pa.array([*passed, pickle.dumps(("part", acc, [str(p) for p in staged], writer.rows_written))])],
        schema=RESULT_SCHEMA,
    )
